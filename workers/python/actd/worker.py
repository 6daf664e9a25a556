"""The actd worker: serves activities to one broker, or to several brokers
sharing a store (PROTOCOL.md section 2).

One thread owns the ZeroMQ sockets (one per broker) and never blocks: it
receives tasks, sends heartbeats and forwards what handlers produce.
Handlers run in a pool of ``capacity`` threads per broker, so a handler
that runs for minutes does not stop the heartbeats, and the brokers keep
counting the worker alive. Coroutine handlers (``async def``) run on the
worker's own event loop, in a thread of its own; the pool thread that
started one waits for it, so they too run ``capacity`` at a time.
"""

import collections
import inspect
import json
import logging
import os
import signal
import socket
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple, Union

import zmq

from . import _socket
# MAX_FAIL_BYTES and MAX_FAIL_MESSAGE: importable from here, as they were
from ._answers import (MAX_FAIL_BYTES, MAX_FAIL_MESSAGE, MAX_MESSAGE_BYTES,  # noqa: F401
                       _HEADER, _describe, _fail, _failure, _json, _result)
from ._socket import Endpoints
from ._threads import _Loop, _Pool
from .errors import ActivityError
from .tools import Tool
from .types import DEFAULT_WORKER_ENDPOINT

__all__ = ["Worker", "Task", "Handler"]

log = logging.getLogger("actd.worker")

#: What actd takes in ``READY`` (docs/protocol.md section 3.2): a worker
#: outside these bounds is refused at declaration, not with a DISCONNECT.
MAX_CAPACITY = 100000
MAX_ACTIVITY_BYTES = 256
MAX_NAME_BYTES = 256

#: Seconds the worker waits before it connects again after a
#: ``DISCONNECT``: the first, doubled each time the broker sends it again
#: before the connection stayed up (a task came, or a heartbeat interval
#: passed), up to the last. A ``READY`` the broker refuses (a schema keyword
#: it does not implement, say) is then not sent again in a tight loop.
RECONNECT_FIRST = 0.1
RECONNECT_LAST = 5.0

#: An activity handler: ``handler(params, task) -> result``, or a coroutine
#: function (``async def``). Return a JSON-serialisable value (branch 0),
#: or :class:`actd.Branch` to name the alternative; raise
#: :class:`actd.ActivityError` (or any exception) to fail.
Handler = Callable[[Dict[str, Any], "Task"], Any]


def _meta_integer(meta: Dict[str, Any], key: str, default: Optional[int]) -> Any:
    """``meta[key]``, an integer (``default`` when absent; null too when
    that is None); ``ValueError`` for anything else, which the worker
    answers as a task that does not parse."""
    value = meta.get(key, default)
    if value is None and default is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("%s is not an integer: %r" % (key, value))
    return value


