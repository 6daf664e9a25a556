"""A client told ``moved`` to an owner that does not answer (a broker
killed, its lease not yet run out): the request goes back to another broker
after ``request_timeout``, a watch moves on, and a CALL sent on to the owner
gets an ``_id`` so that sending it back cannot run it twice. Against the
client's tracker on a clock the test moves, and scripted brokers
(support.FakeBroker); no actd. Split from test_brokers.py, whose other
tests run real brokers.
"""

import asyncio
import concurrent.futures
import json
import unittest
from typing import Any, Dict, List, Tuple

from support import TIMEOUT, FakeBroker

import actd
import actd.aio
import actd._watch
from actd import _codec, _wire


class MovedToADeadOwnerTest(unittest.TestCase):
    """A client given one endpoint, told ``moved`` to an owner that does
    not answer (killed, its lease not yet run out), sends the request back
    to another broker after the several-endpoints default of
    ``request_timeout`` (as the C library does after a third of its
    timeout), rather than waiting the whole of its own timeout for the dead
    one; unless ``request_timeout`` was chosen, None included. A ``CALL``
    without an ``_id`` it sends on to the owner gets a random one (the
    moved broker stored nothing), so that sending it back cannot run it
    twice (docs/protocol.md section 12)."""

    A = "tcp://127.0.0.1:1"
    B = "tcp://127.0.0.1:2"
    STATUS = {"call_id": "c-1", "context": "ctx", "state": "queued", "attempts": 0}

    def tracker(self, **options: Any) -> Any:
        """The tracker of an asyncio client given endpoint A (built as the
        client builds it; no socket or task before its first request), on
        a clock the test moves."""
        self.now = 100.0
        tracker = actd.aio.AsyncClient(self.A, **options)._tracker
        tracker._clock = lambda: self.now
        return tracker

    def status_moved(self, tracker: Any) -> Tuple[bytes, "concurrent.futures.Future[Any]"]:
        """STATUS of call c-1, sent to A, answered moved to B; returns its
        request id and future (the request is then at B)."""
        future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        request_id = tracker.send("STATUS", [b"c-1"],
                                  _wire.Pending("simple", future, _codec.parse_status))
        self.assertEqual(self.sent(tracker), [(self.A, b"STATUS")])
        self.assertEqual(tracker.dispatch(self.A, [b"ACTC01", b"ERROR", request_id, b"moved",
                                                   self.B.encode()]), [])
        self.assertEqual(self.sent(tracker), [(self.B, b"STATUS")])
        self.assertEqual(tracker.endpoints, [self.A, self.B])
        return request_id, future

    @staticmethod
    def sent(tracker: Any) -> List[Tuple[str, bytes]]:
        """(endpoint, command) of each request queued since last asked."""
        queued = [(endpoint, frames[1]) for endpoint, frames in tracker.outbox]
        tracker.outbox.clear()
        return queued

    def tick_at(self, tracker: Any, now: float) -> None:
        self.now = now
        for action in tracker.tick():
            action()

    def test_the_request_goes_back_after_the_several_brokers_default(self) -> None:
        tracker = self.tracker()
        self.assertIsNone(tracker.request_timeout)
        request_id, future = self.status_moved(tracker)
        self.assertEqual(tracker.request_timeout, actd.client.MULTI_REQUEST_TIMEOUT)
        self.tick_at(tracker, 100.0 + actd.client.MULTI_REQUEST_TIMEOUT - 0.5)
        self.assertEqual(self.sent(tracker), [])
        self.tick_at(tracker, 100.0 + actd.client.MULTI_REQUEST_TIMEOUT + 0.5)
        self.assertEqual(self.sent(tracker), [(self.A, b"STATUS")])
        # A, the survivor, took the context over by then: its answer settles it
        for action in tracker.dispatch(self.A, [b"ACTC01", b"VALUE", request_id,
                                                json.dumps(self.STATUS).encode()]):
            action()
        self.assertEqual(future.result(0).state, "queued")

    def test_an_explicit_request_timeout_of_none_stays_none(self) -> None:
        tracker = self.tracker(request_timeout=None)
        self.status_moved(tracker)
        self.assertIsNone(tracker.request_timeout)
        self.tick_at(tracker, 100.0 + 1000.0)
        self.assertEqual(self.sent(tracker), [])

    def test_an_explicit_request_timeout_stays_as_given(self) -> None:
        tracker = self.tracker(request_timeout=30.0)
        self.status_moved(tracker)
        self.assertEqual(tracker.request_timeout, 30.0)
        self.tick_at(tracker, 100.0 + 10.0)
        self.assertEqual(self.sent(tracker), [])
        self.tick_at(tracker, 100.0 + 31.0)
        self.assertEqual(self.sent(tracker), [(self.A, b"STATUS")])

    def watching(self, tracker: Any) -> Tuple[List[Any], Any, Any]:
        """A watch of ctx, its WATCH at A (A connected, its events
        taken); returns the list its sink fills, its subscription and its
        state."""
        tracker.endpoints.append(self.B)
        tracker.request_timeout = actd.client.MULTI_REQUEST_TIMEOUT
        tracker._owners["ctx"] = self.A
        items: List[Any] = []
        state = actd._watch.Watch("ctx", 1, False)
        sub = tracker.subscribe(state, items.append, concurrent.futures.Future())
        self.assertEqual(self.sent(tracker), [(self.A, b"STATS"), (self.A, b"WATCH")])
        self.assertEqual(tracker.link_event(self.A, True), [])
        tracker.dispatch(self.A, [b"ACTC01", b"EVENT", sub.watch_id, b'{"seq": 1}'])[0]()
        self.assertEqual(items, [{"seq": 1}])
        return items, sub, state

    def test_a_watch_whose_broker_dropped_goes_to_another_at_once(self) -> None:
        """With several brokers a dropped connection sends the watch to
        another broker (the iterator subscribes again): the one it left is
        skipped, as when requests were lost with it."""
        tracker = self.tracker()
        items, sub, state = self.watching(tracker)
        for action in tracker.link_event(self.A, False):
            action()
        self.assertIs(items[-1], actd._watch.WATCH_LOST)
        tracker.unwatch(sub.watch_id)
        tracker.subscribe(state, items.append, concurrent.futures.Future())
        self.assertEqual(self.sent(tracker), [(self.A, b"UNWATCH"), (self.B, b"STATS"),
                                              (self.B, b"WATCH")])

    def test_a_watch_moved_to_an_owner_not_connected_goes_on_after_request_timeout(
            self) -> None:
        """B, told the WATCH, answers moved to A, the dead owner (its lease
        not yet out), whose connection is down: after request_timeout the
        watch's iterator is told WATCH_LOST, an UNWATCH is queued behind
        the WATCH at A, its probe's STATS to A fails, and A is skipped."""
        tracker = self.tracker()
        items, sub, state = self.watching(tracker)
        tracker.link_event(self.A, False)
        tracker.unwatch(sub.watch_id)
        sub = tracker.subscribe(state, items.append, concurrent.futures.Future())
        self.assertEqual(self.sent(tracker), [(self.A, b"UNWATCH"), (self.B, b"STATS"),
                                              (self.B, b"WATCH")])
        tracker.dispatch(self.B, [b"ACTC01", b"ERROR", sub.watch_id, b"moved",
                                  self.A.encode()])
        self.assertEqual(self.sent(tracker), [(self.A, b"WATCH")])
        probe: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        tracker.probe(sub, probe)
        self.assertEqual(self.sent(tracker), [(self.A, b"STATS")])
        self.tick_at(tracker, 100.0 + actd.client.MULTI_REQUEST_TIMEOUT - 0.5)
        self.assertEqual(items[-1], {"seq": 1})
        self.tick_at(tracker, 100.0 + actd.client.MULTI_REQUEST_TIMEOUT + 0.5)
        self.assertIs(items[-1], actd._watch.WATCH_LOST)
        self.assertEqual(self.sent(tracker), [(self.A, b"UNWATCH")])
        self.assertIsInstance(probe.exception(0), actd.Disconnected)
        self.assertEqual(tracker.route("ctx"), self.B)

    def test_the_clients_own_request_timeout_says_so(self) -> None:
        client = actd.aio.AsyncClient(self.A)
        self.assertIsNone(client.request_timeout)
        client._tracker.endpoints.append(self.B)
        client._tracker._several()
        self.assertEqual(client.request_timeout, actd.client.MULTI_REQUEST_TIMEOUT)
        client.request_timeout = None           # Chosen now: it stays
        self.assertIsNone(client._tracker.several_timeout)
        with actd.Client(self.A, timeout=TIMEOUT) as threaded:
            self.assertIsNone(threaded.request_timeout)
            self.assertEqual(threaded._tracker.several_timeout,
                             actd.client.MULTI_REQUEST_TIMEOUT)
        with actd.Client(self.A, timeout=TIMEOUT, request_timeout=None) as threaded:
            self.assertIsNone(threaded._tracker.several_timeout)
        with actd.Client([self.A, self.B], timeout=TIMEOUT) as threaded:
            self.assertEqual(threaded.request_timeout, actd.client.MULTI_REQUEST_TIMEOUT)

    def fake_pair(self) -> Tuple[FakeBroker, FakeBroker]:
        """A, a live broker that answers the first STATUS moved to B and
        the next with the call's status; B, an owner that says nothing."""
        dead = FakeBroker()
        live = FakeBroker()

        def answer(frames: List[bytes]) -> List[bytes]:
            if len([got for got in live.received if got[1] == b"STATUS"]) == 1:
                return [b"ACTC01", b"ERROR", frames[2], b"moved", dead.endpoint.encode()]
            return [b"ACTC01", b"VALUE", frames[2], json.dumps(self.STATUS).encode()]
        live.answer = answer
        self.addCleanup(dead.close)
        self.addCleanup(live.close)
        # The several-endpoints default, shortened for the test
        original = actd.client.MULTI_REQUEST_TIMEOUT
        actd.client.MULTI_REQUEST_TIMEOUT = 0.5
        self.addCleanup(setattr, actd.client, "MULTI_REQUEST_TIMEOUT", original)
        return live, dead

    def test_the_threaded_client_gets_its_answer_from_the_live_broker(self) -> None:
        live, dead = self.fake_pair()
        with actd.Client(live.endpoint, timeout=5.0) as client:
            self.assertEqual(client.status("c-1").state, "queued")
            self.assertEqual(client.request_timeout, 0.5)
            self.assertEqual(client.endpoints, [live.endpoint, dead.endpoint])
        self.assertEqual([got[1] for got in dead.received], [b"STATUS"])

    def test_the_asyncio_client_gets_its_answer_from_the_live_broker(self) -> None:
        live, dead = self.fake_pair()

        async def scenario() -> None:
            async with actd.aio.AsyncClient(live.endpoint, timeout=5.0) as client:
                self.assertEqual((await client.status("c-1")).state, "queued")
                self.assertEqual(client.request_timeout, 0.5)
        asyncio.run(scenario())
        self.assertEqual([got[1] for got in dead.received], [b"STATUS"])

    CALL = {"_tool": "t", "x": 1, "note": "\u2020"}

    def call_moved(self, tracker: Any, call: Any) -> Tuple[bytes, List[List[bytes]]]:
        """CALL of call, sent to A, answered moved to B; returns its request
        id and the frames queued: [to A, to B]."""
        future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        request_id = tracker.send("CALL", _codec.call_args("ctx", call, False),
                                  _wire.Pending("call", future, outcomes=[None]))
        self.assertEqual(tracker.dispatch(self.A, [b"ACTC01", b"ERROR", request_id, b"moved",
                                                   self.B.encode()]), [])
        frames = [sent for _, sent in tracker.outbox]
        self.assertEqual([endpoint for endpoint, _ in tracker.outbox], [self.A, self.B])
        tracker.outbox.clear()
        return request_id, frames

    def test_a_call_sent_on_to_the_owner_gets_an_id_kept_when_sent_back(self) -> None:
        """The owner may store the call and then fall silent: the call sent
        back to A after the timeout must be the same one (its _id)."""
        tracker = self.tracker()
        request_id, (to_a, to_b) = self.call_moved(tracker, self.CALL)
        first, second = json.loads(to_a[4]), json.loads(to_b[4])
        self.assertEqual(first, self.CALL)                  # One broker known: none
        self.assertRegex(second.pop("_id"), r"^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$")
        self.assertEqual(second, self.CALL)
        self.assertEqual(to_b[:4], to_a[:4])
        self.tick_at(tracker, 100.0 + actd.client.MULTI_REQUEST_TIMEOUT + 0.5)
        (endpoint, again), = list(tracker.outbox)
        self.assertEqual(endpoint, self.A)
        self.assertEqual(again, to_b)                       # The same _id

    def test_an_id_given_is_kept_and_plan_is_left_alone(self) -> None:
        tracker = self.tracker()
        _, (to_a, to_b) = self.call_moved(tracker, dict(self.CALL, _id="mine"))
        self.assertEqual(to_b, to_a)
        future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        args, _ = _codec.plan_args("ctx", [self.CALL], False)
        request_id = tracker.send("PLAN", args, _wire.Pending("plan", future))
        tracker.dispatch(self.A, [b"ACTC01", b"ERROR", request_id, b"moved", self.B.encode()])
        (_, to_a), (_, to_b) = list(tracker.outbox)
        self.assertEqual(to_b, to_a)

    def moved_then_accepted(self) -> Tuple[FakeBroker, List[Dict[str, Any]]]:
        """A broker that answers CALL moved to a second, which records the
        CALL and accepts it; returns the first and the calls received."""
        calls: List[Dict[str, Any]] = []

        def owner_answer(frames: List[bytes]) -> Any:
            if frames[1] == b"CALL":
                calls.append(json.loads(frames[4]))
                return [b"ACTC01", b"ACCEPTED", frames[2], b"7"]
            return None
        owner = FakeBroker(owner_answer)

        def first_answer(frames: List[bytes]) -> Any:
            if frames[1] == b"CALL":
                calls.append(json.loads(frames[4]))
                return [b"ACTC01", b"ERROR", frames[2], b"moved", owner.endpoint.encode()]
            return None
        first = FakeBroker(first_answer)
        self.addCleanup(owner.close)
        self.addCleanup(first.close)
        return first, calls

    def check_calls(self, calls: List[Dict[str, Any]]) -> None:
        self.assertEqual(len(calls), 2, calls)
        self.assertNotIn("_id", calls[0])                   # One broker known: none
        self.assertIn("_id", calls[1])                      # Sent on to the owner
        self.assertEqual({k: v for k, v in calls[1].items() if k != "_id"}, calls[0])

    def test_the_threaded_client_gives_the_call_it_sends_on_an_id(self) -> None:
        first, calls = self.moved_then_accepted()
        with actd.Client(first.endpoint, timeout=5.0) as client:
            self.assertEqual(client.call("ctx", self.CALL, wait=False), "7")
        self.check_calls(calls)
        self.assertEqual(calls[0], self.CALL)

    def test_later_calls_get_an_id_once_a_second_broker_is_known(self) -> None:
        """The client knows two brokers after the moved reply: a later call
        of the context goes straight to the owner, and may be sent on
        again if it is silent, so it gets an _id too (the choice is made
        per call, from the brokers known then)."""
        first, calls = self.moved_then_accepted()
        with actd.Client(first.endpoint, timeout=5.0) as client:
            self.assertEqual(client.call("ctx", self.CALL, wait=False), "7")
            self.assertEqual(client.call("ctx", self.CALL, wait=False), "7")
        self.assertEqual(len(calls), 3, calls)
        self.assertIn("_id", calls[2])                      # Straight to the owner
        self.assertNotEqual(calls[2]["_id"], calls[1]["_id"])

    def test_the_asyncio_client_gives_the_call_it_sends_on_an_id(self) -> None:
        first, calls = self.moved_then_accepted()

        async def scenario() -> None:
            async with actd.aio.AsyncClient(first.endpoint, timeout=5.0) as client:
                self.assertEqual(await client.call("ctx", json.dumps(self.CALL), wait=False),
                                 "7")
        asyncio.run(scenario())
        self.check_calls(calls)
        self.assertEqual(calls[0], self.CALL)


if __name__ == "__main__":
    unittest.main()
