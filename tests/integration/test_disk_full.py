"""The store's disk fills up (docs/operations.md, "When the disk is
full"), seen from outside as a client and a worker see it: a request that
writes is refused `internal` with the cause named and nothing of it kept,
reads and PING are answered, a call in flight ends once, and commits
resume as soon as there is room, without a restart; a crash while full
loses nothing acknowledged and keeps nothing refused.

The disk is filled on demand by tests/helpers/disk_full.c (LD_PRELOAD,
no root nor mount): while the file self.full exists, every write under
the store's directory fails with ENOSPC, as on a full copy-on-write file
system, and SQLite answers SQLITE_FULL; or, when that file says "eio",
every fsync there fails EIO, as on a failing disk.
"""

import json
import os
import sqlite3
import time
import unittest

from harness import DAGGER, STORE, Actd, NoAnswer, Worker, find_binary, wait_for
from test_crash import wait_workers

REFUSED = ["ERROR", "internal",
           "the store could not commit (database or disk is full); nothing was kept"]


@unittest.skipIf(STORE != "sqlite", "the disk filled is the SQLite store's")
class DiskFullTest(unittest.TestCase):

    def setUp(self):
        self.actd = Actd()
        store = os.path.join(self.actd.dir, "store")
        os.mkdir(store)
        self.actd.store = os.path.join(store, "actd.db")
        self.full = os.path.join(self.actd.dir, "full")
        asan = os.environ.get("ASAN_OPTIONS", "detect_leaks=1")
        self.actd.env = {"LD_PRELOAD": find_binary("libdisk_full.so"),
                         "ACTD_DISK_FULL": self.full, "ACTD_DISK_FULL_DIR": store,
                         #  The library comes before the sanitizers' runtime
                         "ASAN_OPTIONS": asan + ":verify_asan_link_order=0"}
        self.workers = []
        self.actd.start()
        self.client = self.actd.client()

    def tearDown(self):
        for worker in self.workers:
            worker.stop()
        self.client.close()
        self.actd.cleanup()

    def fill(self):
        open(self.full, "w").close()

    def free(self):
        os.unlink(self.full)

    def worker(self, activity, handler, **kwargs):
        worker = Worker(self.actd.worker_endpoint, [activity], handler, name=activity, **kwargs)
        worker.start()
        self.workers.append(worker)
        wait_workers(self.actd, len(self.workers))
        return worker

    def timed(self, *request, timeout=10.0):
        """A request's reply and the seconds it took"""
        began = time.time()
        reply = self.client.request(*request, timeout=timeout)
        return reply, time.time() - began

    def history(self, context):
        return json.loads(self.client.request("HISTORY", context, "1", "1000")[1])

    def test_writes_are_refused_reads_answered_and_commits_resume(self):
        echo = self.worker("echo", lambda activity, params, meta: params, capacity=8)
        self.assertEqual(self.client.request("APPEND", "notes", {"type": "text", "text": "kept"})[0],
                         "OK")
        before, outcome = self.client.call("calls", {"_tool": "echo", "_outputPath": DAGGER + "o.a",
                                                     "v": "kept"})
        self.assertEqual(outcome["status"], "ok")
        self.fill()
        #  The first refusal: the commit fails (the helper does catch
        #  SQLite's writes), and the client is told why
        self.assertEqual(self.client.request("APPEND", "notes", {"type": "text", "text": "lost"}),
                         REFUSED)
        self.assertIn("database or disk is full", self.actd.log())
        #  Every kind of write, sent together (one commit tried for all)
        requests = [
            self.client.send("APPEND", "notes", {"type": "text", "text": "lost"}, "key-1"),
            self.client.send("CALL", "calls", {"_tool": "echo", "_outputPath": DAGGER + "o.b",
                                               "v": "lost", "_id": "id-1"}),
            self.client.send("CALL", "calls", {"_tool": "echo", "v": "lost-fire-and-forget"}),
            self.client.send("PLAN", "calls", [{"_tool": "echo", "_outputPath": DAGGER + "o.c",
                                                "v": "lost-plan"}]),
            self.client.send("DELETE", "notes")]
        for request in requests:
            self.assertEqual(self.client.wait(request, timeout=10.0), REFUSED)
        #  What writes nothing is answered at once
        for request in (["PING"], ["STATS"], ["STATUS", before], ["HISTORY", "notes", "1", "10"],
                        ["VIEW", "calls"], ["RESOLVE", "calls", DAGGER + "o.a"], ["CONTEXTS"]):
            reply, took = self.timed(*request)
            self.assertIn(reply[0], ("PONG", "VALUE"), (request, reply))
            self.assertLess(took, 0.5, request)
        #  Once a commit has failed, no TASK leaves before its commit: a
        #  call refused was not run (the first attempt of a call may leave
        #  while its commit runs, store/early_tasks, which a failing store
        #  turns into a run of a call its client was told was not kept)
        time.sleep(0.3)
        self.assertEqual([task[2]["v"] for task in echo.tasks], ["kept"])
        #  Room again: the next commit succeeds, without a restart, within
        #  the back-off (at most 2 s)
        self.free()
        reply, took = self.timed("APPEND", "notes", {"type": "text", "text": "after"}, "key-1")
        self.assertEqual(reply[0], "OK", reply)
        self.assertLess(took, 3.0)
        self.assertIn("store commits again", self.actd.log())
        after, outcome = self.client.call("calls", {"_tool": "echo", "_outputPath": DAGGER + "o.b",
                                                    "v": "again", "_id": "id-1"})
        self.assertEqual(outcome["status"], "ok")
        self.assertNotEqual(after, before)
        #  Nothing refused was kept, nothing kept is there twice
        self.assertEqual([m["text"] for m in self.history("notes")], ["kept", "after"])
        self.assertEqual([(m["_callId"], m["data"]) for m in self.history("calls")],
                         [(before, {"a": {"v": "kept"}}), (after, {"b": {"v": "again"}})])
        self.assertEqual([task[2]["v"] for task in echo.tasks], ["kept", "again"])

    def test_a_watch_goes_on_through_refusals(self):
        """A refused APPEND's _seq is given again to the next message kept,
        and a refused DELETE deletes nothing: a watch of the context sees
        each message kept once, in order, and goes on (it missed the one
        that took a refused message's _seq, and a refused DELETE ended it
        without a word: both watchers then waited for ever)."""
        self.assertEqual(self.client.request("APPEND", "w", {"type": "text", "text": "m1"})[0],
                         "OK")
        watcher = self.actd.client()
        watches = [watcher.send("WATCH", "w", "1"), watcher.send("WATCH", "w", "1", "all")]
        for watch in watches:
            self.assertEqual(json.loads(watcher.wait(watch, "EVENT")[1])["seq"], 1)
        self.fill()
        self.assertEqual(self.client.request("APPEND", "w", {"type": "text", "text": "lost"}),
                         REFUSED)
        self.assertEqual(self.client.request("DELETE", "w"), REFUSED)
        self.free()
        for text in ("m2", "m3"):
            self.assertEqual(self.client.request("APPEND", "w", {"type": "text", "text": text})[0],
                             "OK")
        for watch in watches:
            events = [json.loads(watcher.wait(watch, "EVENT", timeout=5.0)[1]) for _ in range(2)]
            self.assertEqual([(e["seq"], e["message"]["text"]) for e in events],
                             [(2, "m2"), (3, "m3")])
        time.sleep(0.2)
        self.assertEqual(watcher.pending, [])
        watcher.close()

    def test_a_call_in_flight_when_the_disk_fills_ends_once(self):
        """Its worker answers while the disk is full, in the batch whose
        commit fails first: the commit of its end fails, but the answer
        is kept, and once there is room the call ends from it: no second
        attempt (before, an answer taken in the first failed batch was
        lost with it and the call ran again); its output is written once,
        its DONE says ok, STATUS agrees. A fire-and-forget call answered
        in the same batch (its answer kept without its result, thrown
        away) ends ok too, once."""
        slow = self.worker("slow", lambda activity, params, meta: NoAnswer, capacity=2)
        request = self.client.send("CALL", "flight", {"_tool": "slow", "_outputPath": DAGGER + "o.x"})
        call_id = self.client.wait(request, "ACCEPTED")[1]
        forget = self.client.send("CALL", "flight", {"_tool": "slow", "v": "forget"})
        forget_id = self.client.wait(forget, "ACCEPTED")[1]
        wait_for(lambda: len(slow.tasks) == 2, "the first attempts")
        self.fill()
        slow.send_result(slow.tasks[0][0], {"attempt": 1})
        slow.send_result(slow.tasks[1][0], {"thrown": "away"})
        wait_for(lambda: "store commit failed" in self.actd.log(), "the failed commit")
        self.assertEqual(self.timed("PING")[0], ["PONG"])
        time.sleep(1.0)
        self.assertEqual(len(slow.tasks), 2, "a TASK left while nothing commits")
        self.free()
        done = json.loads(self.client.wait(request, "DONE", timeout=10.0)[2])
        self.assertEqual((done["status"], done["attempts"], done["result"]),
                         ("ok", 1, {"attempt": 1}))
        status = self.client.status(call_id)
        self.assertEqual((status["state"], status["attempts"]), ("ok", 1))
        self.assertEqual([m["data"] for m in self.history("flight")], [{"x": {"attempt": 1}}])
        time.sleep(0.5)
        self.assertEqual([p for p in self.client.pending if p[0] == request], [], "a second DONE")
        self.assertEqual((len(slow.tasks), slow.cancels, slow.disconnects), (2, [], 0))
        status = self.client.wait_status(forget_id, ["ok", "error", "timeout", "cancelled"])
        self.assertEqual((status["state"], status["attempts"]), ("ok", 1))

    def test_a_task_running_when_a_commit_fails_goes_on(self):
        """A failed commit takes state again from the store, but workers
        keep their tasks: a call stored running whose task its worker
        still holds runs on there (before, every worker holding a task was
        told DISCONNECT and the work was done again: an outage of the
        store threw away the work of long tasks). The call's context is
        read without waiting for the store (nothing of it to write). A
        task whose call was not kept is cancelled at its worker."""
        slow = self.worker("slow", lambda activity, params, meta: NoAnswer, capacity=4)
        request = self.client.send("CALL", "long", {"_tool": "slow", "_outputPath": DAGGER + "o.x",
                                                    "v": "kept"})
        call_id = self.client.wait(request, "ACCEPTED")[1]
        wait_for(lambda: slow.tasks, "the first attempt")
        self.fill()
        refused = self.client.send("CALL", "long", {"_tool": "slow", "v": "lost"})
        self.assertEqual(self.client.wait(refused, timeout=10.0), REFUSED)
        self.assertEqual(self.client.request("APPEND", "long", {"type": "text", "text": "x"}),
                         REFUSED)
        #  Still full: the call is running, its context read at once
        status, took = self.timed("STATUS", call_id)
        self.assertEqual(status[0], "VALUE", status)
        self.assertEqual(json.loads(status[1])["state"], "running")
        self.assertLess(took, 0.5)
        self.assertEqual(slow.disconnects, 0)
        #  A refused call's task that left before the failed commit (its
        #  first attempt may leave while the commit runs) is cancelled
        lost = [task for task, _, params, _ in slow.tasks if params["v"] == "lost"]
        wait_for(lambda: slow.cancels == lost, "the lost call's task cancelled")
        self.free()
        slow.send_result(slow.tasks[0][0], {"done": True})
        done = json.loads(self.client.wait(request, "DONE", timeout=10.0)[2])
        self.assertEqual((done["status"], done["attempts"], done["result"]),
                         ("ok", 1, {"done": True}))
        self.assertEqual([task[0] for task in slow.tasks if task[2]["v"] == "kept"],
                         [call_id + ".1"])
        self.assertEqual(slow.disconnects, 0)
        self.assertEqual([m.get("data") for m in self.history("long")], [{"x": {"done": True}}])

    def test_an_answer_while_commits_fail_is_kept_for_its_call(self):
        """Once a commit has failed, a worker's answer is kept until a
        commit succeeds: its call's end, refused with the batches that
        fail, is written from it once there is room, and the call is not
        run again (it was: a task that ended during an outage was done
        twice). A FAIL is kept alike, its retry counted once."""
        slow = self.worker("slow", lambda activity, params, meta: NoAnswer, capacity=4)
        first = self.client.send("CALL", "kept", {"_tool": "slow", "_outputPath": DAGGER + "o.a",
                                                  "_retry": {"max_attempts": 3}})
        second = self.client.send("CALL", "kept", {"_tool": "slow", "_outputPath": DAGGER + "o.b",
                                                   "_retry": {"max_attempts": 3}})
        ids = [self.client.wait(request, "ACCEPTED")[1] for request in (first, second)]
        wait_for(lambda: len(slow.tasks) == 2, "both tasks")
        self.fill()
        self.assertEqual(self.client.request("APPEND", "kept", {"type": "text", "text": "x"}),
                         REFUSED)
        slow.send_result(slow.tasks[0][0], {"answered": "while full"})
        slow.outbox.put([b"ACTW01", b"FAIL", slow.tasks[1][0].encode(),
                         json.dumps({"message": "try again", "retryable": True}).encode()])
        wait_for(lambda: self.actd.log().count("store commit failed") >= 3, "more failures")
        self.free()
        done = json.loads(self.client.wait(first, "DONE", timeout=10.0)[2])
        self.assertEqual((done["status"], done["attempts"], done["result"]),
                         ("ok", 1, {"answered": "while full"}))
        #  The FAIL's retry: attempt 2, once
        wait_for(lambda: len(slow.tasks) == 3, "the failed call's retry", timeout=10.0)
        time.sleep(0.5)
        self.assertEqual([task[0] for task in slow.tasks],
                         [ids[0] + ".1", ids[1] + ".1", ids[1] + ".2"])
        self.assertEqual([m["data"] for m in self.history("kept") if m.get("kind") == "o"],
                         [{"a": {"answered": "while full"}}])
        self.assertEqual((slow.disconnects, slow.cancels), (0, []))
        self.assertIn("kept through a failed commit, is taken again", self.actd.log())

    def test_an_attempt_times_out_through_failed_commits(self):
        """A running call's deadline is its attempt's, through failed
        commits: it used to count again from each failure (the call,
        taken again from the store, attached to its task), so failures
        every few seconds kept a task nobody answers from ever timing out,
        and a call timed out its whole _timeout after the disk had room.
        Now the timeout, due during the outage, ends the call with the
        first commit that succeeds. An answer kept through the failures
        still wins over a deadline passed meanwhile."""
        slow = self.worker("slow", lambda activity, params, meta: NoAnswer, capacity=4)
        calls = [self.client.send("CALL", "late", {"_tool": "slow", "_timeout": 4000,
                                                   "_outputPath": DAGGER + "o." + name,
                                                   "_retry": {"max_attempts": 1}})
                 for name in ("never", "answered")]
        ids = [self.client.wait(request, "ACCEPTED")[1] for request in calls]
        wait_for(lambda: len(slow.tasks) == 2, "both tasks")
        began, sent = time.time(), False
        self.fill()
        #  Writes refused for 6 s, well past the deadlines: commits fail
        #  every 0.1 to 2 s (the backoff doubles)
        while time.time() - began < 6.0:
            self.assertEqual(self.client.request("APPEND", "late", {"type": "text", "text": "x"}),
                             REFUSED)
            if not sent and time.time() - began > 1.0:
                slow.send_result(slow.tasks[1][0], {"answered": "in time"})
                sent = True
            time.sleep(0.2)
        self.free()
        while True:             # the first commit that succeeds
            reply = self.client.request("APPEND", "late", {"type": "text", "text": "y"})
            if reply[0] == "OK":
                break
            self.assertEqual(reply, REFUSED)
            time.sleep(0.05)
        room = time.time()
        done = json.loads(self.client.wait(calls[0], "DONE", timeout=10.0)[2])
        waited = time.time() - room
        self.assertEqual((done["status"], done["attempts"], done["error"]["code"]),
                         ("timeout", 1, "timeout"))
        #  Before: 4 s counted from the last failure, which the first
        #  commit that succeeds follows by 2 s at most (the backoff)
        self.assertLess(waited, 1.0, "the timeout counted again from a failed commit")
        answered = json.loads(self.client.wait(calls[1], "DONE", timeout=10.0)[2])
        self.assertEqual((answered["status"], answered["attempts"], answered["result"]),
                         ("ok", 1, {"answered": "in time"}))
        wait_for(lambda: ids[0] + ".1" in slow.cancels, "the timed-out task cancelled")
        self.assertNotIn(ids[1] + ".1", slow.cancels)

    def test_calls_through_a_disk_that_fills_and_empties_end_once(self):
        """Chaos: calls with an output path sent all along while the disk
        fills and empties every few hundred ms, a worker answering each
        task after a random delay (some while full, some after a failed
        commit made their call run again, cancelled or not). Each call,
        sent again with its _id while refused, is accepted once, ends ok,
        and has its output written once; the worker's slots all come back
        (a burst of calls afterwards all ends). One call in eight has a
        _timeout of 300 ms and one attempt, and is answered after 0.5 to
        0.9 s: it ends timeout with nothing written, or ok when its answer
        was kept through failed commits that deferred its deadline; never
        both, never twice (how many time out depends on the outages' timing:
        0 to 6 of 28 in runs here, printed at the end). ACTD_CHAOS_SECONDS sets how long calls are sent
        (6 s; longer runs by hand)."""
        seconds = float(os.environ.get("ACTD_CHAOS_SECONDS", "6"))
        import random
        import threading
        rng = random.Random(46)
        worker = None

        def later(activity, params, meta):
            #  Answered from a timer, while the worker goes on reading
            task = meta["call_id"] + "." + str(meta["attempt"])
            delay = rng.uniform(0.5, 0.9) if "_timeout" in params else rng.uniform(0.0, 0.3)
            threading.Timer(delay, worker.send_result,
                            (task, {"n": params["n"]})).start()
            return NoAnswer
        worker = self.worker("work", later, capacity=8)
        stop = threading.Event()

        def toggle():
            while not stop.wait(rng.uniform(0.2, 0.6)):
                if os.path.exists(self.full):
                    self.free()
                else:
                    self.fill()
        chaos = threading.Thread(target=toggle)
        chaos.start()
        accepted, waiting = {}, {}
        try:
            began = time.time()
            n = 0
            while time.time() - began < seconds or waiting:
                if time.time() - began < seconds:
                    for _ in range(4):
                        call = {"_tool": "work", "_outputPath": DAGGER + "o.c%d" % n, "n": n,
                                "_id": "c%d" % n}
                        if n % 8 == 7:
                            call.update(_timeout=300, _retry={"max_attempts": 1})
                        waiting[self.client.send("CALL", "chaos", call)] = call
                        n += 1
                for request, call in list(waiting.items()):
                    reply = self.client.wait(request, timeout=30.0)
                    del waiting[request]
                    if reply[0] == "ACCEPTED":
                        accepted.setdefault(call["n"], reply[1])
                        self.assertEqual(accepted[call["n"]], reply[1], "accepted twice")
                    else:
                        self.assertEqual(reply[:2], ["ERROR", "internal"], reply)
                        waiting[self.client.send("CALL", "chaos", call)] = call
                    if time.time() - began > seconds + 60:
                        self.fail("calls still refused 60 s after the last was sent")
                time.sleep(0.05)
        finally:
            stop.set()
            chaos.join()
            if os.path.exists(self.full):
                self.free()
        self.assertEqual(sorted(accepted), list(range(n)))
        written, timeouts = set(), []
        for number, call_id in accepted.items():
            status = self.client.wait_status(call_id, ["ok", "error", "timeout", "skipped",
                                                       "cancelled"], timeout=60.0)
            if number % 8 == 7 and status["state"] == "timeout":
                self.assertEqual(status["outcome"]["error"]["code"], "timeout", status)
                timeouts.append(call_id)
                continue
            self.assertEqual(status["state"], "ok", status)
            self.assertEqual(status["outcome"]["result"], {"n": number}, status)
            written.add("c%d" % number)
        writes, errors, after = [], [], 1
        while True:             #  Every page of the context's history
            page = json.loads(self.client.request("HISTORY", "chaos", str(after), "1000")[1])
            writes += [m["data"] for m in page if "data" in m]
            errors += [m for m in page if "data" not in m]
            if len(page) < 1000:
                break
            after = page[-1]["_seq"] + 1
        self.assertEqual(sorted(list(w.keys())[0] for w in writes), sorted(written))
        #  A call timed out has its error appended once (SEMANTICS.md 6)
        self.assertEqual(sorted((m["type"], m["error"]["code"], m["_callId"]) for m in errors),
                         sorted(("error", "timeout", call_id) for call_id in timeouts))
        #  No slot is lost: 16 more calls (twice the capacity) all end
        more = [self.client.send("CALL", "after", {"_tool": "work", "n": k,
                                                   "_outputPath": DAGGER + "o.a%d" % k})
                for k in range(16)]
        for request in more:
            self.assertEqual(self.client.wait(request, "DONE", timeout=30.0)[0], "DONE")
        print("chaos: %d calls (%d timed out), %d tasks, %d cancelled, %d commits failed"
              % (n, len(timeouts), len(worker.tasks), len(worker.cancels),
                 self.actd.log().count("store commit failed")))

    def test_failed_commits_back_off_and_idle_workers_stay(self):
        """operations.md section 6: a store that keeps failing its commits
        is retried with a back-off (100 ms doubling to 2 s, not every
        pass): actd logs at a bounded rate, answers PING and STATS, keeps
        a worker that holds no task, and every call accepted before the
        disk filled ends ok once there is room. (Moved from
        test_crash_store, where it needed root to mount a tmpfs.)"""
        def echo_later(activity, params, meta):
            time.sleep(0.05)
            return params
        self.worker("echo", echo_later, capacity=20)
        idle = self.worker("other", lambda activity, params, meta: None)
        accepted = []
        for n in range(0, 60, 20):
            rids = [self.client.send("CALL", "full", {"_tool": "echo", "n": n + k,
                                                      "_outputPath": DAGGER + "o.c%d" % (n + k)})
                    for k in range(20)]
            accepted += [self.client.wait(rid, "ACCEPTED", timeout=30.0)[1] for rid in rids]
        #  Full while some of them still run: their ends are refused too
        self.fill()
        reply = self.client.request("CALL", "full", {"_tool": "echo", "n": -1}, timeout=30.0)
        self.assertEqual(reply, REFUSED)
        time.sleep(0.5)
        start = self.actd.log().count("store commit failed")
        began = time.time()
        time.sleep(2.0)
        failures = self.actd.log().count("store commit failed") - start
        elapsed = time.time() - began
        #  A bounded rate, not a count: without a back-off, every pass
        #  with work fails one
        self.assertLessEqual(failures, 20, "%d failed commits in %.1f s" % (failures, elapsed))
        self.assertEqual(self.timed("PING")[0], ["PONG"])
        self.assertIn("calls", self.client.value("STATS", timeout=5.0))
        #  An idle worker holds nothing the failures made stale: it stays
        self.assertEqual(idle.disconnects, 0)
        self.free()
        for call_id in accepted:
            status = self.client.wait_status(call_id, ["ok", "error", "timeout", "skipped",
                                                       "cancelled"], timeout=30.0)
            self.assertEqual(status["state"], "ok", status)
        reply = self.client.request("CALL", "full", {"_tool": "echo", "n": -2}, timeout=30.0)
        self.assertEqual(reply[0], "ACCEPTED", reply)
        self.assertNotIn("actd stopped during", self.actd.log())
        self.assertEqual(self.actd.stop(), 0)

    def test_a_crash_while_full_keeps_what_was_acknowledged(self):
        """kill -9 while full; actd starts again on the full disk (SQLite
        takes back the room of its -shm file), serves reads, refuses
        writes; then room, and a second crash: every acknowledged message
        and call is there once, nothing refused is."""
        self.worker("echo", lambda activity, params, meta: params)
        acknowledged = []
        for i in range(5):
            reply = self.client.request("APPEND", "crash", {"type": "text", "text": "m%d" % i})
            self.assertEqual(reply[0], "OK")
            acknowledged.append("m%d" % i)
        call_id, outcome = self.client.call("crash", {"_tool": "echo", "_outputPath": DAGGER + "o.c",
                                                      "v": 1})
        self.fill()
        for i in range(3):
            self.assertEqual(self.client.request("APPEND", "crash", {"type": "text", "text": "x%d" % i}),
                             REFUSED)
        self.actd.kill()
        self.client.close()
        self.actd.start()                   # still full
        self.client = self.actd.client()
        texts = [m.get("text") for m in self.history("crash")]
        self.assertEqual(texts, acknowledged + [None])
        self.assertEqual(self.client.status(call_id)["state"], "ok")
        self.assertEqual(self.client.request("APPEND", "crash", {"type": "text", "text": "x9"}),
                         REFUSED)
        self.free()
        reply = self.client.request("APPEND", "crash", {"type": "text", "text": "m9"})
        self.assertEqual(reply, ["OK", '{"seq":7}'])
        self.actd.kill()
        self.client.close()
        self.actd.start()
        self.client = self.actd.client()
        texts = [m.get("text") for m in self.history("crash")]
        self.assertEqual(texts, acknowledged + [None, "m9"])

    def test_a_failed_sync_keeps_nothing_refused_across_a_crash(self):
        """A failing disk: the WAL's sync fails (EIO) after a commit's
        frames were written. The commit is refused, and its frames, still
        in the file (the page cache), must not make it come back when the
        store is opened again: a kill -9 right after the failure, and one
        after a commit that wrote over them, find only what was
        acknowledged, and no refused call runs."""
        refused = ["ERROR", "internal",
                   "the store could not commit (disk I/O error); nothing was kept"]
        self.assertEqual(self.client.request("APPEND", "sync", {"type": "text", "text": "kept"}),
                         ["OK", '{"seq":1}'])
        self.fail_syncs()
        self.assertEqual(self.client.request("APPEND", "sync", {"type": "text", "text": "lost"}),
                         refused)
        self.assertEqual(self.client.request("CALL", "sync", {"_tool": "echo", "v": "lost"}),
                         refused)
        self.restart_after_kill()
        echo = self.worker("echo", lambda activity, params, meta: params)
        self.assertEqual([m.get("text") for m in self.history("sync")], ["kept"])
        self.assertEqual(self.client.value("STATS")["calls"]["accepted"], 0)
        self.assertIn("marked unusable", self.actd.log())
        #  Now a commit that succeeds after the failed one, in its place
        self.assertEqual(self.client.request("APPEND", "sync", {"type": "text", "text": "after"}),
                         ["OK", '{"seq":2}'])
        self.fail_syncs()
        for i in range(3):
            self.assertEqual(self.client.request("APPEND", "sync", {"type": "text", "text": "x"}),
                             refused)
        self.free()
        reply = self.client.request("APPEND", "sync", {"type": "text", "text": "again"})
        self.assertEqual(reply, ["OK", '{"seq":3}'])
        self.restart_after_kill()
        self.assertEqual([m.get("text") for m in self.history("sync")], ["kept", "after", "again"])
        self.assertEqual(self.client.value("STATS")["messages"], 3)
        time.sleep(0.3)
        self.assertEqual(echo.tasks, [])
        self.assertEqual(self.actd.stop(), 0)
        with sqlite3.connect(self.actd.store) as db:
            self.assertEqual(db.execute("PRAGMA integrity_check").fetchall(), [("ok",)])

    def fail_syncs(self):
        """From now on every fsync and fdatasync under the store's
        directory fails EIO (the disk_full library's "eio" mode)"""
        with open(self.full, "w") as control:
            control.write("eio")

    def restart_after_kill(self):
        """kill -9, the disk well again, and a start on the same store"""
        self.actd.kill()
        if os.path.exists(self.full):
            self.free()
        self.client.close()
        self.actd.start()
        self.client = self.actd.client()

    def test_a_start_on_a_full_disk_says_so(self):
        """A store stopped cleanly (its -wal and -shm files removed) cannot
        be opened on a full disk (SQLite must write its -shm file): actd
        exits naming the cause, not as if the file were not a database,
        and starts once there is room."""
        self.assertEqual(self.client.request("APPEND", "start", {"type": "text", "text": "kept"})[0],
                         "OK")
        self.assertEqual(self.actd.stop(), 0)
        self.fill()
        self.actd.start(wait=False)
        self.assertNotEqual(self.actd.process.wait(20), 0)
        line = [l for l in self.actd.log().splitlines() if "cannot start" in l][-1]
        self.assertIn("No space left on device", line)
        self.assertNotIn("not a usable database", line)
        self.free()
        self.client.close()
        self.actd.start()
        self.client = self.actd.client()
        self.assertEqual([m["text"] for m in self.history("start")], ["kept"])


if __name__ == "__main__":
    unittest.main()
