"""watch(), wait(), contexts(), delete() and append(key=) of actd.Client and
actd.aio.AsyncClient against the real actd (PROTOCOL.md section 1.1)."""

import asyncio
import threading
import time
import unittest
from typing import Any, Dict, Iterator, List

from support import TIMEOUT, Actd, BrokerTest, wait_until
from harness import actd_with_config

import actd
import actd.aio

#: A short probe, so that a lost watch is noticed soon (not a deadline).
PROBE = 0.5


def text(n: int) -> Dict[str, Any]:
    return {"type": "text", "text": "m%d" % n}


def seqs(events: List[Dict[str, Any]]) -> List[int]:
    return [event["seq"] for event in events if "seq" in event]


class Collector:
    """A thread that collects what an iterator yields."""

    def __init__(self, iterator: Iterator[Dict[str, Any]]) -> None:
        self.events: List[Dict[str, Any]] = []
        self.error: List[BaseException] = []
        self.thread = threading.Thread(target=self._run, args=(iterator,), daemon=True)
        self.thread.start()

    def _run(self, iterator: Iterator[Dict[str, Any]]) -> None:
        try:
            for event in iterator:
                self.events.append(event)
        except BaseException as error:  # noqa: BLE001 - the test reports it
            self.error.append(error)

    def until(self, count: int) -> List[Dict[str, Any]]:
        wait_until(lambda: len(self.events) >= count or self.error,
                   what="%d events" % count)
        if self.error:
            raise self.error[0]
        return self.events


