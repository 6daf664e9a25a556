"""The C client library (act_client_append_key through actctl append, and
actd-http's raw act_client_send): an
APPEND without a key, from a client that may send it again (several
brokers known, or a moved reply sending it on), is given one, a random
UUID chosen once and kept across every resend, so a retry at another
broker after a timeout (a third of the client's timeout) is the same
APPEND, which actd stores once (PROTOCOL.md section 2). A key given is
kept; with one broker nothing is added.

Scripted brokers (test_client_library's FakeBroker) record the APPEND
frames; a relay in front of a real actd shows the outcome: the first
APPEND reaches actd but its reply is lost, the client sends it again to
actd itself, and the context holds the message once."""

import json
import os
import re
import subprocess
import sys
import threading
import unittest

import zmq

from harness import Actd, find_binary
from test_client_library import FakeBroker

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "workers", "python"))
from actd import _wire  # noqa: E402  (the routing rule every library shares)

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
MESSAGE = json.dumps({"type": "data", "kind": "k", "data": {"n": 1}})


def actctl_append(endpoints, context, *options, timeout_ms=3000):
    """actctl append MESSAGE to context through endpoints; (exit code,
    stdout + stderr)."""
    run = subprocess.run([find_binary("actctl"), "--endpoint", ",".join(endpoints),
                          "--timeout", str(timeout_ms), "--json", "append", context, MESSAGE]
                         + list(options), capture_output=True, text=True, timeout=60)
    return run.returncode, run.stdout + run.stderr


def context_first_at(endpoints, endpoint, prefix):
    """A context id whose rendezvous order puts endpoint first."""
    number = 0
    while _wire.rendezvous(endpoints, "%s-%d" % (prefix, number))[0] != endpoint:
        number += 1
    return "%s-%d" % (prefix, number)


class Recorder:
    """The APPENDs (their frames from the context on) each scripted broker
    got, by name; ok answers them OK {"seq":1}, silent not at all."""

    def __init__(self):
        self.appends = {}

    def answer(self, name, verb):
        def answer(command, request, args):
            if command != "APPEND":
                return None
            self.appends.setdefault(name, []).append(args)
            return verb(request) if verb else None
        return answer


def ok(request):
    return [b"OK", request, b'{"seq":1}']


class ScriptedAppendKeyTest(unittest.TestCase):

    def silent_then_live(self, *options):
        """actctl append to a broker that never answers, then to one that
        answers: the frames each got."""
        recorder = Recorder()
        with FakeBroker(recorder.answer("silent", None)) as silent, \
                FakeBroker(recorder.answer("live", ok)) as live:
            endpoints = [silent.endpoint, live.endpoint]
            context = context_first_at(endpoints, silent.endpoint, "retried")
            code, out = actctl_append(endpoints, context, *options)
        self.assertEqual(code, 0, out)
        self.assertEqual(json.loads(out), {"seq": 1})
        #  Once to each at least (more should the live one be slow)
        self.assertTrue(recorder.appends.get("silent") and recorder.appends.get("live"),
                        recorder.appends)
        return recorder.appends["silent"] + recorder.appends["live"]

    def test_an_append_sent_again_after_a_timeout_keeps_the_key_it_was_given(self):
        first, *again = self.silent_then_live()
        self.assertEqual(len(first), 3, first)
        self.assertRegex(first[2].decode(), UUID)
        self.assertEqual(again, [first] * len(again))       # The same key
        self.assertEqual(first[1].decode(), MESSAGE)

    def test_a_key_given_is_kept(self):
        first, *again = self.silent_then_live("--key", "mine")
        self.assertEqual(first[2:], [b"mine"])
        self.assertEqual(again, [first] * len(again))

    def test_one_broker_adds_no_key(self):
        recorder = Recorder()
        with FakeBroker(recorder.answer("live", ok)) as live:
            code, out = actctl_append([live.endpoint], "ctx")
        self.assertEqual(code, 0, out)
        self.assertEqual([len(args) for args in recorder.appends["live"]], [2])

    def test_an_append_sent_on_after_moved_gets_a_key(self):
        """The moved broker stored nothing, but the owner may store the
        APPEND and fall silent, and the client send it on again."""
        recorder = Recorder()
        with FakeBroker(recorder.answer("owner", ok)) as owner:
            def moved(request):
                return [b"ERROR", request, b"moved", owner.endpoint.encode()]
            with FakeBroker(recorder.answer("first", moved)) as first:
                code, out = actctl_append([first.endpoint], "ctx")
        self.assertEqual(code, 0, out)
        (to_first,), (to_owner,) = recorder.appends["first"], recorder.appends["owner"]
        self.assertEqual(len(to_first), 2)                  # One broker known: none
        self.assertEqual(to_owner[:2], to_first)
        self.assertRegex(to_owner[2].decode(), UUID)


