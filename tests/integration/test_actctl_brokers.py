"""actctl against brokers that are not one plain actd (actctl(1)): the C
client library's requests to several brokers, its errors from a broker
that breaks the protocol (both seen by fake brokers), and `actctl tools`,
the registry of tools that workers declare, in the shapes of the model
APIs. Split from test_actctl.py, whose helpers it uses.
"""

import json
import signal
import subprocess
import threading
import unittest

import zmq

from harness import Worker, actd_with_config, free_port, wait_for
from test_actctl import ACTCTL, DAGGER, ActdTest, actctl


class ToolsWorker(Worker):
    """A raw worker whose READY declares tools (PROTOCOL.md section 2.1)."""

    def __init__(self, endpoint, tools, **kwargs):
        super().__init__(endpoint, sorted(tools), lambda activity, params, meta: params,
                         **kwargs)
        self.tools = tools

    def _ready(self, socket):
        socket.send_multipart([b"ACTW01", b"READY", json.dumps(
            {"activities": self.activities, "capacity": self.capacity, "name": self.name,
             "lang": "python-test", "tools": self.tools}).encode()])
        self.ready.set()


WEATHER_PARAMS = {"type": "object", "required": ["city"],
                  "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}


class FakeBroker:
    """A ROUTER socket that records each request a client sends it
    ([command, request, args...], decoded), answers PLAN with ACCEPTED and
    PING with PONG, and leaves the rest unanswered. A reply in replies may
    be a function of the request, answering the frames to send."""

    def __init__(self, replies=None):
        self.endpoint = "tcp://127.0.0.1:%d" % free_port()
        self.replies = replies or {}    # command -> reply frames, instead
        self.received = []
        self.running = True
        self.socket = zmq.Context.instance().socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind(self.endpoint)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while self.running:
            if not self.socket.poll(50):
                continue
            frames = self.socket.recv_multipart()
            identity, request = frames[0], [f.decode() for f in frames[2:]]
            self.received.append(request)
            reply = self.replies.get(request[0])
            if callable(reply):
                reply = reply(request)
            if reply:
                pass
            elif request[0] == "PLAN":
                reply = ["ACCEPTED", json.dumps([str(n + 1) for n in
                                                 range(len(json.loads(request[3])))])]
            elif request[0] == "PING":
                reply = ["PONG"]
            if reply:
                self.socket.send_multipart([identity, b"ACTC01", reply[0].encode(),
                                            request[1].encode()] +
                                           [frame.encode() for frame in reply[1:]])

    def commands(self):
        return [request[0] for request in self.received]

    def close(self):
        self.running = False
        self.thread.join()
        self.socket.close(0)


class SeveralBrokersTest(unittest.TestCase):
    """What the C client library sends when it knows several brokers (docs/
    protocol.md section 12), seen by two fake brokers."""

    def setUp(self):
        self.brokers = [FakeBroker(), FakeBroker()]
        for broker in self.brokers:
            self.addCleanup(broker.close)
        self.endpoints = ",".join(broker.endpoint for broker in self.brokers)

    def test_each_call_of_a_plan_gets_an_id(self):
        """A PLAN sent again to the next broker after a timeout must not run
        its calls twice: each call without an _id is given one, as a CALL's
        is; one the caller gave is kept."""
        done = actctl("--endpoint", self.endpoints, "plan", "p", json.dumps(
            [{"_tool": "t", "n": 1}, {"_tool": "t", "_id": "mine"}]))
        self.assertEqual(done.returncode, 0, done.stderr)
        plans = [r for b in self.brokers for r in b.received if r[0] == "PLAN"]
        self.assertEqual(len(plans), 1, plans)
        calls = json.loads(plans[0][3])
        self.assertEqual(calls[1], {"_tool": "t", "_id": "mine"})
        self.assertEqual(set(calls[0]), {"_tool", "n", "_id"})
        self.assertRegex(calls[0]["_id"], r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-"
                                          r"[0-9a-f]{4}-[0-9a-f]{12}$")

    def test_unwatch_goes_to_the_broker_of_its_watch(self):
        """PROTOCOL.md section 1.1: UNWATCH names a WATCH of the same socket:
        it goes where the WATCH went, whichever broker owns the context (the
        contexts are taken until each broker has owned one)."""
        owners = set()
        for number in range(1, 33):
            context = "w-%d" % number
            #  Request ids restart with each actctl: only this one's count
            start = {broker: len(broker.received) for broker in self.brokers}
            tail = subprocess.Popen([ACTCTL, "--endpoint", self.endpoints, "tail", context],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            watches = lambda broker: [r[1] for r in broker.received
                                      if r[0] == "WATCH" and r[2] == context]
            watched = wait_for(lambda: [b for b in self.brokers if watches(b)],
                               "the WATCH of " + context)
            self.assertEqual(len(watched), 1)
            owner = watched[0]
            owners.add(owner.endpoint)
            tail.send_signal(signal.SIGINT)
            self.assertEqual(tail.wait(30), 0, tail.stderr.read())
            tail.stderr.close()
            unwatched = lambda broker: [r[2] for r in broker.received[start[broker]:]
                                        if r[0] == "UNWATCH"]
            request = watches(owner)[0]
            wait_for(lambda: request in unwatched(owner), "the UNWATCH of " + context)
            for broker in self.brokers:
                if broker is not owner:
                    self.assertNotIn(request, unwatched(broker))
            if len(owners) == 2:
                break
        self.assertEqual(len(owners), 2, "no context went to the second broker")


class BrokenBrokerTest(unittest.TestCase):
    """A broker that breaks the protocol gets an error from the C client
    library, never an abort: its replies are data from the network."""

    def broker(self, replies):
        broker = FakeBroker(replies)
        self.addCleanup(broker.close)
        return broker

    def test_accepted_ids_that_are_not_strings(self):
        broker = self.broker({"PLAN": ["ACCEPTED", "[1,null]"]})
        done = actctl("--endpoint", broker.endpoint, "plan", "p", json.dumps([{"_tool": "t"}]))
        self.assertEqual((done.returncode, done.stdout), (0, "accepted: calls [1,null]\n"),
                         done.stderr)

    def test_a_value_reply_without_its_frame(self):
        broker = self.broker({"STATS": ["VALUE"]})
        done = actctl("--endpoint", broker.endpoint, "stats")
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertEqual(done.stderr, "actctl: internal: VALUE reply without its frame\n")


def history_pages(pages):
    """A HISTORY answer: the page (a JSON value) that pages maps from-seq to,
    else []."""
    return lambda request: ["VALUE", json.dumps(pages.get(int(request[3]), []))]


class UnexpectedReplyTest(unittest.TestCase):
    """A well-framed reply of the wrong shape is an error (exit 1, bad_json),
    never a loop nor a silent 0: the requests are counted, and each actctl
    is bounded by a timeout so that a loop fails the test rather than
    hanging it."""

    def run_actctl(self, replies, *args):
        broker = FakeBroker(replies)
        self.addCleanup(broker.close)
        done = actctl("--endpoint", broker.endpoint, "--timeout", "5000", *args, timeout=20)
        return done, broker

    def assertBadJson(self, done, *words):
        self.assertEqual(done.returncode, 1, (done.stdout, done.stderr))
        self.assertTrue(done.stderr.startswith("actctl: bad_json: "), done.stderr)
        for word in words:
            self.assertIn(word, done.stderr)

    def test_history_all_pages_on_to_an_empty_one(self):
        done, broker = self.run_actctl({"HISTORY": history_pages(
            {1: [{"_seq": 1, "type": "text"}, {"_seq": 3, "type": "text"}],
             4: [{"_seq": 7, "type": "text"}]})}, "history", "c", "--all", "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual([m["_seq"] for m in json.loads(done.stdout)], [1, 3, 7])
        self.assertEqual([r[3] for r in broker.received], ["1", "4", "8"])

    def test_a_message_without_its_date_or_type_prints_a_question_mark(self):
        """printf was given NULL for %s (glibc prints "(null)"; C leaves it
        undefined)."""
        done, _ = self.run_actctl({"HISTORY": ["VALUE", json.dumps([{"_seq": 1}])]},
                                  "history", "c")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(done.stdout.startswith("#1 ? ?"), done.stdout)
        self.assertNotIn("(null)", done.stdout)

    def test_history_all_with_no_seq(self):
        done, broker = self.run_actctl({"HISTORY": ["VALUE", json.dumps(
            [{"type": "text", "text": "x"}])]}, "history", "c", "--all")
        self.assertBadJson(done, "_seq")
        self.assertEqual(broker.commands(), ["HISTORY"])
        self.assertEqual(done.stdout, "")

    def test_history_all_with_a_seq_that_does_not_advance(self):
        done, broker = self.run_actctl({"HISTORY": ["VALUE", json.dumps(
            [{"_seq": 1, "type": "text"}])]}, "history", "c", "--all")
        self.assertBadJson(done, "_seq")
        self.assertEqual(broker.commands(), ["HISTORY", "HISTORY"])

    def test_history_seqs_below_from_or_not_increasing(self):
        for page in ([{"_seq": 4}], [{"_seq": 6}, {"_seq": 6}], [{"_seq": 7}, {"_seq": 6}],
                     [{"_seq": "6"}], [{"_seq": 6.0}], [7], [None]):
            with self.subTest(page=page):
                done, _ = self.run_actctl({"HISTORY": ["VALUE", json.dumps(page)]},
                                          "history", "c", "--from", "5")
                self.assertBadJson(done, "HISTORY")

    def test_history_that_is_not_an_array(self):
        done, _ = self.run_actctl({"HISTORY": ["VALUE", '{"oops": 1}']}, "history", "c")
        self.assertBadJson(done, "HISTORY", "array")

    def test_contexts_next_that_does_not_advance(self):
        done, broker = self.run_actctl({"CONTEXTS": ["VALUE", json.dumps(
            {"contexts": [], "next": "a"})]}, "contexts")
        self.assertBadJson(done, "next")
        self.assertEqual(broker.commands(), ["CONTEXTS", "CONTEXTS"])

    def test_contexts_next_going_back_or_empty(self):
        def pages(request):
            after = request[3] if len(request) > 3 else ""
            return ["VALUE", json.dumps({"contexts": [{"context": after + "x"}],
                                         "next": {"": "m", "m": "b"}[after]})]
        done, broker = self.run_actctl({"CONTEXTS": pages}, "contexts", "--json")
        self.assertBadJson(done, "next")
        self.assertEqual(broker.commands(), ["CONTEXTS", "CONTEXTS"])
        done, _ = self.run_actctl({"CONTEXTS": ["VALUE", json.dumps(
            {"contexts": [], "next": ""})]}, "contexts")
        self.assertBadJson(done, "next")

    def test_contexts_of_the_wrong_shape(self):
        for page in ([1, 2, 3], {"contexts": {}}, {"next": "a"}, {"contexts": [1]},
                     {"contexts": [{"messages": 1}]}, {"contexts": [], "next": 5}):
            with self.subTest(page=page):
                done, broker = self.run_actctl({"CONTEXTS": ["VALUE", json.dumps(page)]},
                                               "contexts")
                self.assertBadJson(done, "CONTEXTS")
                self.assertEqual(broker.commands(), ["CONTEXTS"])

    def test_contexts_pages_on(self):
        def pages(request):
            after = request[3] if len(request) > 3 else ""
            return ["VALUE", json.dumps({"": {"contexts": [{"context": "a"}], "next": "a"},
                                         "a": {"contexts": [{"context": "b"}]}}[after])]
        done, _ = self.run_actctl({"CONTEXTS": pages}, "contexts", "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, '{"context":"a"}\n{"context":"b"}\n')

    def test_stats_that_is_not_an_object(self):
        for json_flag in ((), ("--json",)):
            done, _ = self.run_actctl({"STATS": ["VALUE", "[1]"]}, "stats", *json_flag)
            self.assertBadJson(done, "STATS")
            self.assertEqual(done.stdout, "")

    def test_view_status_delete_of_the_wrong_shape(self):
        for command, args, reply in (("VIEW", ("view", "c"), ["VALUE", '{"a": 1}']),
                                     ("STATUS", ("status", "1"), ["VALUE", "[1]"]),
                                     ("STATUS", ("status", "1"), ["VALUE", '{"state": 1}']),
                                     ("DELETE", ("delete", "c"), ["OK", "[]"])):
            with self.subTest(command=command, reply=reply):
                done, _ = self.run_actctl({command: reply}, *args)
                self.assertBadJson(done, command)
                self.assertEqual(done.stdout, "")

    def test_resolve_answers_any_value(self):
        done, _ = self.run_actctl({"RESOLVE": ["VALUE", "[1]"]}, "resolve", "c",
                                  DAGGER + "state")
        self.assertEqual((done.returncode, done.stdout), (0, "[\n  1\n]\n"), done.stderr)


class ToolsTest(ActdTest):
    """actctl tools: the registry as people read it, and in the shapes of
    the model APIs (MCP, OpenAI, Anthropic)."""

    def setUp(self):
        super().setUp()
        self.worker = ToolsWorker(self.actd.worker_endpoint, {
            "weather": {"description": "The weather in a city", "params": WEATHER_PARAMS},
            "summarize": {"outputPath": {"const": DAGGER + "state.summary"}}},
            name="tools-worker")
        self.worker.start()
        self.addCleanup(self.worker.stop)
        wait_for(lambda: json.loads(self.actctl("tools", "--format", "json").stdout or "{}")
                 .get("weather", {}).get("workers") == 1, "the worker's tools")

    def test_list_for_people(self):
        done = self.actctl("tools")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.splitlines(), [
            "summarize (1 worker)",
            "    output path: {\"const\":\"%sstate.summary\"}" % DAGGER,
            "weather (1 worker): The weather in a city",
            "    params: " + json.dumps(WEATHER_PARAMS, separators=(",", ":"),
                                        ensure_ascii=False)])

    def test_json_is_tools_answer(self):
        for args in (("--format", "json"), ("--json",)):
            done = self.actctl("tools", *args)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(json.loads(done.stdout), {
                "weather": {"description": "The weather in a city", "params": WEATHER_PARAMS,
                            "workers": 1},
                "summarize": {"outputPath": {"const": DAGGER + "state.summary"},
                              "workers": 1}})
        done = self.actctl("tools", "weather", "--format", "json")
        self.assertEqual(list(json.loads(done.stdout)), ["weather"])

    def test_model_formats(self):
        expected = {
            "mcp": {"tools": [
                {"name": "summarize", "inputSchema": {"type": "object"}},
                {"name": "weather", "description": "The weather in a city",
                 "inputSchema": WEATHER_PARAMS}]},
            "openai": [
                {"type": "function", "function": {"name": "summarize",
                                                  "parameters": {"type": "object"}}},
                {"type": "function", "function": {"name": "weather",
                                                  "description": "The weather in a city",
                                                  "parameters": WEATHER_PARAMS}}],
            "anthropic": [
                {"name": "summarize", "input_schema": {"type": "object"}},
                {"name": "weather", "description": "The weather in a city",
                 "input_schema": WEATHER_PARAMS}]}
        for format, shape in expected.items():
            done = self.actctl("tools", "--format", format)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(json.loads(done.stdout), shape, format)
        done = self.actctl("tools", "weather", "--format", "anthropic")
        self.assertEqual([tool["name"] for tool in json.loads(done.stdout)], ["weather"])

    def test_call_wait_prints_the_outcome_of_a_prescribed_output_path(self):
        #  Sent without _outputPath: the tool's path is the call's, so a
        #  DONE-like outcome, not the bare state of a fire-and-forget call
        done = self.actctl("call", "c", json.dumps({"_tool": "summarize", "text": "x"}),
                           "--wait")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.splitlines()[0], "call 1: ok, branch 0, wrote "
                         "[\"%sstate.summary\"] at seqs [1] (1 attempt)" % DAGGER)
        self.assertEqual(json.loads(done.stdout.split("\n", 1)[1]), {"text": "x"})

    def test_names_a_model_api_refuses_are_left_out_with_a_warning(self):
        #  OpenAI and Anthropic refuse a request whose tools hold one name
        #  outside [A-Za-z0-9_-]{1,64}; MCP takes it
        other = ToolsWorker(self.actd.worker_endpoint, {
            "translate.fr": {"description": "To French"}, "x" * 65: {}}, name="dotted")
        other.start()
        self.addCleanup(other.stop)
        wait_for(lambda: "translate.fr" in json.loads(
            self.actctl("tools", "--format", "json").stdout or "{}"), "the dotted tool")
        for format, api in (("openai", "OpenAI"), ("anthropic", "Anthropic")):
            done = self.actctl("tools", "--format", format)
            self.assertEqual(done.returncode, 0, done.stderr)
            names = [tool.get("name") or tool["function"]["name"]
                     for tool in json.loads(done.stdout)]
            self.assertEqual(names, ["summarize", "weather"], format)
            self.assertEqual(done.stderr.splitlines(), [
                "actctl: tool %s left out: %s takes tool names of 1 to 64 characters "
                "of A-Z, a-z, 0-9, '_' and '-'" % (name, api)
                for name in ("translate.fr", "x" * 65)], format)
        done = self.actctl("tools", "--format", "mcp")
        self.assertEqual([tool["name"] for tool in json.loads(done.stdout)["tools"]],
                         ["summarize", "translate.fr", "weather", "x" * 65])
        self.assertEqual(done.stderr, "")

    def test_a_call_to_an_unknown_activity_reports_its_code(self):
        """PROTOCOL.md section 2.1: under strict_activities a call nobody
        serves is refused unknown_activity; the C client library hands the
        broker's code on (it reported internal before)."""
        strict = actd_with_config("server\n    strict_activities = 1\n").start()
        self.addCleanup(strict.finish)
        refused = actctl("--endpoint", strict.client_endpoint, "call", "u",
                         json.dumps({"_tool": "nobody-serves", "_outputPath": DAGGER + "s.x"}))
        self.assertEqual(refused.returncode, 1, refused.stderr)
        self.assertTrue(refused.stderr.startswith("actctl: unknown_activity: "), refused.stderr)

    def test_bad_format_is_a_usage_error(self):
        done = self.actctl("tools", "--format", "yaml")
        self.assertEqual(done.returncode, 2)
        self.assertIn("--format is json, mcp, openai or anthropic", done.stderr)
        self.assertEqual(self.actctl("tools", "a", "b").returncode, 2)


if __name__ == "__main__":
    unittest.main()
