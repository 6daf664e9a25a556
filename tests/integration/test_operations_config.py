"""The config file (docs/operations.md, actd(8)): a config file is used,
a bad one stops actd with exit status 2 naming the file and the line,
flags override the file, the example config documents every setting with
its default. Split from test_operations.py, whose helpers it uses.
"""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import (ROOT, Actd, Client, Fail, NoAnswer, Worker, find_binary, free_port,
                     wait_for)
from test_operations import (DAGGER, EXAMPLE, SETTINGS_SOURCE, RawActd, config_paths,
                             enable_commented_settings, ping, port_in_use, sqlite_store, write)


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
            "server/strict_activities": "0", "server/max_unserved_activities": "1024",
            "server/max_worker_activities": "1024", "server/max_served_activities": "4096",
            "server/io_batch": "1",
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

    def test_a_known_section_with_every_setting_commented_out_takes_the_defaults(self):
        """etc/actd.cfg leaves each section's settings commented out but
        one: commenting that one out too stopped actd ("unknown or empty
        section"); an unknown section, empty or not, still does."""
        with open(EXAMPLE) as handle:
            text = handle.read()
        quiet = "\n".join("#" + line if line.startswith("    ") else line
                          for line in text.splitlines()) + "\n"
        path = write(os.path.join(self.dir, "quiet.cfg"), quiet)
        with Actd(args=["--config", path]) as actd:
            self.assertEqual(ping(actd), ["PONG"])
        self.check_refused("server\n    liveness = 3\nbogus\n",
                           "actd: FILE line 3: bogus: unknown section")

    def test_the_example_config_documents_every_setting(self):
        """Every setting act_settings_load accepts is in etc/actd.cfg (some
        commented out), and with them all turned on the file still loads."""
        with open(SETTINGS_SOURCE) as handle:
            source = handle.read()
        #  The plain settings' table, one line each: { "server/name", S_...
        accepted = set(re.findall(r'\{ "([a-z_]+/[a-z_]+)", S_[A-Z]+,', source))
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


if __name__ == "__main__":
    unittest.main()
