"""ACT/1 client frames: the header, the arguments of each command (JSON
encoded strictly, calls given an ``_id``), the parsers of the replies, and
the paging of ``HISTORY`` and ``CONTEXTS``. Pure functions and small
state, no I/O, for both clients and their tracker (:mod:`actd._wire`).
"""

import json
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .errors import ProtocolError
from .types import Outcome, Status

HEADER = b"ACTC01"

#: A JSON argument: a value to encode, or JSON text already encoded.
JsonArg = Union[Dict[str, Any], List[Any], str, bytes]


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


def decode_frame(frame: bytes) -> str:
    """A frame's text (UTF-8, bad bytes replaced)."""
    return frame.decode("utf-8", "replace")


def _json_reply(expected: str, verb: str, args: List[bytes]) -> Any:
    """The JSON of a reply ``expected`` with one argument."""
    if verb != expected or len(args) != 1:
        raise ProtocolError("expected %s with a value, got %s" % (expected, verb))
    try:
        return json.loads(args[0])
    except ValueError as error:
        raise ProtocolError("%s does not parse: %s" % (expected, error)) from None


def parse_value(verb: str, args: List[bytes]) -> Any:
    """A ``VALUE`` reply holding JSON."""
    return _json_reply("VALUE", verb, args)


def parse_text(verb: str, args: List[bytes]) -> str:
    """A ``VALUE`` reply holding text."""
    if verb != "VALUE" or len(args) != 1:
        raise ProtocolError("expected VALUE, got %s" % verb)
    return decode_frame(args[0])


def read_status(value: Any, what: str) -> Status:
    """A ``STATUS`` value as a :class:`Status`; :class:`ProtocolError` when
    it is not one (``what`` names it in the message)."""
    if not isinstance(value, dict):
        raise ProtocolError("%s is not an object" % what)
    try:
        return Status(value)
    except ValueError as error:
        raise ProtocolError("%s cannot be read: %s" % (what, error)) from None


def read_outcome(value: Any, what: str) -> Outcome:
    """A ``DONE`` outcome as an :class:`Outcome`; :class:`ProtocolError`
    when it is not one."""
    if not isinstance(value, dict):
        raise ProtocolError("%s is not an object" % what)
    try:
        return Outcome(value)
    except ValueError as error:
        raise ProtocolError("%s cannot be read: %s" % (what, error)) from None


def parse_status(verb: str, args: List[bytes]) -> Status:
    """A ``STATUS`` reply."""
    return read_status(parse_value(verb, args), "STATUS value")


def parse_ok_value(verb: str, args: List[bytes]) -> Any:
    """An ``OK`` reply holding JSON (``APPEND``'s, ``DELETE``'s)."""
    return _json_reply("OK", verb, args)


def parse_seq(verb: str, args: List[bytes]) -> int:
    """An ``APPEND``'s ``OK {"seq": N}``."""
    try:
        return int(parse_ok_value(verb, args)["seq"])
    except (KeyError, TypeError, ValueError) as error:
        raise ProtocolError("OK does not carry a seq: %s" % error) from None


def parse_ok(verb: str, args: List[bytes]) -> None:
    """A bare ``OK``."""
    if verb != "OK":
        raise ProtocolError("expected OK, got %s" % verb)


def parse_pong(verb: str, args: List[bytes]) -> None:
    """``PONG``."""
    if verb != "PONG":
        raise ProtocolError("expected PONG, got %s" % verb)


def _with_id(call: Any) -> Any:
    """A call object with an ``_id`` (a random UUID) when it has none."""
    if isinstance(call, dict) and "_id" not in call:
        call = dict(call)
        call["_id"] = str(uuid.uuid4())
    return call


def with_ids(body: Any, plan: bool) -> Any:
    """A CALL's call, or a PLAN's calls, each given an ``_id`` (a random
    UUID) when it lacks one, so that sending it again to another broker
    after a timeout does not run it twice. JSON text is parsed and encoded
    again; text that does not parse is left as it is (actd refuses it)."""
    text = isinstance(body, (str, bytes))
    value = body
    if text:
        try:
            value = json.loads(body)
        except ValueError:
            return body
    if plan:
        if not isinstance(value, list):
            return body
        value = [_with_id(item) for item in value]
    else:
        if not isinstance(value, dict) or "_id" in value:
            return body
        value = _with_id(value)
    return encode_json(value) if text else value


def request_frames(command: str, request_id: bytes, args: Sequence[bytes]) -> List[bytes]:
    """``["ACTC01"][COMMAND][request-id][args...]``."""
    return [HEADER, command.encode("ascii"), request_id] + list(args)


