"""A Node worker (workers/node) whose wall clock steps while it runs a task.

The worker runs from lang/node_clock_worker.js with libclock_step.so
(tests/helpers/clock_step.c) preloaded: its Date.now () is the real time
plus an offset the test writes to a file; its monotonic clock, and actd's clocks, are left
alone. The step comes half a second into a 2.5 s task, with actd's
heartbeat_ms 200 and liveness 3. The package must time its heartbeats and
the broker's liveness on a monotonic clock: when it timed them on
Date.now (), a step back stopped its heartbeats (actd declared it lost
and ran the task a second time) and a step forward made it drop the
broker as silent (the same). Here the task ends ok at its first attempt,
and the worker keeps its one connection.

Node.js and workers/node/node_modules are required (ctest runs this after
the node_modules fixture); the tests fail, never skip, without them.

Run: cd tests/integration && ACTD_BIN=build-x/bin/actd /usr/bin/python3 -m unittest -v test_node_clock
"""

import json
import os
import subprocess
import time
import unittest

from harness import DAGGER, Actd, end_process, find_binary, node_problem, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_WORKER = os.path.join(HERE, "lang", "node_clock_worker.js")
HEARTBEAT_MS = 200
TASK_MS = 2500
HOUR_MS = 3600 * 1000


class TestNodeWorkerClockStep(unittest.TestCase):

    def setUp(self):
        if node_problem():
            self.fail(node_problem())
        self.actd = Actd(heartbeat_ms=HEARTBEAT_MS, liveness=3)
        self.addCleanup(self.actd.cleanup)
        self.actd.start()
        self.clock = os.path.join(self.actd.dir, "clockshift")
        self.step(0)
        self.log_path = os.path.join(self.actd.dir, "node-worker.log")
        with open(self.log_path, "w") as log:
            self.node = subprocess.Popen(
                ["node", NODE_WORKER, self.actd.worker_endpoint, str(HEARTBEAT_MS)],
                stdout=log, stderr=subprocess.STDOUT,
                env=dict(os.environ, LD_PRELOAD=find_binary("libclock_step.so"),
                         ACTD_CLOCK_STEP=self.clock))
        self.addCleanup(end_process, self.node)
        wait_for(lambda: "READY #1" in self.node_log(), "the Node worker's READY")
        self.client = self.actd.client()
        self.addCleanup(self.client.close)

    def node_log(self):
        with open(self.log_path, errors="replace") as log:
            return log.read()

    def step(self, offset_ms):
        """The worker's wall clock is now real time + offset_ms (the library
        reads the file again every 10 ms)."""
        with open(self.clock + ".tmp", "w") as handle:
            handle.write("%d\n" % offset_ms)
        os.replace(self.clock + ".tmp", self.clock)

    def run_stepped(self, offset_ms):
        """A 2.5 s task during which the worker's wall clock steps by
        offset_ms: it ends ok at attempt 1, on the one connection."""
        request = self.client.send("CALL", "clock", {
            "_tool": "slow", "ms": TASK_MS, "_outputPath": DAGGER + "state.r",
            "_retry": {"max_attempts": 3, "initial_ms": 100}})
        accepted = self.client.wait(request, "ACCEPTED")
        self.client.wait_status(accepted[1], {"running"})
        time.sleep(0.5)
        self.step(offset_ms)
        done = self.client.wait(request, "DONE", timeout=30)
        outcome = json.loads(done[2])
        time.sleep(3 * HEARTBEAT_MS * 3 / 1000)     # three liveness periods after
        log = self.node_log()
        self.assertEqual((outcome["status"], outcome["attempts"]), ("ok", 1),
                         "%s\nworker:\n%s" % (outcome, log))
        result = outcome["result"]
        self.assertEqual(result["attempt"], 1)
        #  The worker's Date.now () did step (the shim works in node)
        self.assertLess(abs(result["wall"] - time.time() * 1000 - offset_ms), 10000, result)
        #  task.remaining () ran on the monotonic clock
        self.assertGreaterEqual(result["deadlineMs"] - result["remaining"], TASK_MS, result)
        self.assertLess(result["deadlineMs"] - result["remaining"], TASK_MS + 2000, result)
        #  One READY, no disconnect, and actd still has it
        self.assertEqual((log.count("READY"), log.count("disconnect")), (1, 0), log)
        workers = [w["name"] for w in self.client.value("STATS")["workers"]]
        self.assertEqual(workers, ["clock-node-worker"], log)

    def test_a_step_back_of_an_hour_keeps_the_heartbeats_going(self):
        self.run_stepped(-HOUR_MS)

    def test_a_step_forward_of_a_day_does_not_make_the_broker_silent(self):
        self.run_stepped(24 * HOUR_MS)


if __name__ == "__main__":
    unittest.main()
