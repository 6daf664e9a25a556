"""ACT/1 client framing and reply routing, shared by the threaded and the
asyncio clients. Futures are whatever the client passes in (a
``concurrent.futures.Future`` or an ``asyncio.Future``): both have
``set_result``, ``set_exception``, ``done`` and ``exception``.
"""

import itertools
import json
import logging
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .errors import ActdError, ProtocolError, error_for
from .types import Outcome, Status

log = logging.getLogger("actd.client")

HEADER = b"ACTC01"

#: A JSON argument: a value to encode, or JSON text already encoded.
JsonArg = Union[Dict[str, Any], List[Any], str, bytes]

#: A deferred action: settle one future (run outside any lock).
Action = Callable[[], None]


def encode_json(value: Any) -> bytes:
    """UTF-8 JSON text of ``value`` (strict: NaN and Infinity are refused)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8")


def json_arg(value: JsonArg) -> bytes:
    """A json frame: dicts and lists are encoded; str/bytes are taken as JSON text."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return encode_json(value)


def text_arg(value: Union[str, bytes, int]) -> bytes:
    """A plain frame (context id, call id, expression, number)."""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def has_output(call: JsonArg) -> bool:
    """True when a call carries ``_outputPath`` (so a ``DONE`` will follow)."""
    if isinstance(call, (str, bytes)):
        try:
            call = json.loads(call)
        except ValueError:
            return False
    return isinstance(call, dict) and "_outputPath" in call


def _decode(frame: bytes) -> str:
    return frame.decode("utf-8", "replace")


def parse_value(verb: str, args: List[bytes]) -> Any:
    """A ``VALUE`` reply holding JSON."""
    if verb != "VALUE" or len(args) != 1:
        raise ProtocolError("expected VALUE, got %s" % verb)
    try:
        return json.loads(args[0])
    except ValueError as error:
        raise ProtocolError("VALUE does not parse: %s" % error) from None


def parse_text(verb: str, args: List[bytes]) -> str:
    """A ``VALUE`` reply holding text."""
    if verb != "VALUE" or len(args) != 1:
        raise ProtocolError("expected VALUE, got %s" % verb)
    return _decode(args[0])


def parse_status(verb: str, args: List[bytes]) -> Status:
    """A ``STATUS`` reply."""
    value = parse_value(verb, args)
    if not isinstance(value, dict):
        raise ProtocolError("STATUS value is not an object")
    return Status(value)


def parse_seq(verb: str, args: List[bytes]) -> int:
    """An ``APPEND``'s ``OK {"seq": N}``."""
    if verb != "OK" or len(args) != 1:
        raise ProtocolError("expected OK with a seq, got %s" % verb)
    try:
        return int(json.loads(args[0])["seq"])
    except (ValueError, KeyError, TypeError) as error:
        raise ProtocolError("OK does not carry a seq: %s" % error) from None


def parse_ok(verb: str, args: List[bytes]) -> None:
    """A bare ``OK``."""
    if verb != "OK":
        raise ProtocolError("expected OK, got %s" % verb)


def parse_pong(verb: str, args: List[bytes]) -> None:
    """``PONG``."""
    if verb != "PONG":
        raise ProtocolError("expected PONG, got %s" % verb)


class Pending:
    """One request waiting for replies.

    ``reply`` gets the first reply (parsed by ``parse``; for CALL the call
    id, for PLAN the list of call ids). For CALL and PLAN, ``outcomes``
    holds one future per submitted call that has an output path (None for
    the others, and for all when ``DONE`` is not wanted); each gets that
    call's :class:`Outcome`.
    """

    def __init__(self, kind: str, reply: Any, parse: Optional[Callable[[str, List[bytes]], Any]] = None,
                 outcomes: Sequence[Optional[Any]] = ()) -> None:
        self.kind = kind                    # "simple", "call" or "plan"
        self.reply = reply
        self.parse = parse
        self.outcomes: List[Optional[Any]] = list(outcomes)
        self.accepted = False
        self.by_call_id: Dict[str, List[Any]] = {}


def _set_result(future: Any, value: Any) -> Action:
    def action() -> None:
        if not future.done():
            future.set_result(value)
    return action


def _set_exception(future: Any, error: BaseException) -> Action:
    def action() -> None:
        if not future.done():
            future.set_exception(error)
            # Mark it retrieved: nobody may ever wait for it (an asyncio
            # future would warn "exception was never retrieved")
            future.exception()
    return action


