"""actd-http and browsers (docs/http.md, "Browsers: Origin and Host"): a
web page the local user visits must not reach actd through actd-http.

- A request whose Origin is not actd-http's own (a loopback origin, the
  Host it was sent to, or one of http/allowed_origins) is refused 403
  forbidden_origin, tokens or not: a cross-site "simple" POST (text/plain,
  no CORS preflight) ran a tool and answered 200.
- Without tokens, a request whose Host is not a loopback name (nor one of
  http/allowed_hosts) is refused 403 forbidden_host: a page whose name an
  attacker resolves to 127.0.0.1 (DNS rebinding) read every context. With
  tokens the Host is not checked (the token defends).
- A POST body must be application/json (415 unsupported_media_type): a
  form or text/plain post, which any page can make, is refused even from
  an allowed origin.
- The dashboard (same-origin) and /healthz, /metrics keep working."""

import json
import os
import subprocess
import tempfile
import unittest

from harness import ROOT, Actd, Worker, find_binary, free_port, wait_for
from test_http import STATE, TOKEN, ActdHttp

DASHBOARD = os.path.join(ROOT, "share", "dashboard")
EVIL = "https://evil.example"
JSON = {"Content-Type": "application/json"}
#  What a page of another site sends with <form enctype="text/plain"> or
#  fetch(..., {mode: "no-cors", body: "..."}): no preflight
SIMPLE = {"Origin": EVIL, "Content-Type": "text/plain;charset=UTF-8"}
#  A refusal comes at once; an event stream served instead would not end
#  (a keepalive every 15 s): this bounds the wait between two reads
STREAM_TIMEOUT = 5


def handler(activity, params, meta):
    return "ran: %s" % params.get("cmd")


def code(text):
    """The error code of an answer's body, else the body itself."""
    try:
        return json.loads(text)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return text[:200]


