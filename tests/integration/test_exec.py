"""actd-exec: any command served as an activity (workers/exec/README.md).

Each test runs actd-exec (harness.find_binary) against a real actd
(harness.Actd, heartbeat_ms 200) or, where only a stand-in can show the
behaviour (a deadline that passes with no CANCEL, a CANCEL to a command
that ignores SIGTERM), against FakeBroker, a ROUTER socket speaking the
broker's side of PROTOCOL.md section 2. The commands are the small shell
scripts of exec_scripts/. Every actd-exec is stopped with SIGTERM and must
exit 0 (under AddressSanitizer: no leak).

Run: ACTD_BIN=build-x/bin/actd /usr/bin/python3 -m unittest -v test_exec
"""

import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import zmq

from harness import DAGGER, Absent, Actd, find_binary, free_port, wait_for

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exec_scripts")
ONE_ATTEMPT = {"max_attempts": 1}
THREE_ATTEMPTS = {"max_attempts": 3, "initial_ms": 50}


def script(name):
    return os.path.join(SCRIPTS, name)


def ref(text):
    """A reference: ref("r.x") is "†r.x"."""
    return DAGGER + text


class Exec:
    """One actd-exec process: Exec(endpoint, "activity", [command...],
    "--option", ...). A context manager; stop() sends SIGTERM and returns
    the exit status. Its stderr (-v: a line per task) goes to a log file,
    shown when a test fails."""

    def __init__(self, endpoint, activity, command, *options, heartbeat_ms=200, env=None):
        self.dir = tempfile.mkdtemp(prefix="actd-exec-test-")
        self.log_path = os.path.join(self.dir, "actd-exec.log")
        self.args = [find_binary("actd-exec"), "--activity", activity,
                     "--endpoint", endpoint, "--heartbeat-ms", str(heartbeat_ms),
                     "--verbose"] + list(options) + ["--"] + list(command)
        self.env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", **(env or {}))
        self.process = None

    def start(self):
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(self.args, stdout=log, stderr=log, env=self.env)
        return self

    def stop(self, timeout=60.0):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError("actd-exec did not stop on SIGTERM:\n" + self.log())
        return self.process.returncode

    def log(self):
        with open(self.log_path, errors="replace") as handle:
            return handle.read()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        code = self.stop()
        log = self.log()
        shutil.rmtree(self.dir, ignore_errors=True)
        if exc[0] is None and code != 0:
            raise AssertionError("actd-exec exited %s on SIGTERM:\n%s" % (code, log))


