"""The examples run as documented: examples/worker.py serves, examples/
client.py calls it, and the worker stops cleanly on SIGTERM."""

import os
import signal
import subprocess
import sys
import unittest

from support import PACKAGE_ROOT, TIMEOUT, Actd, listed_worker, wait_until

import actd

EXAMPLES = os.path.join(PACKAGE_ROOT, "examples")


class ExamplesTest(unittest.TestCase):

    def test_example_client_and_worker(self) -> None:
        with Actd() as broker, actd.Client(broker.client_endpoint, timeout=TIMEOUT) as client:
            # A plain environment: the examples find the package themselves
            environment = {key: value for key, value in os.environ.items()
                           if key != "PYTHONPATH"}
            worker = subprocess.Popen(
                [sys.executable, os.path.join(EXAMPLES, "worker.py"),
                 "--endpoint", broker.worker_endpoint, "--name", "example-worker",
                 "--heartbeat-ms", str(broker.heartbeat_ms), "--liveness", str(broker.liveness)],
                env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                listed = wait_until(lambda: listed_worker(client, "example-worker"),
                                    what="the example worker registered")
                self.assertEqual(listed["activities"], ["upper", "echo", "weather"])
                run = subprocess.run(
                    [sys.executable, os.path.join(EXAMPLES, "client.py"),
                     "--endpoint", broker.client_endpoint, "--context", "example"],
                    env=environment, capture_output=True, text=True, timeout=TIMEOUT * 2)
                self.assertEqual(run.returncode, 0, run.stderr)
                lines = run.stdout.splitlines()
                self.assertEqual(lines[:4], [
                    "upper: ok ADA",
                    "weather: Oslo branch 0 wrote ['\u2020sunny.Oslo']",
                    "weather: Paris branch 1 wrote ['\u2020rainy.Paris']",
                    "echoes: " + str(client.resolve("example", "\u2020echoes"))])
                self.assertEqual(sorted(e["n"] for e in client.resolve("example", "\u2020echoes")),
                                 [0, 1, 2, 3, 4])
                self.assertEqual(client.resolve("example", "\u2020user"),
                                 {"name": "ada", "shout": "ADA"})
                self.assertEqual(client.resolve("example", "\u2020rainy.Paris"),
                                 {"city": "Paris", "sky": "rainy"})
            finally:
                worker.send_signal(signal.SIGTERM)
                try:
                    code = worker.wait(TIMEOUT)
                finally:
                    if worker.poll() is None:
                        worker.kill()
                        worker.wait()
                    errors = worker.stderr.read().decode(errors="replace")
                    worker.stderr.close()
            self.assertEqual(code, 0, errors)
            wait_until(lambda: listed_worker(client, "example-worker") is None,
                       what="the example worker gone from STATS")

    def test_example_worker_weather(self) -> None:
        with Actd() as broker, actd.Client(broker.client_endpoint, timeout=TIMEOUT) as client:
            worker = subprocess.Popen(
                [sys.executable, os.path.join(EXAMPLES, "worker.py"),
                 "--endpoint", broker.worker_endpoint, "--name", "weather-worker",
                 "--heartbeat-ms", str(broker.heartbeat_ms)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_until(lambda: listed_worker(client, "weather-worker"),
                           what="the example worker registered")
                even = client.call("w", {"_tool": "weather", "city": "Rome",
                                         "_outputPath": "\u2020sun || \u2020rain"}, timeout=TIMEOUT)
                odd = client.call("w", {"_tool": "weather", "city": "Lima!",
                                        "_outputPath": "\u2020sun2 || \u2020rain2"},
                                  timeout=TIMEOUT)
                echo = client.call("w", {"_tool": "echo", "a": [1, {"b": None}],
                                         "_outputPath": "\u2020echo"}, timeout=TIMEOUT)
            finally:
                worker.send_signal(signal.SIGINT)
                code = worker.wait(TIMEOUT)
        self.assertEqual((even.branch, even.result), (0, {"city": "Rome", "sky": "sunny"}))
        self.assertEqual((odd.branch, odd.result), (1, {"city": "Lima!", "sky": "rainy"}))
        self.assertEqual(echo.result, {"a": [1, {"b": None}]})
        self.assertEqual(code, 0)


if __name__ == "__main__":
    unittest.main()
