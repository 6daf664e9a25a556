"""The actd broker: ACT/1 end to end.

Each test starts a real actd (harness.Actd: free ports, a temporary SQLite
store, heartbeat_ms 200) and speaks raw ACT/1 to it, then checks, when actd
stops, that it exits 0 on SIGTERM (under AddressSanitizer: no leak). The
tests follow PROTOCOL.md and SEMANTICS.md; each names the behaviour in the
spec's words and asserts the exact outcome.

Run: ACTD_BIN=build-x/bin/actd /usr/bin/python3 -m unittest -v test_broker
(and test_broker_reads, test_broker_errors: the same broker's numbers,
HISTORY texts, STATS and STATUS; its errors, limits and garbage)
"""

import datetime
import json
import os
import re
import unittest

import harness

from harness import Absent, Actd, Fail, NoAnswer, Worker, wait_for

RFC3339_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
COMMANDS = ["CALL", "PLAN", "APPEND", "RESOLVE", "VIEW", "HISTORY",
            "STATUS", "CANCEL", "STATS", "PING"]


def enc(value):
    """JSON text as UTF-8 bytes (the dagger sent as itself, not \\u2020)."""
    return json.dumps(value, ensure_ascii=False).encode()


def standard(activity, params, meta):
    """The activities of the standard test worker.

    x: the seed example's worker, always "inactive"; echo: the params;
    value: params["value"], in branch params["branch"] when given; fail:
    FAIL with params' message and code, not retryable; fire: anything."""
    if activity == "x":
        return "inactive"
    if activity == "echo":
        return params
    if activity == "value":
        if "branch" in params:
            return ("branch", params["branch"], params["value"])
        return params["value"]
    if activity == "fail":
        raise Fail(params["message"], code=params.get("code"), retryable=False)
    if activity == "fire":
        return {"thrown": "away"}
    raise Fail("no such activity %s" % activity, retryable=False)


STANDARD_ACTIVITIES = ["x", "echo", "value", "fail", "fire"]


class DeferredWorker(Worker):
    """A worker that holds its tasks until the test answers them with
    send_result() (harness.Worker sends it from its own thread). It
    heartbeats meanwhile."""

    def __init__(self, endpoint, activities, name):
        super().__init__(endpoint, activities, lambda activity, params, meta: NoAnswer,
                         name=name, poll_ms=20)