class StreamsTest(BrokerTest):
    """One actd and one Python worker serving "upper" and "gate"."""

    worker_name = "streams-test-worker"

    def run_async(self, coroutine: Any) -> Any:
        return asyncio.run(asyncio.wait_for(coroutine, TIMEOUT * 3))

    def test_watch_backlog_then_live_in_order(self) -> None:
        for n in range(1, 4):
            self.client.append("s-live", text(n))
        stream = self.client.watch("s-live")
        got = [next(stream) for _ in range(3)]
        for n in range(4, 6):
            self.client.append("s-live", text(n))
        got += [next(stream) for _ in range(2)]
        stream.close()
        history = list(self.client.history("s-live"))
        self.assertEqual(got, [{"seq": m["_seq"], "message": m} for m in history])
        self.assertEqual(seqs(got), [1, 2, 3, 4, 5])
        # From the middle, and from 0 (only what comes next)
        self.assertEqual(next(self.client.watch("s-live", from_seq=4))["seq"], 4)
        collector = Collector(self.client.watch("s-live", from_seq=0))
        wait_until(lambda: collector.events or not self.client.append("s-live", text(0)),
                   what="a message appended after the watch")
        self.assertGreater(collector.events[0]["seq"], 5)

    def test_watch_calls_sees_the_states_of_a_call(self) -> None:
        stream = self.client.watch("s-calls", calls=True)
        handle = self.client.submit("s-calls", {"_tool": "gate", "value": 7,
                                                "_outputPath": "†out"})
        call_id = handle.accepted(TIMEOUT)
        states: List[str] = []
        for event in stream:
            if "call" in event:
                self.assertEqual(event["call"]["call_id"], call_id)
                states.append(event["call"]["state"])
                if event["call"]["state"] == "running":
                    self.gate.release()
                if event["call"]["state"] == "ok":
                    self.assertEqual(event["call"]["outcome"]["result"], 7)
                    break
        stream.close()
        # Each change of state, once: a call that waits for no other starts
        # queued (never "waiting")
        self.assertEqual(states, ["queued", "running", "ok"])
        self.assertEqual(handle.outcome(TIMEOUT).status, "ok")

    def test_breaking_out_sends_unwatch(self) -> None:
        before = self.client.pending     # Another test's failure may leave some
        self.client.append("s-break", text(1))
        for event in self.client.watch("s-break"):
            self.assertEqual(event["seq"], 1)
            break
        # The watch is gone from the client (no request left), the socket works
        self.assertEqual(self.client.pending, before)
        self.assertEqual(self.client.append("s-break", text(2)), 2)
        self.assertGreaterEqual(self.client.ping(), 0.0)
        self.assertEqual(next(self.client.watch("s-break", from_seq=2))["seq"], 2)

    def test_wait_for_a_call_of_another_client(self) -> None:
        before = self.client.pending     # Another test's failure may leave some
        with actd.Client(self.broker.client_endpoint, timeout=TIMEOUT) as other:
            call_id = other.call("s-wait", {"_tool": "gate", "value": "late"})
            with self.assertRaises(actd.Timeout):          # It waits at the gate
                self.client.wait(call_id, timeout=0.2)
            waited: List[actd.Outcome] = []
            thread = threading.Thread(target=lambda: waited.append(
                self.client.wait(call_id, timeout=TIMEOUT)))
            thread.start()
            self.assertTrue(self.gate.entered.wait(TIMEOUT))
            self.gate.release()
            thread.join(TIMEOUT)
            self.assertEqual((waited[0].call_id, waited[0].status), (call_id, "ok"))
            # One that ended before the wait began (STATUS after the WATCH)
            self.assertEqual(self.client.wait(call_id, timeout=TIMEOUT).status, "ok")
            # One this client awaits the DONE of
            handle = self.client.submit("s-wait", {"_tool": "upper", "text": "x",
                                                   "_outputPath": "†x"})
            self.assertEqual(self.client.wait(handle.accepted(TIMEOUT), TIMEOUT).result, "X")
            with self.assertRaises(actd.NotFound):
                self.client.wait("987654321", timeout=TIMEOUT)
        self.assertEqual(self.client.pending, before)

    def test_async_watch_and_wait(self) -> None:
        async def main() -> None:
            async with actd.aio.AsyncClient(self.broker.client_endpoint) as client:
                for n in range(1, 3):
                    await client.append("s-async", text(n))
                stream = client.watch("s-async")
                got = [await stream.__anext__() for _ in range(2)]
                await client.append("s-async", text(3))
                got.append(await stream.__anext__())
                await stream.aclose()
                self.assertEqual(seqs(got), [1, 2, 3])
                self.assertEqual(client.pending, 0)

                call_id = self.client.call("s-async", {"_tool": "gate", "value": 1})
                waiting = asyncio.ensure_future(client.wait(call_id, timeout=TIMEOUT))
                await asyncio.get_running_loop().run_in_executor(
                    None, self.gate.entered.wait, TIMEOUT)
                self.gate.release()
                self.assertEqual((await waiting).status, "ok")
                self.assertEqual(client.pending, 0)

        self.run_async(main())

    def test_contexts_pages_over_250_contexts(self) -> None:
        names = ["s-list-%03d" % n for n in range(250)]
        for name in reversed(names):
            self.client.append(name, text(1))
        self.client.append("s-lisu", text(1))       # After the prefix in byte order
        listed = list(self.client.contexts(prefix="s-list-", page_size=100))
        self.assertEqual([c["context"] for c in listed], names)
        self.assertEqual({(c["messages"], c["last_seq"], c["pending"]) for c in listed},
                         {(1, 1, 0)})
        first = list(self.client.contexts("s-list-", limit=120, page_size=50))
        self.assertEqual([c["context"] for c in first], names[:120])
        self.assertEqual(list(self.client.contexts("s-list-x")), [])
        self.assertIn("s-lisu", [c["context"] for c in self.client.contexts("s-")])

    def test_delete_ends_watches_and_cancels_calls(self) -> None:
        before = self.client.pending     # Another test's failure may leave some
        for n in (1, 2):
            self.client.append("s-delete", text(n))
        handle = self.client.submit("s-delete", {"_tool": "nobody-serves-this",
                                                 "_outputPath": "†never"})
        handle.accepted(TIMEOUT)
        collector = Collector(self.client.watch("s-delete"))
        collector.until(2)
        self.assertEqual(self.client.delete("s-delete"), {"messages": 2, "cancelled": 1})
        self.assertEqual(handle.outcome(TIMEOUT).status, "cancelled")
        collector.thread.join(TIMEOUT)
        self.assertEqual(collector.events[2:], [{"deleted": True}])   # And the watch ended
        self.assertEqual(collector.error, [])
        with self.assertRaises(actd.NotFound):
            self.client.delete("s-delete")
        self.assertEqual(self.client.append("s-delete", text(1)), 1)  # A new context
        self.assertEqual(self.client.pending, before)

    def test_append_with_a_key_appends_once(self) -> None:
        first = self.client.append("s-key", text(1), key="k-1")
        self.assertEqual(self.client.append("s-key", text(1), key="k-1"), first)
        self.assertEqual(self.client.append("s-key", text(2), key="k-2"), first + 1)
        self.assertEqual(len(list(self.client.history("s-key"))), 2)

    def test_async_contexts_delete_and_key(self) -> None:
        async def main() -> None:
            async with actd.aio.AsyncClient(self.broker.client_endpoint) as client:
                for n in range(5):
                    self.assertEqual(await client.append("s-alist-%d" % n, text(1), key="k"), 1)
                    self.assertEqual(await client.append("s-alist-%d" % n, text(1), key="k"), 1)
                listed = [c["context"] async for c in client.contexts("s-alist-", page_size=2)]
                self.assertEqual(listed, ["s-alist-%d" % n for n in range(5)])
                stream = client.watch("s-alist-0")
                self.assertEqual((await stream.__anext__())["seq"], 1)
                self.assertEqual(await client.delete("s-alist-0"),
                                 {"messages": 1, "cancelled": 0})
                self.assertEqual([e async for e in stream], [{"deleted": True}])
                with self.assertRaises(actd.NotFound):
                    await client.delete("s-alist-0")
                self.assertEqual(client.pending, 0)

        self.run_async(main())


