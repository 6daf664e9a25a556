"""The actd broker: ACT/1 end to end.

Each test starts a real actd (harness.Actd: free ports, a temporary SQLite
store, heartbeat_ms 200) and speaks raw ACT/1 to it, then checks, when actd
stops, that it exits 0 on SIGTERM (under AddressSanitizer: no leak). The
tests follow PROTOCOL.md and SEMANTICS.md; each names the behaviour in the
spec's words and asserts the exact outcome.

Run: ACTD_BIN=build-x/bin/actd /usr/bin/python3 -m unittest -v test_broker
"""

import datetime
import json
import os
import random
import re
import subprocess
import time
import unittest

import harness

import zmq

from harness import Absent, Actd, Fail, NoAnswer, Worker, find_binary, wait_for

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
        actd's extra "store" and "clients" objects (commit figures, reply
        bytes held for clients, beyond PROTOCOL.md section 4), whose shapes
        are checked here."""
        stats = self.client.value("STATS")
        self.assertIsInstance(stats.pop("uptime_ms"), int)
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


class NumberTest(BrokerCase):
    """SEMANTICS 1: an integer that fits int64 stays an integer; any other
    number is a double, written back in the shortest form that reads back
    as the same double, in every reply, stored message and view. The texts
    are checked as sent, before any JSON parser sees them."""

    def test_reals_come_back_in_their_shortest_form(self):
        self.append("num", {"type": "data", "kind": "m", "data": {"a": 0.1, "b": 3.14}})
        call_id, outcome = self.call("num", {"_tool": "value", "_outputPath": "†m.c",
                                             "value": [0.1, 1e300, -0.0, 2 ** 63 - 1]})
        self.assertEqual(outcome["status"], "ok", outcome)
        self.assertEqual(self.client.request("RESOLVE", "num", "†m.a"), ["VALUE", "0.1"])
        self.assertEqual(self.client.request("RESOLVE", "num", "†m.b"), ["VALUE", "3.14"])
        self.assertEqual(self.client.request("RESOLVE", "num", "†m.c"),
                         ["VALUE", "[0.1,1e+300,-0.0,9223372036854775807]"])
        history = self.client.request("HISTORY", "num", "1", "10")
        self.assertEqual(history[0], "VALUE", history)
        self.assertIn('"data":{"a":0.1,"b":3.14}', history[1])
        self.assertIn('"data":{"c":[0.1,1e+300,-0.0,9223372036854775807]}', history[1])
        self.assertNotIn("0000000", history[1])
        view = self.client.request("VIEW", "num", "text")
        self.assertEqual(view, ["VALUE", "## Data: \u00b6m\n{\n  \"a\": 0.1,\n  \"b\": 3.14,\n"
                                         "  \"c\": [\n    0.1,\n    1e+300,\n    -0.0,\n"
                                         "    9223372036854775807\n  ]\n}\n"])
        self.assertIn('"data":{"a":0.1,"b":3.14,"c":[0.1,1e+300,-0.0,9223372036854775807]}',
                      self.client.request("VIEW", "num", "json")[1])

    def test_integer_beyond_int64_is_a_double(self):
        reply = self.client.request("APPEND", "big", b'{"type": "data", "kind": "m", '
                                    b'"data": {"big": 18446744073709551616, "small": -1}}')
        self.assertEqual(reply[0], "OK", reply)
        self.assertEqual(self.client.request("RESOLVE", "big", "†m"),
                         ["VALUE", '{"big":1.8446744073709552e+19,"small":-1}'])


class CompactWorker(Worker):
    """A worker that sends its results as act_json_dump writes JSON
    (compact, UTF-8 as itself), unlike harness.Worker's json.dumps."""

    def _answer(self, socket, task, activity, params, meta):
        socket.send_multipart([b"ACTW01", b"RESULT", task.encode(),
                               json.dumps(params, ensure_ascii=False,
                                          separators=(",", ":")).encode()])


