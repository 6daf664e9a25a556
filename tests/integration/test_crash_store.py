"""A store that fails to commit (PROTOCOL 1: nothing is acknowledged that
is not stored): a failed commit refuses what its batch acknowledged and
does not end a call as if actd had stopped, a read does not show what it
lost (a full disk, its back-off and the rest: test_disk_full). Split from
test_crash.py, whose helpers it uses.
"""

import json
import resource
import signal
import time
import unittest

from harness import DAGGER, STORE, Actd, CallRefused, NoAnswer, Worker, wait_for
from test_crash import wait_workers


#  The refusal of a commit that failed, its cause named: a file size limit
#  (EFBIG) is an I/O error to SQLite (a full disk: test_disk_full)
REFUSED_IO = ["ERROR", "internal", "the store could not commit (disk I/O error); nothing was kept"]


class StoreFullTest(unittest.TestCase):
    """A store that cannot commit (here a full disk: actd may not write
    files larger than 2 MiB): what the batch acknowledged is refused with
    ERROR internal, nothing of it is kept, and actd goes on serving."""

    LIMIT = 2 << 20

    @staticmethod
    def limit():
        #  SIGXFSZ as a service manager leaves it (default: kill): actd
        #  itself must ignore it, or the kernel kills it at the limit
        #  instead of failing the write
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_FSIZE, (StoreFullTest.LIMIT, StoreFullTest.LIMIT))

    @unittest.skipIf(STORE != "sqlite", "the limit is on actd's own files")
    def test_a_commit_that_fails_refuses_what_it_would_have_acknowledged(self):
        with Actd(preexec=self.limit) as actd:
            client = actd.client()
            big = "x" * 300000
            replies = []
            for i in range(12):     # 3.6 MB: more than the file may hold
                replies.append(client.request("APPEND", "full", {
                    "type": "data", "kind": "state", "data": {"k%d" % i: big}}))
            kept = [r for r in replies if r[0] == "OK"]
            refused = [r for r in replies if r[0] == "ERROR"]
            self.assertEqual(len(kept) + len(refused), 12, replies)
            self.assertTrue(kept and refused, [r[:2] for r in replies])
            self.assertEqual([json.loads(r[1])["seq"] for r in kept],
                             list(range(1, len(kept) + 1)))
            for reply in refused:
                self.assertEqual(reply, REFUSED_IO)
            self.assertEqual(replies[:len(kept)], kept)     # kept ones came first
            #  A reply that promises nothing is still sent, and a small write
            #  that fits takes the next _seq: nothing refused was kept
            self.assertEqual(client.request("PING"), ["PONG"])
            self.assertEqual(client.request("APPEND", "full", {
                "type": "data", "kind": "state", "data": {"small": 1}}),
                ["OK", json.dumps({"seq": len(kept) + 1}, separators=(",", ":"))])
            view = json.loads(client.request("VIEW", "full")[1])
            keys = set()
            for message in view:
                keys.update(message.get("data", {}))
            self.assertEqual(keys, {"k%d" % i for i in range(len(kept))} | {"small"})
            self.assertIn("store commit failed", actd.log())
            client.close()

    @unittest.skipIf(STORE != "sqlite", "the limit is on actd's own files")
    def test_a_read_does_not_show_what_a_failed_commit_lost(self):
        """A RESOLVE read in the same pass as an APPEND (or while its commit
        is in flight) sees the appended value in memory: when that commit
        fails, the read's VALUE is refused with it, as the APPEND's OK is,
        instead of showing a value that was never stored."""
        with Actd(preexec=self.limit) as actd:
            client = actd.client()
            big = "x" * 900000              # three are more than the file may hold
            appends = [client.send("APPEND", "lost", json.dumps(
                {"type": "data", "kind": "state", "data": {"k%d" % i: big}})) for i in range(3)]
            resolve = client.send("RESOLVE", "lost", "†state.k2")
            replies = [client.wait(rid, timeout=30) for rid in appends]
            self.assertEqual(replies[2], REFUSED_IO)
            reply = client.wait(resolve, timeout=30)
            self.assertFalse(reply[0] == "VALUE" and reply[1] == json.dumps(big),
                             "the lost value was read")
            self.assertEqual(reply, REFUSED_IO)
            #  Read again, the value is absent: nothing of it was kept
            self.assertEqual(client.request("RESOLVE", "lost", "†state.k2")[0], "ERROR")
            client.close()

    @staticmethod
    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_FSIZE, (512 << 10, 512 << 10))

    def answer_too_large(self, actd, client):
        """A worker answers a call's first attempt with 900 KB, more than a
        file may hold (actd is started with small_files), and its second
        with {"attempt": 2}. Returns the worker, the CALL's request id and
        the call id."""
        def answer(activity, params, meta):
            return NoAnswer if meta["attempt"] == 1 else {"attempt": meta["attempt"]}
        worker = Worker(actd.worker_endpoint, ["big"], answer, name="big")
        worker.start()
        wait_workers(actd, 1)
        rid = client.send("CALL", "full", {
            "_tool": "big", "_outputPath": DAGGER + "out.x", "_retry": {"max_attempts": 1}})
        call_id = client.wait(rid, timeout=20.0)[1]
        self.assertEqual(client.wait_status(call_id, ["running"])["attempts"], 1)
        worker.send_result(call_id + ".1", ["x" * 300000] * 3)
        return worker, rid, call_id

    @unittest.skipIf(STORE != "sqlite", "the limit is on actd's own files")
    def test_a_failed_commit_does_not_end_a_call_as_if_actd_had_stopped(self):
        """A commit that fails is not a crash: the call whose result it
        carried (its dispatch stored by an earlier commit) is not ended
        worker_lost 'actd stopped during attempt 1'. Its answer, kept, is
        taken again once a commit succeeds (a write of the call's record,
        nothing else being written); failing again, it is one the store
        cannot hold (900 KB in a file limited to 512 KB): it is dropped,
        and the call runs again, even past its last allowed attempt, while
        the store goes on committing."""
        with Actd(preexec=self.small_files) as actd:
            client = actd.client()
            worker, _, call_id = self.answer_too_large(actd, client)
            wait_for(lambda: "store commit failed" in actd.log(), "the commit failed")

            def ended():
                try:            # a STATUS read while a commit fails is refused with it
                    return client.status(call_id)["state"] not in ("queued", "running")
                except CallRefused as refused:
                    self.assertEqual(refused.code, "internal")
                    return False
            wait_for(ended, "the call's end", timeout=20.0)
            status = client.status(call_id)
            outcome = status.pop("outcome", None)
            self.assertEqual((status["state"], status["attempts"]), ("ok", 2), status)
            self.assertEqual(outcome["result"], {"attempt": 2})
            self.assertIn("failed a commit again after others succeeded: dropped", actd.log())
            #  The store commits: an APPEND is kept
            self.assertEqual(client.request("APPEND", "full", {"type": "text", "text": "x"})[0],
                             "OK")
            worker.stop()
            client.close()

    @unittest.skipIf(STORE != "sqlite", "the limit is on actd's own files")
    def test_an_answer_the_store_cannot_hold_fails_two_commits_of_others_at_most(self):
        """Others' writes go on while an answer the store cannot hold is
        kept: once its commit failed, the answer waits for a commit to
        succeed (the APPENDs sent meanwhile, without it), is taken again,
        fails a commit again, and is dropped; its call runs again. Two
        failed commits in all, not one each try for ever."""
        with Actd(preexec=self.small_files) as actd:
            client = actd.client()
            worker, rid, _ = self.answer_too_large(actd, client)
            replies = []
            #  An APPEND every 40 ms for 0.3 s or more (each commit adds some
            #  30 KB to the WAL, which may not grow past the limit either)
            for n in range(8):
                replies.append(client.request("APPEND", "others",
                                              {"type": "text", "text": str(n)}, timeout=20.0))
                time.sleep(0.04)
            refused = [reply for reply in replies if reply[0] != "OK"]
            self.assertTrue(all(reply == REFUSED_IO for reply in refused), refused)
            self.assertEqual(actd.log().count("store commit failed ("), 2, actd.log())
            self.assertIn("failed a commit again after others succeeded: dropped", actd.log())
            done = json.loads(client.wait(rid, "DONE", timeout=20.0)[2])
            self.assertEqual((done["status"], done["attempts"], done["result"]),
                             ("ok", 2, {"attempt": 2}))
            kept = json.loads(client.request("HISTORY", "others", "1", "1000")[1])
            self.assertEqual(len(kept), 8 - len(refused))
            worker.stop()
            client.close()

if __name__ == "__main__":
    unittest.main()
