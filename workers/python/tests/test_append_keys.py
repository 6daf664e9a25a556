"""An APPEND without a key, from a client that may send it again (several
brokers known, or a ``moved`` reply sending it on), is given one: a random
UUID chosen once per append() and kept across every resend, so a retry at
another broker after a timeout is the same APPEND, which actd stores once
(PROTOCOL.md section 2). A key given is kept; with one broker and no resend
possible nothing is added (keys are stored with the context for good).

Scripted brokers (ROUTERs on free ports) record the APPEND frames; a relay
in front of a real actd shows the outcome: the first APPEND reaches actd
but its reply is lost, the client sends it again to actd itself, and the
context holds the message once."""

import asyncio
import json
import re
import threading
import unittest
from typing import Callable, List, Optional

import zmq

from support import TIMEOUT, Actd, FakeBroker

import actd
import actd.aio
from actd import _wire

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
MESSAGE = {"type": "data", "kind": "k", "data": {"n": 1}}

#: Seconds a broker may take to answer before the request goes to the next
REQUEST_TIMEOUT = 0.5

Answer = Callable[[List[bytes]], Optional[List[bytes]]]


class ScriptedBroker(FakeBroker):
    """support's FakeBroker, which records each request's frames (after
    the peer's identity) in ``received``, with the APPENDs among them."""

    def appends(self) -> List[List[bytes]]:
        """The APPEND requests received, each as its frames from the context on."""
        return [frames[3:] for frames in self.received if frames[1] == b"APPEND"]


def ok_seq(frames: List[bytes]) -> Optional[List[bytes]]:
    """Answer an APPEND with ``OK {"seq":1}``, nothing else."""
    if frames[1] == b"APPEND":
        return [b"ACTC01", b"OK", frames[2], b'{"seq":1}']
    return None


def context_first_at(endpoints: List[str], endpoint: str, prefix: str) -> str:
    """A context id whose rendezvous order puts endpoint first."""
    number = 0
    while _wire.rendezvous(endpoints, "%s-%d" % (prefix, number))[0] != endpoint:
        number += 1
    return "%s-%d" % (prefix, number)