def written(value):
    """value as act_json_dump writes it: compact, UTF-8 as itself, controls
    as \\u00XX in upper case, reals in their shortest form (as repr)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return re.sub(r"\\u00([0-9a-f]{2})", lambda match: "\\u00" + match.group(1).upper(), text)


class HistoryTextTest(BrokerCase):
    """HISTORY sends each stored message as act_json_dump writes it, also
    when the stored text is a worker's or a client's own bytes (spaces,
    \\u escapes, 1e300): built from the stored text when it already is
    that (act_json_is_dump), else read and written again."""

    DATA = {"s": "\u00e9\u2020/\"\\\b\f\n\r\t\u0001\u0010 \U0001F600",
            "r": [0.1, 1e300, -0.0, 1.5, 1e-7, 2 ** 63 - 1, -2 ** 63, 0],
            "n": {"a": {"b": [[], {}, {"c": None, "d": True, "e": False}]}}}

    def expect_history(self, context, count):
        reply = self.client.request("HISTORY", context, "1", "1000")
        self.assertEqual(reply[0], "VALUE", reply)
        messages = json.loads(reply[1])
        self.assertEqual(len(messages), count, reply)
        self.assertEqual(reply[1], "[" + ",".join(written(m) for m in messages) + "]")
        return reply[1], messages

    def test_stored_texts_come_back_as_written(self):
        data = written(self.DATA)
        self.assertIn("\\u0001\\u0010", data)
        self.assertIn("1e+300", data)
        #  APPEND: the stored text is written by actd
        self.append("h", {"type": "data", "kind": "m", "data": self.DATA})
        #  Outputs with _call: the worker's and the client's own texts,
        #  spaced and escaped as Python writes them
        call_id, outcome = self.call("h", {"_tool": "echo", "_outputPath": "†o.p",
                                           "v": self.DATA})
        self.assertEqual(outcome["status"], "ok", outcome)
        raw = json.dumps({"_tool": "echo", "_outputPath": "†o.q", "w": self.DATA}).encode()
        self.assertIn(b"\\u00e9", raw)
        rid = self.client.send("CALL", "h", raw)
        self.assertEqual(self.client.wait(rid)[0], "ACCEPTED")
        self.assertEqual(json.loads(self.client.wait(rid, "DONE", timeout=20)[2])["status"],
                         "ok")
        #  Outputs whose stored texts are as actd writes them
        self.run_worker(CompactWorker(self.actd.worker_endpoint, ["compact"], None,
                                      name="compact"))
        compact = written({"_tool": "compact", "_outputPath": "†o.r", "x": self.DATA})
        rid = self.client.send("CALL", "h", compact.encode())
        self.assertEqual(self.client.wait(rid)[0], "ACCEPTED")
        self.assertEqual(json.loads(self.client.wait(rid, "DONE", timeout=20)[2])["status"],
                         "ok")
        text, messages = self.expect_history("h", 4)
        self.assertEqual([m["_seq"] for m in messages], [1, 2, 3, 4])
        self.assertEqual(text.count('"data":' + data), 1)
        self.assertEqual(text.count('"v":' + data + "}"), 2)       # data and _call
        self.assertEqual(text.count('"w":' + data + "}"), 2)
        self.assertEqual(text.count('"x":' + data), 2)
        self.assertIn('"_call":' + compact, text)
        self.assertNotIn("\\u00e9", text)
        self.assertNotIn(": ", text.replace(data, ""))
        #  Pages from the middle give the same texts
        for start in range(1, 5):
            page = self.client.request("HISTORY", "h", str(start), "1")
            self.assertEqual(page, ["VALUE", "[" + written(messages[start - 1]) + "]"])


# ---------------------------------------------------------------------------
#  STATS and STATUS


class StatsTest(BrokerCase):
    standard = False

    def test_stats_shape_and_counts(self):
        """PROTOCOL 4: STATS counts what the test did."""
        self.start_worker(["value", "fail", "echo"], standard, "w1", capacity=2)
        self.start_worker(["hang"], lambda activity, params, meta: NoAnswer, "w2")
        workers = [{"name": "w1", "activities": ["value", "fail", "echo"], "capacity": 2,
                    "running": 0, "lang": "python-test"},
                   {"name": "w2", "activities": ["hang"], "capacity": 1, "running": 0,
                    "lang": "python-test"}]
        stats = self.stats()
        self.assertEqual(sorted(stats.pop("workers"), key=lambda worker: worker["name"]),
                         workers)
        self.assertEqual({name: self.latencies(stats, name)["total"]["count"]
                          for name in stats["activities"]},
                         {"value": 0, "fail": 0, "echo": 0, "hang": 0})
        self.assertEqual(stats, {
            "contexts": 0, "messages": 0, "deleted": 0,
            "calls": {"accepted": 0, "ok": 0, "error": 0, "timeout": 0, "skipped": 0,
                      "cancelled": 0, "running": 0, "queued": 0, "waiting": 0},
            "activities": {name: {"workers": 1, "queued": 0, "running": 0, "done": 0}
                           for name in ("value", "fail", "echo", "hang")}})
        self.append("s1", {"type": "data", "kind": "state", "data": {"a": 1}})
        self.assertEqual(self.call("s1", {"_tool": "value", "_outputPath": "†state.v",
                                          "value": 1})[1]["status"], "ok")
        self.assertEqual(self.call("s1", {"_tool": "fail", "_outputPath": "†state.f",
                                          "message": "no"})[1]["status"], "error")
        rid, fire = self.submit("s1", {"_tool": "echo", "p": 1})
        self.client.wait_status(fire, ("ok",))
        rid, hang = self.submit("s1", {"_tool": "hang", "_outputPath": "†state.h"})
        self.client.wait_status(hang, ("running",))
        self.submit("s1", {"_tool": "nobody", "_outputPath": "†state.n"})
        self.submit("s2", {"_tool": "nobody", "_outputPath": "†w.x"})
        rid, waiting = self.submit("s2", {"_tool": "echo", "_outputPath": "†w.y", "p": "†w.x"})
        self.assertEqual(self.client.status(waiting)["state"], "waiting")
        rid, cancelled = self.submit("s2", {"_tool": "nobody", "_outputPath": "†w.z"})
        self.assertEqual(self.client.request("CANCEL", cancelled), ["OK"])
        self.assertEqual(self.done(rid, cancelled)["status"], "cancelled")
        stats = self.stats()
        workers[1]["running"] = 1
        self.assertEqual(sorted(stats.pop("workers"), key=lambda worker: worker["name"]),
                         workers)
        self.outcomes = {}
        latency = {name: self.latencies(stats, name) for name in list(stats["activities"])}
        self.assertEqual(self.outcomes, {"value": {"ok": 1}, "fail": {"error": 1},
                                         "echo": {"ok": 1}, "hang": {}, "nobody": {"cancelled": 1}})
        #  Ended calls, accepted to the end; attempts dispatched; attempts over
        self.assertEqual({name: hist["total"]["count"] for name, hist in latency.items()},
                         {"value": 1, "fail": 1, "echo": 1, "hang": 0, "nobody": 1})
        self.assertEqual(latency["value"]["queue"]["count"], 1)
        self.assertEqual(latency["hang"]["queue"]["count"], 1)
        self.assertEqual(latency["hang"]["run"]["count"], 0)       # still running
        self.assertEqual(latency["nobody"]["queue"]["count"], 0)   # never dispatched
        self.assertEqual(stats, {
            "contexts": 2, "messages": 3, "deleted": 0,
            "calls": {"accepted": 8, "ok": 2, "error": 1, "timeout": 0, "skipped": 0,
                      "cancelled": 1, "running": 1, "queued": 2, "waiting": 1},
            "activities": {
                "value": {"workers": 1, "queued": 0, "running": 0, "done": 1},
                "fail": {"workers": 1, "queued": 0, "running": 0, "done": 1},
                "echo": {"workers": 1, "queued": 0, "running": 0, "done": 1},
                "hang": {"workers": 1, "queued": 0, "running": 1, "done": 0},
                "nobody": {"workers": 0, "queued": 2, "running": 0, "done": 1}}},
            "the echo call waiting for †w.x is waiting, not queued")
        #  Cancelling the running call ends it (its worker never answers)
        self.assertEqual(self.client.request("CANCEL", hang), ["OK"])
        self.client.wait_status(hang, ("cancelled",))
        stats = self.stats()
        self.assertEqual(stats["calls"], {"accepted": 8, "ok": 2, "error": 1, "timeout": 0,
                                          "skipped": 0, "cancelled": 2, "running": 0,
                                          "queued": 2, "waiting": 1})
        hang_latency = self.latencies(stats, "hang")
        self.assertEqual((hang_latency["run"]["count"], hang_latency["total"]["count"]), (1, 1))
        self.assertEqual(stats["activities"]["hang"],
                         {"workers": 1, "queued": 0, "running": 0, "done": 1})

    def latencies(self, stats, name):
        """Pop activity name's latency histograms from stats, after checking
        their shape: Prometheus-style cumulative buckets, the last one +Inf
        holding every sample."""
        latency = stats["activities"][name].pop("latency_ms")
        self.assertEqual(sorted(latency), ["queue", "run", "total"])
        #  The calls done, per outcome (popped too: checked by the caller
        #  through self.outcomes)
        outcomes = stats["activities"][name].pop("outcomes")
        self.assertEqual(sorted(outcomes), ["cancelled", "error", "ok", "skipped", "timeout"])
        self.assertEqual(sum(outcomes.values()), stats["activities"][name]["done"])
        if not hasattr(self, "outcomes"):
            self.outcomes = {}
        self.outcomes[name] = {key: n for key, n in outcomes.items() if n}
        for hist in latency.values():
            self.assertEqual(hist["le"][-1], "+Inf")
            self.assertEqual(len(hist["le"]), len(hist["counts"]))
            self.assertEqual(hist["counts"], sorted(hist["counts"]))
            self.assertEqual(hist["counts"][-1], hist["count"])
            self.assertGreaterEqual(hist["sum"], 0)
        return latency


class StatusTest(BrokerCase):

    def test_status_through_a_call_life(self):
        """PROTOCOL 1: STATUS of a waiting, queued, running and ended call."""
        context = "life"
        rid_a, a = self.submit(context, {"_tool": "later", "_outputPath": "†w.x", "v": 1})
        rid_b, b = self.submit(context, {"_tool": "value", "_outputPath": "†w.y",
                                         "value": "†w.x"})
        #  tool, output_path and references: additive (docs/protocol.md STATUS)
        head_a = {"call_id": a, "context": context, "tool": "later", "output_path": "†w.x"}
        head_b = {"call_id": b, "context": context, "tool": "value", "output_path": "†w.y",
                  "references": ["†w.x"]}
        self.assertEqual(self.client.status(a), dict(head_a, state="queued", attempts=0))
        self.assertEqual(self.client.status(b), dict(head_b, state="waiting", attempts=0,
                                                     waiting_on=["†w.x"]))
        later = self.run_worker(DeferredWorker(self.actd.worker_endpoint, ["later"], "later"))
        wait_for(lambda: later.tasks, "the task of call %s" % a, 20.0)
        self.assertEqual(self.client.status(a), dict(head_a, state="running", attempts=1))
        self.assertEqual(self.client.status(b)["state"], "waiting")
        later.send_result(later.tasks[0][0], 7)
        outcome_a = self.done(rid_a, a)
        outcome_b = self.done(rid_b, b)
        self.assertEqual(outcome_b["result"], 7)
        self.assertEqual(self.client.status(a), dict(head_a, state="ok", attempts=1,
                                                     outcome=outcome_a))
        self.assertEqual(self.client.status(b), dict(head_b, state="ok", attempts=1,
                                                     outcome=outcome_b))

    def test_status_of_unknown_call_is_not_found(self):
        self.refuse("not_found", "STATUS", "987654")
        self.refuse("not_found", "STATUS", "not-a-call")

    def test_cancel_of_an_ended_call_changes_nothing(self):
        context = "cancel-ended"
        call_id, outcome = self.call(context, {"_tool": "value", "_outputPath": "†s.x",
                                               "value": 1})
        before = self.snapshot([context]), self.client.status(call_id)
        self.assertEqual(self.client.request("CANCEL", call_id), ["OK"])
        self.assertEqual((self.snapshot([context]), self.client.status(call_id)), before)
        self.assertEqual(before[1]["outcome"], outcome)

    def test_cancel_of_a_queued_call_ends_it_cancelled(self):
        context = "cancel-queued"
        rid, call_id = self.submit(context, {"_tool": "nobody", "_outputPath": "†s.x"})
        self.assertEqual(self.client.request("CANCEL", call_id), ["OK"])
        outcome = self.done(rid, call_id)
        self.assertEqual(outcome["status"], "cancelled")
        self.assertEqual(outcome["error"]["code"], "cancelled")
        self.assertEqual({key: outcome[key] for key in ("written", "seqs", "attempts")},
                         {"written": [], "seqs": [], "attempts": 0})
        self.assertEqual(self.client.status(call_id)["state"], "cancelled")
        self.assertEqual(self.history(context), [])

    def test_cancel_of_unknown_call_is_not_found(self):
        self.refuse("not_found", "CANCEL", "987654")


# ---------------------------------------------------------------------------
#  Every error a client can trigger (PROTOCOL 3): ERROR code, nothing changes


class ErrorTest(BrokerCase):

    def setUp(self):
        super().setUp()
        self.kept = "kept"
        self.append(self.kept, {"type": "data", "kind": "k", "data": {"a": 1}})
        self.call(self.kept, {"_tool": "value", "_outputPath": "†k.b", "value": 2})

    def refuse(self, code, command, *args, contexts=(), request_id=None):
        return super().refuse(code, command, *args, contexts=[self.kept] + list(contexts),
                              request_id=request_id)

    def test_bad_frame(self):
        """Wrong number of frames; a request id that is not 1-255 bytes."""
        call = enc({"_tool": "value", "value": 1})
        self.refuse("bad_frame", "CALL", "new1", contexts=["new1"])
        self.refuse("bad_frame", "CALL", "new1", call, b"extra", contexts=["new1"])
        self.refuse("bad_frame", "APPEND", "new1", contexts=["new1"])
        self.refuse("bad_frame", "APPEND", "new1", enc({"type": "text"}), b"key", b"extra",
                    contexts=["new1"])
        self.refuse("bad_frame", "HISTORY", self.kept, "1")
        self.refuse("bad_frame", "RESOLVE", self.kept)
        self.refuse("bad_frame", "PING", "extra")
        self.refuse("bad_frame", "STATS", "extra")
        self.refuse("bad_frame", "STATUS")
        self.refuse("bad_frame", "PING", request_id="r" * 256)
        self.refuse("bad_frame", "CALL", "new1", call, request_id="q" * 256, contexts=["new1"])
        #  255 bytes is a good request id
        rid = self.client.send("PING", request_id="p" * 255)
        self.assertEqual(self.client.wait(rid), ["PONG"])

    def test_many_frames_are_read_to_the_end_and_refused(self):
        """A request of more frames than any command takes is refused as a
        wrong frame count with its true count; its last frames are not
        read as a next request (the next one is answered in turn)."""
        call = enc({"_tool": "value", "value": 1})
        reply = self.refuse("bad_frame", "CALL", "new1", call, *([b"x"] * 30),
                            contexts=["new1"])
        self.assertEqual(reply[2], "CALL takes 2 to 2 argument frames, not 32")
        rid = self.client.send("PING")
        self.assertEqual(self.client.wait(rid), ["PONG"])

    def test_empty_request_id_is_bad_frame(self):
        before = self.snapshot([self.kept])
        self.client.send_raw([b"ACTC01", b"PING", b""])
        self.assertTrue(self.client.socket.poll(10000), "no reply to an empty request id")
        frames = self.client.socket.recv_multipart()
        self.assertEqual(frames[:3], [b"ACTC01", b"ERROR", b""])
        self.assertEqual(frames[3], b"bad_frame")
        self.assertEqual(len(frames), 5)
        self.assertEqual(self.snapshot([self.kept]), before)

    def test_unknown_command(self):
        self.refuse("unknown_command", "FROB")
        self.refuse("unknown_command", "call", "new2", enc({"_tool": "value"}),
                    contexts=["new2"])

    def test_bad_json(self):
        self.refuse("bad_json", "CALL", "new3", b"{not json", contexts=["new3"])
        self.refuse("bad_json", "CALL", "new3", b'{"_tool": "value", "p": "\xff"}',
                    contexts=["new3"])
        self.refuse("bad_json", "APPEND", self.kept, b'{"type": "data", "data": "\xc3"}')
        self.refuse("bad_json", "APPEND", "new3", b'{"type": "text"} trailing',
                    contexts=["new3"])
        deep = "[" * 64 + "]" * 64           # 65 levels with the object around it
        self.refuse("bad_json", "CALL", "new3",
                    ('{"_tool": "value", "value": %s}' % deep).encode(), contexts=["new3"])
        self.refuse("bad_json", "APPEND", self.kept,
                    ('{"type": "data", "data": %s}' % deep).encode())
        self.refuse("bad_json", "PLAN", "new3", b"[{", contexts=["new3"])

    def test_json_nested_64_deep_is_accepted(self):
        deep = "[" * 63 + "]" * 63           # 64 levels with the object around it
        reply = self.client.request("APPEND", self.kept,
                                    ('{"type": "data", "kind": "deep", "data": %s}' % deep).encode())
        self.assertEqual(reply, ["OK", '{"seq":3}'])

    def test_bad_context(self):
        call = enc({"_tool": "value", "_outputPath": "†s.x", "value": 1})
        message = enc({"type": "text", "text": "hi"})
        self.refuse("bad_context", "CALL", "", call)
        self.refuse("bad_context", "CALL", "c" * 129, call, contexts=["c" * 128])
        self.refuse("bad_context", "APPEND", "c" * 129, message)
        self.refuse("bad_context", "APPEND", "bad context", message)
        self.refuse("bad_context", "CALL", "bad#context", call)
        self.refuse("bad_context", "CALL", "c\x00d", call)  # a NUL inside
        self.refuse("bad_context", "PLAN", "bad\u2020", enc([{"_tool": "value"}]))
        self.refuse("bad_context", "HISTORY", "", "1", "10")
        self.refuse("bad_context", "RESOLVE", "a b", "†k")
        self.refuse("bad_context", "VIEW", "c" * 129)
        #  128 bytes of the allowed alphabet is a good context id
        good = ("aZ09._:@/-" * 13)[:128]
        self.assertEqual(self.append(good, {"type": "text", "text": "hi"}), 1)

    def test_bad_call(self):
        self.refuse("bad_call", "CALL", "new4", b"[1]", contexts=["new4"])
        self.refuse("bad_call", "CALL", "new4", b"42", contexts=["new4"])
        self.refuse("bad_call", "CALL", "new4", b'"value"', contexts=["new4"])
        self.refuse("bad_call", "CALL", "new4", enc({"value": 1}), contexts=["new4"])
        self.refuse("bad_call", "CALL", "new4", enc({"_tool": 5}), contexts=["new4"])
        self.refuse("bad_call", "CALL", "new4", enc({"_tool": ""}), contexts=["new4"])
        self.refuse("bad_call", "CALL", "new4", enc({"_tool": "t" * 257}), contexts=["new4"])
        self.refuse("bad_call", "CALL", "new4", enc({"_tool": "value", "_timeout": -1}),
                    contexts=["new4"])
        self.refuse("bad_call", "CALL", "new4", enc({"_tool": "value", "_timeout": "5"}),
                    contexts=["new4"])
        self.refuse("bad_call", "CALL", "new4", enc({"_tool": "value", "_outputPath": 5}),
                    contexts=["new4"])
        self.refuse("bad_call", "CALL", "new4", enc({"_tool": "value", "_instance": 5}),
                    contexts=["new4"])
        self.refuse("bad_call", "CALL", "new4", enc({"_tool": "value", "_retry": 3}),
                    contexts=["new4"])
        self.refuse("bad_call", "PLAN", "new4", b"[]", contexts=["new4"])
        self.refuse("bad_call", "PLAN", "new4", enc({"_tool": "value"}), contexts=["new4"])
        #  A plan is all or none: a bad second call keeps the first out too
        self.refuse("bad_call", "PLAN", "new4",
                    enc([{"_tool": "value", "_outputPath": "†s.x", "value": 1}, {"value": 2}]),
                    contexts=["new4"])
        self.refuse("bad_call", "PLAN", self.kept,
                    enc([{"_tool": "value", "_outputPath": "†k.c", "value": 1}, {"_tool": 2}]))
        self.refuse("bad_call", "PLAN", "new4", enc([{"_tool": "brand-new"}, {"value": 2}]),
                    contexts=["new4"])

    def test_bad_reference(self):
        reply = self.refuse("bad_reference", "CALL", "new5",
                            enc({"_tool": "value", "value": "†state..x"}), contexts=["new5"])
        self.assertIn("†state..x", reply[2], "the message names the string")
        reply = self.refuse("bad_reference", "CALL", self.kept,
                            enc({"_tool": "value", "_outputPath": "†k.x",
                                 "value": {"deep": ["ok", "†"]}}))
        self.refuse("bad_reference", "CALL", "new5",
                    enc({"_tool": "value", "_outputPath": "†state.x ||", "value": 1}),
                    contexts=["new5"])
        self.refuse("bad_reference", "CALL", "new5",
                    enc({"_tool": "value", "_outputPath": "state.x", "value": 1}),
                    contexts=["new5"])
        self.refuse("bad_reference", "CALL", self.kept,
                    enc({"_tool": "value", "_outputPath": "†k.x && ", "value": 1}))
        self.refuse("bad_reference", "RESOLVE", self.kept, "†k..a")

    def test_bad_method(self):
        self.refuse("bad_method", "CALL", "new6",
                    enc({"_tool": "value", "_outputPath": "†s.x", "_outputMethod": "replace",
                         "value": 1}), contexts=["new6"])
        self.refuse("bad_method", "APPEND", self.kept,
                    enc({"type": "data", "kind": "k", "data": {"a": 2},
                         "_outputMethod": "replace"}))

    def test_bad_argument(self):
        self.refuse("bad_argument", "HISTORY", self.kept, "x1", "10")
        self.refuse("bad_argument", "HISTORY", self.kept, "-1", "10")
        self.refuse("bad_argument", "HISTORY", self.kept, "1", "1001")
        self.refuse("bad_argument", "HISTORY", self.kept, "1", "ten")
        self.refuse("bad_argument", "APPEND", "new7", enc({"data": {"a": 1}}), contexts=["new7"])
        self.refuse("bad_argument", "APPEND", self.kept, enc({"type": 5, "data": 1}))
        for field, value in (("_seq", 5), ("_date", "2026-11-22T08:00:00.123Z"),
                             ("_outputPath", "†k.a"), ("_call", {"_tool": "x"}),
                             ("_callId", "1")):
            self.refuse("bad_argument", "APPEND", self.kept,
                        enc({"type": "data", "kind": "k", "data": {"a": 3}, field: value}))
        self.refuse("bad_argument", "APPEND", self.kept, enc({"type": "data", "kind": "k"}))
        self.refuse("bad_argument", "APPEND", self.kept,
                    enc({"type": "data", "kind": "1bad", "data": 1}))
        self.refuse("bad_argument", "RESOLVE", self.kept, "†k.a", "")
        self.refuse("bad_argument", "RESOLVE", self.kept, "†k.a", "i" * 129)
        #  HISTORY with limit 1000 is good
        self.assertEqual(len(self.client.value("HISTORY", self.kept, "1", "1000")), 2)

    def test_type_mismatch_of_append(self):
        self.refuse("type_mismatch", "APPEND", self.kept,
                    enc({"type": "data", "kind": "k", "data": 5, "_outputMethod": "push"}))
        self.refuse("type_mismatch", "APPEND", self.kept,
                    enc({"type": "data", "kind": "k", "data": "s", "_outputMethod": "concat"}))

    def test_unresolved_reference(self):
        self.refuse("unresolved_reference", "CALL", self.kept,
                    enc({"_tool": "value", "_outputPath": "†k.c", "value": "†k.absent"}))
        self.refuse("unresolved_reference", "CALL", "new8",
                    enc({"_tool": "value", "_outputPath": "†s.c", "value": "†s.x"}),
                    contexts=["new8"])
        self.refuse("unresolved_reference", "CALL", "new8",
                    enc({"_tool": "never-seen", "value": "†s.x"}), contexts=["new8"])

    def test_not_found(self):
        self.refuse("not_found", "RESOLVE", self.kept, "†k.absent")
        self.refuse("not_found", "RESOLVE", self.kept, "†nokind")
        self.refuse("not_found", "RESOLVE", "nowhere", "†k", contexts=["nowhere"])
        self.refuse("not_found", "VIEW", "nowhere", contexts=["nowhere"])
        self.refuse("not_found", "HISTORY", "nowhere", "1", "10", contexts=["nowhere"])
        self.refuse("not_found", "STATUS", "424242")
        self.refuse("not_found", "CANCEL", "424242")


class LimitTest(BrokerCase):
    """too_large and busy, with a small max_message_bytes and max_queue."""

    config = ("server\n"
              "    max_message_bytes = 4096\n"
              "activities\n"
              "    slowq\n"
              "        max_queue = 2\n")

    def test_frame_over_max_message_bytes_is_too_large(self):
        self.append("big", {"type": "text", "text": "hi"})
        call = enc({"_tool": "value", "_outputPath": "†s.x", "value": "a" * 5000})
        self.refuse("too_large", "CALL", "big2", call, contexts=["big", "big2"])
        self.refuse("too_large", "CALL", "big", call, contexts=["big"])
        #  4097 bytes is over, 4096 is not
        base = enc({"type": "text", "text": ""})
        padded = enc({"type": "text", "text": "a" * (4097 - len(base))})
        self.assertEqual(len(padded), 4097)
        self.refuse("too_large", "APPEND", "big", padded, contexts=["big"])
        self.refuse("too_large", "PLAN", "big", enc([json.loads(call)]), contexts=["big"])
        padded = enc({"type": "text", "text": "a" * (4096 - len(base))})
        self.assertEqual(len(padded), 4096)
        reply = self.client.request("APPEND", "big", padded)
        self.assertEqual(reply, ["OK", '{"seq":2}'])

    def test_full_queue_is_busy(self):
        """PROTOCOL 3: busy when the activity's queue is at max_queue."""
        for n in range(2):
            rid, call_id = self.submit("busy", {"_tool": "slowq", "_outputPath": "†s.x",
                                                "n": n})
            self.assertEqual(self.client.status(call_id)["state"], "queued")
        self.refuse("busy", "CALL", "busy", enc({"_tool": "slowq", "_outputPath": "†s.y"}),
                    contexts=["busy"])
        self.refuse("busy", "CALL", "busy-new", enc({"_tool": "slowq"}),
                    contexts=["busy", "busy-new"])
        self.refuse("busy", "PLAN", "busy-new",
                    enc([{"_tool": "value", "_outputPath": "†s.z", "value": 1},
                         {"_tool": "slowq"}]), contexts=["busy", "busy-new"])
        #  Other activities are not held up
        call_id, outcome = self.call("busy", {"_tool": "value", "_outputPath": "†s.v",
                                              "value": 5})
        self.assertEqual(outcome["status"], "ok")


