"""What a call not ended keeps across a restart of actd besides its own
record (the store's resume state, schema 10): the requests that repeated
its _id still get its DONE (docs/protocol.md 2.3, 2.4), and a retry waits
out what is left of its delay, not more and not less (3.5). Each after a
kill -9 and after a SIGTERM, on the store under test (ACTD_TEST_STORE:
sqlite or postgres).
"""

import json
import sqlite3
import threading
import time
import unittest

from harness import DAGGER, STORE, Actd, Fail, Worker, wait_for

DELAY_MS = 4000             # the retry delay under test


def restart(actd, how):
    """kill -9 (a crash) or SIGTERM (a clean stop), then start again on
    the same store."""
    if how == "kill":
        actd.kill()
    else:
        assert actd.stop() == 0, actd.log()[-4000:]
    actd.start()


class RepeatedIdTest(unittest.TestCase):
    """A CALL repeating the _id of a live call, under a new request id,
    is ACCEPTED with that call's id and gets its DONE when the call ends
    (when it has an _outputPath itself), even when actd restarted between
    the two: the repeat's request is stored with the call."""

    def _check(self, how):
        actd = Actd()
        actd.start()
        worker = None
        client = actd.client(identity=b"restart-repeat-client")
        try:
            #  No worker yet: the producer stays queued, its reader waits
            producer = {"_tool": "gen", "_outputPath": DAGGER + "a.v"}
            produced = client.request("CALL", "rep", producer)
            self.assertEqual(produced[0], "ACCEPTED", produced)
            reader = {"_tool": "use", "_outputPath": DAGGER + "b.v", "_id": "k1",
                      "v": DAGGER + "a.v"}
            first = client.send("CALL", "rep", reader)
            call_id = client.wait(first, "ACCEPTED")[1]
            repeat = client.send("CALL", "rep", reader)
            self.assertEqual(client.wait(repeat, "ACCEPTED")[1], call_id)
            #  Whether DONE follows is the repeating call's to say
            quiet = dict(reader)
            del quiet["_outputPath"]
            silent = client.send("CALL", "rep", quiet)
            self.assertEqual(client.wait(silent, "ACCEPTED")[1], call_id)
            self.assertEqual(client.status(call_id)["state"], "waiting")
            client.close()
            restart(actd, how)
            client = actd.client(identity=b"restart-repeat-client")
            client.request("PING")          # connected before the call ends
            answers = {"gen": 7, "use": "ran"}
            worker = Worker(actd.worker_endpoint, ["gen", "use"],
                            lambda activity, params, meta: answers[activity])
            worker.start()
            for request in (first, repeat):
                done = client.wait(request, "DONE", timeout=30)
                self.assertEqual(done[1], call_id)
                self.assertEqual(json.loads(done[2])["status"], "ok", done)
            with self.assertRaises(TimeoutError):
                client.wait(silent, "DONE", timeout=1.0)
        except BaseException:
            actd.cleanup()
            raise
        finally:
            client.close()
            if worker:
                worker.stop()
        actd.finish()

    def test_a_repeat_gets_its_done_after_a_crash(self):
        self._check("kill")

    def test_a_repeat_gets_its_done_after_a_clean_stop(self):
        self._check("term")


class RetryDelayTest(unittest.TestCase):
    """A call whose attempt failed retryably is queued for its _retry
    delay; actd restarted meanwhile dispatches the next attempt when the
    delay ends, not at once, and never later than the delay from the
    restart (a wall clock set back must not lengthen it)."""

    def _fail_first(self, actd):
        """A producer whose first attempt fails: returns its call id and
        when its failure was seen (no earlier than actd took it), once the
        failure is durable."""
        def handler(activity, params, meta):
            if meta["attempt"] == 1:
                raise Fail("rate limited")
            return 1
        worker = Worker(actd.worker_endpoint, ["gen"], handler)
        worker.start()
        client = actd.client()
        try:
            call = {"_tool": "gen", "_outputPath": DAGGER + "a.v",
                    "_retry": {"max_attempts": 3, "initial_ms": DELAY_MS}}
            call_id, _ = client.call("retry", call, wait_done=False)
            wait_for(lambda: client.status(call_id)["attempts"] == 1
                     and client.status(call_id)["state"] == "queued", "the first failure")
            failed_at = time.time()
            #  Commits are in order: once an APPEND is OK, so is the failure
            reply = client.request("APPEND", "retry", {"type": "data", "data": {"n": 1}})
            self.assertEqual(reply[0], "OK", reply)
            return call_id, failed_at
        finally:
            client.close()
            worker.stop()

    def _next_attempt(self, actd, call_id):
        """Wait for the second attempt's TASK; returns when it came."""
        came = []
        lock = threading.Lock()

        def handler(activity, params, meta):
            with lock:
                came.append((meta["attempt"], time.time()))
            return 1
        client = actd.client()
        worker = Worker(actd.worker_endpoint, ["gen"], handler)
        worker.start()
        try:
            #  Queued again, in the rest of its delay
            self.assertEqual(client.status(call_id)["state"], "queued")
            wait_for(lambda: came, "the second attempt", timeout=60)
            self.assertEqual(came[0][0], 2)
            client.wait_status(call_id, ["ok"])
            return came[0][1]
        finally:
            client.close()
            worker.stop()

    def _check(self, how):
        actd = Actd()
        actd.start()
        try:
            call_id, failed_at = self._fail_first(actd)
            restart(actd, how)
            after = self._next_attempt(actd, call_id) - failed_at
            self.assertGreater(after, DELAY_MS / 1000.0 - 0.5)
            self.assertLess(after, DELAY_MS / 1000.0 + 10)
        except BaseException:
            actd.cleanup()
            raise
        actd.finish()

    def test_a_retry_waits_its_delay_after_a_crash(self):
        self._check("kill")

    def test_a_retry_waits_its_delay_after_a_clean_stop(self):
        self._check("term")

    @unittest.skipUnless(STORE == "sqlite", "the SQLite file is edited")
    def test_a_clock_set_back_does_not_lengthen_the_delay(self):
        """The end of the delay is stored on the wall clock: a clock set
        back an hour while actd was down would make the call wait an hour
        more; it waits its delay at most."""
        actd = Actd()
        actd.start()
        try:
            call_id, _ = self._fail_first(actd)
            actd.kill()
            db = sqlite3.connect(actd.store)
            with db:
                changed = db.execute(
                    "UPDATE resume SET body = json_set (body, '$.retry.until',"
                    " json_extract (body, '$.retry.until') + 3600000) WHERE id = ?",
                    (int(call_id),)).rowcount
            db.close()
            self.assertEqual(changed, 1)
            actd.start()
            started = time.time()
            after = self._next_attempt(actd, call_id) - started
            self.assertLess(after, DELAY_MS / 1000.0 + 10)
        except BaseException:
            actd.cleanup()
            raise
        actd.finish()


if __name__ == "__main__":
    unittest.main()
