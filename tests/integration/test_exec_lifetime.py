"""actd-exec over its life and its commands' (workers/exec/README.md):
a command does not outlive a worker that dies, SIGHUP and SIGQUIT stop
the worker as SIGTERM does, a large result keeps the worker alive, a
daemon started as the README says outlives its task, what a command
leaves in the worker's private directory is removed, and --capacity
holds per broker of an endpoint list.

Run: ACTD_BIN=build-x/bin/actd /usr/bin/python3 -m unittest -v test_exec_lifetime
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import time
import unittest

from harness import Actd, actd_with_config, free_port, wait_for
from test_exec import (ONE_ATTEMPT, Exec, ExecTest, alive, read_pids, ref, script,
                       wait_gone)


class TestWorkerEnd(ExecTest):
    """However the worker ends, its commands end."""

    def start_sleeper(self, activity, signal_name):
        """A worker serving sleeper.sh, running one: the worker, the pids
        of the script and its sleep, and the call's id."""
        # Its private directory in self.tmp: a SIGKILL leaves it behind
        worker = self.serve(activity, [script("sleeper.sh")], "--kill-grace-ms", "300",
                            env={"TMPDIR": self.tmp}).start()
        self.addCleanup(shutil.rmtree, worker.dir, True)
        self.addCleanup(lambda: worker.process.poll() is None and worker.process.kill())
        pidfile = os.path.join(self.tmp, signal_name)
        reply = self.client.request("CALL", "exec-end", {"_tool": activity, "pidfile": pidfile,
                                                         "seconds": 120})
        self.assertEqual(reply[0], "ACCEPTED")
        pids = read_pids(pidfile)
        self.addCleanup(lambda: [os.kill(pid, signal.SIGKILL) for pid in pids if alive(pid)])
        return worker, pids, reply[1]

    def test_a_command_dies_with_a_killed_worker(self):
        """PR_SET_PDEATHSIG: the command (not what it started in its group,
        here the sleep) is killed with the worker; before, it went on while
        the broker ran the call again elsewhere."""
        worker, pids, call_id = self.start_sleeper("end-kill", "kill")
        worker.process.kill()
        worker.process.wait()
        wait_gone(pids[:1], timeout=10)
        self.assertEqual(self.client.request("CANCEL", call_id), ["OK"])

    def test_sighup_and_sigquit_stop_the_worker_as_sigterm_does(self):
        """Exit 0 and the whole process group of each command stopped;
        before, the worker died at once and its commands went on."""
        for number in (signal.SIGHUP, signal.SIGQUIT):
            worker, pids, call_id = self.start_sleeper("end-%d" % number, "sig%d" % number)
            worker.process.send_signal(number)
            self.assertEqual(worker.process.wait(60), 0, worker.log())
            self.assertIn("stopping 1 running command(s)", worker.log())
            wait_gone(pids, timeout=10)
            self.assertEqual(self.client.request("CANCEL", call_id), ["OK"])