class AppendOnceTest(unittest.TestCase):
    """A real actd behind a relay that loses its replies."""

    def test_an_append_retried_after_a_lost_reply_is_stored_once(self):
        with Actd() as actd:
            upstream = zmq.Context.instance().socket(zmq.DEALER)
            upstream.linger = 0
            upstream.connect(actd.client_endpoint)
            lock = threading.Lock()
            relayed = []

            def forward(command, request, args):
                relayed.append(command)
                with lock:
                    upstream.send_multipart([b"ACTC01", command.encode(), request] + args)
            try:
                with FakeBroker(forward) as relay:
                    endpoints = [relay.endpoint, actd.client_endpoint]
                    context = context_first_at(endpoints, relay.endpoint, "once")
                    code, out = actctl_append(endpoints, context)
                self.assertEqual(code, 0, out)
                self.assertEqual(json.loads(out), {"seq": 1})
                self.assertIn("APPEND", relayed)            # It reached actd first
                reader = actd.client()
                history = reader.request("HISTORY", context, "1", "10")
                reader.close()
                self.assertEqual(history[0], "VALUE", history)
                self.assertEqual([m["_seq"] for m in json.loads(history[1])], [1])
            finally:
                upstream.close()

    def test_actd_http_append_resent_after_a_dropped_connection_is_stored_once(self):
        """actd-http's requests take the library's raw path (act_client_send):
        with two brokers, an APPEND whose connection drops before its
        reply is sent on to the other, which is the same actd here. The
        relay forwards the APPEND, waits for actd's OK (it is stored),
        then closes instead of answering: the message must be stored once
        (it was twice: no key on that path)."""
        from test_http import ActdHttp
        with Actd() as actd:
            upstream = zmq.Context.instance().socket(zmq.DEALER)
            upstream.linger = 0
            upstream.connect(actd.client_endpoint)
            relay = zmq.Context.instance().socket(zmq.ROUTER)
            relay.linger = 0
            port = relay.bind_to_random_port("tcp://127.0.0.1")
            endpoints = ["tcp://127.0.0.1:%d" % port, actd.client_endpoint]
            context = context_first_at(endpoints, endpoints[0], "http")
            forwarded = []

            def serve():
                while relay.poll(30000):
                    frames = relay.recv_multipart()
                    identity, rest = frames[0], frames[1:]
                    upstream.send_multipart(rest)
                    reply = upstream.recv_multipart() if upstream.poll(10000) else None
                    if rest[1] == b"APPEND":
                        forwarded.append((rest[3:], reply))
                        relay.close(0)          # The connection drops, unanswered
                        return
                    if reply:
                        relay.send_multipart([identity] + reply)
            thread = threading.Thread(target=serve, daemon=True)
            thread.start()
            http = ActdHttp(",".join(endpoints))
            try:
                status, _, text = http.request("POST", "/v1/contexts/%s/messages" % context,
                                               MESSAGE)
                thread.join(30)
                self.assertEqual(len(forwarded), 1, forwarded)
                self.assertEqual(forwarded[0][1][1], b"OK", forwarded)     # Stored
                self.assertEqual(status, 200, text)
                self.assertEqual(json.loads(text), {"seq": 1})
                reader = actd.client()
                history = reader.request("HISTORY", context, "1", "10")
                reader.close()
                self.assertEqual([m["_seq"] for m in json.loads(history[1])], [1])
            finally:
                http.finish()
                upstream.close()
                if not relay.closed:
                    relay.close(0)


if __name__ == "__main__":
    unittest.main()
