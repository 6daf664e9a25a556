"""Streams and the lifecycle of contexts (PROTOCOL.md section 1.1),
against the real actd.

WATCH streams the stored messages of a context whose _seq is at least
from-seq, oldest first: first those already stored, then each new one once
its commit is durable; with `all`, each change of state of a call of the
context too. UNWATCH ends a watch; a watcher that disconnects is dropped;
beyond max_watches, ERROR busy.
"""

import json
import os
import random
import resource
import signal
import tempfile
import time
import unittest

import zmq

from harness import DAGGER, STORE, Actd, Client, Fail, NoAnswer, Worker, wait_for


def text(n):
    return {"type": "data", "kind": "log", "data": {"n": n}}


class WatchCase(unittest.TestCase):

    config = ""
    preexec = None          # run in actd's process before it starts

    def setUp(self):
        args = []
        if self.config:
            handle = tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False)
            handle.write(self.config)
            handle.close()
            self.addCleanup(os.unlink, handle.name)
            args = ["--config", handle.name]
        self.actd = Actd(args=args, preexec=self.preexec)
        self.actd.start()
        self.client = self.actd.client()
        self.watcher = Client(self.actd.client_endpoint)

    def tearDown(self):
        self.watcher.close()
        self.client.close()
        self.actd.finish()

    def append(self, context, message):
        reply = self.client.request("APPEND", context, message)
        self.assertEqual(reply[0], "OK", reply)
        return json.loads(reply[1])["seq"]

    def events(self, rid, count, timeout=20.0, client=None):
        """The next count EVENT bodies of watch rid."""
        client = client or self.watcher
        return [json.loads(client.wait(rid, "EVENT", timeout=timeout)[1])
                for _ in range(count)]

    def no_more(self, rid, client=None, wait=0.5):
        client = client or self.watcher
        with self.assertRaises(TimeoutError):
            client.wait(rid, "EVENT", timeout=wait)

    def watch_calls(self, context):
        """WATCH context's messages and calls from now on; returns its
        request id once the watch is open (actd answered a PING sent after
        it on the same socket), so that no change after it is missed."""
        rid = self.watcher.send("WATCH", context, "0", "all")
        self.assertEqual(self.watcher.request("PING"), ["PONG"])
        return rid

    def start_worker(self, activities, handler, **kwargs):
        """A harness worker serving activities, stopped after the test."""
        worker = Worker(self.actd.worker_endpoint, activities, handler, **kwargs)
        worker.start()
        self.addCleanup(worker.stop)
        return worker

    def submit(self, context, call):
        """CALL, without waiting for its DONE; returns the call id."""
        return self.client.call(context, call, wait_done=False)[0]

    def next_call(self, rid):
        """The call of the next call event of watch rid (the message events
        of outputs written meanwhile are passed over)."""
        while True:
            event = self.events(rid, 1)[0]
            if "call" in event:
                return event["call"]

    def told(self, rid, call_id, state, attempts):
        """The next call event of watch rid, which must be call_id's, in
        state with attempts."""
        call = self.next_call(rid)
        self.assertEqual((call["call_id"], call["state"], call["attempts"]),
                         (call_id, state, attempts), call)
        return call


