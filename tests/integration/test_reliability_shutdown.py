"""Reliability of actd at its stop: SIGTERM lets a running task finish
within shutdown_grace_ms and refuses new calls (busy); requests still
unread at the stop are answered busy; a call whose task outlives the
grace, or whose worker is lost while actd stops, runs again after the
restart (a new attempt), its output written once.

PROTOCOL.md section 2 and SEMANTICS.md section 7, as test_reliability.py,
from which these were split and whose helpers (RawWorker, ReliabilityCase)
they use. Nothing is timed: tests wait for states, never for durations.
"""

import json
import os
import signal
import time
import unittest

from harness import Absent, Actd, NoAnswer, Worker, actd_with_config, seed_call
from test_reliability import ENDED, ReliabilityCase, echo, outputs_of


class ShutdownTest(ReliabilityCase):
    """SIGTERM with tasks in flight, and the next start."""

    def wait_stopping(self, actd, raw):
        """Heartbeat raw until actd logs that it is stopping."""
        deadline = time.time() + 30
        while "stopping:" not in actd.log():
            self.assertLess(time.time(), deadline, "actd did not start stopping")
            raw.pump()

    def test_sigterm_lets_running_task_finish_within_grace(self):
        """On SIGTERM actd refuses new calls (busy), lets a running task
        finish within shutdown_grace_ms, writes its output, exits 0."""
        config = "server\n    shutdown_grace_ms = 3000\n"
        with actd_with_config(config, heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            raw = self.raw_worker(actd, ["work"])
            call_id, rid = self.submit(client, "term", seed_call("work", "†state.out"))
            task = raw.next("TASK")
            actd.process.send_signal(signal.SIGTERM)
            self.wait_stopping(actd, raw)
            refused = client.request("CALL", "term", seed_call("work", "†state.more"))
            self.assertEqual(refused[:2], ["ERROR", "busy"])
            raw.answer(task[1], "finished")
            self.assertEqual(actd.process.wait(30), 0)
            raw.close()
            self.raw.remove(raw)
            client.close()
            actd.start()
            client = self.client(actd)
            status = client.status(call_id)
            self.assertEqual((status["state"], status["attempts"]), ("ok", 1))
            self.assertEqual(status["outcome"]["result"], "finished")
            self.assertEqual(client.resolve("term", "†state.out"), "finished")
            self.assertEqual([m["data"] for m in outputs_of(client, "term", call_id)],
                             [{"out": "finished"}])
            self.assertIs(client.resolve("term", "†state.more"), Absent)
            client.close()

    def test_requests_unread_at_the_stop_are_answered_busy(self):
        """Requests still unread when actd stops are each answered: served
        before the stop, or ERROR busy, which changed nothing. None is left
        to its client's timeout; no keyed APPEND refused busy is stored.
        Thousands of APPENDs wait in actd's socket (sent while it was
        SIGSTOPped), and SIGTERM comes once it has answered the first: it
        reads 512 requests a pass, so most are still unread at the stop."""
        with Actd() as actd:
            client = self.client(actd)
            self.assertEqual(client.request("PING"), ["PONG"])
            count = 5000
            os.kill(actd.process.pid, signal.SIGSTOP)
            try:
                rids = [client.send("APPEND", "drain", json.dumps(
                    {"type": "data", "kind": "input", "data": {"n": n}}), "key-%d" % n)
                    for n in range(count)]
            finally:
                os.kill(actd.process.pid, signal.SIGCONT)
            first = client.wait(rids[0], timeout=30)
            os.kill(actd.process.pid, signal.SIGTERM)
            replies = [first] + [client.wait(rid, timeout=30) for rid in rids[1:]]
            self.assertEqual(actd.process.wait(30), 0)
            served = [n for n, reply in enumerate(replies) if reply[0] == "OK"]
            refused = [n for n, reply in enumerate(replies) if reply[0] == "ERROR"]
            self.assertEqual(len(served) + len(refused), count)
            self.assertTrue(refused, "a stop with requests unread")
            self.assertEqual({tuple(replies[n][1:]) for n in refused},
                             {("busy", "actd is shutting down")})
            self.assertIn("requests still unread answered (busy)", actd.log())
            actd.start()
            again = self.client(actd)
            stored = []
            while served:
                reply = again.request("HISTORY", "drain", str(len(stored) + 1), "1000")
                self.assertEqual(reply[0], "VALUE", reply[:3])
                page = [m["data"]["n"] for m in json.loads(reply[1])]
                stored += page
                if len(page) < 1000:
                    break
            self.assertEqual(stored, served)
            #  A refused one, sent again with its key, is stored now
            reply = again.request("APPEND", "drain", {"type": "data", "kind": "input",
                                                       "data": {"n": refused[0]}},
                                  "key-%d" % refused[0])
            self.assertEqual(reply[0], "OK", reply)
            self.assertEqual(json.loads(reply[1])["seq"], len(served) + 1)

    def run_again_after_restart(self, actd, call_id, n):
        """Start actd again, with a worker of "work": the call (of params
        {"n": n}), which had not ended at the stop, runs again as attempt 2
        and ends ok. Returns a client of the new actd."""
        actd.start()
        client = self.client(actd)
        worker = self.worker(actd, ["work"], echo)
        status = client.wait_status(call_id, ENDED, timeout=30)
        self.assertEqual((status["state"], status["attempts"]), ("ok", 2))
        self.assertEqual(status["outcome"]["result"], {"params": {"n": n}, "attempt": 2})
        self.assertEqual([t[0] for t in worker.tasks], ["%s.2" % call_id])
        return client

    def test_sigterm_grace_ends_and_call_runs_again_after_restart(self):
        """A task still running when the grace ends: actd exits 0; the call
        has not ended, so the next start runs it again (attempt 2)."""
        config = "server\n    shutdown_grace_ms = 3000\n"
        with actd_with_config(config, heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            holder = Worker(actd.worker_endpoint, ["work"], lambda *a: NoAnswer)
            holder.start()
            call_id, rid = self.submit(client, "grace", seed_call("work", "†state.out", n=7))
            client.wait_status(call_id, ["running"])
            actd.process.send_signal(signal.SIGTERM)
            self.assertEqual(actd.process.wait(60), 0)
            holder.stop()
            self.assertEqual([t[0] for t in holder.tasks], ["%s.1" % call_id])
            client.close()
            client = self.run_again_after_restart(actd, call_id, 7)
            self.assertEqual(len(outputs_of(client, "grace", call_id)), 1)
            client.close()

    def test_worker_lost_during_grace_call_runs_again_after_restart(self):
        """PROTOCOL 2: tasks held by a dead worker are dispatched again (a new
        attempt) or failed with worker_lost only when attempts are used up.
        A worker lost while actd is stopping, with attempts left, leaves its
        call to be run again at the next start."""
        config = "server\n    shutdown_grace_ms = 3000\n"
        with actd_with_config(config, heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            raw = self.raw_worker(actd, ["work"])
            call = seed_call("work", "†state.out", n=8)
            call["_retry"] = {"max_attempts": 3, "initial_ms": 20}
            call_id, rid = self.submit(client, "lostterm", call)
            task = raw.next("TASK")
            self.assertEqual(task[1], "%s.1" % call_id)
            actd.process.send_signal(signal.SIGTERM)
            self.wait_stopping(actd, raw)
            raw.send("DISCONNECT")
            self.assertEqual(actd.process.wait(60), 0)
            raw.close()
            self.raw.remove(raw)
            client.close()
            client = self.run_again_after_restart(actd, call_id, 8)
            self.assertEqual([m["data"] for m in outputs_of(client, "lostterm", call_id)],
                             [{"out": {"params": {"n": 8}, "attempt": 2}}])
            client.close()


if __name__ == "__main__":
    unittest.main()