class BrokerCase(unittest.TestCase):
    """One fresh actd per test; a standard worker unless standard is False."""

    maxDiff = None

    config = None          # text of a --config file (ZPL), or None
    standard = True

    def setUp(self):
        self.actd = Actd()
        if self.config:
            path = os.path.join(self.actd.dir, "actd.cfg")
            with open(path, "w") as handle:
                handle.write(self.config)
            self.actd.args = ["--config", path]
        self.addCleanup(self._stop_actd)
        self.actd.start()
        self.client = self.actd.client()
        self.addCleanup(self.client.close)
        self.worker = None
        if self.standard:
            self.worker = self.start_worker(STANDARD_ACTIVITIES, standard, "standard")

    def _stop_actd(self):
        code = self.actd.stop()
        log = self.actd.log()
        self.actd.cleanup()
        self.assertEqual(code, 0, "actd exited %s on SIGTERM (a leak under "
                         "AddressSanitizer?):\n%s" % (code, log[-6000:]))

    # -- helpers -------------------------------------------------------------

    def start_worker(self, activities, handler, name, capacity=1):
        return self.run_worker(Worker(self.actd.worker_endpoint, activities, handler,
                                      capacity=capacity, name=name))

    def run_worker(self, worker):
        """Start a worker thread and wait until actd lists it in STATS."""
        worker.start()
        self.addCleanup(worker.stop)
        wait_for(lambda: any(w["name"] == worker.name for w in self.stats()["workers"]),
                 "worker %s to register" % worker.name, 20.0)
        return worker

    def stats(self):
        """STATS without uptime_ms (which changes by itself) and without
        actd's extra "store", "clients", "unserved" and "served" objects
        (commit figures, reply bytes held for clients, activities nobody
        serves with calls, activities workers serve and their bounds,
        beyond PROTOCOL.md section 4), whose shapes are checked here."""
        stats = self.client.value("STATS")
        self.assertIsInstance(stats.pop("uptime_ms"), int)
        self.assertEqual(sorted(stats.pop("unserved")), ["activities", "max", "refused"])
        self.assertEqual(sorted(stats.pop("served")), ["activities", "max", "max_per_worker",
                                                       "refused", "refused_per_worker"])
        clients = stats.pop("clients")
        self.assertEqual(sorted(clients), ["cut", "held_bytes", "unowned"])
        self.assertEqual(clients["cut"], 0)
        store = stats.pop("store")
        self.assertEqual(sorted(store), ["backend", "batch", "commit_ms", "commits",
                                         "early_tasks", "held", "held_expired", "sync",
                                         "writes"])
        self.assertLessEqual(store["held_expired"], store["held"])
        self.assertEqual((store["backend"], store["sync"], store["early_tasks"]),
                         (harness.STORE, "full", True))
        self.assertGreaterEqual(store["writes"], store["commits"])
        #  Histograms of each commit's time and writes
        self.assertEqual(store["commit_ms"]["count"], store["commits"])
        self.assertEqual(store["batch"]["count"], store["commits"])
        self.assertEqual(store["batch"]["sum"], store["writes"])
        self.assertEqual(store["batch"]["counts"][-1], store["commits"])
        return stats

    def history(self, context):
        """The whole history of context, or None when it does not exist."""
        reply = self.client.request("HISTORY", context, "1", "1000")
        if reply[0] == "VALUE":
            return json.loads(reply[1])
        self.assertEqual(reply[:2], ["ERROR", "not_found"], reply)
        return None

    def append(self, context, message):
        reply = self.client.request("APPEND", context, enc(message))
        self.assertEqual(reply[0], "OK", reply)
        return json.loads(reply[1])["seq"]

    def submit(self, context, call):
        """CALL; returns (request id, call id) once ACCEPTED."""
        rid = self.client.send("CALL", context, enc(call))
        reply = self.client.wait(rid, timeout=20)
        self.assertEqual(reply[0], "ACCEPTED", reply)
        self.assertEqual(len(reply), 2, reply)
        return rid, reply[1]

    def done(self, rid, call_id, timeout=20.0):
        frames = self.client.wait(rid, "DONE", timeout=timeout)
        self.assertEqual(len(frames), 3, frames)
        self.assertEqual(frames[1], call_id, frames)
        return json.loads(frames[2])

    def call(self, context, call):
        """CALL with an output path; returns (call id, DONE outcome)."""
        rid, call_id = self.submit(context, call)
        return call_id, self.done(rid, call_id)

    def resolve(self, context, expression, instance=None):
        return self.client.resolve(context, expression, instance)

    def tasks_of(self, worker, call_id):
        return [task for task in worker.tasks if task[3]["call_id"] == call_id]

    def expect_error(self, reply, code):
        self.assertEqual(reply[0], "ERROR", reply)
        self.assertEqual(reply[1], code, reply)
        self.assertEqual(len(reply), 3, reply)
        self.assertTrue(reply[2], "an ERROR carries a human-readable message: %r" % reply)

    def snapshot(self, contexts):
        return self.stats(), {context: self.history(context) for context in contexts}

    def refuse(self, code, command, *args, contexts=(), request_id=None):
        """Send [ACTC01][command][request id][args...]; expect ERROR code and
        that nothing changed: STATS, and the history of every context named
        (None stays None: no context was created)."""
        before = self.snapshot(contexts)
        rid = request_id or self.client.next_id()
        frames = [b"ACTC01", command.encode(), rid.encode()]
        frames += [arg if isinstance(arg, bytes) else arg.encode() for arg in args]
        self.client.send_raw(frames)
        reply = self.client.wait(rid)
        self.expect_error(reply, code)
        self.assertEqual(self.snapshot(contexts), before,
                         "%s %r changed what actd stores" % (command, args))
        return reply

    def assert_stored_message(self, message, expected):
        """A history entry: expected plus a _date in RFC 3339 UTC with ms."""
        message = dict(message)
        date = message.pop("_date")
        self.assertRegex(date, RFC3339_MS)
        datetime.datetime.strptime(date, "%Y-%m-%dT%H:%M:%S.%fZ")
        self.assertEqual(message, expected)


# ---------------------------------------------------------------------------
#  Calls end to end


