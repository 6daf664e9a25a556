"""Trace context: a call's `_trace` (a W3C traceparent) is checked when the
call is submitted, stored with it, and reaches every attempt's worker in
the TASK meta as "trace" (docs/protocol.md section 2.2 CALL and 3.3).
"""

import unittest

from harness import Actd, CallRefused, Fail, Worker, wait_for

TIMEOUT = 30.0                  # generous: a shared machine under ASan
TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class TraceTest(unittest.TestCase):

    def setUp(self):
        self.actd = Actd(heartbeat_ms=1000)
        self.actd.start()
        self.client = self.actd.client()
        self.workers = []

    def tearDown(self):
        for worker in self.workers:
            worker.stop()
        self.client.close()
        self.actd.finish()      # AssertionError unless it exits 0 on SIGTERM

    def worker(self, handler=lambda activity, params, meta: params):
        worker = Worker(self.actd.worker_endpoint, ["traced"], handler, capacity=4)
        worker.start()
        worker.ready.wait(5)
        self.workers.append(worker)
        wait_for(lambda: self.client.value("STATS")["activities"]
                 .get("traced", {}).get("workers") == 1, "the worker", TIMEOUT)
        return worker

    def meta_of(self, worker, call_id):
        """The meta of call_id's tasks, once at least one has arrived."""
        return wait_for(lambda: [task[3] for task in list(worker.tasks)
                                 if task[3]["call_id"] == call_id],
                        "call %s dispatched" % call_id, TIMEOUT)

    def test_trace_reaches_the_worker_meta_and_not_its_params(self):
        worker = self.worker()
        call_id, outcome = self.client.call("tr", {
            "_tool": "traced", "_outputPath": "†out.x", "_trace": TRACE, "v": 1},
            timeout=TIMEOUT)
        self.assertEqual(outcome["status"], "ok", outcome)
        self.assertEqual(outcome["result"], {"v": 1})     # no _trace in params
        meta = self.meta_of(worker, call_id)[0]
        self.assertEqual(meta["trace"], TRACE)
        #  A fire-and-forget call carries it too; a call without one has none
        fire, _ = self.client.call("tr", {"_tool": "traced", "_trace": TRACE})
        self.assertEqual(self.meta_of(worker, fire)[0]["trace"], TRACE)
        plain, _ = self.client.call("tr", {"_tool": "traced", "_outputPath": "†out.y"},
                                    timeout=TIMEOUT)
        self.assertNotIn("trace", self.meta_of(worker, plain)[0])

    def test_every_attempt_carries_the_trace(self):
        attempts = []

        def handler(activity, params, meta):
            attempts.append(meta)
            if meta["attempt"] == 1:
                raise Fail("try again", code="flaky")
            return "done"
        self.worker(handler)
        call_id, outcome = self.client.call("tr2", {
            "_tool": "traced", "_outputPath": "†out.x", "_trace": TRACE,
            "_retry": {"max_attempts": 2, "initial_ms": 10}}, timeout=TIMEOUT)
        self.assertEqual(outcome["status"], "ok", outcome)
        self.assertEqual([(meta["attempt"], meta["trace"]) for meta in attempts],
                         [(1, TRACE), (2, TRACE)])

    def test_trace_survives_a_restart(self):
        """Stored with the call: a call queued before a restart (no worker
        yet) reaches its worker after it with the same trace."""
        call_id, _ = self.client.call("tr3", {
            "_tool": "traced", "_outputPath": "†out.x", "_trace": TRACE}, wait_done=False)
        self.client.close()
        self.assertEqual(self.actd.stop(), 0, self.actd.log())
        self.actd.start()
        self.client = self.actd.client()
        worker = self.worker()
        self.assertEqual(self.meta_of(worker, call_id)[0]["trace"], TRACE)
        wait_for(lambda: self.client.status(call_id)["state"] == "ok", "the call ended",
                 TIMEOUT)

    def test_a_malformed_trace_is_refused_and_nothing_is_stored(self):
        bad = [
            "",                                                             # empty
            42,                                                             # not a string
            {"traceparent": TRACE},                                         # an object
            TRACE.upper(),                                                  # uppercase hex
            "01" + TRACE[2:],                                               # another version
            "ff" + TRACE[2:],                                               # invalid version
            TRACE + "-00",                                                  # extra field
            TRACE[:-1],                                                     # short flags
            "00-" + "0" * 32 + TRACE[35:],                                  # zero trace id
            TRACE[:36] + "0" * 16 + TRACE[52:],                             # zero parent id
            TRACE.replace("-", "_"),                                        # wrong separators
            TRACE[:10] + "g" + TRACE[11:],                                  # not hex
        ]
        for value in bad:
            with self.subTest(trace=value):
                with self.assertRaises(CallRefused) as refused:
                    self.client.call("tr-bad", {"_tool": "traced", "_outputPath": "†out.x",
                                                "_trace": value})
                self.assertEqual(refused.exception.code, "bad_call")
                self.assertIn("_trace", refused.exception.args[0][2])
        #  In a plan too, naming the entry; nothing of the plan is stored
        reply = self.client.request("PLAN", "tr-bad", [
            {"_tool": "traced", "_outputPath": "†out.a", "_trace": TRACE},
            {"_tool": "traced", "_outputPath": "†out.b", "_trace": "00-bad"}])
        self.assertEqual(reply[:2], ["ERROR", "bad_call"], reply)
        self.assertTrue(reply[2].startswith("call 1: "), reply)
        self.assertEqual(self.client.request("VIEW", "tr-bad")[:2], ["ERROR", "not_found"])
        stats = self.client.value("STATS")
        self.assertEqual(stats["activities"].get("traced", {}).get("queued", 0), 0, stats)


if __name__ == "__main__":
    unittest.main()
