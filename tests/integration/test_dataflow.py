"""Dataflow: dependencies between calls, plans, fallback and gate
expressions (SEMANTICS.md sections 5 and 7, PROTOCOL.md section 1).

The producers in these tests are held by a worker until the test answers
them, so the calls that read their outputs are submitted while the
producers are still running, and every step is observed in a known state.
"""

import json
import re
import time
import unittest

from harness import Actd, Absent, NoAnswer, Worker

TIMEOUT = 30.0                  # generous: a shared machine under ASan
DATE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


class HeldWorker(Worker):
    """A worker that holds every task it receives until the test answers it
    with answer() (from the test's thread; the worker's own thread sends the
    RESULT, since a ZeroMQ socket belongs to one thread). Activities listed
    in auto are answered at once with auto[activity](params, meta). tools,
    when given, is declared in READY (PROTOCOL 2.1)."""

    def __init__(self, actd, activities, capacity=8, auto=None, tools=None):
        super().__init__(actd.worker_endpoint, activities, self._handle, capacity=capacity,
                         poll_ms=10)
        self.auto = auto or {}
        self.tools = tools

    def _ready(self, socket):
        body = {"activities": self.activities, "capacity": self.capacity, "name": self.name,
                "lang": "python-test"}
        if self.tools:
            body["tools"] = self.tools
        socket.send_multipart([b"ACTW01", b"READY", json.dumps(body).encode()])
        self.ready.set()

    def _handle(self, activity, params, meta):
        if activity in self.auto:
            return self.auto[activity](params, meta)
        return NoAnswer

    def task(self, call_id, timeout=TIMEOUT):
        """The (task_id, activity, params, meta) of call_id's first
        dispatch, once it has arrived."""
        deadline = time.time() + timeout
        while True:
            for task in list(self.tasks):
                if task[3]["call_id"] == call_id:
                    return task
            if time.time() > deadline:
                raise TimeoutError("call %s was not dispatched; tasks: %s" % (call_id, self.tasks))
            time.sleep(0.01)

    def answer(self, call_id, value, branch=None):
        """RESULT for call_id's task (which must have arrived)."""
        self.send_result(self.task(call_id)[0], value, branch)

    def call_ids(self):
        return [task[3]["call_id"] for task in list(self.tasks)]


def ok(call_id, written, seqs, result, branch=0, attempts=1):
    """The DONE outcome of a call that ended ok (PROTOCOL.md section 1)."""
    return {"call_id": call_id, "status": "ok", "branch": branch, "written": written,
            "seqs": seqs, "result": result, "attempts": attempts}


