"""No broker ever reached: a Timeout says what the connection attempts saw
(refused, or a handshake that failed), and a connection closed at its
handshake does not fail the requests waiting as Disconnected (none was
sent on it). No actd: nothing listening, or a pyzmq ROUTER with CURVE."""

import asyncio
import tempfile
import time
import unittest

import zmq
import zmq.auth

import support  # noqa: F401 - the package from this tree
from harness import free_port

import actd
import actd.aio

#: Short: nothing will answer; long enough for libzmq's first attempts
#: (it retries a refused connection after 100 ms)
WAIT = 1.5

REFUSED = "(refused: is actd listening there?)"
HANDSHAKE = "(the handshake failed: are both ends on CURVE, with the broker's public key?)"


class UnreachedTest(unittest.TestCase):

    def setUp(self) -> None:
        self.context = zmq.Context()
        self.addCleanup(self.context.term)

    def curve_broker(self) -> str:
        """A ROUTER with CURVE (its own keys) that never answers: its endpoint."""
        public, secret = zmq.curve_keypair()
        router = self.context.socket(zmq.ROUTER)
        router.curve_server = True
        router.curve_publickey, router.curve_secretkey = public, secret
        port = router.bind_to_random_port("tcp://127.0.0.1")
        self.addCleanup(router.close, 0)
        return "tcp://127.0.0.1:%d" % port

    def client_keys(self) -> dict:
        """The CURVE options of a client given another broker's public key."""
        folder = tempfile.TemporaryDirectory(prefix="actd-py-unreached-")
        self.addCleanup(folder.cleanup)
        cert = zmq.auth.create_certificates(folder.name, "client")[1]
        other = zmq.curve_keypair()[0].decode("ascii")
        return {"curve_server": other, "curve_cert": cert}

    def ping(self, endpoint: str, **options: object) -> str:
        """The message of the error of a PING to endpoint, and the seconds taken."""
        with actd.Client(endpoint, timeout=WAIT, **options) as client:
            start = time.monotonic()
            with self.assertRaises(actd.Timeout) as caught:
                client.ping()
            self.assertLess(time.monotonic() - start, WAIT + 2.0)
        return str(caught.exception)

    def aping(self, endpoint: str, **options: object) -> str:
        async def run() -> str:
            async with actd.aio.AsyncClient(endpoint, timeout=WAIT, **options) as client:
                with self.assertRaises(actd.Timeout) as caught:
                    await client.ping()
            return str(caught.exception)
        return asyncio.run(run())

    def test_refused_is_said_when_the_request_times_out(self) -> None:
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        expected = ("timeout: no reply to PING within 1.5 s: no connection to %s was ever "
                    "made %s" % (endpoint, REFUSED))
        self.assertEqual(self.ping(endpoint), expected)
        self.assertEqual(self.aping(endpoint), expected)

    def test_a_plans_results_and_a_wait_say_it_too(self) -> None:
        # Their DONE and deadline are waited for only after a reply
        # (ACCEPTED, STATUS), so once a broker was reached: while none was,
        # the request before them times out, saying why. Not a fix: they
        # said it before; this keeps it so
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        plan = [{"_tool": "a", "_outputPath": "†x"}]
        accepted = ("timeout: no ACCEPTED within 1.5 s: no connection to %s was ever made %s"
                    % (endpoint, REFUSED))
        status = ("timeout: no reply to STATUS within 1.5 s: no connection to %s was ever "
                  "made %s" % (endpoint, REFUSED))
        with actd.Client(endpoint, timeout=WAIT) as client:
            for wait, expected in ((lambda: client.submit_plan("c", plan).results(WAIT), accepted),
                                   (lambda: client.wait("1", timeout=WAIT), status)):
                with self.assertRaises(actd.Timeout) as caught:
                    wait()
                self.assertEqual(str(caught.exception), expected)

        async def run() -> None:
            async with actd.aio.AsyncClient(endpoint, timeout=WAIT) as client:
                handle = await client.submit_plan("c", plan)
                for wait, expected in ((handle.results(WAIT), accepted),
                                       (client.wait("1", timeout=WAIT), status)):
                    with self.assertRaises(actd.Timeout) as caught:
                        await wait
                    self.assertEqual(str(caught.exception), expected)
        asyncio.run(run())

    def test_a_broker_of_another_curve_key_fails_the_handshake_not_the_request(self) -> None:
        # Not Disconnected ('may or may not have been carried out'): no
        # request passes a handshake that fails; the Timeout says why
        endpoint = self.curve_broker()
        expected = ("timeout: no reply to PING within 1.5 s: no connection to %s was ever "
                    "made %s" % (endpoint, HANDSHAKE))
        for ping in self.ping, self.aping:
            self.assertEqual(ping(endpoint, **self.client_keys()), expected)


if __name__ == "__main__":
    unittest.main()
