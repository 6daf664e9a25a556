"""The C client library (act_client_call and act_client_plan with wait)
and a tool that prescribes its output path (PROTOCOL.md section 2.1,
``"outputPath": {"const": path}``): a call without ``_outputPath`` is
given the path TOOLS names (the answer kept ACT_CLIENT_PRESCRIBED_MS per
activity) and its outcome is returned; without wait, or to a tool that
prescribes nothing, the call id as before. Driven through
tests/helpers/client_prescribed.c against a real actd and worker."""

import json
import subprocess
import unittest

from harness import DAGGER, Actd, find_binary, wait_for
from test_tools import ToolWorker

SUMMARY = DAGGER + "state.summary"


class ClientPrescribedTest(unittest.TestCase):
    def test_a_call_to_a_prescribing_tool_returns_its_outcome(self):
        with Actd() as actd:
            worker = ToolWorker(actd.worker_endpoint, ["summarize", "note"],
                                {"summarize": {"outputPath": {"const": SUMMARY}}},
                                name="c-presc-worker")
            worker.start()
            try:
                client = actd.client()
                try:
                    wait_for(lambda: all(client.value("TOOLS", name).get(name, {})
                                         .get("workers", 0) == 1
                                         for name in ("summarize", "note")),
                             "the worker to join")
                finally:
                    client.close()
                run = subprocess.run([find_binary("client_prescribed"), actd.client_endpoint],
                                     capture_output=True, text=True, timeout=120)
            finally:
                worker.stop()
            self.assertEqual(run.returncode, 0, run.stderr)
            report = json.loads(run.stdout)
            for step in ("first", "second", "expired"):
                outcome = report[step]["outcome"]
                self.assertIsNotNone(outcome, step)
                self.assertEqual(outcome["status"], "ok", step)
                self.assertEqual(outcome["written"], [SUMMARY], step)
                self.assertEqual(outcome["result"], {"text": "x"}, step)
            self.assertTrue(report["kept"], "a second TOOLS within the period")
            self.assertTrue(report["asked_again"], "no TOOLS once the answer expired")
            # Without wait: the call id, no outcome; a tool without prescription too
            self.assertTrue(report["no_wait"]["id"])
            self.assertIsNone(report["no_wait"]["outcome"])
            self.assertTrue(report["note"]["id"])
            self.assertIsNone(report["note"]["outcome"])
            self.assertEqual(report["asked"], [True, True])
            plan = report["plan"]
            self.assertEqual(len(plan["ids"]), 2)
            self.assertEqual(list(plan["outcomes"]), [plan["ids"][0]])
            self.assertEqual(plan["outcomes"][plan["ids"][0]]["written"], [SUMMARY])


if __name__ == "__main__":
    unittest.main()