class DataflowTest(unittest.TestCase):

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
        for worker in self.workers:
            self.assertEqual(worker.disconnects, 0, "a worker was disconnected")

    # ---- helpers ----------------------------------------------------------

    def held_worker(self, activities=("step",), capacity=8, auto=None, tools=None):
        worker = HeldWorker(self.actd, activities, capacity=capacity, auto=auto, tools=tools)
        worker.start()
        worker.ready.wait(5)
        self.workers.append(worker)
        self.wait_workers(activities[0], 1)
        return worker

    def fast_worker(self, activities, handler, capacity=1):
        worker = Worker(self.actd.worker_endpoint, activities, handler, capacity=capacity)
        worker.start()
        worker.ready.wait(5)
        self.workers.append(worker)
        self.wait_workers(activities[0], 1)
        return worker

    def wait_workers(self, activity, count):
        """Poll STATS until activity has count workers (READY was read)."""
        deadline = time.time() + TIMEOUT
        while True:
            stats = self.stats()
            if stats["activities"].get(activity, {}).get("workers") == count:
                return
            if time.time() > deadline:
                raise TimeoutError("no worker for %s: %s" % (activity, stats))
            time.sleep(0.02)

    def stats(self):
        return self.client.value("STATS")

    def submit(self, context, call):
        """CALL; returns (request id, call id) once ACCEPTED."""
        rid = self.client.send("CALL", context, call)
        reply = self.client.wait(rid, timeout=TIMEOUT)
        self.assertEqual(reply[0], "ACCEPTED", reply)
        return rid, reply[1]

    def plan(self, context, calls):
        """PLAN; returns (request id, call ids) once ACCEPTED."""
        rid = self.client.send("PLAN", context, calls)
        reply = self.client.wait(rid, timeout=TIMEOUT)
        self.assertEqual(reply[0], "ACCEPTED", reply)
        ids = json.loads(reply[1])
        self.assertEqual(len(ids), len(calls))
        return rid, ids

    def refused(self, command, context, body):
        """The ERROR reply (code, message) to a CALL or PLAN."""
        reply = self.client.request(command, context, body, timeout=TIMEOUT)
        self.assertEqual(reply[0], "ERROR", reply)
        return reply[1], reply[2]

    def done(self, rid, call_id, timeout=TIMEOUT):
        """The next DONE for request rid, which must be call_id's."""
        frames = self.client.wait(rid, "DONE", timeout=timeout)
        self.assertEqual(frames[1], call_id, frames)
        outcome = json.loads(frames[2])
        self.assertEqual(outcome["call_id"], call_id)
        return outcome

    def append(self, context, message):
        """APPEND; returns the OK reply's JSON."""
        reply = self.client.request("APPEND", context, message, timeout=TIMEOUT)
        self.assertEqual(reply[0], "OK", reply)
        return json.loads(reply[1])

    def history(self, context):
        return self.client.value("HISTORY", context, "1", "1000")

    def message(self, context, seq):
        return self.client.value("HISTORY", context, str(seq), "1")[0]

    def assert_waiting(self, call_id, waiting_on):
        status = self.client.status(call_id)
        self.assertEqual(status["state"], "waiting", status)
        self.assertEqual(status["waiting_on"], waiting_on, status)
        self.assertEqual(status["attempts"], 0, status)

    def assert_no_context(self, context):
        reply = self.client.request("HISTORY", context, "1", "10")
        self.assertEqual(reply[:2], ["ERROR", "not_found"], reply)
        self.assertIs(self.client.resolve(context, "†state"), Absent)

    # ---- 1. chains of separate CALLs --------------------------------------

    def test_chain_of_calls_waits_for_each_producer_in_turn(self):
        """SEMANTICS 7: a call whose reference is absent but can be written
        by an earlier pending call waits for it, then runs with its value."""
        worker = self.held_worker()
        ctx = "chain"
        a = {"_tool": "step", "_outputPath": "†state.a", "x": 1}
        b = {"_tool": "step", "_outputPath": "†state.b", "x": "†state.a"}
        c = {"_tool": "step", "_outputPath": "†state.c", "x": "†state.b"}
        d = {"_tool": "step", "_outputPath": "†state.d", "x": "†state.c"}
        rid_a, id_a = self.submit(ctx, a)
        worker.task(id_a)
        rid_b, id_b = self.submit(ctx, b)
        rid_c, id_c = self.submit(ctx, c)
        rid_d, id_d = self.submit(ctx, d)
        self.assertEqual(self.client.status(id_a)["state"], "running")
        self.assert_waiting(id_b, ["†state.a"])
        self.assert_waiting(id_c, ["†state.b"])
        self.assert_waiting(id_d, ["†state.c"])

        worker.answer(id_a, 10)
        self.assertEqual(self.done(rid_a, id_a), ok(id_a, ["†state.a"], [1], 10))
        self.assertEqual(worker.task(id_b)[1:3], ("step", {"x": 10}))
        self.assertEqual(self.client.status(id_b)["state"], "running")
        self.assert_waiting(id_c, ["†state.b"])
        self.assert_waiting(id_d, ["†state.c"])

        worker.answer(id_b, 11)
        self.assertEqual(self.done(rid_b, id_b), ok(id_b, ["†state.b"], [2], 11))
        self.assertEqual(worker.task(id_c)[1:3], ("step", {"x": 11}))
        self.assert_waiting(id_d, ["†state.c"])

        worker.answer(id_c, 12)
        self.assertEqual(self.done(rid_c, id_c), ok(id_c, ["†state.c"], [3], 12))
        self.assertEqual(worker.task(id_d)[1:3], ("step", {"x": 12}))
        worker.answer(id_d, 13)
        self.assertEqual(self.done(rid_d, id_d), ok(id_d, ["†state.d"], [4], 13))

        self.assertEqual(worker.call_ids(), [id_a, id_b, id_c, id_d])
        self.assertEqual(self.client.resolve(ctx, "†state"), {"a": 10, "b": 11, "c": 12, "d": 13})
        for call_id in (id_a, id_b, id_c, id_d):
            status = self.client.status(call_id)
            self.assertEqual((status["state"], status["attempts"]), ("ok", 1))

    # ---- 2. a diamond PLAN ---------------------------------------------------

    def test_plan_diamond_runs_both_branches_in_parallel_then_the_join(self):
        """A -> B, A -> C, (B, C) -> D in one PLAN: ACCEPTED lists the ids
        in order, B and C are dispatched together, D after both."""
        worker = self.held_worker(capacity=2)
        ctx = "diamond"
        calls = [
            {"_tool": "step", "_outputPath": "†state.a", "name": "A"},
            {"_tool": "step", "_outputPath": "†state.b", "name": "B", "x": "†state.a"},
            {"_tool": "step", "_outputPath": "†state.c", "name": "C", "x": "†state.a"},
            {"_tool": "step", "_outputPath": "†state.d", "name": "D",
             "x": "†state.b", "y": "†state.c"},
        ]
        rid, ids = self.plan(ctx, calls)
        id_a, id_b, id_c, id_d = ids
        self.assertTrue(all(isinstance(i, str) and i.isdigit() for i in ids), ids)
        self.assertEqual(len(set(ids)), 4, ids)
        self.assertEqual(worker.task(id_a)[2], {"name": "A"})
        self.assert_waiting(id_b, ["†state.a"])
        self.assert_waiting(id_c, ["†state.a"])
        self.assert_waiting(id_d, ["†state.b", "†state.c"])

        worker.answer(id_a, "a")
        self.assertEqual(self.done(rid, id_a), ok(id_a, ["†state.a"], [1], "a"))
        # Both branches are dispatched before either answers
        self.assertEqual(worker.task(id_b)[2], {"name": "B", "x": "a"})
        self.assertEqual(worker.task(id_c)[2], {"name": "C", "x": "a"})
        self.assertEqual(self.client.status(id_b)["state"], "running")
        self.assertEqual(self.client.status(id_c)["state"], "running")
        self.assert_waiting(id_d, ["†state.b", "†state.c"])
        self.assertEqual(self.stats()["calls"]["running"], 2)

        worker.answer(id_c, "c")
        self.assertEqual(self.done(rid, id_c), ok(id_c, ["†state.c"], [2], "c"))
        self.assertEqual(self.client.status(id_d)["state"], "waiting")
        worker.answer(id_b, "b")
        self.assertEqual(self.done(rid, id_b), ok(id_b, ["†state.b"], [3], "b"))
        self.assertEqual(worker.task(id_d)[2], {"name": "D", "x": "b", "y": "c"})
        worker.answer(id_d, "d")
        self.assertEqual(self.done(rid, id_d), ok(id_d, ["†state.d"], [4], "d"))

        # Each call's task carried its own id: the ids are in plan order
        names = {task[3]["call_id"]: task[2]["name"] for task in worker.tasks}
        self.assertEqual([names[i] for i in ids], ["A", "B", "C", "D"])
        self.assertEqual(len(worker.tasks), 4)
        self.assertEqual(self.client.resolve(ctx, "†state"), {"a": "a", "b": "b", "c": "c", "d": "d"})
        for seq, call_id in zip((1, 2, 3, 4), (id_a, id_c, id_b, id_d)):
            self.assertEqual(self.message(ctx, seq)["_callId"], call_id)
        with self.assertRaises(TimeoutError):       # one DONE per call, no more
            self.client.wait(rid, "DONE", timeout=0.5)

    def test_waiting_on_lists_only_the_expressions_still_unmet(self):
        """STATUS of a waiting call: waiting_on is the parameter expressions
        still unmet, so one whose producer has written it leaves the list
        while the call goes on waiting for the others."""
        worker = self.held_worker()
        ctx = "waiting-on"
        rid_a, id_a = self.submit(ctx, {"_tool": "step", "_outputPath": "†state.a"})
        rid_b, id_b = self.submit(ctx, {"_tool": "step", "_outputPath": "†state.b"})
        worker.task(id_a)
        worker.task(id_b)
        rid_c, id_c = self.submit(ctx, {"_tool": "step", "_outputPath": "†state.c",
                                        "x": "†state.a", "y": "†state.b"})
        self.assert_waiting(id_c, ["†state.a", "†state.b"])
        worker.answer(id_a, "a")
        self.assertEqual(self.done(rid_a, id_a), ok(id_a, ["†state.a"], [1], "a"))
        self.assertEqual(self.client.resolve(ctx, "†state.a"), "a")
        self.assert_waiting(id_c, ["†state.b"])
        worker.answer(id_b, "b")
        self.assertEqual(self.done(rid_b, id_b), ok(id_b, ["†state.b"], [2], "b"))
        self.assertEqual(worker.task(id_c)[2], {"x": "a", "y": "b"})
        worker.answer(id_c, "c")
        self.assertEqual(self.done(rid_c, id_c), ok(id_c, ["†state.c"], [3], "c"))

    # ---- 3. branches that skip a sub-graph ---------------------------------

    def test_branch_not_taken_skips_its_readers_and_their_readers(self):
        """SEMANTICS 5 and 7: A takes branch 1 (rainy); B reads the branch not
        taken and is skipped (unresolved_reference), C reads B's output and is
        skipped in turn, E reads the branch taken and runs."""
        worker = self.held_worker()
        ctx = "weather"
        a = {"_tool": "step", "_outputPath": "†state.sunny || †state.rainy"}
        b = {"_tool": "step", "_outputPath": "†state.b", "x": "†state.sunny"}
        c = {"_tool": "step", "_outputPath": "†state.c || †state.c_failed", "x": "†state.b"}
        e = {"_tool": "step", "_outputPath": "†state.e", "x": "†state.rainy"}
        rid_a, id_a = self.submit(ctx, a)
        self.assertEqual(worker.task(id_a)[3]["branches"], 2)
        rid_b, id_b = self.submit(ctx, b)
        rid_c, id_c = self.submit(ctx, c)
        rid_e, id_e = self.submit(ctx, e)
        self.assert_waiting(id_b, ["†state.sunny"])
        self.assert_waiting(id_c, ["†state.b"])
        self.assert_waiting(id_e, ["†state.rainy"])

        worker.answer(id_a, "umbrella", branch=1)
        self.assertEqual(self.done(rid_a, id_a), ok(id_a, ["†state.rainy"], [1], "umbrella", branch=1))

        # B: one alternative, so an error message is appended instead
        done_b = self.done(rid_b, id_b)
        self.assertEqual(set(done_b), {"call_id", "status", "written", "seqs", "error", "attempts"})
        self.assertEqual(done_b["status"], "skipped")
        self.assertEqual(done_b["error"]["code"], "unresolved_reference")
        self.assertIsInstance(done_b["error"]["message"], str)
        self.assertEqual((done_b["written"], done_b["attempts"]), ([], 0))
        self.assertEqual(len(done_b["seqs"]), 1, done_b)
        error_b = self.message(ctx, done_b["seqs"][0])
        self.assertEqual(set(error_b), {"type", "error", "_call", "_callId", "_date", "_seq"})
        self.assertEqual(error_b["type"], "error")
        self.assertEqual(error_b["error"], done_b["error"])
        self.assertEqual(error_b["_call"], b)
        self.assertEqual(error_b["_callId"], id_b)
        self.assertEqual(error_b["_seq"], done_b["seqs"][0])
        self.assertRegex(error_b["_date"], DATE)

        # C: two alternatives, so the error object goes to the last one
        done_c = self.done(rid_c, id_c)
        self.assertEqual(set(done_c), {"call_id", "status", "branch", "written", "seqs",
                                       "error", "attempts"})
        self.assertEqual(done_c["status"], "skipped")
        self.assertEqual(done_c["error"]["code"], "unresolved_reference")
        self.assertEqual((done_c["branch"], done_c["written"], done_c["attempts"]),
                         (1, ["†state.c_failed"], 0))
        self.assertEqual(len(done_c["seqs"]), 1, done_c)
        written_c = self.message(ctx, done_c["seqs"][0])
        self.assertEqual(written_c["type"], "data")
        self.assertEqual(written_c["_callId"], id_c)
        self.assertEqual(written_c["_outputPath"], "†state.c_failed")
        self.assertEqual(self.client.resolve(ctx, "†state.c_failed"), {"error": done_c["error"]})
        self.assertIs(self.client.resolve(ctx, "†state.c"), Absent)
        self.assertIs(self.client.resolve(ctx, "†state.b"), Absent)
        self.assertIs(self.client.resolve(ctx, "†state.sunny"), Absent)

        # E: reads the branch taken, and runs
        self.assertEqual(worker.task(id_e)[2], {"x": "umbrella"})
        worker.answer(id_e, "dry")
        done_e = self.done(rid_e, id_e)
        self.assertEqual(done_e, ok(id_e, ["†state.e"], [4], "dry"))
        self.assertEqual(sorted(done_b["seqs"] + done_c["seqs"]), [2, 3])

        self.assertEqual(worker.call_ids(), [id_a, id_e])
        for call_id, outcome in ((id_b, done_b), (id_c, done_c)):
            status = self.client.status(call_id)
            self.assertEqual((status["state"], status["attempts"]), ("skipped", 0))
            self.assertEqual(status["outcome"], outcome)
        self.assertEqual(self.stats()["calls"]["skipped"], 2)
        self.assertEqual(len(self.history(ctx)), 4)

    # ---- 4. fallback expressions -------------------------------------------

    def fallback_reader(self, ctx, worker):
        """†state.b is present, †state.a pending: a reader of
        "†state.a || †state.b" waits. Returns the producer and reader."""
        self.assertEqual(self.append(ctx, {"type": "data", "kind": "state",
                                           "data": {"b": "from b"}}), {"seq": 1})
        producer = {"_tool": "step", "_outputPath": "†state.a || †state.other"}
        reader = {"_tool": "step", "_outputPath": "†state.r", "x": "†state.a || †state.b"}
        rid_p, id_p = self.submit(ctx, producer)
        worker.task(id_p)
        rid_r, id_r = self.submit(ctx, reader)
        self.assert_waiting(id_r, ["†state.a || †state.b"])
        self.assertEqual(worker.call_ids(), [id_p])
        return (rid_p, id_p), (rid_r, id_r)

    def test_fallback_waits_for_a_pending_producer_of_the_first_alternative(self):
        """SEMANTICS 5: "†a || †b" is the first reference present; while †a
        can still be written by a pending call, the call waits for it."""
        worker = self.held_worker()
        ctx = "fallback-written"
        (rid_p, id_p), (rid_r, id_r) = self.fallback_reader(ctx, worker)
        worker.answer(id_p, "from a")
        self.assertEqual(self.done(rid_p, id_p), ok(id_p, ["†state.a"], [2], "from a"))
        self.assertEqual(worker.task(id_r)[2], {"x": "from a"})
        worker.answer(id_r, "read a")
        self.assertEqual(self.done(rid_r, id_r), ok(id_r, ["†state.r"], [3], "read a"))

    def test_fallback_takes_the_next_alternative_when_the_producer_takes_another_branch(self):
        """SEMANTICS 5 and 7: the producer of †a took another branch, so the
        reader of "†a || †b" gets †b's value."""
        worker = self.held_worker()
        ctx = "fallback-other"
        (rid_p, id_p), (rid_r, id_r) = self.fallback_reader(ctx, worker)
        worker.answer(id_p, "elsewhere", branch=1)
        self.assertEqual(self.done(rid_p, id_p),
                         ok(id_p, ["†state.other"], [2], "elsewhere", branch=1))
        self.assertEqual(worker.task(id_r)[2], {"x": "from b"})
        worker.answer(id_r, "read b")
        self.assertEqual(self.done(rid_r, id_r), ok(id_r, ["†state.r"], [3], "read b"))
        self.assertIs(self.client.resolve(ctx, "†state.a"), Absent)

    # ---- 5. gate expressions -----------------------------------------------

    def gate_reader(self, ctx, worker):
        """Two held producers of †state.a and †state.b, and a reader of
        "†state.a && †state.b" waiting for both."""
        pa = {"_tool": "step", "_outputPath": "†state.a || †state.not_a"}
        pb = {"_tool": "step", "_outputPath": "†state.b || †state.not_b"}
        reader = {"_tool": "step", "_outputPath": "†state.r", "x": "†state.a && †state.b"}
        rid_a, id_a = self.submit(ctx, pa)
        rid_b, id_b = self.submit(ctx, pb)
        worker.task(id_a)
        worker.task(id_b)
        rid_r, id_r = self.submit(ctx, reader)
        self.assert_waiting(id_r, ["†state.a && †state.b"])
        return (rid_a, id_a), (rid_b, id_b), (rid_r, id_r)

    def test_gate_waits_for_every_producer_and_takes_the_last_value(self):
        """SEMANTICS 5: "†a && †b" needs every operand; its value is †b's."""
        worker = self.held_worker()
        ctx = "gate-both"
        (rid_a, id_a), (rid_b, id_b), (rid_r, id_r) = self.gate_reader(ctx, worker)
        worker.answer(id_a, "A")
        self.assertEqual(self.done(rid_a, id_a), ok(id_a, ["†state.a"], [1], "A"))
        self.assert_waiting(id_r, ["†state.a && †state.b"])
        self.assertEqual(worker.call_ids(), [id_a, id_b])
        worker.answer(id_b, "B")
        self.assertEqual(self.done(rid_b, id_b), ok(id_b, ["†state.b"], [2], "B"))
        self.assertEqual(worker.task(id_r)[2], {"x": "B"})
        worker.answer(id_r, "both")
        self.assertEqual(self.done(rid_r, id_r), ok(id_r, ["†state.r"], [3], "both"))

    def test_gate_is_skipped_when_one_operand_is_never_written(self):
        """SEMANTICS 5 and 7: the producer of †a took another branch, so
        "†a && †b" stays unmet and the call ends skipped."""
        worker = self.held_worker()
        ctx = "gate-one"
        (rid_a, id_a), (rid_b, id_b), (rid_r, id_r) = self.gate_reader(ctx, worker)
        worker.answer(id_b, "B")
        self.assertEqual(self.done(rid_b, id_b), ok(id_b, ["†state.b"], [1], "B"))
        self.assert_waiting(id_r, ["†state.a && †state.b"])
        worker.answer(id_a, "no", branch=1)
        self.assertEqual(self.done(rid_a, id_a), ok(id_a, ["†state.not_a"], [2], "no", branch=1))
        done_r = self.done(rid_r, id_r)
        self.assertEqual(done_r["status"], "skipped")
        self.assertEqual(done_r["error"]["code"], "unresolved_reference")
        self.assertEqual((done_r["written"], done_r["seqs"], done_r["attempts"]), ([], [3], 0))
        self.assertNotIn("branch", done_r)
        self.assertEqual(self.message(ctx, 3)["type"], "error")
        self.assertEqual(self.message(ctx, 3)["_callId"], id_r)
        self.assertEqual(worker.call_ids(), [id_a, id_b])
        self.assertIs(self.client.resolve(ctx, "†state.r"), Absent)

    # ---- 6. instances --------------------------------------------------------

    def test_global_producer_feeds_an_instance_reader(self):
        """SEMANTICS 7: global targets can feed instance reads."""
        worker = self.held_worker()
        ctx = "instances"
        producer = {"_tool": "step", "_outputPath": "†state.x"}
        reader = {"_tool": "step", "_outputPath": "†state.r", "_instance": "i1", "v": "†state.x"}
        rid_p, id_p = self.submit(ctx, producer)
        worker.task(id_p)
        rid_r, id_r = self.submit(ctx, reader)
        self.assert_waiting(id_r, ["†state.x"])
        worker.answer(id_p, 5)
        self.assertEqual(self.done(rid_p, id_p), ok(id_p, ["†state.x"], [1], 5))
        task = worker.task(id_r)
        self.assertEqual(task[2], {"v": 5})
        self.assertEqual(task[3]["instance"], "i1")
        worker.answer(id_r, 6)
        self.assertEqual(self.done(rid_r, id_r), ok(id_r, ["†state.r"], [2], 6))
        self.assertEqual(self.client.resolve(ctx, "†state.r", "i1"), 6)
        self.assertIs(self.client.resolve(ctx, "†state.r"), Absent)
        self.assertEqual(self.message(ctx, 2)["_instance"], "i1")

    def test_instance_producer_does_not_feed_a_global_reader(self):
        """SEMANTICS 7: an instance target cannot feed a global read (nor
        another instance's): the reader is rejected at once."""
        worker = self.held_worker()
        ctx = "instances-reverse"
        producer = {"_tool": "step", "_outputPath": "†state.y", "_instance": "i1"}
        rid_p, id_p = self.submit(ctx, producer)
        worker.task(id_p)
        accepted = self.stats()["calls"]["accepted"]
        before = self.history(ctx)

        global_reader = {"_tool": "step", "_outputPath": "†state.g", "v": "†state.y"}
        code, message = self.refused("CALL", ctx, global_reader)
        self.assertEqual(code, "unresolved_reference", message)
        other_instance = dict(global_reader, _instance="i2")
        code, message = self.refused("CALL", ctx, other_instance)
        self.assertEqual(code, "unresolved_reference", message)
        self.assertEqual(self.stats()["calls"]["accepted"], accepted)
        self.assertEqual(self.history(ctx), before)

        # A reader in the producer's own instance waits for it
        same_instance = dict(global_reader, _instance="i1")
        rid_r, id_r = self.submit(ctx, same_instance)
        self.assert_waiting(id_r, ["†state.y"])
        worker.answer(id_p, "only i1")
        self.assertEqual(self.done(rid_p, id_p), ok(id_p, ["†state.y"], [1], "only i1"))
        self.assertEqual(worker.task(id_r)[2], {"v": "only i1"})
        worker.answer(id_r, "seen")
        self.assertEqual(self.done(rid_r, id_r), ok(id_r, ["†state.g"], [2], "seen"))
        self.assertEqual(worker.call_ids(), [id_p, id_r])

    # ---- 7. no possible producer ---------------------------------------------

    def test_call_with_no_possible_producer_is_rejected_and_nothing_stored(self):
        """SEMANTICS 7: if nothing pending could write an absent reference
        when the call is submitted, the call is rejected at once with
        unresolved_reference and nothing is stored."""
        worker = self.held_worker()
        stats = self.stats()
        reader = {"_tool": "step", "_outputPath": "†state.r", "v": "†state.a.y"}

        # A new context: rejected, and the context is not created
        code, message = self.refused("CALL", "brand-new", reader)
        self.assertEqual(code, "unresolved_reference", message)
        self.assertIn("†state.a.y", message)
        after = self.stats()
        self.assertEqual(after["calls"]["accepted"], stats["calls"]["accepted"])
        self.assertEqual(after["contexts"], stats["contexts"])
        self.assertEqual(after["messages"], stats["messages"])
        self.assert_no_context("brand-new")

        # An existing context whose pending call writes only a sibling path
        ctx = "existing"
        self.assertEqual(self.append(ctx, {"type": "data", "kind": "state",
                                           "data": {"a": {"z": 1}}}), {"seq": 1})
        rid_p, id_p = self.submit(ctx, {"_tool": "step", "_outputPath": "†state.a.x"})
        worker.task(id_p)
        stats = self.stats()
        before = self.history(ctx)
        code, message = self.refused("CALL", ctx, reader)
        self.assertEqual(code, "unresolved_reference", message)
        # The pending producer of another context does not count either
        code, message = self.refused("CALL", "other", dict(reader, v="†state.a.x"))
        self.assertEqual(code, "unresolved_reference", message)
        after = self.stats()
        self.assertEqual(after["calls"]["accepted"], stats["calls"]["accepted"])
        self.assertEqual(after["calls"]["waiting"], 0)
        self.assertEqual(after["contexts"], stats["contexts"])
        self.assertEqual(self.history(ctx), before)
        self.assert_no_context("other")

        worker.answer(id_p, 2)
        self.assertEqual(self.done(rid_p, id_p), ok(id_p, ["†state.a.x"], [2], 2))
        self.assertEqual(worker.call_ids(), [id_p])
        self.assertEqual(self.client.resolve(ctx, "†state.a"), {"z": 1, "x": 2})

    # ---- 8. a PLAN with one invalid call -----------------------------------

    def test_plan_with_one_invalid_call_is_rejected_whole(self):
        """PROTOCOL 3: a refused request changes nothing. A PLAN whose third
        call is invalid is answered ERROR naming that call; none of its
        calls is stored or run."""
        worker = self.held_worker(auto={"step": lambda params, meta: params})
        stats = self.stats()
        good = [
            {"_tool": "step", "_outputPath": "†state.p0", "v": 0},
            {"_tool": "step", "_outputPath": "†state.p1", "v": "†state.p0"},
        ]
        cases = [
            ("bad_reference", "†state..x",
             {"_tool": "step", "_outputPath": "†state.p2", "v": "†state..x"}),
            ("unresolved_reference", "†nothing.x",
             {"_tool": "step", "_outputPath": "†state.p2", "v": "†nothing.x"}),
            ("bad_call", "_tool", {"_outputPath": "†state.p2", "v": "†state.p1"}),
        ]
        for number, (expected, named, bad) in enumerate(cases):
            with self.subTest(expected=expected):
                ctx = "plan-%d" % number
                code, message = self.refused("PLAN", ctx, good + [bad])
                self.assertEqual(code, expected, message)
                self.assertIn("call 2", message)        # index 2: the third call
                self.assertIn(named, message)
                after = self.stats()
                self.assertEqual(after["calls"]["accepted"], stats["calls"]["accepted"])
                self.assertEqual(after["contexts"], stats["contexts"])
                self.assertEqual(after["messages"], stats["messages"])
                self.assertEqual(after["calls"]["waiting"] + after["calls"]["queued"]
                                 + after["calls"]["running"], 0)
                self.assert_no_context(ctx)
                # The refused plan left no pending producer behind
                code, message = self.refused("CALL", ctx, good[1])
                self.assertEqual(code, "unresolved_reference", message)
        # Calls of one activity are dispatched first in, first out: had any
        # refused call been queued, it would run before this one
        rid, call_id = self.submit("sentinel", {"_tool": "step", "_outputPath": "†state.s", "v": 1})
        self.assertEqual(self.done(rid, call_id), ok(call_id, ["†state.s"], [1], {"v": 1}))
        self.assertEqual(worker.call_ids(), [call_id])
        self.assertEqual(self.stats()["calls"]["accepted"], stats["calls"]["accepted"] + 1)

    # ---- 9. DONE order -------------------------------------------------------

    def test_done_replies_follow_the_dependency_order_of_a_chain(self):
        """PROTOCOL 1: one DONE per call; in a chain each DONE comes after
        its producer's."""
        self.fast_worker(["inc"], lambda activity, params, meta: params["x"] + 1, capacity=4)
        ctx = "order"
        calls = [{"_tool": "inc", "_outputPath": "†n.v0", "x": 0}]
        for i in range(1, 5):
            calls.append({"_tool": "inc", "_outputPath": "†n.v%d" % i, "x": "†n.v%d" % (i - 1)})
        rid, ids = self.plan(ctx, calls)
        outcomes = [json.loads(self.client.wait(rid, "DONE", timeout=TIMEOUT)[2]) for _ in ids]
        self.assertEqual([outcome["call_id"] for outcome in outcomes], ids)
        for i, outcome in enumerate(outcomes):
            self.assertEqual(outcome, ok(ids[i], ["†n.v%d" % i], [i + 1], i + 1))
        self.assertEqual(self.client.resolve(ctx, "†n.v4"), 5)

    # ---- 10. STATS counts waiting calls --------------------------------------

    def test_stats_counts_waiting_calls_while_a_chain_is_held(self):
        """PROTOCOL 4: calls.waiting counts the calls waiting for
        dependencies."""
        worker = self.held_worker()
        ctx = "stats"
        calls = [{"_tool": "step", "_outputPath": "†s.v0"}]
        for i in range(1, 4):
            calls.append({"_tool": "step", "_outputPath": "†s.v%d" % i, "x": "†s.v%d" % (i - 1)})
        rid, ids = self.plan(ctx, calls)
        worker.task(ids[0])
        counts = self.stats()["calls"]
        self.assertEqual((counts["waiting"], counts["queued"], counts["running"]), (3, 0, 1))
        self.assertEqual(counts["accepted"], 4)
        for i, call_id in enumerate(ids):
            worker.answer(call_id, i)
            self.assertEqual(self.done(rid, call_id)["status"], "ok")
            counts = self.stats()["calls"]
            self.assertEqual(counts["waiting"], max(2 - i, 0))
            self.assertEqual(counts["ok"], i + 1)
        counts = self.stats()["calls"]
        self.assertEqual((counts["waiting"], counts["queued"], counts["running"]), (0, 0, 0))

    # ---- 11. a PLAN fed by an earlier CALL -----------------------------------

    def test_plan_calls_wait_for_a_call_submitted_earlier(self):
        """SEMANTICS 7: the earlier pending call may come from another
        request: a PLAN's calls wait for a CALL still running."""
        worker = self.held_worker()
        ctx = "plan-after-call"
        rid_a, id_a = self.submit(ctx, {"_tool": "step", "_outputPath": "†state.a"})
        worker.task(id_a)
        rid, (id_b, id_c) = self.plan(ctx, [
            {"_tool": "step", "_outputPath": "†state.b", "x": "†state.a"},
            {"_tool": "step", "_outputPath": "†state.c", "x": "†state.b", "y": "†state.a"},
        ])
        self.assert_waiting(id_b, ["†state.a"])
        self.assert_waiting(id_c, ["†state.b", "†state.a"])
        worker.answer(id_a, 1)
        self.assertEqual(self.done(rid_a, id_a), ok(id_a, ["†state.a"], [1], 1))
        self.assertEqual(worker.task(id_b)[2], {"x": 1})
        self.assertEqual(self.client.status(id_c)["state"], "waiting")
        worker.answer(id_b, 2)
        self.assertEqual(self.done(rid, id_b), ok(id_b, ["†state.b"], [2], 2))
        self.assertEqual(worker.task(id_c)[2], {"x": 2, "y": 1})
        worker.answer(id_c, 3)
        self.assertEqual(self.done(rid, id_c), ok(id_c, ["†state.c"], [3], 3))
        self.assertEqual(self.client.resolve(ctx, "†state"), {"a": 1, "b": 2, "c": 3})

    # ---- 12. scale smoke ------------------------------------------------------

    def test_plan_of_2000_chained_calls_completes(self):
        """A PLAN of 2000 calls, each reading the previous one's output, ends
        with every DONE and the right final value (not timed)."""
        self.fast_worker(["inc"], lambda activity, params, meta: params["x"] + 1, capacity=64)
        ctx = "long-chain"
        count = 2000
        calls = [{"_tool": "inc", "_outputPath": "†chain.v0", "x": 0}]
        for i in range(1, count):
            calls.append({"_tool": "inc", "_outputPath": "†chain.v%d" % i,
                          "x": "†chain.v%d" % (i - 1)})
        rid, ids = self.plan(ctx, calls)
        self.assertEqual(len(set(ids)), count)
        results = {}
        for _ in range(count):
            frames = self.client.wait(rid, "DONE", timeout=120.0)
            outcome = json.loads(frames[2])
            self.assertEqual(outcome["status"], "ok", outcome)
            results[outcome["call_id"]] = outcome["result"]
        self.assertEqual([results[call_id] for call_id in ids], list(range(1, count + 1)))
        self.assertEqual(self.client.resolve(ctx, "†chain.v%d" % (count - 1)), count)
        counts = self.stats()["calls"]
        self.assertEqual((counts["accepted"], counts["ok"], counts["waiting"]), (count, count, 0))

    # ---- 13. a producer that ends as its PLAN is accepted ---------------------

    #  †v.s is a string, and the tool of "step" wants n an integer: a call
    #  with n "†v.s" passes the check at submit (a reference) and is refused
    #  once resolved, at its dispatch (PROTOCOL 2.1: bad_params, attempts 0),
    #  in the pass that accepts its PLAN, before the calls after it run
    COUNT_TOOL = {"step": {"params": {"type": "object",
                                      "properties": {"n": {"type": "integer"}}}}}
    TEXT = {"type": "data", "kind": "v", "data": {"s": "text"}}

    def refused_plan(self, ctx, output, readers):
        """APPEND †v, then PLAN the producer refused at its dispatch (its
        output path output) and the readers; returns (request id, ids)."""
        self.assertEqual(self.append(ctx, self.TEXT), {"seq": 1})
        return self.plan(ctx, [{"_tool": "step", "_outputPath": output, "n": "†v.s"}] + readers)

    def assert_refused(self, outcome, branch=None, written=(), seqs=(2,)):
        """The outcome of the producer refused at its dispatch."""
        keys = {"call_id", "status", "written", "seqs", "error", "attempts"}
        self.assertEqual(set(outcome), keys | ({"branch"} if branch is not None else set()))
        self.assertEqual((outcome["status"], outcome["error"]["code"], outcome["attempts"]),
                         ("error", "bad_params", 0), outcome)
        self.assertEqual((outcome.get("branch"), outcome["written"], outcome["seqs"]),
                         (branch, list(written), list(seqs)), outcome)

    def assert_skipped(self, outcome, seq):
        """The outcome of a reader skipped (one alternative: an error message
        appended at seq)."""
        self.assertEqual(set(outcome), {"call_id", "status", "written", "seqs", "error",
                                        "attempts"})
        self.assertEqual((outcome["status"], outcome["error"]["code"], outcome["written"],
                          outcome["seqs"], outcome["attempts"]),
                         ("skipped", "unresolved_reference", [], [seq], 0), outcome)

    def test_reader_of_a_producer_refused_as_its_plan_is_accepted_is_skipped(self):
        """SEMANTICS 7: the producer of †o.x, first in its PLAN, ends without
        writing it while the PLAN is accepted; its reader, next in the PLAN,
        is evaluated again and ends skipped (unresolved_reference) with its
        DONE, and so does a fire-and-forget reader of the reader's output."""
        worker = self.held_worker(tools=self.COUNT_TOOL)
        ctx = "refused-producer"
        rid, (id_p, id_c, id_f) = self.refused_plan(ctx, "†o.x", [
            {"_tool": "step", "_outputPath": "†o.y", "x": "†o.x"},
            {"_tool": "step", "x": "†o.y"}])
        self.assert_refused(self.done(rid, id_p))
        done_c = self.done(rid, id_c)
        self.assert_skipped(done_c, 3)
        self.assertEqual(self.message(ctx, 3)["error"], done_c["error"])
        status_f = self.client.wait_status(id_f, ["ok", "error", "timeout", "skipped",
                                                  "cancelled"])
        self.assertEqual((status_f["state"], status_f["attempts"]), ("skipped", 0), status_f)
        self.assertEqual(status_f["outcome"]["error"]["code"], "unresolved_reference")
        self.assertEqual(self.client.status(id_c)["outcome"], done_c)
        self.assertEqual(worker.tasks, [])
        counts = self.stats()["calls"]
        self.assertEqual((counts["waiting"], counts["queued"], counts["skipped"]), (0, 0, 2))
        self.assertEqual(len(self.history(ctx)), 3)

    def test_error_branch_of_a_producer_refused_as_its_plan_is_accepted_feeds_a_reader(self):
        """SEMANTICS 5 and 7: the refused producer has two alternatives, so
        its error object is written to the last one, †o.failed; the reader
        of †o.failed, accepted after it in the same PLAN, runs with it, and
        the reader of †o.x, the branch not taken, is skipped."""
        worker = self.held_worker(tools=self.COUNT_TOOL)
        ctx = "refused-producer-branch"
        rid, (id_p, id_h, id_x) = self.refused_plan(ctx, "†o.x || †o.failed", [
            {"_tool": "step", "_outputPath": "†o.handled", "x": "†o.failed"},
            {"_tool": "step", "_outputPath": "†o.y", "x": "†o.x"}])
        done_p = self.done(rid, id_p)
        self.assert_refused(done_p, branch=1, written=["†o.failed"])
        self.assertEqual(self.client.resolve(ctx, "†o.failed"), {"error": done_p["error"]})
        self.assert_skipped(self.done(rid, id_x), 3)
        self.assertEqual(worker.task(id_h)[2], {"x": {"error": done_p["error"]}})
        worker.answer(id_h, "handled")
        self.assertEqual(self.done(rid, id_h), ok(id_h, ["†o.handled"], [4], "handled"))
        self.assertEqual(worker.call_ids(), [id_h])

    def test_restart_skips_the_reader_of_a_producer_refused_at_dispatch(self):
        """The same for calls recovered (act_recover.c): the PLAN is accepted
        with no worker for the producer (queued, its reader waiting); after
        a SIGKILL and a restart the worker declaring the tool comes, the
        producer is refused and the reader skipped, its DONE sent to the
        same routing id with the request id of before."""
        identity = b"refused-restart-client"
        self.client.close()
        self.client = self.actd.client(identity=identity)
        rid, (id_p, id_c) = self.refused_plan("refused-restart", "†o.x", [
            {"_tool": "step", "_outputPath": "†o.y", "x": "†o.x"}])
        self.assertEqual(self.client.status(id_p)["state"], "queued")
        self.assert_waiting(id_c, ["†o.x"])
        self.actd.kill()
        self.client.close()
        self.actd.start()
        self.client = self.actd.client(identity=identity)
        #  A reply first: the client is connected before any DONE can leave
        self.assertEqual(self.client.status(id_c)["state"], "waiting")
        worker = self.held_worker(tools=self.COUNT_TOOL)
        self.assert_refused(self.done(rid, id_p))
        self.assert_skipped(self.done(rid, id_c), 3)
        self.assertEqual(worker.tasks, [])


if __name__ == "__main__":
    unittest.main()