class OriginTest(unittest.TestCase):
    """actd-http as scripts/start.sh runs it: loopback, no tokens, the
    dashboard; a worker whose tool records that it ran."""

    @classmethod
    def setUpClass(cls):
        cls.actd = Actd().start()
        cls.worker = Worker(cls.actd.worker_endpoint, ["run_shell"], handler,
                            name="origin-worker")
        cls.worker.start()
        cls.worker.ready.wait(5)
        cls.http = ActdHttp(cls.actd.client_endpoint, args=["--dashboard-dir", DASHBOARD])
        cls.own = "127.0.0.1:%d" % cls.http.port
        wait_for(lambda: cls.http.request("GET", "/healthz")[0] == 200, "healthz")

    @classmethod
    def tearDownClass(cls):
        try:
            cls.http.finish()
        finally:
            cls.worker.stop()
            cls.actd.finish()

    def ran(self, cmd):
        """Whether the tool ran for a call of cmd."""
        return any(task[2].get("cmd") == cmd for task in self.worker.tasks)

    def call(self, context, cmd, headers):
        """(status, error code or outcome) of a waited call of run_shell."""
        status, _, text = self.http.request(
            "POST", "/v1/contexts/%s/calls?wait=1&timeout_ms=20000" % context,
            json.dumps({"_tool": "run_shell", "cmd": cmd, "_outputPath": STATE + ".out"}),
            headers)
        body = json.loads(text)
        return status, body["error"]["code"] if "error" in body else body["result"]

    def barrier(self, context):
        """A call served after everything sent before it: what was refused
        would have reached the worker by then."""
        self.assertEqual(self.call(context, "barrier-" + context, JSON), (200, "ran: barrier-"
                                                                          + context))

    def test_a_foreign_origin_is_refused_and_the_tool_does_not_run(self):
        origins = [EVIL, "null", "http://evil.example:%d" % self.http.port,
                   "http://127.0.0.1.evil.example", "http://localhost.evil.example:%d"
                   % self.http.port, "http://127.0.0.1@evil.example", "http://[::2]",
                   "ftp://127.0.0.1", "http://10.0.0.1", "https://localhost/x"]
        for origin in origins:
            for kind in ("text/plain;charset=UTF-8", "application/json"):
                with self.subTest(origin=origin, type=kind):
                    headers = {"Origin": origin, "Content-Type": kind}
                    self.assertEqual(self.call("victim", "evil " + origin, headers),
                                     (403, "forbidden_origin"))
        #  Every other route too: appends, plans, cancel, delete, and reads
        #  (a cross-origin fetch that a browser lets the page read only
        #  with CORS headers, which actd-http never sends)
        for method, path, body in (
                ("POST", "/v1/contexts/victim/messages", {"type": "note", "text": "x"}),
                ("POST", "/v1/contexts/victim/plans", [{"_tool": "run_shell", "cmd": "evil plan"}]),
                ("POST", "/v1/calls/1/cancel", {}), ("DELETE", "/v1/contexts/victim", None),
                ("GET", "/v1/contexts", None), ("GET", "/v1/contexts/victim/history", None),
                ("GET", "/v1/contexts/victim/events", None), ("GET", "/v1/stats", None),
                ("GET", "/metrics", None), ("GET", "/healthz", None)):
            with self.subTest(method=method, path=path):
                status, headers, text = self.http.request(
                    method, path, json.dumps(body) if body is not None else None, SIMPLE,
                    timeout=STREAM_TIMEOUT)
                self.assertEqual((status, code(text)),
                                 (403, "forbidden_origin"), text)
                self.assertNotIn("Access-Control-Allow-Origin", headers)
        self.barrier("victim")
        self.assertEqual([task[2]["cmd"] for task in self.worker.tasks
                          if task[2].get("cmd", "").startswith("evil")], [])
        #  Nothing reached the context but the barrier's call
        self.assertEqual([m.get("_outputPath") for m in self.http.json(
            "GET", "/v1/contexts/victim/history")], [STATE + ".out"])

    def test_loopback_origins_are_served(self):
        port = self.http.port
        for origin in ("http://127.0.0.1:%d" % port, "http://localhost:%d" % port,
                       "http://LOCALHOST:3000", "https://localhost", "http://[::1]:%d" % port,
                       "http://127.1.2.3:8480"):
            with self.subTest(origin=origin):
                headers = {"Origin": origin, "Content-Type": "application/json"}
                self.assertEqual(self.call("loopback", "ok " + origin, headers),
                                 (200, "ran: ok " + origin))
                self.assertIn("uptime_ms", self.http.json("GET", "/v1/stats",
                                                          headers={"Origin": origin}))

    def test_a_foreign_host_is_refused_without_tokens(self):
        """DNS rebinding: the page's own name now resolves to 127.0.0.1,
        so the browser sends that name as Host and the page's origin as
        Origin (the same: a same-origin request to the browser)."""
        self.assertEqual(self.call("rebound", "first", JSON), (200, "ran: first"))
        evil = "evil.example:%d" % self.http.port
        for headers in ({"Host": evil}, {"Host": evil, "Origin": "http://" + evil},
                        {"Host": "evil.example"}, {"Host": "127.0.0.1.evil.example"},
                        {"Host": "localhost.evil.example:%d" % self.http.port},
                        {"Host": "10.0.0.1:%d" % self.http.port}):
            for method, path in (("GET", "/v1/contexts/rebound/history"),
                                 ("GET", "/v1/contexts"), ("GET", "/v1/stats"),
                                 ("GET", "/v1/contexts/rebound/events?from=1"),
                                 ("GET", "/metrics"), ("GET", "/healthz"), ("GET", "/"),
                                 ("GET", "/ui/api.js"), ("DELETE", "/v1/contexts/rebound")):
                with self.subTest(headers=headers, path=path):
                    status, _, text = self.http.request(method, path, headers=headers,
                                                        timeout=STREAM_TIMEOUT)
                    self.assertEqual((status, code(text)),
                                     (403, "forbidden_host"), text)
            with self.subTest(headers=headers, path="calls"):
                self.assertEqual(self.call("rebound", "rebound", dict(headers, **JSON)),
                                 (403, "forbidden_host"))
        self.assertFalse(self.ran("rebound"))
        self.assertEqual(len(self.http.json("GET", "/v1/contexts/rebound/history")), 1)
        #  Loopback names, as a browser or curl on this machine sends them
        for host in (self.own, "127.0.0.1", "localhost:%d" % self.http.port, "LocalHost",
                     "[::1]:%d" % self.http.port, "127.9.9.9:1"):
            with self.subTest(host=host):
                self.assertEqual(self.http.request("GET", "/healthz",
                                                   headers={"Host": host})[::2], (200, "ok\n"))
                self.assertEqual(len(self.http.json("GET", "/v1/contexts/rebound/history",
                                                    headers={"Host": host})), 1)

    def test_a_post_that_is_not_json_is_415(self):
        """Even from actd-http's own origin: a form or a text/plain post is
        what any page can make a browser send without asking."""
        own = "http://" + self.own
        for kind in ("text/plain;charset=UTF-8", "text/plain",
                     "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                     "application/jsonx", "application/json-seq", "text/json"):
            with self.subTest(type=kind):
                self.assertEqual(self.call("typed", "typed " + kind,
                                           {"Origin": own, "Content-Type": kind}),
                                 (415, "unsupported_media_type"))
                #  curl -d sends application/x-www-form-urlencoded: refused too
                self.assertEqual(self.http.error("POST", "/v1/contexts/typed/messages",
                                                 {"type": "note"}, {"Content-Type": kind}),
                                 (415, "unsupported_media_type"))
        #  A browser's body without a type (a no-cors fetch of a Blob)
        self.assertEqual(self.call("typed", "typeless", {"Origin": own}),
                         (415, "unsupported_media_type"))
        self.assertFalse(self.ran("typed"))
        #  JSON, with a charset or in capitals; a program may send no type
        for headers in ({"Origin": own, "Content-Type": "application/json; charset=utf-8"},
                        {"Content-Type": "Application/JSON;charset=UTF-8"}, {}):
            with self.subTest(headers=headers):
                self.assertEqual(self.call("typed", "json", headers), (200, "ran: json"))

    def test_the_dashboard_still_works(self):
        """The page and its modules from / and /ui/, then the requests
        share/dashboard/api.js makes, as Chromium sends them from the
        page: same-origin, so Origin (when sent) is the page's own."""
        own = "http://" + self.own
        status, headers, text = self.http.request("GET", "/", headers={"Host": self.own})
        self.assertEqual(status, 200)
        self.assertIn("<script", text)
        for module in sorted(os.listdir(DASHBOARD)):
            with self.subTest(module=module):
                status, _, _ = self.http.request("GET", "/ui/" + module,
                                                 headers={"Host": self.own, "Origin": own})
                self.assertEqual(status, 200)
        page = {"Host": self.own, "Accept": "application/json"}
        self.assertIn("workers", self.http.json("GET", "/v1/stats", headers=page))
        self.assertIn("contexts", self.http.json("GET", "/v1/contexts?prefix=&limit=100",
                                                 headers=page))
        call_id = self.http.json("POST", "/v1/contexts/dash/calls",
                                 {"_tool": "nobody-serves-this"}, JSON, status=202)["call_id"]
        self.assertEqual(self.http.json("GET", "/v1/calls/" + call_id, headers=page)["state"],
                         "queued")
        self.assertEqual(self.http.json("GET", "/v1/contexts/dash/history?from=1&limit=100",
                                        headers=page), [])
        status, _, text = self.http.request("GET", "/v1/contexts/dash/view?format=text",
                                            headers=page)
        self.assertEqual(status, 200)
        #  Cancel: a POST, which a browser sends with Origin, even same-origin
        self.assertEqual(self.http.json("POST", "/v1/calls/%s/cancel" % call_id, {},
                                        dict(page, Origin=own, **JSON)), {})
        wait_for(lambda: self.http.json("GET", "/v1/calls/" + call_id)["state"] == "cancelled",
                 "the call to be cancelled")
        #  The event stream (EventSource: a GET with the page's Origin)
        status, headers, _ = self.http.request("HEAD", "/v1/contexts/dash/events?all=1&from=1",
                                               headers={"Host": self.own, "Origin": own})
        self.assertEqual((status, headers["Content-Type"]), (200, "text/event-stream"))


class SettingsTest(unittest.TestCase):
    """http/allowed_hosts and http/allowed_origins, and tokens."""

    def setUp(self):
        self.actd = Actd().start()
        self.worker = Worker(self.actd.worker_endpoint, ["run_shell"], handler)
        self.worker.start()
        self.worker.ready.wait(5)
        self.http = None

    def tearDown(self):
        try:
            if self.http:
                self.http.finish()
        finally:
            self.worker.stop()
            self.actd.finish()

    def post(self, cmd, headers):
        """(status, error code or result) of a waited call."""
        status, _, text = self.http.request(
            "POST", "/v1/contexts/s/calls?wait=1&timeout_ms=20000",
            {"_tool": "run_shell", "cmd": cmd, "_outputPath": STATE + ".out"}, headers)
        body = json.loads(text)
        return status, body["error"]["code"] if "error" in body else body["result"]

    def test_allowed_hosts_and_origins_are_honoured(self):
        self.http = ActdHttp(self.actd.client_endpoint, args=["--dashboard-dir", DASHBOARD],
                             config="http\n"
                                    "    allowed_hosts = \"actd.example, 10.0.0.5:8480\"\n"
                                    "    allowed_origins = \"https://tools.example,"
                                    "http://10.0.0.5:8480\"\n")
        port = self.http.port
        #  A name of allowed_hosts, with any port; an address with its port only
        for host, status in (("actd.example:%d" % port, 200), ("ACTD.example", 200),
                             ("10.0.0.5:8480", 200), ("10.0.0.5:9999", 403), ("10.0.0.5", 403),
                             ("other.example:%d" % port, 403), ("localhost:%d" % port, 200)):
            with self.subTest(host=host):
                self.assertEqual(self.http.request("GET", "/v1/stats",
                                                   headers={"Host": host})[0], status)
        #  The dashboard opened by an allowed name: its Origin is its Host
        served = "actd.example:%d" % port
        self.assertEqual(self.http.request("GET", "/", headers={"Host": served})[0], 200)
        self.assertEqual(self.post("by-name", dict(JSON, Host=served,
                                                   Origin="http://" + served)),
                         (200, "ran: by-name"))
        #  Origins: exactly as listed
        for origin, expected in (("https://tools.example", (200, "ran: tools")),
                                 ("http://10.0.0.5:8480", (200, "ran: tools")),
                                 ("https://tools.example:443", (403, "forbidden_origin")),
                                 ("http://tools.example", (403, "forbidden_origin")),
                                 ("https://other.example", (403, "forbidden_origin")),
                                 ("http://actd.example:1", (403, "forbidden_origin"))):
            with self.subTest(origin=origin):
                self.assertEqual(self.post("tools", dict(JSON, Origin=origin)), expected)
        #  An allowed origin still cannot post a form
        self.assertEqual(self.post("form", {"Origin": "https://tools.example",
                                            "Content-Type": "text/plain"}),
                         (415, "unsupported_media_type"))

    def test_with_tokens_the_host_is_not_checked_but_the_origin_is(self):
        self.http = ActdHttp(self.actd.client_endpoint,
                             config="tokens\n    alice\n        token = %s\n" % TOKEN)
        evil = "evil.example:%d" % self.http.port
        good = {"Authorization": "Bearer " + TOKEN}
        #  The token defends: a rebound page has none
        self.assertEqual(self.http.error("GET", "/v1/contexts", headers={"Host": evil}),
                         (401, "unauthenticated"))
        self.assertIn("contexts", self.http.json("GET", "/v1/contexts",
                                                 headers=dict(good, Host=evil)))
        self.assertEqual(self.http.request("GET", "/healthz", headers={"Host": evil})[0], 200)
        self.assertEqual(self.post("remote", dict(good, Host=evil, **JSON)),
                         (200, "ran: remote"))
        #  A foreign Origin is refused, token or not
        self.assertEqual(self.post("evil", dict(good, Origin=EVIL, **JSON)),
                         (403, "forbidden_origin"))
        self.assertEqual(self.post("evil", dict(good, **SIMPLE)), (403, "forbidden_origin"))
        self.assertFalse(any(task[2].get("cmd") == "evil" for task in self.worker.tasks))

    def test_the_warning_beyond_loopback_names_allowed_hosts(self):
        port = free_port()
        with tempfile.TemporaryFile("w+") as log:
            exposed = subprocess.Popen([find_binary("actd-http"), "--listen",
                                        "0.0.0.0:%d" % port, "--endpoint",
                                        self.actd.client_endpoint], stdout=log,
                                       stderr=subprocess.STDOUT)
            try:
                wait_for(lambda: log.seek(0) == 0 and "listening on" in log.read(),
                         "actd-http on 0.0.0.0")
                log.seek(0)
                text = log.read()
                self.assertIn("WARNING: no bearer tokens and 0.0.0.0 is not loopback", text)
                self.assertIn("http/allowed_hosts (now: none)", text)
            finally:
                exposed.terminate()
                self.assertEqual(exposed.wait(30), 0)

    def test_bad_lists_stop_at_start(self):
        for text in ("allowed_origins = evil.example", "allowed_origins = \"https://a.example/\"",
                     "allowed_origins = \"https://a.example, ftp://b\"",
                     "allowed_origins = \"http://\"", "allowed_hosts = \"a b\"",
                     "allowed_hosts = \"a,,b\"", "allowed_hosts = a.example/x"):
            with self.subTest(text=text), tempfile.NamedTemporaryFile("w", suffix=".cfg") as cfg:
                cfg.write("http\n    %s\n" % text)
                cfg.flush()
                done = subprocess.run([find_binary("actd-http"), "--listen",
                                       "127.0.0.1:%d" % free_port(), "--config", cfg.name],
                                      capture_output=True, text=True, timeout=30)
                self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
                self.assertIn("bad or unknown setting http/allowed_", done.stderr)


if __name__ == "__main__":
    unittest.main()