class CallTest(BrokerCase):

    def test_seed_example_output_is_written_and_reported(self):
        """SEMANTICS 4: writing "inactive" at †data.user.status."""
        context = "seed"
        appended = {"type": "data", "data": {"user": {"name": "Alex", "status": "active"}}}
        self.assertEqual(self.append(context, appended), 1)
        call = {"_tool": "x", "_outputPath": "†data.user.status"}
        call_id, outcome = self.call(context, call)
        self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 0,
                                   "written": ["†data.user.status"], "seqs": [2],
                                   "result": "inactive", "attempts": 1})
        self.assertEqual(self.resolve(context, "†data.user"),
                         {"name": "Alex", "status": "inactive"})
        history = self.client.value("HISTORY", context, "1", "10")
        self.assertEqual(len(history), 2, history)
        self.assert_stored_message(history[0], dict(appended, _seq=1))
        self.assert_stored_message(history[1], {
            "type": "data", "kind": "data", "data": {"user": {"status": "inactive"}},
            "_outputPath": "†data.user.status", "_outputMethod": "set",
            "_call": call, "_callId": call_id, "_seq": 2})

    def test_fire_and_forget_call_is_run_and_its_result_discarded(self):
        """SEMANTICS 7: a call without _outputPath is run, nothing is
        appended, and the client is answered once, when it is accepted."""
        context = "fire"
        self.append(context, {"type": "data", "kind": "state", "data": {"n": 1}})
        before = self.snapshot([context])
        rid, call_id = self.submit(context, {"_tool": "fire", "note": "hello"})
        status = self.client.wait_status(call_id, ("ok", "error", "timeout", "skipped",
                                                   "cancelled"))
        self.assertEqual({key: status[key] for key in ("call_id", "context", "state", "attempts")},
                         {"call_id": call_id, "context": context, "state": "ok", "attempts": 1})
        self.assertEqual(status["outcome"]["status"], "ok")
        tasks = self.tasks_of(self.worker, call_id)
        self.assertEqual(len(tasks), 1, tasks)
        self.assertEqual(tasks[0][2], {"note": "hello"})
        self.assertIs(tasks[0][3]["discard"], True)
        self.assertEqual(tasks[0][3]["branches"], 0)
        with self.assertRaises(TimeoutError, msg="a fire-and-forget call got a DONE"):
            self.client.wait(rid, timeout=1.5)
        stats, histories = self.snapshot([context])
        self.assertEqual(histories, before[1])
        self.assertEqual(stats["messages"], before[0]["messages"])

    def test_references_in_params_are_resolved_at_any_depth(self):
        """SEMANTICS 2 and 7: the worker receives the params with every
        reference replaced and the top-level _ keys removed."""
        context = "refs"
        self.append(context, {"type": "data", "kind": "state",
                              "data": {"user": {"name": "Alex", "tags": ["a", "b"]}, "n": 3}})
        self.append(context, {"type": "data", "kind": "state", "_instance": "i1",
                              "data": {"n": 4}})
        call = {"_tool": "echo", "_instance": "i1", "_outputPath": "†out.params",
                "_timeout": 5000, "_mine": "kept by the broker only",
                "name": "†state.user.name",
                "nested": {"deep": {"tags": "†state.user.tags", "first": "†state.user.tags[0]"}},
                "list": ["†state.n", {"user": "†state.user"}, 5, "plain"],
                "fallback": "†state.missing || †state.n",
                "gate": "†state.n && †state.user.name",
                "literal": "††literal",
                "inner": {"_hidden": "†state.n", "_k": 1}}
        call_id, outcome = self.call(context, call)
        expected = {"name": "Alex",
                    "nested": {"deep": {"tags": ["a", "b"], "first": "a"}},
                    "list": [4, {"user": {"name": "Alex", "tags": ["a", "b"]}}, 5, "plain"],
                    "fallback": 4,
                    "gate": "Alex",
                    "literal": "†literal",
                    "inner": {"_hidden": 4, "_k": 1}}
        tasks = self.tasks_of(self.worker, call_id)
        self.assertEqual(len(tasks), 1)
        self.assertEqual(tasks[0][0], call_id + ".1")
        self.assertEqual(tasks[0][1], "echo")
        self.assertEqual(tasks[0][2], expected)
        self.assertEqual(tasks[0][3], {"context": context, "call_id": call_id, "attempt": 1,
                                       "deadline_ms": 5000, "branches": 1, "discard": False,
                                       "instance": "i1"})
        self.assertEqual(outcome["result"], expected)

    def test_meta_without_instance_has_no_instance_and_default_deadline(self):
        """PROTOCOL 2 and 5: meta of a call with no _instance and no _timeout."""
        call_id, outcome = self.call("meta", {"_tool": "echo", "_outputPath": "†out.x",
                                              "a": 1})
        self.assertEqual(outcome["status"], "ok")
        tasks = self.tasks_of(self.worker, call_id)
        self.assertEqual(tasks[0][3], {"context": "meta", "call_id": call_id, "attempt": 1,
                                       "deadline_ms": 300000, "branches": 1,
                                       "discard": False})

    def test_meta_carries_any_valid_instance(self):
        """SEMANTICS 1 and PROTOCOL 2: an _instance is any 1-128 bytes of
        UTF-8; 120 control characters (escaped, 720 bytes of JSON) and 128
        multibyte bytes reach the worker in a meta that parses."""
        for instance in ["\x01" * 120, "\u00e9" * 64, "\"\\\n" * 40]:
            call_id, outcome = self.call("meta-instance", {
                "_tool": "echo", "_instance": instance, "_outputPath": "†out.x", "a": 1})
            self.assertEqual(outcome["status"], "ok", outcome)
            meta = self.tasks_of(self.worker, call_id)[0][3]
            self.assertEqual(meta["instance"], instance)
            self.assertEqual(meta["call_id"], call_id)

    def test_references_resolve_against_the_context_at_dispatch(self):
        """SEMANTICS 7: references are resolved when the call is dispatched,
        against the context as it is then (not when it was submitted)."""
        context = "late"
        self.append(context, {"type": "data", "kind": "state", "data": {"city": "Paris"}})
        rid, call_id = self.submit(context, {"_tool": "later", "_outputPath": "†out.city",
                                             "city": "†state.city"})
        self.assertEqual(self.client.status(call_id)["state"], "queued")
        self.append(context, {"type": "data", "kind": "state", "data": {"city": "Lyon"}})
        later = self.start_worker(["later"], lambda activity, params, meta: params["city"],
                                  "later")
        outcome = self.done(rid, call_id)
        self.assertEqual(outcome["result"], "Lyon")
        self.assertEqual(later.tasks[0][2], {"city": "Lyon"})


