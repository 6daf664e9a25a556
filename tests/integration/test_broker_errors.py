"""The actd broker: ACT/1's errors end to end (PROTOCOL.md section 3): each
error code for the request that earns it, the limits, clients that drop,
REQ clients, random garbage from clients and workers (actd answers or
drops it and stays up), and the example C worker. Split from
test_broker.py, whose helpers (BrokerCase, the standard worker) it uses.

Run: ACTD_BIN=build-x/bin/actd /usr/bin/python3 -m unittest -v test_broker_errors
"""

import json
import os
import random
import subprocess
import time
import unittest

import harness

import zmq

from harness import find_binary, wait_for
from test_broker import COMMANDS, BrokerCase, enc


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


class IdRepeatTest(BrokerCase):
    """SEMANTICS 7: a CALL repeating a live call's _id waits for that call's
    DONE. Each such request is one more recipient of it; they are bounded
    (ACT_LIVE_MAX_RECIPIENTS, 1,024): past that, busy. Before, a client
    repeating an _id grew them without bound, at a cost quadratic in
    their number (each new one compared with all)."""

    def test_repeats_of_a_live_calls_id_are_bounded(self):
        context = "idem-many"
        call = {"_tool": "later", "_id": "k", "_outputPath": "†state.r", "value": 7}
        rids = [self.client.send("CALL", context, enc(call)) for _ in range(1100)]
        replies = [self.client.wait(rid, timeout=60) for rid in rids]
        accepted = [rid for rid, reply in zip(rids, replies) if reply[0] == "ACCEPTED"]
        busy = [reply for reply in replies if reply[0] == "ERROR"]
        self.assertEqual(len(accepted), 1024)
        self.assertEqual(len(busy), 1100 - 1024)
        self.assertEqual(busy[0][:2], ["ERROR", "busy"])
        self.assertIn("1024 requests waiting for its DONE", busy[0][2])
        call_id = replies[0][1]
        self.assertEqual({reply[1] for reply in replies if reply[0] == "ACCEPTED"}, {call_id})
        #  Each accepted one gets the DONE, once the call ends
        later = self.start_worker(["later"], lambda activity, params, meta: params["value"],
                                  "later")
        for rid in accepted:
            self.assertEqual(self.done(rid, call_id)["result"], 7)
        self.assertEqual(len(later.tasks), 1)


if __name__ == "__main__":
    unittest.main()
