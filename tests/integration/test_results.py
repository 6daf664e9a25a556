#!/usr/bin/python3
"""A worker's RESULT body, from outside (issue 21): actd validates it with
its scanner, which accepts and refuses what its JSON parser does, keeps
the worker's text (a global set or push is parsed only when something
reads it) and reads it back as the value it is."""

import json
import unittest

from harness import Absent, Worker
from test_broker import BrokerCase


class RawWorker(Worker):
    """Answers each task with the bytes whose hex is params["hex"]."""

    def _answer(self, socket, task, activity, params, meta):
        socket.send_multipart([b"ACTW01", b"RESULT", task.encode(),
                               bytes.fromhex(params["hex"])])


class ResultTest(BrokerCase):
    standard = False

    def setUp(self):
        super().setUp()
        self.run_worker(RawWorker(self.actd.worker_endpoint, ["raw"], None, name="raw"))

    def raw_call(self, context, body, path="†out.v", method="set"):
        return self.call(context, {"_tool": "raw", "_outputPath": path,
                                   "_outputMethod": method, "hex": body.hex()})

    def test_bad_bodies_fail_the_call(self):
        """PROTOCOL 2: a RESULT body that is not JSON ends the call
        activity_failed, "worker X sent a bad result: ...", and writes
        nothing to its output."""
        bodies = [b'{"a":1,}', b'{"a":1,"a":2}', b'"\xff"', b'1\x00', b'', b'tru',
                  b'"\\ud800"', b'[' * 65 + b']' * 65, b'{"a":1} x', b'01']
        for index, body in enumerate(bodies):
            context = "bad%d" % index
            call_id, outcome = self.raw_call(context, body)
            self.assertEqual(outcome["status"], "error", (body, outcome))
            self.assertEqual(outcome["error"]["code"], "activity_failed", (body, outcome))
            self.assertTrue(outcome["error"]["message"].startswith(
                "worker raw sent a bad result: "), (body, outcome))
            self.assertNotIn("result", outcome)
            self.assertIs(self.resolve(context, "†out.v"), Absent)

    def test_kept_text_reads_back_as_its_value(self):
        """A set keeps the worker's bytes: resolution, a later merge, the
        view and the history see the value they hold."""
        body = (b' {"k": [1, 2.50, "caf\\u00e9", {"d": null}],\n'
                b'  "big": 9223372036854775807, "s": "\xe2\x80\xa0x"} ')
        value = {"k": [1, 2.5, "caf\u00e9", {"d": None}], "big": 9223372036854775807,
                 "s": "\u2020x"}
        call_id, outcome = self.raw_call("keep", body)
        self.assertEqual(outcome["status"], "ok", outcome)
        self.assertEqual(outcome["result"], value)
        #  The stored message nests the bytes as they came
        history = self.client.request("HISTORY", "keep", "1", "10")
        self.assertEqual(history[0], "VALUE", history)
        self.assertEqual(json.loads(history[1])[0]["data"], {"v": value}, history)
        self.assertEqual(self.resolve("keep", "†out.v.k.2"), "caf\u00e9")
        self.assertEqual(self.resolve("keep", "†out.v.big"), 9223372036854775807)
        #  A second set beside it, unread, and a merge into the first
        call_id, outcome = self.raw_call("keep", b'[true]', path="†out.w")
        self.assertEqual(outcome["status"], "ok", outcome)
        call_id, outcome = self.raw_call("keep", b'{"k": null, "m": 1}', method="merge")
        self.assertEqual(outcome["status"], "ok", outcome)
        merged = {"big": 9223372036854775807, "s": "\u2020x", "m": 1}
        self.assertEqual(self.resolve("keep", "†out"), {"v": merged, "w": [True]})
        view = json.loads(self.client.request("VIEW", "keep", "json")[1])
        self.assertEqual([entry["data"] for entry in view], [{"v": merged, "w": [True]}])

    def test_integer_beyond_int64_is_a_double(self):
        """SEMANTICS 1: in a kept result too, read when resolved."""
        call_id, outcome = self.raw_call("big", b'{"b": 18446744073709551616}')
        self.assertEqual(outcome["status"], "ok", outcome)
        self.assertEqual(self.client.request("RESOLVE", "big", "†out.v"),
                         ["VALUE", '{"b":1.8446744073709552e+19}'])
        #  An APPEND with such a number, written with white space
        reply = self.client.request("APPEND", "big",
                                    '{"type": "data", "data": {"a": 18446744073709551616}}')
        self.assertEqual(reply[0], "OK", reply)
        #  HISTORY reads both messages with that double (a stored text
        #  holding such a number was once left out), and so does the
        #  context loaded again from the store after a restart
        history = self.client.request("HISTORY", "big", "1", "10")
        self.assertEqual(history[0], "VALUE", history)
        self.assertEqual([message["data"] for message in json.loads(history[1])],
                         [{"v": {"b": 1.8446744073709552e+19}}, {"a": 1.8446744073709552e+19}])
        self.client.close()
        self.assertEqual(self.actd.stop(), 0, self.actd.log()[-3000:])
        self.actd.start()
        self.client = self.actd.client()
        self.addCleanup(self.client.close)
        self.assertEqual(self.client.request("RESOLVE", "big", "†out.v"),
                         ["VALUE", '{"b":1.8446744073709552e+19}'])
        self.assertEqual(self.client.request("RESOLVE", "big", "†data.a"),
                         ["VALUE", '1.8446744073709552e+19'])

    def test_numbers_are_written_in_their_shortest_form(self):
        """SEMANTICS 1: a number is written back in the shortest form that
        reads back as the same double, in every reply and stored message:
        DONE's result too, though the worker wrote it otherwise."""
        body = b'{"v":0.10000000000000001,"w":1E2,"n":18446744073709551616,"z":-0,"i":7}'
        rid = self.client.send("CALL", "short", {"_tool": "raw", "_outputPath": "†out.v",
                                                 "hex": body.hex()})
        call_id = self.client.wait(rid, "ACCEPTED")[1]
        done = self.client.wait(rid, "DONE", timeout=30)
        self.assertEqual(done[1], call_id)
        written = '{"v":0.1,"w":100.0,"n":1.8446744073709552e+19,"z":0,"i":7}'
        self.assertIn('"result":' + written, done[2])
        history = self.client.request("HISTORY", "short", "1", "10")
        self.assertIn('"data":{"v":' + written + "}", history[1])
        self.assertEqual(self.client.request("RESOLVE", "short", "†out.v"), ["VALUE", written])
        #  A STATUS rebuilt from the store after a restart says the same
        self.client.close()
        self.assertEqual(self.actd.stop(), 0, self.actd.log()[-3000:])
        self.actd.start()
        self.client = self.actd.client()
        self.addCleanup(self.client.close)
        status = self.client.request("STATUS", call_id)
        self.assertIn('"result":' + written, status[1])

    def test_a_deep_result_under_a_deep_path_stays_readable(self):
        """A result and a call may each nest 64 levels; their stored
        message nests deeper (a level per output path segment, the call
        as _call). HISTORY left such a message out and a restart lost the
        written value, without a word (a stress audit)."""
        deep = b"[" * 63 + b"1" + b"]" * 63                  # 64 levels
        path = "†s." + ".".join("k%d" % i for i in range(63))
        call_id, outcome = self.raw_call("deep", deep, path=path)
        self.assertEqual(outcome["status"], "ok", outcome)
        params = json.loads("[" * 62 + "1" + "]" * 62)      # the call: 64 levels
        rid = self.client.send("CALL", "deep", {"_tool": "raw", "_outputPath": "†s.x",
                                                "hex": b'"small"'.hex(), "p": params})
        self.assertEqual(self.client.wait(rid, "DONE", timeout=30)[2].count('"ok"'), 1)
        for when in ("before", "after"):
            history = json.loads(self.client.request("HISTORY", "deep", "1", "10")[1])
            self.assertEqual([m["_seq"] for m in history], [1, 2], when)
            self.assertEqual(self.client.request("RESOLVE", "deep", path),
                             ["VALUE", deep.decode()], when)
            self.assertEqual(self.client.request("RESOLVE", "deep", "†s.x"),
                             ["VALUE", '"small"'], when)
            if when == "before":
                self.client.close()
                self.assertEqual(self.actd.stop(), 0, self.actd.log()[-3000:])
                self.actd.start()
                self.client = self.actd.client()
                self.addCleanup(self.client.close)

    def test_pushes_and_writes_through_kept_text(self):
        """Pushes keep their texts too; writes through them, and writes
        that a kept value refuses, behave as on a parsed one."""
        for body in (b'{"n": 1}', b'"two"', b'[3]'):
            call_id, outcome = self.raw_call("log", body, path="†out.log", method="push")
            self.assertEqual(outcome["status"], "ok", outcome)
        call_id, outcome = self.raw_call("log", b'4', path="†out.log.0.n")
        self.assertEqual(outcome["status"], "ok", outcome)
        #  A key into the kept array is bad_path, as on a parsed array
        call_id, outcome = self.raw_call("log", b'5', path="†out.log.k")
        self.assertEqual(outcome["status"], "error", outcome)
        self.assertEqual(outcome["error"]["code"], "bad_path", outcome)
        call_id, outcome = self.raw_call("log", b'"x"', path="†out.str")
        call_id, outcome = self.raw_call("log", b'1', path="†out.str", method="push")
        self.assertEqual(outcome["error"]["code"], "type_mismatch", outcome)
        self.assertEqual(self.resolve("log", "†out.log"), [{"n": 4}, "two", [3]])
        self.assertEqual(self.resolve("log", "†out.str"), "x")


if __name__ == "__main__":
    unittest.main()
