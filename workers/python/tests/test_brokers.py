"""Several brokers sharing one PostgreSQL store: each context is owned by
one broker, another broker answers ERROR moved with the owner's client
endpoint, and the client follows it; a client given several endpoints sends
each context's requests to its owner (rendezvous hashing first), retries on
another broker when one stops answering, and gives calls an _id; a worker
connects to every broker; after a broker is killed the other takes its
contexts over once the lease expires and runs their pending calls, writing
each output once.

The brokers run with lease_ms = 1000 (a config file), on databases of a
private PostgreSQL server (tests/integration/pg.py). A client told moved to
an owner that does not answer is in test_brokers_moved.py (no actd there).
"""

import asyncio
import json
import os
import re
import subprocess
import tempfile
import threading
import unittest
from typing import Any, Dict, List

import zmq

from support import TIMEOUT, Actd, FakeBroker, wait_until

import actd
import actd.aio
from actd import _route, _socket, _wire
from harness import Client as RawClient, find_binary
import pg

LEASE_CONFIG = "server\n    lease_ms = 1000\n"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def fnv1a64(data: bytes) -> int:
    """FNV-1a, 64 bits, written out from its definition for the test."""
    value = 0xcbf29ce484222325
    for byte in data:
        value ^= byte
        value = (value * 0x100000001b3) % (1 << 64)
    return value


def fmix64(value: int) -> int:
    """MurmurHash3's 64-bit finalizer, written out for the test."""
    for multiplier in (0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53):
        value ^= value >> 33
        value = (value * multiplier) % (1 << 64)
    return value ^ (value >> 33)


def start_brokers(count: int, scratch: str) -> List[Actd]:
    """count brokers on one new database, with 1000 ms leases."""
    config = os.path.join(scratch, "lease.cfg")
    with open(config, "w") as handle:
        handle.write(LEASE_CONFIG)
    url = pg.database()
    brokers: List[Actd] = []
    try:
        for _ in range(count):
            brokers.append(Actd(store=url, args=["--config", config]).start())
    except BaseException:
        for broker in brokers:
            broker.cleanup()
        raise
    return brokers


def stop_cleanly(test: unittest.TestCase, broker: Actd) -> None:
    """SIGTERM: exit 0 (a clean stop, no leak under AddressSanitizer)."""
    code = broker.stop()
    try:
        test.assertEqual(code, 0, "actd exited %s on SIGTERM:\n%s" % (code, broker.log()))
    finally:
        broker.cleanup()


def owners_by_raw_resolve(brokers: List[Actd], context: str, expression: str
                          ) -> Dict[str, List[str]]:
    """RESOLVE through a raw single-endpoint client on each broker: the
    replies, by broker client endpoint."""
    replies = {}
    for broker in brokers:
        raw = RawClient(broker.client_endpoint)
        try:
            replies[broker.client_endpoint] = raw.request("RESOLVE", context, expression,
                                                          timeout=TIMEOUT)
        finally:
            raw.close()
    return replies


def context_first_at(endpoints: List[str], endpoint: str, prefix: str, count: int = 1
                     ) -> List[str]:
    """count context ids whose rendezvous order puts endpoint first."""
    found = []
    number = 0
    while len(found) < count:
        name = "%s-%d" % (prefix, number)
        if _route.rendezvous(endpoints, name)[0] == endpoint:
            found.append(name)
        number += 1
    return found


