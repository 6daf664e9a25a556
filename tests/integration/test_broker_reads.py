"""The actd broker: what reads show, end to end: numbers in their shortest
form, HISTORY's texts as stored, STATS (PROTOCOL.md section 4) and STATUS.
Split from test_broker.py, whose helpers (BrokerCase, the standard
worker) it uses.

Run: ACTD_BIN=build-x/bin/actd /usr/bin/python3 -m unittest -v test_broker_reads
"""

import json
import re
import unittest

from harness import NoAnswer, Worker, wait_for
from test_broker import BrokerCase, DeferredWorker, standard


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


class AppendKeyBytesTest(BrokerCase):
    """An APPEND key is 1-128 bytes, any bytes (PROTOCOL.md 1.1): a raw
    UUID with a NUL was refused ("1 to 128 bytes"), and on PostgreSQL a
    key not UTF-8 failed the store's lookup (ERROR internal)."""

    standard = False

    def append(self, value, key):
        return self.client.request("APPEND", "kb", {"type": "data", "kind": "k",
                                                    "data": {"n": value}}, key)

    def test_keys_of_any_bytes_append_once_each_across_a_restart(self):
        keys = [b"\x07\x00\x01" + bytes(range(200, 213)),   # a NUL: raw UUID-like
                b"\xc3\x28-not-utf8", b"\x00", bytes(range(256))[:128],
                b"plain", b"\x01" + b"706c61696e",             # \x01 + hex of "plain"
                b"\x01" + b"00"]                               # \x01 + hex of "\x00"
        seqs = [self.append(n, key) for n, key in enumerate(keys)]
        self.assertEqual(seqs, [["OK", '{"seq":%d}' % n] for n in range(1, len(keys) + 1)])
        self.assertEqual([self.append(99, key) for key in keys], seqs)
        self.client.close()
        self.actd.kill()
        self.actd.start()
        self.client = self.actd.client()
        self.assertEqual([self.append(99, key) for key in keys], seqs)
        self.assertEqual(self.client.request("RESOLVE", "kb", "\u2020k.n"),
                         ["VALUE", str(len(keys) - 1)])
        for bad in (b"", b"x" * 129):
            self.assertEqual(self.append(0, bad)[:2], ["ERROR", "bad_argument"])


if __name__ == "__main__":
    unittest.main()
