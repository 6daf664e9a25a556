"""A dropped connection fails the requests it lost, at once, with
:class:`actd.Disconnected`, instead of leaving their callers waiting
forever: libzmq forgets what it wrote to the dropped connection, and
actd's replies go to a routing id that is gone.

actd is stopped (SIGSTOP) past the client's ZMTP heartbeat timeout (the
library's 10 s, 3 s here: see DROP_AFTER_MS) with requests and an accepted call pending, or killed (SIGKILL) with a
request pending and started again on the same ports. Nothing is timed:
each wait has a generous bound, and a request given a timeout longer than
the pause would end with :class:`actd.Timeout`, not
:class:`actd.Disconnected`, were the drop not noticed.

Only the requests it lost: a fake broker (a ROUTER in the test) answers
all its PINGs but the last and closes while the client is busy; the
replies still unread then answer their requests (RepliesBeforeTheDrop).
"""

import asyncio
import concurrent.futures
import json
import signal
import threading
import time
import unittest
from typing import Any, Callable, Dict, List

import zmq

from support import TIMEOUT, Actd, Gate, serving, wait_until
from test_watch import Collector

import actd
import actd._socket
import actd.aio

#: The clients' ZMTP heartbeat timeout in these tests (ms), for the
#: library's 10 s: each pause lasted that long (some 40 s of the suite),
#: and what is tested does not depend on it. Set for the module only.
DROP_AFTER_MS = 3000
_library_timeout = actd._socket.HEARTBEAT_TIMEOUT


def setUpModule() -> None:
    actd._socket.HEARTBEAT_TIMEOUT = DROP_AFTER_MS


def tearDownModule() -> None:
    actd._socket.HEARTBEAT_TIMEOUT = _library_timeout

#: Longer than the library's heartbeat timeout (10 s) and the slack of a loaded
#: machine: a request still waiting this long was not failed by the drop.
LONG = 90.0

#: Requests pending on the connection when it drops.
REQUESTS = 20


def gated(gate: Gate) -> Dict[str, Callable[..., Any]]:
    """A worker's activities: "gate" waits at ``gate``."""
    def run(params: Dict[str, Any], task: actd.Task) -> Any:
        gate.enter()
        return params.get("value")
    return {"gate": run}


def call(value: str) -> Dict[str, Any]:
    """A call of "gate" whose DONE is awaited."""
    return {"_tool": "gate", "_outputPath": "†out.v", "value": value}


