"""CURVE: Client, AsyncClient and Worker against a real actd with CURVE on
(tests/integration/test_security.py's curve_actd: allowed client keys,
allowed worker keys, and a key allowed nowhere), with the options and with
$ACTD_ENDPOINT, $ACTD_SERVER_KEY and $ACTD_CERT."""

import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Any
from unittest import mock

from support import PACKAGE_ROOT, TIMEOUT, listed_worker, running, wait_until
from test_security import CURVE_KEYS, curve_actd, keys

import actd
import actd.aio
from actd import _socket


class CurveTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = tempfile.TemporaryDirectory(prefix="actd-py-curve-")
        cls.broker = curve_actd(cls.dir.name)
        cls.broker.start(wait=False)
        cls.server_cert, cls.alice, cls.w1, cls.mallory = (
            os.path.join(cls.dir.name, path) for path in CURVE_KEYS)
        cls.server_key = keys(cls.server_cert)[0]
        cls.client = actd.Client(cls.broker.client_endpoint, timeout=TIMEOUT,
                                 curve_server=cls.server_key, curve_cert=cls.alice)
        # The harness's PING cannot speak CURVE: wait with the client itself
        wait_until(lambda: cls.client.ping(), what="actd with CURVE answering")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.broker.finish()
        cls.dir.cleanup()

    def curve_worker(self, cert: str, name: str) -> actd.Worker:
        worker = actd.Worker(self.broker.worker_endpoint, name=name, curve_server=self.server_key,
                             curve_cert=cert, heartbeat_ms=self.broker.heartbeat_ms,
                             liveness=self.broker.liveness)
        worker.add_activity("c-upper", lambda params, task: params["text"].upper())
        return worker

    def wait_log(self, pattern: str) -> None:
        wait_until(lambda: re.search(pattern, self.broker.log()), what="log line %r" % pattern)

    def test_client_and_worker_over_curve(self) -> None:
        with running(self.client, self.curve_worker(self.w1, "curve-w1")):
            outcome = self.client.call("curve", {"_tool": "c-upper", "text": "secret",
                                                 "_outputPath": "†state.up"}, timeout=TIMEOUT)
            self.assertEqual((outcome.status, outcome.result), ("ok", "SECRET"))

            async def asynchronous() -> Any:
                # NAME.key stands for NAME.key_secret, as for actctl
                async with actd.aio.AsyncClient(self.broker.client_endpoint,
                                                curve_server=self.server_key,
                                                curve_cert=self.alice[:-len("_secret")]) as client:
                    return await client.resolve("curve", "†state.up")

            self.assertEqual(asyncio.run(asynchronous()), "SECRET")

    def test_the_examples_take_endpoints_and_keys_from_the_environment(self) -> None:
        environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        environment.update(ACTD_ENDPOINT=self.broker.client_endpoint,
                           ACTD_WORKER_ENDPOINT=self.broker.worker_endpoint,
                           ACTD_SERVER_KEY=self.server_key)
        worker = subprocess.Popen(
            [sys.executable, os.path.join(PACKAGE_ROOT, "examples", "worker.py"),
             "--name", "curve-env", "--heartbeat-ms", str(self.broker.heartbeat_ms)],
            env=dict(environment, ACTD_CERT=self.w1), stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        try:
            wait_until(lambda: listed_worker(self.client, "curve-env"),
                       what="the example worker registered over CURVE")
            run = subprocess.run(
                [sys.executable, os.path.join(PACKAGE_ROOT, "examples", "client.py"),
                 "--context", "curve-env"], env=dict(environment, ACTD_CERT=self.alice),
                capture_output=True, text=True, timeout=TIMEOUT * 2)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(run.stdout.splitlines()[0], "upper: ok ADA")
        finally:
            worker.terminate()
            code = worker.wait(TIMEOUT)
            errors = worker.stderr.read().decode(errors="replace")
            worker.stderr.close()
        self.assertEqual(code, 0, errors)

    def test_refused_client_key(self) -> None:
        with actd.Client(self.broker.client_endpoint, timeout=TIMEOUT,
                         curve_server=self.server_key, curve_cert=self.mallory) as client:
            with self.assertRaises(actd.Unauthorized) as raised:
                client.call("curve-refused", {"_tool": "c-upper", "text": "x"})
        self.assertEqual(raised.exception.message, "this client's CURVE key is not allowed")
        self.wait_log(r"CURVE: client refused: key %s" % re.escape(keys(self.mallory)[0]))

    def test_refused_worker_key_gets_no_task_and_stops(self) -> None:
        # A client's key on the worker socket: refused at the handshake
        worker = self.curve_worker(self.alice, "curve-impostor")
        thread = worker.start()
        self.wait_log(r"CURVE: worker refused from .*: key %s is not in"
                      % re.escape(keys(self.alice)[0]))
        heartbeats = 2 * self.broker.liveness
        with self.assertLogs("actd.worker", "WARNING") as logged:
            time.sleep(heartbeats * self.broker.heartbeat_ms / 1000.0)
        self.assertIsNone(listed_worker(self.client, "curve-impostor"))
        # What it cannot send is dropped once per heartbeat (and READY once
        # per reconnection), not sent again in a busy loop
        dropped = [line for line in logged.output if "dropped" in line]
        self.assertLessEqual(len(dropped), 3 * heartbeats, dropped[:5])
        worker.stop(wait=True, timeout=TIMEOUT)
        worker.close()
        self.assertFalse(thread.is_alive(), "a worker with a refused key did not stop")

    def test_bad_curve_options(self) -> None:
        public_only = os.path.join(self.dir.name, "public-only.key")
        with open(public_only, "w", encoding="utf-8") as handle:
            handle.write('curve\n    public-key = "%s"\n' % keys(self.alice)[0])
        with mock.patch.dict(os.environ, {"ACTD_SERVER_KEY": "", "ACTD_CERT": ""}):
            for options in ({"curve_server": self.server_key},      # half of CURVE
                            {"curve_cert": self.alice},
                            {"curve_server": "short", "curve_cert": self.alice},
                            {"curve_server": self.server_key, "curve_cert": public_only}):
                with self.subTest(options=options), self.assertRaises(ValueError):
                    actd.Worker("tcp://127.0.0.1:1", **options)
            with self.assertRaises(FileNotFoundError):
                actd.Client("tcp://127.0.0.1:1", curve_server=self.server_key,
                            curve_cert=os.path.join(self.dir.name, "nothing.key"))


class CertificateTest(unittest.TestCase):
    """The zcert file format, as CZMQ writes and reads it."""

    def test_load_certificate_reads_the_curve_section(self) -> None:
        with tempfile.TemporaryDirectory(prefix="actd-cert-") as folder:
            path = os.path.join(folder, "peer.key_secret")
            # Keys with '#' and '=' (both Z85 characters), a metadata entry
            # named like a key, comments, and single quotes
            public = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf#"
            secret = "JTKVSB%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6="
            with open(path, "w", encoding="utf-8") as handle:
                handle.write("#   ZeroMQ CURVE **Secret** Certificate\n"
                             "\n"
                             "metadata\n"
                             "    public-key = \"not this one\"\n"
                             "curve\n"
                             "    public-key = \"%s\"    # the public one\n"
                             "    secret-key = '%s'\n" % (public, secret))
            self.assertEqual(_socket.load_certificate(path), (public, secret))
            self.assertEqual(_socket.load_certificate(path[:-len("_secret")]), (public, secret))


if __name__ == "__main__":
    unittest.main()
