"""A broker cut off from PostgreSQL past two thirds of its lease that knew
no live broker to name (one joined after its last read of the database)
answers ERROR moved naming none (docs/protocol.md section 12). The client
sends the request at once to the next broker it knows of, never back to
that one, as it would after a timeout; with no other broker, or once
MAX_HOPS moved replies were followed, it raises actd.Moved. The client
raised Moved at once, so its requests never reached the broker that
could serve them. No broker runs here: the tracker is driven by hand."""

import concurrent.futures
import json
import unittest
from typing import Any, List, Tuple

import support  # noqa: F401 - the package from this tree

import actd
import actd.aio
from actd import _codec, _wire


class MovedNowhereTest(unittest.TestCase):

    A = "tcp://127.0.0.1:1"
    B = "tcp://127.0.0.1:2"

    @staticmethod
    def tracker(*endpoints: str) -> Any:
        """The tracker of an asyncio client given endpoints (built as the
        client builds it; no socket or task before its first request)."""
        return actd.aio.AsyncClient(list(endpoints))._tracker

    @staticmethod
    def sent(tracker: Any) -> List[Tuple[str, bytes]]:
        """(endpoint, command) of each request queued since last asked."""
        queued = [(endpoint, frames[1]) for endpoint, frames in tracker.outbox]
        tracker.outbox.clear()
        return queued

    def append_at_a(self, tracker: Any) -> Tuple[bytes, "concurrent.futures.Future[Any]"]:
        """APPEND to ctx, whose owner the client last saw at A: sent to A."""
        tracker._owners["ctx"] = self.A
        future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        request_id = tracker.send("APPEND", [b"ctx", b'{"type": "text"}'],
                                  _wire.Pending("simple", future, _codec.parse_seq))
        self.assertEqual(self.sent(tracker), [(self.A, b"APPEND")])
        return request_id, future

    @staticmethod
    def answer(tracker: Any, endpoint: str, frames: List[bytes]) -> None:
        for action in tracker.dispatch(endpoint, [b"ACTC01"] + frames):
            action()

    def test_a_request_moved_nowhere_goes_to_the_next_broker_at_once(self) -> None:
        tracker = self.tracker(self.A, self.B)
        request_id, future = self.append_at_a(tracker)
        self.answer(tracker, self.A, [b"ERROR", request_id, b"moved", b""])
        self.assertEqual(self.sent(tracker), [(self.B, b"APPEND")])
        self.assertFalse(future.done())
        self.answer(tracker, self.B, [b"OK", request_id, json.dumps({"seq": 2}).encode()])
        self.assertEqual(future.result(0), 2)
        self.assertEqual(tracker._owners["ctx"], self.B)

    def test_a_status_moved_nowhere_goes_to_the_next_broker(self) -> None:
        tracker = self.tracker(self.A, self.B)
        tracker._accepted["c-1"] = self.A
        future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        request_id = tracker.send("STATUS", [b"c-1"],
                                  _wire.Pending("simple", future, _codec.parse_status))
        self.assertEqual(self.sent(tracker), [(self.A, b"STATUS")])
        self.answer(tracker, self.A, [b"ERROR", request_id, b"moved"])
        self.assertEqual(self.sent(tracker), [(self.B, b"STATUS")])

    def test_with_no_other_broker_moved_nowhere_is_raised(self) -> None:
        tracker = self.tracker(self.A)
        request_id, future = self.append_at_a(tracker)
        self.answer(tracker, self.A, [b"ERROR", request_id, b"moved", b""])
        self.assertEqual(self.sent(tracker), [])
        self.assertIsInstance(future.exception(0), actd.Moved)
        self.assertEqual(future.exception(0).endpoint, "")
        self.assertIn("named no other broker", str(future.exception(0)))

    def test_moved_back_and_forth_is_followed_max_hops_times(self) -> None:
        """The other broker names the cut-off one (its lease has not run
        out yet), which names none: bounded like any moved reply."""
        tracker = self.tracker(self.A, self.B)
        request_id, future = self.append_at_a(tracker)
        at = self.A
        for hop in range(_wire.MAX_HOPS):
            owner = b"" if at == self.A else self.A.encode()
            self.answer(tracker, at, [b"ERROR", request_id, b"moved", owner])
            at = self.B if at == self.A else self.A
            self.assertEqual(self.sent(tracker), [(at, b"APPEND")], hop)
        self.answer(tracker, at, [b"ERROR", request_id, b"moved", b""])
        self.assertEqual(self.sent(tracker), [])
        self.assertIsInstance(future.exception(0), actd.Moved)


if __name__ == "__main__":
    unittest.main()