class WatchTest(WatchCase):

    def test_from_1_backlog_then_live_in_order(self):
        for n in range(1, 6):
            self.append("w1", text(n))
        rid = self.watcher.send("WATCH", "w1", "1")
        backlog = self.events(rid, 5)
        self.assertEqual([e["seq"] for e in backlog], [1, 2, 3, 4, 5])
        self.assertEqual([e["message"]["data"]["n"] for e in backlog], [1, 2, 3, 4, 5])
        #  As HISTORY gives them
        history = self.client.value("HISTORY", "w1", "1", "10")
        self.assertEqual([e["message"] for e in backlog], history)
        for n in range(6, 9):
            self.append("w1", text(n))
        live = self.events(rid, 3)
        self.assertEqual([e["seq"] for e in live], [6, 7, 8])
        self.no_more(rid)

    def test_from_0_only_what_comes_from_now(self):
        self.append("w0", text(1))
        rid = self.watcher.send("WATCH", "w0", "0")
        self.no_more(rid)
        self.append("w0", text(2))
        self.assertEqual([e["seq"] for e in self.events(rid, 1)], [2])

    def test_from_the_middle_and_a_context_that_does_not_exist_yet(self):
        for n in range(1, 11):
            self.append("wm", text(n))
        rid = self.watcher.send("WATCH", "wm", "7")
        self.assertEqual([e["seq"] for e in self.events(rid, 4)], [7, 8, 9, 10])
        self.no_more(rid)
        later = self.watcher.send("WATCH", "not-yet", "1")
        self.no_more(later)
        self.append("not-yet", text(1))
        self.assertEqual(self.events(later, 1)[0]["message"]["data"], {"n": 1})

    def test_backlog_and_appends_meanwhile_have_no_gap_and_no_duplicate(self):
        for n in range(1, 601):         # more than one page of the backlog
            self.client.send("APPEND", "wg", json.dumps(text(n)))
        rid = self.watcher.send("WATCH", "wg", "1")
        for n in range(601, 801):       # while the backlog is being sent
            self.client.send("APPEND", "wg", json.dumps(text(n)))
        seqs = [e["seq"] for e in self.events(rid, 800, timeout=60)]
        self.assertEqual(seqs, list(range(1, 801)))
        self.no_more(rid)

    def test_a_watch_survives_10000_appends(self):
        rid = self.watcher.send("WATCH", "w10k", "1")
        sent = 0
        while sent < 10000:
            batch = min(500, 10000 - sent)
            rids = [self.client.send("APPEND", "w10k", json.dumps(text(sent + i)))
                    for i in range(batch)]
            for r in rids:
                self.assertEqual(self.client.wait(r, timeout=30)[0], "OK")
            sent += batch
        seqs = [e["seq"] for e in self.events(rid, 10000, timeout=120)]
        self.assertEqual(seqs, list(range(1, 10001)))

    def test_unwatch_ends_it(self):
        rid = self.watcher.send("WATCH", "wu", "1")
        self.append("wu", text(1))
        self.events(rid, 1)
        self.assertEqual(self.watcher.request("UNWATCH", rid), ["OK"])
        self.assertEqual(self.watcher.request("UNWATCH", "no-such-watch"), ["OK"])
        self.append("wu", text(2))
        self.no_more(rid)

    def test_all_shows_queued_running_and_the_end_of_each_call(self):
        rid = self.watcher.send("WATCH", "wc", "0", "all")
        self.no_more(rid, wait=0.3)
        call_id, _ = self.client.call("wc", {"_tool": "later", "_outputPath": DAGGER + "out.x",
                                             "v": 1}, wait_done=False)
        first = self.events(rid, 1)         # queued (no worker yet): it waits for nothing
        self.assertEqual([e["call"]["state"] for e in first], ["queued"])
        self.assertEqual(first[0]["call"]["call_id"], call_id)
        worker = Worker(self.actd.worker_endpoint, ["later"], lambda a, p, m: {"ok": p["v"]},
                        name="w")
        worker.start()
        try:
            rest = self.events(rid, 3)      # running, the output message, the end
            calls = [e["call"] for e in rest if "call" in e]
            messages = [e for e in rest if "seq" in e]
            self.assertEqual([c["state"] for c in calls], ["running", "ok"])
            self.assertEqual(calls[1]["outcome"]["result"], {"ok": 1})
            self.assertEqual(calls[1]["attempts"], 1)
            self.assertEqual(messages[0]["message"]["_callId"], call_id)
            self.assertEqual(calls[1], dict(self.client.value("STATUS", call_id)))
        finally:
            worker.stop()

    def test_all_starts_with_the_calls_under_way(self):
        """A watch of calls opened late first gets each live call of its
        context in its state then, with tool, output_path and references
        (the dashboard draws the plan from them); STATUS has them too, also
        once the call has ended (from its record)."""
        self.append("late", {"type": "data", "kind": "user", "data": {"city": "Oslo"}})
        first, _ = self.client.call("late", {"_tool": "later", "_outputPath": DAGGER + "out.x",
                                             "city": DAGGER + "user.city"}, wait_done=False)
        second, _ = self.client.call("late", {"_tool": "later", "_outputPath": DAGGER + "out.y",
                                              "x": DAGGER + "out.x", "again": DAGGER + "out.x",
                                              "n": [DAGGER + "user.city || " + DAGGER + "u.c"]},
                                     wait_done=False)
        self.client.call("elsewhere", {"_tool": "later", "v": 1}, wait_done=False)
        wait_for(lambda: self.client.status(second)["state"] == "waiting", "the second waiting")
        rid = self.watcher.send("WATCH", "late", "0", "all")
        told = {e["call"]["call_id"]: e["call"] for e in self.events(rid, 2)}
        self.no_more(rid, wait=0.3)
        self.assertEqual(set(told), {first, second})
        self.assertEqual(told[first], dict(self.client.value("STATUS", first)))
        self.assertEqual({k: told[first][k] for k in ("state", "tool", "output_path", "references")},
                         {"state": "queued", "tool": "later", "output_path": DAGGER + "out.x",
                          "references": [DAGGER + "user.city"]})
        self.assertEqual(told[second]["state"], "waiting")
        self.assertEqual(set(told[second]["waiting_on"]), {DAGGER + "out.x"})
        self.assertEqual(sorted(told[second]["references"]),
                         sorted([DAGGER + "out.x", DAGGER + "user.city || " + DAGGER + "u.c"]))
        #  A watch of messages alone gets no call; a fire-and-forget call
        #  without references has neither output_path nor references
        quiet = self.watcher.send("WATCH", "late", "0")
        self.no_more(quiet, wait=0.3)
        other = self.client.call("late", {"_tool": "later", "v": 2}, wait_done=False)[0]
        self.assertNotIn("output_path", self.client.status(other))
        self.assertNotIn("references", self.client.status(other))
        worker = Worker(self.actd.worker_endpoint, ["later"], lambda a, p, m: p, name="w")
        worker.start()
        try:
            ended = wait_for(lambda: (lambda s: s["state"] == "ok" and s)(
                self.client.status(second)), "the second to end")
            self.assertEqual(ended["references"], told[second]["references"])
            self.assertEqual(ended["output_path"], DAGGER + "out.y")
        finally:
            worker.stop()

    def test_bad_arguments(self):
        self.assertEqual(self.watcher.request("WATCH", "x", "one")[:2], ["ERROR", "bad_argument"])
        self.assertEqual(self.watcher.request("WATCH", "x", "1", "some")[:2],
                         ["ERROR", "bad_argument"])
        self.assertEqual(self.watcher.request("WATCH", "bad context!", "1")[:2],
                         ["ERROR", "bad_context"])