class ScriptedAppendKeyTest(unittest.TestCase):
    """The frames an APPEND is sent with, to scripted brokers."""

    def brokers(self, *answers: Optional[Answer]) -> List[ScriptedBroker]:
        made = [ScriptedBroker(answer) for answer in answers]
        for broker in made:
            self.addCleanup(broker.close)
        return made

    def silent_then_live(self, key: Optional[str]) -> List[List[bytes]]:
        """An append(key=key) through the threaded client to a broker that
        never answers, then (after request_timeout) to one that answers:
        the frames each got."""
        silent, live = self.brokers(None, ok_seq)
        endpoints = [silent.endpoint, live.endpoint]
        context = context_first_at(endpoints, silent.endpoint, "retried")
        with actd.Client(endpoints, timeout=TIMEOUT, request_timeout=REQUEST_TIMEOUT) as client:
            self.assertEqual(client.append(context, MESSAGE, key=key), 1)
        # Once to each at least (more should the live one be slow)
        self.assertTrue(silent.appends() and live.appends(), (silent.received, live.received))
        return silent.appends() + live.appends()

    def test_an_append_sent_again_after_a_timeout_keeps_the_key_it_was_given(self) -> None:
        first, *again = self.silent_then_live(None)
        self.assertEqual(len(first), 3, first)
        self.assertRegex(first[2].decode(), UUID)
        self.assertEqual(again, [first] * len(again))       # The same key
        self.assertEqual(json.loads(first[1]), MESSAGE)

    def test_a_key_given_is_kept(self) -> None:
        first, *again = self.silent_then_live("mine")
        self.assertEqual(first[2:], [b"mine"])
        self.assertEqual(again, [first] * len(again))

    def test_each_append_gets_a_key_of_its_own(self) -> None:
        live, = self.brokers(ok_seq)
        other, = self.brokers(ok_seq)
        with actd.Client([live.endpoint, other.endpoint], timeout=TIMEOUT) as client:
            client.append("ctx", MESSAGE)
            client.append("ctx", MESSAGE)
        keys = [frames[2] for frames in live.appends() + other.appends()]
        self.assertEqual(len(keys), 2)
        self.assertNotEqual(keys[0], keys[1])

    def test_the_asyncio_client_keeps_the_key_across_the_resend(self) -> None:
        silent, live = self.brokers(None, ok_seq)
        endpoints = [silent.endpoint, live.endpoint]
        context = context_first_at(endpoints, silent.endpoint, "retried")

        async def scenario() -> None:
            async with actd.aio.AsyncClient(endpoints, timeout=TIMEOUT,
                                            request_timeout=REQUEST_TIMEOUT) as client:
                self.assertEqual(await client.append(context, MESSAGE), 1)
        asyncio.run(scenario())
        self.assertTrue(silent.appends() and live.appends(), (silent.received, live.received))
        first, *again = silent.appends() + live.appends()
        self.assertRegex(first[2].decode(), UUID)
        self.assertEqual(again, [first] * len(again))

    def test_one_broker_adds_no_key(self) -> None:
        live, = self.brokers(ok_seq)
        with actd.Client(live.endpoint, timeout=TIMEOUT) as client:
            self.assertEqual(client.append("ctx", MESSAGE), 1)

        async def scenario() -> None:
            async with actd.aio.AsyncClient(live.endpoint, timeout=TIMEOUT) as client:
                self.assertEqual(await client.append("ctx", MESSAGE), 1)
        asyncio.run(scenario())
        self.assertEqual([len(frames) for frames in live.appends()], [2, 2], live.received)

    def moved_then_ok(self) -> List[List[bytes]]:
        """A client given one broker, which answers APPEND moved to a
        second that answers it: the frames each got."""
        owner, = self.brokers(ok_seq)
        first, = self.brokers(lambda frames: [b"ACTC01", b"ERROR", frames[2], b"moved",
                                              owner.endpoint.encode()])
        with actd.Client(first.endpoint, timeout=TIMEOUT) as client:
            self.assertEqual(client.append("ctx", MESSAGE), 1)
        return first.appends() + owner.appends()

    def test_an_append_sent_on_after_moved_gets_a_key(self) -> None:
        """The moved broker stored nothing, but the owner may store the
        APPEND and fall silent, and the client send it on again."""
        to_first, to_owner = self.moved_then_ok()
        self.assertEqual(len(to_first), 2)                  # One broker known: none
        self.assertEqual(to_owner[:2], to_first)
        self.assertRegex(to_owner[2].decode(), UUID)


class AppendOnceTest(unittest.TestCase):
    """A real actd behind a relay that loses its replies."""

    def test_an_append_retried_after_a_lost_reply_is_stored_once(self) -> None:
        with Actd() as broker:
            upstream = zmq.Context.instance().socket(zmq.DEALER)
            upstream.setsockopt(zmq.LINGER, 0)
            upstream.connect(broker.client_endpoint)
            lock = threading.Lock()

            def forward(frames: List[bytes]) -> None:
                with lock:
                    upstream.send_multipart(frames)
            relay = ScriptedBroker(forward)
            try:
                endpoints = [relay.endpoint, broker.client_endpoint]
                context = context_first_at(endpoints, relay.endpoint, "once")
                with actd.Client(endpoints, timeout=TIMEOUT, request_timeout=1.0) as client:
                    self.assertEqual(client.append(context, MESSAGE), 1)
                    history = list(client.history(context))
                self.assertTrue(relay.appends())            # It reached actd first
                self.assertEqual([m["_seq"] for m in history], [1])
            finally:
                relay.close()
                upstream.close(0)


if __name__ == "__main__":
    unittest.main()
