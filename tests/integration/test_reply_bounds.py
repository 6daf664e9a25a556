"""Replies bounded by max_reply_bytes (PROTOCOL.md section 1: no reply but
VIEW and RESOLVE may pass it plus one stored value): CONTEXTS pages stop
early and give next, STATS lists what fits and counts the rest, a PLAN
whose ACCEPTED would pass the bound and a TOOLS over it are too_large; the
activities with no worker and no call (nobody served them, or their
workers all left) are kept at most 1,024; and of those nobody served with
calls, at most server/max_unserved_activities (1,024) at once.

Apart from test_broker_reads and test_broker_errors, which also run under
valgrind (tests/valgrind/run.sh): these build large PLANs and many
activities, which memcheck would take minutes over, and what they check
is counting, which AddressSanitizer's run covers."""

import json
import os
import subprocess
import unittest

import zmq

from harness import DAGGER, find_binary, wait_for
from test_broker import BrokerCase, enc, standard
from test_tools import ToolWorker


class BoundedCase(BrokerCase):
    """A broker with a small max_reply_bytes; value() checks each reply
    against it, as sent."""

    standard = False
    max_reply_bytes = 1024

    @property
    def config(self):
        return "server\n    max_reply_bytes = %d\n" % self.max_reply_bytes

    def value(self, *args):
        reply = self.client.request(*args)
        self.assertEqual(reply[0], "VALUE", reply)
        self.assertLessEqual(len(reply[1].encode()), self.max_reply_bytes, reply[1][:200])
        return json.loads(reply[1])

    def actctl(self, *args):
        """actctl's output for args, against this broker."""
        return subprocess.run([find_binary("actctl"), "--endpoint", self.actd.client_endpoint]
                              + list(args), capture_output=True, timeout=60, check=True,
                              text=True).stdout


class ContextsPageTest(BoundedCase):
    """PROTOCOL 1 and 1.1: a CONTEXTS page stops early, as a HISTORY page
    does, after one context at least, once its reply would pass
    max_reply_bytes; its next is the after of the page that continues it."""

    def test_contexts_pages_stop_at_max_reply_bytes_and_next_lists_every_context_once(self):
        ids = ["c%03d-%s" % (n, "z" * 100) for n in range(40)]
        for context in reversed(ids):
            self.append(context, {"type": "text", "text": "hi"})
        #  40 entries of 200 bytes and more: 1000 asked, a few fit in 1024
        page = self.value("CONTEXTS", "", "", "1000")
        self.assertGreaterEqual(len(page["contexts"]), 1)
        self.assertLess(len(page["contexts"]), 10)
        self.assertEqual(page["next"], page["contexts"][-1]["context"])
        self.assertEqual(page["contexts"][0], {"context": ids[0], "messages": 1, "last_seq": 1,
                                               "updated": page["contexts"][0]["updated"],
                                               "pending": 0})
        listed, after, pages = [], "", 0
        while after is not None:
            page = self.value("CONTEXTS", "", after, "1000")
            self.assertGreaterEqual(len(page["contexts"]), 1)
            listed += [entry["context"] for entry in page["contexts"]]
            after = page.get("next")
            pages += 1
        self.assertEqual(listed, ids)               # each once, in byte order
        self.assertGreater(pages, 4)
        #  limit still holds below the bound; a prefix pages the same way
        page = self.value("CONTEXTS", "", "", "2")
        self.assertEqual(([entry["context"] for entry in page["contexts"]], page["next"]),
                         (ids[:2], ids[1]))
        listed, after = [], ""
        while after is not None:
            page = self.value("CONTEXTS", "c01", after, "1000")
            listed += [entry["context"] for entry in page["contexts"]]
            after = page.get("next")
        self.assertEqual(listed, ids[10:20])
        #  actctl contexts follows next to the end
        lines = self.actctl("contexts", "--json").splitlines()
        self.assertEqual([json.loads(line)["context"] for line in lines], ids)