# ---------------------------------------------------------------------------
#  Output paths: branches and fan-out


class BranchTest(BrokerCase):

    def test_worker_names_branch_1(self):
        call = {"_tool": "value", "_outputPath": "†state.sunny || †state.rainy",
                "value": "rain", "branch": 1}
        call_id, outcome = self.call("br", call)
        self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 1,
                                   "written": ["†state.rainy"], "seqs": [1],
                                   "result": "rain", "attempts": 1})
        self.assertEqual(self.tasks_of(self.worker, call_id)[0][3]["branches"], 2)
        self.assertEqual(self.resolve("br", "†state.rainy"), "rain")
        self.assertIs(self.resolve("br", "†state.sunny"), Absent)

    def test_result_without_branch_takes_branch_0(self):
        call = {"_tool": "value", "_outputPath": "†state.sunny || †state.rainy", "value": 21}
        call_id, outcome = self.call("br0", call)
        self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 0,
                                   "written": ["†state.sunny"], "seqs": [1],
                                   "result": 21, "attempts": 1})
        self.assertEqual(self.resolve("br0", "†state.sunny"), 21)
        self.assertIs(self.resolve("br0", "†state.rainy"), Absent)

    def test_failure_writes_error_to_last_alternative(self):
        """SEMANTICS 5: a failed call writes {"error": {...}} to the last
        alternative, with the call's method; DONE names that branch."""
        context = "brfail"
        self.append(context, {"type": "data", "kind": "note", "data": "x"})
        call = {"_tool": "fail", "_outputPath": "†state.sunny || †state.rainy",
                "message": "cloudy", "code": "no_sun"}
        call_id, outcome = self.call(context, call)
        error = {"code": "no_sun", "message": "cloudy"}
        self.assertEqual(outcome, {"call_id": call_id, "status": "error", "branch": 1,
                                   "written": ["†state.rainy"], "seqs": [2],
                                   "error": error, "attempts": 1})
        self.assertEqual(self.resolve(context, "†state.rainy.error.code"), "no_sun")
        self.assertEqual(self.resolve(context, "†state.rainy"), {"error": error})
        self.assertIs(self.resolve(context, "†state.sunny"), Absent)
        history = self.history(context)
        self.assertEqual(len(history), 2)
        self.assert_stored_message(history[1], {
            "type": "data", "kind": "state", "data": {"rainy": {"error": error}},
            "_outputPath": "†state.rainy", "_outputMethod": "set",
            "_call": call, "_callId": call_id, "_seq": 2})

    def test_failure_with_one_alternative_appends_an_error_message(self):
        """SEMANTICS 7: no alternative to write the error to: an "error"
        message is appended, and no data message."""
        context = "errmsg"
        self.append(context, {"type": "data", "kind": "state", "data": {"a": 1}})
        call = {"_tool": "fail", "_outputPath": "†state.only", "message": "it broke"}
        call_id, outcome = self.call(context, call)
        error = {"code": "activity_failed", "message": "it broke"}
        self.assertEqual(outcome, {"call_id": call_id, "status": "error", "written": [],
                                   "seqs": [2], "error": error, "attempts": 1})
        history = self.history(context)
        self.assertEqual(len(history), 2)
        self.assert_stored_message(history[1], {"type": "error", "error": error,
                                                "_call": call, "_callId": call_id, "_seq": 2})
        self.assertIs(self.resolve(context, "†state.only"), Absent)
        self.assertEqual(self.resolve(context, "†state"), {"a": 1})

    def test_alternative_synonym_in_output_path(self):
        """SEMANTICS 5: <|> is accepted for || in output paths."""
        call = {"_tool": "value", "_outputPath": "†state.sunny <|> †state.rainy",
                "value": "wet", "branch": 1}
        call_id, outcome = self.call("syn1", call)
        self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 1,
                                   "written": ["†state.rainy"], "seqs": [1],
                                   "result": "wet", "attempts": 1})
        self.assertEqual(self.resolve("syn1", "†state.rainy"), "wet")

    def test_fan_out_synonym_in_output_path(self):
        """SEMANTICS 5: *> is accepted for && in output paths."""
        call = {"_tool": "value", "_outputPath": "†state.a *> †state.b", "value": 7}
        call_id, outcome = self.call("syn2", call)
        self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 0,
                                   "written": ["†state.a", "†state.b"], "seqs": [1, 2],
                                   "result": 7, "attempts": 1})
        self.assertEqual(self.resolve("syn2", "†state"), {"a": 7, "b": 7})

    def test_branch_out_of_range_ends_error(self):
        """SEMANTICS 5: the worker names a branch the output path does not
        have: the call fails, so its error goes to the last alternative."""
        context = "brrange"
        call = {"_tool": "value", "_outputPath": "†state.sunny || †state.rainy",
                "value": "x", "branch": 2}
        call_id, outcome = self.call(context, call)
        self.assertEqual(outcome["status"], "error", outcome)
        self.assertEqual(outcome["error"]["code"], "activity_failed", outcome)
        self.assertEqual({key: outcome[key] for key in ("branch", "written", "seqs", "attempts")},
                         {"branch": 1, "written": ["†state.rainy"], "seqs": [1], "attempts": 1})
        self.assertNotIn("result", outcome)
        self.assertEqual(self.resolve(context, "†state.rainy"), {"error": outcome["error"]})
        self.assertIs(self.resolve(context, "†state.sunny"), Absent)

    def test_fan_out_writes_every_target_in_order(self):
        """SEMANTICS 3: a fan-out makes one message per target, appended in
        the order written."""
        context = "fan"
        self.append(context, {"type": "data", "kind": "state", "data": {"c": 0}})
        call = {"_tool": "value", "_outputPath": "†state.a && †state.b", "value": {"v": 1}}
        call_id, outcome = self.call(context, call)
        self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 0,
                                   "written": ["†state.a", "†state.b"], "seqs": [2, 3],
                                   "result": {"v": 1}, "attempts": 1})
        self.assertEqual(self.resolve(context, "†state"), {"c": 0, "a": {"v": 1}, "b": {"v": 1}})
        history = self.history(context)
        self.assertEqual(len(history), 3)
        for message, target, seq in ((history[1], "a", 2), (history[2], "b", 3)):
            self.assert_stored_message(message, {
                "type": "data", "kind": "state", "data": {target: {"v": 1}},
                "_outputPath": "†state." + target, "_outputMethod": "set",
                "_call": call, "_callId": call_id, "_seq": seq})

    def test_fan_out_is_all_or_nothing(self):
        """SEMANTICS 3: every target is checked before any is appended: one
        type mismatch writes nothing to either target."""
        context = "fanbad"
        self.append(context, {"type": "data", "kind": "state", "data": {"s": "text"}})
        call = {"_tool": "value", "_outputPath": "†state.list && †state.s",
                "_outputMethod": "push", "value": 1}
        call_id, outcome = self.call(context, call)
        self.assertEqual(outcome["status"], "error", outcome)
        self.assertEqual(outcome["error"]["code"], "type_mismatch", outcome)
        self.assertEqual({key: outcome[key] for key in ("written", "seqs", "attempts")},
                         {"written": [], "seqs": [2], "attempts": 1})
        self.assertNotIn("branch", outcome)
        self.assertIs(self.resolve(context, "†state.list"), Absent)
        self.assertEqual(self.resolve(context, "†state"), {"s": "text"})
        history = self.history(context)
        self.assertEqual(len(history), 2)
        self.assert_stored_message(history[1], {"type": "error", "error": outcome["error"],
                                                "_call": call, "_callId": call_id, "_seq": 2})


