"""What the request tracker (:mod:`actd._wire`) keeps of a request that
waits for replies, and of a call whose ``DONE`` it awaits."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Set


class Pending:
    """One request waiting for replies.

    ``reply`` gets the first reply (parsed by ``parse``; for CALL the call
    id, for PLAN the list of call ids). For CALL and PLAN, ``outcomes``
    holds one future per submitted call that has an output path (None for
    the others, and for all when ``DONE`` is not wanted); each gets that
    call's :class:`Outcome`. The other attributes are the tracker's: what
    to send again, and where.
    """

    def __init__(self, kind: str, reply: Any, parse: Optional[Callable[[str, List[bytes]], Any]] = None,
                 outcomes: Sequence[Optional[Any]] = (), pin: Optional[str] = None) -> None:
        self.kind = kind                    # "simple", "call", "plan", "poll" or "watch"
        self.reply = reply
        self.parse = parse
        self.outcomes: List[Optional[Any]] = list(outcomes)
        self.accepted = False
        self.by_call_id: Dict[str, List[Any]] = {}
        self.command = ""
        self.args: List[bytes] = []
        self.context: Optional[str] = None  # Routed by context
        self.call_id: Optional[str] = None  # Routed by call id
        self.endpoint = ""                  # Where it was sent last
        self.hops = 0                       # moved replies followed
        self.sent_at = 0.0
        self.heard = False                  # A reply came since it was sent last
        self.tried: Set[str] = set()
        self.wait: Optional["_Wait"] = None  # A poll: the wait it is for
        self.pin = pin                      # The broker it must go to (None: routed)


class _Wait:
    """A call whose ``DONE`` is awaited by request ``request_id``."""

    __slots__ = ("request_id", "call_id", "endpoint", "heard", "polling")

    def __init__(self, request_id: bytes, call_id: str, endpoint: str, heard: float) -> None:
        self.request_id = request_id
        self.call_id = call_id
        self.endpoint = endpoint            # The broker that accepted it
        self.heard = heard                  # Last news of it (ACCEPTED, a poll's answer)
        self.polling = False
