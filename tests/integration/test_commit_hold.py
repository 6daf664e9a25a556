"""The commit hold (store/hold_us, issue 21): when the only replies of a
batch are ACCEPTEDs of calls with an output path (their clients wait for
DONE anyway) and the batch's early TASKs are out, actd waits up to
hold_us before it commits, so that a fast worker's result shares the
commit that stores its call: one commit (one fsync) a call instead of two.
Any other reply ends the wait at once, and so does hold_us. A tool whose
attempts lately took longer than hold_us is not waited for.

The holds here are long (5 s) so that no timing decides an assertion:
a reply that must not wait arrives well inside it, and a reply that must
wait is looked for only while the test holds the worker's answer.
"""

import os
import time
import unittest

from harness import DAGGER, Actd, NoAnswer, Worker, wait_for

LONG_US = 5000000


def new_actd(hold_us):
    actd = Actd()
    path = os.path.join(actd.dir, "actd.cfg")
    with open(path, "w") as handle:
        handle.write("store\n    hold_us = %d\n" % hold_us)
    actd.args = ["--config", path]
    return actd


def store_stats(client):
    return client.value("STATS")["store"]


class HoldCase(unittest.TestCase):
    hold_us = LONG_US
    answer = True                   # the worker answers at once, else holds

    def setUp(self):
        self.actd = new_actd(self.hold_us)
        try:
            self.actd.start()
        except Exception:
            self.actd.cleanup()
            raise
        self.client = self.actd.client()
        handler = (lambda activity, params, meta: params) if self.answer \
            else (lambda *task: NoAnswer)
        self.worker = Worker(self.actd.worker_endpoint, ["hold"], handler, capacity=10)
        self.worker.start()
        wait_for(lambda: len(self.client.value("STATS")["workers"]) == 1,
                 "the worker registered", 30)

    def tearDown(self):
        self.worker.stop()
        self.client.close()
        self.actd.cleanup()

    def no_reply(self, request, seconds):
        """No reply to request for seconds (the hold is longer)."""
        with self.assertRaises(TimeoutError):
            self.client.wait(request, timeout=seconds)


class FastWorker(HoldCase):

    def test_a_fast_answer_shares_the_commit_that_stores_its_call(self):
        self.client.call("hold", {"_tool": "hold", "_outputPath": DAGGER + "warm"})
        before = store_stats(self.client)
        for n in range(5):
            call_id, outcome = self.client.call(
                "hold", {"_tool": "hold", "n": n, "_outputPath": DAGGER + "s.v%d" % n})
            self.assertEqual(outcome["status"], "ok", outcome)
        after = store_stats(self.client)
        #  One commit a call: its acceptance and its end together
        self.assertEqual(after["commits"] - before["commits"], 5, (before, after))
        self.assertEqual(after["held"] - before["held"], 5, (before, after))
        self.assertEqual(after["held_expired"], 0)
        self.assertEqual(self.client.resolve("hold", DAGGER + "s.v4"), {"n": 4})


class NoHold(HoldCase):
    hold_us = 0

    def test_with_hold_us_0_a_call_is_stored_and_ended_in_two_commits(self):
        self.client.call("hold", {"_tool": "hold", "_outputPath": DAGGER + "warm"})
        before = store_stats(self.client)
        for n in range(5):
            self.client.call("hold", {"_tool": "hold", "n": n, "_outputPath": DAGGER + "s"})
        after = store_stats(self.client)
        self.assertEqual(after["commits"] - before["commits"], 10, (before, after))
        self.assertEqual(after["held"], 0)


class SlowWorker(HoldCase):
    answer = False

    def test_accepted_waits_for_the_result_within_the_hold(self):
        request = self.client.send("CALL", "slow", {"_tool": "hold",
                                                    "_outputPath": DAGGER + "s.a"})
        wait_for(lambda: len(self.worker.tasks) == 1, "the TASK", 30)
        self.no_reply(request, 0.5)
        self.worker.send_result(self.worker.tasks[0][0], 7)
        self.assertEqual(self.client.wait(request, "ACCEPTED", timeout=30)[0], "ACCEPTED")
        self.assertEqual(self.client.wait(request, "DONE", timeout=30)[0], "DONE")
        stats = store_stats(self.client)
        self.assertEqual((stats["held"], stats["held_expired"]), (1, 0))

    def test_a_fire_and_forget_call_is_not_held(self):
        request = self.client.send("CALL", "slow", {"_tool": "hold"})
        wait_for(lambda: len(self.worker.tasks) == 1, "the TASK", 30)
        #  Its client waits for nothing after ACCEPTED
        self.assertEqual(self.client.wait(request, timeout=3)[0], "ACCEPTED")
        self.assertEqual(store_stats(self.client)["held"], 0)

    def test_any_other_reply_ends_the_hold(self):
        request = self.client.send("CALL", "slow", {"_tool": "hold",
                                                    "_outputPath": DAGGER + "s.a"})
        wait_for(lambda: len(self.worker.tasks) == 1, "the TASK", 30)
        other = self.actd.client()
        try:
            reply = other.request("APPEND", "slow", {"type": "data", "kind": "input",
                                                     "data": {"x": 1}}, timeout=3)
            self.assertEqual(reply[0], "OK", reply)
        finally:
            other.close()
        #  The held ACCEPTED went with that commit, the task still out
        self.assertEqual(self.client.wait(request, timeout=3)[0], "ACCEPTED")
        self.assertEqual(len(self.worker.tasks), 1)


class ShortHold(HoldCase):
    hold_us = 200000
    answer = False

    def test_the_hold_ends_after_hold_us(self):
        started = time.time()
        request = self.client.send("CALL", "slow", {"_tool": "hold",
                                                    "_outputPath": DAGGER + "s.a"})
        self.assertEqual(self.client.wait(request, timeout=30)[0], "ACCEPTED")
        self.assertGreaterEqual(time.time() - started, 0.2)
        self.assertEqual(len(self.worker.tasks), 1)
        stats = store_stats(self.client)
        self.assertEqual((stats["held"], stats["held_expired"]), (1, 1))
        self.worker.send_result(self.worker.tasks[0][0], 7)
        self.assertEqual(self.client.wait(request, "DONE", timeout=30)[0], "DONE")

    def test_a_tool_slower_than_the_hold_is_held_no_more(self):
        #  The first call of a tool is held: nothing is known of it yet
        first = self.client.send("CALL", "slow", {"_tool": "hold",
                                                  "_outputPath": DAGGER + "s.a"})
        self.assertEqual(self.client.wait(first, timeout=30)[0], "ACCEPTED")
        #  Its attempt has now run longer than the hold
        self.worker.send_result(self.worker.tasks[0][0], 1)
        self.assertEqual(self.client.wait(first, "DONE", timeout=30)[0], "DONE")
        #  The next call's ACCEPTED does not wait for a result
        second = self.client.send("CALL", "slow", {"_tool": "hold",
                                                   "_outputPath": DAGGER + "s.b"})
        self.assertEqual(self.client.wait(second, timeout=30)[0], "ACCEPTED")
        wait_for(lambda: len(self.worker.tasks) == 2, "the second TASK", 30)
        stats = store_stats(self.client)
        self.assertEqual((stats["held"], stats["held_expired"]), (1, 1))
        self.worker.send_result(self.worker.tasks[1][0], 2)
        self.assertEqual(self.client.wait(second, "DONE", timeout=30)[0], "DONE")


if __name__ == "__main__":
    unittest.main()