# ---------------------------------------------------------------------------
#  Robustness: messages that cannot be answered; garbage


class DropTest(BrokerCase):

    def test_messages_without_request_id_are_dropped(self):
        """PROTOCOL 1: fewer than 3 frames, or a wrong header: logged and
        dropped; actd stays alive and nothing changes."""
        self.append("drop", {"type": "text", "text": "hi"})
        before = self.snapshot(["drop", "drop-new"])
        call = enc({"_tool": "value", "_outputPath": "†s.x", "value": 1})
        for frames in ([b"ACTC01"],
                       [b"ACTC01", b"PING"],
                       [b"ACTC01", b"CALL"],
                       [b""],
                       [b"ACTC02", b"PING", b"r1"],
                       [b"actc01", b"CALL", b"r2", b"drop-new", call],
                       [b"ACTW01", b"READY", enc({"activities": ["value"]})],
                       [b"", b"ACTC01", b"APPEND"],
                       [b"", b"", b"ACTC01", b"APPEND", b"r3", b"drop", enc({"type": "text"})],
                       [b"XX", b"APPEND", b"r4", b"drop", enc({"type": "text"})]):
            self.client.send_raw(frames)
        self.assertEqual(self.client.request("PING"), ["PONG"])
        self.assertEqual(self.client.pending, [], "a dropped message was answered")
        self.assertEqual(self.snapshot(["drop", "drop-new"]), before)