class StatsBoundTest(BoundedCase):
    """PROTOCOL 1 and 4: STATS stays within max_reply_bytes however many
    activities calls name: it lists the workers, then the activities in
    use, then the others, as many as fit, and counts those left out."""

    max_reply_bytes = 16384

    def test_stats_stays_within_max_reply_bytes_and_counts_the_activities_left_out(self):
        self.start_worker(["echo"], standard, "w1")
        self.assertEqual(self.call("s", {"_tool": "echo", "_outputPath": "†s.e"})[1]
                         ["status"], "ok")
        names = ["idle-%03d" % n for n in range(200)]
        reply = self.client.request("PLAN", "flood", enc([{"_tool": name} for name in names]))
        self.assertEqual(reply[0], "ACCEPTED", reply)
        stats = self.value("STATS")
        self.assertEqual([worker["name"] for worker in stats["workers"]], ["w1"])
        self.assertNotIn("workers_left_out", stats)
        self.assertGreater(stats["activities_left_out"], 0)
        self.assertGreater(len(stats["activities"]), 0)
        self.assertEqual(len(stats["activities"]) + stats["activities_left_out"], 201)
        self.assertLessEqual(set(stats["activities"]), set(names) | {"echo"})
        #  Their calls ended, the 200 are idle: the activity a worker
        #  serves comes before them
        self.assertEqual(self.client.request("DELETE", "flood"),
                         ["OK", '{"messages":0,"cancelled":200}'])
        stats = self.value("STATS")
        self.assertEqual(len(stats["activities"]) + stats["activities_left_out"], 201)
        self.assertEqual(stats["activities"]["echo"]["done"], 1)
        for name, activity in stats["activities"].items():
            if name != "echo":
                self.assertEqual((activity["done"], activity["outcomes"]["cancelled"]), (1, 1))
        self.assertEqual(stats["calls"]["cancelled"], 200)
        self.assertIn("not listed (over max_reply_bytes): %d activities, 0 workers"
                      % stats["activities_left_out"], self.actctl("stats"))


class IdleActivitiesTest(BrokerCase):
    """Of the activities no worker has served whose calls have all ended,
    at most 1024 are kept, the one idle the longest forgotten: calls may
    name any number of activities, and each was kept, with its counts,
    until actd stopped (docs/protocol.md section 6). The 1100 have calls
    at once first: past max_unserved_activities' default."""

    standard = False
    config = "server\n    max_unserved_activities = 1100\n"

    def test_activities_nobody_serves_are_kept_at_most_1024_once_idle(self):
        self.start_worker(["echo"], standard, "w1")
        self.assertEqual(self.call("s", {"_tool": "echo", "_outputPath": "†s.e"})[1]
                         ["status"], "ok")
        names = ["gone-%04d" % n for n in range(1100)]
        reply = self.client.request("PLAN", "flood", enc([{"_tool": name} for name in names]),
                                    timeout=60)
        self.assertEqual(reply[0], "ACCEPTED", reply)
        self.assertEqual(len(self.stats()["activities"]), 1101)    # in use: all kept
        self.assertEqual(self.client.request("DELETE", "flood", timeout=60),
                         ["OK", '{"messages":0,"cancelled":1100}'])
        stats = self.stats()
        self.assertNotIn("activities_left_out", stats)
        idle = [name for name in stats["activities"] if name.startswith("gone-")]
        self.assertEqual(len(idle), 1024)
        self.assertEqual(stats["activities"]["echo"]["done"], 1)   # a worker served it
        #  A call naming one forgotten makes it anew
        forgotten = sorted(set(names) - set(idle))[0]
        self.submit("again", {"_tool": forgotten})
        activity = self.stats()["activities"][forgotten]
        self.assertEqual((activity["queued"], activity["done"]), (1, 0))