class FakeBroker(threading.Thread):
    """The broker's side of the worker sub-protocol on a ROUTER socket, in a
    thread that heartbeats the worker every 100 ms (so it never reconnects)
    and queues what the worker sends, HEARTBEAT aside."""

    def __init__(self):
        super().__init__(daemon=True)
        self.endpoint = "tcp://127.0.0.1:%d" % free_port()
        self.inbox = queue.Queue()
        self.outbox = queue.Queue()
        self.readies = 0
        self.stopping = False
        self.bound = threading.Event()

    def run(self):
        socket = zmq.Context.instance().socket(zmq.ROUTER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.bind(self.endpoint)
        self.bound.set()
        identity = None
        last = 0.0
        while not self.stopping:
            if socket.poll(20):
                frames = socket.recv_multipart()
                if frames[2] == b"READY":
                    identity = frames[0]
                    self.readies += 1
                if frames[2] != b"HEARTBEAT":
                    self.inbox.put([f.decode() for f in frames[1:]])
            while identity and not self.outbox.empty():
                socket.send_multipart([identity] + self.outbox.get())
            if identity and time.time() - last > 0.1:
                socket.send_multipart([identity, b"ACTW01", b"HEARTBEAT"])
                last = time.time()
        socket.close(0)

    def start(self):
        super().start()
        self.bound.wait(10)
        return self

    def send(self, *frames):
        self.outbox.put([b"ACTW01"] + [f if isinstance(f, bytes) else f.encode() for f in frames])

    def receive(self, timeout=60.0):
        """The next message from the worker: ["ACTW01", COMMAND, args...]."""
        return self.inbox.get(timeout=timeout)

    def task(self, task_id, activity, params, meta):
        self.send("TASK", task_id, activity, json.dumps(params), json.dumps(meta))

    def stop(self):
        self.stopping = True
        self.join(10)


def alive(pid):
    """True while process pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def read_pids(path, timeout=60.0):
    """The pids a sleeper/stubborn script wrote to path (once it has)."""
    wait_for(lambda: os.path.exists(path), "the script's pid file", timeout)
    with open(path) as handle:
        return [int(pid) for pid in handle.read().split()]


def wait_gone(pids, timeout=60.0):
    wait_for(lambda: not any(alive(pid) for pid in pids), "processes %s to end" % pids,
             timeout)


class ExecTest(unittest.TestCase):
    """One actd for the class (stopped at the end: it must exit 0); each
    test has its own activities and actd-exec processes."""

    @classmethod
    def setUpClass(cls):
        cls.actd = Actd(heartbeat_ms=200, liveness=3).start()

    @classmethod
    def tearDownClass(cls):
        cls.actd.finish()

    def setUp(self):
        self.client = self.actd.client()
        self.tmp = tempfile.mkdtemp(prefix="actd-exec-data-")

    def tearDown(self):
        self.client.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def serve(self, activity, command, *options, **kwargs):
        """An Exec connected to the class's actd."""
        return Exec(self.actd.worker_endpoint, activity, command, *options, **kwargs)

    def outcome(self, call, context="exec"):
        """CALL and wait for DONE; returns (call_id, outcome)."""
        return self.client.call(context, call, timeout=120.0)


class TestResults(ExecTest):
    """Stdout is the result: a JSON text, else a JSON string of stdout."""

    def test_json_stdout_is_the_result_written_at_the_output_path(self):
        with self.serve("json-out", [script("json_out.sh")]):
            call_id, outcome = self.outcome({"_tool": "json-out", "_outputPath": ref("r.json")})
            expected = {"answer": [1, 2, {"x": "y"}], "text": "caf\u00e9"}
            self.assertEqual(outcome["status"], "ok")
            self.assertEqual(outcome["result"], expected)
            self.assertEqual(outcome["written"], [ref("r.json")])
            self.assertEqual(outcome["attempts"], 1)
            self.assertEqual(self.client.resolve("exec", ref("r.json")), expected)

    def test_non_json_stdout_becomes_a_json_string(self):
        with self.serve("text-out", [script("text_out.sh")]):
            _, outcome = self.outcome({"_tool": "text-out", "_outputPath": ref("r.text")})
            self.assertEqual(outcome["status"], "ok")
            self.assertEqual(outcome["result"], 'hello world\ntab\there "quoted"\n')
            self.assertEqual(self.client.resolve("exec", ref("r.text")),
                             'hello world\ntab\there "quoted"\n')

    def test_empty_stdout_is_the_empty_string(self):
        with self.serve("empty-out", [script("bytes_out.sh"), ""]):
            _, outcome = self.outcome({"_tool": "empty-out", "_outputPath": ref("r.empty")})
            self.assertEqual((outcome["status"], outcome["result"]), ("ok", ""))

    def test_stdout_larger_than_pipes_while_stderr_fills_is_read_whole(self):
        # 200000 bytes on stderr before any stdout: a worker reading only
        # stdout would deadlock with the command blocked on a full stderr
        with self.serve("flood", [script("flood.sh")]):
            _, outcome = self.outcome({"_tool": "flood", "_outputPath": ref("r.flood")})
            self.assertEqual(outcome["status"], "ok")
            self.assertEqual(outcome["result"], "o" * 200000)

    def test_stdout_not_utf8_fails_not_retryable(self):
        with self.serve("latin1", [script("bytes_out.sh"), "caf\\351\\n"]):
            _, outcome = self.outcome({"_tool": "latin1", "_outputPath": ref("r.latin1"),
                                       "_retry": THREE_ATTEMPTS})
            self.assertEqual(outcome["status"], "error")
            self.assertEqual(outcome["error"],
                             {"code": "bad_output",
                              "message": "stdout is neither JSON nor UTF-8 text "
                                         "(bad UTF-8 at byte 3)"})
            self.assertEqual(outcome["attempts"], 1)

    def test_stdout_with_nul_byte_fails_not_retryable(self):
        with self.serve("nul", [script("bytes_out.sh"), "a\\000b"]):
            _, outcome = self.outcome({"_tool": "nul", "_outputPath": ref("r.nul"),
                                       "_retry": THREE_ATTEMPTS})
            self.assertEqual(outcome["status"], "error")
            self.assertEqual(outcome["error"]["code"], "bad_output")
            self.assertEqual(outcome["attempts"], 1)

    def test_stdout_over_max_output_stops_the_command_and_fails(self):
        # yes(1) never ends: only the worker stopping it ends the task
        with self.serve("endless", [script("endless.sh")], "--max-output", "100000"):
            _, outcome = self.outcome({"_tool": "endless", "_outputPath": ref("r.endless"),
                                       "_retry": THREE_ATTEMPTS})
            self.assertEqual(outcome["status"], "error")
            self.assertEqual(outcome["error"],
                             {"code": "output_too_large",
                              "message": "stdout went over --max-output (100000 bytes); "
                                         "the command was stopped"})
            self.assertEqual(outcome["attempts"], 1)

    def test_result_over_max_output_as_json_fails(self):
        # 60 bytes of stdout, 362 as a JSON string ("\u0001" each)
        with self.serve("escaped", [script("bytes_out.sh"), "\\001" * 60],
                        "--max-output", "100"):
            _, outcome = self.outcome({"_tool": "escaped", "_outputPath": ref("r.escaped"),
                                       "_retry": THREE_ATTEMPTS})
            self.assertEqual(outcome["status"], "error")
            self.assertEqual(outcome["error"],
                             {"code": "output_too_large",
                              "message": "the result is 362 bytes as JSON, over "
                                         "--max-output (100)"})
            self.assertEqual(outcome["attempts"], 1)


class TestTaskInput(ExecTest):
    """The params on stdin, the meta in the environment."""

    def test_params_on_stdin_and_meta_in_environment(self):
        # The script reads stdin to its end (so stdin must end), and an
        # ACTD_INSTANCE in the worker's own environment is not passed on
        trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        with self.serve("env", [script("echo_env.sh"), "one", "two"],
                        env={"ACTD_INSTANCE": "stale", "TRACEPARENT": "stale"}):
            params = {"city": "Zürich", "list": [1, {"deep": None}], "quote": "a\"b"}
            call_id, outcome = self.outcome(dict(params, _tool="env",
                                                 _outputPath=ref("r.env"), _timeout=45000))
            self.assertEqual(outcome["status"], "ok")
            self.assertEqual(outcome["result"], {
                "params": params, "context": "exec", "call_id": call_id,
                "task_id": call_id + ".1", "attempt": "1", "deadline_ms": "45000",
                "instance": "(unset)", "branches": "1", "discard": "0", "activity": "env",
                "meta": {"context": "exec", "call_id": call_id, "attempt": 1,
                         "deadline_ms": 45000, "branches": 1, "discard": False},
                "trace": "(unset)", "branch_file_set": True, "args": "one two"})

            call_id, outcome = self.outcome({"_tool": "env", "_instance": "i7",
                                             "_outputPath": ref("r.a") + " || " + ref("r.b"),
                                             "_timeout": 30000, "_trace": trace},
                                            context="exec-2")
            self.assertEqual(outcome["status"], "ok")
            self.assertEqual(outcome["result"], {
                "params": {}, "context": "exec-2", "call_id": call_id,
                "task_id": call_id + ".1", "attempt": "1", "deadline_ms": "30000",
                "instance": "i7", "branches": "2", "discard": "0", "activity": "env",
                "meta": {"context": "exec-2", "call_id": call_id, "attempt": 1,
                         "deadline_ms": 30000, "branches": 2, "discard": False,
                         "instance": "i7", "trace": trace},
                "trace": trace, "branch_file_set": True, "args": "one two"})

    def test_params_larger_than_a_pipe_reach_stdin_whole(self):
        # cat(1) echoes stdin: the params and a newline, a JSON text
        params = {"blob": "p" * 300000, "n": [1, 2, 3]}
        with self.serve("cat", ["cat"]):
            _, outcome = self.outcome(dict(params, _tool="cat", _outputPath=ref("r.cat")))
            self.assertEqual((outcome["status"], outcome["result"]), ("ok", params))

    def test_one_worker_serves_several_activities(self):
        with self.serve("env-a", [script("echo_env.sh")], "--activity", "env-b"):
            for activity in ("env-a", "env-b"):
                _, outcome = self.outcome({"_tool": activity, "_outputPath": ref("r.which")})
                self.assertEqual(outcome["status"], "ok")
                self.assertEqual(outcome["result"]["activity"], activity)

    def test_fire_and_forget_call_runs_with_discard_set(self):
        record = os.path.join(self.tmp, "record")
        with self.serve("record", [script("record_env.sh")]):
            reply = self.client.request("CALL", "exec", {"_tool": "record", "file": record})
            self.assertEqual(reply[0], "ACCEPTED")
            self.client.wait_status(reply[1], ["ok"], timeout=60.0)
            with open(record) as handle:
                self.assertEqual(handle.read(), "1 0\n")

    def test_attempt_counts_retries_of_a_retryable_exit(self):
        with self.serve("flaky", [script("flaky.sh")]):
            _, outcome = self.outcome({"_tool": "flaky", "_outputPath": ref("r.flaky"),
                                       "_retry": {"max_attempts": 2, "initial_ms": 50}})
            self.assertEqual(outcome["status"], "ok")
            self.assertEqual(outcome["result"], {"attempt": 2})
            self.assertEqual(outcome["attempts"], 2)


class TestFailures(ExecTest):
    """A non-zero exit or a signal is FAIL, with stderr's tail."""

    def test_nonzero_exit_fails_with_stderr_tail_and_exit_code(self):
        with self.serve("fail", [script("fail.sh"), "5000", "3"]):
            _, outcome = self.outcome({"_tool": "fail", "_outputPath": ref("r.fail"),
                                       "_retry": ONE_ATTEMPT})
            stderr = "x" * 5000 + "\nboom: disk full\n"
            self.assertEqual(outcome["status"], "error")
            self.assertEqual(outcome["error"], {"code": "exit_3",
                                                "message": stderr[-2048:].strip()})
            self.assertEqual(outcome["attempts"], 1)
            self.assertEqual(outcome["written"], [])

    def test_nonzero_exit_with_empty_stderr_says_the_status(self):
        with self.serve("silent", ["/bin/sh", "-c", "exit 9"]):
            _, outcome = self.outcome({"_tool": "silent", "_outputPath": ref("r.silent"),
                                       "_retry": ONE_ATTEMPT})
            self.assertEqual(outcome["error"], {"code": "exit_9",
                                                "message": "the command exited with status 9"})

    def test_stderr_tail_is_made_valid_utf8(self):
        command = ["/bin/sh", "-c", "printf 'bad \\377 byte\\n' >&2; exit 1"]
        with self.serve("latin1-err", command):
            _, outcome = self.outcome({"_tool": "latin1-err", "_outputPath": ref("r.l1"),
                                       "_retry": ONE_ATTEMPT})
            self.assertEqual(outcome["error"], {"code": "exit_1",
                                                "message": "bad \ufffd byte"})

    def test_failure_with_alternatives_is_written_to_the_last(self):
        with self.serve("fail2", [script("fail.sh"), "0", "4"]):
            _, outcome = self.outcome({"_tool": "fail2",
                                       "_outputPath": ref("f.ok") + " || " + ref("f.failed"),
                                       "_retry": ONE_ATTEMPT})
            error = {"code": "exit_4", "message": "boom: disk full"}
            self.assertEqual((outcome["status"], outcome["error"]), ("error", error))
            self.assertEqual(outcome["branch"], 1)
            self.assertEqual(self.client.resolve("exec", ref("f.failed")), {"error": error})

    def test_death_by_signal_fails_with_signal_code(self):
        with self.serve("killed", [script("killed.sh"), "KILL"]):
            _, outcome = self.outcome({"_tool": "killed", "_outputPath": ref("r.killed"),
                                       "_retry": ONE_ATTEMPT})
            self.assertEqual(outcome["status"], "error")
            self.assertEqual(outcome["error"], {"code": "signal_9", "message": "about to die"})


class TestBranches(ExecTest):
    """A command chooses a branch by writing it to ACTD_BRANCH_FILE."""

    PATH = ref("w.sunny") + " || " + ref("w.rainy")

    def test_branch_written_by_the_command_is_taken(self):
        with self.serve("branch", [script("branch.sh")]):
            _, outcome = self.outcome({"_tool": "branch", "_outputPath": self.PATH,
                                       "branch": "1"})
            self.assertEqual(outcome["status"], "ok")
            self.assertEqual(outcome["branch"], 1)
            self.assertEqual(outcome["written"], [ref("w.rainy")])
            self.assertEqual(self.client.resolve("exec", ref("w.rainy")), {"took": "1"})
            self.assertIs(self.client.resolve("exec", ref("w.sunny")), Absent)

    def test_no_branch_written_takes_branch_0(self):
        with self.serve("branch0", [script("branch.sh")]):
            _, outcome = self.outcome({"_tool": "branch0", "_outputPath": self.PATH},
                                      context="exec-b0")
            self.assertEqual((outcome["status"], outcome["branch"]), ("ok", 0))
            self.assertEqual(self.client.resolve("exec-b0", ref("w.sunny")), {"took": ""})

    def test_branch_out_of_range_fails_not_retryable(self):
        with self.serve("branch5", [script("branch.sh")]):
            _, outcome = self.outcome({"_tool": "branch5", "_outputPath": self.PATH,
                                       "branch": "5", "_retry": THREE_ATTEMPTS},
                                      context="exec-b5")
            self.assertEqual(outcome["status"], "error")
            self.assertEqual(outcome["error"],
                             {"code": "bad_branch",
                              "message": "the command chose branch 5; the output path has "
                                         "2 alternatives"})
            self.assertEqual(outcome["attempts"], 1)

    def test_branch_file_without_a_number_fails(self):
        with self.serve("branchw", [script("branch.sh")]):
            _, outcome = self.outcome({"_tool": "branchw", "_outputPath": self.PATH,
                                       "branch": "west", "_retry": ONE_ATTEMPT},
                                      context="exec-bw")
            self.assertEqual(outcome["error"],
                             {"code": "bad_branch",
                              "message": "ACTD_BRANCH_FILE holds \"west\", not a branch number"})


class TestStopping(ExecTest):
    """Timeouts and cancels stop the command: SIGTERM, then SIGKILL."""

    def test_timeout_broker_cancels_and_command_is_killed(self):
        pidfile = os.path.join(self.tmp, "pids")
        with self.serve("sleeper", [script("sleeper.sh")]):
            _, outcome = self.outcome({"_tool": "sleeper", "_outputPath": ref("r.slept"),
                                       "_timeout": 3000, "_retry": ONE_ATTEMPT,
                                       "pidfile": pidfile, "seconds": 120})
            self.assertEqual(outcome["status"], "timeout")
            self.assertEqual(outcome["error"]["code"], "timeout")
            wait_gone(read_pids(pidfile))
            # The slot is free again: capacity 1 runs the next call
            _, outcome = self.outcome({"_tool": "sleeper", "_outputPath": ref("r.slept"),
                                       "pidfile": pidfile + "2", "seconds": 0})
            self.assertEqual((outcome["status"], outcome["result"]), ("ok", "woke up"))

    def test_exit_ends_the_task_though_a_child_holds_its_pipes(self):
        # The script exits at once; the sleep it left keeps its stdout and
        # stderr open for 120 s, and is killed with the rest of the group
        pidfile = os.path.join(self.tmp, "pids")
        with self.serve("orphan", [script("orphan.sh")]):
            _, outcome = self.outcome({"_tool": "orphan", "_outputPath": ref("r.orphan"),
                                       "pidfile": pidfile, "_timeout": 60000})
            self.assertEqual((outcome["status"], outcome["result"]),
                             ("ok", "left a sleep behind"))
            wait_gone(read_pids(pidfile))

    def test_client_cancel_stops_the_command_and_frees_the_slot(self):
        pidfile = os.path.join(self.tmp, "pids")
        with self.serve("cancelled", [script("sleeper.sh")]):
            rid = self.client.send("CALL", "exec", {"_tool": "cancelled",
                                                    "_outputPath": ref("r.cancelled"),
                                                    "pidfile": pidfile, "seconds": 120})
            call_id = self.client.wait(rid, "ACCEPTED")[1]
            pids = read_pids(pidfile)
            self.assertEqual(self.client.request("CANCEL", call_id), ["OK"])
            done = json.loads(self.client.wait(rid, "DONE", timeout=60.0)[2])
            self.assertEqual(done["status"], "cancelled")
            wait_gone(pids)
            _, outcome = self.outcome({"_tool": "cancelled", "_outputPath": ref("r.cancelled"),
                                       "pidfile": pidfile + "2", "seconds": 0})
            self.assertEqual((outcome["status"], outcome["attempts"]), ("ok", 1))

    def test_deadline_of_meta_stops_the_command_without_cancel(self):
        pidfile = os.path.join(self.tmp, "pids")
        broker = FakeBroker().start()
        try:
            with Exec(broker.endpoint, "sleeper", [script("sleeper.sh")]):
                self.assertEqual(broker.receive()[1], "READY")
                broker.task("1.1", "sleeper", {"pidfile": pidfile, "seconds": 120},
                            {"context": "c", "call_id": "1", "attempt": 1,
                             "deadline_ms": 2000, "branches": 1, "discard": False})
                pids = read_pids(pidfile)
                answer = broker.receive()
                self.assertEqual(answer[1:3], ["FAIL", "1.1"])
                self.assertEqual(json.loads(answer[3]),
                                 {"code": "timeout", "retryable": True,
                                  "message": "the command ran past its deadline of 2000 ms "
                                             "and was stopped"})
                wait_gone(pids)
                self.assertEqual(broker.readies, 1)
        finally:
            broker.stop()

    def test_command_ignoring_sigterm_is_killed_after_the_grace(self):
        pidfile = os.path.join(self.tmp, "pids")
        broker = FakeBroker().start()
        try:
            with Exec(broker.endpoint, "stubborn", [script("stubborn.sh")],
                      "--kill-grace-ms", "300"):
                self.assertEqual(broker.receive()[1], "READY")
                broker.task("7.2", "stubborn", {"pidfile": pidfile},
                            {"context": "c", "call_id": "7", "attempt": 2,
                             "deadline_ms": 600000, "branches": 1, "discard": False})
                pids = read_pids(pidfile)
                broker.send("CANCEL", "7.2")
                # Only SIGKILL ends the script, so the answer proves it came
                answer = broker.receive()
                self.assertEqual(answer[1:3], ["FAIL", "7.2"])
                self.assertEqual(json.loads(answer[3]),
                                 {"code": "cancelled", "retryable": False,
                                  "message": "the broker cancelled the task; "
                                             "the command was stopped"})
                wait_gone(pids)
        finally:
            broker.stop()

    def test_a_disconnect_stops_the_commands_of_the_old_connection(self):
        """After DISCONNECT the worker connects anew (a new identity) and
        sends READY again; the broker gives the old connection's tasks to
        others, so their commands are stopped (SIGTERM, then SIGKILL after
        the grace) and nothing is answered for them (workers/exec/README.md,
        Limits)."""
        pidfile = os.path.join(self.tmp, "pids")
        broker = FakeBroker().start()
        try:
            with Exec(broker.endpoint, "sleeper", [script("sleeper.sh")],
                      "--kill-grace-ms", "300"):
                self.assertEqual(broker.receive()[1], "READY")
                broker.task("3.1", "sleeper", {"pidfile": pidfile, "seconds": 120},
                            {"context": "c", "call_id": "3", "attempt": 1,
                             "deadline_ms": 600000, "branches": 1, "discard": False})
                pids = read_pids(pidfile)
                broker.send("DISCONNECT", "a test says so")
                self.assertEqual(broker.receive()[1], "READY")
                wait_gone(pids)
                #  Nothing about the old task comes on the new connection
                time.sleep(0.5)
                self.assertTrue(broker.inbox.empty(), broker.inbox.queue)
                self.assertEqual(broker.readies, 2)
        finally:
            broker.stop()

    def test_sigterm_to_the_worker_stops_running_commands(self):
        pidfile = os.path.join(self.tmp, "pids")
        worker = self.serve("shutdown", [script("sleeper.sh")]).start()
        self.addCleanup(shutil.rmtree, worker.dir, True)
        try:
            reply = self.client.request("CALL", "exec", {"_tool": "shutdown",
                                                         "pidfile": pidfile, "seconds": 120})
            self.assertEqual(reply[0], "ACCEPTED")
            pids = read_pids(pidfile)
        finally:
            code = worker.stop()
        self.assertEqual(code, 0, worker.log())
        wait_gone(pids)
        self.assertEqual(self.client.request("CANCEL", reply[1]), ["OK"])


class TestConcurrency(ExecTest):
    """Capacity and heartbeats."""

    def test_capacity_two_runs_two_commands_at_once(self):
        # Each run waits until two have started: only concurrent runs
        # both see 2
        with self.serve("meet", [script("rendezvous.sh")], "--capacity", "2"):
            first = self.client.send("CALL", "exec", {"_tool": "meet", "dir": self.tmp,
                                                      "_outputPath": ref("m.first")})
            second = self.client.send("CALL", "exec", {"_tool": "meet", "dir": self.tmp,
                                                       "_outputPath": ref("m.second")})
            for rid in (first, second):
                self.assertEqual(self.client.wait(rid, "ACCEPTED")[0], "ACCEPTED")
            for rid in (first, second):
                done = json.loads(self.client.wait(rid, "DONE", timeout=120.0)[2])
                #  2, or 3 when a loaded machine made actd judge the worker
                #  lost (heartbeat 200 ms) and a run start again: a run that
                #  saw fewer than 2 waited alone, capacity 1
                self.assertEqual(done["status"], "ok", done)
                self.assertGreaterEqual(done["result"], 2, done)
            stats = self.client.value("STATS")
            workers = [w for w in stats["workers"] if w["activities"] == ["meet"]]
            self.assertEqual([(w["capacity"], w["lang"]) for w in workers], [(2, "exec")])

    def test_heartbeats_continue_while_a_command_runs(self):
        # actd heartbeat_ms 200, liveness 3: silent for 600 ms, the worker
        # would be lost and the call dispatched again (attempts 2)
        with self.serve("slow", [script("slow_ok.sh")]):
            _, outcome = self.outcome({"_tool": "slow", "_outputPath": ref("r.slow")})
            self.assertEqual(outcome["status"], "ok")
            self.assertEqual(outcome["result"], {"slept": 2})
            self.assertEqual(outcome["attempts"], 1)


class TestUsage(unittest.TestCase):
    """The command line."""

    def run_exec(self, *args):
        return subprocess.run([find_binary("actd-exec")] + list(args), capture_output=True,
                              text=True, timeout=60,
                              env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))

    def test_help_documents_the_interface(self):
        done = self.run_exec("--help")
        self.assertEqual(done.returncode, 0)
        for word in ["--activity", "--capacity", "--kill-grace-ms", "--max-output",
                     "ACTD_BRANCH_FILE", "ACTD_META", "exit_N", "signal_N", "timeout"]:
            self.assertIn(word, done.stdout)

    def test_missing_activity_is_a_usage_error(self):
        done = self.run_exec("--", "/bin/true")
        self.assertEqual(done.returncode, 2)
        self.assertIn("--activity NAME is required", done.stderr)

    def test_command_not_found_is_a_usage_error(self):
        done = self.run_exec("--activity", "x", "--", "no-such-command-anywhere")
        self.assertEqual(done.returncode, 2)
        self.assertIn("no-such-command-anywhere: command not found", done.stderr)


if __name__ == "__main__":
    unittest.main()
