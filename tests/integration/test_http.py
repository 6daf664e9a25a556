"""actd-http (issue 20, docs/http.md): every route of the JSON API with a
real actd, a worker and actd-http between them over ACT/1; the ACT/1 error
codes mapped to HTTP statuses; ?wait=1; Server-Sent Events resumed with
Last-Event-ID; bearer tokens; many requests in flight on actd-http's one
connection. test_http_metrics.py has /metrics against a known workload;
test_http_gateway.py the rest: stopping, watches cleaned up, errors of a
broker that misbehaves, the gateway's limits, its config."""

import http.client
import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest
import urllib.parse

import zmq

from harness import (DAGGER, Actd, Fail, NoAnswer, Worker, actd_with_config, end_process,
                     find_binary, free_port, wait_for)

STATE = DAGGER + "state"
TOKEN = "token-of-alice-0123456789"


class ActdHttp:
    """One actd-http process in front of endpoint, on a free port."""

    def __init__(self, endpoint, config=None, args=(), verbose=True):
        self.dir = tempfile.mkdtemp(prefix="actd-http-test-")
        self.port = free_port()
        command = [find_binary("actd-http"), "--listen", "127.0.0.1:%d" % self.port,
                   "--endpoint", endpoint] + (["-v"] if verbose else []) + list(args)
        if config is not None:
            path = os.path.join(self.dir, "actd-http.cfg")
            with open(path, "w") as handle:
                handle.write(config)
            command += ["--config", path]
        environment = dict(os.environ)
        environment.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        environment.pop("ACTD_ENDPOINT", None)
        self.log_path = os.path.join(self.dir, "actd-http.log")
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            env=environment)
        wait_for(self._listening, "actd-http to listen", timeout=20)

    def _listening(self):
        if self.process.poll() is not None:
            raise AssertionError("actd-http exited %s:\n%s" % (self.process.returncode,
                                                               self.log()))
        return "listening on" in self.log()

    def log(self):
        with open(self.log_path, errors="replace") as handle:
            return handle.read()

    def request(self, method, path, body=None, headers=None, timeout=30):
        """(status, headers, body text) of one request."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if body is not None and not isinstance(body, (bytes, str)):
                body = json.dumps(body)
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.headers, response.read().decode()
        finally:
            connection.close()

    def json(self, method, path, body=None, headers=None, status=200, timeout=30):
        """The JSON body of a request whose status must be status."""
        code, _, text = self.request(method, path, body, headers, timeout)
        if code != status:
            raise AssertionError("%s %s: %d, not %d: %s" % (method, path, code, status, text))
        return json.loads(text)

    def error(self, method, path, body=None, headers=None):
        """(status, error code) of a refused request; checks the body's shape."""
        code, _, text = self.request(method, path, body, headers)
        error = json.loads(text)["error"]
        assert isinstance(error["message"], str), text
        return code, error["code"]

    def finish(self):
        """SIGTERM; AssertionError unless it exits 0 (no leak under ASan)."""
        self.process.terminate()
        try:
            code = self.process.wait(30)
        except subprocess.TimeoutExpired:
            end_process(self.process, 0)
            code = "a hang"
        log = self.log()
        shutil.rmtree(self.dir, ignore_errors=True)
        if code != 0:
            raise AssertionError("actd-http exited %s:\n%s" % (code, log))


class EventStream:
    """A GET of an events route, read event by event."""

    def __init__(self, server, path, headers=None):
        self.connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
        self.connection.request("GET", path, headers=headers or {})
        self.response = self.connection.getresponse()

    def next(self):
        """The next event as a dict of its fields (comments skipped)."""
        fields = {}
        while True:
            line = self.response.readline().decode()
            if line == "":
                raise EOFError("the stream ended")
            line = line.rstrip("\n")
            if line == "":
                if fields:
                    return fields
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields[name] = value

    def rest(self):
        """Every event left until the stream ends (comments skipped)."""
        events = []
        while True:
            try:
                events.append(self.next())
            except EOFError:
                return events

    def next_of(self, kind):
        """The next event named kind, its data parsed."""
        while True:
            event = self.next()
            if event.get("event") == kind:
                return event, json.loads(event["data"])

    def close(self):
        self.connection.close()


def quote(text):
    return urllib.parse.quote(text, safe="")


