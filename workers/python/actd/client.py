"""The threaded actd client (PROTOCOL.md section 1).

A :class:`Client` owns one DEALER socket per broker, driven by a background
I/O thread; requests from any number of threads are pipelined on them and
each reply is routed to its request by request id. The client is
thread-safe. With several brokers sharing a store, each request goes to the
broker that owns its context (``actd._wire`` has the rules).
"""

import collections
import concurrent.futures
import logging
import queue
import socket
import threading
import time
import warnings
from typing import Any, Deque, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import zmq

from . import _codec, _handles, _prescribed, _socket, _watch, _wire
from ._handles import wait_future as _wait
from ._socket import Endpoints
from .errors import ActdError, Closed, Disconnected, NotFound, Timeout
from .types import DEFAULT_CLIENT_ENDPOINT, Outcome, Status

__all__ = ["Client", "CallHandle", "PlanHandle"]

log = logging.getLogger("actd.client")

#: A timeout argument left out: the client's default applies.
_DEFAULT: Any = object()

#: The default ``request_timeout`` of a client given several endpoints.
MULTI_REQUEST_TIMEOUT = 5.0

#: Seconds a watch may be silent before its broker is asked ``STATS``.
PROBE = 5.0

#: Seconds ``close()`` waits at most for the ``OK`` of the ``UNWATCH`` it
#: sends for each open watch (a broker that is gone costs no more).
UNWATCH_WAIT = 0.2


def _options(endpoints: Optional[Endpoints], endpoint: Optional[Endpoints],
             request_timeout: Any, status_poll: Optional[float]
             ) -> Tuple[List[str], Optional[float], Optional[float]]:
    """The endpoint list (see ``_socket.endpoints_option``), the request
    timeout (the default: 5 s with several endpoints, none with one), and
    the request timeout taken once a ``moved`` reply names a second broker
    (:data:`MULTI_REQUEST_TIMEOUT` when the default was none because one
    endpoint was given; None when ``request_timeout`` was chosen, None
    included)."""
    listed = _socket.endpoints_option(endpoints, endpoint, _socket.ENDPOINT_VARIABLE,
                                      DEFAULT_CLIENT_ENDPOINT)
    several_timeout = None
    if request_timeout is _DEFAULT:
        request_timeout = MULTI_REQUEST_TIMEOUT if len(listed) > 1 else None
        if request_timeout is None:
            several_timeout = MULTI_REQUEST_TIMEOUT
    if request_timeout is not None and request_timeout <= 0:
        raise ValueError("request_timeout is a number of seconds > 0, or None")
    if status_poll is not None and status_poll <= 0:
        raise ValueError("status_poll is a number of seconds > 0, or None")
    return listed, request_timeout, several_timeout


class CallHandle(_handles.CallHandleBase):
    """A submitted call (from :meth:`Client.submit`): wait for its
    ``ACCEPTED`` with :meth:`accepted` and its ``DONE`` with
    :meth:`outcome`. Waiting again after a :class:`actd.Timeout` is fine."""

    def accepted(self, timeout: Optional[float] = None) -> str:
        """The call id once actd accepted (durably stored) the call; raises
        the :class:`actd.ActdError` of an ``ERROR`` reply, or
        :class:`actd.Timeout`."""
        return str(_wait(self._reply, timeout, "ACCEPTED", self._client))

    @property
    def call_id(self) -> str:
        """The call id (waits for ``ACCEPTED`` as long as needed)."""
        return self.accepted()

    def outcome(self, timeout: Optional[float] = None) -> Outcome:
        """The call's :class:`actd.Outcome` (its ``DONE``); raises
        ``ValueError`` for a call without output path (fire-and-forget: use
        :meth:`Client.wait` with the call id)."""
        if self._done is None:
            raise ValueError("a call without _outputPath gets no DONE")
        outcome: Outcome = _wait(self._done, timeout, "DONE", self._client)
        return outcome

    def result(self, timeout: Optional[float] = None) -> Union[Outcome, str]:
        """What :meth:`Client.call` returns: the outcome for a call with an
        output path, else the call id."""
        if self._done is None:
            return self.accepted(timeout)
        return self.outcome(timeout)


