"""actd-exec's start (workers/exec/README.md, Options): CURVE from
--curve-server and --curve-cert or $ACTD_SERVER_KEY and $ACTD_CERT, and
what it refuses at once with status 2, naming the fault, rather than
running a worker that can never serve: an endpoint ZeroMQ refuses, an
output path option actd would refuse at READY, half of CURVE or a key
that is not one, a CMD that is a directory.

Run: ACTD_BIN=build-x/bin/actd /usr/bin/python3 -m unittest -v test_exec_setup
"""

import os
import subprocess
import unittest

from harness import DAGGER, find_binary, remove_scratch, scratch_dir
from test_exec import Exec, FakeBroker
from test_security import CURVE_KEYS, CurveClient, curve_actd, keygen, keys


def run_exec(*args, env=None):
    """actd-exec with args (and env added to ours), expected to exit at once:
    its CompletedProcess. Fails the test when it is still running after 20 s
    (it serves, or retries, for ever)."""
    try:
        return subprocess.run([find_binary("actd-exec")] + list(args), capture_output=True,
                              text=True, timeout=20,
                              env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1", **(env or {})))
    except subprocess.TimeoutExpired as expired:
        raise AssertionError("actd-exec %s did not exit: %s" % (args, expired.stderr)) from None


class TestRefusedAtStart(unittest.TestCase):
    """What a worker could never serve with ends actd-exec at once: exit 2."""

    @classmethod
    def setUpClass(cls):
        cls.dir = scratch_dir("actd-exec-setup-")
        cls.server = keygen("server", cls.dir)
        keygen("w1", cls.dir)
        cls.cert = os.path.join(cls.dir, "w1.key_secret")

    @classmethod
    def tearDownClass(cls):
        remove_scratch(cls.dir)

    def refused(self, *args, env=None, says=()):
        done = run_exec("--activity", "x", *args, env=env)
        self.assertEqual(done.returncode, 2, (args, env, done.stderr))
        for text in says:
            self.assertIn(text, done.stderr, (args, env))
        return done

    def test_an_endpoint_zeromq_refuses(self):
        # Before: "serving", then READY never sent and no word, for ever
        for endpoint in ("foo", "tcp://", "tcp://256.1.1.1:x", "tcp://127.0.0.1:1,tcp:/x"):
            self.refused("--endpoint", endpoint, "--", "/bin/true",
                         says=["actd-exec: --endpoint: ZeroMQ refuses the endpoint '%s'"
                               % endpoint])
        self.refused("--", "/bin/true", env={"ACTD_WORKER_ENDPOINT": "tcp://"},
                     says=["actd-exec: $ACTD_WORKER_ENDPOINT: ZeroMQ refuses the endpoint "
                           "'tcp://' ("])

    def test_an_output_path_actd_would_refuse_at_ready(self):
        # Before: actd refused each READY and the worker tried again for ever
        self.refused("--output-path-pattern", "(", "--", "/bin/true",
                     says=["actd-exec: --output-path-pattern: not a regular expression actd "
                           "takes: ", "missing closing parenthesis"])
        self.refused("--output-path-const", "not a path", "--", "/bin/true",
                     says=["actd-exec: --output-path-const: not an output path: expected a "
                           "reference"])
        self.refused("--output-path-const", DAGGER + "a.b ||", "--", "/bin/true",
                     says=["--output-path-const: not an output path"])

    def test_half_of_curve_or_a_key_that_is_not_one(self):
        server = self.server[0]
        self.refused("--curve-server", server, "--", "/bin/true",
                     says=["--curve-server and --curve-cert go together"])
        self.refused("--", "/bin/true", env={"ACTD_SERVER_KEY": server},
                     says=["--curve-server and --curve-cert go together "
                           "(or $ACTD_SERVER_KEY and $ACTD_CERT)"])
        self.refused("--", "/bin/true", env={"ACTD_CERT": self.cert},
                     says=["go together"])
        self.refused("--curve-server", "short", "--curve-cert", self.cert, "--", "/bin/true",
                     says=["actd-exec: --curve-server: 'short' is not a CURVE public key"])
        self.refused("--", "/bin/true", env={"ACTD_SERVER_KEY": server[:-1] + "\"",
                                             "ACTD_CERT": self.cert},
                     says=["actd-exec: $ACTD_SERVER_KEY: '%s\"' is not a CURVE public key"
                           % server[:-1]])
        missing = os.path.join(self.dir, "nobody.key_secret")
        self.refused("--", "/bin/true", env={"ACTD_SERVER_KEY": server, "ACTD_CERT": missing},
                     says=["actd-exec: $ACTD_CERT: cannot load the certificate " + missing])
        self.refused("--curve-server", server, "--curve-cert", missing, "--", "/bin/true",
                     says=["actd-exec: --curve-cert: cannot load the certificate"])

    def test_a_cmd_that_is_a_directory(self):
        # Before: accepted, and every task failed exit_127, retried
        self.refused("--", self.dir, says=["%s: command not found, or not an executable file"
                                           % self.dir])

    def test_empty_variables_are_unset(self):
        broker = FakeBroker().start()
        try:
            env = {"ACTD_SERVER_KEY": "", "ACTD_CERT": "", "ACTD_WORKER_ENDPOINT": ""}
            with Exec(broker.endpoint, "empty", ["/bin/true"], env=env):
                self.assertEqual(broker.receive()[1], "READY")
        finally:
            broker.stop()


class TestCurve(unittest.TestCase):
    """actd-exec against an actd with CURVE on (test_security.curve_actd):
    its keys from the command line, or from the environment as actctl takes
    them, the command line winning."""

    def setUp(self):
        self.dir = scratch_dir("actd-exec-curve-")
        self.addCleanup(remove_scratch, self.dir)
        self.actd = curve_actd(self.dir)
        self.server, self.alice = (keys(os.path.join(self.dir, path)) for path in CURVE_KEYS[:2])
        self.cert = os.path.join(self.dir, "workers", "w1.key_secret")
        self.actd.start(wait=False)
        self.client = CurveClient(self.actd.client_endpoint, self.server[0], self.alice)

    def tearDown(self):
        self.client.close()
        code = self.actd.stop()
        log = self.actd.log()
        self.actd.cleanup()
        self.assertEqual(code, 0, log)

    def call_hi(self, context):
        reply = self.client.send("CALL", context, {"_tool": "hi", "_outputPath": DAGGER + "r.hi",
                                                   "_retry": {"max_attempts": 1}})
        self.assertEqual(self.client.wait(reply, "ACCEPTED", timeout=30)[0], "ACCEPTED")
        return self.client.wait(reply, "DONE", timeout=60)

    def test_keys_from_the_environment(self):
        # Before: the environment was ignored; the worker talked plain text
        # to a CURVE socket and never joined
        env = {"ACTD_SERVER_KEY": self.server[0], "ACTD_CERT": self.cert}
        with Exec(self.actd.worker_endpoint, "hi", ["/bin/echo", "hi"], env=env):
            done = self.call_hi("env")
        self.assertIn('"status":"ok"', done[2])
        self.assertIn('"result":"hi\\n"', done[2])

    def test_keys_from_the_command_line_win_over_the_environment(self):
        env = {"ACTD_SERVER_KEY": "not a key", "ACTD_CERT": "/nonexistent"}
        with Exec(self.actd.worker_endpoint, "hi", ["/bin/echo", "hi"],
                  "--curve-server", self.server[0], "--curve-cert", self.cert, env=env):
            done = self.call_hi("flags")
        self.assertIn('"result":"hi\\n"', done[2])


if __name__ == "__main__":
    unittest.main()