class ReqClientTest(BrokerCase):
    """PROTOCOL 1: a request that starts with an empty frame (the delimiter
    a REQ socket adds) is read as if it were absent, and every reply to it
    starts with an empty frame, so a plain REQ client works. A REQ socket
    takes one reply per request: after ACCEPTED it asks with STATUS."""

    def req(self):
        socket = zmq.Context.instance().socket(zmq.REQ)
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.RCVTIMEO, 20000)
        socket.connect(self.actd.client_endpoint)
        self.addCleanup(socket.close)
        return socket

    def ask(self, socket, *frames):
        socket.send_multipart([b"ACTC01"] + [f if isinstance(f, bytes) else f.encode()
                                             for f in frames])
        reply = socket.recv_multipart()
        self.assertEqual(reply[0], b"ACTC01", reply)
        return [f.decode() for f in reply[1:]]

    def test_ping_append_call_then_status(self):
        socket = self.req()
        self.assertEqual(self.ask(socket, "PING", "p1"), ["PONG", "p1"])
        self.assertEqual(self.ask(socket, "APPEND", "a1", "req",
                                  enc({"type": "data", "kind": "state", "data": {"n": 2}})),
                         ["OK", "a1", '{"seq":1}'])
        accepted = self.ask(socket, "CALL", "c1", "req", enc(
            {"_tool": "echo", "_outputPath": "†out.x", "n": "†state.n"}))
        self.assertEqual(accepted[:2], ["ACCEPTED", "c1"])
        call_id = accepted[2]
        deadline = time.time() + 20
        while True:
            reply = self.ask(socket, "STATUS", "s1", call_id)
            self.assertEqual(reply[:2], ["VALUE", "s1"])
            status = json.loads(reply[2])
            if status["state"] == "ok" or time.time() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(status["state"], "ok", status)
        self.assertEqual(status["outcome"]["result"], {"n": 2})
        #  No DONE came: the next reply is the next request's
        self.assertEqual(self.ask(socket, "PING", "p2"), ["PONG", "p2"])

    def test_errors_reach_a_req_client(self):
        socket = self.req()
        #  A stream cannot be read one reply per request
        self.assertEqual(self.ask(socket, "WATCH", "e0", "any", "1")[:3],
                         ["ERROR", "e0", "bad_argument"])
        self.assertEqual(self.ask(socket, "NOPE", "e1")[:3], ["ERROR", "e1", "unknown_command"])
        self.assertEqual(self.ask(socket, "RESOLVE", "e2", "no-such", "†a.b")[:3],
                         ["ERROR", "e2", "not_found"])


