"""actctl as people meet it (actctl(1)): --version, a ping that gives up
soon with a hint when no broker answers, the CURVE defaults from the
environment, --wait's live status line on a terminal and nothing of it in
a pipe, "1 attempt" but "2 attempts", the bash completion script; and the
commands of streams and contexts (PROTOCOL.md section 1.1): tail (live,
--json, across a restart of actd), contexts, delete and append --key.

The live line is read through a real pseudo-terminal (actctl decides by
isatty on its stdout). Nothing is timed but the ping's upper bound, which
is generous for a loaded machine. Fake brokers and `actctl tools` are in
test_actctl_brokers.py.
"""

import json
import os
import pty
import select
import signal
import shutil
import subprocess
import tempfile
import time
import unittest

from harness import (ROOT, Actd, Fail, NoAnswer, Worker, find_binary, free_port,
                     wait_for)

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

    def test_no_broker_is_said_after_the_connect_timeout_not_the_reply_timeout(self):
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        for args, bound in ((), 5000), (("--connect-timeout", "1000"), 1000):
            start = time.monotonic()
            done = actctl("--endpoint", endpoint, *args, "stats")
            elapsed = time.monotonic() - start
            self.assertEqual(done.returncode, 3, done.stderr)
            self.assertEqual(done.stderr, "actctl: unreachable: no connection to %s in %d ms: "
                             "refused: is actd listening there?\n" % (endpoint, bound))
            self.assertLess(elapsed, 20.0)     # not the 30 s of --timeout
        # 0: as long as --timeout, whose message it is then
        done = actctl("--endpoint", endpoint, "--connect-timeout", "0", "--timeout", "1500",
                      "stats")
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertIn("actctl: no reply: is actd running at %s?" % endpoint, done.stderr)

    def test_a_broker_of_another_curve_key_is_said_to_fail_the_handshake(self):
        import zmq
        public, secret = zmq.curve_keypair()
        other, _ = zmq.curve_keypair()
        context = zmq.Context()
        broker = context.socket(zmq.ROUTER)
        broker.curve_server = True
        broker.curve_publickey, broker.curve_secretkey = public, secret
        port = broker.bind_to_random_port("tcp://127.0.0.1")
        directory = tempfile.mkdtemp()
        try:
            self.assertEqual(actctl("keygen", "me", "--dir", directory).returncode, 0)
            endpoint = "tcp://127.0.0.1:%d" % port
            done = actctl("--endpoint", endpoint, "--curve-server", other.decode(),
                          "--curve-cert", os.path.join(directory, "me.key_secret"),
                          "--connect-timeout", "1000", "stats")
            # Before: "disconnected: ... may or may not have been carried out"
            # at once, exit 1, though no request could have passed
            self.assertEqual(done.returncode, 3, done.stderr)
            self.assertEqual(done.stderr, "actctl: unreachable: no connection to %s in 1000 ms: "
                             "the handshake failed: are both ends on CURVE, with the "
                             "broker's public key?\n" % endpoint)
        finally:
            broker.close(0)
            context.term()
            shutil.rmtree(directory)

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

    def test_a_certificate_that_is_not_a_regular_file_is_refused_at_once(self):
        """$ACTD_CERT is read by libactd as actd reads its own key: a FIFO
        (the certificate, or its NAME.key_secret) hung actctl for good in
        CZMQ's zcert_load, a blocking fopen; a file over 64 KiB was read
        whole. Now each is a usage error, exit 2, within seconds."""
        keys = tempfile.mkdtemp(prefix="actctl-keys-")
        self.addCleanup(shutil.rmtree, keys, True)
        made = json.loads(actctl("keygen", "client", "--dir", keys, "--json").stdout)
        pipe = os.path.join(keys, "pipe.key")
        os.mkfifo(pipe)
        secret = os.path.join(keys, "client.key_secret")
        os.rename(secret, secret + ".kept")
        os.mkfifo(secret)
        huge = os.path.join(keys, "huge.key")
        with open(secret + ".kept") as handle:
            kept = handle.read()
        with open(huge, "w") as handle:
            handle.write(kept + "#" * 70000 + "\n")
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        cases = ((pipe, "cannot read certificate %s: not a certificate" % pipe),
                 (made["file"], "cannot read certificate %s: not a certificate"
                  % made["file"]),
                 (huge, "cannot read certificate %s: not a certificate" % huge))
        for certificate, said in cases:
            with self.subTest(certificate=certificate):
                start = time.monotonic()
                try:
                    done = actctl("--endpoint", endpoint, "ping", timeout=20,
                                  env={"ACTD_SERVER_KEY": made["public"],
                                       "ACTD_CERT": certificate})
                except subprocess.TimeoutExpired:
                    self.fail("actctl hung reading %s (killed after 20 s)" % certificate)
                self.assertEqual((done.returncode, done.stdout), (2, ""), done.stderr)
                self.assertIn(said, done.stderr)
                self.assertLess(time.monotonic() - start, 10.0)

    def test_a_bad_curve_server_key_is_a_usage_error_naming_its_source(self):
        """40 characters of Z85 or exit 2 (it aborted in CZMQ's assertion)."""
        keys = tempfile.mkdtemp(prefix="actctl-keys-")
        self.addCleanup(shutil.rmtree, keys, True)
        made = json.loads(actctl("keygen", "client", "--dir", keys, "--json").stdout)
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        for key in ("short", "~" + made["public"][1:], made["public"] + "00000"):
            done = actctl("--endpoint", endpoint, "--curve-server", key, "--curve-cert",
                          made["file"], "ping")
            self.assertEqual((done.returncode, done.stdout), (2, ""), (key, done.stderr))
            self.assertEqual(done.stderr, "actctl: --curve-server: '%s' is not a CURVE public "
                             "key (40 characters of Z85, as actctl keygen prints it)\n" % key)
        done = actctl("--endpoint", endpoint, "ping",
                      env={"ACTD_SERVER_KEY": "x" * 39 + "~", "ACTD_CERT": made["file"]})
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertTrue(done.stderr.startswith("actctl: $ACTD_SERVER_KEY: "), done.stderr)

    def test_numbers_are_whole_and_in_range_or_a_usage_error(self):
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        bad = [("--from", "abc"), ("--from", "-1"), ("--from", " 1"), ("--from", "+1"),
               ("--from", "9223372036854775808"), ("--limit", "5x"), ("--limit", "0"),
               ("--limit", "1001"), ("--limit", ""), ("--timeout", "10x"),
               ("--timeout", "5000000000"), ("--timeout", "0")]
        for option, value in bad:
            #  A first --timeout keeps a number taken for another short
            done = actctl("--endpoint", endpoint, "--timeout", "500", option, value,
                          "history", "c", timeout=20)
            self.assertEqual((done.returncode, done.stdout), (2, ""), (option, value))
            self.assertTrue(done.stderr.startswith("actctl: %s takes a whole number of "
                                                   % option), (option, value, done.stderr))
        done = actctl("--endpoint", endpoint, "--timeout", "300", "--from", "0",
                      "--limit", "1000", "history", "c")
        self.assertEqual(done.returncode, 3, done.stderr)

    def test_a_port_out_of_range_is_a_bad_endpoint(self):
        for endpoint in ("tcp://127.0.0.1:99999", "tcp://127.0.0.1:0", "tcp://127.0.0.1:65536",
                         "tcp://127.0.0.1:-1", "tcp://127.0.0.1:55x",
                         "tcp://127.0.0.1:5555,tcp://127.0.0.1:70000"):
            with self.subTest(endpoint=endpoint):
                done = actctl("--endpoint", endpoint, "--timeout", "300", "ping", timeout=20)
                self.assertEqual((done.returncode, done.stderr),
                                 (2, "actctl: bad endpoint %s\n" % endpoint))
        #  The bounds themselves are ports, as is a name or an IPv6 address
        for endpoint in ("tcp://127.0.0.1:1", "tcp://127.0.0.1:65535", "tcp://localhost:65535",
                         "tcp://[::1]:65535"):
            with self.subTest(endpoint=endpoint):
                done = actctl("--endpoint", endpoint, "--timeout", "300", "ping", timeout=20)
                self.assertEqual(done.returncode, 3, done.stderr)

    def test_tail_with_no_broker_gives_up_after_its_timeout(self):
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        for args in ((), ("--from", "0")):
            done = actctl("--endpoint", endpoint, "--timeout", "1000", "tail", "t", *args,
                          timeout=30)
            self.assertEqual(done.returncode, 3, done.stderr)
            self.assertIn("actctl: no reply: is actd running at %s?" % endpoint, done.stderr)

    def test_keygen_writes_over_a_keypair_only_with_force(self):
        keys = tempfile.mkdtemp(prefix="actctl-keys-")
        self.addCleanup(shutil.rmtree, keys, True)
        path = os.path.join(keys, "server.key")
        self.assertEqual(actctl("keygen", "server", "--dir", keys).returncode, 0)
        with open(path + "_secret") as secret:
            kept = secret.read()
        done = actctl("keygen", "server", "--dir", keys)
        self.assertEqual((done.returncode, done.stdout), (1, ""))
        self.assertEqual(done.stderr.splitlines(), [
            "actctl: %s is there: keygen writes over a keypair only with --force" % name
            for name in (path, path + "_secret")])
        #  Half a keypair (a secret key alone) is not written over either
        os.unlink(path)
        self.assertEqual(actctl("keygen", "server", "--dir", keys).returncode, 1)
        with open(path + "_secret") as secret:
            self.assertEqual(secret.read(), kept)
        done = actctl("keygen", "server", "--dir", keys, "--force", "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(path + "_secret") as secret:
            self.assertNotEqual(secret.read(), kept)
        self.assertIn(json.loads(done.stdout)["public"], open(path).read())

    def test_keygen_json_holds_any_path(self):
        keys = tempfile.mkdtemp(prefix="actctl-keys-")
        self.addCleanup(shutil.rmtree, keys, True)
        folder = os.path.join(keys, 'a "quoted" \\ folder')
        os.mkdir(folder)
        done = actctl("--json", "keygen", "k", "--dir", folder)
        self.assertEqual(done.returncode, 0, done.stderr)
        made = json.loads(done.stdout)
        self.assertEqual((made["file"], made["secret_file"]),
                         (folder + "/k.key", folder + "/k.key_secret"))
        self.assertTrue(os.path.exists(made["secret_file"]))


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
        self.assertEqual(self.complete("keygen", "k", "--fo"), ["--force", "--format"])

    def test_tools_and_its_formats(self):
        self.assertEqual(self.complete("t"), ["tail", "tools"])
        self.assertEqual(self.complete("tools", "--format", ""),
                         ["anthropic", "json", "mcp", "openai"])
        self.assertEqual(self.complete("--format", "mcp", "too"), ["tools"])

    def test_no_command_after_the_command(self):
        self.assertEqual(self.complete("status", "s"), [])

    def test_registered_for_actctl(self):
        done = subprocess.run(["bash", "-c", 'source "$0"; complete -p actctl', COMPLETION],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.stdout.strip(), "complete -F _actctl actctl")


class ActdTest(unittest.TestCase):
    """Against a real actd, with a raw client beside actctl."""

    def setUp(self):
        self.actd = Actd().start()
        self.addCleanup(self.actd.finish)
        self.client = self.actd.client()
        self.addCleanup(self.client.close)

    def actctl(self, *args, **kwargs):
        return actctl("--endpoint", self.actd.client_endpoint, *args, **kwargs)


class BrokerTest(ActdTest):
    """And a worker the test answers by hand."""

    def setUp(self):
        super().setUp()
        self.worker = Worker(self.actd.worker_endpoint, ["slow"], lambda *args: NoAnswer)
        self.worker.start()
        self.addCleanup(self.worker.stop)
        self.worker.ready.wait(10)

    def progress(self, details):
        """The held task reports progress; returns its task id once STATUS shows it."""
        task = wait_for(lambda: self.worker.tasks, "the task")[0][0]
        self.worker.outbox.put([b"ACTW01", b"PROGRESS", task.encode(),
                                json.dumps(details).encode()])
        wait_for(lambda: self.client.status("1").get("progress") == details, "the progress")
        return task

    def submit(self, stdout, *options):
        """actctl call --wait of a slow call with an output path, writing to stdout."""
        call = {"_tool": "slow", "_outputPath": DAGGER + "state.s"}
        return subprocess.Popen([ACTCTL, "--endpoint", self.actd.client_endpoint] +
                                list(options) + ["call", "ctx", json.dumps(call), "--wait"],
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

    def test_wait_survives_a_crash_of_actd(self):
        """DONE goes to the socket that submitted the call, which a restarted
        actd no longer knows: --wait learns the end from a watch instead."""
        #  The end must come from STATUS, asked when the watch opens: with
        #  a timeout longer than the test's, waiting for the watch instead
        #  (which tells nothing of a call that has already ended) fails here
        process = self.submit(subprocess.PIPE, "--timeout", "600000")
        wait_for(lambda: self.worker.tasks, "the task")
        #  A first attempt may reach the worker before its commit, and so
        #  before ACCEPTED (docs/protocol.md section 8). A reply to STATUS
        #  waits for the commit of its own pass, which comes after the
        #  call's: once it is here, the call is stored and acknowledged.
        self.assertIn("running", self.actctl("status", "1").stdout)
        self.actd.kill()
        self.actd.start()
        #  The call is recovered and dispatched again to the worker, which
        #  connects anew
        task = wait_for(lambda: len(self.worker.tasks) > 1 and self.worker.tasks[1][0],
                        "the second attempt")
        self.worker.send_result(task, "done")
        out, err = process.communicate(timeout=60)
        self.assertEqual(process.returncode, 0, err)
        self.assertEqual(out.decode(), 'call 1: ok, branch 0, wrote ["%sstate.s"] at seqs [1] '
                                       '(2 attempts)\n"done"\n' % DAGGER)

    def test_wait_for_a_fire_and_forget_call(self):
        process = subprocess.Popen([ACTCTL, "--endpoint", self.actd.client_endpoint, "call",
                                    "ctx", json.dumps({"_tool": "slow"}), "--wait"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        task = wait_for(lambda: self.worker.tasks, "the task")[0][0]
        self.worker.send_result(task, "ignored")
        out, err = process.communicate(timeout=60)
        self.assertEqual((process.returncode, out, err), (0, b"call 1: ok\n", b""))

    def test_wait_that_times_out_prints_the_accepted_ids(self):
        """ACCEPTED came, the end did not: the ids are the caller's to follow
        (exit 3), and nothing suggests that actd is not running."""
        call = {"_tool": "slow", "_outputPath": DAGGER + "state.s"}
        done = self.actctl("--timeout", "1500", "call", "ctx", json.dumps(call), "--wait")
        self.assertEqual((done.returncode, done.stdout, done.stderr),
                         (3, "accepted: call 1\n", "actctl: timeout: call 1 has not ended\n"))
        plan = json.dumps([call, {"_tool": "slow"}])
        done = self.actctl("--timeout", "1500", "plan", "ctx", plan, "--wait")
        self.assertEqual((done.returncode, done.stdout), (3, 'accepted: calls ["2","3"]\n'))
        self.assertEqual(done.stderr, "actctl: timeout: call 2 has not ended\n"
                                      "actctl: timeout: call 3 has not ended\n")
        done = self.actctl("--json", "--timeout", "1500", "plan", "ctx", plan, "--wait")
        self.assertEqual((done.returncode, json.loads(done.stdout)), (3, {"4": None, "5": None}))

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


class PlanExitTest(ActdTest):
    """actctl(1) EXIT STATUS: plan --wait exits 1 when a waited call ended
    other than ok, with --json as without."""

    def setUp(self):
        super().setUp()
        self.worker = Worker(self.actd.worker_endpoint, ["ok", "fails"], self.handle)
        self.worker.start()
        self.addCleanup(self.worker.stop)
        self.worker.ready.wait(10)

    @staticmethod
    def handle(activity, params, meta):
        if activity == "fails":
            raise Fail("it fails", code="broken", retryable=False)
        return params.get("v")

    def plan(self, *options, tools=("ok", "ok")):
        calls = [{"_tool": tool, "v": n, "_outputPath": DAGGER + "p.o%d" % n}
                 for n, tool in enumerate(tools)]
        return self.actctl(*options, "plan", "p", json.dumps(calls), "--wait")

    def test_every_call_ok_exits_0(self):
        for options in ((), ("--json",)):
            done = self.plan(*options)
            self.assertEqual(done.returncode, 0, (options, done.stdout, done.stderr))

    def test_a_call_not_ok_exits_1(self):
        done = self.plan(tools=("ok", "fails"))
        self.assertEqual(done.returncode, 1, (done.stdout, done.stderr))
        done = self.plan("--json", tools=("ok", "fails"))
        self.assertEqual(done.returncode, 1, (done.stdout, done.stderr))
        outcomes = json.loads(done.stdout)
        self.assertEqual(sorted(o["status"] for o in outcomes.values()), ["error", "ok"])

    def test_a_fire_and_forget_call_not_ok_exits_1(self):
        """Its end comes from STATUS and a watch (it has no DONE)."""
        calls = json.dumps([{"_tool": "ok", "v": 1}, {"_tool": "fails"}])
        done = self.actctl("plan", "f", calls, "--wait")
        self.assertEqual((done.returncode, done.stdout.splitlines()),
                         (1, ['accepted: calls ["1","2"]', "call 1: ok", "call 2: error"]),
                         done.stderr)
        done = self.actctl("--json", "plan", "f", calls, "--wait")
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertEqual({id: end["state"] for id, end in json.loads(done.stdout).items()},
                         {"3": "ok", "4": "error"})
        done = self.actctl("plan", "f", json.dumps([{"_tool": "ok"}]), "--wait")
        self.assertEqual((done.returncode, done.stdout.splitlines()[1:]), (0, ["call 5: ok"]))


def message(kind, value):
    return json.dumps({"type": "data", "kind": kind, "data": {"v": value}})


class Tail:
    """actctl tail as a running process whose stdout is read a line at a
    time (no timing: a line is waited for, with a long guard)."""

    def __init__(self, endpoint, *args):
        self.process = subprocess.Popen([ACTCTL, "--endpoint", endpoint, "tail"] + list(args),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buffer = b""

    def lines(self, count, guard=60):
        """The next count lines (text, without the newline)."""
        deadline = time.monotonic() + guard
        while self.buffer.count(b"\n") < count:
            if time.monotonic() > deadline:
                raise AssertionError("tail printed only %r" % self.buffer)
            if select.select([self.process.stdout], [], [], 1)[0]:
                chunk = os.read(self.process.stdout.fileno(), 65536)
                if not chunk:
                    raise AssertionError("tail ended: %r %r" % (
                        self.buffer, self.process.stderr.read()))
                self.buffer += chunk
        lines = self.buffer.split(b"\n")
        self.buffer = b"\n".join(lines[count:])
        return [line.decode() for line in lines[:count]]

    def interrupt(self):
        """Ctrl-C; (exit code, what it printed since, its stderr)."""
        self.process.send_signal(signal.SIGINT)
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, (self.buffer + out).decode(), err.decode()

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        if not self.process.stdout.closed:
            self.process.communicate()


class StreamsTest(ActdTest):
    """tail, contexts, delete and append --key."""

    def append(self, context, kind, value):
        done = self.actctl("append", context, message(kind, value))
        self.assertEqual(done.returncode, 0, done.stderr)

    def tail(self, *args):
        tail = Tail(self.actd.client_endpoint, *args)
        self.addCleanup(tail.kill)
        return tail

    def test_tail_prints_the_backlog_then_live_messages_and_ends_on_ctrl_c(self):
        self.append("t", "a", 1)
        self.append("t", "b", 2)
        tail = self.tail("t")
        history = self.client.value("HISTORY", "t", "1", "10")
        self.assertEqual(tail.lines(2), [
            "#%d %s data %s {\"v\":%d}" % (m["_seq"], m["_date"], m["kind"], m["data"]["v"])
            for m in history])
        self.append("t", "c", 3)
        [line] = tail.lines(1)
        self.assertRegex(line, r"^#3 \S+ data c \{\"v\":3\}$")
        code, rest, err = tail.interrupt()
        self.assertEqual((code, rest, err), (0, "", ""))

    def test_tail_from_0_prints_only_new_messages(self):
        self.append("t", "a", 1)
        tail = self.tail("t", "--from", "0", "--json")
        #  Whether the watch is open yet cannot be seen from here: append
        #  until tail prints; what it prints first is a new message, and
        #  from then on each one
        first = None
        while first is None:
            self.append("t", "b", 2)
            if select.select([tail.process.stdout], [], [], 0.5)[0]:
                first = json.loads(tail.lines(1)[0])["seq"]
        self.assertGreater(first, 1)
        count = len(self.client.value("HISTORY", "t", "1", "1000"))
        if count > first:
            self.assertEqual([json.loads(line)["seq"] for line in tail.lines(count - first)],
                             list(range(first + 1, count + 1)))
        self.append("t", "c", 3)
        self.assertEqual(json.loads(tail.lines(1)[0])["seq"], count + 1)
        self.assertEqual(tail.interrupt()[0], 0)

    def test_tail_json_prints_each_event_as_received(self):
        for value in range(3):
            self.append("j", "k", value)
        tail = self.tail("j", "--from", "2", "--json")
        events = [json.loads(line) for line in tail.lines(2)]
        history = self.client.value("HISTORY", "j", "2", "10")
        self.assertEqual(events, [{"seq": m["_seq"], "message": m} for m in history])
        self.append("j", "k", 3)
        [line] = tail.lines(1)
        self.assertEqual(json.loads(line), {"seq": 4, "message": self.client.value(
            "HISTORY", "j", "4", "1")[0]})
        self.assertEqual(tail.interrupt()[0], 0)

    def test_tail_resumes_across_a_restart_of_actd_without_duplicate_or_gap(self):
        for value in range(1, 4):
            self.append("r", "k", value)
        tail = self.tail("r", "--json")
        self.assertEqual([json.loads(line)["seq"] for line in tail.lines(3)], [1, 2, 3])
        #  A crash: the broker forgets the watch; the same store, the same ports
        self.actd.kill()
        self.actd.start()
        for value in range(4, 7):
            self.append("r", "k", value)
        events = [json.loads(line) for line in tail.lines(3)]
        self.assertEqual([event["seq"] for event in events], [4, 5, 6])
        self.assertEqual([event["message"]["data"]["v"] for event in events], [4, 5, 6])
        #  And again, this time with messages stored while it is down... as
        #  far as a client can store them: between the restart and the watch
        self.actd.kill()
        self.actd.start()
        self.append("r", "k", 7)
        self.append("r", "k", 8)
        self.assertEqual([json.loads(line)["seq"] for line in tail.lines(2)], [7, 8])
        code, rest, err = tail.interrupt()
        self.assertEqual((code, rest, err), (0, "", ""))

    def test_tail_calls_shows_changes_of_state(self):
        tail = self.tail("c", "--calls")
        #  Its first line says the watch is open before the call is made
        self.append("c", "k", 1)
        self.assertRegex(tail.lines(1)[0], r"^#1 ")
        accepted = self.actctl("call", "c", json.dumps({"_tool": "nobody"}))
        self.assertEqual(accepted.stdout, "accepted: call 1\n")
        #  No worker serves it: queued for one (it waits for no earlier call,
        #  so it is never told waiting)
        self.assertEqual(tail.lines(1), ["call 1: queued, 0 attempts"])
        self.assertEqual(self.actctl("cancel", "1").returncode, 0)
        self.assertEqual(tail.lines(1), ["call 1: cancelled, 0 attempts"])
        self.assertEqual(tail.interrupt()[0], 0)

    def test_a_message_neither_data_nor_error_shows_its_fields(self):
        note = {"type": "note", "text": "hello", "tags": ["a"], "_instance": "i"}
        self.assertEqual(self.actctl("append", "n", json.dumps(note)).returncode, 0)
        self.append("n", "k", 1)
        lines = self.actctl("history", "n").stdout.splitlines()
        self.assertRegex(lines[0], r'^#1 \S+ note @i \{"text":"hello","tags":\["a"\]\}$')
        self.assertRegex(lines[1], r'^#2 \S+ data k \{"v":1\}$')
        self.assertEqual(self.tail("n").lines(2), lines)

    def test_append_with_a_key_twice_appends_once(self):
        body = message("k", 1)
        first = self.actctl("append", "a", body, "--key", "req-1")
        second = self.actctl("append", "a", body, "--key", "req-1")
        self.assertEqual((first.returncode, first.stdout), (0, "appended: seq 1\n"))
        self.assertEqual((second.returncode, second.stdout), (0, "appended: seq 1\n"))
        other = self.actctl("append", "a", body, "--key", "req-2", "--json")
        self.assertEqual(json.loads(other.stdout), {"seq": 2})
        self.assertEqual(len(self.client.value("HISTORY", "a", "1", "10")), 2)

    def test_contexts_lists_every_page_of_a_prefix(self):
        for name in ("p-1", "p-2", "p-3", "p-4", "p-5", "q-1"):
            self.append(name, "k", 1)
        self.append("p-2", "k", 2)
        done = self.actctl("contexts", "p-", "--limit", "2", "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        listed = [json.loads(line) for line in done.stdout.splitlines()]
        self.assertEqual([entry["context"] for entry in listed],
                         ["p-1", "p-2", "p-3", "p-4", "p-5"])
        self.assertEqual([entry["messages"] for entry in listed], [1, 2, 1, 1, 1])
        self.assertEqual(listed[1]["last_seq"], 2)
        self.assertEqual(listed[1]["pending"], 0)
        table = self.actctl("contexts", "--limit", "4").stdout.splitlines()
        self.assertEqual(table[0].split(), ["CONTEXT", "MESSAGES", "LAST_SEQ", "PENDING",
                                            "UPDATED"])
        self.assertEqual([row.split()[:4] for row in table[1:]], [
            ["p-1", "1", "1", "0"], ["p-2", "2", "2", "0"], ["p-3", "1", "1", "0"],
            ["p-4", "1", "1", "0"], ["p-5", "1", "1", "0"], ["q-1", "1", "1", "0"]])

    def test_delete_prints_the_counts_and_not_found_exits_1(self):
        self.append("d", "k", 1)
        self.append("d", "k", 2)
        self.actctl("call", "d", json.dumps({"_tool": "nobody"}))
        tail = self.tail("d", "--json")
        self.assertEqual([json.loads(line)["seq"] for line in tail.lines(2)], [1, 2])
        done = self.actctl("delete", "d")
        self.assertEqual((done.returncode, done.stdout, done.stderr),
                         (0, "deleted context d: 2 messages, 1 call cancelled\n", ""))
        #  The watch ends with the context: tail prints the end and exits 0
        self.assertEqual(json.loads(tail.lines(1)[0]), {"deleted": True})
        self.assertEqual(tail.process.wait(60), 0)
        again = self.actctl("delete", "d")
        self.assertEqual(again.returncode, 1)
        self.assertTrue(again.stderr.startswith("actctl: not_found: "), again.stderr)


if __name__ == "__main__":
    unittest.main()