# ---------------------------------------------------------------------------
#  Methods through calls


class MethodTest(BrokerCase):

    def output(self, context, path, value, method):
        call = {"_tool": "value", "_outputPath": path, "_outputMethod": method, "value": value}
        call_id, outcome = self.call(context, call)
        return call, call_id, outcome

    def assert_written(self, context, path, value, method, seq):
        call, call_id, outcome = self.output(context, path, value, method)
        self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 0,
                                   "written": [path], "seqs": [seq], "result": value,
                                   "attempts": 1})
        self.assertEqual(self.history(context)[-1]["_outputMethod"], method)

    def assert_refused_write(self, context, path, value, method, code):
        """The call ends error code; an error message is appended; nothing
        else changes."""
        before = self.resolve(context, "†state")
        seq = len(self.history(context)) + 1
        call, call_id, outcome = self.output(context, path, value, method)
        self.assertEqual(outcome["status"], "error", outcome)
        self.assertEqual(outcome["error"]["code"], code, outcome)
        self.assertEqual({key: outcome[key] for key in ("written", "seqs", "attempts")},
                         {"written": [], "seqs": [seq], "attempts": 1})
        self.assertEqual(self.resolve(context, "†state"), before)
        self.assert_stored_message(self.history(context)[-1], {
            "type": "error", "error": outcome["error"], "_call": call, "_callId": call_id,
            "_seq": seq})

    def test_push_through_a_call(self):
        context = "push"
        self.append(context, {"type": "data", "kind": "state", "data": {"items": [1]}})
        self.assert_written(context, "†state.items", {"n": 2}, "push", 2)
        self.assertEqual(self.resolve(context, "†state.items"), [1, {"n": 2}])
        self.assert_written(context, "†state.fresh", [3], "push", 3)
        self.assertEqual(self.resolve(context, "†state.fresh"), [[3]])

    def test_concat_through_a_call(self):
        context = "concat"
        self.append(context, {"type": "data", "kind": "state",
                              "data": {"items": [1, 2], "text": "ab"}})
        self.assert_written(context, "†state.items", [3, 4], "concat", 2)
        self.assert_written(context, "†state.text", "cd", "concat", 3)
        self.assert_written(context, "†state.fresh", [5], "concat", 4)
        self.assertEqual(self.resolve(context, "†state"),
                         {"items": [1, 2, 3, 4], "text": "abcd", "fresh": [5]})

    def test_merge_through_a_call(self):
        context = "merge"
        self.append(context, {"type": "data", "kind": "state",
                              "data": {"user": {"name": "Alex", "age": 3, "home": {"city": "P"}}}})
        self.assert_written(context, "†state.user", {"age": None, "home": {"zip": "75"}},
                            "merge", 2)
        self.assertEqual(self.resolve(context, "†state.user"),
                         {"name": "Alex", "home": {"city": "P", "zip": "75"}})

    def test_assign_through_a_call(self):
        context = "assign"
        self.append(context, {"type": "data", "kind": "state",
                              "data": {"user": {"a": 1, "b": {"x": 1}}}})
        self.assert_written(context, "†state.user", {"b": {"y": 2}, "c": None}, "assign", 2)
        self.assertEqual(self.resolve(context, "†state.user"),
                         {"a": 1, "b": {"y": 2}, "c": None})

    def test_erase_through_a_call(self):
        context = "erase"
        self.append(context, {"type": "data", "kind": "state",
                              "data": {"user": {"name": "Alex", "age": 3}}})
        self.assert_written(context, "†state.user.name", "ignored", "erase", 2)
        self.assertIs(self.resolve(context, "†state.user.name"), Absent)
        self.assertEqual(self.resolve(context, "†state.user"), {"age": 3})

    def test_type_mismatch_from_a_call(self):
        """SEMANTICS 3: a mismatched write is not appended; the call ends
        error type_mismatch."""
        context = "mismatch"
        self.append(context, {"type": "data", "kind": "state",
                              "data": {"user": {"a": 1}, "text": "ab", "list": [1]}})
        self.assert_refused_write(context, "†state.user", 5, "push", "type_mismatch")
        self.assert_refused_write(context, "†state.list", "x", "concat", "type_mismatch")
        self.assert_refused_write(context, "†state.text", [1], "concat", "type_mismatch")
        self.assert_refused_write(context, "†state.list", {"a": 1}, "assign", "type_mismatch")
        self.assert_refused_write(context, "†state.user", [1], "assign", "type_mismatch")

    def test_bad_path_from_a_call(self):
        """SEMANTICS 3: an index past the end is bad_path; so are "-" on a
        non-array and erasing an array element (briefing)."""
        context = "badpath"
        self.append(context, {"type": "data", "kind": "state",
                              "data": {"items": [1], "user": {"a": 1}}})
        self.assert_refused_write(context, "†state.items[5]", 2, "set", "bad_path")
        self.assert_refused_write(context, "†state.user.-", 2, "set", "bad_path")
        self.assert_refused_write(context, "†state.items[0]", None, "erase", "bad_path")
        #  index = length appends, "-" appends
        self.assert_written(context, "†state.items[1]", 2, "set", 5)
        self.assert_written(context, "†state.items.-", 3, "set", 6)
        self.assertEqual(self.resolve(context, "†state.items"), [1, 2, 3])