def random_json(rng, depth=0):
    """A random JSON value: calls, messages, references, junk."""
    strings = ["†g.x", "†g.items[0]", "††lit", "†", "†a..b", "†g.x || †g.y",
               "†g.a && †g.b", "†g.a <|> †g.b", "plain", "\u00e9\u2020", "-", "", "g-tool",
               "echo", "push", "merge", "erase", "data", "text", "bad kind"]
    keys = ["_tool", "_outputPath", "_outputMethod", "_instance", "_id", "_timeout",
            "_retry", "_seq", "type", "kind", "data", "value", "a", "_x", "activities",
            "capacity", "message", "code", "retryable"]
    pick = rng.randrange(10 if depth < 4 else 6)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.choice([0, 1, -1, 2 ** 62, 3.5, -1e300, 100000])
    if pick in (3, 4, 5):
        return rng.choice(strings)
    if pick in (6, 7):
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randrange(5))}


def random_frame(rng):
    pick = rng.randrange(8)
    if pick == 0:
        return rng.randbytes(rng.randrange(64))
    if pick == 1:
        return rng.choice([b"", b"1", b"0", b"1.1", b"2.1", b"-1", b"1001", b"x",
                           b"99999999999999999999", b"\xff\xfe", b"text", b"json",
                           b"[" * 100, b"{" * 3])
    if pick == 2:
        return rng.choice([b"g1", b"g2", b"g-3", b"", b"a b", b"g" * 129])
    if pick == 3:
        return json.dumps(random_json(rng)).encode()
    return enc(random_json(rng))