def handler(activity, params, meta):
    if activity == "upper":
        return params["text"].upper()
    if activity == "fail":
        raise Fail("it failed", code="activity_failed", retryable=False)
    return params


class HttpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.actd = actd_with_config(
            "activities\n"
            "    narrow\n"
            "        max_queue = 1\n")
        cls.actd.start()
        cls.held = []
        cls.worker = Worker(cls.actd.worker_endpoint, ["upper", "echo", "fail", "count_ok",
                                                       "count_fail"],
                            cls.handle, capacity=64, name="http-test-worker")
        cls.worker.start()
        cls.worker.ready.wait(5)
        cls.dashboard = tempfile.mkdtemp(prefix="actd-http-dashboard-")
        with open(os.path.join(cls.dashboard, "index.html"), "w") as handle:
            handle.write("<!doctype html><title>actd</title>")
        with open(os.path.join(cls.dashboard, "app.js"), "w") as handle:
            handle.write("console.log('actd');\n")
        cls.http = ActdHttp(cls.actd.client_endpoint,
                            args=["--dashboard-dir", cls.dashboard])
        wait_for(lambda: cls.http.request("GET", "/healthz")[0] == 200, "healthz")

    @classmethod
    def handle(cls, activity, params, meta):
        if activity == "echo" and params.get("hold"):
            cls.held.append(meta)
            return NoAnswer
        if activity == "count_fail":
            raise Fail("counted failure", code="activity_failed", retryable=False)
        return handler(activity, params, meta)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.http.finish()
        finally:
            cls.worker.stop()
            shutil.rmtree(cls.dashboard, ignore_errors=True)
            cls.actd.finish()

    #  ------------------------------------------------------------------
    #  The routes

    def test_call_wait_returns_the_outcome(self):
        outcome = self.http.json("POST", "/v1/contexts/waits/calls?wait=1",
                                 {"_tool": "upper", "text": "hi", "_outputPath": STATE + ".up"})
        self.assertEqual(outcome["status"], "ok", outcome)
        self.assertEqual(outcome["result"], "HI")
        self.assertEqual(outcome["written"], [STATE + ".up"])
        #  A fire-and-forget call: its final STATUS, tool included
        status = self.http.json("POST", "/v1/contexts/waits/calls?wait=1&timeout_ms=20000",
                                {"_tool": "upper", "text": "x"})
        self.assertEqual((status["state"], status["tool"]), ("ok", "upper"), status)
        self.assertNotIn("output_path", status)
        #  A failed call is an outcome too, not an HTTP error
        outcome = self.http.json("POST", "/v1/contexts/waits/calls?wait=1",
                                 {"_tool": "fail", "_outputPath": STATE + ".f"})
        self.assertEqual(outcome["status"], "error", outcome)

    def test_call_without_wait_then_status_and_cancel(self):
        accepted = self.http.json("POST", "/v1/contexts/nowait/calls",
                                  {"_tool": "echo", "hold": True, "_outputPath": STATE + ".e"},
                                  status=202)
        call_id = accepted["call_id"]
        status = wait_for(lambda: (lambda s: s if s["state"] == "running" else None)(
            self.http.json("GET", "/v1/calls/" + call_id)), "the call to run")
        self.assertEqual(status["tool"], "echo")
        self.assertEqual(status["output_path"], STATE + ".e")
        self.assertEqual(self.http.json("POST", "/v1/calls/%s/cancel" % call_id), {})
        wait_for(lambda: self.http.json("GET", "/v1/calls/" + call_id)["state"] == "cancelled",
                 "the call to be cancelled")

    def test_plans_messages_resolve_view_history(self):
        context = "/v1/contexts/plan%2Fone"       # a context id with a "/"
        ids = self.http.json("POST", context + "/plans", [
            {"_tool": "upper", "text": "a", "_outputPath": STATE + ".a"},
            {"_tool": "upper", "text": STATE + ".a", "_outputPath": STATE + ".b"}],
            status=202)["call_ids"]
        self.assertEqual(len(ids), 2)
        wait_for(lambda: self.http.json("GET", "/v1/calls/" + ids[1])["state"] == "ok",
                 "the plan to end")
        self.assertEqual(self.http.json("GET", context + "/resolve?expr=" + quote(STATE + ".b")),
                         {"value": "A"})
        #  An append, twice with one Idempotency-Key: one message
        note = {"type": "note", "text": "hello"}
        first = self.http.json("POST", context + "/messages", note,
                               headers={"Idempotency-Key": "k1"})
        again = self.http.json("POST", context + "/messages", note,
                               headers={"Idempotency-Key": "k1"})
        self.assertEqual(first, again)
        history = self.http.json("GET", context + "/history?from=1&limit=100")
        self.assertEqual([m["_seq"] for m in history], [1, 2, 3])
        self.assertEqual(history[-1]["text"], "hello")
        self.assertEqual(self.http.json("GET", context + "/history?from=3&limit=1"),
                         history[2:])
        view = self.http.json("GET", context + "/view")
        self.assertIsInstance(view, list)
        status, headers, text = self.http.request("GET", context + "/view?format=text")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain"))
        self.assertIn('"b": "A"', text)
        #  The contexts, by prefix, one page at a time
        page = self.http.json("GET", "/v1/contexts?prefix=plan&limit=1")
        self.assertEqual(page["contexts"][0]["context"], "plan/one")
        self.assertEqual(page["contexts"][0]["last_seq"], 3)
        #  Delete
        counts = self.http.json("DELETE", context)
        self.assertEqual(counts, {"messages": 3, "cancelled": 0})
        self.assertEqual(self.http.error("GET", "/v1/calls/" + ids[0]), (404, "not_found"))

    def test_stats_tools_healthz_and_static_files(self):
        stats = self.http.json("GET", "/v1/stats")
        self.assertIn("upper", stats["activities"])
        self.assertIn("http-test-worker", [w["name"] for w in stats["workers"]])
        #  The registry (this actd has TOOLS): every activity the worker
        #  serves, with its count of workers
        tools = self.http.json("GET", "/v1/tools")
        self.assertEqual(tools, {activity: {"workers": 1} for activity in
                                 ("upper", "echo", "fail", "count_ok", "count_fail")})
        self.assertEqual(self.http.request("GET", "/healthz")[::2], (200, "ok\n"))
        status, headers, text = self.http.request("GET", "/")
        self.assertEqual((status, text), (200, "<!doctype html><title>actd</title>"))
        self.assertTrue(headers["Content-Type"].startswith("text/html"))
        status, headers, text = self.http.request("GET", "/ui/app.js")
        self.assertEqual((status, headers["Content-Type"].split(";")[0]),
                         (200, "text/javascript"))
        self.assertEqual(self.http.request("GET", "/ui/%2E%2E/%2E%2E/etc/passwd")[0], 404)
        self.assertEqual(self.http.request("GET", "/ui/absent.js")[0], 404)

    def test_head_answers_as_get_does(self):
        """HEAD of a GET route answers as GET would, without a body (HEAD
        /v1/stats was 404 while HEAD /metrics was 200)."""
        self.http.json("POST", "/v1/contexts/head/messages", {"type": "note"})
        for path in ("/v1/stats", "/v1/tools", "/v1/contexts", "/v1/contexts/head/history",
                     "/v1/contexts/head/events", "/metrics", "/healthz", "/"):
            with self.subTest(path=path):
                status, headers, text = self.http.request("HEAD", path)
                self.assertEqual((status, text), (200, ""))
        self.assertEqual(self.http.request("HEAD", "/v1/calls/999999")[0], 404)

    #  ------------------------------------------------------------------
    #  Errors

    def test_errors_map_to_statuses(self):
        cases = [
            (("POST", "/v1/contexts/e/calls", "{not json"), (400, "bad_json")),
            (("POST", "/v1/contexts/e/calls", {"text": "no tool"}), (400, "bad_call")),
            (("POST", "/v1/contexts/bad%20id/messages", {"type": "note"}), (400, "bad_context")),
            (("GET", "/v1/contexts/e/history?limit=ten", None), (400, "bad_argument")),
            (("GET", "/v1/contexts/e/resolve", None), (400, "bad_argument")),
            (("POST", "/v1/contexts/e/calls", {"_tool": "upper", "text": STATE + ".absent",
                                               "_outputPath": STATE + ".z"}),
             (409, "unresolved_reference")),
            (("GET", "/v1/calls/999999", None), (404, "not_found")),
            (("POST", "/v1/calls/999999/cancel", None), (404, "not_found")),
            (("DELETE", "/v1/contexts/never-was", None), (404, "not_found")),
            (("GET", "/v1/contexts/e/resolve?expr=" + quote(STATE + ".nothing"), None),
             (404, "not_found")),
            (("GET", "/v1/nowhere", None), (404, "not_found")),
            (("POST", "/v1/contexts/e/messages", {"type": "note", "text": "x" * (2 << 20)}),
             (413, "too_large")),
            (("POST", "/metrics", ""), (405, "method_not_allowed")),
            (("POST", "/v1/contexts/e/calls", {"_tool": "upper", "text": STATE + ".[",
                                               "_outputPath": STATE + ".z"}),
             (400, "bad_reference")),
            (("POST", "/v1/contexts/e/calls", {"_tool": "upper", "_outputPath": STATE + ".z",
                                               "_outputMethod": "frobnicate"}),
             (400, "bad_method")),
        ]
        for (method, path, body), expected in cases:
            with self.subTest(path=path):
                self.assertEqual(self.http.error(method, path, body), expected)
        #  type_mismatch: push onto an object
        self.http.json("POST", "/v1/contexts/tm/messages",
                       {"type": "data", "kind": "k", "data": {"a": 1}})
        self.assertEqual(self.http.error("POST", "/v1/contexts/tm/messages",
                                         {"type": "data", "kind": "k", "data": 5,
                                          "_outputMethod": "push"}), (409, "type_mismatch"))

    def test_busy_is_429_and_a_late_outcome_is_504(self):
        #  "narrow" has max_queue 1 and no worker: the first call waits in
        #  its queue, the second is refused
        self.http.json("POST", "/v1/contexts/busy/calls", {"_tool": "narrow"}, status=202)
        self.assertEqual(self.http.error("POST", "/v1/contexts/busy/calls", {"_tool": "narrow"}),
                         (429, "busy"))
        self.assertEqual(self.http.error("POST", "/v1/contexts/busy2/calls?wait=1&timeout_ms=300",
                                         {"_tool": "never-served", "_outputPath": STATE + ".x"}),
                         (504, "timeout"))
        self.assertEqual(self.http.error("POST", "/v1/contexts/busy2/calls?wait=1&timeout_ms=300",
                                         {"_tool": "never-served"}), (504, "timeout"))

    def test_a_body_past_actds_hard_limit_is_413_and_cuts_nobody(self):
        """docs/http.md: a body over max_body_bytes (by default actd's own
        max_message_bytes) is 413 too_large without reaching actd. A 5 MiB
        body, past the 4 x max_message_bytes + 64 KiB at which libzmq cuts
        actd's peer, once cut actd-http's one connection: every other
        request in flight on it was answered 502."""
        answers = []
        waiting = threading.Thread(target=lambda: answers.append(self.http.error(
            "POST", "/v1/contexts/big/calls?wait=1&timeout_ms=4000",
            {"_tool": "big-nobody-serves", "_outputPath": STATE + ".x"})))
        waiting.start()
        wait_for(lambda: self.http.json("GET", "/v1/stats")["activities"].get(
            "big-nobody-serves", {}).get("queued") == 1, "the call to be queued")
        self.assertEqual(self.http.error("POST", "/v1/contexts/big/messages",
                                         {"type": "note", "text": "x" * (5 << 20)}),
                         (413, "too_large"))
        waiting.join(30)
        self.assertEqual(answers, [(504, "timeout")])

    def test_unknown_activity_is_422(self):
        strict = actd_with_config("server\n    strict_activities = 1\n")
        strict.start()
        http = ActdHttp(strict.client_endpoint)
        try:
            self.assertEqual(http.error("POST", "/v1/contexts/strict/calls",
                                        {"_tool": "nobody-serves", "_outputPath": STATE + ".x"}),
                             (422, "unknown_activity"))
            self.assertEqual(http.error("POST", "/v1/contexts/strict/plans",
                                        [{"_tool": "nobody-serves"}]),
                             (422, "unknown_activity"))
        finally:
            http.finish()
            strict.finish()

    def test_an_actd_that_does_not_answer_is_504(self):
        """A broker connected that never answers (a ROUTER that reads
        nothing: libzmq completes the handshake) times out; one not
        reached at all is unreachable (test_http_gateway)."""
        mute = zmq.Context.instance().socket(zmq.ROUTER)
        mute.setsockopt(zmq.LINGER, 0)
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        mute.bind(endpoint)
        silent = ActdHttp(endpoint, config="http\n    request_timeout_ms = 300\n")
        try:
            self.assertEqual(silent.error("GET", "/v1/stats"), (504, "timeout"))
            self.assertEqual(silent.request("GET", "/healthz")[0], 504)
            metrics = silent.request("GET", "/metrics")
            self.assertEqual(metrics[0], 200)
            self.assertIn("actd_up 0\n", metrics[2])
        finally:
            silent.finish()
            mute.close(0)

    #  ------------------------------------------------------------------
    #  Server-Sent Events

    def test_events_stream_and_resume(self):
        context = "/v1/contexts/sse"
        for n in range(3):
            self.http.json("POST", context + "/messages", {"type": "note", "text": str(n)})
        stream = EventStream(self.http, context + "/events?from=1&all=1")
        try:
            self.assertEqual(stream.response.status, 200)
            self.assertEqual(stream.response.headers["Content-Type"], "text/event-stream")
            seen = [stream.next_of("message") for _ in range(3)]
            self.assertEqual([e["id"] for e, _ in seen], ["1", "2", "3"])
            self.assertEqual(seen[2][1]["message"]["text"], "2")
            self.assertEqual(seen[2][1]["seq"], 3)
            #  A new call: its changes of state, then its output
            call_id = self.http.json("POST", context + "/calls",
                                     {"_tool": "upper", "text": "s", "_outputPath": STATE + ".s"},
                                     status=202)["call_id"]
            states, output = [], None
            while "ok" not in states or output is None:
                event = stream.next()
                data = json.loads(event["data"])
                if event["event"] == "call" and data["call"]["call_id"] == call_id:
                    states.append(data["call"]["state"])
                    self.assertEqual(data["call"]["tool"], "upper")
                    self.assertEqual(data["call"]["output_path"], STATE + ".s")
                elif event["event"] == "message":
                    output = (event["id"], data["message"])
            self.assertEqual(states[-1], "ok")
            self.assertLess(states.index("running"), states.index("ok"))
            self.assertEqual(output[0], "4")
            self.assertEqual((output[1]["_callId"], output[1]["data"]), (call_id, {"s": "S"}))
        finally:
            stream.close()

    def test_dot_contexts_are_named_in_the_query(self):
        """docs/http.md: /v1/context/ACTION?context=ID serves the routes of
        /v1/contexts/{ctx} for ids a browser removes from a path ("." and
        "..", dot segments even percent-encoded)."""
        for context in (".", ".."):
            query = "?context=" + quote(context)
            self.assertEqual(self.http.json("POST", "/v1/context/messages" + query,
                                            {"type": "note", "text": "dots"}), {"seq": 1})
            history = self.http.json("GET", "/v1/context/history" + query + "&from=1&limit=10")
            self.assertEqual([m["text"] for m in history], ["dots"])
            #  The same context as the path names it (sent as is, as curl
            #  --path-as-is would)
            self.assertEqual(self.http.json("GET", "/v1/contexts/%s/history" % context), history)
            self.assertEqual(self.http.request("GET", "/v1/context/view" + query + "&format=text"
                                               )[0], 200)
            stream = EventStream(self.http, "/v1/context/events" + query + "&from=1")
            try:
                self.assertEqual(stream.next_of("message")[1]["message"]["text"], "dots")
            finally:
                stream.close()
            self.assertEqual(self.http.json("DELETE", "/v1/context" + query),
                             {"messages": 1, "cancelled": 0})
        self.assertEqual(self.http.error("GET", "/v1/context/history"), (400, "bad_context"))
        self.assertEqual(self.http.error("GET", "/v1/context/a/history?context=x"),
                         (404, "not_found"))

    def test_events_resume_with_last_event_id(self):
        context = "/v1/contexts/resume"
        for n in range(4):
            self.http.json("POST", context + "/messages", {"type": "note", "text": str(n)})
        stream = EventStream(self.http, context + "/events?from=1",
                             headers={"Last-Event-ID": "2"})
        try:
            event, data = stream.next_of("message")
            self.assertEqual((event["id"], data["message"]["text"]), ("3", "2"))
            event, data = stream.next_of("message")
            self.assertEqual(event["id"], "4")
            #  Live: an append after the stream started
            self.http.json("POST", context + "/messages", {"type": "note", "text": "live"})
            event, data = stream.next_of("message")
            self.assertEqual((event["id"], data["message"]["text"]), ("5", "live"))
            #  Deleting the context ends the stream with "deleted"
            self.http.json("DELETE", context)
            event, data = stream.next_of("deleted")
            self.assertEqual(data, {"deleted": True})
            self.assertRaises(EOFError, stream.next)
        finally:
            stream.close()
        #  from=0: only what is appended from now on; access_token accepted
        self.http.json("POST", context + "/messages", {"type": "note", "text": "old"})
        stream = EventStream(self.http, context + "/events?from=0&access_token=unused")
        try:
            self.http.json("POST", context + "/messages", {"type": "note", "text": "new"})
            event, data = stream.next_of("message")
            self.assertEqual((event["id"], data["message"]["text"]), ("2", "new"))
        finally:
            stream.close()

    #  ------------------------------------------------------------------
    #  Many requests in flight on actd-http's one connection to actd

    def test_many_requests_in_flight(self):
        count = 12
        results = [None] * count
        before = len(self.held)

        def call(index):
            results[index] = self.http.json(
                "POST", "/v1/contexts/flight/calls?wait=1",
                {"_tool": "echo", "hold": True, "n": index,
                 "_outputPath": STATE + ".n%d" % index}, timeout=60)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(count)]
        for thread in threads:
            thread.start()
        #  Every call reached the worker while every HTTP request still
        #  waits: they are all in flight at once
        wait_for(lambda: len(self.held) - before >= count, "every call to be running")
        self.assertTrue(all(thread.is_alive() for thread in threads))
        for task, _, params, meta in list(self.worker.tasks):
            if meta["context"] == "flight":
                self.worker.send_result(task, {"done": params["n"]})
        for thread in threads:
            thread.join(60)
        self.assertTrue(all(r and r["status"] == "ok" for r in results), results)
        self.assertEqual(len({r["call_id"] for r in results}), count)