class RendezvousTest(unittest.TestCase):
    """The routing rule every client library shares."""

    def test_score_is_fmix64_of_fnv1a_64_of_endpoint_newline_context(self) -> None:
        # The published FNV-1a 64 test vectors
        self.assertEqual(fnv1a64(b""), 0xcbf29ce484222325)
        self.assertEqual(fnv1a64(b"a"), 0xaf63dc4c8601ec8c)
        self.assertEqual(fnv1a64(b"foobar"), 0x85944171f73967e8)
        for endpoint, context in [("tcp://127.0.0.1:5555", "chat-1"), ("ipc:///tmp/a", "x"),
                                  ("tcp://b:5555", "caf\u00e9/run:7")]:
            self.assertEqual(_route.score(endpoint, context),
                             fmix64(fnv1a64((endpoint + "\n" + context).encode("utf-8"))))

    def test_contexts_named_alike_spread_over_the_brokers(self) -> None:
        # Whatever the two endpoints, run-0 ... run-999 go about half to each
        for port in range(40000, 40020):
            endpoints = ["tcp://127.0.0.1:%d" % port, "tcp://127.0.0.1:%d" % (port + 7919)]
            first = sum(_route.rendezvous(endpoints, "run-%d" % n)[0] == endpoints[0]
                        for n in range(1000))
            self.assertTrue(400 <= first <= 600, (endpoints, first))

    def test_order_is_highest_score_first(self) -> None:
        endpoints = ["tcp://10.0.0.%d:5555" % n for n in range(1, 6)]
        for number in range(50):
            context = "ctx-%d" % number
            order = _route.rendezvous(endpoints, context)
            scores = [_route.score(endpoint, context) for endpoint in order]
            self.assertEqual(sorted(order), sorted(endpoints))
            self.assertEqual(scores, sorted(scores, reverse=True))
        # The list's order does not matter
        self.assertEqual(_route.rendezvous(list(reversed(endpoints)), "ctx-1"),
                         _route.rendezvous(endpoints, "ctx-1"))

    def test_ties_go_to_the_smaller_endpoint(self) -> None:
        # The same endpoint twice under two spellings cannot tie; a tie is
        # made by scoring with a constant
        original = _route.score
        try:
            _route.score = lambda endpoint, context: 7
            self.assertEqual(_route.rendezvous(["tcp://b:1", "tcp://a:2", "tcp://c:0"], "x"),
                             ["tcp://a:2", "tcp://b:1", "tcp://c:0"])
        finally:
            _route.score = original

    def test_endpoint_lists(self) -> None:
        self.assertEqual(_socket.endpoint_list("tcp://a:1"), ["tcp://a:1"])
        self.assertEqual(_socket.endpoint_list(("tcp://a:1", "tcp://b:1")),
                         ["tcp://a:1", "tcp://b:1"])
        # A string is split at commas and spaces, as the C library does
        self.assertEqual(_socket.endpoint_list("tcp://a:1, tcp://b:1,tcp://c:1"),
                         ["tcp://a:1", "tcp://b:1", "tcp://c:1"])
        for bad in ([], ["tcp://a:1", "tcp://a:1"], [""], [None], " , "):
            with self.assertRaises(ValueError):
                _socket.endpoint_list(bad)  # type: ignore[arg-type]
        with self.assertRaises(ValueError):
            actd.Worker([])
        with self.assertRaises(ValueError):
            actd.Client(["tcp://127.0.0.1:1", "tcp://127.0.0.1:2"], request_timeout=0)


