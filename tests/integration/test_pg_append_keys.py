"""PostgreSQL: an APPEND repeating an idempotency key (PROTOCOL.md, APPEND)
while the first APPEND with that key is being committed is not stored
again: whether that commit goes through late or fails. The commit is held
by a lock another session takes on the context's lease row, not by timing.

A randomized soak once reported such a key stored twice; an audit traced
it to the soak's own check (a call's output carried the marker of the
keyed message it had read), and found no path in actd that stores a key
twice. This is the audit's deterministic test of the narrowest window:
the key in a batch whose commit is in flight on the committer's thread."""

import json
import subprocess
import time
import unittest

import pg
from harness import actd_with_config


def body(n, key):
    return {"type": "data", "kind": "u", "_outputMethod": "push",
            "data": {"key": key, "m": n}}


class KeyedAppendWhileCommittingTest(unittest.TestCase):

    def hold_lease_row(self, actd, context, seconds):
        """psql locks context's lease row for seconds; returns once it holds
        the lock (its pg_sleep runs: each -c is a statement of its own)."""
        locker = subprocess.Popen(
            [pg._bin("psql"), actd.store, "-v", "ON_ERROR_STOP=1",
             "-c", "BEGIN", "-c", "SELECT 1 FROM leases WHERE context = '%s' FOR UPDATE" % context,
             "-c", "SELECT pg_sleep (%f)" % seconds, "-c", "COMMIT"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(locker.wait)
        query = ("SELECT count (*) FROM pg_stat_activity WHERE state = 'active' "
                 "AND query LIKE 'SELECT pg_sleep%'")
        deadline = time.time() + 60
        while time.time() < deadline:
            counted = subprocess.run([pg._bin("psql"), actd.store, "-At", "-c", query],
                                     capture_output=True, text=True, timeout=30)
            if counted.stdout.strip() == "1":
                return locker
            self.assertIsNone(locker.poll(), "psql ended before it held the row")
            time.sleep(0.05)
        self.fail("psql did not take the lease row in 60 s")

    def repeat_while_committing(self, timeout_ms, hold_s):
        """Four APPENDs with key K, the first one's commit waiting for the
        lock; a refused one is sent again, as a client would. K is stored
        once, and every OK names that message. Returns the first replies and
        actd's log."""
        config = "store\n    timeout_ms = %d\n" % timeout_ms
        actd = actd_with_config(config, store=pg.database())
        actd.start()
        self.addCleanup(actd.cleanup)
        client = actd.client()
        self.addCleanup(client.close)
        self.assertEqual(client.request("APPEND", "w", body(0, None))[0], "OK")
        locker = self.hold_lease_row(actd, "w", hold_s)
        first = client.send("APPEND", "w", json.dumps(body(1, "K")), "K")
        time.sleep(0.3)     #  Its batch sealed and committing (or not: K is stored once either way)
        repeats = [client.send("APPEND", "w", json.dumps(body(2 + i, "K")), "K")
                   for i in range(3)]
        replies = [client.wait(rid, timeout=30) for rid in [first] + repeats]
        self.assertEqual(locker.wait(30), 0)
        retried = []
        for reply in replies:
            if reply[0] != "OK":
                self.assertIn(reply[1], ("internal", "busy"), reply)
                for _ in range(50):
                    again = client.request("APPEND", "w", body(20, "K"), "K", timeout=30)
                    if again[0] == "OK":
                        break
                    time.sleep(0.2)
                self.assertEqual(again[0], "OK", again)
                retried.append(again)
        answered = {json.loads(r[1])["seq"] for r in replies + retried if r[0] == "OK"}
        history = json.loads(client.request("HISTORY", "w", "1", "100")[1])
        stored = [m["_seq"] for m in history if m["data"].get("key") == "K"]
        self.assertEqual(len(stored), 1, history)
        self.assertEqual(answered, set(stored), (replies, retried, history))
        self.assertEqual(actd.stop(), 0)
        return replies, actd.log()

    def test_a_repeat_while_the_first_commit_waits_is_answered_its_seq(self):
        replies, _ = self.repeat_while_committing(timeout_ms=10000, hold_s=2)
        self.assertTrue(all(reply[0] == "OK" for reply in replies), replies)

    def test_a_repeat_while_the_first_commit_fails_is_stored_once_when_sent_again(self):
        replies, log = self.repeat_while_committing(timeout_ms=1000, hold_s=3)
        self.assertIn("store commit failed", log)
        self.assertNotEqual(replies[0][0], "OK", replies)


if __name__ == "__main__":
    unittest.main()
