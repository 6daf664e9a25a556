"""ACT/1 client framing, and the routing of requests and replies among one
or several brokers, shared by the threaded and the asyncio clients with
what their handles have in common (it does no I/O: the client sends what
it queues in ``outbox`` and hands it what the sockets receive). Futures
are whatever the client passes in (a ``concurrent.futures.Future`` or an
``asyncio.Future``): both have ``set_result``, ``set_exception``,
``done`` and ``exception``.

Several brokers sharing one store each own some contexts. A request about
context C goes first to the broker C was last seen at, else to the broker
rendezvous hashing ranks first for C (:func:`rendezvous` and :func:`score`:
the same rule in every actd client library); an ``ERROR moved`` reply names the owner, and
the request is sent there again (at most :data:`MAX_HOPS` times). A broker
that does not answer within ``request_timeout`` is skipped for
:data:`DEAD_FOR` seconds and the request goes to the next broker in C's
order. Calls whose ``DONE`` is awaited are asked about with ``STATUS``
every ``status_poll`` seconds once that long has passed without their
``DONE`` (a new owner of the context cannot send ``DONE`` to the socket of
the broker that accepted the call).
"""

import collections
import itertools
import json
import logging
import time
import uuid
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Set, Tuple, Union

from .errors import ActdError, Disconnected, ProtocolError, Timeout, error_for
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
    return _decode(args[0])


def parse_status(verb: str, args: List[bytes]) -> Status:
    """A ``STATUS`` reply."""
    value = parse_value(verb, args)
    if not isinstance(value, dict):
        raise ProtocolError("STATUS value is not an object")
    return Status(value)


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


#: ``moved`` replies followed for one request; one more fails it with
#: :class:`actd.Moved`.
MAX_HOPS = 5

#: Seconds a broker that did not answer in time is skipped (it is taken back
#: as soon as anything arrives from it).
DEAD_FOR = 10.0

#: Most ``STATUS`` polls started per ``status_poll`` interval.
POLL_BATCH = 100

#: Seconds a ``STATUS`` poll may go unanswered before it is given up (the
#: next interval sends a new one).
POLL_EXPIRES = 10.0

#: Most contexts and call ids whose broker is remembered.
ROUTES_KEPT = 10000

#: Commands about one context (their first argument): routed by context.
CONTEXT_COMMANDS = frozenset({"CALL", "PLAN", "APPEND", "RESOLVE", "VIEW", "HISTORY", "WATCH",
                              "DELETE"})

#: Commands about one call (their first argument): routed to the broker
#: that accepted it when known.
CALL_COMMANDS = frozenset({"STATUS", "CANCEL"})

_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211
_MASK = (1 << 64) - 1


def score(endpoint: str, context: str) -> int:
    """The rendezvous score of ``endpoint`` for ``context``: FNV-1a, 64
    bits, of the UTF-8 bytes of ``endpoint + "\\n" + context``, then
    MurmurHash3's 64-bit finalizer (``fmix64``), as the C library computes
    it. The finalizer matters: FNV-1a alone barely mixes the last bytes into
    the high bits, so contexts named alike (``run-1``, ``run-2``, ...) would
    mostly rank the brokers the same way."""
    value = _FNV_OFFSET
    for byte in (endpoint + "\n" + context).encode("utf-8"):
        value = ((value ^ byte) * _FNV_PRIME) & _MASK
    value ^= value >> 33
    value = (value * 0xff51afd7ed558ccd) & _MASK
    value ^= value >> 33
    value = (value * 0xc4ceb9fe1a85ec53) & _MASK
    value ^= value >> 33
    return value


def rendezvous(endpoints: Sequence[str], context: str) -> List[str]:
    """``endpoints`` in the order requests about ``context`` try them: the
    highest :func:`score` first, ties broken by the smaller endpoint."""
    return sorted(endpoints, key=lambda endpoint: (-score(endpoint, context), endpoint))


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


def _to_sink(sink: Callable[[Any], None], item: Any) -> Action:
    return lambda: sink(item)


def _error(args: List[bytes]) -> ActdError:
    """The exception of an ``ERROR`` reply's arguments."""
    return error_for(_decode(args[0]) if args else "internal",
                     _decode(args[1]) if len(args) > 1 else "")


def _remember(table: "collections.OrderedDict[str, str]", key: str, endpoint: str) -> None:
    table[key] = endpoint
    table.move_to_end(key)
    if len(table) > ROUTES_KEPT:
        table.popitem(last=False)