class UnservedActivitiesTest(BrokerCase):
    """Of the activities no worker serves or has served and the config
    does not name, at most server/max_unserved_activities (default 1024)
    have calls at once: a call naming one more is busy (logged), and STATS
    lists no more of them. A call to such an activity waits up to
    schedule_timeout_ms, and an activity with a call is not idle: calls to
    20,000 names made 20,000 entries, a /metrics of 66 MB and a STATS that
    held actd's loop 0.8 s (from an audit of the logs and metrics)."""

    standard = False
    config = "activities\n    named\n        max_queue = 5\n"

    def unserved(self):
        return self.client.value("STATS")["unserved"]

    def test_a_call_to_one_more_activity_nobody_serves_is_busy_and_stats_stay_bounded(self):
        names = ["unserved-%04d" % n for n in range(1024)]
        reply = self.client.request("PLAN", "flood", enc([{"_tool": name} for name in names]),
                                    timeout=60)
        self.assertEqual(reply[0], "ACCEPTED", reply)
        #  One more is busy, the message naming the setting; in a PLAN, the
        #  PLAN is refused whole
        reply = self.client.request("CALL", "more", enc({"_tool": "unserved-new"}))
        self.assertEqual(reply[:2], ["ERROR", "busy"], reply)
        self.assertIn("activity unserved-new: no worker serves or has served it", reply[2])
        self.assertIn("1024 such activities have calls already (max_unserved_activities)",
                      reply[2])
        self.assertEqual(self.unserved(), {"activities": 1024, "max": 1024, "refused": 1})
        self.start_worker(["echo"], standard, "w1")
        reply = self.client.request("PLAN", "more", enc([{"_tool": names[0]},
                                                         {"_tool": "unserved-new"}]))
        self.assertEqual(reply[:2], ["ERROR", "busy"], reply)
        self.assertTrue(reply[2].startswith("call 1: activity unserved-new"), reply)
        #  Those with calls take more; one served, or named by the config,
        #  any
        self.submit("more", {"_tool": names[0]})
        self.submit("more", {"_tool": "named"})
        self.assertEqual(self.call("more", {"_tool": "echo", "_outputPath": "†s.e"})[1]
                         ["status"], "ok")
        #  A flood of new names: each busy, none listed
        sent = [self.client.send("CALL", "more", enc({"_tool": "flood-%04d" % n}))
                for n in range(2000)]
        for rid in sent:
            self.assertEqual(self.client.wait(rid, timeout=60)[:2], ["ERROR", "busy"])
        stats = self.client.value("STATS")
        self.assertEqual(stats["unserved"], {"activities": 1024, "max": 1024, "refused": 2002})
        self.assertNotIn("activities_left_out", stats)
        self.assertEqual(set(stats["activities"]), set(names) | {"echo", "named"})
        self.assertEqual(stats["calls"]["queued"], 1024 + 2)
        self.assertIn("request CALL refused: busy: max_unserved_activities reached: activity unserved-new", self.actd.log())
        #  A worker that serves one makes room: it is served now
        self.start_worker([names[1]], standard, "w2")
        self.assertEqual(self.unserved()["activities"], 1023)
        self.submit("more", {"_tool": "unserved-new"})
        self.assertEqual(self.unserved()["activities"], 1024)
        #  Calls that end make room: those with none left are not counted
        self.assertEqual(self.client.request("DELETE", "flood", timeout=60)[0], "OK")
        self.assertEqual(self.unserved()["activities"], 2)     # names[0], unserved-new