class CallEventTest(WatchCase):
    """With `all`, each change of a call's state is one event whose call is
    the object STATUS returns at that moment (PROTOCOL.md section 1.1):
    `waiting` only for a call that waits for an earlier call (SEMANTICS.md
    section 7), `attempts` counting the attempt that runs. Each event a
    call stays in until STATUS is asked is compared with STATUS; one it
    leaves at once, with STATUS of a later state, changed in state and
    attempts only."""

    def runs_from_the_queue(self, watch, call_id, activity):
        """call_id's next events, each as STATUS has it then: queued (no
        worker serves activity yet, and it waits for nothing), running its
        first attempt once a worker comes, ok once that is answered; then
        no other event."""
        queued = self.told(watch, call_id, "queued", 0)
        self.assertNotIn("waiting_on", queued)
        self.assertEqual(queued, self.client.status(call_id))
        worker = self.start_worker([activity], lambda a, p, m: NoAnswer)
        self.assertEqual(self.told(watch, call_id, "running", 1), self.client.status(call_id))
        worker.send_result(call_id + ".1", {"v": 1})
        self.assertEqual(self.told(watch, call_id, "ok", 1), self.client.status(call_id))
        self.no_more(watch)

    def test_a_call_without_references_starts_queued_and_runs_attempt_1(self):
        watch = self.watch_calls("ev-plain")
        call_id = self.submit("ev-plain", {"_tool": "held", "_outputPath": DAGGER + "out.x"})
        self.runs_from_the_queue(watch, call_id, "held")

    def test_a_retry_is_queued_once_then_runs_as_attempt_2(self):
        def answer(activity, params, meta):
            if meta["attempt"] == 1:
                raise Fail("not yet")
            return NoAnswer
        worker = self.start_worker(["flaky"], answer)
        watch = self.watch_calls("ev-retry")
        call_id = self.submit("ev-retry", {"_tool": "flaky", "_outputPath": DAGGER + "out.x",
                                           "_retry": {"max_attempts": 2, "initial_ms": 100}})
        seen = [self.told(watch, call_id, state, attempts)
                for state, attempts in (("queued", 0), ("running", 1),
                                        ("queued", 1), ("running", 2))]
        #  The second attempt is held: STATUS says what its event said
        steady = self.client.status(call_id)
        self.assertEqual(seen[-1], steady)
        for call in seen:
            self.assertEqual(call, dict(steady, state=call["state"], attempts=call["attempts"]))
        worker.send_result(call_id + ".2", {"v": 2})
        self.assertEqual(self.told(watch, call_id, "ok", 2), self.client.status(call_id))
        self.no_more(watch)

    def test_a_call_waits_for_its_producer_then_is_queued_and_runs(self):
        producer = self.start_worker(["prod"], lambda a, p, m: NoAnswer)
        watch = self.watch_calls("ev-dep")
        prod_id = self.submit("ev-dep", {"_tool": "prod", "_outputPath": DAGGER + "step.a"})
        self.told(watch, prod_id, "queued", 0)
        self.assertEqual(self.told(watch, prod_id, "running", 1), self.client.status(prod_id))
        cons_id = self.submit("ev-dep", {"_tool": "cons", "_outputPath": DAGGER + "step.b",
                                         "x": DAGGER + "step.a"})
        waiting = self.told(watch, cons_id, "waiting", 0)
        self.assertEqual(waiting["waiting_on"], [DAGGER + "step.a"])
        self.assertEqual(waiting, self.client.status(cons_id))
        producer.send_result(prod_id + ".1", 5)
        self.assertEqual(self.told(watch, prod_id, "ok", 1), self.client.status(prod_id))
        self.runs_from_the_queue(watch, cons_id, "cons")

    def test_a_call_whose_reference_was_erased_before_it_ran_is_skipped_without_waiting(self):
        """SEMANTICS.md section 4: a value erased between the call's queueing
        and its dispatch, with no call left to write it again: the call is
        skipped from the queue. It never waited, and no event says it did."""
        self.append("ev-erased", {"type": "data", "kind": "v", "data": {"a": 1}})
        watch = self.watch_calls("ev-erased")
        call_id = self.submit("ev-erased", {"_tool": "late", "_outputPath": DAGGER + "s.out",
                                            "x": DAGGER + "v.a"})
        self.assertEqual(self.told(watch, call_id, "queued", 0), self.client.status(call_id))
        self.append("ev-erased", {"type": "data", "kind": "v", "data": None,
                                  "_outputMethod": "erase"})
        worker = self.start_worker(["late"], lambda a, p, m: p)
        ended = self.told(watch, call_id, "skipped", 0)
        self.assertEqual(ended["outcome"]["error"]["code"], "unresolved_reference")
        self.assertEqual(ended, self.client.status(call_id))
        self.no_more(watch)
        self.assertEqual(worker.tasks, [])

    def test_cancelled_and_timed_out_calls_end_as_status_reports_them(self):
        watch = self.watch_calls("ev-end")
        idle_id = self.submit("ev-end", {"_tool": "nobody", "_outputPath": DAGGER + "a.x"})
        self.assertEqual(self.told(watch, idle_id, "queued", 0), self.client.status(idle_id))
        self.assertEqual(self.client.request("CANCEL", idle_id), ["OK"])
        self.assertEqual(self.told(watch, idle_id, "cancelled", 0), self.client.status(idle_id))
        #  Room for two: a cancelled task's slot stays taken until its
        #  worker answers, and this one never does
        self.start_worker(["held"], lambda a, p, m: NoAnswer, capacity=2)
        held_id = self.submit("ev-end", {"_tool": "held", "_outputPath": DAGGER + "b.x"})
        self.told(watch, held_id, "queued", 0)
        self.assertEqual(self.told(watch, held_id, "running", 1), self.client.status(held_id))
        self.assertEqual(self.client.request("CANCEL", held_id), ["OK"])
        self.assertEqual(self.told(watch, held_id, "cancelled", 1), self.client.status(held_id))
        late_id = self.submit("ev-end", {"_tool": "held", "_outputPath": DAGGER + "c.x",
                                         "_timeout": 200, "_retry": {"max_attempts": 1}})
        self.told(watch, late_id, "queued", 0)
        running = self.told(watch, late_id, "running", 1)
        ended = self.told(watch, late_id, "timeout", 1)
        self.assertEqual(ended["outcome"]["error"]["code"], "timeout")
        self.assertEqual(ended, self.client.status(late_id))
        ended.pop("outcome")
        self.assertEqual(running, dict(ended, state="running"))
        self.no_more(watch)