class TestLargeResult(unittest.TestCase):
    """A result of 100 MB within the limits: answered without a silence
    that makes the broker declare the worker lost. Before, turning it
    into RESULT held the loop (no heartbeat) for seconds: the call was
    run again and again."""

    SIZE = 100 * 1000 * 1000

    def test_a_100_mb_result_is_answered_in_one_attempt(self):
        actd = actd_with_config("server\n    max_message_bytes = 268435456\n",
                                heartbeat_ms=500, liveness=3).start()
        self.addCleanup(actd.finish)
        client = actd.client()
        self.addCleanup(client.close)
        runs = os.path.join(actd.dir, "runs")
        command = ["/bin/sh", "-c", "echo run >> '%s'; head -c %d /dev/zero | tr '\\0' a"
                   % (runs, self.SIZE)]
        with Exec(actd.worker_endpoint, "big", command, "--max-output", "268435456",
                  heartbeat_ms=500):
            # Fire-and-forget: what is measured is the worker, not how long
            # actd takes to store 100 MB
            reply = client.request("CALL", "exec-big", {
                "_tool": "big", "_retry": {"max_attempts": 3, "initial_ms": 100}})
            self.assertEqual(reply[0], "ACCEPTED", reply)
            status = client.wait_status(reply[1], ["ok", "error", "timeout", "cancelled"],
                                        timeout=300.0)
        self.assertEqual((status["state"], status["attempts"]), ("ok", 1), status)
        with open(runs) as handle:
            self.assertEqual(handle.read(), "run\n")
        self.assertNotIn("silent for too long", actd.log())

    def test_a_raised_max_output_raises_the_librarys_limit(self):
        # The C library refuses a result over its max_message_bytes (actd's
        # default unless set): actd-exec sets it from --max-output, so a
        # 2 MB result, within both raised limits, is stored
        actd = actd_with_config("server\n    max_message_bytes = 4194304\n").start()
        self.addCleanup(actd.finish)
        client = actd.client()
        self.addCleanup(client.close)
        size = 2 * 1000 * 1000
        command = ["/bin/sh", "-c", "head -c %d /dev/zero | tr '\\0' a" % size]
        with Exec(actd.worker_endpoint, "two-mb", command, "--max-output", "4194304"):
            reply = client.request("CALL", "exec-two", {
                "_tool": "two-mb", "_outputPath": ref("r.big")})
            self.assertEqual(reply[0], "ACCEPTED", reply)
            status = client.wait_status(reply[1], ["ok", "error", "timeout", "cancelled"],
                                        timeout=60.0)
        self.assertEqual((status["state"], status["attempts"]), ("ok", 1), status)
        self.assertEqual(len(client.resolve("exec-two", ref("r.big"))), size)


class TestResultText(ExecTest):
    """The result's text is built in one pass, as act_json_dump writes it."""

    def test_every_byte_that_needs_an_escape_comes_back_as_it_was(self):
        text = "".join(chr(c) for c in range(1, 32)) + '"\\/ caf\u00e9 \u2020 ' * 3 + "end"
        escaped = "".join("\\%03o" % byte for byte in text.encode())
        with self.serve("escapes", [script("bytes_out.sh"), escaped]):
            _, outcome = self.outcome({"_tool": "escapes", "_outputPath": ref("r.esc")})
            self.assertEqual((outcome["status"], outcome["result"]), ("ok", text))
            self.assertEqual(self.client.resolve("exec", ref("r.esc")), text)

    def test_a_json_stdout_is_its_value(self):
        # Sent as the command wrote it (actd keeps a worker's text, and
        # writes numbers again in their shortest form)
        body = ' \n{"n": 1E2, "s": "caf\\u00e9", "a": [ 1 , 0.10 ]}\n '
        with self.serve("as-written", ["/usr/bin/printf", "%s", body]):
            _, outcome = self.outcome({"_tool": "as-written", "_outputPath": ref("r.w")})
            self.assertEqual(outcome["status"], "ok", outcome)
            self.assertEqual(outcome["result"], {"n": 100.0, "s": "caf\u00e9", "a": [1, 0.1]})


class TestLeavingTheGroup(ExecTest):
    """A daemon started as the README says outlives its task."""

    def test_a_daemon_started_with_setsid_w_outlives_its_task(self):
        # The README's pattern before ("setsid daemon &", then exit) lost
        # the race with the group's SIGKILL most times
        for run in range(10):
            pidfile = os.path.join(self.tmp, "daemon%d" % run)
            with self.serve("daemon", [script("daemon.sh")]):
                _, outcome = self.outcome({"_tool": "daemon", "_outputPath": ref("r.daemon"),
                                           "pidfile": pidfile, "_retry": ONE_ATTEMPT})
                self.assertEqual((outcome["status"], outcome["result"]), ("ok", "started"))
                pid = read_pids(pidfile)[0]
                self.addCleanup(lambda pid=pid: alive(pid) and os.kill(pid, signal.SIGKILL))
                time.sleep(0.2)
                self.assertTrue(alive(pid), "run %d: the daemon was killed" % run)