class TokenTest(unittest.TestCase):
    """Bearer tokens: with tokens configured, a request needs one."""

    def test_tokens(self):
        actd = Actd().start()
        server = None
        try:
            server = ActdHttp(actd.client_endpoint, config=(
                "http\n"
                "    max_body_bytes = 4096\n"
                "tokens\n"
                "    alice\n"
                "        token = %s\n" % TOKEN))
            status, headers, text = server.request("GET", "/v1/stats")
            self.assertEqual(status, 401)
            self.assertEqual(headers["WWW-Authenticate"], "Bearer")
            self.assertEqual(json.loads(text)["error"]["code"], "unauthenticated")
            self.assertEqual(server.error("GET", "/v1/stats",
                                          headers={"Authorization": "Bearer wrong"})[0], 401)
            self.assertEqual(server.request("GET", "/metrics")[0], 401)
            self.assertEqual(server.request("GET", "/healthz")[::2], (200, "ok\n"))
            good = {"Authorization": "Bearer " + TOKEN}
            self.assertIn("uptime_ms", server.json("GET", "/v1/stats", headers=good))
            self.assertEqual(server.request("GET", "/metrics", headers=good)[0], 200)
            #  EventSource cannot set headers: access_token in the query
            stream = EventStream(server, "/v1/contexts/t/events?access_token=" + TOKEN)
            try:
                self.assertEqual(stream.response.status, 200)
                server.json("POST", "/v1/contexts/t/messages", {"type": "note"}, headers=good)
                self.assertEqual(stream.next_of("message")[0]["id"], "1")
            finally:
                stream.close()
            #  A body past max_body_bytes is refused here, before actd
            self.assertEqual(server.error("POST", "/v1/contexts/t/messages",
                                          {"type": "note", "text": "x" * 5000}, headers=good),
                             (413, "too_large"))
        finally:
            if server:
                server.finish()
            actd.finish()


