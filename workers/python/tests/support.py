"""Shared test support: the package from this source tree, the project's
integration harness (its Actd class starts a real actd on free ports with a
temporary store), a Python Worker running in a thread, and a scripted
broker (FakeBroker) for the client's tests.

Run the suite with Debian's /usr/bin/python3 (python3-zmq):

    ACTD_BIN=build/bin/actd /usr/bin/python3 -m unittest discover -s workers/python/tests -v
"""

import contextlib
import os
import sys
import threading
import time
import unittest
from typing import Any, Callable, Dict, Iterator, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)                    # workers/python
PROJECT_ROOT = os.path.dirname(os.path.dirname(PACKAGE_ROOT))
HARNESS_DIR = os.path.join(PROJECT_ROOT, "tests", "integration")

for folder in (PACKAGE_ROOT, HARNESS_DIR):
    if folder not in sys.path:
        sys.path.insert(0, folder)

import zmq  # noqa: E402

import actd  # noqa: E402
from harness import Actd  # noqa: E402,F401

#: Generous: the machine is shared, and actd may run under AddressSanitizer.
TIMEOUT = 30.0


def wait_until(predicate: Callable[[], Any], timeout: float = TIMEOUT,
               what: str = "condition") -> Any:
    """Poll predicate until it returns something true; returns that."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s" % what)
        time.sleep(0.02)


def listed_worker(client: actd.Client, name: str) -> Optional[Dict[str, Any]]:
    """The STATS entry of the worker named name, if the broker lists it."""
    for worker in client.stats()["workers"]:
        if worker.get("name") == name:
            return worker
    return None


def make_worker(broker: Actd, activities: Dict[str, Callable[..., Any]], name: str,
                capacity: int = 1) -> actd.Worker:
    """A Worker for broker, with the broker's heartbeat settings."""
    worker = actd.Worker(broker.worker_endpoint, capacity=capacity, name=name,
                         heartbeat_ms=broker.heartbeat_ms, liveness=broker.liveness)
    for activity, handler in activities.items():
        worker.add_activity(activity, handler)
    return worker


@contextlib.contextmanager
def serving(broker: Actd, client: actd.Client, activities: Dict[str, Callable[..., Any]],
            name: str, capacity: int = 1) -> Iterator[actd.Worker]:
    """Run a Worker in a thread until the block ends; yields once the broker
    lists it (so calls made in the block find it)."""
    with running(client, make_worker(broker, activities, name, capacity)) as worker:
        yield worker


@contextlib.contextmanager
def running(client: actd.Client, worker: actd.Worker) -> Iterator[actd.Worker]:
    """Run worker in a thread until the block ends; yields once the broker
    that client asks lists it."""
    thread = worker.start()
    try:
        wait_until(lambda: listed_worker(client, worker.name),
                   what="worker %s registered" % worker.name)
        yield worker
    finally:
        worker.stop(wait=True, timeout=TIMEOUT)
        worker.close()
        if thread.is_alive():
            raise AssertionError("worker %s did not stop" % worker.name)


class Gate:
    """A handler's rendezvous with the test: the handler calls enter() and
    blocks until the test calls release()."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()

    def enter(self) -> None:
        self.entered.set()
        if not self.released.wait(TIMEOUT):
            raise RuntimeError("the test never released the gate")

    def release(self) -> None:
        self.released.set()


class BrokerTest(unittest.TestCase):
    """A test class with one actd (``broker``), a Client (``client``) and a
    Python worker named ``worker_name`` serving "upper", "echo" and "gate"
    (which waits at ``gate``, a new :class:`Gate` for each test)."""

    worker_name = "test-worker"
    gate: Gate

    @classmethod
    def setUpClass(cls) -> None:
        cls.broker = Actd()
        cls.broker.__enter__()
        cls.client = actd.Client(cls.broker.client_endpoint, timeout=TIMEOUT)

        def upper(params: Dict[str, Any], task: actd.Task) -> str:
            return str(params["text"]).upper()

        def echo(params: Dict[str, Any], task: actd.Task) -> Any:
            return params

        def gate(params: Dict[str, Any], task: actd.Task) -> Any:
            cls.gate.enter()
            return params.get("value")

        cls.serving = serving(cls.broker, cls.client,
                              {"upper": upper, "echo": echo, "gate": gate},
                              cls.worker_name, capacity=4)
        cls.worker = cls.serving.__enter__()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.serving.__exit__(None, None, None)
        cls.client.close()
        cls.broker.__exit__(None, None, None)

    def setUp(self) -> None:
        type(self).gate = Gate()


class FakeBroker:
    """A ROUTER on a free port: answer(frames) -> reply frames, a list of
    replies (each a list of frames), or None."""

    def __init__(self, answer: Any = None) -> None:
        self.socket = zmq.Context.instance().socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        port = self.socket.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = "tcp://127.0.0.1:%d" % port
        self.answer = answer
        self.received: List[List[bytes]] = []
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping:
            if not self.socket.poll(20):
                continue
            identity, *frames = self.socket.recv_multipart()
            self.received.append(frames)
            reply = self.answer(frames) if self.answer else None
            replies = reply if reply and isinstance(reply[0], list) else [reply]
            for one in replies:
                if one is not None:
                    self.socket.send_multipart([identity] + one)

    def close(self) -> None:
        self.stopping = True
        self.thread.join(5)
        self.socket.close(0)