def _small_files():
    """In actd's process: files of 512 KiB at most, so that a commit of a
    larger result fails (the signal left to its default, as a service
    manager leaves it: actd must ignore it itself)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_FSIZE, (512 << 10, 512 << 10))


@unittest.skipIf(STORE != "sqlite", "the limit is on actd's own files")
class CallEventRecoveryTest(WatchCase):
    """After a failed commit actd takes its calls again from the store
    (test_crash_store.py) while the watches stay open: a recovered call
    that waits for nothing is told queued, never waiting, and its next
    attempt runs as the one after those the store counted."""

    preexec = staticmethod(_small_files)

    def test_a_call_recovered_after_a_failed_commit_is_queued_then_runs_attempt_2(self):
        def answer(activity, params, meta):
            return NoAnswer if meta["attempt"] == 1 else {"attempt": meta["attempt"]}
        worker = self.start_worker(["big"], answer)
        watch = self.watch_calls("ev-full")
        call_id = self.submit("ev-full", {"_tool": "big", "_outputPath": DAGGER + "out.x",
                                          "_retry": {"max_attempts": 1}})
        self.told(watch, call_id, "queued", 0)
        self.assertEqual(self.told(watch, call_id, "running", 1), self.client.status(call_id))
        #  A result of 900 KB: its commit fails, and its events with it
        worker.send_result(call_id + ".1", ["x" * 300000] * 3)
        queued = self.told(watch, call_id, "queued", 1)
        self.assertNotIn("waiting_on", queued)
        running = self.told(watch, call_id, "running", 2)
        ended = self.told(watch, call_id, "ok", 2)
        self.assertEqual(ended, self.client.status(call_id))
        self.assertEqual(ended["outcome"]["result"], {"attempt": 2})
        self.assertIn("store commit failed", self.actd.log())
        ended.pop("outcome")
        self.assertEqual(queued, dict(ended, state="queued", attempts=1))
        self.assertEqual(running, dict(ended, state="running"))
        self.no_more(watch)


class WatchLimitTest(WatchCase):

    config = "server\n    max_watches = 2\n"

    def test_max_watches_then_busy_and_a_gone_watcher_is_dropped(self):
        gone = Client(self.actd.client_endpoint)
        a = gone.send("WATCH", "lim", "0")
        b = gone.send("WATCH", "lim", "0")
        self.assertEqual(gone.request("PING"), ["PONG"])
        refused = self.watcher.request("WATCH", "lim", "0")
        self.assertEqual(refused[:2], ["ERROR", "busy"], refused)
        gone.close()
        #  The next event that cannot be routed to the closed socket ends
        #  its watches, and there is room again. An event sent before actd
        #  has seen the disconnect still goes (into the dying connection),
        #  so each round appends again.

        def room():
            self.append("lim", text(1))
            rid = self.watcher.send("WATCH", "lim", "0")
            try:
                reply = self.watcher.wait(rid, "ERROR", timeout=0.3)
                return None if reply[1] == "busy" else reply
            except TimeoutError:
                return rid
        rid = wait_for(room, "a watch to be allowed again", 20)
        seq = self.append("lim", text(2))
        self.assertEqual(self.events(rid, 1)[0]["seq"], seq)
        del a, b


class ContextsTest(WatchCase):
    """CONTEXTS lists stored contexts in byte order of their ids, after the
    given id, whose id starts with the prefix; next when more remain."""

    def test_paging_over_2500_contexts_with_a_prefix(self):
        names = ["page/%04d" % i for i in range(2500)] + ["other/%02d" % i for i in range(30)]
        for start in range(0, len(names), 500):
            rids = [self.client.send("APPEND", name, json.dumps(text(1)))
                    for name in names[start:start + 500]]
            for rid in rids:
                self.assertEqual(self.client.wait(rid, timeout=30)[0], "OK")
        #  A pending call in one of them
        self.client.call("page/0007", {"_tool": "nobody", "_outputPath": DAGGER + "x.y"},
                         wait_done=False)
        seen, after, pages = [], "", 0
        while True:
            page = self.client.value("CONTEXTS", "page/", after, "1000")
            pages += 1
            seen += page["contexts"]
            if "next" not in page:
                break
            after = page["next"]
            self.assertEqual(after, page["contexts"][-1]["context"])
        self.assertEqual(pages, 3)
        self.assertEqual([c["context"] for c in seen], sorted(n for n in names if n.startswith("page/")))
        first = seen[0]
        self.assertEqual((first["messages"], first["last_seq"], first["pending"]), (1, 1, 0))
        self.assertRegex(first["updated"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertEqual([c["pending"] for c in seen if c["context"] == "page/0007"], [1])
        everything = self.client.value("CONTEXTS")
        self.assertEqual(len(everything["contexts"]), 100)     # the default limit
        self.assertEqual(everything["contexts"][0]["context"], "other/00")
        self.assertEqual(self.client.request("CONTEXTS", "", "", "0")[:2], ["ERROR", "bad_argument"])
        self.assertEqual(self.client.request("CONTEXTS", "bad prefix!")[:2],
                         ["ERROR", "bad_argument"])


class DeleteTest(WatchCase):

    def test_delete_cancels_running_and_waiting_calls_then_the_id_starts_afresh(self):
        holder = Worker(self.actd.worker_endpoint, ["held"], lambda a, p, m: NoAnswer, name="h")
        holder.start()
        try:
            self.append("del", text(1))
            watch = self.watcher.send("WATCH", "del", "0")
            running = self.client.send("CALL", "del", {"_tool": "held",
                                                       "_outputPath": DAGGER + "a.x"})
            running_id = self.client.wait(running)[1]
            wait_for(lambda: holder.tasks, "the task to reach the worker", 20)
            waiting = self.client.send("CALL", "del", {"_tool": "held", "_outputPath": DAGGER + "b.x",
                                                       "v": DAGGER + "a.x"})
            waiting_id = self.client.wait(waiting)[1]
            self.assertEqual(self.client.status(waiting_id)["state"], "waiting")
            reply = self.client.request("DELETE", "del")
            self.assertEqual(reply[0], "OK", reply)
            self.assertEqual(json.loads(reply[1]), {"messages": 1, "cancelled": 2})
            for rid, call_id in ((running, running_id), (waiting, waiting_id)):
                done = json.loads(self.client.wait(rid, "DONE", timeout=20)[2])
                self.assertEqual((done["call_id"], done["status"]), (call_id, "cancelled"))
            self.assertEqual(self.events(watch, 1), [{"deleted": True}])
            self.no_more(watch)
            for call_id in (running_id, waiting_id):
                self.assertEqual(self.client.request("STATUS", call_id)[:2], ["ERROR", "not_found"])
            self.assertEqual(self.client.request("HISTORY", "del", "1", "10")[:2],
                             ["ERROR", "not_found"])
            self.assertEqual(self.client.request("DELETE", "del")[:2], ["ERROR", "not_found"])
            self.assertNotIn("del", [c["context"] for c in self.client.value("CONTEXTS")["contexts"]])
            #  The same id again: a new, empty context
            self.assertEqual(self.append("del", text(2)), 1)
            self.assertEqual([m["data"] for m in self.client.value("HISTORY", "del", "1", "10")],
                             [{"n": 2}])
            stats = self.client.value("STATS")
            self.assertEqual(stats["deleted"], 1)
        finally:
            holder.stop()

    def test_a_repeated_id_of_a_deleted_context_is_forgotten(self):
        call = {"_tool": "nobody", "_id": "once", "_outputPath": DAGGER + "x.y"}
        first, _ = self.client.call("forget", call, wait_done=False)
        self.assertEqual(self.client.request("DELETE", "forget")[0], "OK")
        second, _ = self.client.call("forget", call, wait_done=False)
        self.assertNotEqual(first, second)


class WatchReconnectTest(WatchCase):
    """A watch ends with the socket that opened it (PROTOCOL.md 1.1), also
    when a client comes back with the same fixed routing id (as
    docs/protocol.md 2.3 advises, for DONE across restarts) before any
    event could fail to reach the old socket: each past life's watch
    stayed, every event came once per life, and dead watches filled
    max_watches for every client."""

    config = "server\n    max_watches = 4\n"

    def dealer(self, identity):
        socket = zmq.Context.instance().socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.ROUTING_ID, identity)
        socket.connect(self.actd.client_endpoint)
        return socket

    def watch(self, socket, tag, context):
        socket.send_multipart([b"ACTC01", b"WATCH", tag, context.encode(), b"0"])
        socket.send_multipart([b"ACTC01", b"PING", b"p-" + tag])
        self.assertTrue(socket.poll(10000), "no PONG")
        self.assertEqual(socket.recv_multipart(), [b"ACTC01", b"PONG", b"p-" + tag])

    def test_a_client_back_with_its_routing_id_has_only_its_new_watch(self):
        for life in range(6):
            socket = self.dealer(b"agent-7")
            tag = b"w%d" % life
            self.watch(socket, tag, "lives")
            seq = self.append("lives", text(life))
            tags = []
            while socket.poll(300):
                frames = socket.recv_multipart()
                self.assertEqual(json.loads(frames[3])["seq"], seq, frames)
                tags.append(frames[2])
            self.assertEqual(tags, [tag], "life %d" % life)
            socket.close(0)             # gone without UNWATCH
            #  Until libzmq has seen the connection closed, the routing id
            #  is taken and a new connection with it refused
            time.sleep(0.3)
        #  Six lives through max_watches = 4: the slots were given back
        rid = self.client.send("WATCH", "another", "0")
        with self.assertRaises(TimeoutError):
            self.client.wait(rid, timeout=1.0)

    def test_a_closed_watchers_slot_comes_back_without_an_event(self):
        sockets = [self.dealer(b"gone-%d" % n) for n in range(4)]
        for socket in sockets:
            self.watch(socket, b"w", "quiet")
        rid = self.client.send("WATCH", "quiet-2", "0")
        self.assertEqual(self.client.wait(rid, timeout=10)[:2], ["ERROR", "busy"])
        for socket in sockets:
            socket.close(0)
        #  No event comes to show the sockets gone: their connections'
        #  end is seen within about a second
        def watch_taken():
            rid = self.client.send("WATCH", "quiet-2", "0")
            try:
                reply = self.client.wait(rid, timeout=0.5)
            except TimeoutError:
                return True
            self.assertEqual(reply[:2], ["ERROR", "busy"])
            return False
        wait_for(watch_taken, "a watch slot given back by a closed socket", 10)


class AppendKeyTest(WatchCase):

    def test_the_same_key_twice_appends_once(self):
        one = self.client.request("APPEND", "keys", text(1), "k-1")
        again = self.client.request("APPEND", "keys", text(99), "k-1")
        self.assertEqual(one, ["OK", '{"seq":1}'])
        self.assertEqual(again, ["OK", '{"seq":1}'])
        other = self.client.request("APPEND", "keys", text(2), "k-2")
        self.assertEqual(other, ["OK", '{"seq":2}'])
        self.assertEqual(self.client.request("APPEND", "keys-2", text(1), "k-1"),
                         ["OK", '{"seq":1}'])       # another context: its own keys
        self.assertEqual([m["data"]["n"] for m in self.client.value("HISTORY", "keys", "1", "10")],
                         [1, 2])
        self.assertEqual(self.client.request("APPEND", "keys", text(3), "x" * 129)[:2],
                         ["ERROR", "bad_argument"])

    def test_a_retry_after_a_kill_does_not_double_it(self):
        self.assertEqual(self.client.request("APPEND", "crash", text(1), "retry-1")[0], "OK")
        self.client.close()
        self.actd.kill()
        self.actd.start()
        self.client = self.actd.client()
        self.assertEqual(self.client.request("APPEND", "crash", text(1), "retry-1"),
                         ["OK", '{"seq":1}'])
        self.assertEqual(len(self.client.value("HISTORY", "crash", "1", "10")), 1)


class RetentionTest(WatchCase):

    config = "store\n    retain_ms = 1500\n"

    def test_idle_contexts_are_deleted_busy_ones_kept(self):
        self.append("idle", text(1))
        self.append("kept", text(1))
        self.client.call("kept", {"_tool": "nobody", "_outputPath": DAGGER + "x.y"},
                         wait_done=False)
        wait_for(lambda: self.client.request("HISTORY", "idle", "1", "1")[0] == "ERROR",
                 "the idle context to be deleted", 30)
        self.assertEqual(self.client.value("HISTORY", "kept", "1", "1")[0]["data"], {"n": 1})
        self.assertGreaterEqual(self.client.value("STATS")["deleted"], 1)


class CrashTest(WatchCase):
    """Events and deletions survive a kill -9 the way replies do: nothing
    is reported that the store does not hold, and a DELETE is whole or not
    at all."""

    def restart(self):
        self.client.close()
        self.watcher.close()
        self.actd.kill()
        self.actd.start()
        self.client = self.actd.client()
        self.watcher = Client(self.actd.client_endpoint)

    def test_an_event_or_ok_always_has_its_message_after_a_kill(self):
        rng = random.Random(int(os.environ.get("ACTD_CRASH_SEED", "17")))
        for round_ in range(5):
            context = "crash-%d" % round_
            watch = self.watcher.send("WATCH", context, "1")
            rids = [self.client.send("APPEND", context, json.dumps(text(n)))
                    for n in range(200)]
            #  Kill at a random moment among the replies
            acked = set()
            for rid in rids[:rng.randrange(1, 150)]:
                reply = self.client.wait(rid, timeout=20)
                self.assertEqual(reply[0], "OK", reply)
                acked.add(json.loads(reply[1])["seq"])
            self.actd.kill()
            seen = {}
            while True:
                try:
                    event = json.loads(self.watcher.wait(watch, "EVENT", timeout=0.2)[1])
                except TimeoutError:
                    break
                seen[event["seq"]] = event["message"]
            self.actd.start()
            self.client.close()
            self.client = self.actd.client()
            self.watcher.close()
            self.watcher = Client(self.actd.client_endpoint)
            stored = {m["_seq"]: m for m in self.client.value("HISTORY", context, "1", "1000")}
            self.assertTrue(acked <= set(stored), sorted(acked - set(stored)))
            for seq, message in seen.items():
                self.assertEqual(stored.get(seq), message, "event %d without its message" % seq)
            self.assertEqual(sorted(stored), list(range(1, len(stored) + 1)))

    def test_a_kill_during_delete_leaves_the_context_whole_or_gone(self):
        rng = random.Random(int(os.environ.get("ACTD_CRASH_SEED", "17")))
        for round_ in range(6):
            context = "gone-%d" % round_
            for n in range(1, 51):
                self.client.send("APPEND", context, json.dumps(text(n)))
            call_id, _ = self.client.call(context, {"_tool": "nobody",
                                                    "_outputPath": DAGGER + "x.y"},
                                          wait_done=False)
            self.assertEqual(len(self.client.value("HISTORY", context, "1", "1000")), 50)
            self.client.send("DELETE", context)
            time.sleep(rng.random() * 0.05)
            self.restart()
            reply = self.client.request("HISTORY", context, "1", "1000")
            status = self.client.request("STATUS", call_id)
            listed = [c["context"] for c in self.client.value("CONTEXTS", "gone-")["contexts"]]
            if reply[0] == "VALUE":         # whole: every message and the call
                self.assertEqual(len(json.loads(reply[1])), 50)
                self.assertEqual(status[0], "VALUE", status)
                self.assertNotEqual(json.loads(status[1])["state"], "cancelled")
                self.assertIn(context, listed)
            else:                           # gone: no message, no call
                self.assertEqual(reply[:2], ["ERROR", "not_found"])
                self.assertEqual(status[:2], ["ERROR", "not_found"])
                self.assertNotIn(context, listed)


if __name__ == "__main__":
    unittest.main()
