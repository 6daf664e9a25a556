"""call() and plan() with wait, for a call without ``_outputPath`` to a tool
that prescribes one (PROTOCOL.md section 2.1, ``"outputPath": {"const":
path}``): the client learns the path from TOOLS (kept 2 s per activity),
sends the call with it, and returns the outcome; against a real actd and a
real worker, with the sync and the asyncio clients."""

import asyncio
import os
import tempfile
import time
import unittest
from typing import Any, Dict, List

from support import TIMEOUT, Actd, running, wait_until
from test_security import keygen
from test_tenants import config_text

import actd
import actd.aio


def summarize(params: Dict[str, Any], task: actd.Task) -> str:
    """A summary of the text."""
    return "summary of " + params["text"]


def note(params: Dict[str, Any], task: actd.Task) -> str:
    """A tool that prescribes no output path."""
    return params.get("text", "")


def count_requests(client: Any) -> List[str]:
    """The commands client sends from now on, in order (its tracker's
    ``send`` is wrapped: every request goes through it)."""
    sent: List[str] = []
    tracker = client._tracker
    send = tracker.send

    def counted(command: str, args: Any, pending: Any) -> bytes:
        sent.append(command)
        return send(command, args, pending)
    tracker.send = counted
    return sent


class PrescribedTest(unittest.TestCase):
    """One actd, one worker serving "summarize" (prescribing
    †state.summary) and "note" (prescribing nothing)."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.broker = Actd()
        cls.broker.__enter__()
        cls.client = actd.Client(cls.broker.client_endpoint, timeout=TIMEOUT)
        worker = actd.Worker(cls.broker.worker_endpoint, name="prescribed-worker",
                             heartbeat_ms=cls.broker.heartbeat_ms, liveness=cls.broker.liveness)
        worker.activity("summarize", output_path={"const": "†state.summary"})(summarize)
        worker.activity("note")(note)
        cls.serving = running(cls.client, worker)
        cls.serving.__enter__()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.serving.__exit__(None, None, None)
        cls.client.close()
        cls.broker.__exit__(None, None, None)

    def test_sync_call_waits_for_the_prescribed_path(self) -> None:
        with actd.Client(self.broker.client_endpoint, timeout=TIMEOUT) as client:
            sent = count_requests(client)
            given = {"_tool": "summarize", "text": "x"}
            outcome = client.call("presc-sync", given, timeout=TIMEOUT)
            self.assertIsInstance(outcome, actd.Outcome)
            self.assertEqual(outcome.status, "ok")
            self.assertEqual(outcome.written, ["†state.summary"])
            self.assertEqual(outcome.result, "summary of x")
            self.assertEqual(given, {"_tool": "summarize", "text": "x"})   # Not changed
            self.assertEqual(sent, ["TOOLS", "CALL"])
            # Within the period: no second TOOLS; JSON text is parsed too
            outcome = client.call("presc-sync", '{"_tool": "summarize", "text": "y"}',
                                  timeout=TIMEOUT)
            self.assertEqual(outcome.written, ["†state.summary"])
            self.assertEqual(self.client.resolve("presc-sync", "†state.summary"),
                             "summary of y")
            self.assertEqual(sent, ["TOOLS", "CALL", "CALL"])
            # Without wait, or with _outputPath given: no TOOLS, as before
            call_id = client.call("presc-sync", {"_tool": "summarize", "text": "z"}, wait=False)
            self.assertIsInstance(call_id, str)
            self.assertEqual(client.wait(call_id, timeout=TIMEOUT).written, ["†state.summary"])
            outcome = client.call("presc-sync", {"_tool": "summarize", "text": "w",
                                                 "_outputPath": "†state.summary"})
            self.assertEqual(outcome.written, ["†state.summary"])
            self.assertEqual(sent.count("TOOLS"), 1)
            # A tool without prescription: fire-and-forget, the call id
            call_id = client.call("presc-sync", {"_tool": "note", "text": "n"})
            self.assertIsInstance(call_id, str)
            self.assertEqual(client.wait(call_id, timeout=TIMEOUT).status, "ok")
            client.call("presc-sync", {"_tool": "note", "text": "n"})
            self.assertEqual(sent.count("TOOLS"), 2)               # One for "note"
            # Once the period has passed, TOOLS is asked again
            client._prescriptions._clock = lambda: time.monotonic() + 10.0
            client.call("presc-sync", {"_tool": "summarize", "text": "v"}, timeout=TIMEOUT)
            self.assertEqual(sent.count("TOOLS"), 3)

    def test_sync_plan_waits_for_the_prescribed_paths(self) -> None:
        with actd.Client(self.broker.client_endpoint, timeout=TIMEOUT) as client:
            sent = count_requests(client)
            results = client.plan("presc-plan", [{"_tool": "summarize", "text": "a"},
                                                 {"_tool": "note", "text": "b"},
                                                 {"_tool": "summarize", "text": "c"}],
                                  timeout=TIMEOUT)
            self.assertIsInstance(results[0], actd.Outcome)
            self.assertEqual(results[0].written, ["†state.summary"])
            self.assertIsInstance(results[1], str)
            self.assertEqual(results[2].result, "summary of c")
            self.assertEqual(sorted(sent), ["PLAN", "TOOLS", "TOOLS"])
            ids = client.plan("presc-plan", [{"_tool": "summarize", "text": "d"}], wait=False)
            self.assertEqual(len(ids), 1)
            self.assertEqual(sent.count("TOOLS"), 2)

    def test_aio_call_waits_for_the_prescribed_path(self) -> None:
        async def scenario() -> None:
            async with actd.aio.AsyncClient(self.broker.client_endpoint,
                                            timeout=TIMEOUT) as client:
                sent = count_requests(client)
                outcome = await client.call("presc-aio", {"_tool": "summarize", "text": "x"},
                                            timeout=TIMEOUT)
                self.assertIsInstance(outcome, actd.Outcome)
                self.assertEqual(outcome.written, ["†state.summary"])
                self.assertEqual(sent, ["TOOLS", "CALL"])
                outcome = await client.call("presc-aio", {"_tool": "summarize", "text": "y"},
                                            timeout=TIMEOUT)
                self.assertEqual(outcome.result, "summary of y")
                self.assertEqual(sent, ["TOOLS", "CALL", "CALL"])
                call_id = await client.call("presc-aio", {"_tool": "summarize", "text": "z"},
                                            wait=False)
                self.assertIsInstance(call_id, str)
                call_id = await client.call("presc-aio", {"_tool": "note", "text": "n"})
                self.assertIsInstance(call_id, str)
                self.assertEqual(sent.count("TOOLS"), 2)
                results = await client.plan("presc-aio", [{"_tool": "summarize", "text": "p"},
                                                          {"_tool": "note"}], timeout=TIMEOUT)
                self.assertEqual(results[0].written, ["†state.summary"])
                self.assertIsInstance(results[1], str)
                self.assertEqual(sent.count("TOOLS"), 2)
        asyncio.run(asyncio.wait_for(scenario(), TIMEOUT * 2))


class WithoutReadRightTest(unittest.TestCase):
    """A client whose CURVE key may write but not read (a tenant with
    ``rights = write``) is refused ``TOOLS`` (``unauthorized``): its call
    is sent as it is, as before (the call id), rather than failing; a
    client of a read,write tenant gets the outcome."""

    def test_a_refused_tools_leaves_the_call_as_it_was(self) -> None:
        with tempfile.TemporaryDirectory(prefix="actd-py-presc-") as folder:
            tenants = (("scribe", "scribe/", "write"), ("clerk", "scribe/", "read,write"))
            keys = {"server": keygen("server", folder)}
            for name in ("scribe", "clerk", "anyworker"):
                path = os.path.join(folder, "anyworkers" if name == "anyworker"
                                    else os.path.join("tenants", name))
                os.makedirs(path, exist_ok=True)
                keygen(name, path)
                keys[name] = os.path.join(path, name + ".key_secret")
            os.makedirs(os.path.join(folder, "clients"))
            config = os.path.join(folder, "actd.cfg")
            with open(config, "w") as handle:
                handle.write(config_text(folder, tenants, groups=()))
            broker = Actd(args=["--config", config])
            broker.start(wait=False)
            server = keys["server"][0]
            try:
                clerk = actd.Client(broker.client_endpoint, timeout=TIMEOUT,
                                    curve_server=server, curve_cert=keys["clerk"])
                scribe = actd.Client(broker.client_endpoint, timeout=TIMEOUT,
                                     curve_server=server, curve_cert=keys["scribe"])
                worker = actd.Worker(broker.worker_endpoint, name="presc-curve",
                                     curve_server=server, curve_cert=keys["anyworker"],
                                     heartbeat_ms=broker.heartbeat_ms, liveness=broker.liveness)
                worker.activity("summarize", output_path="†state.summary")(summarize)
                thread = worker.start()
                try:
                    wait_until(lambda: clerk.tools("summarize").get("summarize", {})
                               .get("workers") == 1, what="the worker over CURVE")
                    with self.assertRaises(actd.ActdError) as refused:
                        scribe.tools("summarize")
                    self.assertEqual(refused.exception.code, "unauthorized")
                    call_id = scribe.call("scribe/a", {"_tool": "summarize", "text": "s"})
                    self.assertIsInstance(call_id, str)
                    outcome = clerk.call("scribe/a", {"_tool": "summarize", "text": "c"},
                                         timeout=TIMEOUT)
                    self.assertEqual(outcome.written, ["†state.summary"])
                    self.assertEqual(clerk.wait(call_id, timeout=TIMEOUT).written,
                                     ["†state.summary"])
                finally:
                    worker.stop(wait=True, timeout=TIMEOUT)
                    worker.close()
                    thread.join(TIMEOUT)
                    clerk.close()
                    scribe.close()
            finally:
                code = broker.stop()
                log = broker.log()
                broker.cleanup()
            self.assertEqual(code, 0, log)


if __name__ == "__main__":
    unittest.main()
