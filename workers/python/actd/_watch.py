"""What a ``watch()`` iterator knows, for both clients: the watch's state
(:class:`Watch`), its subscription (:class:`Subscription`), the sentinel
of a lost connection, and the outcome a call's event carries.
"""

from typing import Any, Dict, List, Optional, Tuple

from ._codec import read_status, text_arg
from .types import Outcome

#: Seconds the broker's start time, estimated from two ``STATS`` replies,
#: may differ before it counts as a restart (uptime_ms is in whole ms).
START_SLACK = 0.05


def call_outcome(event: Optional[Dict[str, Any]], call_id: str) -> Optional[Outcome]:
    """The outcome in a watch's ``{"call": ...}`` event when it is call_id's
    and the call has ended, else None."""
    call = event.get("call") if event else None
    if isinstance(call, dict) and str(call.get("call_id")) == call_id:
        return read_status(call, "a call event").outcome
    return None


#: What a watch's sink gets when the connection it was sent on dropped: the
#: broker's events for it are lost, and the iterator watches again.
WATCH_LOST: Any = object()


class Subscription:
    """One ``WATCH`` of a ``watch()`` iterator, and the ``STATS`` asked of
    its broker whose reply is awaited (None once it came)."""

    __slots__ = ("watch_id", "stats_id", "stats", "sent", "events")

    def __init__(self, sent: float, stats: Any) -> None:
        """Set by :meth:`Tracker.subscribe`."""
        self.watch_id = b""
        self.stats_id = b""
        self.stats: Optional[Any] = stats   # A future
        self.sent = sent                    # When the STATS was sent
        self.events: Any = None             # The client's queue of events


class Watch:
    """What one ``watch()`` iterator knows, for both clients: the context,
    the last ``seq`` it yielded, and the broker's start time.

    Before each ``WATCH`` (:meth:`args`) the iterator asks ``STATS`` of the
    broker it goes to and passes it to :meth:`restarted` (so the broker
    that answered is the one that got the watch, or one that died before
    it), then passes each event to :meth:`take`. When
    nothing came for a while it asks ``STATS`` of the watch's broker
    again: no reply, or a broker that started since (its uptime says so),
    means the watch is lost, and the iterator watches again (``UNWATCH``
    for the old one, then :meth:`args`: from the seq after the last one).
    """

    def __init__(self, context: str, from_seq: int, calls: bool) -> None:
        """No watch sent yet."""
        if from_seq < 0:
            raise ValueError("from_seq is 0 (only new messages) or more")
        self.context = context
        self.calls = calls
        self.last: Optional[int] = from_seq - 1 if from_seq > 0 else None
        self.ended = False
        self._start: Optional[Tuple[float, float]] = None

    def args(self) -> List[bytes]:
        """The next ``WATCH``'s arguments: from the seq after the last one
        (0, only new ones, while none came after ``from_seq`` 0)."""
        return [text_arg(self.context), text_arg(0 if self.last is None else self.last + 1),
                b"all" if self.calls else b"messages"]

    def take(self, item: Any) -> Optional[bool]:
        """An event: True to yield it, False when it was yielded already,
        None for a gap or :data:`WATCH_LOST` (watch again). Raises the
        error that ended the watch."""
        if isinstance(item, BaseException):
            raise item
        if item is WATCH_LOST:
            return None
        if item.get("deleted"):
            self.ended = True
        elif "seq" in item:
            seq = int(item["seq"])
            if self.last is not None:
                if seq <= self.last:
                    return False
                if seq != self.last + 1:
                    return None
            self.last = seq
        return True

    def restarted(self, stats: Dict[str, Any], sent: float, received: float) -> bool:
        """A ``STATS`` reply sent at ``sent`` and received at ``received``
        (``time.monotonic()``): True when its broker started after the one
        of the earlier replies (so the watch is gone)."""
        uptime = float(stats.get("uptime_ms", 0)) / 1000.0
        low, high = sent - uptime, received - uptime
        known = self._start
        if known is not None and low <= known[1] + START_SLACK:
            return False
        self._start = (low, high)
        return known is not None
