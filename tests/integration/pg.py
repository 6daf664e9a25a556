"""A private PostgreSQL server for tests: Debian's postgresql binaries, a
temporary data directory, a free port, trust authentication on loopback.
Started once per test process (on first use), stopped when it exits.

PostgreSQL refuses to run as root: when the tests run as root, the server
runs as the "postgres" system user (from Debian's postgresql package).
"""

import atexit
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import uuid

_server = None


def _bin(name):
    paths = sorted(glob.glob("/usr/lib/postgresql/*/bin/" + name))
    if not paths:
        raise RuntimeError("PostgreSQL's %s is not installed (Debian package postgresql; "
                           "scripts/deps.sh test installs it)" % name)
    return paths[-1]


class Server:
    """One PostgreSQL server; database() makes a fresh database and returns
    its URL."""

    def __init__(self, fsync=False, addresses=("127.0.0.1",)):
        """fsync=False (tests): commits do not reach the disk; benchmarks
        pass fsync=True to measure what production would pay. addresses:
        the loopback addresses it listens on (url(address=...) names one),
        so that a test can cut one client off (Silence) and not another."""
        from harness import free_port
        self.dir = tempfile.mkdtemp(prefix="actd-pg-")
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.user = None
        if os.geteuid() == 0:
            self.user = "postgres"
            entry = pwd.getpwnam(self.user)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._run([_bin("initdb"), "-D", self.data, "-U", "postgres", "-A", "trust",
                   "-E", "UTF8", "--no-sync"])
        if len(addresses) > 1:
            with open(os.path.join(self.data, "pg_hba.conf"), "a") as handle:
                handle.write("host all all 127.0.0.0/8 trust\n")
        options = "-p %d -k %s -c listen_addresses=%s -c fsync=%s " \
                  "-c max_connections=200 -c shared_buffers=64MB" \
                  % (self.port, self.dir, ",".join(addresses), "on" if fsync else "off")
        self.options = options
        self.start()
        atexit.register(self.stop)
        # atexit does not run when this process is killed (a ctest timeout):
        # a detached shell waits for it to be gone, then stops the server
        stop = [_bin("pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop"]
        if self.user:
            stop = ["runuser", "-u", self.user, "--"] + stop
        subprocess.Popen(["sh", "-c", 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; shift; '
                          '"$@" >/dev/null 2>&1; rm -rf "$0"',
                          self.dir, str(os.getpid())] + stop,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)

    def start(self):
        """Start the server (again, after halt()), and wait until it takes
        connections."""
        self._run([_bin("pg_ctl"), "-D", self.data, "-o", self.options, "-w", "-t", "60",
                   "-l", os.path.join(self.dir, "server.log"), "start"])

    def halt(self):
        """Stop the server at once, as a crash would (its data kept)."""
        self._run([_bin("pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop"])

    def _run(self, command):
        if self.user:
            command = ["runuser", "-u", self.user, "--"] + command
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        if result.returncode != 0:
            raise RuntimeError("%s failed:\n%s" % (" ".join(command), result.stdout))
        return result.stdout

    def url(self, database="postgres", address="127.0.0.1"):
        return "postgresql://postgres@%s:%d/%s" % (address, self.port, database)

    def database(self, address="127.0.0.1"):
        """A new, empty database; returns its URL (through address)."""
        name = "actd_" + uuid.uuid4().hex[:12]
        self._run([_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                   "-U", "postgres", name])
        return self.url(name, address)

    def processes(self):
        """The PIDs of the server: its postmaster and its children."""
        with open(os.path.join(self.data, "postmaster.pid")) as handle:
            master = int(handle.readline())
        pids = [master]
        for entry in os.listdir("/proc"):
            try:
                with open("/proc/%s/stat" % entry) as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == master:
                        pids.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
        return pids

    def stop(self):
        if self.data and os.path.exists(self.data):
            try:
                self._run([_bin("pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop"])
            except RuntimeError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
        self.data = None


class Paused:
    """The server stopped (SIGSTOP) inside the with block, resumed after:
    a database that hangs, as a stalled disk or a frozen VM does."""

    def __init__(self, server):
        self.pids = server.processes()

    def __enter__(self):
        for pid in self.pids:
            os.kill(pid, signal.SIGSTOP)
        return self

    def __exit__(self, *exc):
        for pid in self.pids:
            os.kill(pid, signal.SIGCONT)
        return False


class Silence:
    """While in effect, the kernel drops every TCP packet to or from port
    on this machine (only those to or from address, when given), as for a
    host that went silent: nothing is refused, nothing acknowledged. Needs
    root and nft (scripts/deps.sh test)."""

    def __init__(self, port, address=None):
        self.table = "actd_silence_%d" % os.getpid()
        self.port = port
        self.match = "ip daddr %s " % address if address else ""
        self.back = "ip saddr %s " % address if address else ""

    def nft(self, script):
        subprocess.run(["nft", "-f", "-"], input=script, text=True, check=True,
                       capture_output=True, timeout=30)

    def __enter__(self):
        if os.geteuid() != 0 or not shutil.which("nft"):
            raise AssertionError("this test drops packets with nft: it needs root and "
                                 "the nftables package (scripts/deps.sh test)")
        self.nft("table inet %s {\n chain out {\n type filter hook output priority 0;\n"
                 " %stcp dport %d drop\n %stcp sport %d drop\n }\n}\n"
                 % (self.table, self.match, self.port, self.back, self.port))
        return self

    def __exit__(self, *error):
        self.nft("delete table inet %s\n" % self.table)


def server():
    """The test process's PostgreSQL server, started on first use."""
    global _server
    if _server is None:
        _server = Server()
    return _server


def database():
    """A fresh database on the test process's server: its URL."""
    return server().database()