class Tracker:
    """Pending requests by request id, and the routing of replies to them.

    Not thread-safe: the threaded client calls it under a lock and runs the
    returned actions after releasing it.
    """

    def __init__(self) -> None:
        self._counter = itertools.count(1)
        self._pending: Dict[bytes, Pending] = {}

    def new_id(self) -> bytes:
        """A request id unique for this client."""
        return b"%x" % next(self._counter)

    def add(self, request_id: bytes, pending: Pending) -> None:
        """Track a request before it is sent."""
        self._pending[request_id] = pending

    def drop(self, request_id: bytes) -> None:
        """Forget a request (its late replies are ignored)."""
        self._pending.pop(request_id, None)

    def __len__(self) -> int:
        """Number of requests still waiting for a reply or a DONE."""
        return len(self._pending)

    def fail_all(self, error: BaseException) -> List[Action]:
        """Fail every pending request (the client is closing)."""
        actions: List[Action] = []
        for pending in self._pending.values():
            actions.append(_set_exception(pending.reply, error))
            for future in pending.outcomes:
                if future is not None:
                    actions.append(_set_exception(future, error))
        self._pending.clear()
        return actions

    def dispatch(self, frames: List[bytes]) -> List[Action]:
        """Route one message from the broker; returns the actions to run."""
        if len(frames) < 3 or frames[0] != HEADER:
            log.warning("a reply that is not ACT/1 dropped")
            return []
        verb = _decode(frames[1])
        request_id = frames[2]
        args = frames[3:]
        pending = self._pending.get(request_id)
        if pending is None:
            log.debug("%s for a request no longer waited for dropped", verb)
            return []
        if verb == "DONE":
            return self._done(request_id, pending, args)
        if pending.accepted:
            log.warning("%s after ACCEPTED dropped", verb)
            return []
        if verb == "ERROR":
            self._pending.pop(request_id, None)
            error = error_for(_decode(args[0]) if args else "internal",
                              _decode(args[1]) if len(args) > 1 else "")
            actions = [_set_exception(pending.reply, error)]
            for future in pending.outcomes:
                if future is not None:
                    actions.append(_set_exception(future, error))
            return actions
        if pending.kind == "simple":
            self._pending.pop(request_id, None)
            assert pending.parse is not None
            try:
                return [_set_result(pending.reply, pending.parse(verb, args))]
            except ActdError as error:
                return [_set_exception(pending.reply, error)]
        if verb != "ACCEPTED" or len(args) != 1:
            self._pending.pop(request_id, None)
            error = ProtocolError("expected ACCEPTED, got %s" % verb)
            return [_set_exception(future, error)
                    for future in [pending.reply] + pending.outcomes if future is not None]
        return self._accepted(request_id, pending, args[0])

    def _accepted(self, request_id: bytes, pending: Pending, body: bytes) -> List[Action]:
        if pending.kind == "call":
            ids: List[str] = [_decode(body)]
            value: Any = ids[0]
        else:
            try:
                value = json.loads(body)
                if not isinstance(value, list) or len(value) != len(pending.outcomes):
                    raise ValueError("not an array of %d call ids" % len(pending.outcomes))
                ids = [str(item) for item in value]
            except ValueError as error:
                self._pending.pop(request_id, None)
                problem = ProtocolError("ACCEPTED does not parse: %s" % error)
                return [_set_exception(future, problem)
                        for future in [pending.reply] + pending.outcomes if future is not None]
            value = ids
        pending.accepted = True
        for call_id, future in zip(ids, pending.outcomes):
            if future is not None:
                pending.by_call_id.setdefault(call_id, []).append(future)
        if not pending.by_call_id:
            self._pending.pop(request_id, None)
        return [_set_result(pending.reply, value)]

    def _done(self, request_id: bytes, pending: Pending, args: List[bytes]) -> List[Action]:
        if len(args) != 2:
            log.warning("a DONE with %d frames dropped", len(args))
            return []
        call_id = _decode(args[0])
        futures = pending.by_call_id.pop(call_id, [])
        if not pending.by_call_id and pending.accepted:
            self._pending.pop(request_id, None)
        try:
            raw = json.loads(args[1])
            if not isinstance(raw, dict):
                raise ValueError("not an object")
        except ValueError as error:
            problem = ProtocolError("DONE outcome does not parse: %s" % error)
            return [_set_exception(future, problem) for future in futures]
        outcome = Outcome(raw)
        return [_set_result(future, outcome) for future in futures]


def request_frames(command: str, request_id: bytes, args: Sequence[bytes]) -> List[bytes]:
    """``["ACTC01"][COMMAND][request-id][args...]``."""
    return [HEADER, command.encode("ascii"), request_id] + list(args)


def resolve_args(context: str, expression: str, instance: Optional[str]) -> List[bytes]:
    """RESOLVE's arguments."""
    args = [text_arg(context), text_arg(expression)]
    if instance is not None:
        args.append(text_arg(instance))
    return args


def view_args(context: str, format: str) -> Tuple[List[bytes], Callable[[str, List[bytes]], Any]]:
    """VIEW's arguments and the parser of its reply."""
    parse = parse_text if format == "text" else parse_value
    return [text_arg(context), text_arg(format)], parse
