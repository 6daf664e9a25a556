"""Operations: SIGHUP reload, sd_notify, the scheduling policy of
libzmq's I/O threads, and signals while actd starts.

What is checked is what docs/operations.md and actd(8) promise: SIGHUP
applies the log level and the per-activity settings and logs each change
(a file that does not load changes nothing), actd tells systemd READY=1
only once its sockets are bound, then STATUS=, WATCHDOG=1 and
STOPPING=1. Nothing is timed: tests wait for states or messages, with
generous deadlines. The config file's own tests are in
test_operations_config.py, the store's in test_operations_store.py, an
upgrade's in test_operations_upgrade.py, and what "cmake --install" puts
where in test_operations_install.py; they use the helpers here.
"""

import ctypes
import errno
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import textwrap
import time
import unittest

from harness import (ROOT, Actd, Client, Worker, find_binary, free_port, remove_scratch,
                     scratch_dir, wait_for)

EXAMPLE = os.path.join(ROOT, "etc", "actd.cfg")
SETTINGS_SOURCE = os.path.join(ROOT, "daemon", "act_settings.c")
DAGGER = "\u2020"


def write(path, text):
    with open(path, "w") as handle:
        handle.write(textwrap.dedent(text).lstrip("\n"))
    return path


def sqlite_store(test):
    """A path for a SQLite store in a directory removed after test: these
    tests are about the SQLite file, whatever ACTD_TEST_STORE says."""
    directory = tempfile.mkdtemp(prefix="actd-store-")
    test.addCleanup(shutil.rmtree, directory, True)
    return os.path.join(directory, "actd.db")


def ping(actd):
    """PING on a fresh client socket; returns the reply."""
    client = actd.client()
    try:
        return client.request("PING")
    finally:
        client.close()


