"""CURVE security (issue "Operations"): separate allowed keys for clients
and workers, refused peers logged, and plain TCP kept to this machine when
no keys are configured."""

import json
import os
import pwd
import re
import signal
import stat
import subprocess
import time
import unittest

import zmq

from harness import (Actd, Client, abandon, find_binary, free_port, remove_scratch,
                     scratch_dir, wait_for)


def keygen(name, directory):
    """A keypair written by actctl keygen: (public, secret) in Z85."""
    subprocess.run([find_binary("actctl"), "keygen", name, "--dir", directory],
                   check=True, stdout=subprocess.DEVNULL)
    return keys(os.path.join(directory, name + ".key_secret"))


def drop_root():
    """A preexec_fn: run the program as the user nobody when the tests run
    as root, whom file modes do not bind; as another user, as that user.
    Either way a file of mode 0 is unreadable to the program."""
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)


def open_to_all(directory):
    """directory and everything in it readable by every user (and
    directory writable), for a program run by drop_root."""
    os.chmod(directory, 0o777)
    for parent, folders, files in os.walk(directory):
        for name in folders:
            os.chmod(os.path.join(parent, name), 0o755)
        for name in files:
            os.chmod(os.path.join(parent, name), 0o644)


def keys(path):
    """The (public, secret) keys of the certificate path (NAME.key_secret)."""
    with open(path) as handle:
        text = handle.read()
    public = re.search(r'public-key = "(.*)"', text).group(1)
    secret = re.search(r'secret-key = "(.*)"', text).group(1)
    return public, secret


#  The certificates curve_actd writes: the server's, a client's, a
#  worker's, and one allowed nowhere
CURVE_KEYS = ("server.key_secret", "clients/alice.key_secret", "workers/w1.key_secret",
              "mallory.key_secret")


def scratch_curve_actd(test, prefix):
    """A scratch directory and a CURVE actd in it (curve_actd), both
    cleaned up when test ends: (directory, actd)."""
    directory = scratch_dir(prefix)
    test.addCleanup(remove_scratch, directory)
    actd = curve_actd(directory)
    test.addCleanup(actd.cleanup)
    return directory, actd


