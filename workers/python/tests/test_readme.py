"""The README's worker, client and asyncio examples run as written (only
the endpoints are replaced by the test broker's)."""

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import types
import unittest
from typing import Any, Dict, List
from unittest import mock

from support import PACKAGE_ROOT, TIMEOUT, Actd, make_worker, running, wait_until

import actd


NOT_RUN = "<!-- snippet: not run:"


def python_blocks(run: bool = True) -> List[str]:
    """The README's python blocks that run (run=True), or those marked
    "<!-- snippet: not run: REASON -->" on the line before (run=False)."""
    with open(os.path.join(PACKAGE_ROOT, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    found = re.findall(r"(?:^(<!--[^\n]*-->)\n)?```python\n(.*?)```", text, re.S | re.M)
    return [code for marker, code in found if marker.startswith(NOT_RUN) != run]


class ReadmeTest(unittest.TestCase):

    def test_blocks_not_run_still_compile(self) -> None:
        blocks = python_blocks(run=False)
        self.assertTrue(blocks, "the README's trace context block is marked not run")
        for code in blocks:
            compile(code, "README.md", "exec")

    def test_trace_block_sends_a_trace_only_from_an_active_span(self) -> None:
        """The trace context block, with a stand-in for opentelemetry-api
        (not installed): the agent's call carries the active span's
        traceparent, which the handler extracts, and no "_trace" at all
        when no span is active (actd refuses "_trace": null)."""
        code = [block for block in python_blocks(run=False) if "propagate" in block][0]
        split = code.index("# The agent's side")
        worker_code, agent_code = code[:split], code[split:]
        traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        active: List[str] = []              # The traceparent of the active span, if any
        extracted: List[Dict[str, Any]] = []
        propagate = types.ModuleType("opentelemetry.propagate")
        propagate.inject = lambda carrier: carrier.update(  # type: ignore[attr-defined]
            {"traceparent": active[-1]} if active else {})
        propagate.extract = lambda carrier: extracted.append(carrier)  # type: ignore
        tracer = types.SimpleNamespace(
            start_as_current_span=lambda name, context=None: contextlib.nullcontext())
        trace = types.ModuleType("opentelemetry.trace")
        trace.get_tracer = lambda name: tracer  # type: ignore[attr-defined]
        package = types.ModuleType("opentelemetry")
        package.propagate, package.trace = propagate, trace  # type: ignore[attr-defined]
        modules = {"opentelemetry": package, "opentelemetry.propagate": propagate,
                   "opentelemetry.trace": trace}
        with mock.patch.dict(sys.modules, modules), Actd() as broker, \
                actd.Client(broker.client_endpoint, timeout=TIMEOUT) as client:
            worker = make_worker(broker, {}, "readme-trace-worker")
            namespace = {"worker": worker, "client": client,
                         "look_up": lambda city: {"city": city}}
            exec(worker_code, namespace)
            with running(client, worker):
                exec(agent_code, namespace)         # No span active
                active.append(traceparent)
                exec(agent_code, namespace)
                wait_until(lambda: len(extracted) == 2, what="both calls run")
        self.assertCountEqual(extracted, [{}, {"traceparent": traceparent}])

    def test_readme_examples_run(self) -> None:
        worker_code, client_code, async_code, streams_code = python_blocks()
        # The README's worker uses the default heartbeat (1000 ms, liveness 3)
        with Actd(heartbeat_ms=1000) as broker, \
                actd.Client(broker.client_endpoint, timeout=TIMEOUT) as client, \
                tempfile.TemporaryDirectory(prefix="actd-readme-") as scratch:
            def write(name: str, code: str) -> str:
                code = code.replace("tcp://127.0.0.1:5556", broker.worker_endpoint)
                code = code.replace("tcp://127.0.0.1:5555", broker.client_endpoint)
                path = os.path.join(scratch, name)
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(code)
                return path

            environment = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
            worker = subprocess.Popen([sys.executable, write("worker.py", worker_code)],
                                      env=environment, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            try:
                wait_until(lambda: [w for w in client.stats()["workers"]
                                    if w["activities"] == ["upper", "echo", "weather"]],
                           what="the README worker registered")
                run = subprocess.run([sys.executable, write("client.py", client_code)],
                                     env=environment, capture_output=True, text=True,
                                     timeout=TIMEOUT * 2)
                self.assertEqual(run.returncode, 0, run.stderr)
                lines = run.stdout.splitlines()
                self.assertEqual(lines[:6], [
                    "ok ADA",
                    "1 ['\u2020rainy.Paris']",
                    "ok",
                    "{'name': 'ada', 'shout': 'ADA'}",
                    "not_found '\u2020user.age' is absent",
                    "## Data: \u00b6user"])
                concurrent = subprocess.run([sys.executable, write("aio.py", async_code)],
                                            env=environment, capture_output=True, text=True,
                                            timeout=TIMEOUT * 2)
                self.assertEqual(concurrent.returncode, 0, concurrent.stderr)
                self.assertEqual(concurrent.stdout, "200\n")
                streams = subprocess.run([sys.executable, write("streams.py", streams_code)],
                                         env=environment, capture_output=True, text=True,
                                         timeout=TIMEOUT * 2)
                self.assertEqual(streams.returncode, 0, streams.stderr)
                self.assertEqual(streams.stdout.splitlines(), [
                    "1", "1", "ok", "1 first", "2 second", "['streams-example']",
                    "{'messages': 2, 'cancelled': 0}"])
            finally:
                worker.send_signal(signal.SIGTERM)
                code = worker.wait(TIMEOUT)
            self.assertEqual(code, 0)
            # It stopped with DISCONNECT: the broker lists no worker
            wait_until(lambda: client.stats()["workers"] == [], what="the worker gone")


if __name__ == "__main__":
    unittest.main()
