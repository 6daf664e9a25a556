"""actd-http (docs/http.md) beyond its routes: a clean stop, watches
cleaned up when their HTTP client goes, the statuses for a broker that
answers wrongly (a fake actd), the gateway's limits towards actd, and its
config file and flags. Split from test_http.py, whose helpers (ActdHttp,
EventStream, handler) it uses."""

import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import zmq

from harness import Actd, actd_with_config, find_binary, free_port, wait_for
from test_http import STATE, TOKEN, ActdHttp, EventStream


def retried_stream_error(test, server, path):
    """The error of an event stream actd-http answers for a retry (docs/http.md:
    200, text/event-stream, the retry line, one event: error, then the end)."""
    stream = EventStream(server, path)
    try:
        test.assertEqual(stream.response.status, 200)
        test.assertEqual(stream.response.headers["Content-Type"], "text/event-stream")
        events = stream.rest()
    finally:
        stream.close()
    test.assertEqual(events[0], {"retry": "2000"})
    test.assertEqual([event.get("event") for event in events[1:]], ["error"], events)
    return json.loads(events[1]["data"])["error"]


class StopTest(unittest.TestCase):
    """SIGTERM with an event stream open and a request waiting for a call:
    both are answered at once, 503 unavailable (a restart, which clients
    retry: it was 500 internal, which the dashboard took for a refusal
    and gave up on), and actd-http exits 0."""

    def test_sigterm_ends_streams_and_waits(self):
        actd = Actd().start()
        server = ActdHttp(actd.client_endpoint)
        try:
            stream = EventStream(server, "/v1/contexts/stop/events?from=1")
            answers = []
            waiting = threading.Thread(target=lambda: answers.append(server.request(
                "POST", "/v1/contexts/stop/calls?wait=1&timeout_ms=600000",
                {"_tool": "nobody-serves-this", "_outputPath": STATE + ".x"}, timeout=120)))
            waiting.start()
            wait_for(lambda: server.json("GET", "/v1/stats")["calls"]["queued"] == 1,
                     "the call to be queued")
            self.assertEqual(stream.response.status, 200)
            server.process.terminate()
            self.assertEqual(server.process.wait(60), 0, server.log())
            waiting.join(60)
            self.assertEqual(len(answers), 1)
            self.assertEqual(answers[0][0], 503, answers)
            self.assertEqual(json.loads(answers[0][2])["error"],
                             {"code": "unavailable",
                              "message": "actd-http is stopping; retry shortly"})
            self.assertEqual(stream.next_of("error")[1]["error"]["code"], "unavailable")
            self.assertRaises(EOFError, stream.next)
            stream.close()
        finally:
            server.finish()
            actd.finish()

class WatchCleanupTest(unittest.TestCase):
    """A client that leaves an event stream frees its WATCH in actd: with
    max_watches = 1, a second stream is refused while the first is open
    and served once the first client has gone."""

    def test_a_closed_stream_unwatches(self):
        actd = actd_with_config("server\n    max_watches = 1\n").start()
        server = ActdHttp(actd.client_endpoint)
        try:
            first = EventStream(server, "/v1/contexts/w1/events?from=1")
            server.json("POST", "/v1/contexts/w1/messages", {"type": "note"})
            self.assertEqual(first.next_of("message")[0]["id"], "1")
            second = EventStream(server, "/v1/contexts/w2/events?from=1")
            self.assertEqual(second.next_of("error")[1]["error"]["code"], "busy")
            second.close()
            first.close()

            #  actd-http sees the client gone when it next writes to it:
            #  append until a new stream is served
            def served():
                server.json("POST", "/v1/contexts/w1/messages", {"type": "note"})
                stream = EventStream(server, "/v1/contexts/w2/events?from=0")
                try:
                    server.json("POST", "/v1/contexts/w2/messages", {"type": "note"})
                    event = stream.next()
                    while "event" not in event:     # the "retry:" first
                        event = stream.next()
                    return event["event"] == "message"
                finally:
                    stream.close()
            wait_for(served, "the first stream's WATCH to be closed", timeout=60)
        finally:
            server.finish()
            actd.finish()

