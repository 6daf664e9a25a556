"""actctl as people meet it (actctl(1)): --version, a ping that gives up
soon with a hint when no broker answers, the CURVE defaults from the
environment, --wait's live status line on a terminal and nothing of it in
a pipe, "1 attempt" but "2 attempts", and the bash completion script.

The live line is read through a real pseudo-terminal (actctl decides by
isatty on its stdout). Nothing is timed but the ping's upper bound, which
is generous for a loaded machine.
"""

import json
import os
import pty
import select
import shutil
import subprocess
import tempfile
import time
import unittest

from harness import ROOT, Actd, NoAnswer, Worker, find_binary, free_port, wait_for

ACTCTL = find_binary("actctl")
COMPLETION = os.path.join(ROOT, "etc", "bash-completion", "actctl")
DAGGER = "\u2020"


def actctl(*args, env=None, timeout=60):
    """Run actctl; the CompletedProcess (text)."""
    environment = dict(os.environ)
    for name in ("ACTD_ENDPOINT", "ACTD_SERVER_KEY", "ACTD_CERT"):
        environment.pop(name, None)
    environment.update(env or {})
    return subprocess.run([ACTCTL] + list(args), capture_output=True, text=True,
                          timeout=timeout, env=environment)


class CommandLineTest(unittest.TestCase):
    """What needs no broker."""

    def test_version(self):
        done = actctl("--version")
        self.assertEqual((done.returncode, done.stdout, done.stderr), (0, "actctl 0.1.0\n", ""))

    def test_ping_with_no_broker_gives_up_soon_with_a_hint(self):
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        start = time.monotonic()
        done = actctl("--endpoint", endpoint, "ping")
        elapsed = time.monotonic() - start
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertLess(elapsed, 10.0)     # 2 s by default, not the 30 s of other commands
        self.assertIn("actctl: no reply: is actd running at %s?" % endpoint, done.stderr)
        self.assertNotIn("curve", done.stderr.lower())

    def test_timeout_overrides_the_ping_default(self):
        start = time.monotonic()
        done = actctl("--endpoint", "tcp://127.0.0.1:%d" % free_port(), "--timeout", "4000",
                      "ping")
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertGreaterEqual(time.monotonic() - start, 4.0)

    def test_curve_from_the_environment(self):
        keys = tempfile.mkdtemp(prefix="actctl-keys-")
        self.addCleanup(shutil.rmtree, keys, True)
        made = actctl("keygen", "client", "--dir", keys, "--json")
        self.assertEqual(made.returncode, 0, made.stderr)
        made = json.loads(made.stdout)
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        #  Both names set: CURVE is on, and the hint says what to check
        done = actctl("--endpoint", endpoint, "ping",
                      env={"ACTD_SERVER_KEY": made["public"], "ACTD_CERT": made["file"]})
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertIn("is --curve-server the broker's public key, and is this client's key "
                      "allowed?", done.stderr)
        #  A certificate that is not there is read, and refused
        done = actctl("--endpoint", endpoint, "ping", env={
            "ACTD_SERVER_KEY": made["public"], "ACTD_CERT": os.path.join(keys, "none.key")})
        self.assertEqual(done.returncode, 2)
        self.assertIn("cannot read certificate", done.stderr)
        #  One alone would talk in plain text: refused
        done = actctl("--endpoint", endpoint, "ping", env={"ACTD_SERVER_KEY": made["public"]})
        self.assertEqual(done.returncode, 2)
        self.assertIn("go together", done.stderr)
        #  keygen talks to no broker: a half-set environment does not stop it
        done = actctl("keygen", "other", "--dir", keys, env={"ACTD_SERVER_KEY": made["public"]})
        self.assertEqual(done.returncode, 0, done.stderr)


class CompletionTest(unittest.TestCase):
    """etc/bash-completion/actctl, loaded in bash."""

    def complete(self, *words):
        script = ('source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _actctl; '
                  'printf "%s\\n" "${COMPREPLY[@]}"')
        done = subprocess.run(["bash", "-c", script, COMPLETION, "actctl"] + list(words),
                              capture_output=True, text=True, timeout=60)
        self.assertEqual((done.returncode, done.stderr), (0, ""))
        return sorted(done.stdout.split())

    def test_commands(self):
        self.assertEqual(self.complete("st"), ["stats", "status"])
        self.assertEqual(self.complete("--endpoint", "tcp://h:1", "p"), ["ping", "plan"])
        self.assertIn("keygen", self.complete(""))

    def test_options(self):
        self.assertEqual(self.complete("--cu"), ["--curve-cert", "--curve-server"])
        self.assertEqual(self.complete("call", "c", "{}", "--w"), ["--wait"])
        self.assertIn("--version", self.complete("--"))

    def test_no_command_after_the_command(self):
        self.assertEqual(self.complete("status", "s"), [])

    def test_registered_for_actctl(self):
        done = subprocess.run(["bash", "-c", 'source "$0"; complete -p actctl', COMPLETION],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.stdout.strip(), "complete -F _actctl actctl")