class Paused(unittest.TestCase):
    """actd stopped past the heartbeat timeout, then continued."""

    def pause(self, broker: Actd) -> None:
        broker.process.send_signal(signal.SIGSTOP)
        self.addCleanup(broker.process.send_signal, signal.SIGCONT)

    def test_pending_requests_and_an_awaited_done_fail_disconnected(self) -> None:
        gate = Gate()
        self.addCleanup(gate.release)
        with Actd() as broker, \
                actd.Client(broker.client_endpoint, timeout=TIMEOUT, status_poll=None) as client, \
                serving(broker, client, gated(gate), "drop-worker"):
            accepted = client.submit("d-pause", call("a"))
            accepted.accepted(TIMEOUT)
            self.assertTrue(gate.entered.wait(TIMEOUT))
            self.pause(broker)
            refused = client.submit("d-pause", call("b"))
            with concurrent.futures.ThreadPoolExecutor(REQUESTS) as pool:   # All sent at once
                stats = [pool.submit(client.stats, LONG) for _ in range(REQUESTS)]
                for future in stats:
                    with self.assertRaises(actd.Disconnected) as raised:
                        future.result(LONG + TIMEOUT)
                    self.assertEqual(raised.exception.code, "disconnected")
                    self.assertIn("may or may not have been carried out",
                                  raised.exception.message)
            with self.assertRaises(actd.Disconnected):
                refused.accepted(LONG)
            with self.assertRaises(actd.Disconnected) as raised:
                accepted.outcome(LONG)
            self.assertIn("ask STATUS", raised.exception.message)
            self.assertEqual(client.pending, 0)
            # actd goes on: the client is answered on the new connection
            broker.process.send_signal(signal.SIGCONT)
            self.assertIn("workers", client.stats())
            gate.release()
            call_id = accepted.accepted(0)
            self.assertEqual(client.wait(call_id, timeout=TIMEOUT).result, "a")

    def test_an_awaited_done_is_followed_across_the_drop_with_status_poll(self) -> None:
        gate = Gate()
        self.addCleanup(gate.release)
        with Actd() as broker, \
                actd.Client(broker.client_endpoint, timeout=TIMEOUT) as client, \
                serving(broker, client, gated(gate), "drop-worker-poll"):
            handle = client.submit("d-poll", call("c"))
            handle.accepted(TIMEOUT)
            self.assertTrue(gate.entered.wait(TIMEOUT))
            self.pause(broker)
            with self.assertRaises(actd.Disconnected):
                client.ping(LONG)
            self.assertFalse(handle.done())
            broker.process.send_signal(signal.SIGCONT)
            gate.release()
            self.assertEqual(handle.outcome(TIMEOUT).result, "c")

    def test_async_pending_requests_and_an_awaited_done_fail_disconnected(self) -> None:
        gate = Gate()
        self.addCleanup(gate.release)

        async def main(broker: Actd) -> None:
            async with actd.aio.AsyncClient(broker.client_endpoint, timeout=TIMEOUT,
                                            status_poll=None) as client:
                accepted = await client.submit("d-apause", call("a"))
                await accepted.accepted(TIMEOUT)
                loop = asyncio.get_running_loop()
                self.assertTrue(await loop.run_in_executor(None, gate.entered.wait, TIMEOUT))
                self.pause(broker)
                refused = await client.submit("d-apause", call("b"))
                results: List[Any] = await asyncio.wait_for(asyncio.gather(
                    *(client.stats(LONG) for _ in range(REQUESTS)),
                    refused.accepted(LONG), accepted.outcome(LONG),
                    return_exceptions=True), LONG + TIMEOUT)
                for result in results:
                    self.assertIsInstance(result, actd.Disconnected)
                self.assertIn("ask STATUS", results[-1].message)
                self.assertEqual(client.pending, 0)
                broker.process.send_signal(signal.SIGCONT)
                self.assertIn("workers", await client.stats())

        with Actd() as broker, actd.Client(broker.client_endpoint, timeout=TIMEOUT) as sync, \
                serving(broker, sync, gated(gate), "drop-worker-aio"):
            asyncio.run(main(broker))


def note(text: str) -> Dict[str, Any]:
    """A message to append."""
    return {"type": "text", "text": text}


def texts_stored(seq: int) -> List[str]:
    """What the context holds once "two" is stored at seq: the pending
    APPEND may or may not have been carried out (Disconnected says so):
    libzmq sends again, on the new connection, what it had not yet
    written to the old one when it dropped."""
    assert seq in (2, 3), seq
    return ["one", "lost", "two"] if seq == 3 else ["one", "two"]


class Restarted(unittest.TestCase):
    """actd killed (stopped first, so that the request is surely not
    answered) with a request pending, and started again on the same ports:
    the request fails with :class:`actd.Disconnected` as soon as the
    connection drops; the next request is answered."""

    def test_a_request_pending_at_a_crash_fails_and_the_next_is_answered(self) -> None:
        with Actd() as broker, actd.Client(broker.client_endpoint, timeout=TIMEOUT) as client:
            self.assertEqual(client.append("d-restart", note("one")), 1)
            broker.process.send_signal(signal.SIGSTOP)
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                pending = pool.submit(client.append, "d-restart", note("lost"), None, LONG)
                wait_until(lambda: client.pending == 1, what="the APPEND pending")
                broker.kill()
                with self.assertRaises(actd.Disconnected):
                    pending.result(LONG + TIMEOUT)
            broker.start()
            seq = client.append("d-restart", note("two"))
            self.assertEqual([m["text"] for m in client.history("d-restart")],
                             texts_stored(seq))

    def test_async_a_request_pending_at_a_crash_fails_and_the_next_is_answered(self) -> None:
        async def main(broker: Actd) -> None:
            async with actd.aio.AsyncClient(broker.client_endpoint, timeout=TIMEOUT) as client:
                self.assertEqual(await client.append("d-arestart", note("one")), 1)
                broker.process.send_signal(signal.SIGSTOP)
                pending = asyncio.ensure_future(
                    client.append("d-arestart", note("lost"), None, LONG))
                while client.pending == 0:
                    await asyncio.sleep(0)      # The APPEND is sent
                broker.kill()
                with self.assertRaises(actd.Disconnected):
                    await asyncio.wait_for(pending, LONG + TIMEOUT)
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(None, broker.start)
                seq = await client.append("d-arestart", note("two"))
                self.assertEqual([m["text"] async for m in client.history("d-arestart")],
                                 texts_stored(seq))

        with Actd() as broker:
            asyncio.run(main(broker))


