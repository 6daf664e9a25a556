"""Calls to a tool that prescribes its output path (PROTOCOL.md section
2.1: ``"outputPath": {"const": path}``; "a call with none gets this one",
so actd sends a ``DONE`` for it), shared by the threaded and the asyncio
clients.

``call()`` and ``plan()`` with ``wait`` look up, for each call without
``_outputPath``, whether its tool prescribes one (``TOOLS <activity>``,
the answer kept :data:`PERIOD` seconds per client and activity), and give
the call that path before sending it, so its ``DONE`` always follows and
its outcome is returned. This module does no I/O: the client asks
``TOOLS`` for each activity :meth:`Prescriptions.unknown` names.
"""

import json
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .errors import ActdError

#: Seconds an answer of ``TOOLS <activity>`` is used for before it is asked
#: again (so a stream of calls costs one ``TOOLS`` per activity per period,
#: and a change of the registry is seen soon after).
PERIOD = 2.0


def prescribed(answer: Any, activity: str) -> Optional[str]:
    """The output path ``TOOLS <activity>``'s ``answer`` prescribes for
    ``activity`` (its ``outputPath``'s ``const``), or None."""
    entry = answer.get(activity) if isinstance(answer, dict) else None
    declared = entry.get("outputPath") if isinstance(entry, dict) else None
    path = declared.get("const") if isinstance(declared, dict) else None
    return path if isinstance(path, str) else None


def lacking(call: Any) -> Optional[Tuple[Dict[str, Any], str]]:
    """A call (a dict, or JSON text parsed here) without ``_outputPath``
    and with a string ``_tool``: the call as a dict and its activity; else
    None (such a call is sent as it is)."""
    if isinstance(call, (str, bytes)):
        try:
            call = json.loads(call)
        except ValueError:
            return None
    if not isinstance(call, dict) or "_outputPath" in call:
        return None
    activity = call.get("_tool")
    return (call, activity) if isinstance(activity, str) else None


def not_served(error: ActdError) -> bool:
    """True for a ``TOOLS`` refusal that leaves the registry unknown (a
    broker without the command, a client without the read right): the
    call is then sent as it is, as before."""
    return error.code in ("unknown_command", "unauthorized")


class Prescriptions:
    """The prescribed output paths of activities a client asked ``TOOLS``
    about, each kept ``period`` seconds. Thread-safe."""

    def __init__(self, period: float = PERIOD,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """An empty cache."""
        self.period = period
        self._clock = clock
        self._lock = threading.Lock()
        self._known: Dict[str, Tuple[float, Optional[str]]] = {}  # activity -> (until, path)

    def lookup(self, activity: str) -> Tuple[bool, Optional[str]]:
        """``(True, path or None)`` when activity's answer is fresh, else
        ``(False, None)``."""
        with self._lock:
            known = self._known.get(activity)
            if known is None or known[0] <= self._clock():
                self._known.pop(activity, None)
                return False, None
            return True, known[1]

    def store(self, activity: str, answer: Any) -> Optional[str]:
        """Keep what ``TOOLS <activity>`` answered; returns the path it
        prescribes (None: none)."""
        path = prescribed(answer, activity)
        with self._lock:
            self._known[activity] = (self._clock() + self.period, path)
        return path

    def unknown(self, calls: Sequence[Any], paths: Dict[str, Optional[str]]) -> List[str]:
        """The activities of ``calls`` without ``_outputPath`` whose answer
        is not fresh (each once): those to ask ``TOOLS`` about. Those whose
        answer is fresh are put in ``paths`` (activity -> path or None)."""
        wanted: List[str] = []
        for call in calls:
            found = lacking(call)
            if found is None or found[1] in paths or found[1] in wanted:
                continue
            fresh, path = self.lookup(found[1])
            if fresh:
                paths[found[1]] = path
            else:
                wanted.append(found[1])
        return wanted


def apply(call: Any, paths: Dict[str, Optional[str]]) -> Any:
    """``call`` given its tool's prescribed ``_outputPath`` (from ``paths``,
    activity -> path or None) when it has none and the tool prescribes one
    (a copy: the caller's dict is not changed); otherwise ``call`` as it
    was given."""
    found = lacking(call)
    if found is None or paths.get(found[1]) is None:
        return call
    return dict(found[0], _outputPath=paths[found[1]])


def plan_items(calls: Union[Sequence[Any], str, bytes]) -> Optional[List[Any]]:
    """A plan's calls as a list (JSON text parsed; any other sequence, as
    ``plan_args`` sends it), or None when JSON text is not an array (then
    sent as it is)."""
    if isinstance(calls, (str, bytes)):
        try:
            calls = json.loads(calls)
        except ValueError:
            return None
        return calls if isinstance(calls, list) else None
    return list(calls)