class FakeActd(threading.Thread):
    """A stand-in for actd on a ROUTER socket: PONG to PING, the frames of
    .answers[command] to a command there, nothing to one in .silent, and to
    every other request ERROR with the code set in .code (a moved names
    this very endpoint, so that actd-http's client follows it to its hop
    limit). For the codes a real actd is hard to make answer."""

    def __init__(self):
        super().__init__(daemon=True)
        self.endpoint = "tcp://127.0.0.1:%d" % free_port()
        self.code = "internal"
        self.answers = {}           # command: the frames of its reply
        self.silent = set()         # commands not answered
        self.requests = []          # (command, error code answered)
        self.running = True
        self.socket = zmq.Context.instance().socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind(self.endpoint)
        self.start()

    def run(self):
        while self.running:
            if not self.socket.poll(50):
                continue
            frames = self.socket.recv_multipart()
            identity, command, request = frames[0], frames[2], frames[3]
            if command == b"PING":
                reply = [b"PONG"]
            elif command.decode() in self.silent:
                self.requests.append((command.decode(), None))
                continue
            elif command.decode() in self.answers:
                reply = self.answers[command.decode()]
                self.requests.append((command.decode(), reply[0].decode()))
            else:
                message = self.endpoint if self.code == "moved" else "the fake's " + self.code
                reply = [b"ERROR", self.code.encode(), message.encode()]
                self.requests.append((command.decode(), self.code))
            self.socket.send_multipart([identity, b"ACTC01", reply[0], request] + reply[1:])

    def stop(self):
        self.running = False
        self.join(10)
        self.socket.close(0)


class ErrorMappingTest(unittest.TestCase):
    """Every ACT/1 error code of docs/http.md's table gets its HTTP status,
    those a real actd hardly gives included (moved past the hop limit,
    internal, unknown_command); a connection that drops before the DONE
    of a waited call is 502 disconnected."""

    STATUSES = {"bad_frame": 400, "bad_json": 400, "bad_context": 400, "bad_call": 400,
                "bad_reference": 400, "bad_method": 400, "bad_argument": 400,
                "type_mismatch": 409, "unresolved_reference": 409, "unauthorized": 403,
                "not_found": 404, "too_large": 413, "busy": 429, "unknown_activity": 422,
                "moved": 421, "internal": 500, "unknown_command": 501}

    def test_every_code_of_actd(self):
        fake = FakeActd()
        server = None
        try:
            server = ActdHttp(fake.endpoint)
            for code, status in self.STATUSES.items():
                with self.subTest(code=code):
                    fake.code = code
                    self.assertEqual(server.error("GET", "/v1/contexts/e/view"), (status, code))
            #  moved was followed to the hop limit, then given up
            self.assertGreater([c for _, c in fake.requests].count("moved"), 1)
        finally:
            if server:
                server.finish()
            fake.stop()

    def test_a_stream_refused_for_now_is_retried(self):
        """docs/http.md: an event stream whose first request actd answers
        busy, or that its connection dropped (disconnected), is answered
        200 with the retry line and one event: error with that code and
        message, then ends (an EventSource reconnects by itself; 429 and
        502 made it give up). Other refusals keep their status."""
        fake = FakeActd()
        server = None
        try:
            server = ActdHttp(fake.endpoint)
            for code in ("busy", "disconnected"):
                with self.subTest(code=code):
                    fake.code = code
                    self.assertEqual(retried_stream_error(self, server,
                                                          "/v1/contexts/e/events?from=1"),
                                     {"code": code, "message": "the fake's " + code})
                    self.assertEqual(server.error("GET", "/v1/contexts/e/view"),
                                     (self.STATUSES.get(code, 502), code))
            for code in ("unauthorized", "bad_context", "internal"):
                with self.subTest(code=code):
                    fake.code = code
                    self.assertEqual(server.error("GET", "/v1/contexts/e/events"),
                                     (self.STATUSES[code], code))
        finally:
            if server:
                server.finish()
            fake.stop()

    def test_a_stream_from_now_whose_contexts_fails_is_retried(self):
        """?from=0 streams what comes next, after the last_seq CONTEXTS
        gives. When CONTEXTS failed (busy here), the stream started from 1,
        sending the whole history to a client that asked for none of it;
        now it is answered as a stream whose first request failed: 200,
        retry, event: error, and no WATCH is sent."""
        fake = FakeActd()
        server = None
        try:
            server = ActdHttp(fake.endpoint)
            fake.code = "busy"
            fake.answers = {"HISTORY": [b"VALUE", b"[]"]}
            fake.silent = {"WATCH"}
            stream = EventStream(server, "/v1/contexts/e/events?from=0")
            events = []
            try:
                self.assertEqual(stream.response.status, 200)
                #  Before, the stream went on (a WATCH from 1, which the
                #  fake leaves unanswered): read it for 20 s at most
                reader = threading.Thread(target=lambda: events.extend(stream.rest()),
                                          daemon=True)
                reader.start()
                reader.join(20)
                self.assertFalse(reader.is_alive(), "the stream did not end; actd-http "
                                 "asked %r" % [command for command, _ in fake.requests])
            finally:
                stream.close()
            self.assertEqual(events[0], {"retry": "2000"})
            self.assertEqual(json.loads(events[1]["data"]),
                             {"error": {"code": "busy", "message": "the fake's busy"}})
            commands = [command for command, _ in fake.requests]
            self.assertEqual(commands, ["HISTORY", "CONTEXTS"], fake.requests)
        finally:
            if server:
                server.finish()
            fake.stop()

    def test_a_dropped_connection_is_502(self):
        actd = Actd().start()
        server = ActdHttp(actd.client_endpoint)
        try:
            answers = []
            waiting = threading.Thread(target=lambda: answers.append(server.request(
                "POST", "/v1/contexts/drop/calls?wait=1&timeout_ms=600000",
                {"_tool": "nobody-serves-this", "_outputPath": STATE + ".x"}, timeout=120)))
            waiting.start()
            client = actd.client()
            wait_for(lambda: json.loads(client.request("STATS")[1])["calls"]["queued"] == 1,
                     "the call to be queued")
            client.close()
            actd.kill()
            waiting.join(120)
            self.assertEqual(len(answers), 1)
            self.assertEqual(answers[0][0], 502, answers[0][2])
            self.assertEqual(json.loads(answers[0][2])["error"]["code"], "disconnected")
            actd.start()
        finally:
            server.finish()
            actd.finish()