class TestPrivateDirectory(ExecTest):
    """The worker's private directory (params and branch files) is left empty
    after each task and removed when the worker stops, whatever a command
    made there."""

    def test_a_branch_file_made_a_directory_is_removed(self):
        tmpdir = os.path.join(self.tmp, "tmpdir")
        os.mkdir(tmpdir)
        with self.serve("branch-dir", [script("branch_dir.sh")], env={"TMPDIR": tmpdir}) as worker:
            _, outcome = self.outcome({"_tool": "branch-dir", "_outputPath": ref("r.bd"),
                                       "_retry": ONE_ATTEMPT})
            self.assertEqual(outcome["status"], "error")
            self.assertEqual(outcome["error"]["code"], "bad_branch")
            private = glob.glob(os.path.join(tmpdir, "actd-exec.*"))
            self.assertEqual(len(private), 1, private)
            wait_for(lambda: os.listdir(private[0]) == ["1.branch.junk"],
                     "the branch directory removed: %s" % os.listdir(private[0]), 10)
            code = worker.stop()
        self.assertEqual(code, 0)
        self.assertEqual(os.listdir(tmpdir), [])


class TestSeveralBrokers(unittest.TestCase):
    """With a list of brokers, --capacity holds per broker (as
    docs/operations.md says of every worker), and the log says so."""

    def test_capacity_is_per_broker(self):
        brokers = [Actd(heartbeat_ms=200, liveness=3).start() for _ in range(2)]
        for actd in brokers:
            self.addCleanup(actd.finish)
        clients = [actd.client() for actd in brokers]
        for client in clients:
            self.addCleanup(client.close)
        folder = os.path.join(brokers[0].dir, "meet")
        os.mkdir(folder)
        endpoints = ",".join(actd.worker_endpoint for actd in brokers)
        with Exec(endpoints, "meet", [script("rendezvous.sh")], "--capacity", "1") as worker:
            sent = [client.send("CALL", "exec-meet", {"_tool": "meet", "dir": folder,
                                                      "_outputPath": ref("m.seen")})
                    for client in clients]
            for client, rid in zip(clients, sent):
                done = json.loads(client.wait(rid, "DONE", timeout=120.0)[2])
                # Each run saw the other: both ran at once, one per broker
                self.assertEqual((done["status"], done["result"]), ("ok", 2))
            log = worker.log()
        self.assertIn("(capacity 1 per broker)", log)
        # Before: "2 commands still running from before a reconnect"
        self.assertNotIn("reconnect", log)


class TestSignalAtStart(unittest.TestCase):
    """A stop asked for while actd-exec starts (systemctl stop right after
    start) ends it: exit 0 once its handlers are in, else death by that
    signal, never a hang, an abort or a sanitizer report. actd-exec starts
    no CZMQ actor, so the pipe assert that a signal at start could trigger
    in actd (test_operations.SignalAtStartTest) has no place here; this
    holds it so."""

    def test_every_stop_signal_at_every_moment_of_the_start_ends_it(self):
        endpoint = "tcp://127.0.0.1:%d" % free_port()     # nobody listens
        outcomes = set()
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
            for delay in (0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.3):
                worker = Exec(endpoint, "start-signal", ["/bin/cat"])
                worker.start()
                time.sleep(delay)
                worker.process.send_signal(number)
                try:
                    code = worker.process.wait(10)
                except subprocess.TimeoutExpired:
                    worker.process.kill()
                    worker.process.wait()
                    code = "hung"
                log = worker.log()
                shutil.rmtree(worker.dir, ignore_errors=True)
                what = "signal %d after %g s" % (number, delay)
                self.assertIn(code, (0, -number), "%s: %s\n%s" % (what, code, log))
                for bad in ("AddressSanitizer", "runtime error", "Assertion"):
                    self.assertNotIn(bad, log, what)
                outcomes.add(code == 0)
        # Both ends were reached: some signals came before the handlers
        # and some after (else the delays test nothing)
        self.assertEqual(outcomes, {True, False})


if __name__ == "__main__":
    unittest.main()
