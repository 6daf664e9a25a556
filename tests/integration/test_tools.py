"""Activities as tools (PROTOCOL.md section 2.1): workers declare tools in
READY (a params JSON Schema, an output path prescribed or constrained, a
description); actd refuses a bad declaration with DISCONNECT, checks
every CALL and PLAN at submit (bad_call; params holding references are
refused when no value of theirs would make them valid) and after
resolution at dispatch (an error outcome bad_params), serves TOOLS, and with
server/strict_activities refuses calls to activities nobody named
(unknown_activity). Also actd-exec declaring a tool from its flags (which
goes through the C worker library's act_worker_declare).
"""

import json
import os
import unittest

import zmq

from harness import DAGGER, Actd, Worker, actd_with_config, wait_for
from test_exec import Exec

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
    },
    "required": ["city"],
    "additionalProperties": False,
}


def ref(text):
    return DAGGER + text


class ToolWorker(Worker):
    """A harness worker whose READY declares tools; it answers its params."""

    def __init__(self, endpoint, activities, tools, **kwargs):
        super().__init__(endpoint, activities, lambda activity, params, meta: params, **kwargs)
        self.tools = tools

    def _ready(self, socket):
        socket.send_multipart([b"ACTW01", b"READY", json.dumps(
            {"activities": self.activities, "capacity": self.capacity,
             "name": self.name, "lang": "python-test", "tools": self.tools}).encode()])
        self.ready.set()


def ready_reply(endpoint, body, timeout=10.0):
    """Send one READY with body from a raw DEALER; the broker's first reply
    frames (DISCONNECT and its reason, or a HEARTBEAT), or None."""
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(endpoint)
    try:
        socket.send_multipart([b"ACTW01", b"READY", json.dumps(body).encode()])
        if not socket.poll(int(timeout * 1000)):
            return None
        return [frame.decode() for frame in socket.recv_multipart()[1:]]
    finally:
        socket.close(0)