class GatewayTest(unittest.TestCase):
    """actd-http's own behaviour when actd drops, is down, or too many
    clients connect (each with an actd, or none, of its own)."""

    def test_a_waited_call_is_followed_across_a_reconnection(self):
        """docs/http.md: ?wait=1 of a call without _outputPath follows the
        call after actd-http reconnects to actd (its watch was not sent
        again: it hung for the whole timeout_ms, then answered 504)."""
        actd = Actd().start()
        server = ActdHttp(actd.client_endpoint)
        try:
            answers = []

            def wait():
                started = time.monotonic()
                answer = server.request("POST", "/v1/contexts/rc/calls?wait=1&timeout_ms=15000",
                                        {"_tool": "nobody-serves-this"}, timeout=60)
                answers.append(answer + (time.monotonic() - started,))
            waiting = threading.Thread(target=wait)
            waiting.start()
            wait_for(lambda: server.json("GET", "/v1/stats")["calls"]["queued"] == 1,
                     "the call to be queued")
            actd.kill()
            actd.start()
            wait_for(lambda: server.request("GET", "/healthz")[0] == 200, "a reconnection")
            stream = EventStream(server, "/v1/contexts/rc/events?from=1&all=1")
            try:
                call_id = stream.next_of("call")[1]["call"]["call_id"]
            finally:
                stream.close()
            self.assertEqual(server.json("POST", "/v1/calls/%s/cancel" % call_id), {})
            waiting.join(60)
            status, _, text, elapsed = answers[0]
            self.assertEqual(status, 200, text)
            self.assertEqual(json.loads(text)["state"], "cancelled")
            self.assertLess(elapsed, 12)
        finally:
            server.finish()
            actd.finish()

    def test_a_stream_opened_while_actd_does_not_answer_is_retried(self):
        """docs/http.md: an event stream whose first request actd does not
        answer in time (down, or restarting) is answered 200 with the
        retry line and one event: error timeout, and ends, so that an
        EventSource comes back by itself after retry (a 504 made it give
        up for good). HEAD answers 200 likewise; other routes keep 504.
        The broker is connected (a fake that answers PING alone): one
        that is not reached is unreachable (the test after this)."""
        fake = FakeActd()
        fake.silent = {"HISTORY", "WATCH", "CONTEXTS", "RESOLVE", "VIEW"}
        silent = ActdHttp(fake.endpoint, config="http\n    request_timeout_ms = 300\n")
        try:
            error = retried_stream_error(self, silent, "/v1/contexts/away/events?from=1&all=1")
            self.assertEqual(error["code"], "timeout")
            self.assertIn("300 ms", error["message"])
            self.assertEqual(silent.request("HEAD", "/v1/contexts/away/events")[0], 200)
            self.assertEqual(silent.error("GET", "/v1/contexts/away/history"), (504, "timeout"))
        finally:
            silent.finish()
            fake.stop()

    def test_a_short_request_timeout_still_says_unreachable(self):
        """docs/http.md: with request_timeout_ms under a second, a request
        made while actd is not reachable is held three quarters of it for
        the connection, then answered 503 unreachable, not 504 timeout (a
        timeout says actd may have the request; this one was never sent),
        and a stream's event: error says unreachable too."""
        away = ActdHttp("tcp://127.0.0.1:%d" % free_port(),
                        config="http\n    request_timeout_ms = 300\n")
        try:
            for path in ("/v1/contexts/away/history", "/v1/stats", "/healthz"):
                with self.subTest(path=path):
                    self.assertEqual(away.error("GET", path), (503, "unreachable"))
            self.assertEqual(retried_stream_error(self, away, "/v1/contexts/away/events?from=1")
                             ["code"], "unreachable")
        finally:
            away.finish()

    def test_while_actd_is_unreachable_requests_are_answered_at_once(self):
        """docs/http.md: while actd-http has no connection to actd (never
        reached, then killed), with the default request_timeout_ms (30 s)
        a request is answered 503 unreachable naming the endpoint, /healthz
        too, /metrics actd_up 0, and a stream 200 with retry and event:
        error unreachable, each within a second or so (each waited the
        30 s for 504 timeout). Once actd is back the first requests go
        through, none refused for the state of a moment before."""
        actd = Actd()
        actd.start()
        actd.kill()             # Its ports reserved; actd-http never reaches it
        server = ActdHttp(actd.client_endpoint)
        try:
            for label in ("never started", "killed"):
                with self.subTest(actd=label):
                    started = time.monotonic()
                    status, _, text = server.request("GET", "/v1/contexts/away/history",
                                                     timeout=60)
                    self.assertEqual(status, 503, text)
                    error = json.loads(text)["error"]
                    self.assertEqual(error["code"], "unreachable")
                    self.assertIn("actd is not reachable at %s (" % actd.client_endpoint,
                                  error["message"])
                    status, _, text = server.request("GET", "/healthz", timeout=60)
                    self.assertEqual((status, json.loads(text)["error"]["code"]),
                                     (503, "unreachable"))
                    self.assertIn("actd_up 0\n", server.request("GET", "/metrics")[2])
                    self.assertEqual(retried_stream_error(
                        self, server, "/v1/contexts/away/events?from=1")["code"], "unreachable")
                    #  Four answers, about a second each; generous for a
                    #  shared machine, and well under one request_timeout_ms
                    self.assertLess(time.monotonic() - started, 20)
                    actd.start()        # Answers PING: actd-http may not be connected yet
                    answers = []
                    threads = [threading.Thread(target=lambda: answers.append(server.request(
                        "POST", "/v1/contexts/away/messages", {"type": "text", "text": label})))
                        for _ in range(3)]
                    for thread in threads:
                        thread.start()
                    for thread in threads:
                        thread.join()
                    self.assertEqual([status for status, _, _ in answers], [200] * 3, answers)
                    self.assertEqual(server.request("GET", "/healthz")[0], 200)
                    actd.kill()
                    time.sleep(0.5)     # Its connection's drop seen (else 502)
        finally:
            server.finish()
            actd.cleanup()

    def test_metrics_of_a_down_actd_answer_quickly(self):
        """docs/http.md: /metrics waits at most 5 s for STATS (not
        request_timeout_ms, 30 s by default, past Prometheus' 10 s scrape
        timeout), then answers actd_up 0."""
        silent = ActdHttp("tcp://127.0.0.1:%d" % free_port())
        try:
            started = time.monotonic()
            status, _, text = silent.request("GET", "/metrics", timeout=10)
            self.assertEqual(status, 200)
            self.assertIn("actd_up 0\n", text)
            self.assertLess(time.monotonic() - started, 8)
        finally:
            silent.finish()

    def test_past_connection_limit_a_connection_is_refused_at_once(self):
        """docs/http.md: past connection_limit a new connection is closed at
        once (it hung until a connection ended)."""
        actd = Actd().start()
        server = ActdHttp(actd.client_endpoint, config="http\n    connection_limit = 2\n")
        streams = []
        try:
            streams = [EventStream(server, "/v1/contexts/limit/events?from=1")
                       for _ in range(2)]
            started = time.monotonic()
            with self.assertRaises(ConnectionError):
                server.request("GET", "/healthz", timeout=5)
            self.assertLess(time.monotonic() - started, 3)
            #  A stream that ends gives its connection back (once
            #  actd-http writes to it: an event, appended past actd-http)
            streams.pop().close()
            client = actd.client()
            try:
                self.assertEqual(client.request("APPEND", "limit", '{"type": "note"}')[0],
                                 "OK")
            finally:
                client.close()

            def healthy():
                try:
                    return server.request("GET", "/healthz", timeout=5)[0] == 200
                except ConnectionError:
                    return False
            wait_for(healthy, "a connection to be free again")
        finally:
            for stream in streams:
                stream.close()
            server.finish()
            actd.finish()

    def test_a_client_leaving_a_stream_is_not_logged_without_v(self):
        """Without -v, libmicrohttpd's messages are not written: each
        client that left an event stream wrote "Failed to send the
        chunked response body" to stderr."""
        actd = actd_with_config("server\n    max_watches = 1\n").start()
        server = ActdHttp(actd.client_endpoint, verbose=False)
        try:
            first = EventStream(server, "/v1/contexts/quiet/events?from=1")
            server.json("POST", "/v1/contexts/quiet/messages", {"type": "note"})
            self.assertEqual(first.next_of("message")[0]["id"], "1")
            first.close()

            def served():
                #  The first stream's WATCH is closed once actd-http has
                #  failed to write to its client
                server.json("POST", "/v1/contexts/quiet/messages", {"type": "note"})
                stream = EventStream(server, "/v1/contexts/other/events?from=0")
                try:
                    server.json("POST", "/v1/contexts/other/messages", {"type": "note"})
                    event = stream.next()
                    while "event" not in event:
                        event = stream.next()
                    return event["event"] == "message"
                finally:
                    stream.close()
            wait_for(served, "the first stream to be noticed gone", timeout=60)
            self.assertNotIn("Failed to send", server.log())
        finally:
            server.finish()
            actd.finish()