class Tracker:
    """Pending requests by request id, where each goes, and the routing of
    replies to them.

    ``endpoints`` are the brokers' client endpoints (endpoints named by
    ``moved`` replies are added). ``request_timeout`` (seconds, None for
    none): a request not answered in that time is sent to the next broker.
    ``status_poll`` (seconds, None for none): how often calls whose
    ``DONE`` is awaited are followed with ``STATUS``.

    Not thread-safe: the threaded client calls it under a lock and runs the
    returned actions after releasing it. What to send is queued in
    ``outbox`` as ``(endpoint, frames)``; the client calls :meth:`tick` at
    :meth:`next_tick` at the latest.
    """

    def __init__(self, endpoints: Sequence[str], request_timeout: Optional[float] = None,
                 status_poll: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.endpoints: List[str] = list(endpoints)
        self.request_timeout = request_timeout
        self.status_poll = status_poll
        self.outbox: Deque[Tuple[str, List[bytes]]] = collections.deque()
        self._clock = clock
        self._counter = itertools.count(1)
        self._pending: Dict[bytes, Pending] = {}
        self._dead: Dict[str, float] = {}       # endpoint -> skipped until
        self._owners: "collections.OrderedDict[str, str]" = collections.OrderedDict()
        self._accepted: "collections.OrderedDict[str, str]" = collections.OrderedDict()
        self._waits: Dict[Tuple[bytes, str], _Wait] = {}
        periods = [period for period in (request_timeout, status_poll) if period]
        self._scan_every = min([0.25] + [period / 4.0 for period in periods])
        self._next_scan = 0.0
        self._next_poll = 0.0

    def new_id(self) -> bytes:
        """A request id unique for this client."""
        return b"%x" % next(self._counter)

    def send(self, command: str, args: Sequence[bytes], pending: Pending) -> bytes:
        """Track a request and queue it for the broker it goes to first;
        returns its request id."""
        request_id = self.new_id()
        pending.command = command
        pending.args = list(args)
        if command in CONTEXT_COMMANDS and args:
            pending.context = _decode(args[0])
        elif command in CALL_COMMANDS and args:
            pending.call_id = _decode(args[0])
        pending.endpoint = self._route(pending, None)
        self._pending[request_id] = pending
        self._transmit(request_id, pending)
        return request_id

    def route(self, context: str) -> str:
        """The broker a request about ``context`` goes to now."""
        pending = Pending("simple", None)
        pending.context = context
        return self._route(pending, None)

    def subscribe(self, state: "Watch", sink: Callable[[Any], None], stats: Any
                  ) -> "Subscription":
        """Open a watch for ``state``: a ``STATS`` (its reply to future
        ``stats``), then the ``WATCH`` (each event, or the error ending it,
        to ``sink``), both to the broker of the context, in that order (so
        the broker that answers the ``STATS`` got the ``WATCH``, or died
        before it: see :class:`Watch`)."""
        pin = self.route(state.context)
        subscription = Subscription(self._clock(), stats)
        subscription.stats_id = self.send("STATS", [], Pending("simple", stats, parse_value,
                                                               pin=pin))
        subscription.watch_id = self.send("WATCH", state.args(), Pending("watch", sink, pin=pin))
        return subscription

    def unwatch(self, request_id: bytes) -> None:
        """Close a watch (its later events are dropped): ``UNWATCH`` to its
        broker, whose reply nobody awaits."""
        pending = self._pending.pop(request_id, None)
        if pending is not None and pending.kind == "watch":
            self.outbox.append((pending.endpoint,
                                request_frames("UNWATCH", self.new_id(), [request_id])))

    def probe(self, sub: "Subscription", stats: Any) -> None:
        """Ask ``STATS`` (its reply to future ``stats``) of the broker that
        has watch ``sub``; not once the watch has ended (the event that
        ended it is on its way)."""
        watch = self._pending.get(sub.watch_id)
        if watch is not None:
            sub.stats = stats
            sub.sent = self._clock()
            sub.stats_id = self.send("STATS", [], Pending("simple", stats, parse_value,
                                                          pin=watch.endpoint))

    def outcome_future(self, call_id: str) -> Optional[Any]:
        """A future already awaiting call_id's ``DONE`` (this client
        submitted it with an output path), or None."""
        for pending in self._pending.values():
            futures = pending.by_call_id.get(call_id)
            if futures:
                return futures[0]
        return None

    def drop(self, request_id: bytes) -> None:
        """Forget a request (its late replies are ignored)."""
        pending = self._pending.pop(request_id, None)
        if pending is not None:
            for call_id in pending.by_call_id:
                self._waits.pop((request_id, call_id), None)

    def __len__(self) -> int:
        """Number of requests still waiting for a reply or a DONE (not
        counting the tracker's own STATUS polls)."""
        return sum(1 for pending in self._pending.values() if pending.kind != "poll")

    def lost(self, endpoint: str) -> List[Action]:
        """The connection to the broker at ``endpoint`` dropped (its socket's
        monitor said so): the requests sent on it and not answered are lost
        with it (libzmq forgets what it wrote to the connection, and the
        broker's replies go to a routing id that is gone). With several
        brokers each goes to the next, as when a broker is silent;
        otherwise each fails with :class:`actd.Disconnected`, and its late
        replies are dropped. A call accepted on it whose ``DONE`` is
        awaited is polled at once when ``status_poll`` is set (its outcome
        still comes), else fails the same way. A watch on it is told
        :data:`WATCH_LOST` (its iterator watches again)."""
        now = self._clock()
        actions: List[Action] = []
        lost = [(request_id, pending) for request_id, pending in self._pending.items()
                if pending.endpoint == endpoint and not pending.accepted]
        if lost and len(self.endpoints) > 1:
            self._dead[endpoint] = now + DEAD_FOR
        for request_id, pending in lost:
            if pending.kind == "watch":
                actions.append(_to_sink(pending.reply, WATCH_LOST))
                continue
            if pending.kind == "poll":
                self._pending.pop(request_id, None)
                if pending.wait is not None:
                    pending.wait.polling = False
                continue
            target = (self._route(pending, endpoint) if pending.hops < MAX_HOPS
                      else endpoint)
            if target != endpoint:
                log.info("the connection to %s dropped before the reply to %s: sent to %s",
                         endpoint, pending.command, target)
                pending.hops += 1
                pending.endpoint = target
                self._transmit(request_id, pending)
                continue
            self._pending.pop(request_id, None)
            error = Disconnected("the connection to %s dropped before the reply: the request "
                                 "may or may not have been carried out" % endpoint)
            actions += [_set_exception(future, error)
                        for future in [pending.reply] + pending.outcomes if future is not None]
        for wait in list(self._waits.values()):
            if wait.endpoint != endpoint:
                continue
            if self.status_poll is not None:
                wait.heard = float("-inf")
                self._next_poll = now
                continue
            pending = self._pending.get(wait.request_id)
            if pending is None:
                continue
            error = Disconnected("the connection to %s dropped before the DONE of this "
                                 "accepted call: ask STATUS" % endpoint)
            actions += [_set_exception(future, error)
                        for future in self._ended(wait.request_id, pending, wait.call_id)]
        return actions

    def fail_all(self, error: BaseException) -> List[Action]:
        """Fail every pending request (the client is closing)."""
        actions: List[Action] = []
        for pending in self._pending.values():
            if pending.kind == "poll":
                continue
            if pending.kind == "watch":
                actions.append(_to_sink(pending.reply, error))
                continue
            actions.append(_set_exception(pending.reply, error))
            for future in pending.outcomes:
                if future is not None:
                    actions.append(_set_exception(future, error))
        self._pending.clear()
        self._waits.clear()
        return actions

    # -- where requests go ------------------------------------------------

    def _live(self, endpoint: str, now: float) -> bool:
        return self._dead.get(endpoint, 0.0) <= now

    def _route(self, pending: Pending, avoid: Optional[str]) -> str:
        """The broker pending goes to next: its context's (or call's) known
        broker if it is live, else the first live broker in the context's
        rendezvous order (in the list's order for the others) that this
        request has not tried yet; never ``avoid`` when there is another."""
        if pending.pin is not None:
            return pending.pin
        now = self._clock()
        known = None
        if pending.context is not None:
            known = self._owners.get(pending.context)
            order = rendezvous(self.endpoints, pending.context)
        else:
            if pending.call_id is not None:
                known = self._accepted.get(pending.call_id)
            order = list(self.endpoints)
        if known is not None and known != avoid and self._live(known, now):
            return known
        for endpoint in order:
            if endpoint != avoid and self._live(endpoint, now) and endpoint not in pending.tried:
                return endpoint
        for endpoint in order:
            if endpoint != avoid and self._live(endpoint, now):
                return endpoint
        for endpoint in order:
            if endpoint != avoid:
                return endpoint
        return order[0]

    def _transmit(self, request_id: bytes, pending: Pending) -> None:
        pending.sent_at = self._clock()
        pending.tried.add(pending.endpoint)
        self.outbox.append((pending.endpoint, request_frames(pending.command, request_id,
                                                             pending.args)))

    def _follow(self, request_id: bytes, pending: Pending, args: List[bytes]) -> bool:
        """An ``ERROR moved``: send the request again to the owner it names;
        False when it cannot (no owner named, or too many hops)."""
        owner = _decode(args[1]) if len(args) > 1 else ""
        if not owner or pending.hops >= MAX_HOPS:
            return False
        if owner not in self.endpoints:
            self.endpoints.append(owner)
        if pending.context is not None:
            _remember(self._owners, pending.context, owner)
        if pending.call_id is not None:
            _remember(self._accepted, pending.call_id, owner)
        log.debug("%s moved to %s", pending.command, owner)
        pending.hops += 1
        pending.endpoint = owner
        self._transmit(request_id, pending)
        return True

    # -- replies ----------------------------------------------------------

    def dispatch(self, endpoint: str, frames: List[bytes]) -> List[Action]:
        """Route one message from the broker at ``endpoint``; returns the
        actions to run."""
        self._dead.pop(endpoint, None)      # It answers
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
        if verb == "ERROR" and args and args[0] == b"moved" \
                and self._follow(request_id, pending, args):
            return []
        if verb != "ERROR":
            if pending.context is not None:
                _remember(self._owners, pending.context, endpoint)
            if pending.call_id is not None:
                _remember(self._accepted, pending.call_id, endpoint)
        if pending.kind == "poll":
            self._pending.pop(request_id, None)
            return self._polled(pending, verb, args)
        if pending.kind == "watch":
            return self._event(request_id, pending, verb, args)
        if verb == "ERROR":
            self._pending.pop(request_id, None)
            error = _error(args)
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
        return self._accepted_reply(request_id, pending, endpoint, args[0])

    def _event(self, request_id: bytes, pending: Pending, verb: str,
               args: List[bytes]) -> List[Action]:
        """A watch's ``EVENT`` (or the ``ERROR`` that ends it)."""
        item: Any = ProtocolError("expected EVENT, got %s" % verb)
        if verb == "ERROR":
            item = _error(args)
        elif verb == "EVENT" and len(args) == 1:
            try:
                item = json.loads(args[0])
            except ValueError as error:
                item = ProtocolError("EVENT does not parse: %s" % error)
            if not isinstance(item, dict):
                item = ProtocolError("EVENT is not an object")
        if not isinstance(item, dict) or item.get("deleted"):
            self._pending.pop(request_id, None)
        return [_to_sink(pending.reply, item)]

    def _accepted_reply(self, request_id: bytes, pending: Pending, endpoint: str,
                        body: bytes) -> List[Action]:
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
        now = self._clock()
        for call_id, future in zip(ids, pending.outcomes):
            _remember(self._accepted, call_id, endpoint)
            if future is not None:
                pending.by_call_id.setdefault(call_id, []).append(future)
                self._waits[(request_id, call_id)] = _Wait(request_id, call_id, endpoint, now)
        if not pending.by_call_id:
            self._pending.pop(request_id, None)
        return [_set_result(pending.reply, value)]

    def _done(self, request_id: bytes, pending: Pending, args: List[bytes]) -> List[Action]:
        if len(args) != 2:
            log.warning("a DONE with %d frames dropped", len(args))
            return []
        try:
            raw = json.loads(args[1])
            if not isinstance(raw, dict):
                raise ValueError("not an object")
        except ValueError as error:
            futures = self._ended(request_id, pending, _decode(args[0]))
            problem = ProtocolError("DONE outcome does not parse: %s" % error)
            return [_set_exception(future, problem) for future in futures]
        return self._outcome(request_id, pending, _decode(args[0]), raw)

    def _ended(self, request_id: bytes, pending: Pending, call_id: str) -> List[Any]:
        """The futures waiting for call_id's outcome, no longer pending."""
        futures = pending.by_call_id.pop(call_id, [])
        self._waits.pop((request_id, call_id), None)
        if not pending.by_call_id and pending.accepted:
            self._pending.pop(request_id, None)
        return futures

    def _outcome(self, request_id: bytes, pending: Pending, call_id: str,
                 raw: Dict[str, Any]) -> List[Action]:
        outcome = Outcome(raw)
        return [_set_result(future, outcome)
                for future in self._ended(request_id, pending, call_id)]

    # -- timers -----------------------------------------------------------

    def next_tick(self) -> Optional[float]:
        """When :meth:`tick` has something to check (a ``clock()`` time), or
        None while nothing is pending."""
        if not self._pending or (self.request_timeout is None and self.status_poll is None):
            return None
        return self._next_scan

    def tick(self) -> List[Action]:
        """Send again the requests a broker did not answer in time, give up
        STATUS polls that got no answer, and poll the calls whose DONE has
        not come for ``status_poll``."""
        now = self._clock()
        if now < self._next_scan:
            return []
        self._next_scan = now + self._scan_every
        actions: List[Action] = []
        for request_id, pending in list(self._pending.items()):
            if pending.accepted or pending.kind == "watch":
                continue                    # A watch's liveness is its reader's affair
            if pending.kind == "poll" and now - pending.sent_at >= POLL_EXPIRES:
                self._pending.pop(request_id, None)
                if pending.wait is not None:
                    pending.wait.polling = False
                continue
            if self.request_timeout is not None and now - pending.sent_at >= self.request_timeout:
                self._silent(pending.endpoint, now)
                target = self._route(pending, pending.endpoint)
                if target != pending.endpoint:
                    log.info("no reply to %s from %s in %.1f s: sent to %s", pending.command,
                             pending.endpoint, self.request_timeout, target)
                    pending.endpoint = target
                    self._transmit(request_id, pending)
                else:
                    pending.sent_at = now
        if self.status_poll is not None and self._waits and now >= self._next_poll:
            self._next_poll = now + self.status_poll
            due = sorted((wait for wait in self._waits.values()
                          if not wait.polling and now - wait.heard >= self.status_poll),
                         key=lambda wait: wait.heard)
            for wait in due[:POLL_BATCH]:
                self._poll(wait)
        return actions

    def _silent(self, endpoint: str, now: float) -> None:
        """The broker at endpoint did not answer in time: skip it for a
        while, and poll at once the calls it accepted."""
        if self._live(endpoint, now):
            log.warning("the broker at %s does not answer: skipped for %.0f s", endpoint,
                        DEAD_FOR)
        self._dead[endpoint] = now + DEAD_FOR
        for wait in self._waits.values():
            if wait.endpoint == endpoint:
                wait.heard = float("-inf")
        self._next_poll = now

    def _poll(self, wait: _Wait) -> None:
        wait.polling = True
        poll = Pending("poll", None, parse_status)
        poll.wait = wait
        self.send("STATUS", [text_arg(wait.call_id)], poll)

    def _polled(self, poll: Pending, verb: str, args: List[bytes]) -> List[Action]:
        """A poll's answer: an ended call's outcome settles its DONE."""
        wait = poll.wait
        assert wait is not None
        wait.polling = False
        wait.heard = self._clock()
        if verb != "VALUE":
            return []
        try:
            status = parse_status(verb, args)
        except ActdError:
            return []
        pending = self._pending.get(wait.request_id)
        if not status.ended or status.outcome is None or pending is None:
            return []
        log.debug("call %s ended (STATUS)", wait.call_id)
        return self._outcome(wait.request_id, pending, wait.call_id, status.outcome.raw)


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
    parsed: Any = calls
    if isinstance(calls, (str, bytes)):
        try:
            parsed = json.loads(calls)
        except ValueError:
            parsed = []
    items = list(parsed) if isinstance(parsed, list) else []
    body = calls if isinstance(calls, (str, bytes)) else list(calls)
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
        if page_size < 1 or (limit is not None and limit < 0):
            raise ValueError("page_size is at least 1, and limit None or at least 0")
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


def append_args(context: str, message: JsonArg, key: Optional[str]) -> List[bytes]:
    """APPEND's arguments, with the idempotency key when given."""
    args = [text_arg(context), json_arg(message)]
    if key is not None:
        args.append(text_arg(key))
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


#: Seconds the broker's start time, estimated from two ``STATS`` replies,
#: may differ before it counts as a restart (uptime_ms is in whole ms).
START_SLACK = 0.05


def call_outcome(event: Optional[Dict[str, Any]], call_id: str) -> Optional[Outcome]:
    """The outcome in a watch's ``{"call": ...}`` event when it is call_id's
    and the call has ended, else None."""
    call = event.get("call") if event else None
    if isinstance(call, dict) and str(call.get("call_id")) == call_id:
        return Status(call).outcome
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


def deadline_after(timeout: Optional[float]) -> Optional[float]:
    """The ``time.monotonic()`` ``timeout`` seconds from now (None: no limit)."""
    return None if timeout is None else time.monotonic() + timeout


def wait_time(probe: Optional[float], deadline: Optional[float]) -> Optional[float]:
    """Seconds to wait: ``probe`` (None: no limit), at most until ``deadline``."""
    left = time_left(deadline)
    if left is None or (probe is not None and probe < left):
        return probe
    return left


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