def random_call(rng):
    """A random call: often valid, sometimes not quite."""
    call = {"_tool": rng.choice(["echo", "echo", "g-tool", "", 5])}
    for key, values in (("_outputPath", ["†g.x", "†g.y || †g.z", "†g.a && †g.b", "†g.items.-",
                                         "†g.items[9]", "†g..", "g.x", 3]),
                        ("_outputMethod", ["set", "push", "concat", "merge", "assign", "erase",
                                           "bad"]),
                        ("_instance", ["i", "j", ""]),
                        ("_id", ["k1", "k2", ""]),
                        ("_timeout", [1, 50, 100000, -5, "x"]),
                        ("_retry", [{"max_attempts": 1}, {"max_attempts": 0}, 7])):
        if rng.randrange(3) == 0:
            call[key] = rng.choice(values)
    for _ in range(rng.randrange(3)):
        call[rng.choice(["p", "q", "r"])] = rng.choice(["†g.x", "†g.y || †g.x", "††lit",
                                                        random_json(rng)])
    return call


def random_message(rng):
    """A random message for APPEND."""
    message = {"type": rng.choice(["data", "data", "text", "error", 5])}
    for key, values in (("kind", ["g", "h", "1bad", ""]), ("_instance", ["i", "j", ""]),
                        ("_outputMethod", ["set", "push", "concat", "merge", "assign",
                                           "erase", "x"]),
                        ("description", ["d", 5]), ("schema", [{"type": "object"}]),
                        ("_seq", [1])):
        if rng.randrange(3) == 0:
            message[key] = rng.choice(values)
    if rng.randrange(5):
        message["data"] = random_json(rng)
    return message