def port_in_use(port):
    """True when something listens on 127.0.0.1:port (our bind fails)."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def config_paths(text):
    """The settings a ZPL text sets, as "section/name" paths with values."""
    paths, stack = {}, []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 4
        name, _, value = stripped.partition("=")
        stack[depth:] = [name.strip()]
        paths["/".join(stack)] = value.strip()
    return paths


def enable_commented_settings(text):
    """The example with its commented-out settings turned on. A disabled
    setting is its line with a # in front: after the #, a multiple of 4
    spaces and a name (a comment has 2 or 3 spaces after its #)."""
    return re.sub(r"(?m)^( *)#((?:    )*[a-z_])", r"\1\2", text)


class RawActd:
    """An actd started with exactly the arguments given (the harness always
    adds its own endpoint, store and log flags), logging to a file."""

    def __init__(self, args, env=None, prefix=(), binary=None):
        self.dir = scratch_dir("actd-ops-")
        self.log_path = os.path.join(self.dir, "actd.log")
        environment = dict(os.environ)
        environment.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        environment.update(env or {})
        try:
            with open(self.log_path, "w") as log:
                self.process = subprocess.Popen(list(prefix) + [binary or find_binary("actd")]
                                                + list(args),
                                                stdout=log, stderr=log, env=environment)
        except BaseException:
            remove_scratch(self.dir)    # no process: cleanup() will not be called
            raise

    def log(self):
        with open(self.log_path, errors="replace") as handle:
            return handle.read()

    def wait_ping(self, endpoint):
        client = Client(endpoint)
        try:
            def pong():
                if self.process.poll() is not None:
                    raise AssertionError("actd exited %s:\n%s" % (self.process.returncode, self.log()))
                try:
                    return client.request("PING", timeout=0.5) == ["PONG"]
                except TimeoutError:
                    return False
            wait_for(pong, "PONG from " + endpoint)
        finally:
            client.close()

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("actd did not stop on SIGTERM:\n" + self.log())

    def cleanup(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        remove_scratch(self.dir)


class NotifySocket:
    """A stand-in for systemd's notify socket: a Unix datagram socket whose
    path goes in NOTIFY_SOCKET. Each datagram is one sd_notify message."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="actd-notify-")
        self.path = os.path.join(self.dir, "notify")
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(self.path)
        self.messages = []

    def next(self, prefix, timeout=30.0):
        """The next message with a line starting with prefix, as a dict of
        its lines (later messages are kept in self.messages too)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.socket.settimeout(max(0.01, deadline - time.time()))
            try:
                text = self.socket.recv(65536).decode()
            except socket.timeout:
                break
            self.messages.append(text)
            if any(line.startswith(prefix) for line in text.split("\n")):
                return dict(line.split("=", 1) for line in text.split("\n") if "=" in line)
        raise TimeoutError("no %s message; got %s" % (prefix, self.messages))

    def close(self):
        self.socket.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def thread_policies(pid):
    """{thread name: [scheduling policy of each thread of that name]} of pid."""
    policies = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as handle:
            name = handle.read().strip()
        policies.setdefault(name, []).append(os.sched_getscheduler(int(tid)))
    return policies


def deny_sched_batch():
    """preexec_fn: a seccomp filter, through libseccomp, that fails
    sched_setscheduler with EPERM when it asks for SCHED_BATCH, as a
    stricter sandbox might; kept across exec (libseccomp sets
    no_new_privs). Not every call: libzmq sets each of its threads' own
    policy again as it starts, and aborts when that fails."""
    import ctypes.util

    class ArgCmp(ctypes.Structure):                     # struct scmp_arg_cmp
        _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                    ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]

    lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2")
    lib.seccomp_init.restype = ctypes.c_void_p
    context = lib.seccomp_init(ctypes.c_uint32(0x7fff0000))          # SCMP_ACT_ALLOW
    number = lib.seccomp_syscall_resolve_name(b"sched_setscheduler")
    deny = ctypes.c_uint32(0x00050000 | errno.EPERM)                  # SCMP_ACT_ERRNO
    batch = ArgCmp(1, 4, os.SCHED_BATCH, 0)                           # arg 1 == SCHED_BATCH
    if (not context or number < 0
            or lib.seccomp_rule_add_array(ctypes.c_void_p(context), deny, number, 1,
                                          ctypes.byref(batch)) != 0
            or lib.seccomp_load(ctypes.c_void_p(context)) != 0):
        os._exit(99)


class SchedulingTest(unittest.TestCase):
    """server/io_batch: libzmq's I/O threads (ZMQbg/IO/N) run under
    SCHED_BATCH, every other thread under SCHED_OTHER."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="actd-sched-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def policies(self, config):
        path = write(os.path.join(self.dir, "actd.cfg"), config)
        with Actd(args=["--config", path]) as actd:
            return thread_policies(actd.process.pid)

    def test_the_io_threads_run_under_sched_batch(self):
        policies = self.policies("server\n    io_batch = 1\n")
        io = {name: each for name, each in policies.items() if name.startswith("ZMQbg/IO/")}
        self.assertEqual(list(io.values()), [[os.SCHED_BATCH]], policies)
        others = [policy for name, each in policies.items() if name not in io for policy in each]
        self.assertEqual(set(others), {os.SCHED_OTHER}, policies)

    def test_every_start_finds_the_io_thread(self):
        # libzmq's I/O thread names itself after it starts: a scan right
        # after the bind missed it in about one start in two (release
        # build), and that actd ran without SCHED_BATCH for its whole life
        for start in range(10):
            policies = self.policies("server\n    io_batch = 1\n")
            io = [each for name, each in policies.items() if name.startswith("ZMQbg/IO/")]
            self.assertEqual(io, [[os.SCHED_BATCH]], "start %d: %s" % (start, policies))

    def test_a_refused_policy_is_logged_and_actd_serves_on(self):
        path = write(os.path.join(self.dir, "actd.cfg"), "server\n    io_batch = 1\n")
        with Actd(args=["--config", path], preexec=deny_sched_batch) as actd:
            policies = thread_policies(actd.process.pid)
            client = actd.client()
            try:
                self.assertEqual(client.request("PING"), ["PONG"])
            finally:
                client.close()
            log = actd.log()
        self.assertIn("ZMQbg/IO/0", policies)
        self.assertEqual({policy for each in policies.values() for policy in each},
                         {os.SCHED_OTHER}, policies)
        self.assertRegex(log, r"server/io_batch: thread \d+ stays SCHED_OTHER: "
                              r"Operation not permitted")
        self.assertNotIn("no libzmq I/O thread found", log)

    def test_io_batch_0_leaves_every_thread_sched_other(self):
        policies = self.policies("server\n    io_batch = 0\n")
        self.assertIn("ZMQbg/IO/0", policies)
        self.assertEqual({policy for each in policies.values() for policy in each},
                         {os.SCHED_OTHER}, policies)


class ReloadTest(unittest.TestCase):
    """SIGHUP (actd(8), SIGNALS)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="actd-reload-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.config = os.path.join(self.dir, "actd.cfg")

    def test_sighup_applies_log_level_and_activity_settings(self):
        write(self.config, """
            log
                level = debug
            activities
                slow
                    max_queue = 3
            """)
        with Actd(args=["--config", self.config]) as actd:
            client = actd.client()
            for _ in range(3):
                self.assertEqual(client.request("CALL", "c", {"_tool": "slow"})[0], "ACCEPTED")
            refused = client.request("CALL", "c", {"_tool": "slow"})
            self.assertEqual(refused, ["ERROR", "busy", "activity slow has 3 calls waiting (max_queue 3)"])
            #  At notice, a request refused at a limit is logged
            self.assertEqual(actd.log().count("request CALL refused: busy: max_queue reached"), 1)

            write(self.config, """
                log
                    level = warning
                activities
                    slow
                        max_queue = 5
                """)
            actd.process.send_signal(signal.SIGHUP)
            #  Each change is logged, the log level's included, before the
            #  new level hides notices
            wait_for(lambda: "reload: activities/slow/max_queue 3 -> 5" in actd.log(),
                     "the reload of max_queue logged:\n" + actd.log())
            self.assertIn("reload: log/level debug -> warning", actd.log())
            #  The new max_queue applies to new calls: two more are taken
            for _ in range(2):
                self.assertEqual(client.request("CALL", "c", {"_tool": "slow"})[0], "ACCEPTED")
            refused = client.request("CALL", "c", {"_tool": "slow"})
            self.assertEqual(refused, ["ERROR", "busy", "activity slow has 5 calls waiting (max_queue 5)"])
            #  At warning, the refusal (notice) is no longer logged
            self.assertEqual(actd.log().count("request CALL refused: busy: max_queue reached"), 1)
            #  The harness's flags (endpoints, store, heartbeat) are not
            #  taken for changes of the file
            self.assertNotIn("needs a restart", actd.log())
            client.close()

    def test_a_reload_of_restart_only_settings_says_they_are_not_applied(self):
        """docs/operations.md section 5: server_key, endpoints, limits need
        a restart. A reload that turned on server_key and tenants was
        applied silently while CURVE stayed off, every peer keeping every
        right; each such setting is now named at warning, and the tenants
        are said to be ignored, as at start."""
        from test_security import keygen
        write(self.config, "log\n    level = debug\n")
        with Actd(args=["--config", self.config]) as actd:
            client = actd.client()
            keygen("server", self.dir)
            keygen("agent", self.dir)
            server_key = os.path.join(self.dir, "server.key_secret")
            write(self.config, """
                log
                    level = info
                server
                    max_watches = 5
                security
                    server_key = %s
                tenants
                    acme
                        prefix = "acme/"
                        rights = read
                        keys = %s
                """ % (server_key, os.path.join(self.dir, "agent.key")))
            actd.process.send_signal(signal.SIGHUP)
            wait_for(lambda: "reload: log/level debug -> info" in actd.log(),
                     "the reload logged:\n" + actd.log())
            log = actd.log()
            self.assertRegex(log, r"(?m)^W: actd .* reload: security/server_key \(none\) -> "
                             r"%s needs a restart: not applied$" % re.escape(server_key))
            self.assertRegex(log, r"(?m)^W: actd .* reload: server/max_watches 10000 -> 5 "
                             r"needs a restart: not applied$")
            self.assertRegex(log, r"(?m)^W: actd .* reload: tenants and worker groups are "
                             r"configured but CURVE is off")
            #  Only what the file changed is named
            self.assertEqual(log.count("needs a restart"), 2, log)
            #  And indeed CURVE stays off: every peer keeps every right
            self.assertEqual(client.request("APPEND", "globex/x", {"type": "note"})[0], "OK")
            client.close()

    def test_repeated_sections_are_read_as_one(self):
        """docs/operations.md section 3: defaults, activities and an
        activity given twice are each read as one section, the later
        value winning (a second defaults was ignored, a second section of
        an activity replaced the first)."""
        write(self.config, "log\n    level = debug\n")
        with Actd(args=["--config", self.config]) as actd:
            write(self.config, """
                log
                    level = debug
                defaults
                    timeout_ms = 1000
                    max_queue = 8
                activities
                    a
                        timeout_ms = 5000
                defaults
                    max_queue = 9
                activities
                    a
                        max_queue = 7
                """)
            actd.process.send_signal(signal.SIGHUP)
            wait_for(lambda: "reload: activities/a/max_queue" in actd.log(),
                     "the reload logged:\n" + actd.log())
            for change in ("defaults/timeout_ms 300000 -> 1000",
                           "defaults/max_queue 100000 -> 9",
                           "activities/a/timeout_ms 300000 -> 5000",
                           "activities/a/max_queue 100000 -> 7"):
                self.assertIn("reload: " + change, actd.log())
            self.assertNotIn("-> 8", actd.log())

    def test_a_broken_file_on_sighup_keeps_the_settings(self):
        write(self.config, """
            activities
                slow
                    max_queue = 2
            """)
        with Actd(args=["--config", self.config]) as actd:
            client = actd.client()
            write(self.config, """
                activities
                    slow
                        max_queue = 9
                    fast
                        max_queue = lots
                """)
            actd.process.send_signal(signal.SIGHUP)
            wait_for(lambda: "config not reloaded" in actd.log(), "the failed reload logged")
            self.assertRegex(actd.log(), r"(?m)^E: actd .* SIGHUP: config not reloaded: %s line 5: "
                             r"activities/fast/max_queue: 'lots' is not an integer of at least 1$"
                             % re.escape(self.config))
            #  Nothing of the broken file applies, not even its valid part
            for _ in range(2):
                self.assertEqual(client.request("CALL", "c", {"_tool": "slow"})[0], "ACCEPTED")
            refused = client.request("CALL", "c", {"_tool": "slow"})
            self.assertEqual(refused[:2], ["ERROR", "busy"])
            self.assertIn("(max_queue 2)", refused[2])
            #  actd runs on: the debug log level of the flag stays too
            self.assertEqual(client.request("PING"), ["PONG"])
            self.assertRegex(actd.log(), r"(?m)^N: actd .* request CALL refused: busy: max_queue reached")
            client.close()

    def test_sighup_without_a_config_file(self):
        with Actd() as actd:
            actd.process.send_signal(signal.SIGHUP)
            wait_for(lambda: "SIGHUP: no config file to reload" in actd.log(), "the SIGHUP logged")
            self.assertEqual(ping(actd), ["PONG"])


class SignalAtStartTest(unittest.TestCase):
    """A signal while actd starts: libzmq's bind polls its mailbox, a poll
    that finds a signal pending fails with EINTR, and actd exited 1,
    "cannot bind ...: Interrupted system call" (CI 56, on a SIGTERM); and
    CZMQ asserts that an actor's pipe binds, so it could also abort (CI
    57). actd now blocks them and reads them from a signalfd."""

    @staticmethod
    def _caught(pid):
        """Whether pid takes SIGHUP yet (blocked for its signalfd, SigBlk,
        or a handler, SigCgt), or is gone: before, SIGHUP would kill it."""
        bit = 1 << (signal.SIGHUP - 1)
        try:
            with open("/proc/%d/status" % pid) as handle:
                for line in handle:
                    if line.startswith(("SigBlk:", "SigCgt:")) and int(line.split()[1], 16) & bit:
                        return True
        except FileNotFoundError:
            return True
        return False

    def test_sighups_while_it_binds_do_not_stop_it(self):
        #  To the main thread (tgkill), where the bind runs: a signal to the
        #  process mostly lands in one of libzmq's threads. 4 starts in 10
        #  failed before
        libc = ctypes.CDLL(None, use_errno=True)
        sys_tgkill = 234 if platform.machine() == "x86_64" else 131
        for _ in range(10):
            actd = Actd()
            self.addCleanup(actd.cleanup)
            actd.start(wait=False)
            pid = actd.process.pid
            wait_for(lambda: self._caught(pid), "actd's SIGHUP handler")
            deadline = time.time() + 0.5
            while time.time() < deadline and actd.process.poll() is None:
                libc.syscall(sys_tgkill, pid, pid, signal.SIGHUP)
            self.assertIsNone(actd.process.poll(), actd.log()[-3000:])
            actd.wait_ready()
            self.assertEqual(actd.stop(), 0, actd.log()[-3000:])


class NotifyTest(unittest.TestCase):
    """sd_notify (actd(8), SYSTEMD): what a Type=notify unit relies on."""

    def setUp(self):
        self.notify = NotifySocket()
        self.addCleanup(self.notify.close)

    def test_ready_status_and_stopping(self):
        actd = Actd(store=sqlite_store(self), env={"NOTIFY_SOCKET": self.notify.path})
        self.addCleanup(actd.cleanup)
        actd.start(wait=False)
        ready = self.notify.next("READY=1")
        #  READY=1 comes once both sockets are bound and the store is open
        self.assertTrue(port_in_use(actd.client_port))
        self.assertTrue(port_in_use(actd.worker_port))
        self.assertTrue(os.path.exists(actd.store))
        self.assertEqual(ready["MAINPID"], str(actd.process.pid))
        self.assertEqual(ready["STATUS"], "0 workers, 0 running, 0 queued, 0 waiting, 0 contexts loaded")
        client = actd.client()
        self.assertEqual(client.request("PING", timeout=10), ["PONG"])
        #  STATUS= goes on, and follows what happens
        worker = Worker(actd.worker_endpoint, ["echo"], lambda activity, params, meta: params)
        worker.start()
        deadline = time.time() + 30
        while True:
            status = self.notify.next("STATUS=")
            if status["STATUS"].startswith("1 workers"):
                break
            self.assertLess(time.time(), deadline, self.notify.messages)
        self.assertEqual(status["STATUS"], "1 workers, 0 running, 0 queued, 0 waiting, 0 contexts loaded")
        worker.stop()
        client.close()
        #  SIGTERM: STOPPING=1, then a clean exit
        self.assertEqual(actd.stop(), 0, actd.log())
        stopping = self.notify.next("STOPPING=1", timeout=5)
        self.assertEqual(stopping["STATUS"], "stopping: letting running tasks finish")
        self.assertFalse(any("WATCHDOG=1" in m for m in self.notify.messages),
                         "WATCHDOG=1 without WATCHDOG_USEC")

    def test_watchdog_pings_when_watchdog_usec_is_set(self):
        """WATCHDOG_USEC=200000 and WATCHDOG_PID = actd's pid (as systemd
        sets them for WatchdogSec=0.2): WATCHDOG=1 keeps coming."""
        port = free_port()
        store = tempfile.mkdtemp(prefix="actd-wd-")
        self.addCleanup(shutil.rmtree, store, True)
        actd = RawActd(["--db", os.path.join(store, "actd.db"),
                        "--client-endpoint", "tcp://127.0.0.1:%d" % port,
                        "--worker-endpoint", "tcp://127.0.0.1:%d" % free_port(), "-v"],
                       env={"NOTIFY_SOCKET": self.notify.path, "WATCHDOG_USEC": "200000"},
                       prefix=["/bin/sh", "-c", 'WATCHDOG_PID=$$; export WATCHDOG_PID; exec "$@"', "sh"])
        self.addCleanup(actd.cleanup)
        self.notify.next("READY=1")
        for _ in range(3):
            self.notify.next("WATCHDOG=1")
        actd.wait_ping("tcp://127.0.0.1:%d" % port)
        self.assertEqual(actd.stop(), 0, actd.log())

    def test_no_watchdog_pings_for_another_pid(self):
        """WATCHDOG_PID names another process: the watchdog is not actd's."""
        actd = Actd(env={"NOTIFY_SOCKET": self.notify.path, "WATCHDOG_USEC": "200000",
                         "WATCHDOG_PID": str(os.getpid())})
        with actd:
            #  READY=1's STATUS= and three more are over two seconds of the
            #  loop: ten pings would have come had the watchdog been on
            for _ in range(4):
                self.notify.next("STATUS=")
        self.assertFalse(any("WATCHDOG=1" in m for m in self.notify.messages), self.notify.messages)


if __name__ == "__main__":
    unittest.main()
