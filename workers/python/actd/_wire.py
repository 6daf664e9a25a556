"""The bookkeeping of requests and the routing of them and their replies
among one or several brokers (:class:`Tracker`), shared by the threaded
and the asyncio clients (it does no I/O: the client sends what it queues
in ``outbox`` and hands it what the sockets receive). The frames are
:mod:`actd._codec`'s, a watch's state :mod:`actd._watch`'s. Futures
are whatever the client passes in (a ``concurrent.futures.Future`` or an
``asyncio.Future``): both have ``set_result``, ``set_exception``,
``done`` and ``exception``.

Several brokers sharing one store each own some contexts. A request about
context C goes first to the broker C was last seen at, else to the broker
rendezvous hashing ranks first for C (:func:`rendezvous` and :func:`score`:
the same rule in every actd client library); an ``ERROR moved`` reply names the owner, and
the request is sent there again (at most :data:`MAX_HOPS` times; a ``CALL``
without an ``_id`` is given a random one then, as it may be sent on again); one
that names none (a broker cut off from the database that knew no live one)
sends it to the next broker at once, never back to that one. A broker
that does not answer within ``request_timeout`` is skipped for
:data:`DEAD_FOR` seconds and the request goes to the next broker in C's
order. A client given one endpoint has no ``request_timeout`` by default;
a ``moved`` reply naming a second broker gives it ``several_timeout``
(the default of several endpoints), so that an owner named while it is
dead (its lease not yet run out) costs that long, not the whole wait.
A watch whose broker went away goes on at another: its iterator watches
again when the connection drops (that broker is then skipped, as a silent
one is), and when its ``WATCH`` has waited ``request_timeout`` at a broker
not connected (a dead owner that a ``moved`` reply named).
Calls whose ``DONE`` is awaited are asked about with ``STATUS`` every
``status_poll`` seconds once that long has passed without their ``DONE``
(a new owner of the context cannot send ``DONE`` to the socket of the
broker that accepted the call); a ``STATUS`` answered ``not_found`` (the
context was deleted, or the broker came back without its store) fails the
wait with :class:`actd.NotFound` (:data:`POLL_TRANSIENT`).
"""

import collections
import itertools
import json
import logging
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Set, Tuple, Union

from .errors import ActdError, Disconnected, ProtocolError, error_for
from .types import Outcome
from ._codec import (HEADER, decode_frame, parse_ok, parse_status, parse_value, read_outcome,
                     request_frames, text_arg, with_ids, with_key)
from ._watch import WATCH_LOST, Subscription, Watch
from ._pending import Pending, _Wait
from ._route import rendezvous

log = logging.getLogger("actd.client")

#: A deferred action: settle one future (run outside any lock).
Action = Callable[[], None]


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

#: ``ERROR`` codes of a ``STATUS`` poll that are about the broker now, not
#: about the call: the call is asked about again at the next interval.
#: ``internal``: the store could not be read (an outage: a call the store
#: cannot be asked about is refused so, never taken for absent) or a bug;
#: ``busy``: too many requests of this client queued; ``moved``: one not
#: followed (too many hops, or a broker cut off from its store naming no
#: other, while the owner's lease runs out); ``disconnected``: made by a
#: client, not a broker, never final. Any other code is final and ends the
#: wait with its error: ``not_found`` says that no broker will ever know
#: the call (its context was deleted, or the broker came back without its
#: store, as ``--db :memory:``), so its ``DONE`` will not come; and the
#: others (``unauthorized``, ``bad_frame``, a code this version does not
#: know, ...) refuse this client's ``STATUS`` every time, and polling them
#: for ever would leave a ``call()`` without a timeout waiting for ever.
POLL_TRANSIENT = frozenset({"internal", "busy", "moved", "disconnected"})

#: Most contexts and call ids whose broker is remembered.
ROUTES_KEPT = 10000

#: Commands about one context (their first argument): routed by context.
CONTEXT_COMMANDS = frozenset({"CALL", "PLAN", "APPEND", "RESOLVE", "VIEW", "HISTORY", "WATCH",
                              "DELETE"})