class RestartTest(unittest.TestCase):
    """A watch across actd killed (-9) and started again on the same store
    and ports: it resumes from the last seq, without duplicate or gap."""

    def restart(self, broker: Actd, append: Any) -> None:
        """Messages 4 and 5 appended before the kill, 6 to 8 after."""
        for n in (4, 5):
            append(n)
        broker.kill()
        broker.start()
        for n in (6, 7, 8):
            append(n)

    def test_watch_resumes_across_a_restart(self) -> None:
        with Actd() as broker, actd.Client(broker.client_endpoint, timeout=TIMEOUT) as client:
            def append(n: int) -> None:
                self.assertEqual(client.append("s-restart", text(n)), n)

            for n in (1, 2, 3):
                append(n)
            collector = Collector(client.watch("s-restart", probe=PROBE))
            collector.until(3)
            self.restart(broker, append)
            events = collector.until(8)
            self.assertEqual(seqs(events), list(range(1, 9)))
            self.assertEqual([e["message"]["text"] for e in events],
                             ["m%d" % n for n in range(1, 9)])

    def test_async_watch_resumes_across_a_restart(self) -> None:
        async def main(broker: Actd) -> List[int]:
            async with actd.aio.AsyncClient(broker.client_endpoint, timeout=TIMEOUT) as client:
                loop = asyncio.get_running_loop()
                sync = actd.Client(broker.client_endpoint, timeout=TIMEOUT)
                try:
                    for n in (1, 2, 3):
                        await client.append("s-arestart", text(n))
                    stream = client.watch("s-arestart", probe=PROBE)
                    got = [await stream.__anext__() for _ in range(3)]
                    restart = loop.run_in_executor(None, self.restart, broker,
                                                   lambda n: sync.append("s-arestart", text(n)))
                    while len(got) < 8:
                        got.append(await stream.__anext__())
                    await restart
                    await stream.aclose()
                    return seqs(got)
                finally:
                    sync.close()

        with Actd() as broker:
            self.assertEqual(asyncio.run(asyncio.wait_for(main(broker), TIMEOUT * 3)),
                             list(range(1, 9)))