def release_fifo(path):
    """Let an open of the FIFO at path that blocks return (EOF): open its
    other end without blocking. Nothing when nobody waits on it."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def curve_actd(directory):
    """An Actd (not started) with CURVE on, its keys written in directory
    (CURVE_KEYS): client keys in clients/, worker keys in workers/."""
    for folder in ("clients", "workers"):
        os.mkdir(os.path.join(directory, folder))
    for path in CURVE_KEYS:
        folder, name = os.path.split(os.path.join(directory, path))
        keygen(name[:-len(".key_secret")], folder)
    config = os.path.join(directory, "actd.cfg")
    with open(config, "w") as handle:
        handle.write("security\n"
                     "    server_key = %s\n"
                     "    client_keys = %s\n"
                     "    worker_keys = %s\n"
                     % (os.path.join(directory, "server.key_secret"),
                        os.path.join(directory, "clients"), os.path.join(directory, "workers")))
    return Actd(args=["--config", config])


class CurveClient(Client):
    """harness.Client on a CURVE socket."""

    def __init__(self, endpoint, server_public, keys):
        self.context = zmq.Context.instance()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        if keys:
            self.socket.curve_publickey = keys[0].encode()
            self.socket.curve_secretkey = keys[1].encode()
            self.socket.curve_serverkey = server_public.encode()
        self.socket.connect(endpoint)
        self.pending = []


class SecurityTest(unittest.TestCase):
    """One actd with CURVE on: a server key, client keys (alice) and worker
    keys (w1) in separate directories; mallory's key is in neither."""

    def setUp(self):
        self.dir = scratch_dir("actd-curve-")
        self.addCleanup(remove_scratch, self.dir)      # after tearDown, or a failed setUp
        self.actd = curve_actd(self.dir)
        self.clients_dir = os.path.join(self.dir, "clients")
        self.workers_dir = os.path.join(self.dir, "workers")
        self.server, self.alice, self.w1, self.mallory = (
            keys(os.path.join(self.dir, path)) for path in CURVE_KEYS)
        self.actd.start(wait=False)
        self.sockets = []
        try:
            self.wait_up()
        except BaseException:
            abandon(self.actd, self.sockets)
            raise

    def tearDown(self):
        for socket in self.sockets:
            socket.close(0)
        code = self.actd.stop()
        log = self.actd.log()
        self.actd.cleanup()
        self.assertEqual(code, 0, log)

    def client(self, keys):
        client = CurveClient(self.actd.client_endpoint, self.server[0], keys)
        self.sockets.append(client.socket)
        return client

    def wait_up(self):
        client = self.client(self.alice)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if client.request("PING", timeout=0.5)[0] == "PONG":
                    return
            except TimeoutError:
                pass
        self.fail("actd with CURVE did not answer an allowed client:\n" + self.actd.log())

    def worker_socket(self, keys):
        """A raw worker on the worker socket with keys; sends READY for echo."""
        socket = zmq.Context.instance().socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.curve_publickey = keys[0].encode()
        socket.curve_secretkey = keys[1].encode()
        socket.curve_serverkey = self.server[0].encode()
        socket.connect(self.actd.worker_endpoint)
        socket.send_multipart([b"ACTW01", b"READY",
                               json.dumps({"activities": ["echo"], "name": "curve-w"}).encode()])
        self.sockets.append(socket)
        return socket

    def wait_log(self, pattern, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if re.search(pattern, self.actd.log()):
                return
            time.sleep(0.05)
        self.fail("no log line matching %r:\n%s" % (pattern, self.actd.log()))

    def test_allowed_client_and_worker_work_end_to_end(self):
        worker = self.worker_socket(self.w1)
        client = self.client(self.alice)
        rid = client.send("CALL", "sec", {"_tool": "echo", "x": 1, "_outputPath": "\u2020state.x"})
        self.assertTrue(worker.poll(10000), "the allowed worker got no task")
        task = worker.recv_multipart()
        self.assertEqual(task[1], b"TASK")
        self.assertEqual(json.loads(task[4]), {"x": 1})
        worker.send_multipart([b"ACTW01", b"RESULT", task[2], b'{"y": 2}'])
        self.assertEqual(client.wait(rid, "ACCEPTED")[0], "ACCEPTED")
        done = json.loads(client.wait(rid, "DONE")[2])
        self.assertEqual(done["status"], "ok")
        self.assertEqual(client.resolve("sec", "\u2020state.x"), {"y": 2})

    def test_unknown_client_key_is_refused_unauthorized_and_logged(self):
        client = self.client(self.mallory)
        self.assertEqual(client.request("PING"),
                         ["ERROR", "unauthorized", "this client's CURVE key is not allowed"])
        reply = client.request("CALL", "sec", {"_tool": "echo", "_outputPath": "\u2020s.x"})
        self.assertEqual(reply[:2], ["ERROR", "unauthorized"])
        self.wait_log(r"CURVE: client refused: key %s" % re.escape(self.mallory[0]))
        # Nothing was stored for it
        stats = self.client(self.alice).value("STATS")
        self.assertEqual(stats["calls"]["accepted"], 0)
        self.assertEqual(stats["contexts"], 0)

    def test_client_without_curve_cannot_talk_to_the_broker(self):
        client = self.client(None)
        with self.assertRaises(TimeoutError):
            client.request("PING", timeout=1.5)

    def test_client_key_on_the_worker_socket_is_refused(self):
        impostor = self.worker_socket(self.alice)
        client = self.client(self.alice)
        rid = client.send("CALL", "sec", {"_tool": "echo", "_outputPath": "\u2020s.x"})
        self.assertEqual(client.wait(rid, "ACCEPTED")[0], "ACCEPTED")
        self.wait_log(r"CURVE: worker refused from .*: key %s is not in" % re.escape(self.alice[0]))
        self.assertFalse(impostor.poll(1500), "a client key registered as a worker")
        stats = client.value("STATS")
        self.assertEqual(stats["workers"], [])
        self.assertEqual(stats["calls"]["queued"], 1)

    def c_worker(self, cert_file, name):
        """actd-example-worker (the C library) with CURVE, cert_file its keys."""
        process = subprocess.Popen(
            [find_binary("actd-example-worker"), "--endpoint", self.actd.worker_endpoint,
             "--name", name, "--heartbeat-ms", "200",
             "--curve-server", self.server[0], "--curve-cert", cert_file],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: process.poll() is None and (process.kill(), process.wait()))
        return process

    def test_c_library_worker_and_client_with_allowed_keys(self):
        worker = self.c_worker(os.path.join(self.workers_dir, "w1.key_secret"), "c-w1")
        client = self.client(self.alice)
        rid = client.send("CALL", "sec-c", {"_tool": "upper", "text": "curve",
                                           "_outputPath": "\u2020state.up"})
        self.assertEqual(client.wait(rid, "ACCEPTED")[0], "ACCEPTED")
        done = json.loads(client.wait(rid, "DONE", timeout=20)[2])
        self.assertEqual((done["status"], done["result"]), ("ok", "CURVE"))
        #  actctl, the C client library, with alice's key
        ping = subprocess.run([find_binary("actctl"), "--endpoint", self.actd.client_endpoint,
                               "--curve-server", self.server[0], "--curve-cert",
                               os.path.join(self.clients_dir, "alice.key_secret"), "ping"],
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(ping.returncode, 0, ping.stderr)
        worker.send_signal(signal.SIGTERM)
        self.assertEqual(worker.wait(10), 0)

    def test_c_library_with_a_refused_key_gives_up_and_stops(self):
        #  A refused DEALER has no pipe: a send that waited would block for
        #  ever, and the worker would not stop on SIGTERM
        worker = self.c_worker(os.path.join(self.dir, "mallory.key_secret"), "c-mallory")
        self.wait_log(r"CURVE: worker refused from .*: key %s is not in" % re.escape(self.mallory[0]))
        time.sleep(0.5)         # heartbeats go on meanwhile
        worker.send_signal(signal.SIGTERM)
        try:
            self.assertEqual(worker.wait(10), 0)
        except subprocess.TimeoutExpired:
            self.fail("a C worker with a refused key did not stop on SIGTERM")
        #  actctl with mallory's key: a client is refused by the broker's
        #  answer, not at the handshake
        ping = subprocess.run([find_binary("actctl"), "--endpoint", self.actd.client_endpoint,
                               "--curve-server", self.server[0], "--curve-cert",
                               os.path.join(self.dir, "mallory.key_secret"),
                               "--timeout", "5000", "ping"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual((ping.returncode, ping.stderr),
                         (1, "actctl: unauthorized: this client's CURVE key is not allowed\n"))

    def test_sighup_reloads_the_allowed_keys(self):
        newcomer = keygen("bob", self.dir)
        bob = self.client(newcomer)
        self.assertEqual(bob.request("PING")[:2], ["ERROR", "unauthorized"])
        os.rename(os.path.join(self.dir, "bob.key"), os.path.join(self.clients_dir, "bob.key"))
        self.actd.process.send_signal(signal.SIGHUP)
        self.wait_log(r"reload: allowed keys reloaded")
        self.assertEqual(bob.request("PING"), ["PONG"])

    def test_a_key_file_whose_key_is_not_z85_or_zeros_is_ignored_and_logged(self):
        """A public-key of 40 characters that is not Z85 (a typo, a corrupted
        file) was taken silently as the key of zeros: zcert_load ignores a
        decoding failure. A key of zeros is refused too."""
        for name, key in (("broken", "~" * 40), ("zeros", "0" * 40)):
            with open(os.path.join(self.clients_dir, name + ".key"), "w") as handle:
                handle.write('curve\n    public-key = "%s"\n' % key)
        self.actd.process.send_signal(signal.SIGHUP)
        self.wait_log(r"reload: allowed keys reloaded")
        log = self.actd.log()
        for name in ("broken", "zeros"):
            self.assertIn("CURVE: %s is not a key file; ignored"
                          % os.path.join(self.clients_dir, name + ".key"), log)
        self.assertEqual(re.findall(r"CURVE: (\d+) client keys", log), ["1", "1"], log)
        self.assertEqual(self.client(self.alice).request("PING"), ["PONG"])

    def test_a_fifo_or_a_huge_file_in_a_key_directory_does_not_hang_a_reload(self):
        """zcert_load read each *.key (and first its NAME.key_secret) with a
        blocking fopen on actd's one thread: a FIFO hung actd at the reload
        (and at start), answering nothing more. Only regular files of at
        most 64 KiB are read now, the public *.key file alone."""
        fifo = os.path.join(self.clients_dir, "pipe.key")
        os.mkfifo(fifo)
        bob = keygen("bob", self.clients_dir)
        secret = os.path.join(self.clients_dir, "bob.key_secret")
        os.remove(secret)
        os.mkfifo(secret)
        huge = os.path.join(self.clients_dir, "huge.key")
        with open(huge, "w") as handle:
            handle.write('curve\n    public-key = "%s"\n' % bob[0] + "#" * 70000 + "\n")
        self.actd.process.send_signal(signal.SIGHUP)
        try:
            self.wait_log(r"reload: allowed keys reloaded")
            reply = self.client(self.alice).request("PING", timeout=5.0)
        finally:
            for path in (fifo, secret):
                release_fifo(path)
        self.assertEqual(reply, ["PONG"])
        log = self.actd.log()
        self.assertIn("CURVE: %s is not a regular file; ignored" % fifo, log)
        self.assertIn("CURVE: %s is larger than 65536 bytes" % huge, log)
        self.assertEqual(self.client(bob).request("PING"), ["PONG"])


class ServerKeyFileTest(unittest.TestCase):
    """security/server_key is read as key files are: a FIFO (or anything
    but a regular file) or a file over 64 KiB refuses the start, exit 1,
    where zcert_load's blocking fopen left actd hung on a FIFO for good."""

    def start_refused(self, make):
        """actd whose server.key_secret make(path) replaced: its exit code
        and log. Bounded: a FIFO opened for writing lets a blocked open
        return, and actd is killed if it is still there."""
        directory, actd = scratch_curve_actd(self, "actd-serverkey-")
        path = os.path.join(directory, "server.key_secret")
        os.remove(path)
        make(path)
        actd.start(wait=False)
        try:
            code = actd.process.wait(20)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            if stat.S_ISFIFO(os.stat(path).st_mode):
                release_fifo(path)
            actd.kill()
        self.assertIsNotNone(code, "actd did not exit within 20 s (hung reading the server "
                             "key, or started with it):\n" + actd.log())
        return code, actd.log(), path

    def test_a_fifo_as_the_server_key_refuses_the_start(self):
        code, log, path = self.start_refused(os.mkfifo)
        self.assertEqual(code, 1, log)
        self.assertIn("cannot read the server key %s: not a regular file" % path, log)

    def test_a_huge_server_key_file_refuses_the_start(self):
        def huge(path):
            public, secret = keygen("big", os.path.dirname(path))
            with open(path, "w") as handle:
                handle.write('curve\n    public-key = "%s"\n    secret-key = "%s"\n'
                             % (public, secret) + "#" * 70000 + "\n")
        code, log, path = self.start_refused(huge)
        self.assertEqual(code, 1, log)
        self.assertIn("cannot read the server key %s: larger than 65536 bytes: not a key "
                      "file" % path, log)


class KeyDirectoryTest(unittest.TestCase):
    """docs/operations.md section 8: a key directory that cannot be read is
    logged at error on reload and stops actd at start; it once passed for
    a directory with no key (zdir lists nothing it cannot read)."""

    def test_an_unreadable_key_directory(self):
        directory, actd = scratch_curve_actd(self, "actd-keydir-")
        open_to_all(directory)
        actd.store = os.path.join(directory, "actd.db")
        actd.preexec = drop_root
        clients = os.path.join(directory, "clients")
        actd.start(wait=False)
        wait_for(lambda: actd.process.poll() is not None or "ready: " in actd.log(),
                 "actd to start")
        self.assertIn("1 client keys", actd.log())
        #  At a reload: every key of the directory is refused, said at error
        os.chmod(clients, 0)
        self.addCleanup(os.chmod, clients, 0o755)
        actd.process.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload: allowed keys reloaded" in actd.log(), "the reload")
        self.assertRegex(actd.log(), r"(?m)^E: actd .* reload: security/client_keys: cannot "
                         r"read %s: none of its keys is allowed now$" % re.escape(clients))
        self.assertEqual(actd.stop(), 0, actd.log())
        #  At start: actd stops, naming it
        actd.start(wait=False)
        self.assertEqual(actd.process.wait(60), 1, actd.log())
        self.assertIn("security/client_keys: cannot read %s: Permission denied" % clients,
                      actd.log())

    def test_keys_others_may_change_or_read_are_warned_of(self):
        """Like OpenSSH's StrictModes, but warned of (at start and at each
        reload), not refused: a key directory (client, worker, tenant) or
        key file writable by its group or by every user, and the server's
        secret key writable by them or readable by every user. Nothing
        was said: whoever could write such a directory could let any key
        in unnoticed."""
        directory, actd = scratch_curve_actd(self, "actd-keymodes-")
        tenant = os.path.join(directory, "tenant")
        os.mkdir(tenant)
        keygen("tenanted", tenant)
        with open(actd.args[-1], "a") as handle:
            handle.write('tenants\n    team\n        prefix = "team/"\n        rights = read\n'
                         "        keys = %s\n" % tenant)
        clients, workers = os.path.join(directory, "clients"), os.path.join(directory, "workers")
        secret = os.path.join(directory, "server.key_secret")
        alice = os.path.join(clients, "alice.key")
        os.chmod(clients, 0o777)
        os.chmod(workers, 0o770)
        os.chmod(tenant, 0o757)
        os.chmod(alice, 0o664)
        os.chmod(secret, 0o644)
        actd.start(wait=False)
        wait_for(lambda: actd.process.poll() is not None or "ready: " in actd.log(),
                 "actd to start")
        self.assertIsNone(actd.process.poll(), actd.log())
        expected = [
            r"key directory %s is writable by every user \(mode 0777\)" % re.escape(clients),
            r"key directory %s is writable by its group \(mode 0770\)" % re.escape(workers),
            r"key directory %s is writable by every user \(mode 0757\)" % re.escape(tenant),
            r"key file %s is writable by its group \(mode 0664\)" % re.escape(alice),
            r"the server's secret key %s is readable by every user \(mode 0644\)"
            % re.escape(secret)]
        for pattern in expected:
            self.assertRegex(actd.log(), r"(?m)^W: actd .* CURVE: " + pattern, actd.log())
        #  The keys are still allowed; a key file of mode 0644 is not warned of
        self.assertIn("CURVE: 2 client keys", actd.log())
        self.assertNotIn("%s is" % os.path.join(workers, "w1.key"), actd.log())
        #  Again at a reload, once fixed no more
        actd.process.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload: allowed keys reloaded" in actd.log(), "the reload")
        self.assertEqual(actd.log().count("key directory %s is writable" % clients), 2)
        for path in (clients, workers, tenant):
            os.chmod(path, 0o750)
        actd.process.send_signal(signal.SIGHUP)
        wait_for(lambda: actd.log().count("reload: allowed keys reloaded") == 2, "the reload")
        self.assertEqual(actd.log().count("key directory %s is writable" % clients), 2)
        self.assertEqual(actd.stop(), 0, actd.log())

    def test_directories_above_the_keys_are_warned_of_once_each(self):
        """StrictModes walks up to /: a directory above a key directory (or
        the server's key) that others may write lets them rename the key
        directory and put one of their own in its place. Only the key
        directory itself was checked; each directory above is now warned
        of, once per start or reload however many key paths it holds, and
        not when it is sticky (as /tmp is)."""
        directory, actd = scratch_curve_actd(self, "actd-keyparents-")
        #  clients, workers and server.key_secret are all in directory
        os.chmod(directory, 0o777)
        warned = "CURVE: directory %s, above the keys in " % directory
        actd.start(wait=False)
        wait_for(lambda: actd.process.poll() is not None or "ready: " in actd.log(),
                 "actd to start")
        self.assertIsNone(actd.process.poll(), actd.log())
        self.assertRegex(actd.log(), r"(?m)^W: actd .* %s.*, is writable by every user "
                         r"\(mode 0777\): whoever can write it can put keys of their own "
                         r"in their place; chmod go-w$" % re.escape(warned), actd.log())
        self.assertEqual(actd.log().count(warned), 1, actd.log())
        #  Again at a reload; sticky, no more
        actd.process.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload: allowed keys reloaded" in actd.log(), "the reload")
        self.assertEqual(actd.log().count(warned), 2, actd.log())
        os.chmod(directory, 0o1777)
        actd.process.send_signal(signal.SIGHUP)
        wait_for(lambda: actd.log().count("reload: allowed keys reloaded") == 2, "the reload")
        self.assertEqual(actd.log().count(warned), 2, actd.log())
        self.assertEqual(actd.stop(), 0, actd.log())

    def test_a_reload_whose_keys_do_not_load_changes_nothing(self):
        """docs/operations.md: a file that does not load changes nothing.
        A file that parses but whose keys cannot be used (worker_keys
        dropped while CURVE is on) applied its log level and defaults
        before the keys were refused: half the new file, half the old."""
        directory, actd = scratch_curve_actd(self, "actd-halfload-")
        config = actd.args[-1]
        with open(config, "a") as handle:
            handle.write("defaults\n    timeout_ms = 11111\n")
        actd.start(wait=False)          # its PING would need a key
        wait_for(lambda: actd.process.poll() is not None or "ready: " in actd.log(),
                 "actd to start")
        with open(config, "w") as handle:
            handle.write("log\n    level = error\nsecurity\n    server_key = %s\n"
                         "    client_keys = %s\ndefaults\n    timeout_ms = 22222\n"
                         % (os.path.join(directory, "server.key_secret"),
                            os.path.join(directory, "clients")))
        actd.process.send_signal(signal.SIGHUP)
        wait_for(lambda: "not reloaded" in actd.log(), "the refused reload")
        time.sleep(0.2)
        log = actd.log()
        self.assertNotIn("reload: log/level", log)
        self.assertNotIn("timeout_ms 11111 -> 22222", log)
        self.assertRegex(log, r"(?m)^E: actd .* SIGHUP: config not reloaded: .*worker_keys")
        #  The old level holds: a notice still reaches the log
        actd.process.send_signal(signal.SIGHUP)
        wait_for(lambda: actd.log().count("config not reloaded") == 2, "the second try")
        self.assertEqual(actd.stop(), 0, actd.log())
        self.assertIn("stopped:", actd.log())


class PlainTcpTest(unittest.TestCase):
    """Without keys, actd binds only to this machine unless allowed."""

    def run_actd(self, endpoint, extra_config=""):
        directory = scratch_dir("actd-plain-")
        self.addCleanup(remove_scratch, directory)
        config = os.path.join(directory, "actd.cfg")
        with open(config, "w") as handle:
            handle.write("log\n    syslog = 0\n" + extra_config)
        worker_endpoint = "tcp://127.0.0.1:%d" % free_port()
        return subprocess.Popen([find_binary("actd"), "--config", config,
                                 "--db", os.path.join(directory, "actd.db"),
                                 "--client-endpoint", endpoint,
                                 "--worker-endpoint", worker_endpoint, "-v"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def test_plain_tcp_on_all_interfaces_is_refused_without_the_setting(self):
        process = self.run_actd("tcp://0.0.0.0:%d" % free_port())
        output, _ = process.communicate(timeout=20)
        self.assertEqual(process.returncode, 1, output)
        self.assertIn("refusing plain TCP on tcp://0.0.0.0:", output)
        self.assertIn("allow_plain_tcp", output)

    def test_an_endpoint_without_its_transport_is_named_as_such(self):
        """It was refused as plain TCP without CURVE keys, a misleading
        reason (found by an audit of operations)."""
        process = self.run_actd("127.0.0.1:%d" % free_port())
        output, _ = process.communicate(timeout=20)
        self.assertEqual(process.returncode, 1, output)
        self.assertIn("endpoint '127.0.0.1:", output)
        self.assertIn("names no transport: give tcp://HOST:PORT or ipc:///PATH", output)
        self.assertNotIn("refusing plain TCP", output)

    def test_plain_tcp_elsewhere_is_allowed_with_the_setting_and_logged(self):
        port = free_port()
        process = self.run_actd("tcp://0.0.0.0:%d" % port,
                                "security\n    allow_plain_tcp = 1\n")
        try:
            client = Client("tcp://127.0.0.1:%d" % port)
            deadline = time.time() + 20
            pong = None
            while time.time() < deadline and pong is None:
                try:
                    pong = client.request("PING", timeout=0.5)
                except TimeoutError:
                    pass
            client.close()
            self.assertEqual(pong, ["PONG"])
        finally:
            process.send_signal(signal.SIGTERM)
            output, _ = process.communicate(timeout=20)
        self.assertEqual(process.returncode, 0, output)
        self.assertIn("plain TCP without CURVE on tcp://0.0.0.0:%d" % port, output)

    def test_loopback_without_keys_starts_and_says_so(self):
        with Actd() as actd:
            self.assertIn("no CURVE keys", actd.log())

    def test_missing_server_key_refuses_to_start(self):
        directory = scratch_dir("actd-nokey-")
        self.addCleanup(remove_scratch, directory)
        process = self.run_actd("tcp://127.0.0.1:%d" % free_port(),
                                "security\n    server_key = %s/none.key_secret\n"
                                "    client_keys = %s\n    worker_keys = %s\n"
                                % (directory, directory, directory))
        output, _ = process.communicate(timeout=20)
        self.assertEqual(process.returncode, 1, output)
        self.assertIn("cannot read the server key", output)


    def test_a_server_key_without_its_secret_half_refuses_to_start(self):
        """NAME.key_secret missing (or unreadable by actd's user): CZMQ
        would load the public half alone, with a secret key of zeros, and
        every handshake would fail; actd says so and exits 1 instead."""
        directory = scratch_dir("actd-halfkey-")
        self.addCleanup(remove_scratch, directory)
        keygen("server", directory)
        config = ("security\n    server_key = %s/server.key\n"
                  "    client_keys = %s\n    worker_keys = %s\n"
                  % (directory, directory, directory))
        #  With both halves it starts (stopped once it is ready: a SIGTERM
        #  as it binds interrupts the bind, CI 56)
        process = self.run_actd("tcp://127.0.0.1:%d" % free_port(), config)
        seen = []
        for line in process.stdout:
            seen.append(line)
            if " ready: " in line:
                break
        process.terminate()
        output, _ = process.communicate(timeout=20)
        self.assertEqual(process.returncode, 0, "".join(seen) + output)
        self.assertTrue(any("CURVE on" in line for line in seen), "".join(seen))
        os.remove(os.path.join(directory, "server.key_secret"))
        process = self.run_actd("tcp://127.0.0.1:%d" % free_port(), config)
        output, _ = process.communicate(timeout=20)
        self.assertEqual(process.returncode, 1, output)
        self.assertIn("the server key %s/server.key has no secret half" % directory, output)

if __name__ == "__main__":
    unittest.main()