#: Commands about one call (their first argument): routed to the broker
#: that accepted it when known.
CALL_COMMANDS = frozenset({"STATUS", "CANCEL"})

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
    return error_for(decode_frame(args[0]) if args else "internal",
                     decode_frame(args[1]) if len(args) > 1 else "")


def _remember(table: "collections.OrderedDict[str, str]", key: str, endpoint: str) -> None:
    table[key] = endpoint
    table.move_to_end(key)
    if len(table) > ROUTES_KEPT:
        table.popitem(last=False)


#: What a connection attempt saw (``_socket.link_event``), as the C library says it
REFUSED = "refused: is actd listening there?"
HANDSHAKE_FAILED = "the handshake failed: are both ends on CURVE, with the broker's public key?"


class Tracker:
    """Pending requests by request id, where each goes, and the routing of
    replies to them.

    ``endpoints`` are the brokers' client endpoints (endpoints named by
    ``moved`` replies are added). ``request_timeout`` (seconds, None for
    none): a request not answered in that time is sent to the next broker.
    ``several_timeout`` (seconds, or None): the ``request_timeout`` taken
    when it is None and a ``moved`` reply adds a second broker (the
    client's default: none with one endpoint, 5 s with several; None keeps
    it None, as when the user chose None).
    ``status_poll`` (seconds, None for none): how often calls whose
    ``DONE`` is awaited are followed with ``STATUS``.

    Not thread-safe: the threaded client calls it under a lock and runs the
    returned actions after releasing it. What to send is queued in
    ``outbox`` as ``(endpoint, frames)``; the client calls :meth:`tick` at
    :meth:`next_tick` at the latest.
    """

    def __init__(self, endpoints: Sequence[str], request_timeout: Optional[float] = None,
                 status_poll: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic,
                 several_timeout: Optional[float] = None) -> None:
        self.endpoints: List[str] = list(endpoints)
        self.request_timeout = request_timeout
        self.several_timeout = several_timeout
        self.status_poll = status_poll
        self.outbox: Deque[Tuple[str, List[bytes]]] = collections.deque()
        self.withdrawn: Set[str] = set()        # Sockets to reopen (drop)
        self._clock = clock
        self._counter = itertools.count(1)
        self._pending: Dict[bytes, Pending] = {}
        self._dead: Dict[str, float] = {}       # endpoint -> skipped until
        self._up: Set[str] = set()              # Endpoints connected (handshake done)
        self._ever_up = False                   # A handshake succeeded once, with any broker
        self._failures: Dict[str, str] = {}     # endpoint -> what its last attempt saw
        self._owners: "collections.OrderedDict[str, str]" = collections.OrderedDict()
        self._accepted: "collections.OrderedDict[str, str]" = collections.OrderedDict()
        self._waits: Dict[Tuple[bytes, str], _Wait] = {}
        self._scan_every = 0.25
        self.timers_changed()
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
            pending.context = decode_frame(args[0])
        elif command in CALL_COMMANDS and args:
            pending.call_id = decode_frame(args[0])
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

    def close_watches(self, error: BaseException, new_future: Callable[[], Any]
                      ) -> Tuple[List[Any], List[Action]]:
        """The client is closing: ``UNWATCH`` each open watch to its broker
        (docs/protocol.md section 2.6: actd learns that a socket closed
        only when it sends to it, so an open watch would hold its slot of
        ``max_watches`` until its context's next event). A watch that has
        ended (refused, or its context deleted) is no longer pending and
        gets none. Each ``UNWATCH`` is pending with a future from
        ``new_future()`` that its ``OK`` settles, and each watch's sink gets
        ``error``; returns the futures and the actions to run."""
        futures: List[Any] = []
        actions: List[Action] = []
        for request_id, pending in list(self._pending.items()):
            if pending.kind != "watch":
                continue
            del self._pending[request_id]
            future = new_future()
            self.send("UNWATCH", [request_id], Pending("simple", future, parse_ok,
                                                       pin=pending.endpoint))
            futures.append(future)
            actions.append(_to_sink(pending.reply, error))
        return futures, actions

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

    def drop(self, request_id: bytes, withdraw: bool = False) -> None:
        """Forget a request (its late replies are ignored). ``withdraw``
        (its wait timed out): when no connection to its broker is up and
        nothing else waits on that socket (no request, awaited ``DONE`` or
        watch), the endpoint goes to :attr:`withdrawn`, for the client to
        close its socket (linger 0) and open a new one. A request sent
        while no connection was up waits in libzmq's queue and would be
        carried out once the broker comes back, though its caller was told
        :class:`actd.Timeout` and may ask again (as the Node and C clients
        do)."""
        pending = self._pending.pop(request_id, None)
        if pending is None:
            return
        for call_id in pending.by_call_id:
            self._waits.pop((request_id, call_id), None)
        endpoint = pending.endpoint
        if (withdraw and endpoint not in self._up
                and all(other.endpoint != endpoint for other in self._pending.values())
                and all(wait.endpoint != endpoint for wait in self._waits.values())):
            self.withdrawn.add(endpoint)

    def take_withdrawn(self) -> List[str]:
        """The endpoints whose socket to reopen now (:meth:`drop`), not
        those whose connection came up since (what waited in the queue has
        gone out on it): taken once; the client reopens them before it
        sends what is in :attr:`outbox`, which then goes on the new socket."""
        endpoints = [endpoint for endpoint in self.withdrawn if endpoint not in self._up]
        self.withdrawn.clear()
        return endpoints

    def __len__(self) -> int:
        """Number of requests still waiting for a reply or a DONE (not
        counting the tracker's own STATUS polls)."""
        return sum(1 for pending in self._pending.values() if pending.kind != "poll")

    def link_event(self, endpoint: str, up: Union[bool, str]) -> List[Action]:
        """The connection to the broker at ``endpoint`` came up (its
        handshake succeeded), dropped (its socket's monitor said so), or
        an attempt failed (``up`` says why: ``_socket.link_event``): a
        drop of one that was up loses what was sent on it (:meth:`lost`);
        one that closed at its handshake carried no request (they wait for
        the next); returns the actions to run."""
        if up is True:
            self._up.add(endpoint)
            self._ever_up = True
            self._failures.pop(endpoint, None)
            return []
        if isinstance(up, str):
            # A failed handshake is not hidden by the retries that follow
            if self._failures.get(endpoint) != HANDSHAKE_FAILED:
                self._failures[endpoint] = up
            return []
        if endpoint not in self._up:
            self._failures.setdefault(endpoint, "the connection closed at the handshake")
            return []
        self._up.discard(endpoint)
        log.info("the connection to %s dropped", endpoint)
        return self.lost(endpoint)

    def unreached(self) -> str:
        """While no handshake with any broker has succeeded since the
        client was made, what the connection attempts saw, to add to a
        :class:`actd.Timeout`'s message (as ``: no connection to ... was
        ever made (refused: ...)``); else ''."""
        if self._ever_up:
            return ""
        seen = [self._failures.get(endpoint, "no answer: a firewall, or a host that is down?")
                for endpoint in self.endpoints]
        if len(seen) > 1:
            seen = ["; ".join("%s: %s" % pair for pair in zip(self.endpoints, seen))]
        return ": no connection to %s was ever made (%s)" % (", ".join(self.endpoints), seen[0])

    def lost(self, endpoint: str) -> List[Action]:
        """The connection to the broker at ``endpoint`` dropped (its socket's
        monitor said so): the requests sent on it and not answered are lost
        with it (libzmq forgets what it wrote to the connection, and the
        broker's replies go to a routing id that is gone). With several
        brokers each goes to the next, as when a broker is silent;
        otherwise each fails with :class:`actd.Disconnected`, and its late
        replies are dropped. A call accepted on it whose ``DONE`` is
        awaited is polled at once when ``status_poll`` is set (its outcome
        still comes, or :class:`actd.NotFound` when ``STATUS`` no longer
        knows it), else fails the same way. A watch on it is told
        :data:`WATCH_LOST` (its iterator watches again: with several
        brokers, at another one, as this one is skipped)."""
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
        pending.heard = False
        pending.tried.add(pending.endpoint)
        self.outbox.append((pending.endpoint, request_frames(pending.command, request_id,
                                                             pending.args)))

    def _follow(self, request_id: bytes, pending: Pending, args: List[bytes],
                endpoint: str) -> bool:
        """An ``ERROR moved`` from the broker at endpoint: send the request
        again to the owner it names, or, when it names none (a broker cut
        off from the database that knew no live one), to the next broker
        as :meth:`_route` picks it, never that one; False when it cannot
        (no other broker, or too many hops)."""
        owner = decode_frame(args[1]) if len(args) > 1 else ""
        if not owner and pending.hops < MAX_HOPS:
            owner = self._route(pending, endpoint)
            if owner == endpoint:
                return False
        if not owner or pending.hops >= MAX_HOPS:
            return False
        if owner not in self.endpoints:
            self.endpoints.append(owner)
            self._several()
        if pending.context is not None:
            _remember(self._owners, pending.context, owner)
        if pending.call_id is not None:
            _remember(self._accepted, pending.call_id, owner)
        if pending.command == "CALL" and len(pending.args) > 1:
            # The moved broker stored nothing, but the owner may store the
            # call and then fall silent, and the request be sent on again:
            # a call without an _id gets one now, so that it runs once
            pending.args[1] = with_ids(pending.args[1], plan=False)
        if pending.command == "APPEND":
            # Likewise: an APPEND without a key gets one, kept from now on
            pending.args = with_key(pending.args)
        log.debug("%s moved to %s", pending.command, owner)
        pending.hops += 1
        pending.endpoint = owner
        self._transmit(request_id, pending)
        return True

    def timers_changed(self) -> None:
        """``request_timeout`` or ``status_poll`` changed: scan often
        enough for them (a quarter of each, 0.25 s at most)."""
        periods = [period for period in (self.request_timeout, self.status_poll) if period]
        self._scan_every = min([0.25] + [period / 4.0 for period in periods])

    def _several(self) -> None:
        """A broker was added: with several now known, and no
        ``request_timeout`` but by default, take ``several_timeout`` (a
        ``moved`` reply may name an owner that died, its lease not yet
        run out: the request goes back to another broker after that long,
        as with several endpoints given, not after the client's whole wait)."""
        if self.request_timeout is None and self.several_timeout is not None \
                and len(self.endpoints) > 1:
            self.request_timeout = self.several_timeout
            self.timers_changed()
            log.debug("several brokers known: request_timeout %.1f s", self.request_timeout)

    # -- replies ----------------------------------------------------------

    def dispatch(self, endpoint: str, frames: List[bytes]) -> List[Action]:
        """Route one message from the broker at ``endpoint``; returns the
        actions to run."""
        self._dead.pop(endpoint, None)      # It answers
        if len(frames) < 3 or frames[0] != HEADER:
            log.warning("a reply that is not ACT/1 dropped")
            return []
        verb = decode_frame(frames[1])
        request_id = frames[2]
        args = frames[3:]
        pending = self._pending.get(request_id)
        if pending is None:
            log.debug("%s for a request no longer waited for dropped", verb)
            return []
        pending.heard = True
        if verb == "DONE" and pending.accepted:
            return self._done(request_id, pending, args)
        if pending.accepted:
            log.warning("%s after ACCEPTED dropped", verb)
            return []
        if verb == "ERROR" and args and args[0] == b"moved" \
                and self._follow(request_id, pending, args, endpoint):
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
            else:
                if not isinstance(item, dict):
                    item = ProtocolError("EVENT is not an object")
        if not isinstance(item, dict) or item.get("deleted"):
            self._pending.pop(request_id, None)
        return [_to_sink(pending.reply, item)]

    def _accepted_reply(self, request_id: bytes, pending: Pending, endpoint: str,
                        body: bytes) -> List[Action]:
        if pending.kind == "call":
            ids: List[str] = [decode_frame(body)]
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
        """An accepted call's ``DONE``: its outcome to whoever awaits it.
        One of other frames than a call id and an outcome fails that call's
        outcome (or, without a call id, every outcome the request awaits)
        with ``ProtocolError``, as one that does not parse does."""
        if len(args) != 2:
            problem = ProtocolError("DONE carries %d frames, not a call id and an outcome"
                                    % len(args))
            call_ids = [decode_frame(args[0])] if args else list(pending.by_call_id)
            return [_set_exception(future, problem) for call_id in call_ids
                    for future in self._ended(request_id, pending, call_id)]
        try:
            outcome = read_outcome(json.loads(args[1]), "DONE outcome")
        except ValueError as error:
            problem = ProtocolError("DONE outcome does not parse: %s" % error)
        except ProtocolError as error:
            problem = error
        else:
            return self._outcome(request_id, pending, decode_frame(args[0]), outcome)
        # Only this call's outcome fails: the reader goes on
        futures = self._ended(request_id, pending, decode_frame(args[0]))
        return [_set_exception(future, problem) for future in futures]

    def _ended(self, request_id: bytes, pending: Pending, call_id: str) -> List[Any]:
        """The futures waiting for call_id's outcome, no longer pending."""
        futures = pending.by_call_id.pop(call_id, [])
        self._waits.pop((request_id, call_id), None)
        if not pending.by_call_id and pending.accepted:
            self._pending.pop(request_id, None)
        return futures

    def _outcome(self, request_id: bytes, pending: Pending, call_id: str,
                 outcome: Outcome) -> List[Action]:
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
        """Send again the requests a broker did not answer in time, move
        the watches parked at a broker not connected (:meth:`_parked`),
        give up STATUS polls that got no answer, and poll the calls whose
        DONE has not come for ``status_poll``."""
        now = self._clock()
        if now < self._next_scan:
            return []
        self._next_scan = now + self._scan_every
        actions: List[Action] = []
        for request_id, pending in list(self._pending.items()):
            if pending.kind == "watch" and self._parked(pending, now):
                actions += self._move(request_id, pending, now)
        for request_id, pending in list(self._pending.items()):
            if pending.accepted or pending.kind == "watch":
                continue                    # A watch's liveness is else its reader's affair
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

    def _parked(self, pending: Pending, now: float) -> bool:
        """A watch's ``WATCH`` that has waited ``request_timeout``, nothing
        heard since, at a broker not connected while several are known: a
        dead owner that a ``moved`` reply named, its lease not yet run out
        (a broker connected but idle sends nothing either: its watch is
        left to the reader's probe)."""
        return (len(self.endpoints) > 1 and self.request_timeout is not None
                and not pending.heard and pending.endpoint not in self._up
                and now - pending.sent_at >= self.request_timeout)

    def _move(self, request_id: bytes, pending: Pending, now: float) -> List[Action]:
        """A parked watch (:meth:`_parked`) goes to another broker: its
        broker is skipped (:meth:`_silent`), an ``UNWATCH`` is queued behind
        its ``WATCH`` should that broker come back, and its iterator is told
        :data:`WATCH_LOST` (it watches again, from the seq after the last
        one). A ``STATS`` that only that broker may answer (the iterator's
        probe) fails with :class:`actd.Disconnected`, so the iterator does
        not wait for it."""
        endpoint = pending.endpoint
        log.info("WATCH waited %.1f s at %s, not connected: watched at another broker",
                 now - pending.sent_at, endpoint)
        self._silent(endpoint, now)
        self.unwatch(request_id)
        actions = [_to_sink(pending.reply, WATCH_LOST)]
        error = Disconnected("the broker at %s is not connected" % endpoint)
        for other_id, other in list(self._pending.items()):
            if other.pin == endpoint and other.kind == "simple":
                del self._pending[other_id]
                actions.append(_set_exception(other.reply, error))
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
        """A poll's answer: an ended call's outcome settles its DONE; an
        ``ERROR`` that says the call is gone (``not_found`` above all: see
        :data:`POLL_TRANSIENT`) fails it with that error, as its ``DONE``
        will never come; any other answer is asked again."""
        wait = poll.wait
        assert wait is not None
        wait.polling = False
        wait.heard = self._clock()
        if verb == "ERROR":
            error = _error(args)
            if error.code in POLL_TRANSIENT:
                log.debug("STATUS of call %s: %s: asked again", wait.call_id, error)
                return []
            pending = self._pending.get(wait.request_id)
            if pending is None:
                return []
            log.info("STATUS of call %s: %s: its DONE will not come", wait.call_id, error)
            return [_set_exception(future, error)
                    for future in self._ended(wait.request_id, pending, wait.call_id)]
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
        return self._outcome(wait.request_id, pending, wait.call_id, status.outcome)
