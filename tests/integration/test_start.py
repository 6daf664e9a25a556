"""The README's first command, scripts/start.sh, as a newcomer runs it:
actd with its embedded defaults, the example worker, actd-http, one call
and its output, then Ctrl-C. The README shows its output; this test holds
the script to it. It runs on the test suite's own build tree
($ACTD_BUILD_DIR: the script builds it, already up to date, as it was
configured), on free ports, in a scratch working directory."""

import os
import signal
import socket
import subprocess
import time
import unittest
import urllib.request

from harness import ROOT, free_port, remove_scratch, scratch_dir

#  What the README shows of a run (section "Two commands"), line by line
EXPECTED = [
    "== one call: the example worker's 'upper' writes its result to \u2020state.greeting",
    'call 1: ok, branch 0, wrote ["\u2020state.greeting"] at seqs [1] (1 attempt)',
    '"HELLO FROM ACTD"',
    "== resolve \u2020state.greeting in context demo",
    '"HELLO FROM ACTD"',
]


def build_dir():
    """The build tree of the actd under test (ACTD_BIN is TREE/bin/actd)."""
    actd = os.environ.get("ACTD_BIN") or os.path.join(ROOT, "build-asan", "bin", "actd")
    return os.path.dirname(os.path.dirname(os.path.realpath(actd)))


def listening(port):
    """Whether something accepts TCP connections on 127.0.0.1:port."""
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


class StartScriptTest(unittest.TestCase):

    def setUp(self):
        self.dir = scratch_dir("actd-start")
        self.addCleanup(remove_scratch, self.dir)
        self.ports = [free_port() for _ in range(3)]
        env = dict(os.environ, ACTD_BUILD_DIR=build_dir())
        for name in ("ACTD_CLIENT_ENDPOINT", "ACTD_WORKER_ENDPOINT", "ACTD_HTTP_LISTEN"):
            env.pop(name, None)
        self.log = open(os.path.join(self.dir, "stderr"), "w+")
        self.addCleanup(self.log.close)
        #  Its own session, as a terminal's foreground job: Ctrl-C reaches
        #  the script and the programs it started
        self.process = subprocess.Popen(
            ["bash", os.path.join(ROOT, "scripts", "start.sh"),
             "--client-port", str(self.ports[0]), "--worker-port", str(self.ports[1]),
             "--http-port", str(self.ports[2])],
            cwd=self.dir, env=env, stdout=subprocess.PIPE, stderr=self.log,
            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        self.addCleanup(self.kill)

    def kill(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process.stdout.close()

    def stderr(self):
        self.log.seek(0)
        return self.log.read()[-3000:]

    def read_until(self, prefix, timeout=300):
        """Lines of stdout up to the first starting with prefix."""
        lines = []
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = self.process.stdout.readline()
            if not line:
                self.fail("start.sh ended (%s) before '%s': %r\n%s"
                          % (self.process.wait(), prefix, lines, self.stderr()))
            lines.append(line.rstrip("\n"))
            if line.startswith(prefix):
                return lines
        self.fail("no '%s' within %d s: %r" % (prefix, timeout, lines))

    def test_the_first_command_runs_as_the_readme_shows(self):
        lines = self.read_until("== dashboard:")
        #  The worker and actd-http say they started on the same terminal,
        #  in between (the README leaves those lines out)
        others = [line for line in lines if line.startswith(("I: ", "actd-http: "))]
        self.assertTrue(any("actd-example-worker example serving upper" in line
                            for line in others), lines)
        self.assertIn("actd-http: listening on http://127.0.0.1:%d/" % self.ports[2],
                      "\n".join(others))
        lines = [line for line in lines if line not in others]
        first = lines.index(EXPECTED[0])
        self.assertEqual(lines[first:first + len(EXPECTED)], EXPECTED, lines)
        running = lines[first + len(EXPECTED)]
        self.assertTrue(running.startswith(
            "== actd is running (store %s, clients on tcp://127.0.0.1:%d, workers on "
            "tcp://127.0.0.1:%d). Try: "
            % (os.path.join(os.path.realpath(self.dir), "actd.db"), *self.ports[:2])), running)
        self.assertEqual(lines[-1], "== dashboard: http://127.0.0.1:%d/   (API: curl "
                         "http://127.0.0.1:%d/v1/stats, metrics: http://127.0.0.1:%d/metrics)"
                         % ((self.ports[2],) * 3), lines)
        #  The store is where it says, and the dashboard and the API answer
        self.assertTrue(os.path.exists(os.path.join(self.dir, "actd.db")))
        base = "http://127.0.0.1:%d" % self.ports[2]
        with urllib.request.urlopen(base + "/", timeout=10) as page:
            self.assertIn("<html", page.read().decode().lower())
        with urllib.request.urlopen(base + "/v1/stats", timeout=10) as stats:
            self.assertIn('"contexts"', stats.read().decode())
        #  Ctrl-C: the script ends 0 and takes actd, the worker and
        #  actd-http with it
        os.killpg(self.process.pid, signal.SIGINT)
        self.assertEqual(self.process.wait(60), 0, self.stderr())
        for port in self.ports:
            self.assertFalse(listening(port), "port %d still open after Ctrl-C" % port)
        #  A sanitizer's report at a program's exit (a leak) would not
        #  change the script's status: its text would
        self.assertNotIn("Sanitizer", self.stderr())
        #  No process of its group runs on. One that has exited but that
        #  init has not reaped yet (ps: state Z, parent 1) ran to its end:
        #  a CI run failed on such an actd-example-worker, <defunct>
        deadline = time.time() + 5
        while True:
            try:
                os.killpg(self.process.pid, 0)
            except ProcessLookupError:
                break
            left = subprocess.run(["ps", "-o", "pid,ppid,stat,etime,args", "-g",
                                   str(self.process.pid)], capture_output=True, text=True)
            running = [line for line in left.stdout.splitlines()[1:]
                       if not line.split()[2].startswith("Z")]
            if not running:
                break
            if time.time() > deadline:
                self.fail("still running after the script ended:\n%s\nits stderr:\n%s"
                          % (left.stdout, self.stderr()))
            time.sleep(0.1)


if __name__ == "__main__":
    unittest.main()
