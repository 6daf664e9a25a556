"""Values exchanged with actd: results with a branch, call outcomes and statuses."""

from typing import Any, Callable, Dict, List, Optional

from .errors import CallFailed

__all__ = ["Branch", "Outcome", "Status", "ENDED_STATES", "DEFAULT_CLIENT_ENDPOINT",
           "DEFAULT_WORKER_ENDPOINT"]

#: PROTOCOL.md section 5: where clients connect by default.
DEFAULT_CLIENT_ENDPOINT = "tcp://127.0.0.1:5555"
#: PROTOCOL.md section 5: where workers connect by default.
DEFAULT_WORKER_ENDPOINT = "tcp://127.0.0.1:5556"

#: The call states that are outcomes (SEMANTICS.md section 7).
ENDED_STATES = frozenset({"ok", "error", "timeout", "skipped", "cancelled"})


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _field(raw: Dict[str, Any], key: str, default: Any, valid: Callable[[Any], bool],
           what: str) -> Any:
    """``raw[key]`` (``default`` when absent); ``ValueError`` when it is not
    what PROTOCOL.md says it is. A reply the clients cannot read must fail
    that request (``ProtocolError``), not their reader with a ``TypeError``
    from ``int(None)``, nor turn ``"written": "ab"`` into ``["a", "b"]``."""
    value = raw.get(key, default)
    if not valid(value):
        raise ValueError("%s is not %s: %r" % (key, what, value))
    return value


def _integers(value: Any) -> bool:
    return isinstance(value, list) and all(_is_integer(item) for item in value)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


class Branch:
    """An activity's result that names the alternative of the output path it
    took (SEMANTICS.md section 5): ``return actd.Branch(1, value)`` writes
    ``value`` to the second alternative of ``†a || †b``. A plain return
    value takes branch 0."""

    __slots__ = ("index", "value")

    def __init__(self, index: int, value: Any) -> None:
        """Create a result for alternative ``index`` (0, 1, ...)."""
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError("a branch is an integer >= 0, not %r" % (index,))
        self.index: int = index
        self.value: Any = value

    def __repr__(self) -> str:
        """``Branch(index, value)``."""
        return "Branch(%d, %r)" % (self.index, self.value)

    def __eq__(self, other: object) -> bool:
        """Two branches are equal when index and value are."""
        return isinstance(other, Branch) and (self.index, self.value) == (other.index, other.value)


class Outcome:
    """How a call ended: the ``DONE`` outcome of PROTOCOL.md section 1.

    Attributes: ``call_id``, ``status`` (``ok``, ``error``, ``timeout``,
    ``skipped`` or ``cancelled``), ``branch`` (None when no alternative was
    written), ``written`` (references written), ``seqs`` (``_seq`` of each
    appended message), ``result`` (the result, for ``ok`` calls with an
    output path; None otherwise, see ``has_result``), ``error`` (the error
    object ``{"code", "message", ...}`` or None), ``attempts``, and ``raw``
    (the JSON object as received). ``ValueError`` when a field has
    another type than PROTOCOL.md gives it.
    """

    __slots__ = ("call_id", "status", "branch", "written", "seqs", "result", "has_result",
                 "error", "attempts", "raw")

    def __init__(self, raw: Dict[str, Any]) -> None:
        """Wrap a ``DONE`` outcome object."""
        self.raw: Dict[str, Any] = raw
        self.call_id: str = str(raw.get("call_id", ""))
        self.status: str = str(raw.get("status", ""))
        self.branch: Optional[int] = _field(raw, "branch", None,
                                            lambda value: value is None or _is_integer(value),
                                            "an integer")
        self.written: List[str] = list(_field(raw, "written", [], _strings, "a list of strings"))
        self.seqs: List[int] = list(_field(raw, "seqs", [], _integers, "a list of integers"))
        self.has_result: bool = "result" in raw
        self.result: Any = raw.get("result")
        self.error: Optional[Dict[str, Any]] = _field(
            raw, "error", None, lambda value: value is None or isinstance(value, dict),
            "an object")
        self.attempts: int = _field(raw, "attempts", 0, _is_integer, "an integer")

    @property
    def ok(self) -> bool:
        """True when the call ended ``ok``."""
        return self.status == "ok"

    @property
    def code(self) -> Optional[str]:
        """The error code, or None for an ``ok`` call."""
        return self.error.get("code") if self.error else None

    @property
    def message(self) -> Optional[str]:
        """The error message, or None for an ``ok`` call."""
        return self.error.get("message") if self.error else None

    def raise_for_error(self) -> "Outcome":
        """Raise :class:`actd.CallFailed` unless the call ended ``ok``; returns self."""
        if not self.ok:
            raise CallFailed(self.message or self.status, self.code or self.status, self)
        return self

    def __eq__(self, other: object) -> bool:
        """Outcomes are equal when their JSON objects are."""
        return isinstance(other, Outcome) and self.raw == other.raw

    def __repr__(self) -> str:
        """``Outcome({...})`` with the JSON object."""
        return "Outcome(%r)" % (self.raw,)


class Status:
    """A call's state: the ``STATUS`` value of PROTOCOL.md section 1.

    Attributes: ``call_id``, ``context``, ``state`` (``waiting``,
    ``queued``, ``running`` or an outcome status), ``attempts``,
    ``progress`` (the latest ``PROGRESS`` details, or None), ``waiting_on``
    (parameter expressions still unmet, for a waiting call; else an empty
    list), ``outcome`` (an :class:`Outcome` for an ended call, else None)
    and ``raw``. ``ValueError`` when a field has another type than
    PROTOCOL.md gives it.
    """

    __slots__ = ("call_id", "context", "state", "attempts", "progress", "has_progress",
                 "waiting_on", "outcome", "raw")

    def __init__(self, raw: Dict[str, Any]) -> None:
        """Wrap a ``STATUS`` value."""
        self.raw: Dict[str, Any] = raw
        self.call_id: str = str(raw.get("call_id", ""))
        self.context: str = str(raw.get("context", ""))
        self.state: str = str(raw.get("state", ""))
        self.attempts: int = _field(raw, "attempts", 0, _is_integer, "an integer")
        self.has_progress: bool = "progress" in raw
        self.progress: Any = raw.get("progress")
        self.waiting_on: List[str] = list(_field(raw, "waiting_on", [], _strings,
                                                 "a list of strings"))
        outcome = raw.get("outcome")
        self.outcome: Optional[Outcome] = Outcome(outcome) if isinstance(outcome, dict) else None

    @property
    def ended(self) -> bool:
        """True when the state is an outcome (the call will not change again)."""
        return self.state in ENDED_STATES

    def __repr__(self) -> str:
        """``Status({...})`` with the JSON object."""
        return "Status(%r)" % (self.raw,)