class TimedOutWhileDown(unittest.TestCase):
    """An APPEND that times out while actd is down (the connection had
    dropped, nothing else pending) is not carried out once actd is back:
    the client closed the socket, dropping libzmq's queue, and opened a
    new one (``Tracker.drop(withdraw=True)``); a caller told Timeout may
    ask again without the APPEND being done twice."""

    def test_an_append_that_timed_out_while_down_is_not_done_later(self) -> None:
        with Actd() as broker, actd.Client(broker.client_endpoint, timeout=TIMEOUT) as client:
            client.ping()
            broker.kill()
            wait_until(lambda: not client._tracker._up, what="the connection dropped")
            with self.assertRaises(actd.Timeout):
                client.append("d-down", note("lost"), None, 1.5)
            broker.start()
            client.ping()
            with self.assertRaises(actd.NotFound):
                list(client.history("d-down"))

    def test_async_an_append_that_timed_out_while_down_is_not_done_later(self) -> None:
        async def main(broker: Actd) -> None:
            async with actd.aio.AsyncClient(broker.client_endpoint, timeout=TIMEOUT) as client:
                await client.ping()
                broker.kill()
                while client._tracker._up:
                    await asyncio.sleep(0.01)   # The drop is seen
                with self.assertRaises(actd.Timeout):
                    await client.append("d-adown", note("lost"), None, 1.5)
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(None, broker.start)
                await client.ping()
                with self.assertRaises(actd.NotFound):
                    [m async for m in client.history("d-adown")]

        with Actd() as broker:
            asyncio.run(main(broker))


class BusyDuringARestart(unittest.TestCase):
    """actd killed and started again while the asyncio client's loop was
    busy (blocked): the drop is in the monitor, unread, when the next
    request is sent. That request goes out on the new connection and is
    carried out, so it must be answered, not failed by the old drop."""

    def test_async_a_request_after_a_restart_unseen_by_a_busy_loop_is_answered(self) -> None:
        async def main(broker: Actd) -> None:
            async with actd.aio.AsyncClient(broker.client_endpoint, timeout=TIMEOUT) as client:
                await client.ping()
                broker.kill()               # The loop is blocked meanwhile
                broker.start()
                time.sleep(1.5)             # Connected again
                self.assertEqual(await client.append("d-busy", note("one")), 1)

        with Actd() as broker:
            asyncio.run(main(broker))


class WatchAcrossAPause(unittest.TestCase):
    """A watch whose connection dropped watches again: the broker's events
    for the old one go to a connection that is gone."""

    def test_a_watch_resumes_after_its_connection_dropped(self) -> None:
        with Actd() as broker, actd.Client(broker.client_endpoint, timeout=TIMEOUT) as client:
            self.assertEqual(client.append("d-watch", note("m1")), 1)
            collector = Collector(client.watch("d-watch", probe=None))   # No STATS probes
            collector.until(1)
            broker.process.send_signal(signal.SIGSTOP)
            try:
                with self.assertRaises(actd.Disconnected):
                    client.ping(LONG)           # Returns once the connection dropped
            finally:
                broker.process.send_signal(signal.SIGCONT)
            self.assertEqual(client.append("d-watch", note("m2")), 2)
            self.assertEqual([event["seq"] for event in collector.until(2)], [1, 2])


class TwoBrokers(unittest.TestCase):
    """Several endpoints: the requests pending on a connection that drops
    go to the next broker, as after ``request_timeout`` (here None)."""

    def test_pings_pending_at_a_crash_go_to_the_next_broker(self) -> None:
        async def main(first: Actd, second: Actd) -> List[Any]:
            async with actd.aio.AsyncClient([first.client_endpoint, second.client_endpoint],
                                            timeout=LONG, request_timeout=None) as client:
                await client.ping()             # Both connected
                first.process.send_signal(signal.SIGSTOP)
                sent = [asyncio.ensure_future(client.ping(LONG)) for _ in range(REQUESTS)]
                pings = asyncio.gather(*sent, return_exceptions=True)
                while client.pending < REQUESTS:
                    await asyncio.sleep(0)      # The PINGs are sent to the first
                #  None is answered while the first is stopped: they are
                #  pending there, not sent to the second
                await asyncio.sleep(0.3)
                assert not any(ping.done() for ping in sent), \
                    "a ping was answered by the second broker at once"
                first.kill()
                results: List[Any] = await asyncio.wait_for(pings, LONG + TIMEOUT)
                return results

        first = Actd().start()
        self.addCleanup(first.cleanup)          # Killed: no clean stop
        with Actd() as second:
            for result in asyncio.run(main(first, second)):
                self.assertIsInstance(result, float)