class Task:
    """One task the broker gave this worker: an attempt of one call.

    ``params`` are the call's parameters with every reference resolved.
    The other attributes come from the ``TASK`` meta: ``context``,
    ``call_id``, ``attempt``, ``deadline_ms`` (how long this attempt may
    run, counted from ``received``), ``instance`` (None in the global
    scope), ``branches`` (alternatives in the output path; 0 when there is
    none), ``discard`` (True for a fire-and-forget call, whose result
    actd throws away) and ``trace`` (the call's ``_trace``, a W3C
    ``traceparent`` string, or None). ``meta`` is the whole meta object.

    Handlers run in pool threads and may call :meth:`progress` and read
    :attr:`cancelled` at any time.
    """

    def __init__(self, worker: "Worker", generation: int, task_id: str, activity: str,
                 params: Any, meta: Dict[str, Any]) -> None:
        """Create a task as received (the worker does this, not handlers);
        ``ValueError`` when a meta field has the wrong type."""
        self._worker = worker
        self._generation = generation
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._finished = False
        self._abandoned = False
        self._started = False           # Its handler was called
        self.id: str = task_id
        self.activity: str = activity
        self.params: Any = params
        self.meta: Dict[str, Any] = meta
        self.context: str = str(meta.get("context", ""))
        self.call_id: str = str(meta.get("call_id", ""))
        self.attempt: int = _meta_integer(meta, "attempt", 1)
        self.deadline_ms: Optional[int] = _meta_integer(meta, "deadline_ms", None)
        self.instance: Optional[str] = meta.get("instance")
        if self.instance is not None and not isinstance(self.instance, str):
            raise ValueError("instance is not a string: %r" % (self.instance,))
        self.branches: int = _meta_integer(meta, "branches", 0)
        self.discard: bool = bool(meta.get("discard", False))
        trace = meta.get("trace")
        self.trace: Optional[str] = trace if isinstance(trace, str) else None
        self.received: float = time.monotonic()

    @property
    def cancelled(self) -> bool:
        """True once the broker sent ``CANCEL`` for this task (a client
        cancelled the call, or its ``_timeout`` passed), or the worker lost
        its broker connection (the broker then runs the call again). The
        handler should stop soon; whatever it returns is still sent, to free
        the worker's slot, and the broker drops it."""
        return self._cancel.is_set()

    def wait_cancelled(self, timeout: Optional[float] = None) -> bool:
        """Block up to ``timeout`` seconds (None: no limit) until the task
        is cancelled; returns :attr:`cancelled`. Handy as an interruptible
        sleep: ``if task.wait_cancelled(5): return``."""
        return self._cancel.wait(timeout)

    def remaining(self) -> Optional[float]:
        """Seconds left before the attempt's deadline (negative once past),
        or None when the meta has no deadline."""
        if self.deadline_ms is None:
            return None
        return self.received + self.deadline_ms / 1000.0 - time.monotonic()

    def progress(self, details: Any) -> bool:
        """Report progress: sends ``PROGRESS`` with ``details`` (any JSON
        value), which ``STATUS`` shows as the call's ``progress``. Callable
        from the handler's thread. Returns False (and sends nothing) once the
        task has been answered or its connection was lost, or when the
        details are over the worker's ``max_message_bytes`` (logged at
        warning). Each lone surrogate of a string or key is sent as "?", as
        a failure's is."""
        body = _json(details, "replace")
        limit = self._worker.max_message_bytes
        if len(body) > limit:
            # actd would ignore it, and past 4 x limit + 65536 drop the
            # connection, and with it every task of the worker
            log.warning("worker %s: task %s (%s): progress of %d bytes, over "
                        "max_message_bytes (%d), not sent", self._worker.name, self.id,
                        self.activity, len(body), limit)
            return False
        with self._lock:
            if self._finished or self._abandoned:
                return False
            self._worker._post(self._generation, self.id,
                               [_HEADER, b"PROGRESS", self.id.encode(), body], False)
        return True

    def _finish(self, frames: List[bytes]) -> None:
        """Send the task's answer (RESULT or FAIL) once; later calls do nothing."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
            if not self._abandoned:
                self._worker._post(self._generation, self.id, frames, True)

    def _abandon(self, pool: Optional[_Pool] = None) -> None:
        """The connection that brought the task is gone: nothing more is
        sent. A handler still running gets its thread replaced in pool (under
        the task's lock, so that its thread, past _finish, sees it)."""
        with self._lock:
            self._abandoned = True
            if pool is not None and self._started and not self._finished:
                pool.replace(self)
        self._cancel.set()

    def __repr__(self) -> str:
        """``Task(id, activity)``."""
        return "Task(%r, %r)" % (self.id, self.activity)


class _Link:
    """The connection to one broker: its socket (a new one, with a new
    generation number, at each reconnection), the tasks it brought, and when
    something last came and went."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.socket: Optional[zmq.Socket] = None
        self.generation = 0
        self.tasks: Dict[str, Task] = {}
        self.heard = 0.0
        self.sent = 0.0
        self.connected = 0.0                # When READY went on this socket
        self.tasked = False                 # A TASK came on this socket
        self.backoff = 0.0                  # The last wait after a DISCONNECT
        self.connect_at = 0.0               # Without a socket: when to connect again

    def due(self, interval: float, liveness: int) -> float:
        """When the socket thread has something to do for this broker:
        connect again, send a heartbeat, or give the broker up."""
        if self.socket is None:
            return self.connect_at
        return min(self.sent + interval, self.heard + interval * liveness)


class Worker:
    """A worker that serves activities to actd.

    ::

        worker = actd.Worker("tcp://127.0.0.1:5556", capacity=4)

        @worker.activity
        def upper(params, task):
            return params["text"].upper()

        @worker.activity("summarize")
        async def summarize(params, task):
            return await some_llm(params["text"])

        worker.run()        # until SIGINT/SIGTERM or worker.stop()

    ``endpoints`` is the broker's worker endpoint, or a list of the worker
    endpoints of brokers sharing one store (or the same comma-separated):
    the worker then connects to each (one socket, ``READY``, heartbeats
    and reconnections per broker) and answers each task on the connection
    it came from. By default ``$ACTD_WORKER_ENDPOINT``, else
    ``tcp://127.0.0.1:5556``; ``endpoint=`` is its deprecated old name.
    ``curve_server`` (the broker's public key, Z85) and ``curve_cert``
    (this worker's certificate file, from ``actctl keygen``) turn CURVE
    on; they default to ``$ACTD_SERVER_KEY`` and ``$ACTD_CERT``.

    ``capacity`` (1 to 100000) is the number of tasks run at once per
    broker connection (each in its own pool thread, coroutines on the
    worker's event loop; a broker never sends more): each broker
    is told this capacity in ``READY``, so with several brokers the worker
    may run up to ``capacity`` tasks for each of them at the same time.
    ``heartbeat_ms`` and ``liveness``
    should match the broker's settings (PROTOCOL.md section 2): the worker
    sends ``HEARTBEAT`` when it has sent nothing else for ``heartbeat_ms``,
    and a broker silent for ``liveness`` intervals is taken as gone: the
    worker then connects with a new socket and sends ``READY`` again (as it
    does when the broker sends ``DISCONNECT``, after a wait that doubles
    while the broker keeps refusing the ``READY``). Tasks of a lost connection
    are marked cancelled and their results dropped; the broker runs them
    again. On stop, running handlers get up to ``grace`` seconds to finish
    and answer (tasks the broker sends meanwhile run too), then the worker
    sends ``DISCONNECT`` and returns.

    ``name`` (default ``python-<host>-<pid>``, up to 256 bytes) and
    ``lang`` ``"python"`` are sent in ``READY`` and shown by ``STATS``.
    What actd would refuse in ``READY`` (docs/protocol.md section 3.2) is a
    ``ValueError`` here and in :meth:`add_activity`.

    ``max_message_bytes`` is actd's (default 1 MiB): set it to actd's when
    actd's is raised. The worker sends no answer over it: a result over it
    fails the attempt (``activity_failed``, not retried; a fire-and-forget
    call's is sent as ``null``), a failure is cut to fit, progress is not
    sent. Past ``4 × max_message_bytes + 65536`` bytes actd would drop the
    connection, and every task running on it would fail ``worker_lost``.
    """

    def __init__(self, endpoints: Optional[Endpoints] = None, *,
                 capacity: int = 1, name: Optional[str] = None, heartbeat_ms: int = 1000,
                 liveness: int = 3, grace: float = 5.0,
                 curve_server: Optional[str] = None, curve_cert: Optional[str] = None,
                 context: Optional[zmq.Context] = None,
                 endpoint: Optional[Endpoints] = None,
                 max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        """Create a worker for the brokers' worker endpoints (nothing is
        connected until :meth:`run`)."""
        if isinstance(capacity, bool) or not isinstance(capacity, int) \
                or not 1 <= capacity <= MAX_CAPACITY:
            raise ValueError("capacity is an integer from 1 to %d" % MAX_CAPACITY)
        if name is not None and (not isinstance(name, str)
                                 or len(name.encode("utf-8")) > MAX_NAME_BYTES):
            raise ValueError("a worker's name is a string of up to %d bytes" % MAX_NAME_BYTES)
        if heartbeat_ms < 1 or liveness < 1:
            raise ValueError("heartbeat_ms and liveness must be positive")
        if isinstance(max_message_bytes, bool) or not isinstance(max_message_bytes, int) \
                or max_message_bytes < 1:
            raise ValueError("max_message_bytes is a positive integer")
        #: The worker endpoints of the brokers, in the order given.
        self.endpoints: List[str] = _socket.endpoints_option(
            endpoints, endpoint, _socket.WORKER_ENDPOINT_VARIABLE, DEFAULT_WORKER_ENDPOINT)
        #: The first of them.
        self.endpoint: str = self.endpoints[0]
        self.capacity: int = capacity
        self.name: str = name or "python-%s-%d" % (socket.gethostname(), os.getpid())
        self.heartbeat_ms: int = heartbeat_ms
        self.liveness: int = liveness
        self.grace: float = grace
        #: No RESULT, FAIL or PROGRESS body over this many bytes is sent.
        self.max_message_bytes: int = max_message_bytes
        self._curve = _socket.curve_option(curve_server, curve_cert)
        self._context = context or zmq.Context.instance()
        self._loop: Optional[_Loop] = None
        self._handlers: Dict[str, Tool] = {}
        self._lock = threading.Lock()
        self._outbox: Deque[Tuple[int, str, List[bytes], bool]] = collections.deque()
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._wake_reader.setblocking(False)
        self._wake_writer.setblocking(False)
        self._stop_requested = False
        self._running = False
        self._generation = 0
        self._connections = 0
        self._links: List[_Link] = []
        self._poller: Optional[zmq.Poller] = None
        self._pool: Optional[_Pool] = None      # Runs the handlers, while run() serves
        self._thread: Optional[threading.Thread] = None

    # -- registration ---------------------------------------------------

    def activity(self, name: Union[str, Handler, None] = None, *,
                 description: Optional[str] = None, params: Optional[Dict[str, Any]] = None,
                 output_path: Union[str, Dict[str, str], None] = None) -> Any:
        """Decorator registering a handler for activity ``name``:
        ``@worker.activity("name", description=..., params=..., output_path=...)``,
        or bare ``@worker.activity`` for the function's name. Returns the
        function unchanged. The options declare the activity's tool (see
        :meth:`add_activity`)."""
        if callable(name):
            self.add_activity(name.__name__, name)
            return name

        def register(handler: Handler) -> Handler:
            self.add_activity(name or handler.__name__, handler, description=description,
                              params=params, output_path=output_path)
            return handler
        return register

    def add_activity(self, name: str, handler: Callable[..., Any], *,
                     description: Optional[str] = None,
                     params: Optional[Dict[str, Any]] = None,
                     output_path: Union[str, Dict[str, str], None] = None) -> None:
        """Register a handler for activity ``name`` (before :meth:`run`:
        ``READY`` lists the activities and declares their tools, PROTOCOL.md
        section 2.1).

        ``handler(params, task)`` takes the params object. A handler whose
        parameters are all annotated (``def weather(city: str, days: int =
        3)``) takes them as keyword arguments, and one whose only parameter
        is a dataclass takes an instance of it (a parameter annotated
        :class:`Task`, or an unannotated ``task``, gets the task): its
        ``params`` schema is then derived from the annotations (see
        :mod:`actd.tools`). ``params`` (a JSON Schema) overrides it;
        ``description`` defaults to the docstring; ``output_path``
        prescribes the call's ``_outputPath`` (a str, or ``{"const": ...}``)
        or constrains it (``{"pattern": regex}``)."""
        if not isinstance(name, str) or not 1 <= len(name.encode("utf-8")) <= MAX_ACTIVITY_BYTES:
            raise ValueError("an activity name is a string of 1 to %d bytes" % MAX_ACTIVITY_BYTES)
        if self._running:
            raise RuntimeError("register activities before run()")
        self._handlers[name] = Tool(handler, description, params, output_path)

    def tools(self) -> Dict[str, Dict[str, Any]]:
        """What ``READY`` declares: ``{"<activity>": {"description"?,
        "params"?, "outputPath"?}}`` for the activities that have any."""
        tools = {}
        for name, tool in self._handlers.items():
            entry = tool.declaration()
            if entry is not None:
                tools[name] = entry
        return tools

    @property
    def activities(self) -> List[str]:
        """The registered activity names, in registration order."""
        return list(self._handlers)

    @property
    def connections(self) -> int:
        """How many times the worker has sent ``READY``, to all its brokers
        (one per broker, plus one per reconnection)."""
        return self._connections

    @property
    def running(self) -> bool:
        """True while :meth:`run` is serving."""
        return self._running

    # -- life cycle -----------------------------------------------------

    def run(self) -> None:
        """Serve until :meth:`stop`, SIGINT or SIGTERM (signal handlers are
        installed only when called from the main thread, and restored on
        return). Blocks the calling thread."""
        if not self._handlers:
            raise RuntimeError("no activity registered")
        with self._lock:
            if self._running:
                raise RuntimeError("the worker is already running")
            self._running = True
        previous = self._install_signals()
        # Each broker may send capacity tasks
        pool = _Pool(self.capacity * len(self.endpoints), self._execute)
        try:
            self._pool = pool
            self._serve(pool)
        finally:
            pool.shutdown()
            self._pool = None
            with self._lock:
                loop, self._loop = self._loop, None
            if loop is not None:
                loop.close(self.grace)
            self._restore_signals(previous)
            with self._lock:
                self._running = False
                self._stop_requested = False

    def start(self) -> threading.Thread:
        """Run the worker in a background (daemon) thread; returns it. Stop
        with :meth:`stop`."""
        if not self._handlers:
            raise RuntimeError("no activity registered")
        thread = threading.Thread(target=self.run, name="actd-worker", daemon=True)
        self._thread = thread
        thread.start()
        return thread

    def stop(self, wait: bool = False, timeout: Optional[float] = None) -> None:
        """Ask the worker to stop (from any thread or a signal handler):
        running handlers get ``grace`` seconds, then ``DISCONNECT`` is sent.
        With ``wait``, also join the thread started by :meth:`start`."""
        self._stop_requested = True
        self._wake()
        if wait and self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def close(self) -> None:
        """Release the worker's wake-up channel (after :meth:`run` has returned)."""
        self._wake_reader.close()
        self._wake_writer.close()

    # -- signals ----------------------------------------------------------

    def _install_signals(self) -> Dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: Dict[int, Any] = {}
        for number in (signal.SIGINT, signal.SIGTERM):
            previous[number] = signal.signal(number, self._on_signal)
        return previous

    def _restore_signals(self, previous: Dict[int, Any]) -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)

    def _on_signal(self, number: int, frame: Any) -> None:
        log.info("worker %s: signal %d, stopping", self.name, number)
        self.stop()

    # -- the socket thread ------------------------------------------------

    def _wake(self) -> None:
        try:
            self._wake_writer.send(b"x")
        except (BlockingIOError, OSError):
            pass                # Already awake (buffer full), or closed

    def _post(self, generation: int, task_id: str, frames: List[bytes], final: bool) -> None:
        """Queue a message for the socket thread (called from handler threads)."""
        self._outbox.append((generation, task_id, frames, final))
        self._wake()

    def _serve(self, pool: _Pool) -> None:
        interval = self.heartbeat_ms / 1000.0
        poller = zmq.Poller()
        poller.register(self._wake_reader, zmq.POLLIN)
        self._poller = poller
        self._links = [_Link(endpoint) for endpoint in self.endpoints]
        for link in self._links:
            self._connect(link)
        draining_until: Optional[float] = None
        try:
            while True:
                now = time.monotonic()
                if self._stop_requested and draining_until is None:
                    draining_until = now + self.grace
                    log.info("worker %s stopping: %d task(s) running", self.name,
                             sum(len(link.tasks) for link in self._links))
                if draining_until is not None and (not self._started_tasks()
                                                   or now >= draining_until):
                    break
                wake_at = min(link.due(interval, self.liveness) for link in self._links)
                if draining_until is not None:
                    wake_at = min(wake_at, draining_until)
                events = dict(poller.poll(max(0.0, wake_at - now) * 1000.0))
                if self._wake_reader in events or self._wake_reader.fileno() in events:
                    self._drain_wake()
                for link in self._links:
                    if link.socket is not None and link.socket in events:
                        self._receive(link, pool)
                self._flush()
                now = time.monotonic()
                for link in self._links:
                    if link.socket is None:         # Waiting after a DISCONNECT
                        if now >= link.connect_at and draining_until is None:
                            self._connect(link)
                    elif now - link.heard > interval * self.liveness:
                        self._reconnect(link, "the broker has been silent for %d heartbeats"
                                        % self.liveness)
                    elif now - link.sent >= interval:
                        self._send(link, [_HEADER, b"HEARTBEAT"])
        finally:
            self._shutdown()

    def _started_tasks(self) -> int:
        return sum(1 for link in self._links for task in link.tasks.values()
                   if not task._finished)

    def _connect(self, link: _Link) -> None:
        sock = _socket.dealer(self._context, link.endpoint, self._curve)
        assert self._poller is not None
        self._poller.register(sock, zmq.POLLIN)
        self._generation += 1
        link.generation = self._generation
        link.socket = sock
        self._connections += 1
        link.heard = link.connected = time.monotonic()
        link.tasked = False
        ready: Dict[str, Any] = {"activities": self.activities, "capacity": self.capacity,
                                 "name": self.name, "lang": "python"}
        tools = self.tools()
        if tools:
            ready["tools"] = tools
        self._send(link, [_HEADER, b"READY", _json(ready)])
        log.info("worker %s: READY to %s for %s (capacity %d)", self.name, link.endpoint,
                 ", ".join(self.activities), self.capacity)

    def _reconnect(self, link: _Link, reason: str, delay: float = 0.0) -> None:
        """Drop the link's socket and its tasks; connect again at once, or
        in ``delay`` seconds (the serve loop does it)."""
        log.warning("worker %s: %s: %s; connecting again%s", self.name, link.endpoint, reason,
                    " in %.1f s" % delay if delay else "")
        self._close_socket(link)
        tasks, link.tasks = link.tasks, {}
        for task in tasks.values():
            task._abandon(self._pool)
        # What handlers queued for the old connection is dropped by _flush
        # (a new connection has a new generation)
        if delay:
            link.connect_at = time.monotonic() + delay
        else:
            self._connect(link)

    def _disconnected(self, link: _Link, reason: str) -> None:
        """The broker sent ``DISCONNECT``: connect again after a wait that
        starts at RECONNECT_FIRST and doubles while the broker keeps
        sending it before the connection stayed up (it refuses the
        ``READY``: the reason, logged each time, says why)."""
        interval = self.heartbeat_ms / 1000.0
        if link.tasked or time.monotonic() - link.connected >= interval:
            link.backoff = RECONNECT_FIRST
        else:
            link.backoff = min(max(link.backoff * 2, RECONNECT_FIRST), RECONNECT_LAST)
        self._reconnect(link, "the broker sent DISCONNECT (%s)" % (reason or "no reason"),
                        link.backoff)

    def _close_socket(self, link: _Link, linger: int = 0) -> None:
        if link.socket is not None:
            if self._poller is not None:
                self._poller.unregister(link.socket)
            link.socket.close(linger)
            link.socket = None

    def _shutdown(self) -> None:
        self._flush()           # Answers posted since the last pass
        for link in self._links:
            if link.socket is not None:
                self._send(link, [_HEADER, b"DISCONNECT"])
                # Give DISCONNECT a moment to leave; tasks not answered go
                # back to the broker's queue.
                self._close_socket(link, 500)
            for task in link.tasks.values():
                task._abandon()
            link.tasks = {}
        self._poller = None
        self._outbox.clear()
        log.info("worker %s stopped", self.name)

    def _send(self, link: _Link, frames: List[bytes]) -> None:
        assert link.socket is not None
        # Also when the message is dropped: the next heartbeat is tried an
        # interval later, not at once and again in a busy loop
        link.sent = time.monotonic()
        try:
            link.socket.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            # The broker is unreachable and the queue is full, or it refused
            # this worker's CURVE key (the socket then has no pipe): the
            # message is dropped; the liveness check will reconnect.
            log.warning("worker %s: %s to %s dropped (the broker is not reachable, or "
                        "refused this worker's CURVE key)", self.name, frames[1].decode(),
                        link.endpoint)

    def _drain_wake(self) -> None:
        try:
            while self._wake_reader.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _flush(self) -> None:
        while self._outbox:
            generation, task_id, frames, final = self._outbox.popleft()
            for link in self._links:
                if link.generation == generation and link.socket is not None:
                    if final:
                        link.tasks.pop(task_id, None)
                    self._send(link, frames)
                    break
            # Else for a connection that is gone: dropped

    def _receive(self, link: _Link, pool: _Pool) -> None:
        while link.socket is not None:
            try:
                frames = link.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            link.heard = time.monotonic()
            if len(frames) < 2 or frames[0] != _HEADER:
                log.warning("worker %s: a message that is not ACT/1 dropped", self.name)
                continue
            command = frames[1]
            if command == b"TASK":
                self._on_task(link, frames[2:], pool)
            elif command == b"CANCEL" and len(frames) >= 3:
                task = link.tasks.get(frames[2].decode("utf-8", "replace"))
                if task is not None:
                    log.info("worker %s: task %s cancelled", self.name, task.id)
                    task._cancel.set()
            elif command == b"HEARTBEAT":
                pass
            elif command == b"DISCONNECT":
                reason = frames[2].decode("utf-8", "replace") if len(frames) > 2 else ""
                self._disconnected(link, reason)
                return          # The old socket is closed
            else:
                log.warning("worker %s: unknown command %r dropped", self.name, command)

    def _on_task(self, link: _Link, args: List[bytes], pool: _Pool) -> None:
        """Run a TASK, also one that comes while the worker stops: the broker
        sends tasks while the worker has free slots, until its DISCONNECT,
        and one not answered then fails worker_lost, an attempt spent. So it
        runs within what is left of the grace, as those running do."""
        if len(args) != 4:
            self._misframed(link, args)
            return
        task_id = args[0].decode("utf-8", "replace")
        activity = args[1].decode("utf-8", "replace")
        link.tasked = True          # The broker took this connection's READY
        try:
            params = json.loads(args[2])
            meta = json.loads(args[3])
            if not isinstance(meta, dict):
                raise ValueError("the meta is not an object")
            # A meta field of the wrong type ("attempt": null) is as
            # unreadable as bad JSON: answered, not a crash of this thread
            task = Task(self, link.generation, task_id, activity, params, meta)
        except (TypeError, ValueError) as error:
            self._send(link, _fail(task_id.encode(), "the task does not parse: %s" % error,
                                   "bad_task", False))
            return
        if activity not in self._handlers:
            self._send(link, _fail(task_id.encode(), "this worker has no activity %s"
                                   % activity, "unknown_activity", True))
            return
        link.tasks[task_id] = task
        pool.submit(task)

    def _misframed(self, link: _Link, args: List[bytes]) -> None:
        """Answer a TASK of other than 4 frames FAIL bad_task, not retried,
        when it has a task id to answer; drop one without."""
        if not args:
            log.warning("worker %s: a TASK of 0 frames dropped", self.name)
            return
        # Dropped, it would hold a slot at the broker until the worker is
        # declared dead
        log.warning("worker %s: a TASK of %d frames answered bad_task", self.name, len(args))
        link.tasked = True
        self._send(link, _fail(args[0], "a TASK of %d frames, not 4 (task id, activity, "
                               "params, meta)" % len(args), "bad_task", False))

    # -- handler threads --------------------------------------------------

    def _event_loop(self) -> _Loop:
        """The loop coroutine handlers run on, started when first needed."""
        with self._lock:
            if self._loop is None:
                self._loop = _Loop()
            return self._loop

    def _execute(self, task: Task) -> None:
        """Run one task's handler in a pool thread and post its answer."""
        with task._lock:
            if task._abandoned:
                return
            task._started = True
        frames: Optional[List[bytes]] = None
        try:
            value = self._handlers[task.activity].call(task.params, task)
            if inspect.isawaitable(value):
                value = self._event_loop().run(value)
            frames = _result(task, value, self.max_message_bytes, self.name)
        except ActivityError as error:
            frames = _failure(task, error.body(), self.max_message_bytes)
        except Exception as error:  # noqa: BLE001 - any failure of a handler is a FAIL
            log.warning("worker %s: task %s (%s) failed", self.name, task.id, task.activity,
                        exc_info=True)
            frames = _failure(task, {"message": _describe(error), "code": "activity_failed",
                                     "retryable": True}, self.max_message_bytes)
        finally:
            if frames is None:
                # A BaseException (SystemExit, ...): still free the slot
                frames = _fail(task.id.encode(), "the handler was interrupted",
                               "activity_failed", True)
            task._finish(frames)