# ---------------------------------------------------------------------------
#  Instances, _id, VIEW


class InstanceTest(BrokerCase):

    def test_call_in_an_instance_reads_and_writes_in_it(self):
        """SEMANTICS 4 and 7: _instance: references resolve in it (the
        instance value overrides the global one), outputs are written in it."""
        context = "inst"
        self.append(context, {"type": "data", "kind": "state",
                              "data": {"city": "Paris", "unit": "C"}})
        self.append(context, {"type": "data", "kind": "state", "_instance": "a",
                              "data": {"city": "Lyon"}})
        call = {"_tool": "echo", "_instance": "a", "_outputPath": "†state.report",
                "city": "†state.city", "unit": "†state.unit"}
        call_id, outcome = self.call(context, call)
        self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 0,
                                   "written": ["†state.report"], "seqs": [3],
                                   "result": {"city": "Lyon", "unit": "C"}, "attempts": 1})
        self.assertEqual(self.tasks_of(self.worker, call_id)[0][3]["instance"], "a")
        self.assertEqual(self.resolve(context, "†state.report", "a"),
                         {"city": "Lyon", "unit": "C"})
        self.assertIs(self.resolve(context, "†state.report"), Absent)
        self.assertIs(self.resolve(context, "†state.report", "b"), Absent)
        self.assertEqual(self.resolve(context, "†state.city"), "Paris")
        self.assertEqual(self.resolve(context, "†state.city", "a"), "Lyon")
        self.assert_stored_message(self.history(context)[2], {
            "type": "data", "kind": "state", "_instance": "a",
            "data": {"report": {"city": "Lyon", "unit": "C"}},
            "_outputPath": "†state.report", "_outputMethod": "set",
            "_call": call, "_callId": call_id, "_seq": 3})
        #  The same call without _instance reads the global value
        call_id, outcome = self.call(context, {"_tool": "echo", "_outputPath": "†state.global",
                                               "city": "†state.city"})
        self.assertEqual(outcome["result"], {"city": "Paris"})