def random_client_message(rng):
    pick = rng.randrange(8)
    if pick == 0:
        return [random_frame(rng) for _ in range(rng.randrange(1, 7))]
    if pick == 1:
        header = rng.choice([b"ACTC01"] * 6 + [b"ACTW01", b"", b"ACTC0"])
        command = rng.choice([c.encode() for c in COMMANDS] * 2 + [b"FROB", b"", b"call",
                                                                    rng.randbytes(5)])
        request = rng.choice([b"g", b"", b"r" * 255, b"r" * 256, rng.randbytes(8)])
        return [header, command, request] + [random_frame(rng) for _ in range(rng.randrange(5))]
    #  Well-formed frames with random contents, so requests reach the commands
    command = rng.choice(COMMANDS)
    context = rng.choice([b"g1", b"g2", b"g3", b"g1", b"", b"a b"])
    frames = [b"ACTC01", command.encode(), rng.randbytes(rng.randrange(1, 12))]
    if command == "CALL":
        frames += [context, enc(random_call(rng))]
    elif command == "PLAN":
        frames += [context, enc([random_call(rng) for _ in range(rng.randrange(4))])]
    elif command == "APPEND":
        frames += [context, enc(random_message(rng))]
    elif command == "RESOLVE":
        frames += [context, rng.choice(["†g", "†g.x", "†g.items[0]", "†g.y || †g.x",
                                        "†", "g"]).encode()]
        if rng.randrange(2):
            frames.append(rng.choice([b"i", b"j", b"", b"\xff"]))
    elif command == "VIEW":
        frames += [context] + ([rng.choice([b"json", b"text", b"xml"])]
                               if rng.randrange(2) else [])
    elif command == "HISTORY":
        frames += [context, rng.choice([b"0", b"1", b"3", b"x"]),
                   rng.choice([b"1", b"10", b"1000", b"1001"])]
    elif command in ("STATUS", "CANCEL"):
        frames.append(str(rng.randrange(1, 40)).encode())
    return frames


def random_worker_message(rng):
    pick = rng.randrange(6)
    if pick == 0:
        return [random_frame(rng) for _ in range(rng.randrange(1, 7))]
    if pick == 1:
        header = rng.choice([[b"MDPW02"], [b"", b"MDPW01"]])
        return header + [bytes([rng.randrange(8)])] + \
            [random_frame(rng) for _ in range(rng.randrange(4))]
    command = rng.choice([b"READY", b"READY", b"RESULT", b"FAIL", b"PROGRESS",
                          b"HEARTBEAT", b"DISCONNECT", b"TASK", b"FROB"])
    if command == b"READY" and rng.randrange(2):
        body = {"activities": rng.choice([["g-tool"], ["g-other", "g-tool"], [], [5]]),
                "capacity": rng.choice([1, 2, 0, -1, "x"]), "name": "garbage"}
        return [b"ACTW01", command, enc(body)]
    if command in (b"RESULT", b"FAIL", b"PROGRESS") and rng.randrange(2):
        task = ("%d.%d" % (rng.randrange(1, 40), rng.randrange(1, 3))).encode()
        body = enc(random_json(rng)) if command != b"FAIL" else \
            enc({"message": "m", "code": rng.choice(["c", 5]), "retryable": rng.randrange(2) == 0})
        extra = [rng.choice([b"0", b"1", b"7", b"x"])] if command == b"RESULT" and \
            rng.randrange(2) else []
        return [b"ACTW01", command, task, body] + extra
    return [b"ACTW01", command] + [random_frame(rng) for _ in range(rng.randrange(4))]


