"""Integration test harness: a real actd on free ports with a temporary
store, and raw ACT/1 clients and workers written from PROTOCOL.md (they do
not use the project's client libraries, so they check the wire protocol
itself).

Run with Debian's /usr/bin/python3 (python3-zmq). The actd binary comes
from $ACTD_BIN (set by ctest), else build-asan/bin/actd, else build/bin/actd.
"""

import json
import os
import queue
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import unittest

import zmq

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DAGGER = "\u2020"

#  The store the tests run actd on: "sqlite" (a file per actd), or with
#  ACTD_TEST_STORE=postgres a fresh database per actd on a private
#  PostgreSQL server (tests/integration/pg.py)
STORE = os.environ.get("ACTD_TEST_STORE", "sqlite")


def find_binary(name):
    """Path of a built program: $ACTD_BIN's folder first, then the build trees."""
    here = os.environ.get("ACTD_BIN")
    candidates = []
    if here:
        candidates.append(os.path.join(os.path.dirname(here), name))
    candidates += [os.path.join(ROOT, "build-asan", "bin", name),
                   os.path.join(ROOT, "build", "bin", name)]
    for path in candidates:
        if os.path.exists(path):
            return path
    raise RuntimeError("cannot find %s; build the project first" % name)


def node_problem():
    """Why Node.js workers and clients (workers/node) cannot run here, or
    None. Tests that need them fail with it, never skip: ctest runs them
    after the node_modules fixture."""
    if not shutil.which("node"):
        return ("node is not installed: this test needs Node.js 20 or later "
                "(apt-get install nodejs npm), then `npm ci` in workers/node")
    if not os.path.isdir(os.path.join(ROOT, "workers", "node", "node_modules", "zeromq")):
        return ("workers/node/node_modules/zeromq is missing: run `npm ci` in workers/node "
                "(or workers/node/run-tests.sh once)")
    return None