class PlanHandle(_handles.PlanHandleBase):
    """A submitted plan (from :meth:`Client.submit_plan`)."""

    def accepted(self, timeout: Optional[float] = None) -> List[str]:
        """The call ids, in the plan's order, once actd accepted the plan."""
        ids: List[str] = _wait(self._reply, timeout, "ACCEPTED", self._client)
        return list(ids)

    def results(self, timeout: Optional[float] = None) -> List[Union[Outcome, str]]:
        """For each call in order: its :class:`actd.Outcome` when it has an
        output path, else its call id. ``timeout`` bounds the whole wait."""
        deadline = _handles.deadline_after(timeout)
        ids = self.accepted(timeout)
        results: List[Union[Outcome, str]] = []
        for call_id, future in zip(ids, self._outcomes):
            if future is None:
                results.append(call_id)
            else:
                results.append(_wait(future, _handles.time_left(deadline),
                                     "DONE for call %s" % call_id))
        return results


class Client:
    """A client of actd's client endpoint, or of several brokers sharing
    one store.

    ::

        with actd.Client("tcp://127.0.0.1:5555") as client:
            outcome = client.call("chat-1", {"_tool": "upper", "text": "hi",
                                             "_outputPath": "†state.upper"})
            print(outcome.status, outcome.result)

    ``endpoints`` is one endpoint string, or a list of the client endpoints
    of brokers sharing one store (``["tcp://a:5555", "tcp://b:5555"]``, or
    the same comma-separated); by default ``$ACTD_ENDPOINT``, else
    ``tcp://127.0.0.1:5555``. ``endpoint=`` is its deprecated old name.
    ``curve_server`` (the broker's public key, Z85) and ``curve_cert`` (this
    client's certificate file, from ``actctl keygen``) turn CURVE on; they
    default to ``$ACTD_SERVER_KEY`` and ``$ACTD_CERT``.
    ``timeout`` (seconds, None for no limit) is the default wait for
    replies that come at once (``VALUE``, ``OK``, ``ACCEPTED``, ``PONG``);
    a call's ``DONE`` is waited for as the method's ``timeout`` says.

    Several brokers: a request about a context goes to the broker that owns
    it (first guess: rendezvous hashing of the context over the endpoints;
    then the broker an ``ERROR moved`` reply names, which the client
    remembers, and connects to when it is not in the list). ``STATUS`` and
    ``CANCEL`` go first to the broker that accepted the call, ``STATS`` and
    ``PING`` to the first broker that answers. A broker that gives no reply
    within ``request_timeout`` seconds (default 5 with several endpoints,
    None with one until a ``moved`` reply names a second broker, 5 from
    then on: an owner named while it is dead, its lease not yet run out,
    then costs 5 s, not the whole ``timeout``; ``request_timeout=None``
    given explicitly stays None) is skipped for a while and the request
    goes to the next broker. Such a retry may deliver a request twice:
    each ``CALL`` and each call of a ``PLAN`` without an ``_id`` is given
    one (a random UUID) when several endpoints are given, and a ``CALL``
    without one that a ``moved`` reply sends on to the owner is given one
    then, so that actd runs it once; an ``APPEND`` without a ``key`` is
    given a random one likewise, kept across its resends, so that actd
    appends it once. Calls whose ``DONE`` is
    awaited are followed with ``STATUS`` every ``status_poll`` seconds once
    that long has passed without it (a broker that took the context over
    from a dead one cannot send ``DONE`` to this client); None turns this
    off.

    The client is thread-safe: any thread may call any method, and requests
    of all threads are pipelined. ``ERROR`` replies raise the
    :class:`actd.ActdError` subclass of their code.
    """

    def __init__(self, endpoints: Optional[Endpoints] = None, *,
                 timeout: Optional[float] = 30.0,
                 request_timeout: Optional[float] = _DEFAULT,
                 status_poll: Optional[float] = 1.0,
                 curve_server: Optional[str] = None, curve_cert: Optional[str] = None,
                 context: Optional[zmq.Context] = None,
                 endpoint: Optional[Endpoints] = None) -> None:
        """Connect to the endpoints and start the I/O thread."""
        endpoints, request_timeout, several_timeout = _options(
            endpoints, endpoint, request_timeout, status_poll)
        self._curve = _socket.curve_option(curve_server, curve_cert)
        #: The first endpoint given.
        self.endpoint: str = endpoints[0]
        self.timeout: Optional[float] = timeout
        self.status_poll: Optional[float] = status_poll
        self._prescriptions = _prescribed.Prescriptions()   # TOOLS answers, kept 2 s
        self._context = context or zmq.Context.instance()
        self._sockets: Dict[str, zmq.Socket] = {}
        self._monitors: Dict[str, zmq.Socket] = {}     # endpoint -> its connection events
        try:
            for listed in endpoints:
                self._connect(listed)
        except zmq.ZMQError:
            self._close_sockets()
            raise
        self._lock = threading.Lock()
        self._tracker = _wire.Tracker(endpoints, request_timeout, status_poll,
                                      several_timeout=several_timeout)
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._wake_reader.setblocking(False)
        self._wake_writer.setblocking(False)
        self._closing = False
        self._closed = False
        self._thread = threading.Thread(target=self._io, name="actd-client-io", daemon=True)
        self._thread.start()

    # -- life cycle -----------------------------------------------------

    def close(self) -> None:
        """Stop the I/O thread and close the socket; pending requests raise
        :class:`actd.Closed`. Safe to call twice. Each watch still open is
        sent ``UNWATCH`` first (actd frees its slot of ``max_watches`` at
        once, rather than at its context's next event), best effort: their
        ``OK`` is awaited :data:`UNWATCH_WAIT` seconds at most, not at all
        when no watch is open."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            unwatches, actions = self._tracker.close_watches(
                Closed("the client was closed"), concurrent.futures.Future)
        for action in actions:
            action()
        if unwatches and self._thread is not threading.current_thread():
            self._wake()
            concurrent.futures.wait(unwatches, UNWATCH_WAIT)
        with self._lock:
            self._closing = True
        self._wake()
        if self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            actions = self._tracker.fail_all(Closed("the client was closed"))
        for action in actions:
            action()
        self._wake_reader.close()
        self._wake_writer.close()

    def __enter__(self) -> "Client":
        """Use as a context manager: closes on exit."""
        return self

    def __exit__(self, *exc: Any) -> None:
        """Close the client."""
        self.close()

    @property
    def _auto_id(self) -> bool:
        """Calls get a random ``_id`` while the client knows several
        brokers (given, or named by a ``moved`` reply since): a request
        sent again to another broker is then the same call."""
        return len(self._tracker.endpoints) > 1

    @property
    def pending(self) -> int:
        """Requests still waiting for a reply or a ``DONE``."""
        with self._lock:
            return len(self._tracker)

    @property
    def request_timeout(self) -> Optional[float]:
        """Seconds a broker may take to answer before a request goes to
        the next one (None: no limit). By default 5 with several
        endpoints; with one, None until a ``moved`` reply names a second
        broker, then 5 (:data:`actd.client.MULTI_REQUEST_TIMEOUT`). A value
        given, None included, stays."""
        with self._lock:
            return self._tracker.request_timeout

    @request_timeout.setter
    def request_timeout(self, value: Optional[float]) -> None:
        if value is not None and value <= 0:
            raise ValueError("request_timeout is a number of seconds > 0, or None")
        with self._lock:
            self._tracker.request_timeout = value
            self._tracker.several_timeout = None
            self._tracker.timers_changed()

    @property
    def endpoints(self) -> List[str]:
        """The brokers' endpoints: those given, then those ``moved``
        replies named."""
        with self._lock:
            return list(self._tracker.endpoints)

    # -- the I/O thread -------------------------------------------------

    def _wake(self) -> None:
        try:
            self._wake_writer.send(b"x")
        except (BlockingIOError, OSError):
            pass

    def _connect(self, endpoint: str) -> zmq.Socket:
        sock = _socket.dealer(self._context, endpoint, self._curve, heartbeat=True)
        self._sockets[endpoint] = sock
        self._monitors[endpoint] = _socket.disconnects(sock)
        return sock

    def _close_sockets(self) -> None:
        """Close the sockets and their monitors."""
        for endpoint, sock in self._sockets.items():
            monitor = self._monitors.get(endpoint)
            if monitor is not None:
                _socket.stop_monitor(sock, monitor)
            sock.close(0)

    def _events(self, ready: Dict[Any, int]) -> None:
        """Read the monitors that ``poll`` found ``ready``: a dropped
        connection fails the requests it lost, a failed attempt is kept to
        say (see ``_wire.Tracker.link_event``)."""
        for endpoint, monitor in list(self._monitors.items()):
            while monitor in ready:
                try:
                    frames = monitor.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                up = _socket.link_event(frames)
                if up is None:
                    continue
                if not up:
                    # A drop may have come after this turn read the socket,
                    # with replies before it: libzmq keeps them readable after
                    # its DISCONNECTED event, and each answers its request,
                    # which the drop must then not fail
                    self._receive(endpoint)
                with self._lock:
                    actions = self._tracker.link_event(endpoint, up)
                for action in actions:
                    action()

    def _reopen(self, poller: zmq.Poller, endpoint: str) -> None:
        """Close the socket to ``endpoint`` (linger 0: libzmq's queue of
        requests waiting for a connection is dropped) and open a new one,
        for requests that timed out while no connection was up
        (``_wire.Tracker.drop``): they are then not carried out once the
        broker is back. In the I/O thread, the sockets' only user."""
        sock = self._sockets.pop(endpoint, None)
        monitor = self._monitors.pop(endpoint, None)
        if sock is not None:
            poller.unregister(sock)
            if monitor is not None:
                poller.unregister(monitor)
                _socket.stop_monitor(sock, monitor)
            sock.close(0)
        log.info("requests timed out while %s was not connected: its socket reopened", endpoint)
        try:
            poller.register(self._connect(endpoint), zmq.POLLIN)
            poller.register(self._monitors[endpoint], zmq.POLLIN)
        except zmq.ZMQError as error:
            # Connected again when a request goes there (_io)
            log.warning("cannot connect to %s: %s", endpoint, error)

    def _receive(self, endpoint: str) -> None:
        """Route every message readable now on the socket to ``endpoint``,
        in order (the I/O thread's only reader of it)."""
        sock = self._sockets.get(endpoint)
        while sock is not None:
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            with self._lock:
                actions = self._tracker.dispatch(endpoint, frames)
            for action in actions:
                action()

    def _io(self) -> None:
        poller = zmq.Poller()
        poller.register(self._wake_reader, zmq.POLLIN)
        for sock in self._sockets.values():
            poller.register(sock, zmq.POLLIN)
        for monitor in self._monitors.values():
            poller.register(monitor, zmq.POLLIN)
        backlogs: Dict[str, Deque[List[bytes]]] = {}
        try:
            while not self._closing:
                for endpoint, sock in self._sockets.items():
                    poller.modify(sock, zmq.POLLIN | (zmq.POLLOUT if backlogs.get(endpoint)
                                                      else 0))
                with self._lock:
                    wake_at = self._tracker.next_tick()
                    queued = bool(self._tracker.outbox)
                wait = None
                if queued:
                    wait = 0.0
                elif wake_at is not None:
                    wait = max(0.0, wake_at - time.monotonic()) * 1000.0
                events = dict(poller.poll(wait))
                if self._wake_reader in events or self._wake_reader.fileno() in events:
                    try:
                        while self._wake_reader.recv(4096):
                            pass
                    except (BlockingIOError, OSError):
                        pass
                with self._lock:
                    actions = self._tracker.tick()
                    withdrawn = self._tracker.take_withdrawn()
                    outgoing = list(self._tracker.outbox)
                    self._tracker.outbox.clear()
                for action in actions:
                    action()
                # Before sending: what was queued since goes on the new socket
                for endpoint in withdrawn:
                    self._reopen(poller, endpoint)
                for endpoint, frames in outgoing:
                    if endpoint not in self._sockets:
                        try:
                            poller.register(self._connect(endpoint), zmq.POLLIN)
                            poller.register(self._monitors[endpoint], zmq.POLLIN)
                        except zmq.ZMQError as error:
                            log.warning("cannot connect to %s: %s", endpoint, error)
                            continue
                    backlogs.setdefault(endpoint, collections.deque()).append(frames)
                for endpoint, backlog in backlogs.items():
                    sock = self._sockets.get(endpoint)
                    while backlog and sock is not None:
                        try:
                            sock.send_multipart(backlog[0], zmq.NOBLOCK)
                        except zmq.Again:
                            break
                        backlog.popleft()
                for endpoint in list(self._sockets):
                    self._receive(endpoint)
                self._events(events)
        finally:
            self._close_sockets()

    def _send(self, command: str, args: Sequence[bytes], pending: _wire.Pending) -> bytes:
        with self._lock:
            if self._closed:
                raise Closed("the client is closed")
            request_id = self._tracker.send(command, args, pending)
        self._wake()
        return request_id

    def _forget(self, request_id: bytes, withdraw: bool = False) -> None:
        """Stop waiting for a request; ``withdraw`` when its wait timed
        out (see ``_wire.Tracker.drop``: the I/O thread may reopen its
        socket at its next turn)."""
        with self._lock:
            self._tracker.drop(request_id, withdraw)
            wake = bool(self._tracker.withdrawn)
        if wake:
            self._wake()

    def _unreached(self) -> str:
        """What a Timeout adds while no broker was ever reached
        (``_wire.Tracker.unreached``)."""
        with self._lock:
            return self._tracker.unreached()

    def _request(self, command: str, args: Sequence[bytes], parse: Any,
                 timeout: Optional[float]) -> Any:
        """Send one request and wait for its single reply."""
        if timeout is _DEFAULT:
            timeout = self.timeout
        future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        request_id = self._send(command, args, _wire.Pending("simple", future, parse))
        try:
            return _wait(future, timeout, "reply to %s" % command, self)
        except Timeout:
            self._forget(request_id, withdraw=True)
            raise

    # -- calls ----------------------------------------------------------

    def submit(self, context: str, call: _codec.JsonArg) -> CallHandle:
        """Send ``CALL`` without waiting; returns a :class:`CallHandle`.
        Submit many calls, then wait for them: they are pipelined.
        ``call`` is a dict (or JSON text)."""
        reply: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        done: "Optional[concurrent.futures.Future[Any]]" = (
            concurrent.futures.Future() if _codec.has_output(call) else None)
        request_id = self._send("CALL", _codec.call_args(context, call, self._auto_id),
                                _wire.Pending("call", reply, outcomes=[done]))
        return CallHandle(self, request_id, reply, done)

    def call(self, context: str, call: _codec.JsonArg, wait: bool = True,
             timeout: Optional[float] = None) -> Union[Outcome, str]:
        """Submit a call (``CALL``) in ``context``.

        With ``wait`` and an ``_outputPath``, returns the call's
        :class:`actd.Outcome` once it has ended (``timeout`` seconds at
        most, None for no limit; a failed call is an outcome too, see
        :meth:`actd.Outcome.raise_for_error`). With ``wait`` and no
        ``_outputPath``, the client asks ``TOOLS <activity>`` (the answer
        is kept 2 s per client and activity) whether the tool prescribes
        an output path (``"outputPath": {"const": ...}``); when it does,
        the call is sent with that ``_outputPath`` and its outcome is
        returned (a call given as JSON text is parsed for this). Otherwise
        returns the call id as soon as actd accepted it (waiting at most
        ``timeout``, or the client's timeout when None). Raises
        :class:`actd.ActdError` when actd refuses the call (``bad_call``
        when the registry prescribes another path by the time it
        arrives), :class:`actd.Timeout` on timeout (a ``timeout`` given
        bounds the whole call, the ``TOOLS`` asked first included)."""
        deadline = _handles.deadline_after(timeout)
        if wait:
            call = self._prescribe([call], deadline)[0]
        handle = self.submit(context, call)
        try:
            accept_timeout = _handles.within(deadline, self.timeout)
            if wait and handle.has_output:
                handle.accepted(accept_timeout)
                return handle.outcome(_handles.time_left(deadline))
            call_id = handle.accepted(accept_timeout)
            return call_id
        finally:
            handle.forget()

    def submit_plan(self, context: str, calls: Union[Sequence[Dict[str, Any]], str, bytes]
                    ) -> PlanHandle:
        """Send ``PLAN`` (many calls accepted together, in order) without
        waiting; returns a :class:`PlanHandle`."""
        args, items = _codec.plan_args(context, calls, self._auto_id)
        reply: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        outcomes: "List[Optional[concurrent.futures.Future[Any]]]" = [
            concurrent.futures.Future() if _codec.has_output(item) else None for item in items]
        request_id = self._send("PLAN", args, _wire.Pending("plan", reply, outcomes=outcomes))
        return PlanHandle(self, request_id, reply, outcomes)

    def plan(self, context: str, calls: Sequence[Dict[str, Any]], wait: bool = True,
             timeout: Optional[float] = None) -> List[Union[Outcome, str]]:
        """Submit calls together (``PLAN``). With ``wait``, returns for each
        call in order its :class:`actd.Outcome` (calls with an output path)
        or its call id (fire-and-forget calls); without, the call ids.
        With ``wait``, a call without ``_outputPath`` whose tool prescribes
        one is given it first, as :meth:`call` does (one ``TOOLS`` per
        activity not asked about in the last 2 s), and its outcome is
        returned. ``timeout`` as for :meth:`call`."""
        deadline = _handles.deadline_after(timeout)
        if wait:
            items = _prescribed.plan_items(calls)
            if items is not None:
                calls = self._prescribe(items, deadline)
        handle = self.submit_plan(context, calls)
        try:
            accept_timeout = _handles.within(deadline, self.timeout)
            if wait:
                handle.accepted(accept_timeout)
                return handle.results(_handles.time_left(deadline))
            return list(handle.accepted(accept_timeout))
        finally:
            handle.forget()

    def _prescribe(self, calls: List[Any], deadline: Optional[float]) -> List[Any]:
        """``calls``, those without ``_outputPath`` whose tool prescribes
        one given it (``TOOLS`` asked for each activity whose answer is not
        kept, by ``deadline`` when there is one; a broker without
        ``TOOLS``, or that refuses this client ``TOOLS``
        (``unauthorized``), prescribes nothing)."""
        paths: Dict[str, Optional[str]] = {}
        for activity in self._prescriptions.unknown(calls, paths):
            try:
                answer: Any = self.tools(activity, _handles.within(deadline, self.timeout))
            except ActdError as error:
                if not _prescribed.not_served(error):
                    raise
                answer = {}
            paths[activity] = self._prescriptions.store(activity, answer)
        return [_prescribed.apply(call, paths) for call in calls]

    def wait(self, call_id: str, timeout: Optional[float] = None,
             probe: Optional[float] = PROBE) -> Outcome:
        """The outcome of call ``call_id`` once it has ended (any call:
        fire-and-forget, or submitted by another client). A call this
        client awaits the ``DONE`` of is waited for on it; any other, by
        watching its context's calls (``WATCH ... all``, ``probe`` as for
        :meth:`watch`) after one ``STATUS``. :class:`actd.Timeout` after
        ``timeout`` seconds (None: no limit)."""
        with self._lock:
            done = self._tracker.outcome_future(call_id)
        if done is not None:
            outcome: Outcome = _wait(done, timeout, "DONE for call %s" % call_id, self)
            return outcome
        deadline = _handles.deadline_after(timeout)
        # The STATUS requests too end by the deadline
        state = _watch.Watch(self.status(call_id, _handles.within(deadline, self.timeout)).context,
                             0, True)
        stream = self._stream(state, probe, deadline)
        try:
            for event in stream:
                # None: a watch was just opened, so an end before it shows in STATUS
                found = (self.status(call_id, _handles.within(deadline, self.timeout)).outcome
                         if event is None else _watch.call_outcome(event, call_id))
                if found is not None:
                    return found
        finally:
            stream.close()
        raise NotFound("context %s was deleted" % state.context)

    # -- streams --------------------------------------------------------

    def watch(self, context: str, from_seq: int = 1, calls: bool = False,
              probe: Optional[float] = PROBE) -> Iterator[Dict[str, Any]]:
        """The events of ``context`` (``WATCH``, sent at once), as they
        come, without end: ``{"seq", "message"}`` for each message from
        ``from_seq`` on (0: those appended from now on), with ``calls``
        also ``{"call": <STATUS>}`` for each change of state of its calls,
        and a last ``{"deleted": True}`` when the context is deleted.

        The watch is resumed from the message after the last one yielded,
        without duplicate or gap, when messages were dropped (a gap in
        ``seq``), and when nothing came for ``probe`` seconds (None: never
        check) and the broker then does not answer ``STATS`` within
        ``probe`` seconds or has restarted since. With several brokers, it
        goes on at another at once when its connection drops, and when its
        ``WATCH`` waited ``request_timeout`` at a broker not connected (a
        dead owner a ``moved`` reply named). Call events while no
        watch was open are not sent again. Closing the iterator (``break``
        out of the loop, or ``close()``) sends ``UNWATCH``."""
        stream = self._stream(_watch.Watch(context, from_seq, calls), probe)
        next(stream)                        # The WATCH is sent
        return (event for event in stream if event is not None)

    def _stream(self, state: _watch.Watch, probe: Optional[float],
                deadline: Optional[float] = None) -> Iterator[Any]:
        """:meth:`watch`'s iterator, yielding None after each WATCH sent;
        :class:`actd.Timeout` at ``deadline``."""
        sub: Optional[_watch.Subscription] = None
        try:
            while not state.ended:
                if sub is None:
                    sub = self._subscribe(state)
                    yield None
                if sub.stats is not None and not self._answered(state, sub, probe, deadline):
                    self._unwatch(sub.watch_id)
                    sub = None
                    continue
                try:
                    item = sub.events.get(timeout=_handles.wait_time(probe, deadline))
                except queue.Empty:
                    _handles.check_deadline(deadline)
                    with self._lock:
                        self._tracker.probe(sub, concurrent.futures.Future())
                    self._wake()
                    continue
                keep = state.take(item)
                if keep is None:
                    self._unwatch(sub.watch_id)
                    sub = None
                elif keep:
                    yield item
        finally:
            if sub is not None:
                self._unwatch(sub.watch_id)

    def _subscribe(self, state: _watch.Watch) -> _watch.Subscription:
        events: "queue.Queue[Any]" = queue.Queue()
        with self._lock:
            if self._closed:
                raise Closed("the client is closed")
            sub = self._tracker.subscribe(state, events.put, concurrent.futures.Future())
        sub.events = events
        self._wake()
        return sub

    def _answered(self, state: _watch.Watch, sub: _watch.Subscription, probe: Optional[float],
                  deadline: Optional[float]) -> bool:
        """The ``STATS`` asked of the watch's broker: False when it gives
        no reply within ``probe`` seconds or restarted since the last time."""
        _handles.check_deadline(deadline)
        try:
            stats = _wait(sub.stats, _handles.wait_time(probe, deadline), "STATS")
        except Timeout:
            self._forget(sub.stats_id, withdraw=True)
            return False
        except Disconnected:
            return False                    # Sent on a connection that dropped
        finally:
            sub.stats = None
        return not state.restarted(stats, sub.sent, time.monotonic())

    def _unwatch(self, watch_id: bytes) -> None:
        """Send ``UNWATCH`` (not once the client is closed)."""
        with self._lock:
            if self._closed:
                return
            self._tracker.unwatch(watch_id)
        self._wake()

    # -- contexts -------------------------------------------------------

    def append(self, context: str, message: _codec.JsonArg, key: Optional[str] = None,
               timeout: Optional[float] = _DEFAULT) -> int:
        """Append a message to ``context`` (``APPEND``); returns its
        ``_seq``. With ``key`` (1 to 128 bytes), a second append with the
        same key in the context appends nothing and returns the first's.
        Without one, a client that knows several brokers gives the append a
        random key (so does a ``moved`` reply that sends it on), so that a
        retry at another broker is stored once."""
        args = _codec.append_args(context, message, key, self._auto_id)
        seq: int = self._request("APPEND", args, _codec.parse_seq, timeout)
        return seq

    def contexts(self, prefix: str = "", limit: Optional[int] = None, page_size: int = 1000,
                 timeout: Optional[float] = _DEFAULT) -> Iterator[Dict[str, Any]]:
        """The stored contexts whose id starts with ``prefix``, in byte
        order of their ids, at most ``limit`` (None: all): an iterator of
        ``{"context", "messages", "last_seq", "updated", "pending"}`` that
        sends ``CONTEXTS`` for ``page_size`` of them (at most 1000) at a
        time, as it is consumed."""
        return self._pages("CONTEXTS", _codec.ContextPages(prefix, limit, page_size), timeout)

    def delete(self, context: str, timeout: Optional[float] = _DEFAULT) -> Dict[str, Any]:
        """Delete a context (``DELETE``): its calls not ended are cancelled,
        then it is removed with its messages and calls. Returns
        ``{"messages": N, "cancelled": N}``; :class:`actd.NotFound` when
        there is no such context."""
        counts: Dict[str, Any] = self._request("DELETE", [_codec.text_arg(context)],
                                               _codec.parse_ok_value, timeout)
        return counts

    def resolve(self, context: str, expression: str, instance: Optional[str] = None,
                timeout: Optional[float] = _DEFAULT) -> Any:
        """The value of a reference or expression (``RESOLVE``), in
        ``instance``'s scope when given. Raises :class:`actd.NotFound` when
        the value is absent."""
        return self._request("RESOLVE", _codec.resolve_args(context, expression, instance),
                             _codec.parse_value, timeout)

    def view(self, context: str, format: str = "json", timeout: Optional[float] = _DEFAULT
             ) -> Any:
        """The merged view (``VIEW``): a list of entries for ``"json"``, a
        string for ``"text"``."""
        args, parse = _codec.view_args(context, format)
        return self._request("VIEW", args, parse, timeout)

    def history(self, context: str, from_seq: int = 1, limit: Optional[int] = None,
                page_size: int = 1000, timeout: Optional[float] = _DEFAULT
                ) -> Iterator[Dict[str, Any]]:
        """The stored messages from ``from_seq`` on, oldest first, at most
        ``limit`` (None: all): an iterator that sends ``HISTORY`` for
        ``page_size`` messages (1 to 1000, as actd allows; another is a
        ``ValueError`` at once) at a time, as it is consumed."""
        return self._pages("HISTORY", _codec.HistoryPages(context, from_seq, limit, page_size),
                           timeout)

    def _pages(self, command: str, pages: Any, timeout: Optional[float]) -> Iterator[Any]:
        """The items of the pages of ``pages`` (a ``HistoryPages`` or a
        ``ContextPages``), a request at a time, as they are consumed."""
        while True:
            args = pages.args()
            if args is None:
                return
            yield from pages.take(self._request(command, args, _codec.parse_value, timeout))

    def iter_history(self, context: str, from_seq: int = 1, page_size: int = 1000
                     ) -> Iterator[Dict[str, Any]]:
        """Deprecated: :meth:`history` is the same iterator."""
        warnings.warn("iter_history() is deprecated: history() is the same iterator",
                      DeprecationWarning, stacklevel=2)
        return self.history(context, from_seq, page_size=page_size)

    # -- calls by id, and the broker ------------------------------------

    def status(self, call_id: str, timeout: Optional[float] = _DEFAULT) -> Status:
        """A call's :class:`actd.Status` (``STATUS``); :class:`actd.NotFound`
        for an unknown call."""
        status: Status = self._request("STATUS", [_codec.text_arg(call_id)],
                                       _codec.parse_status, timeout)
        return status

    def cancel(self, call_id: str, timeout: Optional[float] = _DEFAULT) -> None:
        """Cancel a call (``CANCEL``); nothing changes for a call that has
        ended. :class:`actd.NotFound` for an unknown call."""
        self._request("CANCEL", [_codec.text_arg(call_id)], _codec.parse_ok, timeout)

    def stats(self, timeout: Optional[float] = _DEFAULT) -> Dict[str, Any]:
        """The broker's counters (``STATS``, PROTOCOL.md section 4); with
        several brokers, those of the first one that answers."""
        stats: Dict[str, Any] = self._request("STATS", [], _codec.parse_value, timeout)
        return stats

    def tools(self, activity: Optional[str] = None, timeout: Optional[float] = _DEFAULT
              ) -> Dict[str, Dict[str, Any]]:
        """The tools the workers declared (``TOOLS``, PROTOCOL.md section
        2.1): ``{"<activity>": {"description"?, "params"?, "outputPath"?,
        "workers": N}}``, every activity or only ``activity``."""
        args = [] if activity is None else [_codec.text_arg(activity)]
        tools: Dict[str, Dict[str, Any]] = self._request("TOOLS", args, _codec.parse_value,
                                                         timeout)
        return tools

    def ping(self, timeout: Optional[float] = _DEFAULT) -> float:
        """``PING`` (the first broker that answers); returns the round trip
        in seconds."""
        started = time.monotonic()
        self._request("PING", [], _codec.parse_pong, timeout)
        return time.monotonic() - started