class ClientRoutingTest(unittest.TestCase):
    """The client against scripted brokers and one real actd (SQLite)."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.broker = Actd()
        cls.broker.__enter__()
        cls.runs: List[str] = []

        def echo(params: Dict[str, Any], task: actd.Task) -> Any:
            cls.runs.append(task.call_id)
            return params

        cls.worker = actd.Worker(cls.broker.worker_endpoint, capacity=2, name="routing-worker",
                                 heartbeat_ms=cls.broker.heartbeat_ms,
                                 liveness=cls.broker.liveness)
        cls.worker.add_activity("echo", echo)
        cls.worker.start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.worker.stop(wait=True, timeout=TIMEOUT)
        cls.worker.close()
        cls.broker.__exit__(None, None, None)

    def test_moved_is_followed_at_most_five_times_then_raised(self) -> None:
        fake = FakeBroker()
        fake.answer = lambda frames: [b"ACTC01", b"ERROR", frames[2], b"moved",
                                      fake.endpoint.encode()]
        try:
            with actd.Client(fake.endpoint, timeout=TIMEOUT) as client:
                with self.assertRaises(actd.Moved) as raised:
                    client.resolve("loop", "\u2020k")
                self.assertEqual((raised.exception.code, raised.exception.endpoint),
                                 ("moved", fake.endpoint))
                self.assertEqual(client.pending, 0)
            self.assertEqual(len(fake.received), 1 + _wire.MAX_HOPS)
            self.assertEqual({tuple(frames[:1] + frames[3:]) for frames in fake.received},
                             {(b"ACTC01", b"loop", "\u2020k".encode())})
            self.assertEqual(len({frames[2] for frames in fake.received}), 1)
        finally:
            fake.close()

    def test_moved_to_an_endpoint_not_listed_connects_to_it(self) -> None:
        owner = self.broker.client_endpoint
        fake = FakeBroker(lambda frames: [b"ACTC01", b"ERROR", frames[2], b"moved",
                                          owner.encode()])
        try:
            with actd.Client(fake.endpoint, timeout=TIMEOUT) as client:
                self.assertEqual(client.append("moved-once", {"type": "text", "n": 1}), 1)
                self.assertEqual(client.endpoints, [fake.endpoint, owner])
                # Later requests about the context go to its owner at once
                self.assertEqual(list(client.history("moved-once"))[0]["n"], 1)
                self.assertEqual(len(fake.received), 1)
        finally:
            fake.close()

    def test_ping_and_stats_go_to_the_first_endpoint_that_answers(self) -> None:
        silent = FakeBroker()
        try:
            with actd.Client([silent.endpoint, self.broker.client_endpoint],
                             timeout=TIMEOUT, request_timeout=0.5) as client:
                self.assertGreaterEqual(client.ping(), 0.0)
                self.assertEqual([frames[1] for frames in silent.received], [b"PING"])
                # The silent broker is skipped now
                self.assertIn("uptime_ms", client.stats())
                self.assertEqual([frames[1] for frames in silent.received], [b"PING"])
        finally:
            silent.close()

    def test_a_call_retried_after_a_timeout_runs_once_thanks_to_its_id(self) -> None:
        # The first broker in the context's order is a relay that passes
        # requests on to actd and loses its replies: the client hears
        # nothing, sends the CALL again to actd itself, and actd knows it by
        # its _id
        relay = FakeBroker()
        upstream = zmq.Context.instance().socket(zmq.DEALER)
        upstream.setsockopt(zmq.LINGER, 0)
        upstream.connect(self.broker.client_endpoint)
        lock = threading.Lock()

        def forward(frames: List[bytes]) -> None:
            with lock:
                upstream.send_multipart(frames)
        relay.answer = forward
        endpoints = [relay.endpoint, self.broker.client_endpoint]
        context = context_first_at(endpoints, relay.endpoint, "retried")[0]
        try:
            with actd.Client(endpoints, timeout=TIMEOUT, request_timeout=1.0) as client:
                outcome = client.call(context, {"_tool": "echo", "n": 7,
                                                "_outputPath": "\u2020out.n"}, timeout=TIMEOUT)
                self.assertEqual((outcome.status, outcome.result), ("ok", {"n": 7}))
                sent = [json.loads(frames[4]) for frames in relay.received
                        if frames[1] == b"CALL"]
                self.assertEqual(len(sent), 1)
                self.assertRegex(sent[0]["_id"], UUID)
                self.assertEqual({k: v for k, v in sent[0].items() if k != "_id"},
                                 {"_tool": "echo", "n": 7, "_outputPath": "\u2020out.n"})
                history = list(client.history(context))
                self.assertEqual([(m["_seq"], m["_callId"], m["_call"]["_id"]) for m in history],
                                 [(1, outcome.call_id, sent[0]["_id"])])
                self.assertEqual(self.runs.count(outcome.call_id), 1)
                # A call that has an _id keeps it; a plan's calls get one each
                outcomes = client.plan(context, [
                    {"_tool": "echo", "_id": "mine", "_outputPath": "\u2020out.a"},
                    {"_tool": "echo", "_outputPath": "\u2020out.b"}], timeout=TIMEOUT)
                self.assertEqual([o.status for o in outcomes], ["ok", "ok"])
                calls = [m["_call"] for m in client.history(context, from_seq=2)]
                self.assertEqual(calls[0]["_id"], "mine")
                self.assertRegex(calls[1]["_id"], UUID)
        finally:
            relay.close()
            upstream.close(0)

    def test_a_single_endpoint_client_adds_no_id(self) -> None:
        with actd.Client(self.broker.client_endpoint, timeout=TIMEOUT) as client:
            outcome = client.call("no-id", {"_tool": "echo", "_outputPath": "\u2020out"},
                                  timeout=TIMEOUT)
            self.assertEqual(outcome.status, "ok")
            self.assertEqual(list(client.history("no-id"))[0]["_call"],
                             {"_tool": "echo", "_outputPath": "\u2020out"})


class TwoBrokersTest(unittest.TestCase):
    """Two brokers on one database, a client and a worker given both."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.scratch = tempfile.TemporaryDirectory(prefix="actd-brokers-")
        cls.brokers = start_brokers(2, cls.scratch.name)
        cls.a, cls.b = cls.brokers
        cls.endpoints = [cls.a.client_endpoint, cls.b.client_endpoint]
        cls.client = actd.Client(cls.endpoints, timeout=TIMEOUT)
        cls.worker = actd.Worker([cls.a.worker_endpoint, cls.b.worker_endpoint], capacity=2,
                                 name="two-broker-worker", heartbeat_ms=cls.a.heartbeat_ms,
                                 liveness=cls.a.liveness)

        def upper(params: Dict[str, Any], task: actd.Task) -> str:
            return str(params["text"]).upper()

        cls.worker.add_activity("upper", upper)
        cls.worker.add_activity("spread", upper)
        cls.worker.start()
        for broker in cls.brokers:
            with actd.Client(broker.client_endpoint, timeout=TIMEOUT) as one:
                wait_until(lambda: [w for w in one.stats()["workers"]
                                    if w["name"] == "two-broker-worker"],
                           what="the worker registered at %s" % broker.client_endpoint)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.worker.stop(wait=True, timeout=TIMEOUT)
        cls.worker.close()
        cls.client.close()
        try:
            for broker in cls.brokers:
                code = broker.stop()
                if code != 0:
                    raise AssertionError("actd exited %s on SIGTERM:\n%s" % (code, broker.log()))
        finally:
            for broker in cls.brokers:
                broker.cleanup()
            cls.scratch.cleanup()

    def stats_of(self, broker: Actd) -> Dict[str, Any]:
        raw = RawClient(broker.client_endpoint)
        try:
            reply = raw.request("STATS", timeout=TIMEOUT)
        finally:
            raw.close()
        self.assertEqual(reply[0], "VALUE", reply)
        stats: Dict[str, Any] = json.loads(reply[1])
        return stats

    def test_contexts_spread_over_both_brokers_each_owned_by_one(self) -> None:
        contexts = ["spread-%d" % n for n in range(20)]
        handles = [self.client.submit(context, {"_tool": "spread", "text": context,
                                                "_outputPath": "\u2020out.text"})
                   for context in contexts]
        outcomes = [handle.outcome(TIMEOUT) for handle in handles]
        self.assertEqual([(o.status, o.result) for o in outcomes],
                         [("ok", context.upper()) for context in contexts])
        owned: Dict[str, List[str]] = {endpoint: [] for endpoint in self.endpoints}
        for context in contexts:
            replies = owners_by_raw_resolve(self.brokers, context, "\u2020out.text")
            values = [endpoint for endpoint, reply in replies.items() if reply[0] == "VALUE"]
            self.assertEqual(len(values), 1, replies)
            owner = values[0]
            self.assertEqual(replies[owner], ["VALUE", json.dumps(context.upper())])
            other = [endpoint for endpoint in self.endpoints if endpoint != owner][0]
            self.assertEqual(replies[other], ["ERROR", "moved", owner])
            # The client created it where rendezvous hashing said
            self.assertEqual(owner, _route.rendezvous(self.endpoints, context)[0])
            owned[owner].append(context)
        self.assertTrue(all(owned.values()), owned)
        # The worker connected to both served each broker's calls; each
        # broker counts its own
        for broker in self.brokers:
            stats = self.stats_of(broker)
            self.assertEqual(stats["activities"]["spread"]["done"],
                             len(owned[broker.client_endpoint]))
            self.assertEqual([(w["capacity"], w["lang"]) for w in stats["workers"]
                              if w["name"] == "two-broker-worker"], [(2, "python")])

    def test_a_single_endpoint_client_at_the_wrong_broker_gets_moved(self) -> None:
        context = context_first_at(self.endpoints, self.a.client_endpoint, "wrong")[0]
        outcome = self.client.call(context, {"_tool": "upper", "text": "x",
                                             "_outputPath": "\u2020out.x"}, timeout=TIMEOUT)
        self.assertEqual(outcome.status, "ok")
        moved = ["ERROR", "moved", self.a.client_endpoint]
        raw = RawClient(self.b.client_endpoint)
        try:
            self.assertEqual(raw.request("CALL", context, {"_tool": "upper", "text": "y"}), moved)
            self.assertEqual(raw.request("PLAN", context, [{"_tool": "upper", "text": "y"}]),
                             moved)
            self.assertEqual(raw.request("APPEND", context, {"type": "text"}), moved)
            self.assertEqual(raw.request("RESOLVE", context, "\u2020out.x"), moved)
            self.assertEqual(raw.request("VIEW", context), moved)
            self.assertEqual(raw.request("HISTORY", context, "1", "10"), moved)
            self.assertEqual(raw.request("STATUS", outcome.call_id), moved)
            self.assertEqual(raw.request("CANCEL", outcome.call_id), moved)
            self.assertEqual(raw.request("PING"), ["PONG"])
            self.assertEqual(raw.request("STATS")[0], "VALUE")
        finally:
            raw.close()
        # Nothing of that changed the context
        self.assertEqual([m["_seq"] for m in self.client.history(context)], [1])
        # The library's single-endpoint client follows moved by itself
        with actd.Client(self.b.client_endpoint, timeout=TIMEOUT) as one:
            with self.assertLogs("actd.client", "DEBUG") as logs:
                self.assertEqual(one.resolve(context, "\u2020out.x"), "X")
            self.assertIn("RESOLVE moved to %s" % self.a.client_endpoint, "\n".join(logs.output))
            self.assertEqual(one.endpoints, [self.b.client_endpoint, self.a.client_endpoint])
            self.assertEqual(one.status(outcome.call_id).state, "ok")

    def test_the_client_follows_moved_to_an_owner_rendezvous_did_not_pick(self) -> None:
        # A raw client creates the context at the broker rendezvous puts
        # second, which owns it from then on
        context = context_first_at(self.endpoints, self.a.client_endpoint, "second")[0]
        raw = RawClient(self.b.client_endpoint)
        try:
            self.assertEqual(raw.request("APPEND", context, {"type": "data", "kind": "k",
                                                             "data": {"v": 1}}),
                             ["OK", '{"seq":1}'])
        finally:
            raw.close()
        with actd.Client(self.endpoints, timeout=TIMEOUT) as client:
            with self.assertLogs("actd.client", "DEBUG") as logs:
                self.assertEqual(client.resolve(context, "\u2020k.v"), 1)
                outcome = client.call(context, {"_tool": "upper", "text": "\u2020k.v",
                                                "_outputPath": "\u2020k.w"}, timeout=TIMEOUT)
            self.assertEqual([line.split(":", 2)[2] for line in logs.output
                              if "moved to" in line],
                             ["RESOLVE moved to %s" % self.b.client_endpoint])
            self.assertEqual((outcome.status, outcome.result), ("ok", "1"))
            self.assertEqual(client.status(outcome.call_id).state, "ok")
            self.assertEqual(client.endpoints, self.endpoints)
        self.assertEqual(owners_by_raw_resolve(self.brokers, context, "\u2020k.w"), {
            self.a.client_endpoint: ["ERROR", "moved", self.b.client_endpoint],
            self.b.client_endpoint: ["VALUE", '"1"']})

    def test_stats_totals_are_the_whole_stores_from_either_broker(self) -> None:
        # contexts, messages and the calls totals count every broker's work;
        # running, queued, waiting, activities and workers are the broker's
        before = {broker.client_endpoint: self.stats_of(broker) for broker in self.brokers}
        at_a = context_first_at(self.endpoints, self.a.client_endpoint, "stats-a", 3)
        at_b = context_first_at(self.endpoints, self.b.client_endpoint, "stats-b", 2)
        for context in at_a + at_b:
            self.assertEqual(self.client.append(context, {"type": "text"}), 1)
        outcome = self.client.call(at_b[0], {"_tool": "upper", "text": "s",
                                             "_outputPath": "\u2020out"}, timeout=TIMEOUT)
        self.assertEqual(outcome.status, "ok")
        for broker in self.brokers:
            old, new = before[broker.client_endpoint], self.stats_of(broker)
            self.assertEqual(
                (new["contexts"] - old["contexts"], new["messages"] - old["messages"],
                 new["calls"]["accepted"] - old["calls"]["accepted"],
                 new["calls"]["ok"] - old["calls"]["ok"]),
                (5, 6, 1, 1), "STATS of %s: before %s, after %s" % (broker.client_endpoint,
                                                                    old, new))
            self.assertEqual((new["calls"]["running"], new["calls"]["queued"],
                              new["calls"]["waiting"]), (0, 0, 0))

    def test_the_c_library_creates_contexts_where_this_one_routes_them(self) -> None:
        # actctl (the C client library) given both endpoints creates each
        # context at the broker it ranks first: the one rendezvous() names
        actctl = find_binary("actctl")
        for number in range(8):
            context = "c-lib-%d" % number
            run = subprocess.run([actctl, "--endpoint", ",".join(self.endpoints), "append",
                                  context, '{"type":"text"}'], capture_output=True, text=True,
                                 timeout=TIMEOUT)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            replies = owners_by_raw_resolve(self.brokers, context, "\u2020nothing")
            first = _route.rendezvous(self.endpoints, context)[0]
            self.assertEqual(replies[first], ["ERROR", "not_found", "'\u2020nothing' is absent"])
            self.assertEqual([reply for endpoint, reply in replies.items() if endpoint != first],
                             [["ERROR", "moved", first]])

    def test_async_client_routes_the_same_way(self) -> None:
        contexts = ["async-%d" % n for n in range(8)]

        async def main() -> List[actd.Outcome]:
            async with actd.aio.AsyncClient(self.endpoints, timeout=TIMEOUT) as client:
                outcomes = await asyncio.gather(*(
                    client.call(context, {"_tool": "upper", "text": context,
                                          "_outputPath": "\u2020out"}, timeout=TIMEOUT)
                    for context in contexts))
                for outcome, context in zip(outcomes, contexts):
                    self.assertEqual((await client.status(outcome.call_id)).context, context)
                    self.assertEqual(await client.resolve(context, "\u2020out"),
                                     context.upper())
                    first = [m async for m in client.history(context)][0]
                    self.assertRegex(first["_call"]["_id"], UUID)
                self.assertEqual(client.pending, 0)
                return list(outcomes)

        outcomes = asyncio.run(asyncio.wait_for(main(), TIMEOUT * 2))
        self.assertEqual([o.status for o in outcomes], ["ok"] * len(contexts))
        for context in contexts:
            owner = _route.rendezvous(self.endpoints, context)[0]
            replies = owners_by_raw_resolve(self.brokers, context, "\u2020out")
            self.assertEqual(replies[owner], ["VALUE", json.dumps(context.upper())])


