"""The asyncio actd client: the API of :class:`actd.Client` as coroutines.

::

    import asyncio, actd.aio

    async def main():
        async with actd.aio.AsyncClient("tcp://127.0.0.1:5555") as client:
            outcomes = await asyncio.gather(*(
                client.call("ctx", {"_tool": "upper", "text": str(n),
                                    "_outputPath": "†out.n%d" % n})
                for n in range(100)))

    asyncio.run(main())

All requests are pipelined on one DEALER socket per broker
(``zmq.asyncio``); a reader task per socket routes each reply to its
request. Several brokers sharing a store are handled as by
:class:`actd.Client`. Use one client from one event loop (it is not
thread-safe; it is safe for any number of tasks).
"""

import asyncio
import time
import warnings
from typing import Any, AsyncIterator, Dict, List, Optional, Sequence, Union

import zmq
import zmq.asyncio

from . import _codec, _handles, _prescribed, _socket, _watch, _wire
from ._socket import Endpoints
from .client import _DEFAULT, PROBE, UNWATCH_WAIT, _options
from .errors import ActdError, Closed, Disconnected, NotFound, Timeout
from .types import Outcome, Status

__all__ = ["AsyncClient", "AsyncCallHandle", "AsyncPlanHandle", "AsyncWatch"]


def _sent(future: "asyncio.Future[Any]") -> None:
    """A send's future is done: its error (the socket closed) is not news."""
    if not future.cancelled():
        future.exception()


async def _wait(future: "asyncio.Future[Any]", timeout: Optional[float], what: str,
                client: Any = None) -> Any:
    """The future's result, or :class:`actd.Timeout` after ``timeout``
    seconds (None: no limit), saying, while ``client`` never reached a
    broker, what its connection attempts saw."""
    try:
        # shield: a timeout must not cancel the future (it can be awaited again)
        return await asyncio.wait_for(asyncio.shield(future), timeout)
    except asyncio.TimeoutError:
        unreached = client._unreached() if client is not None else ""
        raise Timeout("no %s within %.3g s%s" % (what, timeout, unreached)) from None


class AsyncCallHandle(_handles.CallHandleBase):
    """A submitted call (from :meth:`AsyncClient.submit`)."""

    async def accepted(self, timeout: Optional[float] = None) -> str:
        """The call id once actd accepted the call; raises the
        :class:`actd.ActdError` of an ``ERROR`` reply, or :class:`actd.Timeout`."""
        return str(await _wait(self._reply, timeout, "ACCEPTED", self._client))

    async def outcome(self, timeout: Optional[float] = None) -> Outcome:
        """The call's :class:`actd.Outcome`; ``ValueError`` for a call
        without output path."""
        if self._done is None:
            raise ValueError("a call without _outputPath gets no DONE")
        outcome: Outcome = await _wait(self._done, timeout, "DONE", self._client)
        return outcome

    async def result(self, timeout: Optional[float] = None) -> Union[Outcome, str]:
        """The outcome for a call with an output path, else the call id."""
        if self._done is None:
            return await self.accepted(timeout)
        return await self.outcome(timeout)

    def __await__(self) -> Any:
        """``await handle`` is ``await handle.result()``."""
        return self.result().__await__()


class AsyncPlanHandle(_handles.PlanHandleBase):
    """A submitted plan (from :meth:`AsyncClient.submit_plan`)."""

    async def accepted(self, timeout: Optional[float] = None) -> List[str]:
        """The call ids, in the plan's order."""
        ids: List[str] = await _wait(self._reply, timeout, "ACCEPTED", self._client)
        return list(ids)

    async def results(self, timeout: Optional[float] = None) -> List[Union[Outcome, str]]:
        """For each call: its outcome (calls with an output path) or its id."""
        deadline = _handles.deadline_after(timeout)
        ids = await self.accepted(timeout)
        results: List[Union[Outcome, str]] = []
        for call_id, future in zip(ids, self._outcomes):
            if future is None:
                results.append(call_id)
            else:
                results.append(await _wait(future, _handles.time_left(deadline),
                                           "DONE for call %s" % call_id))
        return results