class CloseTest(unittest.TestCase):
    """close() of either client, with watches open that nobody closed,
    sends UNWATCH for them (docs/protocol.md section 2.6): actd learns that
    a socket closed only when it sends to it, so before, each held its slot
    of max_watches until its context's next event. And close() stays quick
    when actd is gone."""

    WATCHES = 3

    def broker(self) -> Actd:
        return actd_with_config("server\n    max_watches = %d\n" % self.WATCHES)

    def assert_room(self, broker: Actd, context: str) -> None:
        """A new client opens max_watches watches of context at once (no
        event came to it since the old ones: only UNWATCH freed them)."""
        with actd.Client(broker.client_endpoint, timeout=TIMEOUT) as other:
            streams = [other.watch(context) for _ in range(self.WATCHES)]
            self.assertEqual([next(stream)["seq"] for stream in streams], [1] * self.WATCHES)
            for stream in streams:
                stream.close()

    def test_close_unwatches_the_open_watches(self) -> None:
        with self.broker() as broker:
            client = actd.Client(broker.client_endpoint, timeout=TIMEOUT)
            client.append("c-close", text(1))
            streams = [client.watch("c-close") for _ in range(self.WATCHES)]
            self.assertEqual([next(stream)["seq"] for stream in streams], [1] * self.WATCHES)
            client.close()
            self.assert_room(broker, "c-close")
            del streams

    def test_async_close_unwatches_the_open_watches(self) -> None:
        async def main(broker: Actd) -> None:
            client = actd.aio.AsyncClient(broker.client_endpoint, timeout=TIMEOUT)
            await client.append("c-aclose", text(1))
            streams = [client.watch("c-aclose") for _ in range(self.WATCHES)]
            self.assertEqual([(await stream.__anext__())["seq"] for stream in streams],
                             [1] * self.WATCHES)
            await client.close()
            async with actd.aio.AsyncClient(broker.client_endpoint, timeout=TIMEOUT) as other:
                again = [other.watch("c-aclose") for _ in range(self.WATCHES)]
                self.assertEqual([(await stream.__anext__())["seq"] for stream in again],
                                 [1] * self.WATCHES)
                for stream in again:
                    await stream.aclose()

        with self.broker() as broker:
            asyncio.run(asyncio.wait_for(main(broker), TIMEOUT))

    def test_close_is_prompt_when_actd_is_gone(self) -> None:
        broker = Actd().start()
        try:
            client = actd.Client(broker.client_endpoint, timeout=TIMEOUT)
            client.append("c-gone", text(1))
            streams = [client.watch("c-gone") for _ in range(self.WATCHES)]
            self.assertEqual([next(stream)["seq"] for stream in streams], [1] * self.WATCHES)
            broker.kill()
            started = time.monotonic()
            client.close()
            self.assertLess(time.monotonic() - started, 2.0)
        finally:
            broker.cleanup()

    def test_async_close_is_prompt_when_actd_is_gone(self) -> None:
        async def main(broker: Actd) -> float:
            client = actd.aio.AsyncClient(broker.client_endpoint, timeout=TIMEOUT)
            await client.append("c-agone", text(1))
            streams = [client.watch("c-agone") for _ in range(self.WATCHES)]
            self.assertEqual([(await stream.__anext__())["seq"] for stream in streams],
                             [1] * self.WATCHES)
            broker.kill()
            started = time.monotonic()
            await client.close()
            return time.monotonic() - started

        broker = Actd().start()
        try:
            self.assertLess(asyncio.run(asyncio.wait_for(main(broker), TIMEOUT)), 2.0)
        finally:
            broker.cleanup()


if __name__ == "__main__":
    unittest.main()