class TakeoverTest(unittest.TestCase):
    """A broker is killed: the other takes its contexts over after the
    lease expires and runs the calls it had accepted."""

    def setUp(self) -> None:
        self.scratch = tempfile.TemporaryDirectory(prefix="actd-takeover-")
        self.addCleanup(self.scratch.cleanup)
        self.a, self.b = start_brokers(2, self.scratch.name)
        self.addCleanup(self.a.cleanup)
        self.addCleanup(self.b.cleanup)
        self.endpoints = [self.a.client_endpoint, self.b.client_endpoint]
        self.workers: List[actd.Worker] = []

    def tearDown(self) -> None:
        for worker in self.workers:
            worker.stop(wait=True, timeout=TIMEOUT)
            worker.close()

    def worker(self, name: str, activities: Dict[str, Any]) -> actd.Worker:
        worker = actd.Worker([self.a.worker_endpoint, self.b.worker_endpoint], capacity=2,
                             name=name, heartbeat_ms=self.a.heartbeat_ms,
                             liveness=self.a.liveness)
        for activity, handler in activities.items():
            worker.add_activity(activity, handler)
        self.workers.append(worker)
        worker.start()
        return worker

    def test_contexts_of_a_killed_broker_are_served_by_the_other(self) -> None:
        runs: List[str] = []

        def upper(params: Dict[str, Any], task: actd.Task) -> str:
            return str(params["text"]).upper()

        def later(params: Dict[str, Any], task: actd.Task) -> str:
            runs.append(task.id)
            return "later %s" % params["n"]

        self.worker("takeover-upper", {"upper": upper})
        contexts = context_first_at(self.endpoints, self.a.client_endpoint, "taken", 3)
        kept = context_first_at(self.endpoints, self.b.client_endpoint, "kept")[0]
        with actd.Client(self.endpoints, timeout=TIMEOUT * 2, request_timeout=2.0) as client:
            for context in contexts + [kept]:
                client.append(context, {"type": "data", "kind": "k", "data": {"v": context}})
                self.assertEqual(client.call(context, {"_tool": "upper", "text": "\u2020k.v",
                                                       "_outputPath": "\u2020k.up"},
                                             timeout=TIMEOUT).status, "ok")
            # Accepted by the broker about to die; no worker serves "later"
            # yet, so it stays queued there
            handle = client.submit(contexts[0], {"_tool": "later", "n": 1,
                                                 "_outputPath": "\u2020k.later"})
            call_id = handle.accepted(TIMEOUT)
            forgotten = client.call(contexts[1], {"_tool": "later", "n": 2})
            self.assertEqual(client.status(call_id).state, "queued")
            self.assertEqual(owners_by_raw_resolve([self.a, self.b], contexts[0], "\u2020k.up")[
                self.b.client_endpoint], ["ERROR", "moved", self.a.client_endpoint])

            self.a.kill()
            # The contexts of the dead broker answer again, from the other
            for context in contexts:
                self.assertEqual(client.resolve(context, "\u2020k.up"), context.upper())
            self.assertEqual(client.resolve(kept, "\u2020k.up"), kept.upper())
            self.assertEqual(client.append(contexts[2], {"type": "text", "after": True}), 3)
            self.assertEqual(owners_by_raw_resolve([self.b], contexts[2], "\u2020k.up"),
                             {self.b.client_endpoint: ["VALUE", json.dumps(contexts[2].upper())]})
            # The calls it had accepted run once a worker serves them; the
            # awaited DONE arrives by STATUS
            self.worker("takeover-later", {"later": later})
            outcome = handle.outcome(TIMEOUT * 2)
            self.assertEqual((outcome.call_id, outcome.status, outcome.result),
                             (call_id, "ok", "later 1"))
            self.assertEqual(client.wait(call_id, timeout=TIMEOUT), outcome)
            self.assertEqual(client.wait(forgotten, timeout=TIMEOUT).status, "ok")
            self.assertEqual(client.status(call_id).context, contexts[0])
            self.assertEqual(sorted(run.split(".")[0] for run in runs),
                             sorted([call_id, forgotten]))
            # Its output is written exactly once, seqs without gaps
            history = list(client.history(contexts[0]))
            self.assertEqual([m["_seq"] for m in history], list(range(1, len(history) + 1)))
            self.assertEqual([m["_seq"] for m in history if m.get("_callId") == call_id],
                             outcome.seqs)
            self.assertEqual(len(outcome.seqs), 1)
            self.assertEqual(client.resolve(contexts[0], "\u2020k"),
                             {"v": contexts[0], "up": contexts[0].upper(), "later": "later 1"})
            self.assertEqual([m["_seq"] for m in client.history(contexts[1])], [1, 2])
            self.assertEqual(client.pending, 0)
        self.assertIn("took over context %s" % contexts[0], self.b.log())
        stop_cleanly(self, self.b)


if __name__ == "__main__":
    unittest.main()