class ToolsTest(unittest.TestCase):

    def setUp(self):
        self.actd = Actd().start()
        self.client = self.actd.client()
        self.workers = []

    def tearDown(self):
        for worker in self.workers:
            worker.stop()
        self.client.close()
        self.actd.finish()

    def worker(self, activities, tools, **kwargs):
        worker = ToolWorker(self.actd.worker_endpoint, activities, tools, **kwargs)
        worker.start()
        self.workers.append(worker)
        worker.ready.wait(5)
        name = activities[0]
        wait_for(lambda: self.client.value("TOOLS", name).get(name, {}).get("workers", 0)
                 >= sum(1 for w in self.workers if name in w.activities and not w.stopping),
                 "the worker of %s to join" % name)
        return worker

    def refused(self, command, *args):
        reply = self.client.request(command, *args)
        self.assertEqual(reply[0], "ERROR", reply)
        return reply[1], reply[2]

    def done(self, context, call):
        """CALL and its DONE (the call may have its output path from its tool)."""
        rid = self.client.send("CALL", context, call)
        accepted = self.client.wait(rid)
        self.assertEqual(accepted[0], "ACCEPTED", accepted)
        done = self.client.wait(rid, "DONE", timeout=20)
        return json.loads(done[2])

    def test_params_checked_at_submit(self):
        worker = self.worker(["weather"], {"weather": {"description": "Forecast",
                                                       "params": WEATHER}})
        code, message = self.refused("CALL", "c1", {"_tool": "weather", "city": 5,
                                                   "_outputPath": ref("w")})
        self.assertEqual(code, "bad_call")
        self.assertIn("/city", message)
        self.assertIn("type", message)
        code, message = self.refused("CALL", "c1", {"_tool": "weather", "days": 3})
        self.assertEqual((code, "required" in message), ("bad_call", True), message)
        code, message = self.refused("CALL", "c1", {"_tool": "weather", "city": "Oslo",
                                                   "days": 20})
        self.assertIn("/days", message)
        self.assertIn("maximum", message)
        code, message = self.refused("CALL", "c1", {"_tool": "weather", "city": "Oslo",
                                                   "extra": 1})
        self.assertIn("/extra", message)
        self.assertIn("additionalProperties", message)
        #  A PLAN is refused whole, naming the entry
        code, message = self.refused("PLAN", "c1", [
            {"_tool": "weather", "city": "Oslo", "_outputPath": ref("a")},
            {"_tool": "weather", "city": ""}])
        self.assertEqual(code, "bad_call")
        self.assertIn("call 1", message)
        self.assertIn("minLength", message)
        self.assertEqual(self.refused("VIEW", "c1")[0], "not_found")
        #  Meta-properties are not params; an escaped literal is a string
        outcome = self.done("c1", {"_tool": "weather", "city": DAGGER + DAGGER + "x",
                                   "days": 2, "_outputPath": ref("w"), "_mine": True})
        self.assertEqual(outcome["status"], "ok", outcome)
        self.assertEqual(self.client.resolve("c1", ref("w")), {"city": DAGGER + "x", "days": 2})
        self.assertEqual(len(worker.tasks), 1)

    def test_params_checked_at_dispatch(self):
        worker = self.worker(["weather"], {"weather": {"params": WEATHER}})
        self.assertEqual(self.client.request("APPEND", "c2", {"type": "data", "kind": "input",
                                                              "data": {"n": 5, "s": "Rome"}})[0],
                         "OK")
        #  The reference is unknown at submit: accepted, then checked resolved
        outcome = self.done("c2", {"_tool": "weather", "city": ref("input.n"),
                                   "_outputPath": ref("bad")})
        self.assertEqual(outcome["status"], "error", outcome)
        self.assertEqual(outcome["error"]["code"], "bad_params")
        self.assertIn("/city", outcome["error"]["message"])
        self.assertIn("type", outcome["error"]["message"])
        self.assertEqual(outcome["attempts"], 0)
        self.assertEqual(worker.tasks, [])
        #  Written like any error outcome: one alternative, so an error message
        errors = [m for m in self.client.value("HISTORY", "c2", "1", "100")
                  if m.get("type") == "error"]
        self.assertEqual([m["error"]["code"] for m in errors], ["bad_params"])
        self.assertEqual(errors[0]["_call"]["city"], ref("input.n"))
        outcome = self.done("c2", {"_tool": "weather", "city": ref("input.s"),
                                   "_outputPath": ref("good")})
        self.assertEqual(outcome["status"], "ok", outcome)
        self.assertEqual(self.client.resolve("c2", ref("good")), {"city": "Rome"})

    def test_params_with_references_checked_at_submit(self):
        """A call whose params hold references is refused at submit when no
        value of theirs would make it valid, naming the pointer and the
        keyword (PROTOCOL.md 2.1); one that some value would make valid is
        accepted and checked resolved at dispatch, as before."""
        loose = {"type": "object", "properties": {"city": {"type": "string"}}}
        worker = self.worker(["weather", "loose"], {"weather": {"params": WEATHER},
                                                    "loose": {"params": loose}})
        self.assertEqual(self.client.request("APPEND", "c3", {"type": "data", "kind": "in",
                                                              "data": {"n": 5, "s": "Rome"}})[0],
                         "OK")
        #  The audit's case: city 5 beside an unrelated reference
        code, message = self.refused("CALL", "c3", {"_tool": "loose", "city": 5,
                                                   "note": ref("in.n"), "_outputPath": ref("o")})
        self.assertEqual(code, "bad_call")
        self.assertIn("/city: type", message)
        code, message = self.refused("CALL", "c3", {"_tool": "weather", "city": 5,
                                                   "days": ref("in.n")})
        self.assertEqual((code, "/city: type" in message), ("bad_call", True), message)
        #  A member missing, or one not allowed, whatever the references are
        code, message = self.refused("CALL", "c3", {"_tool": "weather", "days": ref("in.n")})
        self.assertEqual((code, "required" in message), ("bad_call", True), message)
        code, message = self.refused("CALL", "c3", {"_tool": "weather", "city": ref("in.s"),
                                                   "extra": ref("in.n")})
        self.assertIn("/extra: additionalProperties", message)
        #  A PLAN is refused whole, naming the entry
        code, message = self.refused("PLAN", "c3", [
            {"_tool": "weather", "city": ref("in.s"), "_outputPath": ref("a")},
            {"_tool": "weather", "city": "", "days": ref("in.n")}])
        self.assertEqual(code, "bad_call")
        self.assertIn("call 1", message)
        self.assertIn("/city: minLength", message)
        self.assertEqual(worker.tasks, [])
        #  References where the values are checked: accepted, then checked
        #  resolved (a string city passes, a number does not)
        outcome = self.done("c3", {"_tool": "weather", "city": ref("in.s"), "days": ref("in.n"),
                                   "_outputPath": ref("good")})
        self.assertEqual(outcome["status"], "ok", outcome)
        self.assertEqual(self.client.resolve("c3", ref("good")), {"city": "Rome", "days": 5})
        outcome = self.done("c3", {"_tool": "loose", "city": ref("in.n"), "note": 1,
                                   "_outputPath": ref("bad")})
        self.assertEqual((outcome["status"], outcome["error"]["code"]), ("error", "bad_params"))
        self.assertIn("/city: type", outcome["error"]["message"])
        self.assertEqual(len(worker.tasks), 1)

    def test_prescribed_output_path(self):
        self.worker(["summarize"], {"summarize": {
            "outputPath": {"const": ref("state.user.summary")}}})
        code, message = self.refused("CALL", "c3", {"_tool": "summarize", "text": "x",
                                                   "_outputPath": ref("elsewhere")})
        self.assertEqual(code, "bad_call")
        self.assertIn("state.user.summary", message)
        #  None given: the call gets the prescribed one, so it has a DONE
        outcome = self.done("c3", {"_tool": "summarize", "text": "hello"})
        self.assertEqual(outcome["status"], "ok", outcome)
        self.assertEqual(self.client.resolve("c3", ref("state.user.summary")), {"text": "hello"})
        written = [m for m in self.client.value("HISTORY", "c3", "1", "100") if "_call" in m]
        self.assertEqual(written[0]["_call"]["_outputPath"], ref("state.user.summary"))
        #  The same one given is fine
        outcome = self.done("c3", {"_tool": "summarize", "text": "again",
                                   "_outputPath": ref("state.user.summary")})
        self.assertEqual(outcome["status"], "ok", outcome)

    def test_pattern_output_path(self):
        #  The whole _outputPath must match (PROTOCOL.md 2.1), though the
        #  pattern is not anchored: JSON Schema's "pattern" would search
        self.worker(["note"], {"note": {"outputPath": {"pattern": DAGGER + "notes\\.[a-z]+"}}})
        outcome = self.done("c4", {"_tool": "note", "v": 1, "_outputPath": ref("notes.abc")})
        self.assertEqual(outcome["status"], "ok", outcome)
        for path in (ref("other"), ref("notes.abc.def"), "x" + ref("notes.abc"),
                     ref("secrets.x") + " || " + ref("notes.abc"),
                     ref("notes.ab") + " || " + ref("admin.flag")):
            code, message = self.refused("CALL", "c4", {"_tool": "note",
                                                       "_outputPath": path})
            #  Not an output path at all: bad_reference, before any tool
            self.assertEqual(code, "bad_call" if path[0] == DAGGER else "bad_reference", path)
            if code == "bad_call":
                #  The message says what is checked: a whole match
                self.assertEqual(message, "tool note takes an \"_outputPath\" that matches "
                                 "'%snotes\\.[a-z]+' as a whole, not %s" % (DAGGER, path))
        #  Fire-and-forget has no _outputPath to match
        code, message = self.refused("CALL", "c4", {"_tool": "note"})
        self.assertEqual(code, "bad_call")
        self.assertIn("(the call has none)", message)

    def test_bad_declarations_refused_at_ready(self):
        endpoint = self.actd.worker_endpoint
        cases = [
            ({"bad": {"params": {"type": "objectx"}}}, "params"),
            ({"bad": {"params": {"type": "object", "contains": {}}}}, "not supported"),
            ({"bad": {"params": {"type": "object", "propertyNames": {}}}}, "propertyNames"),
            ({"bad": {"outputPath": {"pattern": "(unclosed"}}}, "pattern"),
            ({"bad": {"outputPath": {"const": "not a path"}}}, "const"),
            ({"bad": {"outputPath": {"const": ref("a"), "pattern": "x"}}}, "outputPath"),
            ({"bad": "a string"}, "object"),
            ({"bad": {"parameters": {}}}, "parameters"),
            ({"other": {"description": "x"}}, "other"),
            (["bad"], "tools"),
        ]
        for tools, reason in cases:
            reply = ready_reply(endpoint, {"activities": ["bad"], "tools": tools})
            self.assertIsNotNone(reply, tools)
            self.assertEqual(reply[0], "DISCONNECT", (tools, reply))
            self.assertIn(reason, reply[1], tools)
        #  Nothing was registered by a refused READY
        self.assertEqual(self.client.value("TOOLS"), {})
        self.assertEqual(self.client.value("STATS")["workers"], [])
        self.assertIn("not supported", self.actd.log())

    def test_latest_ready_wins_and_is_logged(self):
        self.worker(["echo"], {"echo": {"description": "one",
                                        "params": {"type": "object", "required": ["a"]}}})
        self.assertEqual(self.refused("CALL", "c5", {"_tool": "echo"})[0], "bad_call")
        second = {"description": "two", "params": {"type": "object", "required": ["b"]}}
        self.worker(["echo"], {"echo": second})
        tools = self.client.value("TOOLS")
        self.assertEqual(tools, {"echo": dict(second, workers=2)})
        self.assertIn("tool echo: worker", self.actd.log())
        self.assertIn("the latest READY wins", self.actd.log())
        code, message = self.refused("CALL", "c5", {"_tool": "echo", "a": 1})
        self.assertIn("b", message)
        self.assertEqual(self.client.request("CALL", "c5", {"_tool": "echo", "b": 1})[0],
                         "ACCEPTED")

    def test_when_the_declarer_leaves_the_latest_connected_declaration_applies(self):
        one = {"description": "one", "params": {"type": "object", "required": ["a"]}}
        two = {"description": "two", "params": {"type": "object", "required": ["b"]}}
        first = self.worker(["echo"], {"echo": one}, name="first")
        self.worker(["echo"], {}, name="silent")      # serves echo, declares nothing
        last = self.worker(["echo"], {"echo": two}, name="last")
        self.assertEqual(self.client.value("TOOLS"), {"echo": dict(two, workers=3)})
        last.stop()
        self.workers.remove(last)
        wait_for(lambda: self.client.value("TOOLS")["echo"].get("workers") == 2,
                 "the last declarer to leave")
        #  The canary with the new schema left: the schema the workers that
        #  remain declared is the one calls are checked against again
        self.assertEqual(self.client.value("TOOLS"), {"echo": dict(one, workers=2)})
        self.assertIn("tool echo: worker last, whose READY declared it, left; the declaration "
                      "of worker first, the latest READY of those connected, applies again",
                      self.actd.log())
        self.assertIn("a", self.refused("CALL", "c6", {"_tool": "echo", "b": 1})[1])
        self.assertEqual(self.done("c6", {"_tool": "echo", "a": 1, "_outputPath": ref("x")})
                         ["status"], "ok")
        #  No connected worker declares it: the tool stays as the last READY
        #  left it
        first.stop()
        self.workers.remove(first)
        wait_for(lambda: self.client.value("TOOLS")["echo"].get("workers") == 1,
                 "the first declarer to leave")
        self.assertEqual(self.client.value("TOOLS"), {"echo": dict(one, workers=1)})

    def test_tools_listing(self):
        self.worker(["a", "b"], {"a": {"description": "A", "params": {"type": "object"}}},
                    capacity=2)
        mdp = zmq.Context.instance().socket(zmq.DEALER)
        mdp.setsockopt(zmq.LINGER, 0)
        mdp.connect(self.actd.worker_endpoint)
        mdp.send_multipart([b"MDPW02", b"\x01", b"legacy"])
        try:
            tools = wait_for(lambda: (lambda t: t if "legacy" in t else None)(
                self.client.value("TOOLS")), "the MDP worker to join")
            self.assertEqual(tools, {"a": {"description": "A", "params": {"type": "object"},
                                           "workers": 1},
                                     "b": {"workers": 1}, "legacy": {"workers": 1}})
            self.assertEqual(self.client.value("TOOLS", "a"),
                             {"a": {"description": "A", "params": {"type": "object"},
                                    "workers": 1}})
            self.assertEqual(self.client.value("TOOLS", "nothing"), {})
        finally:
            mdp.close(0)
        #  Workers gone, the activities and their tools are remembered
        for worker in self.workers:
            worker.stop()
        tools = wait_for(lambda: (lambda t: t if t["a"]["workers"] == 0 else None)(
            self.client.value("TOOLS")), "the worker to leave")
        self.assertEqual(tools["a"]["description"], "A")
        self.assertEqual(tools["b"], {"workers": 0})
        self.assertEqual(self.refused("TOOLS", "")[0], "bad_argument")

    def test_default_mode_waits_for_unknown_activities(self):
        reply = self.client.request("CALL", "c6", {"_tool": "nobody"})
        self.assertEqual(reply[0], "ACCEPTED", reply)
        self.assertEqual(self.client.status(reply[1])["state"], "queued")