class SlowReaderTest(unittest.TestCase):
    """docs/http.md: what waits in actd-http for an event stream's client
    is bounded (max_stream_bytes, max_stream_events); a client that does
    not read while more comes gets its stream ended with event: error
    busy, and resumes with Last-Event-ID, missing nothing. (actd-http kept
    every event for it, its memory growing with the context.)"""

    COUNT = 64                  # Messages appended while the client reads nothing

    def stalled_then_resumed(self, config, size):
        actd = Actd().start()
        server = ActdHttp(actd.client_endpoint, config=config)
        try:
            #  A small receive buffer: the kernel holds little for the client
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", server.port))
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            connection.sock = sock
            self.addCleanup(connection.close)
            connection.request("GET", "/v1/contexts/slow/events?from=1")
            stream = EventStream.__new__(EventStream)
            stream.connection = connection
            stream.response = connection.getresponse()
            self.assertEqual(stream.response.status, 200)
            blob = "x" * size
            for _ in range(self.COUNT):
                server.json("POST", "/v1/contexts/slow/messages", {"type": "note", "text": blob})
            #  Now read: the events that went out, in order, then the error
            seen = []
            event = stream.next()
            while event.get("event") == "message" or "retry" in event:
                if "id" in event:
                    seen.append(int(event["id"]))
                if len(seen) == self.COUNT:
                    break
                event = stream.next()
            self.assertLess(len(seen), self.COUNT, "every event was kept for the client")
            self.assertEqual(event.get("event"), "error", event)
            error = json.loads(event["data"])["error"]
            self.assertEqual(error["code"], "busy", error)
            self.assertIn("Last-Event-ID", error["message"])
            self.assertRaises(EOFError, stream.next)
            stream.close()
            self.assertEqual(seen, list(range(1, len(seen) + 1)))
            #  Resumed after the last event taken, as EventSource does
            #  (again on each busy: a backlog comes faster than it is read)
            while len(seen) < self.COUNT:
                before = len(seen)
                resumed = EventStream(server, "/v1/contexts/slow/events",
                                      headers={"Last-Event-ID": str(before)})
                try:
                    while len(seen) < self.COUNT:
                        event, data = resumed.next_of("message")
                        seen.append(int(event["id"]))
                        self.assertEqual(data["seq"], seen[-1])
                except EOFError:
                    pass
                finally:
                    resumed.close()
                self.assertGreater(len(seen), before, "a resumed stream took no event")
            self.assertEqual(seen, list(range(1, self.COUNT + 1)))
        finally:
            server.finish()
            actd.finish()

    def test_past_max_stream_bytes_the_stream_ends_busy(self):
        self.stalled_then_resumed("http\n    max_stream_bytes = 65536\n", 131072)

    def test_past_max_stream_events_the_stream_ends_busy(self):
        self.stalled_then_resumed("http\n    max_stream_events = 16\n", 65536)


