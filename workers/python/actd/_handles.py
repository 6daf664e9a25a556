"""What both clients' handles share (:class:`CallHandleBase`,
:class:`PlanHandleBase`), the deadlines their waits keep, and the
threaded client's wait for a reply (:func:`wait_future`).
"""

import concurrent.futures
import time
from typing import Any, List, Optional

from .errors import Timeout

def deadline_after(timeout: Optional[float]) -> Optional[float]:
    """The ``time.monotonic()`` ``timeout`` seconds from now (None: no limit)."""
    return None if timeout is None else time.monotonic() + timeout


def wait_time(probe: Optional[float], deadline: Optional[float]) -> Optional[float]:
    """Seconds to wait: ``probe`` (None: no limit), at most until ``deadline``."""
    left = time_left(deadline)
    if left is None or (probe is not None and probe < left):
        return probe
    return left


def within(deadline: Optional[float], default: Optional[float]) -> Optional[float]:
    """The timeout of a request that a method bounded by ``deadline`` sends
    on its way (``STATUS``, ``TOOLS``): the time left, or ``default`` (the
    client's timeout) when the method has no limit."""
    return default if deadline is None else time_left(deadline)


def check_deadline(deadline: Optional[float]) -> None:
    """Raise :class:`actd.Timeout` once ``deadline`` has passed."""
    if deadline is not None and time.monotonic() >= deadline:
        raise Timeout("no outcome in time")


def time_left(deadline: Optional[float]) -> Optional[float]:
    """Seconds left until ``deadline``, 0 once past (None: no limit)."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class CallHandleBase:
    """What a call's handle holds, for both clients (their handles differ
    in how they wait): the futures of the call's reply and of its ``DONE``
    (None without ``_outputPath``)."""

    def __init__(self, client: Any, request_id: bytes, reply: Any, done: Any) -> None:
        """Created by the client's ``submit``."""
        self._client = client
        self._request_id = request_id
        self._reply = reply
        self._done = done

    @property
    def has_output(self) -> bool:
        """True when the call has an ``_outputPath`` (a ``DONE`` will come)."""
        return self._done is not None

    def done(self) -> bool:
        """True when nothing more will arrive for this call (its outcome, or
        its refusal; for a fire-and-forget call, its ``ACCEPTED``)."""
        if self._reply.done() and self._reply.exception() is not None:
            return True
        return (self._done or self._reply).done()

    def forget(self) -> None:
        """Stop waiting: a ``DONE`` arriving later is dropped."""
        self._client._forget(self._request_id)


class PlanHandleBase:
    """What a plan's handle holds, for both clients: the futures of the
    plan's reply and of each call's ``DONE`` (None for a call without
    ``_outputPath``)."""

    def __init__(self, client: Any, request_id: bytes, reply: Any,
                 outcomes: List[Any]) -> None:
        """Created by the client's ``submit_plan``."""
        self._client = client
        self._request_id = request_id
        self._reply = reply
        self._outcomes = outcomes

    def forget(self) -> None:
        """Stop waiting: ``DONE`` replies arriving later are dropped."""
        self._client._forget(self._request_id)


def wait_future(future: "concurrent.futures.Future[Any]", timeout: Optional[float], what: str,
                client: Any = None) -> Any:
    """The future's result, or :class:`actd.Timeout` after ``timeout``
    seconds (None: no limit), saying, while ``client`` never reached a
    broker, what its connection attempts saw."""
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        unreached = client._unreached() if client is not None else ""
        raise Timeout("no %s within %.3g s%s" % (what, timeout, unreached)) from None