class StrictTest(unittest.TestCase):

    def test_strict_activities(self):
        config = ("server\n    strict_activities = 1\n"
                  "activities\n    configured\n        timeout_ms = 5000\n")
        with actd_with_config(config) as actd:
            client = actd.client()
            reply = client.request("CALL", "s", {"_tool": "nobody"})
            self.assertEqual(reply[:2], ["ERROR", "unknown_activity"], reply)
            self.assertIn("nobody", reply[2])
            reply = client.request("PLAN", "s", [{"_tool": "configured"}, {"_tool": "nobody"}])
            self.assertEqual(reply[:2], ["ERROR", "unknown_activity"], reply)
            self.assertEqual(client.request("CALL", "s", {"_tool": "configured"})[0],
                             "ACCEPTED")
            #  Named by a READY since the start: known, even once its worker left
            worker = Worker(actd.worker_endpoint, ["later"], lambda a, p, m: p)
            worker.start()
            wait_for(lambda: client.value("TOOLS").get("later", {}).get("workers") == 1,
                     "the worker to join")
            self.assertEqual(client.request("CALL", "s", {"_tool": "later"})[0], "ACCEPTED")
            worker.stop()
            wait_for(lambda: client.value("TOOLS")["later"]["workers"] == 0,
                     "the worker to leave")
            self.assertEqual(client.request("CALL", "s", {"_tool": "later"})[0], "ACCEPTED")
            client.close()