class ConfigTest(unittest.TestCase):
    """etc/actd-http.cfg as shipped loads; a bad setting stops at start."""

    @staticmethod
    def loopback_log(actd):
        """What actd-http on 127.0.0.1, without tokens, says at start."""
        server = ActdHttp(actd.client_endpoint)
        try:
            return server.log()
        finally:
            server.finish()

    def test_example_config_loads_and_bad_settings_stop(self):
        actd = Actd().start()
        try:
            with open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
                    os.path.abspath(__file__)))), "etc", "actd-http.cfg")) as handle:
                example = handle.read()
            server = ActdHttp(actd.client_endpoint, config=example)
            try:
                self.assertEqual(server.request("GET", "/healthz")[0], 200)
            finally:
                server.finish()
            #  Beyond loopback without tokens: said plainly at start
            port = free_port()
            with tempfile.TemporaryFile("w+") as log:
                exposed = subprocess.Popen([find_binary("actd-http"), "--listen",
                                            "0.0.0.0:%d" % port, "--endpoint",
                                            actd.client_endpoint], stdout=log,
                                           stderr=subprocess.STDOUT)
                try:
                    wait_for(lambda: log.seek(0) == 0 and "listening on" in log.read(),
                             "actd-http on 0.0.0.0")
                    log.seek(0)
                    self.assertIn("WARNING: no bearer tokens and 0.0.0.0 is not loopback",
                                  log.read())
                finally:
                    exposed.terminate()
                    self.assertEqual(exposed.wait(30), 0)
            self.assertNotIn("WARNING", self.loopback_log(actd))
            #  -v's request lines go to stderr, the start line to stdout
            port = free_port()
            with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
                verbose = subprocess.Popen([find_binary("actd-http"), "--listen",
                                            "127.0.0.1:%d" % port, "--endpoint",
                                            actd.client_endpoint, "-v"], stdout=out, stderr=err)
                try:
                    wait_for(lambda: out.seek(0) == 0 and "listening on" in out.read(),
                             "actd-http -v to listen")
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                    connection.request("GET", "/healthz")
                    self.assertEqual(connection.getresponse().status, 200)
                    connection.close()
                    wait_for(lambda: err.seek(0) == 0 and "GET /healthz 200" in err.read(),
                             "the request's line on stderr")
                    out.seek(0)
                    self.assertNotIn("/healthz", out.read())
                finally:
                    verbose.terminate()
                    self.assertEqual(verbose.wait(30), 0)
            #  A listen address must be numeric: a name is a bad setting
            done = subprocess.run([find_binary("actd-http"), "--listen", "localhost:8480"],
                                  capture_output=True, text=True, timeout=30)
            self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
            self.assertIn("numeric IPv4 or IPv6 address", done.stderr)
            for text in ("http\n    request_timeout_ms = soon\n", "http\n    nope = 1\n",
                         "http\n    listen = localhost:8480\n",
                         "tokens\n    short\n        token = abc\n", "elsewhere\n"):
                with tempfile.NamedTemporaryFile("w", suffix=".cfg") as config:
                    config.write(text)
                    config.flush()
                    done = subprocess.run([find_binary("actd-http"), "--config", config.name],
                                          capture_output=True, text=True, timeout=30)
                self.assertEqual(done.returncode, 2, text + done.stdout + done.stderr)
                self.assertIn("actd-http: ", done.stderr)
        finally:
            actd.finish()

    def run_refused(self, args, *expected, preexec=None):
        """actd-http with args exits 2 at once, saying each of expected on
        stderr (no leak under AddressSanitizer either)."""
        environment = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
        environment.pop("ACTD_ENDPOINT", None)
        process = subprocess.Popen([find_binary("actd-http"), "--listen",
                                    "127.0.0.1:%d" % free_port()] + list(args),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=environment, preexec_fn=preexec)
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            self.fail("actd-http %s started:\n%s%s" % (args, out, err))
        self.assertEqual(process.returncode, 2, "%s\n%s%s" % (args, out, err))
        for each in expected:
            self.assertIn(each, err)

    def write_config(self, text, name="actd-http.cfg"):
        directory = tempfile.mkdtemp(prefix="actd-http-cfg-")
        self.addCleanup(shutil.rmtree, directory, True)
        path = os.path.join(directory, name)
        with open(path, "w") as handle:
            handle.write(text)
        return path

    def test_an_empty_broker_endpoint_is_a_bad_setting(self):
        """docs/http.md: a bad setting stops actd-http with exit status 2;
        an empty endpoint is one (it crashed actd-http)."""
        self.run_refused(["--endpoint", ""], "actd-http: --endpoint")
        self.run_refused(["-e", ""], "actd-http: --endpoint")
        self.run_refused(["--dashboard-dir", ""], "actd-http: --dashboard-dir")
        for text in ("http\n    broker\n", "http\n    broker = \"\"\n",
                     "http\n    dashboard_dir = \"\"\n"):
            path = self.write_config(text)
            self.run_refused(["--config", path], "actd-http: %s: bad or unknown setting http/"
                             % path)

    def test_a_server_key_without_a_certificate_is_a_bad_setting(self):
        """CURVE needs this client's certificate: a server key without one
        (for the requests without a token, or for a token) stops
        actd-http with exit status 2 naming it (CZMQ's assertion aborted
        it)."""
        key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
        self.run_refused(["--server-key", key], "actd-http: server_key is set but no "
                         "certificate")
        path = self.write_config("http\n    server_key = \"%s\"\ntokens\n    alice\n"
                                 "        token = %s\n" % (key, TOKEN))
        self.run_refused(["--config", path], "actd-http: server_key is set but no certificate")

    def test_every_spelling_of_config_reads_the_file(self):
        """The config file is found as getopt finds the flag, however it is
        spelled: -cFILE or --conf FILE once dropped the file, its tokens
        with it, and the API ran without bearer tokens."""
        path = self.write_config("tokens\n    alice\n        token = %s\n" % TOKEN)
        endpoint = "tcp://127.0.0.1:%d" % free_port()   # no actd needed
        for args in (["-c", path], ["-c" + path], ["--config", path], ["--config=" + path],
                     ["--conf", path], ["--con=" + path], ["-vc", path]):
            with self.subTest(args=args):
                server = ActdHttp(endpoint, args=args)
                try:
                    self.assertIn(", bearer tokens)", server.log())
                    self.assertEqual(server.error("GET", "/v1/stats"), (401, "unauthenticated"))
                finally:
                    server.finish()

    def test_a_config_file_that_does_not_load_is_named(self):
        """A file that is not ZPL is said to be so (not "cannot read"), and
        exits 2 (a leak made it 1 under AddressSanitizer)."""
        path = self.write_config("http\n    listen = \"127.0.0.1:1\n")
        self.run_refused(["--config", path], "actd-http: %s: not a valid ZPL file" % path)
        missing = path + ".missing"
        self.run_refused(["--config", missing],
                         "actd-http: cannot read %s: No such file or directory" % missing)

    def test_a_server_key_that_is_not_a_curve_key_is_named(self):
        """A server_key that is not 40 characters of Z85 stops actd-http
        with exit status 2 naming it (CZMQ's assertion aborted it)."""
        from test_security import keygen
        directory = tempfile.mkdtemp(prefix="actd-http-key-")
        self.addCleanup(shutil.rmtree, directory, True)
        keygen("reader", directory)
        certificate = os.path.join(directory, "reader.key")
        for key in ("short", "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf~"):
            with self.subTest(key=key):
                self.run_refused(["--server-key", key, "--certificate", certificate],
                                 "actd-http: server_key '%s' is not a CURVE public key" % key)

    def test_a_certificate_that_is_a_fifo_is_named(self):
        """The certificate (or its NAME.key_secret) a FIFO: actd-http hung
        at start in a blocking fopen of it; it exits 2 naming it now."""
        from test_security import keygen, release_fifo
        directory = tempfile.mkdtemp(prefix="actd-http-fifo-")
        self.addCleanup(shutil.rmtree, directory, True)
        server_public = keygen("server", directory)[0]
        keygen("reader", directory)
        secret = os.path.join(directory, "reader.key_secret")
        os.remove(secret)
        os.mkfifo(secret)
        pipe = os.path.join(directory, "pipe.key")
        os.mkfifo(pipe)
        for certificate, named in ((os.path.join(directory, "reader.key"), secret),
                                   (pipe, pipe)):
            with self.subTest(certificate=certificate):
                try:
                    self.run_refused(["--server-key", server_public, "--certificate",
                                      certificate], "actd-http: cannot read the certificate "
                                     "%s: not a regular file" % named)
                finally:
                    release_fifo(named)

    def test_an_unreadable_certificate_is_named(self):
        """docs/http.md: a token's certificate that actd-http's user cannot
        read is named at start, not reported as a failure to connect (nor,
        for NAME.key with an unreadable NAME.key_secret, taken with a
        secret key of zeros that no handshake passes)."""
        from test_security import drop_root, keygen, open_to_all
        directory = tempfile.mkdtemp(prefix="actd-http-cert-")
        self.addCleanup(shutil.rmtree, directory, True)
        server_public = keygen("server", directory)[0]
        keygen("reader", directory)
        open_to_all(directory)
        secret = os.path.join(directory, "reader.key_secret")
        os.chmod(secret, 0)
        for certificate in (secret, os.path.join(directory, "reader.key")):
            with self.subTest(certificate=certificate):
                path = os.path.join(directory, "actd-http.cfg")
                with open(path, "w") as handle:
                    handle.write("http\n    server_key = \"%s\"\ntokens\n    reader\n"
                                 "        token = %s\n        certificate = %s\n"
                                 % (server_public, TOKEN, certificate))
                os.chmod(path, 0o644)
                self.run_refused(["--config", path], "actd-http: cannot read the certificate "
                                 "%s: Permission denied" % secret, preexec=drop_root)


if __name__ == "__main__":
    unittest.main()