class ServedActivitiesTest(BrokerCase):
    """An activity whose last worker left, with no call queued, waiting or
    running, is idle as one nobody served is: at most 1024 are kept, with
    their tools. Workers that each READY a new name and leave grew actd
    for good (from the resource-growth audit: 8,000 such workers took it
    from 16 MB to 61 MB). One a worker serves, or with a call queued, is
    kept however many come and go."""

    standard = False
    churn = 2000            # short-lived workers, each with a new activity
    batch = 200             # connected at once

    def ready(self, context, name, tools=None):
        """A raw ACT/1 worker that sent READY for activity name."""
        socket = context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 2000)
        socket.connect(self.actd.worker_endpoint)
        body = {"activities": [name], "capacity": 1, "name": name}
        if tools:
            body["tools"] = tools
        socket.send_multipart([b"ACTW01", b"READY", json.dumps(body).encode()])
        return socket

    def leave(self, sockets):
        """Each worker of sockets, once actd has its READY (it sent the
        worker a HEARTBEAT, or a DISCONNECT when the batch was slow to
        register and the worker judged silent), sends DISCONNECT and
        closes."""
        for socket in sockets:
            self.assertTrue(socket.poll(20000), "no word from actd after READY")
            socket.recv_multipart()
            socket.send_multipart([b"ACTW01", b"DISCONNECT"])
            socket.close()

    def workers(self):
        return [w["name"] for w in self.stats()["workers"]]

    def test_activities_whose_workers_left_are_kept_at_most_1024(self):
        context = zmq.Context.instance()
        self.start_worker(["keep-live"], standard, "live")
        self.leave([self.ready(context, "keep-queued")])
        wait_for(lambda: self.workers() == ["live"], "keep-queued's worker to leave", 20.0)
        self.submit("q", {"_tool": "keep-queued"})
        names = ["churn-%04d" % n for n in range(self.churn)]
        #  The first has a call done, and leaves
        first = self.start_worker([names[0]], lambda *_: "r", "first")
        self.assertEqual(self.call("f", {"_tool": names[0], "_outputPath": "†f.r"})[1]
                         ["status"], "ok")
        self.assertEqual(self.stats()["activities"][names[0]]["done"], 1)
        first.stop()
        wait_for(lambda: self.workers() == ["live"], "the first to leave", 20.0)
        #  Batch after batch (within one, they leave in any order)
        for start in range(1, self.churn, self.batch):
            self.leave([self.ready(context, name, {name: {"description": "d"}})
                        for name in names[start:start + self.batch]])
            wait_for(lambda: self.workers() == ["live"], "a batch to leave", 20.0)
        stats = self.stats()
        self.assertNotIn("activities_left_out", stats)
        activities = stats["activities"]
        self.assertEqual(len(activities), 1024 + 2)
        kept = {name for name in activities if name.startswith("churn-")}
        self.assertLessEqual(kept, set(names[-1024 - self.batch:]))
        self.assertLessEqual(set(names[-1024 + self.batch:]), kept)
        self.assertEqual((activities["keep-live"]["workers"], activities["keep-queued"]
                          ["queued"]), (1, 1))
        tools = self.client.value("TOOLS")
        self.assertEqual(set(tools), {"keep-live", "keep-queued"} | kept)
        self.assertEqual(tools[names[-1]], {"description": "d", "workers": 0})
        #  One forgotten comes back with fresh counts and no tool
        socket = self.ready(context, names[0])
        wait_for(lambda: names[0] in self.client.value("TOOLS"), "it to come back", 20.0)
        self.assertEqual(self.client.value("TOOLS", names[0]), {names[0]: {"workers": 1}})
        self.assertEqual(self.stats()["activities"][names[0]]["done"], 0)
        self.leave([socket])


class TaskParamsBoundTest(BrokerCase):
    """A call of a few KB that repeats a reference to a large value made a
    TASK of any size, built on actd's loop (an audit: 737 MB of
    parameters from a 10 KB call, the loop stalled 4 s). The parameters,
    references resolved, stay within server/max_worker_bytes: past it the
    call ends error too_large, and nothing is sent."""

    config = "server\n    max_worker_bytes = 1048576\n"

    def test_a_reference_repeated_past_the_bound_ends_the_call_too_large(self):
        big = "b" * 200000
        reply = self.client.request("APPEND", "amp", json.dumps(
            {"type": "data", "kind": "big", "data": big}))
        self.assertEqual(reply[0], "OK", reply)
        _, done = self.call("amp", {"_tool": "echo", "_outputPath": DAGGER + "small",
                                    "x": [DAGGER + "big"] * 4})
        self.assertEqual(done["status"], "ok", str(done)[:300])
        self.assertEqual(done["result"]["x"], [big] * 4)
        for params in ({"x": [DAGGER + "big"] * 40},
                       {"x": [DAGGER + "big"] * 40, "n": 1.5e300}):     #  the tree's way
            #  A worker that answers small: before, the call was ok
            call = dict(params, _tool="value", value=1, _outputPath=DAGGER + "large")
            _, done = self.call("amp", call)
            self.assertEqual(done["status"], "error", str(done)[:300])
            self.assertEqual(done["error"]["code"], "too_large", done["error"])
            self.assertIn("over 1048576 bytes", done["error"]["message"])
        self.assertEqual(self.client.request("PING"), ["PONG"])