class IdempotencyTest(BrokerCase):

    def test_same_id_after_the_first_ended_is_not_run_again(self):
        """SEMANTICS 7: answered ACCEPTED with the first call's id, then
        that call's DONE at once."""
        context = "idem"
        call = {"_tool": "value", "_id": "k1", "_outputPath": "†state.r", "value": 1}
        first_id, first = self.call(context, call)
        rid, second_id = self.submit(context, call)
        self.assertEqual(second_id, first_id)
        self.assertEqual(self.done(rid, first_id), first)
        self.assertEqual(len(self.worker.tasks), 1, self.worker.tasks)
        self.assertEqual(len(self.history(context)), 1)

    def test_same_id_while_the_first_is_live_gets_done_when_it_ends(self):
        context = "idem-live"
        call = {"_tool": "later", "_id": "k2", "_outputPath": "†state.r", "value": 2}
        rid1, first_id = self.submit(context, call)
        rid2, second_id = self.submit(context, call)
        self.assertEqual(second_id, first_id)
        self.assertEqual(self.client.status(first_id)["state"], "queued")
        later = self.start_worker(["later"], lambda activity, params, meta: params["value"],
                                  "later")
        first = self.done(rid1, first_id)
        second = self.done(rid2, first_id)
        self.assertEqual(first, {"call_id": first_id, "status": "ok", "branch": 0,
                                 "written": ["†state.r"], "seqs": [1], "result": 2,
                                 "attempts": 1})
        self.assertEqual(second, first)
        self.assertEqual(len(later.tasks), 1, later.tasks)
        self.assertEqual(len(self.history(context)), 1)

    def assert_no_done(self, *rids):
        """No DONE came for rids: one would be on the socket before the
        PONG of a PING sent after them."""
        self.assertEqual(self.client.request("PING"), ["PONG"])
        done = [(rid, frames) for rid, frames in self.client.pending
                if rid in rids and frames[0] == "DONE"]
        self.assertEqual(done, [])

    def test_a_repeat_with_an_output_path_gets_the_done_of_a_fire_and_forget_call(self):
        """SEMANTICS 7: DONE follows for a repeat with an output path (its
        client waits for one), though the call it repeats had none."""
        context = "idem-ff"
        ff = {"_tool": "later-ff", "_id": "k5", "value": 5}
        with_path = dict(ff, _outputPath="†state.r")
        rid1, first_id = self.submit(context, ff)
        rid2, second_id = self.submit(context, with_path)
        self.assertEqual(second_id, first_id)
        later = self.start_worker(["later-ff"], lambda activity, params, meta: params["value"],
                                  "later-ff")
        live = self.done(rid2, first_id)
        self.assertEqual(live["call_id"], first_id)
        self.assertEqual(live["status"], "ok")
        self.assertEqual(self.client.status(first_id)["outcome"], live)
        #  Ended: the repeat's DONE comes at once
        rid3, third_id = self.submit(context, with_path)
        self.assertEqual(third_id, first_id)
        self.assertEqual(self.done(rid3, first_id), live)
        #  Neither the call itself nor a repeat without an output path
        rid4, _ = self.submit(context, ff)
        self.assert_no_done(rid1, rid4)
        self.assertEqual(len(later.tasks), 1, later.tasks)
        self.assertEqual(self.history(context), [])

    def test_a_repeat_without_an_output_path_gets_no_done(self):
        """Its client waits for none: a DONE would be a reply it never
        asked for."""
        context = "idem-no-path"
        call = {"_tool": "later-np", "_id": "k6", "_outputPath": "†state.r", "value": 6}
        ff = {"_tool": "later-np", "_id": "k6", "value": 6}
        rid1, first_id = self.submit(context, call)
        rid2, second_id = self.submit(context, ff)
        self.assertEqual(second_id, first_id)
        later = self.start_worker(["later-np"], lambda activity, params, meta: params["value"],
                                  "later-np")
        self.assertEqual(self.done(rid1, first_id)["result"], 6)
        rid3, third_id = self.submit(context, ff)
        self.assertEqual(third_id, first_id)
        self.assert_no_done(rid2, rid3)
        self.assertEqual(len(later.tasks), 1, later.tasks)

    def test_same_id_in_another_context_is_another_call(self):
        call = {"_tool": "value", "_id": "k3", "_outputPath": "†state.r", "value": 3}
        first_id, first = self.call("idem-a", call)
        second_id, second = self.call("idem-b", call)
        self.assertNotEqual(second_id, first_id)
        self.assertEqual(first["status"], "ok")
        self.assertEqual(second, {"call_id": second_id, "status": "ok", "branch": 0,
                                  "written": ["†state.r"], "seqs": [1], "result": 3,
                                  "attempts": 1})
        self.assertEqual(len(self.worker.tasks), 2)

    def test_same_id_in_a_plan_and_after_it(self):
        """A PLAN's entry repeating an earlier entry's _id gets its id in
        ACCEPTED and no call of its own; a later PLAN repeating it after
        it ended gets its id and its DONE."""
        context = "idem-plan"
        call = {"_tool": "value", "_id": "k4", "_outputPath": "†state.r", "value": 4}
        other = {"_tool": "value", "_outputPath": "†state.s", "value": 5}
        rid = self.client.send("PLAN", context, enc([call, other, call]))
        reply = self.client.wait(rid, timeout=20)
        self.assertEqual(reply[0], "ACCEPTED", reply)
        ids = json.loads(reply[1])
        self.assertEqual(len(ids), 3, ids)
        self.assertEqual(ids[2], ids[0])
        self.assertNotEqual(ids[1], ids[0])
        #  Two DONEs, one per call run, in either order
        outcomes = {}
        for _ in range(2):
            frames = self.client.wait(rid, "DONE", timeout=20)
            outcomes[frames[1]] = json.loads(frames[2])
        self.assertEqual(sorted(outcomes), sorted(ids[:2]))
        first = outcomes[ids[0]]
        self.assertEqual(first["result"], 4)
        rid = self.client.send("PLAN", context, enc([call]))
        reply = self.client.wait(rid, timeout=20)
        self.assertEqual(reply, ["ACCEPTED", json.dumps([ids[0]], separators=(",", ":"))])
        self.assertEqual(self.done(rid, ids[0]), first)
        self.assertEqual(len(self.history(context)), 2)