class ExecToolTest(unittest.TestCase):

    def test_actd_exec_declares_a_tool(self):
        with Actd() as actd:
            client = actd.client()
            schema = os.path.join(actd.dir, "schema.json")
            with open(schema, "w") as handle:
                json.dump({"type": "object", "properties": {"n": {"type": "integer"}},
                           "required": ["n"]}, handle)
            with Exec(actd.worker_endpoint, "count", ["cat"], "--description", "Counts",
                      "--params-schema", schema,
                      "--output-path-const", ref("state.count")):
                tools = wait_for(lambda: (lambda t: t if t.get("count", {}).get("workers")
                                          else None)(client.value("TOOLS")),
                                 "actd-exec to join")
                self.assertEqual(tools["count"], {
                    "description": "Counts", "workers": 1,
                    "params": {"type": "object", "properties": {"n": {"type": "integer"}},
                               "required": ["n"]},
                    "outputPath": {"const": ref("state.count")}})
                reply = client.request("CALL", "e", {"_tool": "count", "n": "x"})
                self.assertEqual(reply[:2], ["ERROR", "bad_call"], reply)
                self.assertIn("/n", reply[2])
                rid = client.send("CALL", "e", {"_tool": "count", "n": 3})
                self.assertEqual(client.wait(rid)[0], "ACCEPTED")
                outcome = json.loads(client.wait(rid, "DONE", timeout=30)[2])
                self.assertEqual(outcome["status"], "ok", outcome)
                self.assertEqual(client.resolve("e", ref("state.count")), {"n": 3})
            client.close()


if __name__ == "__main__":
    unittest.main()