class TenantTest(unittest.TestCase):
    """Tokens mapped to CURVE certificates of actd's tenants (issue 18):
    actd itself refuses a token's requests outside its tenant."""

    def setUp(self):
        from test_security import keygen
        self.dir = tempfile.mkdtemp(prefix="actd-http-tenants-")
        self.addCleanup(shutil.rmtree, self.dir, True)     # also when setUp fails
        server_public = keygen("server", self.dir)[0]
        for folder, name in (("tenants/acme", "acme"), ("tenants/globex", "globex"),
                             ("clients", "admin"), ("workers", "w")):
            os.makedirs(os.path.join(self.dir, folder), exist_ok=True)
            keygen(name, os.path.join(self.dir, folder))
        config = os.path.join(self.dir, "actd.cfg")
        with open(config, "w") as handle:
            handle.write("security\n"
                         "    server_key = %s\n"
                         "    client_keys = %s\n"
                         "    worker_keys = %s\n"
                         "tenants\n" % (os.path.join(self.dir, "server.key_secret"),
                                         os.path.join(self.dir, "clients"),
                                         os.path.join(self.dir, "workers")))
            for name in ("acme", "globex"):
                handle.write("    %s\n        prefix = \"%s/\"\n        rights = read,write\n"
                             "        keys = %s\n"
                             % (name, name, os.path.join(self.dir, "tenants", name)))
        self.actd = Actd(args=["--config", config]).start(wait=False)
        self.tokens = {name: "token-of-%s-0123456789" % name
                       for name in ("acme", "globex", "admin")}
        certificates = {"acme": "tenants/acme/acme", "globex": "tenants/globex/globex",
                        "admin": "clients/admin"}
        text = "http\n    server_key = \"%s\"\ntokens\n" % server_public
        for name, token in self.tokens.items():
            text += ("    %s\n        token = %s\n        certificate = %s\n"
                     % (name, token, os.path.join(self.dir, certificates[name] + ".key_secret")))
        self.http = ActdHttp(self.actd.client_endpoint, config=text)
        wait_for(lambda: self.http.request("GET", "/v1/stats",
                                           headers=self.auth("admin"))[0] == 200,
                 "actd to answer through actd-http over CURVE")

    def tearDown(self):
        try:
            self.http.finish()
        finally:
            self.actd.finish()

    def auth(self, name):
        return {"Authorization": "Bearer " + self.tokens[name]}

    def test_a_token_for_another_tenant_is_refused(self):
        acme, globex = self.auth("acme"), self.auth("globex")
        self.http.json("POST", "/v1/contexts/acme%2Frun/messages", {"type": "note", "text": "a"},
                       headers=acme)
        call_id = self.http.json("POST", "/v1/contexts/acme%2Frun/calls", {"_tool": "t"},
                                 headers=acme, status=202)["call_id"]
        self.assertEqual(len(self.http.json("GET", "/v1/contexts/acme%2Frun/history",
                                            headers=acme)), 1)
        #  globex's token on acme's context: 403 from actd's unauthorized
        for method, path, body in (
                ("GET", "/v1/contexts/acme%2Frun/history", None),
                ("GET", "/v1/contexts/acme%2Frun/view", None),
                ("POST", "/v1/contexts/acme%2Frun/messages", {"type": "note"}),
                ("POST", "/v1/contexts/acme%2Frun/calls", {"_tool": "t"}),
                ("DELETE", "/v1/contexts/acme%2Frun", None),
                ("GET", "/v1/contexts/acme%2Frun/events", None)):
            with self.subTest(method=method, path=path):
                self.assertEqual(self.http.error(method, path, body, headers=globex),
                                 (403, "unauthorized"))
        #  A call of another tenant is not found; its contexts are not listed
        self.assertEqual(self.http.error("GET", "/v1/calls/" + call_id, headers=globex),
                         (404, "not_found"))
        self.assertEqual(self.http.json("GET", "/v1/calls/" + call_id, headers=acme)["context"],
                         "acme/run")
        self.assertEqual(self.http.json("GET", "/v1/contexts", headers=globex)["contexts"], [])
        self.assertEqual([c["context"] for c in self.http.json("GET", "/v1/contexts",
                                                                headers=acme)["contexts"]],
                         ["acme/run"])
        #  STATS (and so /metrics) needs the admin right
        self.assertEqual(self.http.error("GET", "/v1/stats", headers=acme), (403, "unauthorized"))
        self.assertEqual(self.http.request("GET", "/metrics", headers=acme)[0], 403)
        self.assertEqual(self.http.request("GET", "/metrics", headers=self.auth("admin"))[0], 200)
        #  globex works in its own prefix
        self.http.json("POST", "/v1/contexts/globex%2Fx/messages", {"type": "note"},
                       headers=globex)


if __name__ == "__main__":
    unittest.main()