def s_ephemeral_low():
    """The lowest port the kernel hands out to outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


_TAKEN = set()


def free_port():
    """A TCP port nothing listens on right now, below the kernel's ephemeral
    range. A port the kernel gave us from port 0 lies inside that range, so
    any test's outgoing connection (ctest runs two files at once) may take
    it before actd binds it: seen in CI as 'Address already in use'. Ports
    below the range are taken only by a listener, and the bind probe sees
    those; the random pick keeps two files from probing the same one."""
    low = s_ephemeral_low()
    for _ in range(200) if low > 12000 else ():
        port = random.randint(10000, low - 1)
        if port in _TAKEN:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _TAKEN.add(port)
        return port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


#  The directories scratch_dir made in this process and remove_scratch has
#  not removed yet, each with where it was made. Runs used to leave
#  hundreds in /tmp; now what a test module leaves is named at its end, and
#  that end fails (check_scratch). Only this process's own directories are
#  looked at: ctest runs several test files at once.
_scratch = {}
_scratch_check_due = False


def scratch_dir(prefix):
    """A new directory under $TMPDIR; the test must remove_scratch it."""
    global _scratch_check_due
    path = tempfile.mkdtemp(prefix=prefix)
    caller = next((frame for frame in reversed(traceback.extract_stack()[:-1])
                   if os.path.basename(frame.filename) != "harness.py"), None)
    _scratch[path] = "%s:%d" % (os.path.basename(caller.filename), caller.lineno) if caller else "?"
    if not _scratch_check_due:
        #  Runs after the module's tests and tearDownModule, an error there
        #  failing the run; added again for the next module, as unittest
        #  empties its list of module cleanups after each module
        _scratch_check_due = True
        unittest.addModuleCleanup(check_scratch)
    return path


def remove_scratch(path):
    _scratch.pop(path, None)
    shutil.rmtree(path, ignore_errors=True)


def check_scratch():
    """AssertionError naming the directories the module's tests left, once
    (unittest prints it): a test that failed before its cleanup (kept, as
    its actd.log may say why), or a cleanup missing."""
    global _scratch_check_due
    _scratch_check_due = False
    left = sorted(_scratch.items())
    _scratch.clear()
    if left:
        raise AssertionError("the tests left behind (kept, to be looked at):\n" + "".join(
            "    %s (made at %s)\n" % item for item in left))


#  ACTD_TEST_TIME_SCALE stretches the harness's own patience for a slow actd
#  (under valgrind it runs 20-50 times slower): the liveness actd is given,
#  the wait for its first PONG and the wait for it to stop.
TIME_SCALE = max(1.0, float(os.environ.get("ACTD_TEST_TIME_SCALE", "1")))

#  Lines of actd's log a failed test prints (its scratch directory is kept)
LOG_TAIL_LINES = int(os.environ.get("ACTD_TEST_LOG_LINES", "80"))


class Actd:
    """One actd process. Use as a context manager, or call start()/stop().

    The store survives restarts of the same Actd (kill() then start()).
    Its directory (store, actd.log) stays until cleanup() or finish(); one
    that is never called is reported at the end of the test module."""

    def __init__(self, store=None, args=(), heartbeat_ms=200, liveness=3, env=None,
                 preexec=None):
        self.dir = scratch_dir("actd-test-")
        if store is None and STORE == "postgres":
            import pg
            store = pg.database()
        self.store = store or os.path.join(self.dir, "actd.db")
        self.client_port = free_port()
        self.worker_port = free_port()
        self.client_endpoint = "tcp://127.0.0.1:%d" % self.client_port
        self.worker_endpoint = "tcp://127.0.0.1:%d" % self.worker_port
        self.args = list(args)
        self.heartbeat_ms = heartbeat_ms
        self.liveness = liveness
        self.env = env
        self.preexec = preexec  # run in the child before actd (limits, signals)
        self.process = None
        self.log_path = os.path.join(self.dir, "actd.log")
        self.starts = 0

    def start(self, wait=True):
        """Start actd (again) and wait until it answers PING. A first start
        that finds a port taken picks new ones, up to three times: another
        test file's process (ctest runs two at once) may have bound a port
        between free_port's probe and actd's bind, as CI once saw ('cannot
        bind tcp://127.0.0.1:11531: Address already in use'). The log keeps
        each attempt."""
        first = self.starts == 0
        for attempt in range(3):
            try:
                return self._start(wait)
            except RuntimeError as error:
                if (not first or attempt == 2 or not wait
                        or "Address already in use" not in str(error)):
                    raise
                self.client_port, self.worker_port = free_port(), free_port()
                self.client_endpoint = "tcp://127.0.0.1:%d" % self.client_port
                self.worker_endpoint = "tcp://127.0.0.1:%d" % self.worker_port

    def _start(self, wait):
        self.starts += 1
        log = open(self.log_path, "a")
        log.write("---- start %d ----\n" % self.starts)
        log.flush()
        command = [find_binary("actd"), "--db", self.store,
                   "--client-endpoint", self.client_endpoint,
                   "--worker-endpoint", self.worker_endpoint,
                   "--heartbeat-ms", str(self.heartbeat_ms),
                   "--liveness", str(int(self.liveness * TIME_SCALE)),
                   "--log-level", "debug", "-v"] + self.args
        environment = dict(os.environ)
        environment.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        if self.env:
            environment.update(self.env)
        self.process = subprocess.Popen(command, stdout=log, stderr=log, env=environment,
                                        preexec_fn=self.preexec)
        log.close()
        if wait:
            try:
                self.wait_ready()
            except BaseException:
                #  Often in a setUp, which no tearDown follows: an actd that
                #  never answered would run on after the test
                self.kill()
                raise
        return self

    def wait_ready(self, timeout=20.0):
        #  Retries its connection every 10 ms, not libzmq's 100: the PING
        #  sent before actd binds is otherwise answered some 60 ms late on
        #  average, at every one of the suite's actd starts
        client = Client(self.client_endpoint, reconnect_ms=10)
        try:
            deadline = time.time() + timeout * TIME_SCALE
            while time.time() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError("actd exited with %s:\n%s" % (self.process.returncode, self.log()))
                try:
                    if client.request("PING", timeout=0.5)[0] == "PONG":
                        return
                except TimeoutError:
                    pass
            raise RuntimeError("actd did not answer PING:\n" + self.log())
        finally:
            client.close()

    def stop(self, timeout=30.0):
        """SIGTERM; returns the exit code (0 expected: a clean stop, and no
        leak under AddressSanitizer)."""
        if not self.process or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout * TIME_SCALE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise RuntimeError("actd did not stop on SIGTERM:\n" + self.log())

    def kill(self):
        """SIGKILL: a crash."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def log(self):
        with open(self.log_path, errors="replace") as handle:
            return handle.read()

    def client(self, **kwargs):
        return Client(self.client_endpoint, **kwargs)

    def cleanup(self):
        self.kill()
        remove_scratch(self.dir)

    def finish(self):
        """stop() then cleanup(); AssertionError unless actd exited 0 (a
        clean stop, and no leak under AddressSanitizer)."""
        code = self.stop()
        log = self.log()
        self.cleanup()
        if code != 0:
            raise AssertionError("actd exited %s on SIGTERM:\n%s" % (code, log))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        code = self.stop()
        if exc[0] is None and code != 0:
            raise AssertionError("actd exited %s on SIGTERM:\n%s" % (code, self.log()))
        if exc[0] is not None and exc[0] is not unittest.SkipTest:
            #  A failed test keeps its directory (check_scratch names it)
            #  and prints the end of actd's log: in CI the machine, and
            #  with it the directory, is gone when the failure is read
            tail = self.log().splitlines()[-LOG_TAIL_LINES:]
            sys.stderr.write("\n--- the last %d lines of %s ---\n%s\n---\n" % (
                len(tail), self.log_path, "\n".join(tail)))
            return
        self.cleanup()


def actd_with_config(text, **kwargs):
    """An Actd (not started) reading a config file with text."""
    actd = Actd(**kwargs)
    path = os.path.join(actd.dir, "actd.cfg")
    with open(path, "w") as handle:
        handle.write(text)
    actd.args += ["--config", path]
    return actd


class Client:
    """A raw ACT/1 client on a DEALER socket. request() sends one request and
    returns the reply frames after the request id, decoded: e.g.
    ["ACCEPTED", "12"] or ["ERROR", "bad_json", "..."]. Replies to other
    requests that arrive meanwhile (DONE, pipelined replies) are kept and
    can be collected with wait()."""

    _counter = 0

    def __init__(self, endpoint, identity=None, reconnect_ms=None):
        self.context = zmq.Context.instance()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        if identity:
            self.socket.setsockopt(zmq.ROUTING_ID, identity)
        if reconnect_ms is not None:
            self.socket.setsockopt(zmq.RECONNECT_IVL, reconnect_ms)
        self.socket.connect(endpoint)
        self.pending = []          # (request_id, frames) received, not yet taken

    def close(self):
        self.socket.close(0)

    def next_id(self):
        Client._counter += 1
        return "r%d" % Client._counter

    def send(self, command, *args, request_id=None):
        """Send without waiting; returns the request id."""
        request_id = request_id or self.next_id()
        frames = [b"ACTC01", command.encode(), request_id.encode()]
        for arg in args:
            if isinstance(arg, (dict, list)):
                arg = json.dumps(arg)
            frames.append(arg if isinstance(arg, bytes) else str(arg).encode())
        self.socket.send_multipart(frames)
        return request_id

    def send_raw(self, frames):
        self.socket.send_multipart([f if isinstance(f, bytes) else f.encode() for f in frames])

    def _receive(self, timeout):
        if not self.socket.poll(int(timeout * 1000)):
            raise TimeoutError("no reply within %.1f s" % timeout)
        frames = self.socket.recv_multipart()
        assert frames[0] == b"ACTC01", frames
        return frames[2].decode(), [frames[1].decode()] + [f.decode() for f in frames[3:]]

    def wait(self, request_id, verb=None, timeout=10.0):
        """The next reply to request_id (with that verb, if given)."""
        deadline = time.time() + timeout
        while True:
            for index, (rid, frames) in enumerate(self.pending):
                if rid == request_id and (verb is None or frames[0] == verb):
                    del self.pending[index]
                    return frames
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no %s reply to %s" % (verb or "", request_id))
            self.pending.append(self._receive(left))

    def request(self, command, *args, timeout=10.0):
        return self.wait(self.send(command, *args), timeout=timeout)

    def call(self, context, call, wait_done=True, timeout=20.0):
        """CALL; returns (call_id, outcome or None)."""
        rid = self.send("CALL", context, call)
        reply = self.wait(rid, timeout=timeout)
        if reply[0] != "ACCEPTED":
            raise CallRefused(reply)
        outcome = None
        if wait_done and "_outputPath" in call:
            done = self.wait(rid, "DONE", timeout=timeout)
            assert done[1] == reply[1], (done, reply)
            outcome = json.loads(done[2])
        return reply[1], outcome

    def value(self, *args, **kwargs):
        """A VALUE reply's JSON (ERROR raises CallRefused)."""
        reply = self.request(*args, **kwargs)
        if reply[0] != "VALUE":
            raise CallRefused(reply)
        return json.loads(reply[1])

    def resolve(self, context, expression, instance=None):
        args = [context, expression] + ([instance] if instance else [])
        reply = self.request("RESOLVE", *args)
        if reply[0] == "ERROR" and reply[1] == "not_found":
            return Absent
        if reply[0] != "VALUE":
            raise CallRefused(reply)
        return json.loads(reply[1])

    def status(self, call_id):
        return self.value("STATUS", call_id)

    def wait_status(self, call_id, states, timeout=20.0):
        """Poll STATUS until state is one of states; returns the status."""
        deadline = time.time() + timeout
        while True:
            status = self.status(call_id)
            if status["state"] in states:
                return status
            if time.time() > deadline:
                raise TimeoutError("call %s still %s" % (call_id, status))
            time.sleep(0.02)


class _Absent:
    def __repr__(self):
        return "Absent"


Absent = _Absent()


class CallRefused(Exception):
    """An ERROR (or unexpected) reply: args[0] is the reply frames."""

    @property
    def code(self):
        return self.args[0][1] if self.args[0][0] == "ERROR" else None


class Worker(threading.Thread):
    """A raw ACT/1 worker in a thread. handler(activity, params, meta) returns
    a result value, or a tuple ("branch", N, value), or raises Fail, or
    returns NoAnswer to hold the task: the test answers it later with
    send_result(). Set heartbeat=False to stop heartbeating (the socket
    stays open)."""

    def __init__(self, endpoint, activities, handler, capacity=1, name=None,
                 heartbeat_ms=200, delay=0.0, poll_ms=50, curve=None):
        super().__init__(daemon=True)
        self.endpoint = endpoint
        self.curve = curve           # (public, secret, server public) Z85 keys, or None
        self.activities = list(activities)
        self.handler = handler
        self.capacity = capacity
        self.name = name or "worker-%d" % id(self)
        self.heartbeat_ms = heartbeat_ms
        self.heartbeat = True
        self.delay = delay
        self.poll_ms = poll_ms       # longest wait between two looks at outbox
        self.outbox = queue.Queue()  # frames send_result() queued, not sent yet
        self.stopping = False
        self.tasks = []            # (task_id, activity, params, meta) seen
        self.cancels = []          # task ids the broker cancelled
        self.disconnects = 0
        self.ready = threading.Event()

    def _connect(self, context):
        socket = context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        if self.curve:
            socket.curve_publickey, socket.curve_secretkey, socket.curve_serverkey = (
                key.encode() for key in self.curve)
        socket.connect(self.endpoint)
        self._ready(socket)
        return socket

    def run(self):
        context = zmq.Context.instance()
        socket = self._connect(context)
        last = time.time()
        while not self.stopping:
            while True:
                try:
                    socket.send_multipart(self.outbox.get_nowait())
                except queue.Empty:
                    break
            if socket.poll(self.poll_ms):
                frames = socket.recv_multipart()
                command = frames[1]
                if command == b"TASK":
                    task, activity = frames[2].decode(), frames[3].decode()
                    params, meta = json.loads(frames[4]), json.loads(frames[5])
                    self.tasks.append((task, activity, params, meta))
                    if self.delay:
                        time.sleep(self.delay)
                    self._answer(socket, task, activity, params, meta)
                elif command == b"CANCEL":
                    self.cancels.append(frames[2].decode())
                elif command == b"DISCONNECT":
                    self.disconnects += 1
                    socket.close(0)
                    socket = self._connect(context)
            if self.heartbeat and time.time() - last > self.heartbeat_ms / 1000.0:
                socket.send_multipart([b"ACTW01", b"HEARTBEAT"])
                last = time.time()
        socket.send_multipart([b"ACTW01", b"DISCONNECT"])
        socket.close(0)

    def _ready(self, socket):
        socket.send_multipart([b"ACTW01", b"READY", json.dumps(
            {"activities": self.activities, "capacity": self.capacity,
             "name": self.name, "lang": "python-test"}).encode()])
        self.ready.set()

    def _answer(self, socket, task, activity, params, meta):
        try:
            result = self.handler(activity, params, meta)
        except Fail as failure:
            socket.send_multipart([b"ACTW01", b"FAIL", task.encode(),
                                   json.dumps(failure.body).encode()])
            return
        if result is NoAnswer:
            return
        frames = [b"ACTW01", b"RESULT", task.encode()]
        if isinstance(result, tuple) and result and result[0] == "branch":
            frames += [json.dumps(result[2]).encode(), str(result[1]).encode()]
        else:
            frames.append(json.dumps(result).encode())
        socket.send_multipart(frames)

    def send_result(self, task, value, branch=None):
        """RESULT for task, from any thread: queued, and sent by the worker's
        own thread (a ZeroMQ socket belongs to one thread)."""
        frames = [b"ACTW01", b"RESULT", task.encode(), json.dumps(value).encode()]
        if branch is not None:
            frames.append(str(branch).encode())
        self.outbox.put(frames)

    def stop(self):
        self.stopping = True
        self.join(5)


class Fail(Exception):
    """Raise in a Worker handler to answer FAIL with this error object."""

    def __init__(self, message, code=None, retryable=True, **extra):
        super().__init__(message)
        self.body = dict(extra, message=message)
        if code:
            self.body["code"] = code
        self.body["retryable"] = retryable


NoAnswer = object()   # return from a handler to send nothing (a hung task)


def abandon(actd, sockets):
    """After a failed setUp, which tearDown does not follow: close the
    test's sockets, stop actd (left running, it would load the machine for
    the tests after) and remove its files."""
    for sock in sockets:
        sock.close(0)
    actd.stop()
    actd.cleanup()


def end_process(process, grace=10.0):
    """SIGTERM a child process, then SIGKILL it if it is still there after
    grace seconds; safe on one that has ended."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_for(predicate, what, timeout=30.0):
    """Poll predicate every 20 ms until it returns something true; returns
    that. AssertionError after timeout seconds."""
    deadline = time.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.02)


def seed_call(tool, output=None, **params):
    """A call dict: seed_call("t", "†state.x", a=1)."""
    call = {"_tool": tool}
    if output:
        call["_outputPath"] = output
    call.update(params)
    return call