class AsyncWatch:
    """What :meth:`AsyncClient.watch` returns: an async iterator of the
    events of a watch already sent; :meth:`aclose` sends ``UNWATCH``."""

    def __init__(self, client: "AsyncClient", stream: AsyncIterator[Any],
                 watch_id: bytes) -> None:
        """Made by :meth:`AsyncClient.watch`."""
        self._client = client
        self._stream: Any = stream
        self._watch_id = watch_id
        self._started = False

    def __aiter__(self) -> "AsyncWatch":
        """Itself."""
        return self

    async def __anext__(self) -> Dict[str, Any]:
        """The next event."""
        self._started = True
        while True:
            event = await self._stream.__anext__()
            if event is not None:
                return event

    async def aclose(self) -> None:
        """Stop watching (``UNWATCH``)."""
        if not self._started:               # Its finally would not run
            self._client._unwatch(self._watch_id)
        await self._stream.aclose()


class AsyncClient:
    """A client of actd's client endpoint (or of several brokers sharing a
    store) for asyncio: the methods and options of :class:`actd.Client`,
    as coroutines. Create it anywhere; its sockets and tasks start with the
    first request, in the running loop. ``timeout`` is the default wait for
    replies that come at once."""

    def __init__(self, endpoints: Optional[Endpoints] = None, *,
                 timeout: Optional[float] = 30.0,
                 request_timeout: Optional[float] = _DEFAULT,
                 status_poll: Optional[float] = 1.0,
                 curve_server: Optional[str] = None, curve_cert: Optional[str] = None,
                 context: Optional[zmq.asyncio.Context] = None,
                 endpoint: Optional[Endpoints] = None) -> None:
        """Remember the endpoints (one string, or a list) and read the
        CURVE certificate."""
        endpoints, request_timeout, several_timeout = _options(
            endpoints, endpoint, request_timeout, status_poll)
        self._curve = _socket.curve_option(curve_server, curve_cert)
        #: The first endpoint given.
        self.endpoint: str = endpoints[0]
        self.timeout: Optional[float] = timeout
        self.status_poll: Optional[float] = status_poll
        self._prescriptions = _prescribed.Prescriptions()   # TOOLS answers, kept 2 s
        self._context = context or zmq.asyncio.Context.instance()
        self._sockets: Dict[str, zmq.asyncio.Socket] = {}
        self._monitors: Dict[str, zmq.asyncio.Socket] = {}  # endpoint -> its connection events
        self._tasks: "List[asyncio.Task[None]]" = []
        self._links: "Dict[str, List[asyncio.Task[None]]]" = {}   # endpoint -> its two tasks
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._timer: Optional[asyncio.TimerHandle] = None
        self._timer_at = 0.0
        self._tracker = _wire.Tracker(endpoints, request_timeout, status_poll,
                                      several_timeout=several_timeout)
        self._closed = False

    async def __aenter__(self) -> "AsyncClient":
        """Use as ``async with``: closes on exit."""
        return self

    async def __aexit__(self, *exc: Any) -> None:
        """Close the client."""
        await self.close()

    async def close(self) -> None:
        """Stop the reader and close the socket; pending requests raise
        :class:`actd.Closed`. Each watch still open is sent ``UNWATCH``
        first, their ``OK`` awaited ``UNWATCH_WAIT`` (0.2) seconds at most,
        as :meth:`actd.Client.close` does."""
        if self._closed:
            return
        self._closed = True
        if self._loop is not None:
            unwatches, actions = self._tracker.close_watches(Closed("the client was closed"),
                                                             self._loop.create_future)
            for action in actions:
                action()
            if unwatches:
                self._flush()
                await asyncio.wait(unwatches, timeout=UNWATCH_WAIT)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
        for endpoint, sock in self._sockets.items():
            monitor = self._monitors.get(endpoint)
            if monitor is not None:
                _socket.stop_monitor(sock, monitor)
            sock.close(0)
        self._sockets = {}
        self._monitors = {}
        for action in self._tracker.fail_all(Closed("the client was closed")):
            action()

    @property
    def _auto_id(self) -> bool:
        """Calls get a random ``_id`` while the client knows several
        brokers (given, or named by a ``moved`` reply since): a request
        sent again to another broker is then the same call."""
        return len(self._tracker.endpoints) > 1

    @property
    def pending(self) -> int:
        """Requests still waiting for a reply or a ``DONE``."""
        return len(self._tracker)

    @property
    def request_timeout(self) -> Optional[float]:
        """Seconds a broker may take to answer before a request goes to
        the next one (None: no limit). By default 5 with several
        endpoints; with one, None until a ``moved`` reply names a second
        broker, then 5 (:data:`actd.client.MULTI_REQUEST_TIMEOUT`). A value
        given, None included, stays."""
        return self._tracker.request_timeout

    @request_timeout.setter
    def request_timeout(self, value: Optional[float]) -> None:
        if value is not None and value <= 0:
            raise ValueError("request_timeout is a number of seconds > 0, or None")
        self._tracker.request_timeout = value
        self._tracker.several_timeout = None
        self._tracker.timers_changed()

    @property
    def endpoints(self) -> List[str]:
        """The brokers' endpoints: those given, then those ``moved``
        replies named."""
        return list(self._tracker.endpoints)

    def _forget(self, request_id: bytes, withdraw: bool = False) -> None:
        """Stop waiting for a request; ``withdraw`` when its wait timed
        out (see ``_wire.Tracker.drop``: its socket may be reopened)."""
        self._tracker.drop(request_id, withdraw)
        for endpoint in self._tracker.take_withdrawn():
            self._reopen(endpoint)

    def _reopen(self, endpoint: str) -> None:
        """Replace the socket to ``endpoint`` with a new one, for requests
        that timed out while no connection was up (``_wire.Tracker.drop``):
        the old one closes with linger 0, dropping libzmq's queue, so they
        are not carried out once the broker is back. The new socket is in
        place at once (what is sent next goes on it); the old one's reader
        and monitor tasks are cancelled, and it is closed once they ended."""
        sock = self._sockets.pop(endpoint, None)
        monitor = self._monitors.pop(endpoint, None)
        if sock is None or self._closed:
            return
        old = self._links.pop(endpoint, [])
        for task in old:
            task.cancel()
            self._tasks.remove(task)
        _wire.log.info("requests timed out while %s was not connected: its socket reopened",
                       endpoint)

        async def close_old() -> None:
            try:
                await asyncio.gather(*old, return_exceptions=True)
            finally:
                if monitor is not None:
                    _socket.stop_monitor(sock, monitor)
                sock.close(0)

        self._tasks.append(asyncio.ensure_future(close_old()))
        try:
            self._socket(endpoint)
        except zmq.ZMQError as error:
            # Connected again when a request goes there (_flush)
            _wire.log.warning("cannot connect to %s: %s", endpoint, error)

    def _socket(self, endpoint: str) -> zmq.asyncio.Socket:
        """The socket to endpoint (connected, with its reader task, on first use)."""
        sock = self._sockets.get(endpoint)
        if sock is None:
            sock = _socket.dealer(self._context, endpoint, self._curve, heartbeat=True)
            self._sockets[endpoint] = sock
            monitor = _socket.disconnects(sock)
            self._monitors[endpoint] = monitor
            tasks = [asyncio.ensure_future(self._read(endpoint, sock)),
                     asyncio.ensure_future(self._watch_link(endpoint, sock, monitor))]
            self._links[endpoint] = tasks
            self._tasks += tasks
        return sock

    def _start(self) -> None:
        if self._closed:
            raise Closed("the client is closed")
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            for endpoint in self._tracker.endpoints:
                self._socket(endpoint)

    def _flush(self) -> None:
        """Send what the tracker queued, and set the timer for its next tick."""
        outbox = self._tracker.outbox
        while outbox:
            endpoint, frames = outbox.popleft()
            try:
                sent = self._socket(endpoint).send_multipart(frames)
            except zmq.ZMQError as error:
                _wire.log.warning("cannot send to %s: %s", endpoint, error)
                continue
            sent.add_done_callback(_sent)
        wake_at = self._tracker.next_tick()
        if self._closed or self._loop is None or wake_at is None:
            return
        if self._timer is not None:
            if self._timer_at <= wake_at:
                return
            self._timer.cancel()
        self._timer_at = wake_at
        delay = max(0.0, wake_at - time.monotonic())
        self._timer = self._loop.call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        """The tracker's timers (retries, STATUS polls)."""
        self._timer = None
        if self._closed:
            return
        for action in self._tracker.tick():
            action()
        self._flush()

    async def _read(self, endpoint: str, sock: zmq.asyncio.Socket) -> None:
        """Route the replies from the broker at endpoint as they come (see
        :meth:`_receive`)."""
        try:
            while True:
                await sock.poll(None, zmq.POLLIN)
                self._receive(endpoint, sock)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - the socket failed: nobody will be answered
            for action in self._tracker.fail_all(Closed("the client's socket failed: %s" % error)):
                action()

    def _receive(self, endpoint: str, sock: zmq.asyncio.Socket) -> None:
        """Route every message readable on sock now, in order, and send what
        that queued. The socket's only reader, called by :meth:`_read` once
        it is readable (``poll`` takes no message) and by :meth:`_watch_link`
        before a drop. It takes each message with ``recv_multipart(NOBLOCK)``
        (zmq.asyncio returns a future already done) and never yields to the
        loop: no message waits in a future for a task's turn while the other
        task reads the ones after it (they would be routed out of order, and
        a drop handled between would fail the request it answers)."""
        while True:
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK).result()
            except zmq.Again:
                break
            for action in self._tracker.dispatch(endpoint, frames):
                action()
        self._flush()

    async def _watch_link(self, endpoint: str, sock: zmq.asyncio.Socket,
                          monitor: zmq.asyncio.Socket) -> None:
        """Read the socket's monitor: each time it is readable (``poll``
        takes nothing), handle the events it holds (:meth:`_take_events`)."""
        while True:
            await monitor.poll(None, zmq.POLLIN)
            self._take_events(endpoint, sock, monitor)

    def _take_events(self, endpoint: str, sock: zmq.asyncio.Socket,
                     monitor: zmq.asyncio.Socket) -> None:
        """Handle every connection event readable on ``monitor`` now: a
        dropped connection fails the requests it lost, a failed attempt is
        kept to say (see ``_wire.Tracker.link_event``). The replies that
        came before a drop are routed first: libzmq keeps them readable
        after its DISCONNECTED event, and each answers its request, which
        the drop must then not fail. The event may well be taken before
        them (the monitor's turn of the loop may come first).

        Called by :meth:`_watch_link` and, for each socket, by
        :meth:`_send` and :meth:`_subscribe` before a request is tracked:
        a loop kept busy while the connection dropped and came back has
        the drop still unread, and the request, sent on the new
        connection and carried out, would be failed by it. Like
        :meth:`_receive`, it reads with ``NOBLOCK`` (a future already
        done) and never yields to the loop, so the monitor task's read
        cannot interleave with a request being sent."""
        while True:
            try:
                frames = monitor.recv_multipart(zmq.NOBLOCK).result()
            except zmq.Again:
                break
            event = _socket.link_event(frames)
            if event is False:
                self._receive(endpoint, sock)
            if event is not None:
                for action in self._tracker.link_event(endpoint, event):
                    action()
                self._flush()

    def _take_all_events(self) -> None:
        """:meth:`_take_events` for each socket: before a request is
        tracked, the drops that already happened are handled (they fail
        only the requests sent before them)."""
        for endpoint, sock in list(self._sockets.items()):
            monitor = self._monitors.get(endpoint)
            if monitor is not None:
                self._take_events(endpoint, sock, monitor)

    async def _send(self, command: str, args: Sequence[bytes], pending: _wire.Pending) -> bytes:
        self._start()
        self._take_all_events()
        request_id = self._tracker.send(command, args, pending)
        self._flush()
        return request_id

    def _unreached(self) -> str:
        """What a Timeout adds while no broker was ever reached
        (``_wire.Tracker.unreached``)."""
        return self._tracker.unreached()

    async def _request(self, command: str, args: Sequence[bytes], parse: Any,
                       timeout: Optional[float]) -> Any:
        if timeout is _DEFAULT:
            timeout = self.timeout
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        request_id = await self._send(command, args, _wire.Pending("simple", future, parse))
        try:
            return await _wait(future, timeout, "reply to %s" % command, self)
        except Timeout:
            self._forget(request_id, withdraw=True)
            raise

    # -- calls ----------------------------------------------------------

    async def submit(self, context: str, call: _codec.JsonArg) -> AsyncCallHandle:
        """Send ``CALL`` without waiting for its replies; returns a handle."""
        loop = asyncio.get_running_loop()
        reply: "asyncio.Future[Any]" = loop.create_future()
        done: "Optional[asyncio.Future[Any]]" = (
            loop.create_future() if _codec.has_output(call) else None)
        request_id = await self._send("CALL", _codec.call_args(context, call, self._auto_id),
                                      _wire.Pending("call", reply, outcomes=[done]))
        return AsyncCallHandle(self, request_id, reply, done)

    async def call(self, context: str, call: _codec.JsonArg, wait: bool = True,
                   timeout: Optional[float] = None) -> Union[Outcome, str]:
        """As :meth:`actd.Client.call`: the outcome (``wait`` and an output
        path, or a tool that prescribes one: see there) or the call id."""
        # timeout bounds the whole call, the TOOLS asked first included
        deadline = _handles.deadline_after(timeout)
        if wait:
            call = (await self._prescribe([call], deadline))[0]
        handle = await self.submit(context, call)
        try:
            accept_timeout = _handles.within(deadline, self.timeout)
            if wait and handle.has_output:
                await handle.accepted(accept_timeout)
                return await handle.outcome(_handles.time_left(deadline))
            return await handle.accepted(accept_timeout)
        finally:
            handle.forget()

    async def submit_plan(self, context: str,
                          calls: Union[Sequence[Dict[str, Any]], str, bytes]) -> AsyncPlanHandle:
        """Send ``PLAN`` without waiting; returns a handle."""
        args, items = _codec.plan_args(context, calls, self._auto_id)
        loop = asyncio.get_running_loop()
        reply: "asyncio.Future[Any]" = loop.create_future()
        outcomes: "List[Optional[asyncio.Future[Any]]]" = [
            loop.create_future() if _codec.has_output(item) else None for item in items]
        request_id = await self._send("PLAN", args,
                                      _wire.Pending("plan", reply, outcomes=outcomes))
        return AsyncPlanHandle(self, request_id, reply, outcomes)

    async def plan(self, context: str, calls: Sequence[Dict[str, Any]], wait: bool = True,
                   timeout: Optional[float] = None) -> List[Union[Outcome, str]]:
        """As :meth:`actd.Client.plan` (with ``wait``, calls to a tool that
        prescribes an output path are given it)."""
        deadline = _handles.deadline_after(timeout)
        if wait:
            items = _prescribed.plan_items(calls)
            if items is not None:
                calls = await self._prescribe(items, deadline)
        handle = await self.submit_plan(context, calls)
        try:
            accept_timeout = _handles.within(deadline, self.timeout)
            if wait:
                await handle.accepted(accept_timeout)
                return await handle.results(_handles.time_left(deadline))
            return list(await handle.accepted(accept_timeout))
        finally:
            handle.forget()

    async def _prescribe(self, calls: List[Any], deadline: Optional[float]) -> List[Any]:
        """As ``actd.Client._prescribe``: ``calls``, those without
        ``_outputPath`` whose tool prescribes one given it (``TOOLS``
        answers kept 2 s per activity; asked by ``deadline``)."""
        paths: Dict[str, Optional[str]] = {}
        for activity in self._prescriptions.unknown(calls, paths):
            try:
                answer: Any = await self.tools(activity,
                                               _handles.within(deadline, self.timeout))
            except ActdError as error:
                if not _prescribed.not_served(error):
                    raise
                answer = {}
            paths[activity] = self._prescriptions.store(activity, answer)
        return [_prescribed.apply(call, paths) for call in calls]

    async def wait(self, call_id: str, timeout: Optional[float] = None,
                   probe: Optional[float] = PROBE) -> Outcome:
        """As :meth:`actd.Client.wait`: on the call's ``DONE`` when this
        client awaits it, else by watching its context's calls."""
        done = self._tracker.outcome_future(call_id)
        if done is not None:
            outcome: Outcome = await _wait(done, timeout, "DONE for call %s" % call_id, self)
            return outcome
        deadline = _handles.deadline_after(timeout)
        # The STATUS requests too end by the deadline
        status = await self.status(call_id, _handles.within(deadline, self.timeout))
        state = _watch.Watch(status.context, 0, True)
        stream = self._stream(state, probe, deadline)
        try:
            async for event in stream:
                # None: a watch was just opened, so an end before it shows in STATUS
                if event is None:
                    status = await self.status(call_id, _handles.within(deadline, self.timeout))
                    found = status.outcome
                else:
                    found = _watch.call_outcome(event, call_id)
                if found is not None:
                    return found
        finally:
            await stream.aclose()
        raise NotFound("context %s was deleted" % state.context)

    # -- streams --------------------------------------------------------

    def watch(self, context: str, from_seq: int = 1, calls: bool = False,
              probe: Optional[float] = PROBE) -> "AsyncWatch":
        """As :meth:`actd.Client.watch`, for ``async for`` (call it in the
        event loop: the ``WATCH`` is sent at once); ``aclose()``, or
        leaving the loop once the iterator is collected, sends ``UNWATCH``."""
        state = _watch.Watch(context, from_seq, calls)
        first = self._subscribe(state)
        return AsyncWatch(self, self._stream(state, probe, first=first), first.watch_id)

    async def _stream(self, state: _watch.Watch, probe: Optional[float],
                      deadline: Optional[float] = None,
                      first: Optional[_watch.Subscription] = None) -> AsyncIterator[Any]:
        """:meth:`watch`'s iterator (from subscription ``first`` when
        given), yielding None after each WATCH sent; :class:`actd.Timeout`
        at ``deadline``."""
        sub = first
        try:
            while not state.ended:
                if sub is None:
                    sub = self._subscribe(state)
                    yield None
                if sub.stats is not None and not await self._answered(state, sub, probe,
                                                                      deadline):
                    self._unwatch(sub.watch_id)
                    sub = None
                    continue
                try:
                    item = await asyncio.wait_for(sub.events.get(),
                                                  _handles.wait_time(probe, deadline))
                except asyncio.TimeoutError:
                    _handles.check_deadline(deadline)
                    self._tracker.probe(sub, asyncio.get_running_loop().create_future())
                    self._flush()
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
        self._start()
        self._take_all_events()             # As _send
        events: "asyncio.Queue[Any]" = asyncio.Queue()
        assert self._loop is not None
        sub = self._tracker.subscribe(state, events.put_nowait, self._loop.create_future())
        sub.events = events
        self._flush()
        return sub

    async def _answered(self, state: _watch.Watch, sub: _watch.Subscription,
                        probe: Optional[float], deadline: Optional[float]) -> bool:
        """As :meth:`actd.Client._answered`."""
        _handles.check_deadline(deadline)
        try:
            stats = await _wait(sub.stats, _handles.wait_time(probe, deadline), "STATS")
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
        if not self._closed:
            self._tracker.unwatch(watch_id)
            self._flush()

    # -- contexts -------------------------------------------------------

    async def append(self, context: str, message: _codec.JsonArg, key: Optional[str] = None,
                     timeout: Optional[float] = _DEFAULT) -> int:
        """Append a message (once per ``key`` when given); returns its ``_seq``."""
        args = _codec.append_args(context, message, key, self._auto_id)
        seq: int = await self._request("APPEND", args, _codec.parse_seq, timeout)
        return seq

    def contexts(self, prefix: str = "", limit: Optional[int] = None, page_size: int = 1000,
                 timeout: Optional[float] = _DEFAULT) -> AsyncIterator[Dict[str, Any]]:
        """As :meth:`actd.Client.contexts` (``async for``)."""
        return self._pages("CONTEXTS", _codec.ContextPages(prefix, limit, page_size), timeout)

    async def delete(self, context: str, timeout: Optional[float] = _DEFAULT) -> Dict[str, Any]:
        """As :meth:`actd.Client.delete`: ``{"messages", "cancelled"}``."""
        counts: Dict[str, Any] = await self._request("DELETE", [_codec.text_arg(context)],
                                                     _codec.parse_ok_value, timeout)
        return counts

    async def resolve(self, context: str, expression: str, instance: Optional[str] = None,
                      timeout: Optional[float] = _DEFAULT) -> Any:
        """The value of an expression; :class:`actd.NotFound` when absent."""
        return await self._request("RESOLVE", _codec.resolve_args(context, expression, instance),
                                   _codec.parse_value, timeout)

    async def view(self, context: str, format: str = "json",
                   timeout: Optional[float] = _DEFAULT) -> Any:
        """The merged view: a list (``"json"``) or a string (``"text"``)."""
        args, parse = _codec.view_args(context, format)
        return await self._request("VIEW", args, parse, timeout)

    def history(self, context: str, from_seq: int = 1, limit: Optional[int] = None,
                page_size: int = 1000, timeout: Optional[float] = _DEFAULT
                ) -> AsyncIterator[Dict[str, Any]]:
        """The stored messages from ``from_seq`` on, at most ``limit``
        (None: all), read ``page_size`` at a time (``async for``)."""
        return self._pages("HISTORY", _codec.HistoryPages(context, from_seq, limit, page_size),
                           timeout)

    async def _pages(self, command: str, pages: Any, timeout: Optional[float]
                     ) -> AsyncIterator[Any]:
        """The items of the pages of ``pages``, a request at a time."""
        while True:
            args = pages.args()
            if args is None:
                return
            for item in pages.take(await self._request(command, args, _codec.parse_value,
                                                       timeout)):
                yield item

    def iter_history(self, context: str, from_seq: int = 1, page_size: int = 1000
                     ) -> AsyncIterator[Dict[str, Any]]:
        """Deprecated: :meth:`history` is the same iterator."""
        warnings.warn("iter_history() is deprecated: history() is the same iterator",
                      DeprecationWarning, stacklevel=2)
        return self.history(context, from_seq, page_size=page_size)

    # -- calls by id, and the broker ------------------------------------

    async def status(self, call_id: str, timeout: Optional[float] = _DEFAULT) -> Status:
        """A call's :class:`actd.Status`."""
        status: Status = await self._request("STATUS", [_codec.text_arg(call_id)],
                                             _codec.parse_status, timeout)
        return status

    async def cancel(self, call_id: str, timeout: Optional[float] = _DEFAULT) -> None:
        """Cancel a call."""
        await self._request("CANCEL", [_codec.text_arg(call_id)], _codec.parse_ok, timeout)

    async def stats(self, timeout: Optional[float] = _DEFAULT) -> Dict[str, Any]:
        """The broker's counters."""
        stats: Dict[str, Any] = await self._request("STATS", [], _codec.parse_value, timeout)
        return stats

    async def tools(self, activity: Optional[str] = None, timeout: Optional[float] = _DEFAULT
                    ) -> Dict[str, Dict[str, Any]]:
        """The tools the workers declared (``TOOLS``)."""
        args = [] if activity is None else [_codec.text_arg(activity)]
        tools: Dict[str, Dict[str, Any]] = await self._request("TOOLS", args,
                                                               _codec.parse_value, timeout)
        return tools

    async def ping(self, timeout: Optional[float] = _DEFAULT) -> float:
        """``PING``; returns the round trip in seconds."""
        started = time.monotonic()
        await self._request("PING", [], _codec.parse_pong, timeout)
        return time.monotonic() - started