#: PINGs sent to the fake broker, which answers all but the last.
PINGS = 6


def answers(results: List[Any]) -> List[str]:
    """What each ping got: PONG (its round trip), or its error's code."""
    return ["PONG" if isinstance(result, float) else getattr(result, "code", repr(result))
            for result in results]


class RepliesBeforeTheDrop(unittest.TestCase):
    """Replies that reached the client before its connection dropped, still
    unread when it did (the client was busy): libzmq keeps them readable
    after the socket's DISCONNECTED event, and each answers its request.
    Only the request left unanswered fails with :class:`actd.Disconnected`,
    as in the C library (tests/integration/test_client_library.py,
    DroppedConnectionTest): a client that took the event first failed
    the answered ones too (an accepted call would look lost), then dropped
    their replies as late."""

    def setUp(self) -> None:
        self.router = zmq.Context.instance().socket(zmq.ROUTER)
        self.addCleanup(self.router.close, 0)
        port = self.router.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = "tcp://127.0.0.1:%d" % port

    def receive(self, command: bytes, count: int) -> List[List[bytes]]:
        """The next count requests, each ``command``, as the broker receives
        them: ``[identity][ACTC01][command][request-id]...``."""
        requests = []
        for _ in range(count):
            self.assertTrue(self.router.poll(int(TIMEOUT * 1000)), "no %s came" % command)
            requests.append(self.router.recv_multipart())
            self.assertEqual(requests[-1][1:3], [b"ACTC01", command])
        return requests

    def answer_then_go(self, requests: List[List[bytes]]) -> None:
        """PONG to all the PINGs but the last, then close the broker's
        socket and wait until the client's libzmq surely saw the drop."""
        for identity, _, _, request_id in requests[:-1]:
            self.router.send_multipart([identity, b"ACTC01", b"PONG", request_id])
        time.sleep(0.3)                     # The PONGs written out
        self.router.close(1000)
        time.sleep(0.5)                     # The drop seen (its DISCONNECTED event)

    def test_pings_answered_before_the_drop_get_their_pong(self) -> None:
        entered = threading.Event()
        locked = threading.Event()

        def stall(_: Any) -> None:
            """Run by the I/O thread (which sets the future) as the CALL's
            ACCEPTED comes: it goes on once the test holds the client's lock."""
            entered.set()
            locked.wait(TIMEOUT)

        with actd.Client(self.endpoint, timeout=TIMEOUT) as client, \
                concurrent.futures.ThreadPoolExecutor(PINGS) as pool:
            pings = []
            for sent in range(1, PINGS + 1):    # One at a time: sent in this order
                pings.append(pool.submit(client.ping, TIMEOUT))
                wait_until(lambda: client.pending == sent, what="PING %d sent" % sent)
            call = client.submit("c", {"_tool": "t"})
            call._reply.add_done_callback(stall)
            requests = self.receive(b"PING", PINGS)
            identity, _, _, request_id, *_ = self.receive(b"CALL", 1)[0]
            self.router.send_multipart([identity, b"ACTC01", b"ACCEPTED", request_id, b"7"])
            self.assertTrue(entered.wait(TIMEOUT))
            # The I/O thread ends its turn and waits for the lock (it routes
            # under it) before its next poll, which then finds the PONGs and
            # the drop both ready: the order it takes them in is tested
            with client._lock:
                locked.set()
                time.sleep(0.1)             # The I/O thread at the lock
                self.answer_then_go(requests)
            results = [ping.exception(TIMEOUT) or ping.result() for ping in pings]
            self.assertEqual(answers(results), ["PONG"] * (PINGS - 1) + ["disconnected"])
            self.assertIsInstance(results[-1], actd.Disconnected)
            self.assertEqual(call.accepted(0), "7")
            self.assertEqual(client.pending, 0)

    def test_async_pings_answered_before_the_drop_get_their_pong(self) -> None:
        async def main() -> None:
            async with actd.aio.AsyncClient(self.endpoint, timeout=TIMEOUT) as client:
                # Each task sends its PING at its first step: in this order
                pings = [asyncio.ensure_future(client.ping(TIMEOUT)) for _ in range(PINGS)]
                loop = asyncio.get_running_loop()
                requests = await loop.run_in_executor(None, self.receive, b"PING", PINGS)
                # The loop is blocked (the client busy) while the PONGs and
                # the drop come. A request sent then, before the loop polls
                # again, takes the DISCONNECTED event before the socket's
                # reader saw the PONGs (AsyncClient._take_events): they
                # must be routed first
                self.answer_then_go(requests)
                late = await client.submit("c", {"_tool": "t"})
                results = await asyncio.gather(*pings, return_exceptions=True)
                self.assertEqual(answers(results), ["PONG"] * (PINGS - 1) + ["disconnected"])
                self.assertIsInstance(results[-1], actd.Disconnected)
                # Sent after the drop: not failed by it, it waits for the broker
                with self.assertRaises(actd.Timeout):
                    await late.accepted(0.5)
                late.forget()
                self.assertEqual(client.pending, 0)

        asyncio.run(asyncio.wait_for(main(), TIMEOUT * 2))


