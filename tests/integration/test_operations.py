"""Operations: the config file, SIGHUP reload, sd_notify, backups of the
store, and what "cmake --install" puts where.

What is checked is what docs/operations.md and actd(8) promise: a config
file is used, a bad one stops actd with exit status 2 naming the file and
the line, flags override the file, SIGHUP applies the log level and the
per-activity settings and logs each change (a file that does not load
changes nothing), actd tells systemd READY=1 only once its sockets are
bound, then STATUS=, WATCHDOG=1 and STOPPING=1, a running store can be
copied with sqlite3's .backup, and an installed tree holds the programs,
libactd with a working pkg-config file, the unit, the config and the man
pages. Nothing is timed: tests wait for states or messages, with generous
deadlines.
"""

import errno
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import textwrap
import time
import unittest

from harness import (ROOT, Actd, Client, Fail, NoAnswer, Worker, find_binary, free_port,
                     remove_scratch, scratch_dir, wait_for)

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


class ConfigFileTest(unittest.TestCase):
    """The config file (actd(8), CONFIGURATION FILE)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="actd-cfg-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_settings_from_the_file_take_effect(self):
        """Endpoints, the store path, log settings, defaults and per-activity
        settings come from the file when no flag overrides them; an activity
        section starts from defaults even when defaults comes after it."""
        client_port, worker_port = free_port(), free_port()
        store = os.path.join(self.dir, "from-file.db")
        config = write(os.path.join(self.dir, "actd.cfg"), """
            server
                client_endpoint = tcp://127.0.0.1:%d
                worker_endpoint = tcp://127.0.0.1:%d
            store
                path = %s
            log
                level = debug
                syslog = 0
                stderr = 1
            activities
                slow
                    max_queue = 2
                    schedule_timeout_ms = 600000
                flaky
                    retry
                        max_attempts = 2
                hang
                    timeout_ms = 200
            defaults
                schedule_timeout_ms = 300
                retry
                    max_attempts = 1
                    initial_ms = 0
            """ % (client_port, worker_port, store))
        actd = RawActd(["--config", config])
        self.addCleanup(actd.cleanup)
        endpoint = "tcp://127.0.0.1:%d" % client_port
        actd.wait_ping(endpoint)
        self.assertTrue(os.path.exists(store), "store/path not used")
        self.assertTrue(port_in_use(worker_port), "server/worker_endpoint not bound")
        self.assertIn("ready: clients %s, workers tcp://127.0.0.1:%d, store %s (sqlite)"
                      % (endpoint, worker_port, store), actd.log())
        client = Client(endpoint)
        self.addCleanup(client.close)
        #  activities/slow/max_queue = 2: a third waiting call is refused
        for _ in range(2):
            self.assertEqual(client.request("CALL", "c", {"_tool": "slow"})[0], "ACCEPTED")
        refused = client.request("CALL", "c", {"_tool": "slow"})
        self.assertEqual(refused[:2], ["ERROR", "busy"])
        self.assertIn("(max_queue 2)", refused[2])
        #  defaults/schedule_timeout_ms = 300: no worker, the call ends timeout
        _, outcome = client.call("c", {"_tool": "nobody", "_outputPath": DAGGER + "s.a"})
        self.assertEqual((outcome["status"], outcome["error"]["code"], outcome["attempts"]),
                         ("timeout", "no_worker", 0))

        def failing(activity, params, meta):
            raise Fail("always", code="nope")
        worker = Worker("tcp://127.0.0.1:%d" % worker_port, ["flaky", "other"], failing)
        hung = Worker("tcp://127.0.0.1:%d" % worker_port, ["hang"],
                      lambda activity, params, meta: NoAnswer)
        for each in (worker, hung):
            each.start()
            self.addCleanup(each.stop)
        #  activities/flaky/retry/max_attempts = 2 overrides defaults' 1
        _, outcome = client.call("c", {"_tool": "flaky", "_outputPath": DAGGER + "s.b"})
        self.assertEqual((outcome["status"], outcome["error"]["code"], outcome["attempts"]),
                         ("error", "nope", 2))
        #  an activity with no section takes defaults/retry/max_attempts = 1
        _, outcome = client.call("c", {"_tool": "other", "_outputPath": DAGGER + "s.c"})
        self.assertEqual((outcome["status"], outcome["attempts"]), ("error", 1))
        #  hang lists only timeout_ms; its max_attempts (1) comes from
        #  defaults, written after it in the file (else it would be 3)
        _, outcome = client.call("c", {"_tool": "hang", "_outputPath": DAGGER + "s.d"})
        self.assertEqual((outcome["status"], outcome["error"]["code"], outcome["attempts"]),
                         ("timeout", "timeout", 1))
        #  log/level = debug, log/syslog = 0 and log/stderr = 1: debug
        #  lines on stderr, in actd's own format (as with syslog and -v)
        self.assertRegex(actd.log(), r"(?m)^D: actd \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "
                                     r"call \d+ \(flaky\) attempt 1 sent to worker")
        self.assertEqual(actd.stop(), 0, actd.log())

    def test_without_syslog_lines_go_to_stdout_or_stderr_in_one_format(self):
        """docs/operations.md section 4: with log/syslog = 0 the lines go to
        stdout, or to stderr with log/stderr = 1, as "L: actd DATE text"."""
        line = re.compile(r"(?m)^N: actd \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z actd \S+ ready: ")
        for stderr in (0, 1):
            client_port = free_port()
            config = write(os.path.join(self.dir, "log%d.cfg" % stderr),
                           "log\n    syslog = 0\n    stderr = %d\n" % stderr)
            process = subprocess.Popen(
                [find_binary("actd"), "--config", config, "--db", ":memory:",
                 "--client-endpoint", "tcp://127.0.0.1:%d" % client_port,
                 "--worker-endpoint", "tcp://127.0.0.1:%d" % free_port()],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                wait_for(lambda: port_in_use(client_port) or process.poll() is not None,
                         "actd to listen")
                client = Client("tcp://127.0.0.1:%d" % client_port)
                self.assertEqual(client.request("PING"), ["PONG"])
                client.close()
            finally:
                process.terminate()
                out, err = process.communicate(timeout=30)
            self.assertEqual(process.returncode, 0, out + err)
            self.assertRegex(err if stderr else out, line)
            self.assertNotRegex(out if stderr else err, line)

    def test_flags_override_the_file(self):
        """Each flag wins over the same setting in the file."""
        file_client, file_worker = free_port(), free_port()
        file_store = os.path.join(self.dir, "file.db")
        config = write(os.path.join(self.dir, "actd.cfg"), """
            server
                client_endpoint = tcp://127.0.0.1:%d
                worker_endpoint = tcp://127.0.0.1:%d
            store
                path = %s
            log
                level = error
            """ % (file_client, file_worker, file_store))
        with Actd(store=sqlite_store(self), args=["--config", config]) as actd:
            #  The harness's --client-endpoint, --worker-endpoint, --db and
            #  --log-level debug are in force, not the file's
            self.assertFalse(port_in_use(file_client))
            self.assertFalse(port_in_use(file_worker))
            self.assertTrue(port_in_use(actd.worker_port))
            self.assertFalse(os.path.exists(file_store))
            self.assertTrue(os.path.exists(actd.store))
            self.assertIn("ready: clients %s" % actd.client_endpoint, actd.log())

    def check_refused(self, text, *expected, name="bad.cfg"):
        """actd with this config file exits 2 before binding anything, and
        says each of expected on stderr."""
        path = write(os.path.join(self.dir, name), text)
        actd = Actd(args=["--config", path])
        client = None
        try:
            actd.start(wait=False)
            client = actd.client()

            def ended():
                if actd.process.poll() is not None:
                    return True
                try:
                    started = client.request("PING", timeout=0.2) == ["PONG"]
                except TimeoutError:
                    return False
                self.assertFalse(started, "actd started with a bad config:\n" + text)
            wait_for(ended, "actd to exit", timeout=60)
            self.assertEqual(actd.process.returncode, 2, actd.log())
            for each in expected:
                self.assertIn(each.replace("FILE", path), actd.log())
        finally:
            if client:
                client.close()
            actd.cleanup()

    def test_a_bad_value_stops_actd_naming_file_and_line(self):
        self.check_refused("""
            server
                liveness = 3
                heartbeat_ms = fast
            """, "actd: FILE line 3: server/heartbeat_ms: 'fast' is not an integer of at least 10")
        self.check_refused("""
            server
                liveness = 0
            """, "FILE line 2: server/liveness: '0' is not an integer of at least 1")
        self.check_refused("""
            store
                sync = sometimes
            """, "FILE line 2: store/sync: must be full or normal")
        self.check_refused("""
            store
                early_tasks = sometimes
            """, "FILE line 2: store/early_tasks: must be 1 or 0")
        self.check_refused("""
            store
                hold_us = -1
            """, "FILE line 2: store/hold_us: '-1' is not an integer of at least 0")
        self.check_refused("""
            log
                syslog = maybe
            """, "FILE line 2: log/syslog: must be 1 or 0")
        self.check_refused("""
            log
                level = verbose
            """, "FILE line 2: log/level: must be error, warning, notice, info or debug")
        self.check_refused("""
            activities
                slow
                    retry
                        backoff = 0.5
            """, "FILE line 4: activities/slow/retry/backoff: must be a number of at least 1")

    def test_an_unknown_setting_stops_actd_naming_file_and_line(self):
        self.check_refused("""
            server
                heartbeat = 100
            """, "FILE line 2: server/heartbeat: unknown setting")
        self.check_refused("""
            # a comment

            bogus
                x = 1
            """, "FILE line 4: bogus/x: unknown setting")
        self.check_refused("""
            defaults
                timeout_ms = 1000
            activities
                slow
                    max_queued = 3
            """, "FILE line 5: activities/slow/max_queued: unknown setting")
        #  A setting indented under another setting is not one actd knows
        self.check_refused("""
            log
                level = debug
                    extra = 1
            """, "FILE line 3: log/level/extra: unknown setting")

    def test_a_bad_indentation_stops_actd_naming_file_and_line(self):
        self.check_refused("server\n   heartbeat_ms = 100\n",
                           "FILE line 2: indent with multiples of 4 spaces")
        self.check_refused("server\n\theartbeat_ms = 100\n",
                           "FILE line 2: indent with multiples of 4 spaces")
        self.check_refused("server\n        heartbeat_ms = 100\n",
                           "FILE line 2: indented deeper than its section")
        #  zconfig refuses a comment indented by 2 as well
        self.check_refused("server\n  # two spaces\n    heartbeat_ms = 100\n",
                           "FILE line 2: ")

    def test_a_line_that_is_not_zpl_stops_actd_naming_file_and_line(self):
        self.check_refused("server\n    heartbeat_ms 100\n", "FILE line 2: ")
        self.check_refused("server\n    client_endpoint = \"tcp://127.0.0.1:1\n", "FILE line 2: ")

    def test_a_missing_file_stops_actd(self):
        path = os.path.join(self.dir, "missing.cfg")
        actd = Actd(args=["--config", path])
        try:
            actd.start(wait=False)
            self.assertEqual(actd.process.wait(60), 2)
            self.assertIn("actd: cannot read %s: No such file or directory" % path, actd.log())
        finally:
            actd.cleanup()

    def check_flags_refused(self, flags, expected):
        """actd with these flags exits 2, saying expected on stderr, and
        nothing else (under AddressSanitizer: no leak on that path)."""
        done = subprocess.run([find_binary("actd"), "--db", os.path.join(self.dir, "flags.db"),
                               "--client-endpoint", "tcp://127.0.0.1:%d" % free_port(),
                               "--worker-endpoint", "tcp://127.0.0.1:%d" % free_port()]
                              + list(flags), capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))
        self.assertEqual((done.returncode, done.stdout, done.stderr.strip()), (2, "", expected))

    def test_a_bad_flag_exits_2_and_leaks_nothing(self):
        """docs/operations.md section 7: a bad command line is exit status 2,
        also in the AddressSanitizer build (a leak made it 1)."""
        self.check_flags_refused(["--sync", "bad"], "actd: --sync is full or normal")
        self.check_flags_refused(["--log-level", "loud"],
                                 "actd: --log-level is error, warning, notice, info or debug")
        self.check_flags_refused(["extra"], "actd: unexpected argument 'extra'")
        self.check_flags_refused(["--liveness", "0"], "actd: --liveness needs an integer of "
                                                      "at least 1")

    def test_a_value_above_its_maximum_stops_actd(self):
        """Every integer setting has a maximum (docs/operations.md section
        3), so that no arithmetic on it overflows: past it, in the file or
        on the command line, actd stops with exit status 2 naming it."""
        for setting, most in (("server/heartbeat_ms", 2147483647),
                              ("server/shutdown_grace_ms", 2147483647),
                              ("server/liveness", 1000),
                              ("server/max_message_bytes", 1073741824),
                              ("store/hold_us", 60000000),
                              ("store/retain_ms", 315360000000),
                              ("defaults/timeout_ms", 2147483647),
                              ("defaults/retry/max_ms", 2147483647),
                              ("activities/a/max_queue", 1000000000)):
            path = setting.split("/")
            text = "".join("    " * depth + name + "\n" for depth, name in enumerate(path[:-1]))
            text += "    " * (len(path) - 1) + "%s = %d\n" % (path[-1], most)
            with self.subTest(setting=setting):
                #  The maximum itself is taken...
                self.check_refused(text + "server\n    liveness = 0\n",
                                   "FILE line %d: server/liveness: '0'" % (len(path) + 2))
                #  ...one more is not, nor what strtoll cannot hold
                for value in (most + 1, 99999999999999999999):
                    self.check_refused(text.replace(str(most), str(value)),
                                       "actd: FILE line %d: %s: '%d' is above the maximum "
                                       "of %d" % (len(path), setting, value, most))
        self.check_flags_refused(["--heartbeat-ms", "99999999999999999999"],
                                 "actd: --heartbeat-ms: '99999999999999999999' is above "
                                 "the maximum of 2147483647")
        self.check_flags_refused(["--liveness", "1001"],
                                 "actd: --liveness: '1001' is above the maximum of 1000")

    def test_a_repeated_section_is_read_and_a_repeated_key_named_on_its_line(self):
        """docs/operations.md section 3: a section given twice is read
        twice, as one (a later value wins), defaults included; an error
        names the line of the very setting, not of a later one of the
        same name."""
        self.check_refused("""
            defaults
                timeout_ms = 1000
            server
                liveness = 3
            defaults
                timeout_ms = 0
            """, "actd: FILE line 6: defaults/timeout_ms: '0' is not an integer of at least 1")
        self.check_refused("""
            server
                heartbeat_ms = fast
                heartbeat_ms = 1000
            """, "actd: FILE line 2: server/heartbeat_ms: 'fast' is not an integer")

    def test_a_section_given_a_value_stops_actd(self):
        """A section holds settings, not a value: 'defaults = 5' is refused
        naming it, where it was taken as an empty section; so is a retry
        backoff that is not a finite number."""
        for text, line, setting in (("defaults = 5\n", 1, "defaults"),
                                    ("tenants = 5\n", 1, "tenants"),
                                    ("workers = 5\n", 1, "workers"),
                                    ("activities = 5\n", 1, "activities"),
                                    ("server = 5\n    liveness = 3\n", 1, "server"),
                                    ("defaults\n    retry = 5\n", 2, "defaults/retry"),
                                    ("activities\n    foo = 3\n", 2, "activities/foo"),
                                    ("activities\n    foo\n        retry = 1\n", 3,
                                     "activities/foo/retry"),
                                    ("tenants\n    acme = 1\n", 2, "tenants/acme")):
            with self.subTest(text=text):
                self.check_refused(text, "actd: FILE line %d: %s: a section takes no value"
                                   % (line, setting))
        for value in ("nan", "inf", "-inf", "infinity"):
            with self.subTest(backoff=value):
                self.check_refused("defaults\n    retry\n        backoff = %s\n" % value,
                                   "actd: FILE line 3: defaults/retry/backoff: must be a "
                                   "number of at least 1")

    def test_a_new_store_file_is_0600_whatever_the_umask(self):
        """The store holds every context: a new one is readable by actd
        alone, even under umask 0 (and so are its -wal and -shm files)."""
        actd = Actd(store=sqlite_store(self), preexec=lambda: os.umask(0))
        with actd:
            client = actd.client()
            self.assertEqual(client.request("APPEND", "mode", {"type": "text"})[0], "OK")
            client.close()
            for suffix in ("", "-wal", "-shm"):
                path = actd.store + suffix
                if suffix == "" or os.path.exists(path):
                    self.assertEqual(oct(os.stat(path).st_mode & 0o777), oct(0o600), path)

    def test_a_localhost_endpoint_binds_the_loopback(self):
        """tcp://localhost:PORT is documented as a local endpoint: it binds
        (libzmq binds interfaces, not names) and is reached on 127.0.0.1."""
        actd = Actd()
        actd.args = ["--client-endpoint", "tcp://localhost:%d" % actd.client_port]
        with actd:
            self.assertEqual(ping(actd), ["PONG"])
            self.assertNotIn("plain TCP", actd.log())

    def test_an_ipv6_loopback_endpoint_binds_and_the_libraries_reach_it(self):
        """tcp://[::1]:PORT is documented as a local endpoint too: actd
        binds it, and the C and Python libraries connect to it (libzmq
        needs IPv6 on for both)."""
        actd = Actd()
        actd.client_endpoint = "tcp://[::1]:%d" % actd.client_port
        actd.worker_endpoint = "tcp://[::1]:%d" % actd.worker_port
        actd.start(wait=False)
        process = None
        try:
            actctl = [find_binary("actctl"), "--endpoint", actd.client_endpoint]
            wait_for(lambda: actd.process.poll() is None and subprocess.run(
                actctl + ["--timeout", "500", "ping"], capture_output=True).returncode == 0,
                "actctl to reach actd on [::1]" + actd.log(), timeout=60)
            self.assertNotIn("plain TCP", actd.log())
            #  A C worker there, a Python client calling it
            process = subprocess.Popen([find_binary("actd-example-worker"), "--endpoint",
                                        actd.worker_endpoint, "--name", "v6-worker"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            import sys
            sys.path.insert(0, os.path.join(ROOT, "workers", "python"))
            import actd as library
            with library.Client(actd.client_endpoint) as client:
                outcome = client.call("v6", {"_tool": "upper", "text": "six",
                                             "_outputPath": "\u2020v6"}, timeout=30)
                self.assertEqual((outcome.status, outcome.result), ("ok", "SIX"))
        finally:
            if process:
                process.terminate()
                process.wait(30)
            code = actd.stop()
            log = actd.log()
            actd.cleanup()
        self.assertEqual(code, 0, log)

    def test_the_example_config_loads_and_changes_nothing(self):
        """etc/actd.cfg as shipped starts actd (the harness's flags give it
        its own ports and store)."""
        with Actd(args=["--config", EXAMPLE]) as actd:
            self.assertEqual(ping(actd), ["PONG"])
        #  Every value it sets is a default: the same as no file at all
        defaults = {
            "server/client_endpoint": "tcp://127.0.0.1:5555",
            "server/worker_endpoint": "tcp://127.0.0.1:5556",
            "server/heartbeat_ms": "1000", "server/liveness": "3",
            "server/mdp_heartbeat_ms": "2500", "server/max_watches": "10000",
            "server/ipc_mode": "0600",
            "store/retain_ms": "0", "store/timeout_ms": "3000",
            "server/max_message_bytes": "1048576", "server/max_reply_bytes": "8388608",
            "server/max_client_bytes": "67108864", "server/max_worker_bytes": "67108864",
            "server/max_queued_calls": "1000000", "server/shutdown_grace_ms": "10000",
            "server/strict_activities": "0", "server/io_batch": "1",
            "server/context_idle_ms": "60000", "server/max_contexts": "10000",
            "server/lease_ms": "10000",
            "store/path": "actd.db", "store/sync": "full", "store/early_tasks": "1",
            "store/hold_us": "1000",
            "log/level": "info", "log/syslog": "1", "log/stderr": "0",
            "defaults/timeout_ms": "300000", "defaults/max_queue": "100000",
            "defaults/schedule_timeout_ms": "60000",
            "defaults/retry/max_attempts": "3", "defaults/retry/initial_ms": "1000",
            "defaults/retry/backoff": "2.0", "defaults/retry/max_ms": "60000",
            "security/allow_plain_tcp": "0",
        }
        with open(EXAMPLE) as handle:
            values = {path: value for path, value in config_paths(handle.read()).items() if value}
        self.assertEqual(values, defaults)

    def test_the_example_config_documents_every_setting(self):
        """Every setting act_settings_load accepts is in etc/actd.cfg (some
        commented out), and with them all turned on the file still loads."""
        with open(SETTINGS_SOURCE) as handle:
            source = handle.read()
        accepted = set(re.findall(r'streq \(full, "([a-z_]+/[a-z_]+)"\)', source))
        for name in re.findall(r'streq \(name, "([a-z_]+)"\)', source):
            if name not in ("defaults", "activities", "retry", "tenants", "workers"):
                accepted.add("defaults/" + name)
        for key in re.findall(r'streq \(key, "([a-z_]+)"\)', source):
            accepted.add("defaults/retry/" + key)
        self.assertGreaterEqual(len(accepted), 24, "the settings were not found in the source")
        with open(EXAMPLE) as handle:
            enabled = enable_commented_settings(handle.read())
        documented = set(config_paths(enabled))
        self.assertEqual(accepted - documented, set())
        self.assertIn("activities/slow_tool/retry/max_ms", documented)
        #  The file with everything on must load. It names CURVE key files
        #  that are not here, so actd would not start; a bad flag that is
        #  checked after the file has loaded stops it first, with its own
        #  message: a file that did not load would have been named instead.
        path = os.path.join(self.dir, "everything.cfg")
        with open(path, "w") as handle:
            handle.write(enabled)
        actd = Actd(args=["--config", path, "--heartbeat-ms", "5"])
        try:
            actd.start(wait=False)
            self.assertEqual(actd.process.wait(60), 2)
            self.assertIn("actd: --heartbeat-ms needs an integer of at least 10", actd.log())
            self.assertNotIn(path, actd.log())
        finally:
            actd.cleanup()


def thread_policies(pid):
    """{thread name: [scheduling policy of each thread of that name]} of pid."""
    policies = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as handle:
            name = handle.read().strip()
        policies.setdefault(name, []).append(os.sched_getscheduler(int(tid)))
    return policies


class StoreConnectTest(unittest.TestCase):
    """A PostgreSQL server that accepts the connection and never answers
    (a listening socket nobody accepts from) does not hang actd: the
    connection gives up after 5 s (libpq's connect_timeout; without one
    libpq waits for ever), or after the URL's own connect_timeout."""

    def start_failing(self, url):
        silent = socket.socket()
        self.addCleanup(silent.close)
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        started = time.time()
        done = subprocess.run([find_binary("actd"), "--db", url % silent.getsockname()[1],
                               "--client-endpoint", "tcp://127.0.0.1:0",
                               "--worker-endpoint", "tcp://127.0.0.1:0"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("cannot connect to PostgreSQL", done.stderr)
        self.assertIn("timeout expired", done.stderr)
        return time.time() - started

    def test_a_silent_server_fails_the_start_after_5_s(self):
        self.assertGreaterEqual(self.start_failing("postgresql://actd@127.0.0.1:%d/actd"), 5)

    def test_the_urls_connect_timeout_comes_first(self):
        elapsed = self.start_failing(
            "postgresql://actd@127.0.0.1:%d/actd?connect_timeout=2")
        self.assertGreaterEqual(elapsed, 2)
        self.assertLess(elapsed, 5)


def deny_sched_batch():
    """preexec_fn: a seccomp filter, through libseccomp, that fails
    sched_setscheduler with EPERM when it asks for SCHED_BATCH, as a
    stricter sandbox might; kept across exec (libseccomp sets
    no_new_privs). Not every call: libzmq sets each of its threads' own
    policy again as it starts, and aborts when that fails."""
    import ctypes
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
            #  At info, a refused request is logged
            self.assertEqual(actd.log().count("client request CALL refused: busy"), 1)

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
            #  At warning, the refusal (info) is no longer logged
            self.assertEqual(actd.log().count("client request CALL refused: busy"), 1)
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
            self.assertRegex(actd.log(), r"(?m)^I: actd .* client request CALL refused: busy")
            client.close()

    def test_sighup_without_a_config_file(self):
        with Actd() as actd:
            actd.process.send_signal(signal.SIGHUP)
            wait_for(lambda: "SIGHUP: no config file to reload" in actd.log(), "the SIGHUP logged")
            self.assertEqual(ping(actd), ["PONG"])


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


class StoreRowsTest(unittest.TestCase):
    """The store's rows are data from a file: one that does not read is
    logged and refused, it never stops actd (rows edited with sqlite3
    while actd is stopped, as a damaged or hand-edited store would be)."""

    def edit(self, actd, *statements):
        """Stop actd, run statements on its store, start it again."""
        self.assertEqual(actd.stop(), 0, actd.log()[-2000:])
        with sqlite3.connect(actd.store) as db:
            for statement in statements:
                db.execute(statement)
        actd.start()

    def ended_call(self, actd, end_row):
        """A call with an _id and an output path, ended ok, then its row of
        ends replaced by end_row (state, outcome: SQL literals) while actd is
        stopped; its id."""
        worker = Worker(actd.worker_endpoint, ["t"], lambda *task: "done")
        worker.start()
        worker.ready.wait(10)
        client = actd.client()
        call_id, outcome = client.call("c", {"_tool": "t", "_id": "k",
                                             "_outputPath": DAGGER + "s.x"})
        self.assertEqual(outcome["status"], "ok")
        client.close()
        worker.stop()
        self.edit(actd, "INSERT OR REPLACE INTO ends (id, state, attempts, outcome, progress) "
                        "VALUES (%s, %s, 1, %s, NULL)" % ((call_id,) + end_row))
        return call_id

    def test_an_ended_call_whose_state_does_not_read(self):
        with Actd(store=sqlite_store(self)) as actd:
            call_id = self.ended_call(actd, ("NULL", "NULL"))
            client = actd.client()
            reply = client.request("STATUS", call_id)
            self.assertEqual(reply[:2], ["ERROR", "internal"], reply)
            self.assertIn("does not read", reply[2])
            self.assertEqual(client.request("PING"), ["PONG"])
            client.close()

    def test_a_repeated_id_whose_stored_outcome_does_not_read(self):
        with Actd(store=sqlite_store(self)) as actd:
            call_id = self.ended_call(actd, ("'ok'", "'not json'"))
            client = actd.client()
            rid = client.send("CALL", "c", {"_tool": "t", "_id": "k",
                                            "_outputPath": DAGGER + "s.x"})
            self.assertEqual(client.wait(rid, "ACCEPTED")[1], call_id)
            wait_for(lambda: "does not read: no DONE for its repeat" in actd.log(),
                     "the log line")
            self.assertEqual(client.request("PING"), ["PONG"])
            client.close()

    def test_a_stored_context_id_that_is_not_valid(self):
        with Actd(store=sqlite_store(self)) as actd:
            client = actd.client()
            self.assertEqual(client.request("APPEND", "c", {"type": "note"})[0], "OK")
            #  A call that waits for a worker: recovered at the next start
            self.assertEqual(client.request("CALL", "c", {"_tool": "nobody"})[0], "ACCEPTED")
            client.close()
            self.edit(actd, *["UPDATE %s SET %s = 'bad id' WHERE %s = 'c'" % (table, column, column)
                              for table, column in (("contexts", "id"), ("messages", "context"),
                                                    ("calls", "context"), ("live", "context"),
                                                    ("call_blocks", "context"))])
            wait_for(lambda: "a stored context id is not valid (bad id)" in actd.log(),
                     "the log line")
            client = actd.client()
            self.assertEqual(client.request("PING"), ["PONG"])
            client.close()


class StoreReadErrorTest(unittest.TestCase):
    """PROTOCOL.md 3 (internal): a lookup the store could not answer is
    refused with internal and changes nothing, never taken for "absent"
    (not_found, a new _id, a new APPEND key). The read error is made by
    renaming, with sqlite3 while actd runs, the table the lookup reads
    (SQLite then fails the statement: no such table), then naming it back."""

    def setUp(self):
        self.actd = Actd(store=sqlite_store(self)).start()
        self.addCleanup(self.actd.cleanup)
        self.worker = Worker(self.actd.worker_endpoint, ["t"],
                             lambda activity, params, meta: params)
        self.worker.start()
        self.addCleanup(self.worker.stop)
        self.worker.ready.wait(10)
        self.client = self.actd.client()
        self.addCleanup(self.client.close)

    def tearDown(self):
        self.assertEqual(self.actd.stop(), 0, self.actd.log()[-2000:])

    def rename(self, table, name):
        db = sqlite3.connect(self.actd.store, timeout=10)
        try:
            db.execute("ALTER TABLE %s RENAME TO %s" % (table, name))
            db.commit()
        finally:
            db.close()

    def unreadable(self, table, *request):
        """The reply to request while table cannot be read, and the reply
        to the same request once it can"""
        self.rename(table, table + "_away")
        try:
            refused = self.client.request(*request)
        finally:
            self.rename(table + "_away", table)
        return refused, self.client.request(*request)

    def assert_nothing_written(self):
        """No write was tried while the table was away: none failed"""
        self.assertNotIn("store commit failed", self.actd.log())

    def test_status_of_an_ended_call_that_does_not_read(self):
        call_id, outcome = self.client.call("c", {"_tool": "t", "_outputPath": DAGGER + "s.x"})
        self.assertEqual(outcome["status"], "ok")
        refused, served = self.unreadable("calls", "STATUS", call_id)
        self.assertEqual(refused[:2], ["ERROR", "internal"], refused)
        self.assertEqual(served[0], "VALUE", served)
        self.assertEqual(json.loads(served[1])["state"], "ok")
        self.assert_nothing_written()

    def test_a_repeated_id_that_does_not_read_runs_nothing_again(self):
        call = {"_tool": "t", "_id": "k", "_outputPath": DAGGER + "s.x"}
        call_id, outcome = self.client.call("c", call)
        self.assertEqual(outcome["status"], "ok")
        refused, served = self.unreadable("calls", "CALL", "c", call)
        time.sleep(0.5)             #  A TASK sent meanwhile would be in by now
        self.assertEqual((refused[:2], served[:2], len(self.worker.tasks)),
                         (["ERROR", "internal"], ["ACCEPTED", call_id], 1))
        self.assert_nothing_written()

    def test_a_repeated_append_key_that_does_not_read_appends_nothing(self):
        message = {"type": "data", "kind": "input", "data": {"n": 1}}
        first = self.client.request("APPEND", "c", message, "k")
        self.assertEqual(first[0], "OK", first)
        refused, served = self.unreadable("append_keys", "APPEND", "c", message, "k")
        self.assertEqual(refused[:2], ["ERROR", "internal"], refused)
        self.assertEqual(served, first)
        self.assertEqual([m["data"] for m in self.client.value("HISTORY", "c", "1", "10")],
                         [{"n": 1}])
        self.assert_nothing_written()


class StoreBackupTest(unittest.TestCase):
    """docs/operations.md: back up a running store with sqlite3 .backup."""

    def test_backup_of_a_running_store_restores(self):
        backup_dir = tempfile.mkdtemp(prefix="actd-backup-")
        self.addCleanup(shutil.rmtree, backup_dir, True)
        backup = os.path.join(backup_dir, "copy.db")

        def pragmas(path):
            return subprocess.run(["sqlite3", path, "PRAGMA user_version; PRAGMA integrity_check;"],
                                  capture_output=True, text=True, timeout=60).stdout.split()
        with Actd(store=sqlite_store(self)) as actd:
            client = actd.client()
            self.assertEqual(client.request("APPEND", "c", {"type": "data", "kind": "user",
                                                            "data": {"name": "Alex"}}),
                             ["OK", '{"seq":1}'])
            done = subprocess.run(["sqlite3", actd.store, ".backup '%s'" % backup],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual((done.returncode, done.stderr), (0, ""))
            version = pragmas(actd.store)[0]
            client.close()
        #  The copy has the schema version of the original, and is sound
        self.assertEqual(pragmas(backup), [version, "ok"])
        with Actd(store=backup) as restored:
            client = restored.client()
            self.assertEqual(client.resolve("c", DAGGER + "user.name"), "Alex")
            client.close()


class InstallTest(unittest.TestCase):
    """cmake --install of the build these tests run from (docs/operations.md)."""

    PROGRAM = r"""
        #include <stdio.h>
        #include <actd/act.h>
        #include <actd/act_client.h>

        int
        main (int argc, char *argv [])
        {
            act_err_t err = { 0 };
            act_ctx_t *ctx = act_ctx_new ("t");
            json_t *message = json_loads (
                "{\"type\":\"data\",\"kind\":\"user\",\"data\":{\"name\":\"Alex\"}}", 0, NULL);
            json_t *stored = act_ctx_append (ctx, message, &err);
            act_expr_t *expr = act_expr_parse ("\xe2\x80\xa0user.name", false, &err);
            json_t *value = act_ctx_resolve (ctx, expr, NULL);
            act_client_t *client = act_client_new ("tcp://127.0.0.1:9");
            printf ("%s %s\n", json_string_value (value), client? "client": "none");
            act_client_destroy (&client);
            json_decref (value);
            act_expr_destroy (&expr);
            json_decref (stored);
            json_decref (message);
            act_ctx_destroy (&ctx);
            return 0;
        }
        """

    def setUp(self):
        self.build = os.path.dirname(os.path.dirname(os.environ.get("ACTD_BIN")
                                                     or find_binary("actd")))
        with open(os.path.join(self.build, "CMakeCache.txt")) as handle:
            self.cache = dict(re.findall(r"(?m)^([A-Za-z_]+):[A-Z]+=(.*)$", handle.read()))
        #  The config goes under the prefix unless the build was configured
        #  for /usr, / or /opt (then it goes to /etc, which is not ours)
        prefix = self.cache["CMAKE_INSTALL_PREFIX"]
        self.assertFalse(prefix in ("/usr", "/") or prefix.startswith("/opt/")
                         or self.cache["CMAKE_INSTALL_SYSCONFDIR"].startswith("/"),
                         "this test installs with --prefix: configure %s with the default prefix"
                         % self.build)
        self.prefix = tempfile.mkdtemp(prefix="actd-install-")
        self.addCleanup(shutil.rmtree, self.prefix, True)

    def test_install_puts_everything_in_place(self):
        P = self.prefix
        done = subprocess.run(["cmake", "--install", self.build, "--prefix", P],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        programs = ["actd", "actctl", "actd-example-worker", "actd-http"]
        if os.path.exists(os.path.join(self.build, "bin", "actd-exec")):
            programs.append("actd-exec")
        for program in programs:
            self.assertTrue(os.access(os.path.join(P, "bin", program), os.X_OK), program)
        headers = sorted(os.listdir(os.path.join(ROOT, "include", "actd")))
        self.assertEqual(sorted(os.listdir(os.path.join(P, "include", "actd"))), headers)
        libdir = self.cache.get("CMAKE_INSTALL_LIBDIR", "lib")
        self.assertTrue(os.path.exists(os.path.join(P, libdir, "libactd.a")))
        for path in ("lib/systemd/system/actd.service", "lib/sysusers.d/actd.conf",
                     "lib/tmpfiles.d/actd.conf", "etc/actd/actd.cfg",
                     "share/man/man8/actd.8", "share/man/man1/actctl.1",
                     "share/doc/actd/LICENSE", "share/bash-completion/completions/actctl",
                     "lib/systemd/system/actd-http.service", "etc/actd/actd-http.cfg",
                     "share/man/man8/actd-http.8",
                     "share/doc/actd/http.md"):
            self.assertTrue(os.path.exists(os.path.join(P, path)), path)
        with open(os.path.join(P, "etc", "actd", "actd.cfg")) as installed, open(EXAMPLE) as example:
            self.assertEqual(installed.read(), example.read())

        #  The unit runs the installed actd on the installed config
        unit = os.path.join(P, "lib", "systemd", "system", "actd.service")
        with open(unit) as handle:
            text = handle.read()
        self.assertIn("\nExecStart=%s/bin/actd --config %s/etc/actd/actd.cfg\n" % (P, P), text)
        self.assertNotRegex(text, r"@[A-Z_]+@")
        verify = subprocess.run(["systemd-analyze", "verify", "--man=no", unit],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual((verify.returncode, verify.stderr), (0, ""))
        #  actd-http's unit beside it, on its own installed config
        unit = os.path.join(P, "lib", "systemd", "system", "actd-http.service")
        with open(unit) as handle:
            text = handle.read()
        self.assertIn("\nExecStart=%s/bin/actd-http --config %s/etc/actd/actd-http.cfg\n"
                      % (P, P), text)
        self.assertNotRegex(text, r"@[A-Z_]+@")
        verify = subprocess.run(["systemd-analyze", "verify", "--man=no", unit],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual((verify.returncode, verify.stderr), (0, ""))

        #  The installed actd runs on the installed config (its endpoints
        #  and store moved here by flags)
        port = free_port()
        actd = RawActd(["--config", os.path.join(P, "etc", "actd", "actd.cfg"),
                        "--db", os.path.join(P, "actd.db"),
                        "--client-endpoint", "tcp://127.0.0.1:%d" % port,
                        "--worker-endpoint", "tcp://127.0.0.1:%d" % free_port()],
                       binary=os.path.join(P, "bin", "actd"))
        self.addCleanup(actd.cleanup)
        actd.wait_ping("tcp://127.0.0.1:%d" % port)
        self.assertEqual(actd.stop(), 0, actd.log())
        version = subprocess.run([os.path.join(P, "bin", "actd"), "--version"],
                                 capture_output=True, text=True, timeout=60).stdout.split()

        #  A second install keeps an edited config and puts the example beside it
        with open(os.path.join(P, "etc", "actd", "actd.cfg"), "a") as handle:
            handle.write("# edited\n")
        done = subprocess.run(["cmake", "--install", self.build, "--prefix", P],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        with open(os.path.join(P, "etc", "actd", "actd.cfg")) as handle:
            self.assertTrue(handle.read().endswith("# edited\n"))
        self.assertTrue(os.path.exists(os.path.join(P, "etc", "actd", "actd.cfg.example")))

        #  pkg-config, then a program built and linked against the install
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(P, libdir, "pkgconfig"))
        modversion = subprocess.run(["pkg-config", "--modversion", "libactd"], env=env,
                                    capture_output=True, text=True, timeout=60)
        self.assertEqual(["actd", modversion.stdout.strip()], version)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libactd"], env=env,
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(flags.returncode, 0, flags.stderr)
        self.assertIn("-I%s/include" % P, flags.stdout.split())
        self.assertIn("-lactd", flags.stdout.split())
        #  The store is the daemon's: libactd needs no database
        requires = subprocess.run(["pkg-config", "--print-requires", "libactd"], env=env,
                                  capture_output=True, text=True, timeout=60).stdout.split()
        self.assertEqual(sorted(requires), ["jansson", "libczmq", "libpcre2-8", "libzmq"])
        self.assertFalse(os.path.exists(os.path.join(P, "include", "actd", "act_store.h")))
        source = os.path.join(P, "program.c")
        with open(source, "w") as handle:
            handle.write(textwrap.dedent(self.PROGRAM))
        program = os.path.join(P, "program")
        compiler = self.cache.get("CMAKE_C_COMPILER", "cc")
        built = subprocess.run([compiler, "-o", program, source]
                               + flags.stdout.split(), capture_output=True, text=True,
                               timeout=300)
        self.assertEqual(built.returncode, 0, built.stderr)
        #  (-lactd finds libactd.so first, which is not where the loader looks)
        ran = subprocess.run([program], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1",
                                      LD_LIBRARY_PATH=os.path.join(P, libdir)))
        #  (CZMQ's log, where the store says it made its schema, goes to
        #  stdout too)
        self.assertEqual(ran.returncode, 0, ran.stdout + ran.stderr)
        self.assertEqual(ran.stdout.splitlines()[-1], "Alex client")
        self.check_shared_library(os.path.join(P, libdir))
        self.check_find_package(source, compiler)

    def dynamic_section(self, path):
        done = subprocess.run(["objdump", "-p", path], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        return re.findall(r"(?m)^\s+(NEEDED|SONAME)\s+(\S+)$", done.stdout)

    def check_shared_library(self, libdir):
        """libactd.so.0.1.0 with the soname libactd.so.0, and the links to it."""
        self.assertIn(("SONAME", "libactd.so.0"),
                      self.dynamic_section(os.path.join(libdir, "libactd.so.0.1.0")))
        self.assertEqual(os.readlink(os.path.join(libdir, "libactd.so.0")), "libactd.so.0.1.0")
        self.assertEqual(os.readlink(os.path.join(libdir, "libactd.so")), "libactd.so.0")

    def check_find_package(self, source, compiler):
        """A CMake project builds a program with find_package (actd), and it runs."""
        P = self.prefix
        project = os.path.join(P, "project")
        os.mkdir(project)
        shutil.copy(source, os.path.join(project, "program.c"))
        write(os.path.join(project, "CMakeLists.txt"), textwrap.dedent("""\
            cmake_minimum_required (VERSION 3.16)
            project (uses_actd LANGUAGES C)
            find_package (actd 0.1 REQUIRED)
            add_executable (program program.c)
            target_link_libraries (program PRIVATE actd::actd)
            """))
        build = os.path.join(project, "build")
        for command in (["cmake", "-S", project, "-B", build, "-DCMAKE_PREFIX_PATH=" + P,
                         "-DCMAKE_C_COMPILER=" + compiler],
                        ["cmake", "--build", build]):
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        program = os.path.join(build, "program")
        #  Linked to the shared library, found through the build's RPATH
        self.assertIn(("NEEDED", "libactd.so.0"), self.dynamic_section(program))
        ran = subprocess.run([program], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))
        self.assertEqual(ran.returncode, 0, ran.stdout + ran.stderr)
        self.assertEqual(ran.stdout.splitlines()[-1], "Alex client")
        #  A version beyond the installed one is refused
        write(os.path.join(project, "CMakeLists.txt"), textwrap.dedent("""\
            cmake_minimum_required (VERSION 3.16)
            project (uses_actd LANGUAGES C)
            find_package (actd 1.0 REQUIRED)
            """))
        done = subprocess.run(["cmake", "-S", project, "-B", os.path.join(project, "build1"),
                               "-DCMAKE_PREFIX_PATH=" + P], capture_output=True, text=True,
                              timeout=300)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("0.1.0", done.stdout + done.stderr)


if __name__ == "__main__":
    unittest.main()