class BrokerTest(unittest.TestCase):
    """Against a real actd and a worker the test answers by hand."""

    def setUp(self):
        self.actd = Actd().start()
        self.addCleanup(self.actd.finish)
        self.worker = Worker(self.actd.worker_endpoint, ["slow"], lambda *args: NoAnswer)
        self.worker.start()
        self.addCleanup(self.worker.stop)
        self.worker.ready.wait(10)
        self.client = self.actd.client()
        self.addCleanup(self.client.close)

    def actctl(self, *args, **kwargs):
        return actctl("--endpoint", self.actd.client_endpoint, *args, **kwargs)

    def progress(self, details):
        """The held task reports progress; returns its task id once STATUS shows it."""
        task = wait_for(lambda: self.worker.tasks, "the task")[0][0]
        self.worker.outbox.put([b"ACTW01", b"PROGRESS", task.encode(),
                                json.dumps(details).encode()])
        wait_for(lambda: self.client.status("1").get("progress") == details, "the progress")
        return task

    def submit(self, stdout):
        """actctl call --wait of a slow call with an output path, writing to stdout."""
        call = {"_tool": "slow", "_outputPath": DAGGER + "state.s"}
        return subprocess.Popen([ACTCTL, "--endpoint", self.actd.client_endpoint, "call",
                                 "ctx", json.dumps(call), "--wait"],
                                stdout=stdout, stderr=subprocess.PIPE)

    def test_wait_on_a_terminal_shows_state_attempts_and_progress(self):
        master, slave = pty.openpty()
        process = self.submit(slave)
        os.close(slave)
        self.addCleanup(os.close, master)
        seen = b""
        self.progress({"pct": 50})
        line = b'\r\x1b[Kcall 1: running, 1 attempt, progress {"pct":50}'
        deadline = time.monotonic() + 30
        while line not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 1)[0]:
                seen += os.read(master, 4096)
        self.assertIn(line, seen)
        self.worker.send_result(self.worker.tasks[0][0], "done")
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:         # EIO: actctl closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        self.assertEqual(process.wait(30), 0, process.stderr.read())
        process.stderr.close()
        #  The line is wiped before the outcome, which is what DONE says
        tail = seen[seen.rindex(line):]
        self.assertEqual(tail.split(b"\r\x1b[K")[-1].replace(b"\r\n", b"\n").decode(),
                         'call 1: ok, branch 0, wrote ["%sstate.s"] at seqs [1] (1 attempt)\n'
                         '"done"\n' % DAGGER)

    def test_wait_in_a_pipe_prints_no_status_line(self):
        process = self.submit(subprocess.PIPE)
        self.progress({"pct": 50})
        time.sleep(1)               # a terminal would have had its line by now
        self.worker.send_result(self.worker.tasks[0][0], "done")
        out, err = process.communicate(timeout=30)
        self.assertEqual(process.returncode, 0, err)
        self.assertEqual(out.decode(), 'call 1: ok, branch 0, wrote ["%sstate.s"] at seqs [1] '
                                       '(1 attempt)\n"done"\n' % DAGGER)
        self.assertEqual(err, b"")

    def test_plurals(self):
        accepted = self.actctl("call", "ctx", json.dumps({"_tool": "slow"}))
        self.assertEqual(accepted.stdout, "accepted: call 1\n")
        wait_for(lambda: self.worker.tasks, "the task")
        self.assertEqual(self.actctl("status", "1").stdout.splitlines()[0],
                         "call 1 in context ctx: running, 1 attempt")
        #  A second call waits behind the first (capacity 1): no attempt yet
        self.actctl("call", "ctx", json.dumps({"_tool": "slow"}))
        self.assertEqual(self.actctl("status", "2").stdout.splitlines()[0],
                         "call 2 in context ctx: queued, 0 attempts")


if __name__ == "__main__":
    unittest.main()
