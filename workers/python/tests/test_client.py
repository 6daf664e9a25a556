"""actd.Client against the real actd: every method (PROTOCOL.md section 1)
and the ERROR codes of section 3 raised as actd.ActdError subclasses."""

import asyncio
import os
import tempfile
import threading
import time
import unittest
from typing import Any, Dict, List, Optional

from support import TIMEOUT, Actd, BrokerTest, FakeBroker

import actd
import actd.aio


class ClientTest(BrokerTest):
    """One actd and one Python worker serving "upper", "echo" and "gate"."""

    worker_name = "client-test-worker"

    def test_call_with_output_path_returns_the_outcome(self) -> None:
        outcome = self.client.call("c-call", {"_tool": "upper", "text": "abc",
                                              "_outputPath": "†out.text"}, timeout=TIMEOUT)
        self.assertIsInstance(outcome, actd.Outcome)
        self.assertEqual(outcome.raw, {"call_id": outcome.call_id, "status": "ok", "branch": 0,
                                       "written": ["†out.text"], "seqs": [1], "result": "ABC",
                                       "attempts": 1})
        self.assertTrue(outcome.ok)
        self.assertIs(outcome.raise_for_error(), outcome)

    def test_call_without_wait_returns_the_call_id(self) -> None:
        call_id = self.client.call("c-nowait", {"_tool": "upper", "text": "x",
                                                "_outputPath": "†x"}, wait=False)
        self.assertIsInstance(call_id, str)
        outcome = self.client.wait(call_id, timeout=TIMEOUT)
        self.assertEqual((outcome.call_id, outcome.status, outcome.result), (call_id, "ok", "X"))
        self.assertEqual(self.client.resolve("c-nowait", "†x"), "X")
        self.assertEqual(self.client.pending, 0)

    def test_fire_and_forget_call_returns_the_call_id_and_appends_nothing(self) -> None:
        call_id = self.client.call("c-forget", {"_tool": "echo", "n": 1})
        self.assertIsInstance(call_id, str)
        outcome = self.client.wait(call_id, timeout=TIMEOUT)
        self.assertEqual((outcome.status, outcome.written, outcome.seqs, outcome.has_result),
                         ("ok", [], [], False))
        self.assertEqual(list(self.client.history("c-forget")), [])

    def test_submit_pipelines_many_calls(self) -> None:
        handles = [self.client.submit("c-submit", {"_tool": "upper", "text": "t%d" % n,
                                                   "_outputPath": "†out.n%d" % n})
                   for n in range(50)]
        outcomes = [handle.outcome(TIMEOUT) for handle in handles]
        self.assertEqual([o.result for o in outcomes], ["T%d" % n for n in range(50)])
        self.assertEqual({o.status for o in outcomes}, {"ok"})
        self.assertEqual(len({o.call_id for o in outcomes}), 50)
        self.assertTrue(all(handle.done() for handle in handles))
        self.assertEqual(self.client.pending, 0)

    def test_client_is_safe_to_share_between_threads(self) -> None:
        results: Dict[int, List[Any]] = {}

        def run(thread: int) -> None:
            results[thread] = [self.client.call("c-threads", {
                "_tool": "echo", "t": thread, "n": n, "_outputPath": "†t%d.n%d" % (thread, n)},
                timeout=TIMEOUT).result for n in range(20)]

        threads = [threading.Thread(target=run, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT * 2)
        self.assertEqual(results, {t: [{"t": t, "n": n} for n in range(20)] for t in range(8)})

    def test_plan_returns_outcomes_and_ids_in_order(self) -> None:
        results = self.client.plan("c-plan", [
            {"_tool": "upper", "text": "a", "_outputPath": "†p.a"},
            {"_tool": "upper", "text": "†p.a", "_outputPath": "†p.b"},   # waits for the first
            {"_tool": "echo", "n": 3},
        ], timeout=TIMEOUT)
        first, second, third = results
        self.assertIsInstance(first, actd.Outcome)
        self.assertIsInstance(second, actd.Outcome)
        self.assertIsInstance(third, str)
        self.assertEqual((first.status, first.result), ("ok", "A"))
        self.assertEqual((second.status, second.result), ("ok", "A"))
        self.assertEqual(self.client.resolve("c-plan", "†p"), {"a": "A", "b": "A"})

    def test_plan_without_wait_returns_the_call_ids(self) -> None:
        ids = self.client.plan("c-plan2", [
            {"_tool": "upper", "text": "a", "_outputPath": "†q.a"},
            {"_tool": "echo", "n": 2},
        ], wait=False)
        self.assertEqual(len(ids), 2)
        self.assertTrue(all(isinstance(call_id, str) for call_id in ids))
        outcomes = [self.client.wait(call_id, timeout=TIMEOUT) for call_id in ids]
        self.assertEqual([o.status for o in outcomes], ["ok", "ok"])
        self.assertEqual(self.client.resolve("c-plan2", "†q.a"), "A")

    def test_plan_takes_any_sequence_of_calls(self) -> None:
        calls = ({"_tool": "upper", "text": "a", "_outputPath": "†tuple.a"},
                 {"_tool": "echo", "n": 2})
        ids = self.client.plan("c-tuple", calls, wait=False)
        self.assertEqual([type(call_id) for call_id in ids], [str, str])
        outcome, call_id = self.client.submit_plan("c-tuple", calls).results(TIMEOUT)
        self.assertEqual((outcome.status, outcome.result), ("ok", "A"))
        self.assertIsInstance(call_id, str)
        self.assertEqual(self.client.pending, 0)

        async def main() -> List[Any]:
            async with actd.aio.AsyncClient(self.broker.client_endpoint) as client:
                return await client.plan("c-tuple", calls, wait=False)

        self.assertEqual(len(asyncio.run(asyncio.wait_for(main(), TIMEOUT))), 2)

    def test_append_returns_the_seq_and_resolve_reads_the_merge(self) -> None:
        self.assertEqual(self.client.append("c-append", {"type": "data", "kind": "user",
                                                         "data": {"name": "ada"}}), 1)
        self.assertEqual(self.client.append("c-append", {"type": "data", "kind": "user",
                                                         "data": {"age": 36}}), 2)
        self.assertEqual(self.client.append("c-append", {"type": "text", "text": "hi"}), 3)
        self.assertEqual(self.client.resolve("c-append", "†user"), {"name": "ada", "age": 36})
        self.assertEqual(self.client.resolve("c-append", "†user.age"), 36)
        self.assertEqual(self.client.resolve("c-append", "†user.nick || †user.name"), "ada")

    def test_resolve_in_an_instance(self) -> None:
        self.client.append("c-instance", {"type": "data", "kind": "s", "data": {"v": 1, "w": 1}})
        self.client.append("c-instance", {"type": "data", "kind": "s", "_instance": "i1",
                                          "data": {"v": 2}})
        self.assertEqual(self.client.resolve("c-instance", "†s"), {"v": 1, "w": 1})
        self.assertEqual(self.client.resolve("c-instance", "†s", instance="i1"), {"v": 2, "w": 1})

    def test_resolve_of_an_absent_value_raises_not_found(self) -> None:
        self.client.append("c-absent", {"type": "data", "kind": "user", "data": {"name": "a"}})
        with self.assertRaises(actd.NotFound) as raised:
            self.client.resolve("c-absent", "†user.age")
        self.assertEqual(raised.exception.code, "not_found")
        self.assertIsInstance(raised.exception, actd.ActdError)

    def test_view_as_json_and_text(self) -> None:
        self.client.append("c-view", {"type": "data", "kind": "user", "data": {"name": "ada"},
                                      "description": "The user", "schema": {"type": "object"}})
        self.client.append("c-view", {"type": "data", "kind": "user", "_instance": "i1",
                                      "data": {"name": "bob"}})
        self.client.append("c-view", {"type": "text", "text": "not in the view"})
        self.assertEqual(self.client.view("c-view"), [
            {"type": "data", "kind": "user", "data": {"name": "ada"}, "description": "The user",
             "schema": {"type": "object"}},
            {"type": "data", "kind": "user", "_instance": "i1", "data": {"name": "bob"}}])
        self.assertEqual(self.client.view("c-view", format="text"),
                         '## Data: \u00b6user\n{\n  "name": "ada"\n}\nThe user\n'
                         'Schema for \u00b6user:\n{\n  "type": "object"\n}\n\n'
                         '## Data: \u00b6user (instance i1)\n{\n  "name": "bob"\n}\n')

    def test_history_iterates_page_by_page(self) -> None:
        for n in range(7):
            self.client.append("c-history", {"type": "text", "n": n})
        first = list(self.client.history("c-history", from_seq=3, limit=2))
        self.assertEqual([(m["_seq"], m["n"], m["type"]) for m in first],
                         [(3, 2, "text"), (4, 3, "text")])
        self.assertTrue(all(isinstance(m["_date"], str) for m in first))

        def seqs(**options: Any) -> List[int]:
            return [m["_seq"] for m in self.client.history("c-history", **options)]

        self.assertEqual(seqs(), list(range(1, 8)))
        self.assertEqual(seqs(page_size=3), list(range(1, 8)))
        self.assertEqual(seqs(from_seq=5, page_size=2), [5, 6, 7])
        # A last full page: the iterator asks once more and stops on empty
        self.assertEqual(seqs(page_size=7), list(range(1, 8)))
        # limit across pages, and limit 0 (nothing is asked)
        self.assertEqual(seqs(from_seq=2, limit=5, page_size=2), [2, 3, 4, 5, 6])
        self.assertEqual(seqs(limit=0), [])
        self.assertEqual(seqs(from_seq=8), [])
        with self.assertWarns(DeprecationWarning):
            old = self.client.iter_history("c-history", from_seq=6, page_size=1)
        self.assertEqual([m["_seq"] for m in old], [6, 7])

    def test_history_page_size_is_checked_before_anything_is_sent(self) -> None:
        # actd takes 1 to 1000 (more is bad_argument), as for contexts()
        async_client = actd.aio.AsyncClient(self.broker.client_endpoint)
        for page_size in (0, 1001):
            with self.assertRaises(ValueError):
                self.client.history("c-pages", page_size=page_size)
            with self.assertRaises(ValueError):
                async_client.history("c-pages", page_size=page_size)
        self.client.append("c-pages", {"type": "text", "text": "one"})
        self.assertEqual(len(list(self.client.history("c-pages", page_size=1000))), 1)

    def test_status_of_waiting_running_and_ended_calls(self) -> None:
        producer = self.client.submit("c-status", {"_tool": "gate", "value": "v",
                                                   "_outputPath": "†dep.x"})
        producer_id = producer.accepted(TIMEOUT)
        self.assertTrue(self.gate.entered.wait(TIMEOUT))
        consumer = self.client.submit("c-status", {"_tool": "upper", "text": "†dep.x",
                                                   "_outputPath": "†dep.y"})
        consumer_id = consumer.accepted(TIMEOUT)
        running = self.client.status(producer_id)
        waiting = self.client.status(consumer_id)
        self.assertEqual(running.raw, {"call_id": producer_id, "context": "c-status",
                                       "state": "running", "attempts": 1, "tool": "gate",
                                       "output_path": "†dep.x"})
        self.assertEqual(waiting.raw, {"call_id": consumer_id, "context": "c-status",
                                       "state": "waiting", "attempts": 0,
                                       "waiting_on": ["†dep.x"], "tool": "upper",
                                       "output_path": "†dep.y", "references": ["†dep.x"]})
        self.assertEqual(waiting.waiting_on, ["†dep.x"])
        self.assertFalse(waiting.ended)
        self.gate.release()
        done = consumer.outcome(TIMEOUT)
        self.assertEqual((done.status, done.result), ("ok", "V"))
        ended = self.client.status(consumer_id)
        self.assertTrue(ended.ended)
        self.assertEqual(ended.state, "ok")
        self.assertEqual(ended.outcome, done)
        self.assertEqual(producer.outcome(TIMEOUT).result, "v")

    def test_status_of_an_unknown_call_raises_not_found(self) -> None:
        with self.assertRaises(actd.NotFound) as raised:
            self.client.status("987654321")
        self.assertEqual(raised.exception.code, "not_found")

    def test_cancel_a_queued_call_and_an_ended_one(self) -> None:
        queued = self.client.submit("c-cancel", {"_tool": "nobody-serves-this",
                                                 "_outputPath": "†never"})
        call_id = queued.accepted(TIMEOUT)
        self.assertEqual(self.client.status(call_id).state, "queued")
        self.assertIsNone(self.client.cancel(call_id))
        outcome = queued.outcome(TIMEOUT)
        self.assertEqual((outcome.status, outcome.code, outcome.attempts),
                         ("cancelled", "cancelled", 0))
        ok = self.client.call("c-cancel", {"_tool": "upper", "text": "y", "_outputPath": "†y"},
                              timeout=TIMEOUT)
        self.client.cancel(ok.call_id)          # has ended: nothing changes
        self.assertEqual(self.client.status(ok.call_id).outcome, ok)
        with self.assertRaises(actd.NotFound):
            self.client.cancel("987654321")

    def test_stats_lists_the_python_worker(self) -> None:
        stats = self.client.stats()
        # PROTOCOL 4's fields (actd may add more, e.g. "store")
        self.assertLessEqual({"uptime_ms", "contexts", "messages", "calls", "activities",
                              "workers"}, set(stats))
        self.assertEqual(set(stats["calls"]), {"accepted", "ok", "error", "timeout", "skipped",
                                               "cancelled", "running", "queued", "waiting"})
        worker = [w for w in stats["workers"] if w["name"] == "client-test-worker"]
        self.assertEqual(worker, [{"name": "client-test-worker",
                                   "activities": ["upper", "echo", "gate"], "capacity": 4,
                                   "running": 0, "lang": "python"}])
        self.assertEqual(stats["activities"]["upper"]["workers"], 1)

    def test_ping_answers(self) -> None:
        self.assertGreaterEqual(self.client.ping(), 0.0)

    def test_endpoint_may_be_a_list_of_one(self) -> None:
        with actd.Client([self.broker.client_endpoint]) as client:
            self.assertGreaterEqual(client.ping(), 0.0)
        with self.assertRaises(ValueError):
            actd.Client([self.broker.client_endpoint, self.broker.client_endpoint])

    def test_endpoint_is_a_deprecated_name_of_endpoints(self) -> None:
        with actd.Client(endpoints=self.broker.client_endpoint) as client:
            self.assertGreaterEqual(client.ping(), 0.0)
        with self.assertWarns(DeprecationWarning):
            old = actd.Client(endpoint=self.broker.client_endpoint)
        with old:
            self.assertGreaterEqual(old.ping(), 0.0)
        with self.assertWarns(DeprecationWarning):
            async_client = actd.aio.AsyncClient(endpoint=[self.broker.client_endpoint])
        self.assertEqual(async_client.endpoints, [self.broker.client_endpoint])
        with self.assertWarns(DeprecationWarning):
            worker = actd.Worker(endpoint=self.broker.worker_endpoint)
        self.assertEqual(worker.endpoints, [self.broker.worker_endpoint])
        worker.close()
        with self.assertRaises(TypeError):
            actd.Client(endpoints="tcp://127.0.0.1:1", endpoint="tcp://127.0.0.1:2")


class ErrorTest(unittest.TestCase):
    """ERROR replies raise the ActdError subclass of their code."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = tempfile.TemporaryDirectory(prefix="actd-python-")
        config = os.path.join(cls.dir.name, "actd.conf")
        with open(config, "w") as handle:
            handle.write("activities\n    full\n        max_queue = 1\n")
        cls.broker = Actd(args=["--config", config])
        cls.broker.__enter__()
        cls.client = actd.Client(cls.broker.client_endpoint, timeout=TIMEOUT)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.broker.__exit__(None, None, None)
        cls.dir.cleanup()

    def assertRefused(self, cls: type, code: str, request: Any) -> actd.ActdError:
        with self.assertRaises(cls) as raised:
            request()
        self.assertIsInstance(raised.exception, actd.ActdError)
        self.assertEqual(raised.exception.code, code)
        self.assertTrue(raised.exception.message)
        return raised.exception

    def test_bad_context(self) -> None:
        self.assertRefused(actd.BadContext, "bad_context",
                           lambda: self.client.call("bad context", {"_tool": "x"}))

    def test_bad_call(self) -> None:
        self.assertRefused(actd.BadCall, "bad_call",
                           lambda: self.client.call("e", {"no_tool": True}))
        self.assertRefused(actd.BadCall, "bad_call",
                           lambda: self.client.call("e", {"_tool": "x", "_timeout": "soon"}))

    def test_bad_json(self) -> None:
        self.assertRefused(actd.BadJson, "bad_json",
                           lambda: self.client.call("e", '{"_tool": '))

    def test_bad_reference(self) -> None:
        error = self.assertRefused(actd.BadReference, "bad_reference",
                                   lambda: self.client.call("e", {"_tool": "x", "a": "\u2020"}))
        self.assertIn("byte", error.message)
        self.assertRefused(actd.BadReference, "bad_reference",
                           lambda: self.client.resolve("e", "\u2020user.[x"))

    def test_bad_method(self) -> None:
        self.assertRefused(actd.BadMethod, "bad_method", lambda: self.client.call(
            "e", {"_tool": "x", "_outputPath": "\u2020a", "_outputMethod": "add"}))

    def test_bad_argument(self) -> None:
        self.assertRefused(actd.BadArgument, "bad_argument", lambda: self.client.append(
            "e", {"type": "data", "kind": "1bad", "data": 1}))
        self.assertRefused(actd.BadArgument, "bad_argument",
                           lambda: self.client.view("e", format="xml"))

    def test_type_mismatch(self) -> None:
        self.client.append("e-mismatch", {"type": "data", "kind": "l", "data": {"a": 1}})
        self.assertRefused(actd.TypeMismatch, "type_mismatch", lambda: self.client.append(
            "e-mismatch", {"type": "data", "kind": "l", "data": 5, "_outputMethod": "push"}))
        self.assertEqual([m["_seq"] for m in self.client.history("e-mismatch")], [1])

    def test_unresolved_reference(self) -> None:
        self.assertRefused(actd.UnresolvedReference, "unresolved_reference", lambda:
                           self.client.call("e", {"_tool": "x", "a": "\u2020nothing.here"}))

    def test_not_found(self) -> None:
        self.assertRefused(actd.NotFound, "not_found", lambda: self.client.status("424242"))
        self.assertRefused(actd.NotFound, "not_found",
                           lambda: list(self.client.history("no-such-context")))

    def test_too_large(self) -> None:
        self.assertRefused(actd.TooLarge, "too_large", lambda: self.client.call(
            "e", {"_tool": "x", "blob": "x" * (1 << 20)}))

    def test_busy(self) -> None:
        first = self.client.call("e-busy", {"_tool": "full"})     # queued: no worker
        self.assertRefused(actd.Busy, "busy",
                           lambda: self.client.call("e-busy", {"_tool": "full"}))
        self.client.cancel(first)

    def test_timeout_when_nothing_answers(self) -> None:
        from harness import free_port
        with actd.Client("tcp://127.0.0.1:%d" % free_port(), timeout=0.2) as client:
            error = self.assertRefused(actd.Timeout, "timeout", client.ping)
            self.assertIsInstance(error, TimeoutError)
            self.assertEqual(client.pending, 0)

    def test_closed_client_refuses_requests(self) -> None:
        client = actd.Client(self.broker.client_endpoint)
        client.close()
        self.assertRefused(actd.Closed, "closed", client.ping)


def scripted(frames: List[bytes]) -> Optional[List[Any]]:
    """A broker whose replies have fields of the wrong type: a DONE whose
    outcome has "attempts": null, a STATUS value whose attempts is "x";
    PING is answered."""
    command, request_id = frames[1], frames[2]
    if command == b"CALL":
        return [[b"ACTC01", b"ACCEPTED", request_id, b"7"],
                [b"ACTC01", b"DONE", request_id, b"7",
                 b'{"call_id":"7","status":"ok","written":[],"seqs":[],"attempts":null}']]
    if command == b"STATUS":
        return [b"ACTC01", b"VALUE", request_id,
                b'{"call_id":"7","context":"c","state":"running","attempts":"x"}']
    if command == b"PING":
        return [b"ACTC01", b"PONG", request_id]
    return None


#: The contexts misframed() answers a CALL in with a reply of a shape
#: actd never sends, and what the ProtocolError says of each
MISFRAMED_CALLS = [("early", "expected ACCEPTED, got DONE"),
                   ("short", "DONE carries 1 frames"),
                   ("bare", "DONE carries 0 frames")]


def misframed(frames: List[bytes]) -> Optional[List[Any]]:
    """A broker whose replies are of a shape actd never sends: a DONE
    before its ACCEPTED, a DONE with only its call id or with nothing, a
    DONE to a PING, an EVENT that is not JSON."""
    command, request_id = frames[1], frames[2]
    outcome = b'{"call_id":"7","status":"ok","written":[],"seqs":[],"attempts":1}'
    if command == b"CALL" and frames[3] == b"early":
        return [b"ACTC01", b"DONE", request_id, b"7", outcome]
    if command == b"CALL":
        done = [b"7"] if frames[3] == b"short" else []
        return [[b"ACTC01", b"ACCEPTED", request_id, b"7"],
                [b"ACTC01", b"DONE", request_id] + done]
    if command == b"PING":
        return [b"ACTC01", b"DONE", request_id, b"7", outcome]
    if command == b"STATS":
        return [b"ACTC01", b"VALUE", request_id, b'{"uptime_ms":1000}']
    if command == b"WATCH":
        return [b"ACTC01", b"EVENT", request_id, b"{not json"]
    return None


class ScriptedBrokerTest(unittest.TestCase):
    """The clients against a fake broker (a ROUTER socket) that sends what
    actd does not: replies the library cannot read, or none at all."""

    def setUp(self) -> None:
        self.fake = FakeBroker()
        self.addCleanup(self.fake.close)

    def test_a_reply_that_cannot_be_read_fails_only_its_request(self) -> None:
        self.fake.answer = scripted
        with actd.Client(self.fake.endpoint, timeout=TIMEOUT) as client:
            with self.assertRaises(actd.ProtocolError) as raised:
                client.call("c", {"_tool": "t", "_outputPath": "†a"}, timeout=TIMEOUT)
            self.assertIn("attempts", raised.exception.message)
            with self.assertRaises(actd.ProtocolError):
                client.status("7")
            # The reader goes on: the next request is answered
            self.assertGreaterEqual(client.ping(), 0.0)
            self.assertEqual(client.pending, 0)

    def test_async_a_reply_that_cannot_be_read_fails_only_its_request(self) -> None:
        self.fake.answer = scripted

        async def main() -> None:
            async with actd.aio.AsyncClient(self.fake.endpoint, timeout=TIMEOUT) as client:
                with self.assertRaises(actd.ProtocolError):
                    await client.call("c", {"_tool": "t", "_outputPath": "†a"}, timeout=TIMEOUT)
                with self.assertRaises(actd.ProtocolError):
                    await client.status("7")
                self.assertGreaterEqual(await client.ping(), 0.0)
                self.assertEqual(client.pending, 0)

        asyncio.run(asyncio.wait_for(main(), TIMEOUT * 2))

    # Replies of a shape actd never sends fail their request at once with
    # ProtocolError, their reason in the message, rather than leaving it
    # waiting for its timeout (or, for an outcome, for ever)

    def test_misframed_replies_fail_their_request_with_protocol_error(self) -> None:
        self.fake.answer = misframed
        with actd.Client(self.fake.endpoint, timeout=TIMEOUT) as client:
            for context, reason in MISFRAMED_CALLS:
                started = time.monotonic()
                with self.assertRaises(actd.ProtocolError) as raised:
                    client.call(context, {"_tool": "t", "_outputPath": "†a"}, timeout=TIMEOUT)
                self.assertIn(reason, raised.exception.message)
                self.assertTimesOut(started)
            with self.assertRaises(actd.ProtocolError) as raised:
                client.ping()
            self.assertIn("expected PONG, got DONE", raised.exception.message)
            with self.assertRaises(actd.ProtocolError) as raised:
                next(iter(client.watch("c", probe=None)))
            self.assertIn("EVENT does not parse", raised.exception.message)
            self.assertEqual(client.pending, 0)

    def test_async_misframed_replies_fail_their_request_with_protocol_error(self) -> None:
        self.fake.answer = misframed

        async def main() -> None:
            async with actd.aio.AsyncClient(self.fake.endpoint, timeout=TIMEOUT) as client:
                for context, reason in MISFRAMED_CALLS:
                    started = time.monotonic()
                    with self.assertRaises(actd.ProtocolError) as raised:
                        await client.call(context, {"_tool": "t", "_outputPath": "†a"},
                                          timeout=TIMEOUT)
                    self.assertIn(reason, raised.exception.message)
                    self.assertTimesOut(started)
                with self.assertRaises(actd.ProtocolError) as raised:
                    await client.ping()
                self.assertIn("expected PONG, got DONE", raised.exception.message)
                with self.assertRaises(actd.ProtocolError) as raised:
                    async for _ in client.watch("c", probe=None):
                        break
                self.assertIn("EVENT does not parse", raised.exception.message)
                self.assertEqual(client.pending, 0)

        asyncio.run(asyncio.wait_for(main(), TIMEOUT * 2))

    # A broker that never answers: wait(), call() and plan() end at their
    # timeout, the STATUS or TOOLS they send first included (the client's
    # own timeout is far longer)

    def assertTimesOut(self, started: float) -> None:
        self.assertLess(time.monotonic() - started, 5.0)

    def test_wait_call_and_plan_end_at_their_timeout(self) -> None:
        with actd.Client(self.fake.endpoint, timeout=10.0) as client:
            for request in (lambda: client.wait("42", timeout=0.5),
                            lambda: client.call("c", {"_tool": "t"}, timeout=0.5),
                            lambda: client.plan("c", [{"_tool": "t"}], timeout=0.5)):
                started = time.monotonic()
                with self.assertRaises(actd.Timeout):
                    request()
                self.assertTimesOut(started)

    def test_async_wait_call_and_plan_end_at_their_timeout(self) -> None:
        async def main() -> None:
            async with actd.aio.AsyncClient(self.fake.endpoint, timeout=10.0) as client:
                for request in (lambda: client.wait("42", timeout=0.5),
                                lambda: client.call("c", {"_tool": "t"}, timeout=0.5),
                                lambda: client.plan("c", [{"_tool": "t"}], timeout=0.5)):
                    started = time.monotonic()
                    with self.assertRaises(actd.Timeout):
                        await request()
                    self.assertTimesOut(started)

        asyncio.run(asyncio.wait_for(main(), TIMEOUT * 2))


if __name__ == "__main__":
    unittest.main()