def rss_kb(pid):
    """The VmRSS of process pid, in kB."""
    with open("/proc/%d/status" % pid) as handle:
        return int(next(line for line in handle if line.startswith("VmRSS:")).split()[1])


class PlanFanInTest(BrokerCase):
    """A PLAN whose every call reads what all the earlier ones write: each
    call waited for every earlier one, a waiter record each, n^2/2 in all
    (an audit: 8,000 calls, 1.5 GB and 6 s of actd's loop). It waits for
    the newest alone now; measured in actd's memory, not in time."""

    standard = False

    def test_a_dense_fan_in_keeps_one_waiter_a_call(self):
        #  Memory freed is not held back (AddressSanitizer's quarantine):
        #  what stays is what actd keeps
        self.client.close()
        self.assertEqual(self.actd.stop(), 0, self.actd.log())
        asan = os.environ.get("ASAN_OPTIONS", "detect_leaks=1")
        self.actd.env = {"ASAN_OPTIONS": asan + ":quarantine_size_mb=0"}
        self.actd.start()
        self.client = self.actd.client()
        self.addCleanup(self.client.close)
        calls = [{"_tool": "later", "_outputPath": DAGGER + "s"}] + \
                [{"_tool": "later", "_outputPath": DAGGER + "s", "x": DAGGER + "s"}] * 2999
        before = rss_kb(self.actd.process.pid)
        reply = self.client.request("PLAN", "fan", json.dumps(calls), timeout=120)
        self.assertEqual(reply[0], "ACCEPTED", reply[:2])
        grown = rss_kb(self.actd.process.pid) - before
        #  4.5 million waiter records took hundreds of MB (more under ASan)
        self.assertLess(grown, 100 * 1024, "actd grew %d kB for a PLAN of 3,000 calls" % grown)
        #  And they run in order once a worker comes, each reading the last
        seen = []

        def later(activity, params, meta):
            seen.append(params.get("x"))
            return len(seen)
        self.start_worker(["later"], later, "later")
        status = self.client.wait_status(json.loads(reply[1])[-1], ("ok",), timeout=120)
        self.assertEqual(status["state"], "ok")
        self.assertEqual(seen[:3], [None, 1, 2])
        self.assertEqual(len(seen), 3000)


class ReplyBoundTest(BrokerCase):
    """PROTOCOL 1: no reply passes max_reply_bytes plus one stored value.
    A reply that cannot be paged, and is no stored value, is refused
    too_large instead, changing nothing."""

    standard = False
    config = "server\n    max_reply_bytes = 2048\n"

    def test_plan_whose_accepted_would_pass_max_reply_bytes_is_too_large(self):
        #  500 ids of 1 to 3 digits: 2,893 bytes of ACCEPTED
        plan = [{"_tool": "p"} for _ in range(500)]
        reply = self.refuse("too_large", "PLAN", "plan", enc(plan), contexts=["plan"])
        self.assertIn("500 calls", reply[2])
        self.assertIn("max_reply_bytes (2048)", reply[2])
        #  One whose ids fit is accepted
        rid = self.client.send("PLAN", "plan", enc(plan[:200]))
        reply = self.client.wait(rid)
        self.assertEqual(reply[0], "ACCEPTED", reply)
        self.assertEqual(len(json.loads(reply[1])), 200)
        self.assertLessEqual(len(reply[1]), 2048)

    def test_tools_over_max_reply_bytes_is_too_large_and_each_entry_can_be_asked(self):
        tools = {"t%02d" % n: {"description": "d" * 200} for n in range(20)}
        self.run_worker(ToolWorker(self.actd.worker_endpoint, sorted(tools), tools,
                                   name="tw"))
        reply = self.client.request("TOOLS")
        self.expect_error(reply, "too_large")
        self.assertIn("ask TOOLS with an activity", reply[2])
        self.assertEqual(self.client.value("TOOLS", "t07"),
                         {"t07": {"description": "d" * 200, "workers": 1}})


# ---------------------------------------------------------------------------
#  Robustness: messages that cannot be answered; garbage


if __name__ == "__main__":
    unittest.main()