class GarbageTest(BrokerCase):
    standard = False

    def test_garbage_on_both_sockets(self):
        """PROTOCOL 3 and 2: random messages on the client and the worker
        socket change nothing a test made, and actd keeps working."""
        echo = self.start_worker(["echo"], lambda activity, params, meta: params, "echo")
        kept = ["keep-1", "keep-2"]
        self.append("keep-1", {"type": "data", "kind": "g", "data": {"x": 1, "items": [1]}})
        self.append("keep-1", {"type": "data", "kind": "g", "_instance": "i",
                               "data": {"x": 2}})
        self.call("keep-1", {"_tool": "echo", "_outputPath": "†g.y", "v": "†g.x"})
        self.append("keep-2", {"type": "text", "text": "hello"})
        before = {context: (self.history(context), self.client.value("VIEW", context))
                  for context in kept}

        rng = random.Random(20261122)
        context = zmq.Context.instance()
        clients = [context.socket(zmq.DEALER) for _ in range(4)]
        workers = [context.socket(zmq.DEALER) for _ in range(4)]
        try:
            for socket in clients:
                socket.setsockopt(zmq.LINGER, 0)
                socket.connect(self.actd.client_endpoint)
            for socket in workers:
                socket.setsockopt(zmq.LINGER, 0)
                socket.connect(self.actd.worker_endpoint)
            for _ in range(300):
                rng.choice(clients).send_multipart(random_client_message(rng))
                rng.choice(workers).send_multipart(random_worker_message(rng))
            #  Every garbage client's messages are handled once its PING
            #  is answered (one connection keeps its order)
            for socket in clients:
                socket.send_multipart([b"ACTC01", b"PING", b"sync-end"])
                deadline = time.time() + 30
                while True:
                    self.assertTrue(socket.poll(int(max(0, deadline - time.time()) * 1000)),
                                    "no PONG on a garbage client socket")
                    frames = socket.recv_multipart()
                    if frames[1:3] == [b"PONG", b"sync-end"]:
                        break
            #  Likewise each garbage worker: it starts anew (DISCONNECT, then
            #  READY for its own activity); its TASK proves actd got there
            for index, socket in enumerate(workers):
                name = "sync-%d" % index
                rid, call_id = self.submit("sync", {"_tool": name})
                socket.send_multipart([b"ACTW01", b"DISCONNECT"])
                socket.send_multipart([b"ACTW01", b"READY", enc({"activities": [name]})])
                deadline = time.time() + 30
                while True:
                    self.assertTrue(socket.poll(int(max(0, deadline - time.time()) * 1000)),
                                    "no TASK on garbage worker %d" % index)
                    frames = socket.recv_multipart()
                    if frames[:2] == [b"ACTW01", b"TASK"] and frames[3] == name.encode():
                        break           # (a TASK of its garbage life may come first)
                socket.send_multipart([b"ACTW01", b"RESULT", frames[2], b"null"])
                socket.send_multipart([b"ACTW01", b"DISCONNECT"])
                self.client.wait_status(call_id, ("ok",))
        finally:
            for socket in clients + workers:
                socket.close(0)

        self.assertEqual(self.client.request("PING"), ["PONG"])
        after = {context: (self.history(context), self.client.value("VIEW", context))
                 for context in kept}
        self.assertEqual(after, before)
        call = {"_tool": "echo", "_outputPath": "†g.z", "v": "†g.x"}
        call_id, outcome = self.call("keep-1", call)
        self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 0,
                                   "written": ["†g.z"], "seqs": [4], "result": {"v": 1},
                                   "attempts": 1})
        self.assertEqual(self.resolve("keep-1", "†g.z"), {"v": 1})
        self.assertEqual(self.tasks_of(echo, call_id)[0][2], {"v": 1})


# ---------------------------------------------------------------------------
#  The C example worker


class ExampleWorkerTest(BrokerCase):
    standard = False

    def test_c_example_worker_serves_upper_and_weather(self):
        """build/bin/actd-example-worker --endpoint EP: upper, echo, weather."""
        command = [find_binary("actd-example-worker"), "--endpoint", self.actd.worker_endpoint]
        log = open(os.path.join(self.actd.dir, "example-worker.log"), "w")
        self.addCleanup(log.close)
        process = subprocess.Popen(command, stdout=log, stderr=log)

        self.addCleanup(harness.end_process, process)
        wait_for(lambda: any("upper" in worker["activities"]
                             for worker in self.stats()["workers"]),
                 "the example worker to register", 20.0)

        call_id, outcome = self.call("example", {"_tool": "upper", "_outputPath": "†state.shout",
                                                 "text": "hello"})
        self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 0,
                                   "written": ["†state.shout"], "seqs": [1], "result": "HELLO",
                                   "attempts": 1})
        self.assertEqual(self.resolve("example", "†state.shout"), "HELLO")

        call_id, outcome = self.call("example", {"_tool": "echo", "_outputPath": "†state.echo",
                                                 "a": [1, {"b": "c"}]})
        self.assertEqual(outcome["result"], {"a": [1, {"b": "c"}]})

        path = "†state.sunny || †state.rainy"
        call_id, outcome = self.call("example", {"_tool": "weather", "_outputPath": path,
                                                 "city": "Oslo"})
        self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 0,
                                   "written": ["†state.sunny"], "seqs": [3],
                                   "result": {"city": "Oslo", "sky": "sunny"}, "attempts": 1})
        call_id, outcome = self.call("example", {"_tool": "weather", "_outputPath": path,
                                                 "city": "Paris"})
        self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 1,
                                   "written": ["†state.rainy"], "seqs": [4],
                                   "result": {"city": "Paris", "sky": "rainy"}, "attempts": 1})
        self.assertEqual(self.resolve("example", "†state"), {
            "shout": "HELLO", "echo": {"a": [1, {"b": "c"}]},
            "sunny": {"city": "Oslo", "sky": "sunny"},
            "rainy": {"city": "Paris", "sky": "rainy"}})


if __name__ == "__main__":
    unittest.main()