class ViewTest(BrokerCase):

    def build(self, context):
        self.append(context, {"type": "data", "kind": "user", "data": {"name": "Alex", "age": 30},
                              "description": "The user", "schema": {"type": "object"}})
        self.append(context, {"type": "data", "kind": "weather", "data": {"sky": "sunny"}})
        self.append(context, {"type": "text", "text": "not in the view"})
        self.append(context, {"type": "data", "kind": "user", "_instance": "a",
                              "data": {"name": "Bea"}, "description": "The user in a"})
        call_id, outcome = self.call(context, {"_tool": "value", "_outputPath": "†weather.temp",
                                               "value": 20})
        self.assertEqual(outcome["status"], "ok")

    def test_view_json(self):
        """SEMANTICS 6: one entry per identity in order of first appearance,
        metadata hidden."""
        self.build("view")
        expected = [
            {"type": "data", "kind": "user", "data": {"name": "Alex", "age": 30},
             "description": "The user", "schema": {"type": "object"}},
            {"type": "data", "kind": "weather", "data": {"sky": "sunny", "temp": 20}},
            {"type": "data", "kind": "user", "_instance": "a", "data": {"name": "Bea", "age": 30},
             "description": "The user in a"}]
        self.assertEqual(self.client.value("VIEW", "view"), expected)
        self.assertEqual(self.client.value("VIEW", "view", "json"), expected)

    def test_view_text(self):
        """SEMANTICS 6: the text rendering."""
        self.build("viewt")
        reply = self.client.request("VIEW", "viewt", "text")
        self.assertEqual(reply[0], "VALUE", reply)
        expected = ("## Data: \u00b6user\n"
                    "{\n  \"name\": \"Alex\",\n  \"age\": 30\n}\n"
                    "The user\n"
                    "Schema for \u00b6user:\n"
                    "{\n  \"type\": \"object\"\n}\n"
                    "\n"
                    "## Data: \u00b6weather\n"
                    "{\n  \"sky\": \"sunny\",\n  \"temp\": 20\n}\n"
                    "\n"
                    "## Data: \u00b6user (instance a)\n"
                    "{\n  \"name\": \"Bea\",\n  \"age\": 30\n}\n"
                    "The user in a\n")
        self.assertEqual(reply[1], expected)

    def test_view_of_unknown_context_is_not_found(self):
        self.refuse("not_found", "VIEW", "nowhere", contexts=["nowhere"])

    def test_view_format_xml_is_bad_argument(self):
        self.build("viewx")
        self.refuse("bad_argument", "VIEW", "viewx", "xml", contexts=["viewx"])


if __name__ == "__main__":
    unittest.main()