def call_args(context: str, call: JsonArg, auto_id: bool) -> List[bytes]:
    """CALL's arguments (the call given an ``_id`` when ``auto_id``)."""
    if auto_id:
        call = with_ids(call, plan=False)
    return [text_arg(context), json_arg(call)]


def plan_args(context: str, calls: Union[Sequence[Dict[str, Any]], str, bytes],
              auto_id: bool) -> Tuple[List[bytes], List[Any]]:
    """PLAN's arguments (each call given an ``_id`` when ``auto_id``), and
    the plan's calls as a list (empty when JSON text is not a list): a
    ``DONE`` is awaited for each of them that has an output path."""
    body: Any = calls
    if isinstance(calls, (str, bytes)):
        try:
            parsed = json.loads(calls)
        except ValueError:
            parsed = []
        items = parsed if isinstance(parsed, list) else []
    else:
        # Any sequence of calls (a tuple too) is sent as a JSON array: its
        # items are the calls actd accepts, whose DONEs are awaited
        items = body = list(calls)
    if auto_id:
        body = with_ids(body, plan=True)
    return [text_arg(context), json_arg(body)], items


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


class HistoryPages:
    """The ``HISTORY`` requests reading ``context`` from ``from_seq`` on,
    ``page_size`` messages at a time and at most ``limit`` (None: all), for
    both clients' ``history()``: send :meth:`args` while it is not None,
    and pass each reply to :meth:`take`."""

    def __init__(self, context: str, from_seq: int, limit: Optional[int],
                 page_size: int) -> None:
        """Nothing is sent yet."""
        # actd refuses HISTORY for more than 1000 (bad_argument): said here,
        # before anything is sent, as ContextPages does
        if not 1 <= page_size <= 1000 or (limit is not None and limit < 0):
            raise ValueError("page_size is 1 to 1000, and limit None or at least 0")
        self.context = context
        self.seq = from_seq
        self.left = limit
        self.page_size = page_size
        self.done = limit == 0

    def args(self) -> Optional[List[bytes]]:
        """The next request's arguments, or None when all was read."""
        if self.done:
            return None
        size = self.page_size if self.left is None else min(self.page_size, self.left)
        return [text_arg(self.context), text_arg(self.seq), text_arg(size)]

    def take(self, page: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """A reply's messages; an empty page is the last (a page may be
        short before the end: actd stops one at ``max_reply_bytes``)."""
        if self.left is not None:
            self.left -= len(page)
        self.done = not page or self.left == 0
        if page:
            self.seq = int(page[-1]["_seq"]) + 1
        return page


def append_args(context: str, message: JsonArg, key: Optional[str],
                auto_key: bool) -> List[bytes]:
    """APPEND's arguments, with the idempotency key when given, else one
    made up when ``auto_key`` (:func:`with_key`)."""
    args = [text_arg(context), json_arg(message)]
    if key is not None:
        args.append(text_arg(key))
    elif auto_key:
        args = with_key(args)
    return args


def with_key(args: List[bytes]) -> List[bytes]:
    """APPEND's arguments given an idempotency key (a random UUID) when
    they have none, so that sending it again to another broker after a
    timeout does not append it twice (actd answers the first ``seq``). A
    key given is kept."""
    if len(args) == 2:
        return args + [str(uuid.uuid4()).encode("ascii")]
    return args


class ContextPages:
    """The ``CONTEXTS`` requests listing the contexts whose id starts with
    ``prefix``, ``page_size`` at a time and at most ``limit`` (None: all),
    for both clients' ``contexts()``: send :meth:`args` while it is not None, and pass each
    reply to :meth:`take`."""

    def __init__(self, prefix: str, limit: Optional[int], page_size: int) -> None:
        """Nothing is sent yet."""
        if not 1 <= page_size <= 1000 or (limit is not None and limit < 0):
            raise ValueError("page_size is 1 to 1000, and limit None or at least 0")
        self.prefix = prefix
        self.page_size = page_size
        self.left = limit
        self.after: Optional[str] = ""
        self.done = limit == 0

    def args(self) -> Optional[List[bytes]]:
        """The next request's arguments, or None when all was read."""
        if self.done or self.after is None:
            return None
        size = self.page_size if self.left is None else min(self.page_size, self.left)
        return [text_arg(self.prefix), text_arg(self.after), text_arg(size)]

    def take(self, page: Dict[str, Any]) -> List[Dict[str, Any]]:
        """A reply's contexts; without ``next``, the last page."""
        contexts = list(page.get("contexts", []))
        if self.left is not None:
            contexts = contexts[:self.left]
            self.left -= len(contexts)
        self.after = page.get("next")
        self.done = self.left == 0 or not contexts
        return contexts