#: The fake broker's answers to STATUS (each without its header and request
#: id): call 7 is unknown, call 8 ended ok.
NOT_FOUND = [b"ERROR", b"not_found", b"no call 7"]
ENDED_8 = [b"VALUE", json.dumps({
    "call_id": "8", "context": "ctx", "state": "ok", "attempts": 1,
    "outcome": {"call_id": "8", "status": "ok", "written": ["†s.r"], "seqs": [1],
                "result": 8, "attempts": 1}}).encode()]


class UnknownAfterTheDrop(unittest.TestCase):
    """An accepted call whose connection dropped before its ``DONE`` is
    followed with ``STATUS``; a broker that no longer knows it (its context
    was deleted while the broker restarted, or the broker came back without
    its store) answers ``ERROR not_found``: the call's ``DONE`` will never
    come, and the wait ends with :class:`actd.NotFound` (as the Node
    library's ``NotFoundError``) at once, not only at a timeout (never,
    with ``timeout=None``). An error that is about the broker now
    (``internal``: its store is out; ``busy``) is asked about again.

    The broker is a fake (a ROUTER in a thread): it ACCEPTs the CALL or
    PLAN, then drops the connection (closes its ROUTER and binds a new one
    on the same port) and answers each STATUS from its script."""

    def setUp(self) -> None:
        self.router = zmq.Context.instance().socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        port = self.router.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = "tcp://127.0.0.1:%d" % port
        self.accepted = b"7"
        # What STATUS of each call id answers: one reply after another, the
        # last one again and again
        self.statuses: Dict[str, List[List[bytes]]] = {"7": [NOT_FOUND]}
        self.asked: List[str] = []          # The call ids STATUS asked about
        self.stopping = threading.Event()
        thread = threading.Thread(target=self.serve, daemon=True)
        thread.start()

        def stop() -> None:
            self.stopping.set()
            thread.join(TIMEOUT)
            self.router.close(0)
        self.addCleanup(stop)

    def serve(self) -> None:
        """The fake broker's thread."""
        while not self.stopping.is_set():
            if not self.router.poll(20):
                continue
            identity, _, command, request_id, *args = self.router.recv_multipart()
            reply: List[bytes] = []
            if command in (b"CALL", b"PLAN"):
                self.router.send_multipart([identity, b"ACTC01", b"ACCEPTED", request_id,
                                            self.accepted])
                time.sleep(0.3)             # The ACCEPTED read by the client
                self.rebind()
                continue
            if command == b"STATUS":
                call_id = args[0].decode()
                self.asked.append(call_id)
                script = self.statuses[call_id]
                reply = script.pop(0) if len(script) > 1 else script[0]
            elif command == b"PING":
                reply = [b"PONG"]
            if reply:
                self.router.send_multipart([identity, b"ACTC01", reply[0], request_id]
                                           + reply[1:])

    def rebind(self) -> None:
        """Close the ROUTER (the client's connection drops) and bind a new
        one on the same port (the broker restarted)."""
        self.router.close(0)
        self.router = zmq.Context.instance().socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                self.router.bind(self.endpoint)
                return
            except zmq.ZMQError:            # The port not yet released
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def test_a_call_that_status_no_longer_knows_raises_not_found(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(1) as pool, \
                actd.Client(self.endpoint, timeout=TIMEOUT) as client:
            # call() waits without a limit: a hang fails at result(TIMEOUT),
            # and closing the client (Closed) ends the thread
            waiting = pool.submit(client.call, "ctx", call("a"), timeout=None)
            with self.assertRaises(actd.NotFound) as raised:
                waiting.result(TIMEOUT)
            self.assertEqual(raised.exception.code, "not_found")
            self.assertEqual(raised.exception.message, "no call 7")
            self.assertEqual(client.pending, 0)
        self.assertIn("7", self.asked)

    def test_a_plan_entry_that_status_no_longer_knows_raises_not_found(self) -> None:
        """Only that entry: the other's outcome comes from its STATUS."""
        self.accepted = b'["7","8"]'
        self.statuses["8"] = [ENDED_8]
        with concurrent.futures.ThreadPoolExecutor(1) as pool, \
                actd.Client(self.endpoint, timeout=TIMEOUT) as client:
            waiting = pool.submit(client.plan, "ctx", [call("a"), call("b")], timeout=None)
            with self.assertRaises(actd.NotFound):
                waiting.result(TIMEOUT)
            handle = client.submit_plan("ctx", [call("a"), call("b")])
            self.assertEqual(handle.accepted(TIMEOUT), ["7", "8"])
            lost, ended = handle._outcomes
            assert lost is not None and ended is not None
            self.assertIsInstance(lost.exception(TIMEOUT), actd.NotFound)
            self.assertEqual(ended.result(TIMEOUT).result, 8)
            self.assertEqual(client.pending, 0)

    def test_a_store_outage_is_asked_about_again(self) -> None:
        """``internal`` (the store could not be read) and ``busy`` say
        nothing of the call: its wait goes on, and ends with what STATUS
        answers next."""
        self.statuses["7"] = [[b"ERROR", b"internal", b"the store could not commit"],
                              [b"ERROR", b"busy", b"too many requests"], NOT_FOUND]
        with concurrent.futures.ThreadPoolExecutor(1) as pool, \
                actd.Client(self.endpoint, timeout=TIMEOUT, status_poll=0.2) as client:
            waiting = pool.submit(client.call, "ctx", call("a"), timeout=None)
            with self.assertRaises(actd.NotFound):
                waiting.result(TIMEOUT)
        self.assertEqual(self.asked, ["7", "7", "7"])

    def test_async_a_call_that_status_no_longer_knows_raises_not_found(self) -> None:
        async def main() -> None:
            async with actd.aio.AsyncClient(self.endpoint, timeout=TIMEOUT) as client:
                with self.assertRaises(actd.NotFound) as raised:
                    # No limit: a hang fails at wait_for's TIMEOUT
                    await asyncio.wait_for(client.call("ctx", call("a"), timeout=None),
                                           TIMEOUT)
                self.assertEqual(raised.exception.message, "no call 7")
                self.assertEqual(client.pending, 0)

        asyncio.run(main())

    def test_async_a_plan_entry_that_status_no_longer_knows_raises_not_found(self) -> None:
        self.accepted = b'["7","8"]'
        self.statuses["8"] = [ENDED_8]

        async def main() -> None:
            async with actd.aio.AsyncClient(self.endpoint, timeout=TIMEOUT) as client:
                with self.assertRaises(actd.NotFound):
                    await asyncio.wait_for(client.plan("ctx", [call("a"), call("b")],
                                                       timeout=None), TIMEOUT)
                handle = await client.submit_plan("ctx", [call("a"), call("b")])
                self.assertEqual(await handle.accepted(TIMEOUT), ["7", "8"])
                lost, ended = await asyncio.wait_for(asyncio.gather(
                    *handle._outcomes, return_exceptions=True), TIMEOUT)
                self.assertIsInstance(lost, actd.NotFound)
                self.assertEqual(ended.result, 8)
                self.assertEqual(client.pending, 0)

        asyncio.run(main())


if __name__ == "__main__":
    unittest.main()
