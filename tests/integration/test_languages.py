"""Workers and clients in every language, against one real actd.

- The Python package (workers/python, `actd`) and the Node.js package
  (workers/node, run as a `node` process of its own from lang/node_worker.js)
  each serve a weather activity that names its branch and a failing activity
  that raises the package's ActivityError; both are called by the Python
  Client and by actctl (PROTOCOL.md sections 1 and 2, SEMANTICS.md 5 and 7).
- actd-exec (workers/exec/README.md) serves lang/exec_tool.sh: JSON stdout,
  plain-text stdout, a non-zero exit and a timeout, one call each.
- Majordomo workers (PROTOCOL.md section 2, "Majordomo workers"): an 18/MDP
  (MDPW02) and a 7/MDP (MDPW01) worker written here from the RFCs on raw
  DEALER sockets serve activities, heartbeat, report PARTIAL as progress, and
  are declared lost when they go silent.

Node.js is required: without `node`, or without the package's dependencies
(`npm ci` in workers/node, or workers/node/run-tests.sh once), the Node
tests fail with a message that says so; they never skip.

Run: cd tests/integration && ACTD_BIN=build-x/bin/actd /usr/bin/python3 -m unittest -v test_languages
"""

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import zmq

from harness import (DAGGER, ROOT, Actd, end_process, find_binary, free_port, node_problem,
                     wait_for)

sys.path.insert(0, os.path.join(ROOT, "workers", "python"))
import actd  # noqa: E402  (the package under test, from the source tree)

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_WORKER = os.path.join(HERE, "lang", "node_worker.js")
EXEC_TOOL = os.path.join(HERE, "lang", "exec_tool.sh")

WEATHER_PATH = DAGGER + "state.sunny || " + DAGGER + "state.rainy"
ONE_ATTEMPT = {"max_attempts": 1}
LONG = 60.0                 # seconds: generous waits on a loaded machine


def ref(text):
    """A reference: ref("state.x") is "†state.x"."""
    return DAGGER + text


_contexts = iter(range(1, 1000000))


def new_context(name):
    """A context id no other call of this run has used."""
    return "%s-%d" % (name, next(_contexts))


# ---------------------------------------------------------------------------
#  1. The Python and Node.js packages, called by the Python Client and actctl

def python_worker(endpoint):
    """The Python worker: py_weather and py_fail, like lang/node_worker.js."""
    worker = actd.Worker(endpoint, capacity=2, name="lang-python-worker",
                         heartbeat_ms=200, liveness=3)

    @worker.activity("py_weather")
    def weather(params, task):
        city = params["city"]
        if len(city) % 2 == 0:
            return actd.Branch(0, {"city": city, "sky": "sunny", "lang": "python"})
        return actd.Branch(1, {"city": city, "sky": "rainy", "lang": "python"})

    @worker.activity("py_fail")
    def fail(params, task):
        raise actd.ActivityError("no forecast for " + params["city"], code="no_forecast",
                                 retryable=False, city=params["city"])

    return worker


class TestPythonAndNodeWorkers(unittest.TestCase):
    """A Python worker and a Node worker (a separate process) serve the same
    kinds of activities; the Python Client and actctl call both."""

    LANGS = (("python", "py"), ("node", "node"))

    @classmethod
    def setUpClass(cls):
        cls.actd = Actd(heartbeat_ms=200).start()
        cls.dir = tempfile.mkdtemp(prefix="actd-lang-test-")
        cls.client = actd.Client(cls.actd.client_endpoint, timeout=LONG)
        cls.worker = python_worker(cls.actd.worker_endpoint)
        cls.worker.start()
        cls.node = None
        cls.node_log = os.path.join(cls.dir, "node-worker.log")
        cls.node_problem = node_problem()
        if cls.node_problem is None:
            with open(cls.node_log, "w") as log:
                cls.node = subprocess.Popen(
                    ["node", NODE_WORKER, "--endpoint", cls.actd.worker_endpoint,
                     "--heartbeat-ms", "200", "--name", "lang-node-worker"],
                    stdout=log, stderr=log)
        expected = {"lang-python-worker"} | ({"lang-node-worker"} if cls.node else set())

        def registered():
            if cls.node and cls.node.poll() is not None:
                raise AssertionError("the node worker exited with %s:\n%s"
                                     % (cls.node.returncode, cls.read_node_log()))
            names = {worker["name"] for worker in cls.client.stats()["workers"]}
            return expected <= names
        wait_for(registered, "the Python and Node workers to send READY", LONG)

    @classmethod
    def read_node_log(cls):
        with open(cls.node_log, errors="replace") as handle:
            return handle.read()

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.worker.stop(wait=True, timeout=LONG)
        cls.worker.close()
        node_code = None
        if cls.node:
            cls.node.send_signal(signal.SIGTERM)
            try:
                node_code = cls.node.wait(LONG)
            except subprocess.TimeoutExpired:
                cls.node.kill()
                cls.node.wait()
        node_log = cls.read_node_log() if cls.node else ""
        actd_code = cls.actd.stop()
        actd_log = cls.actd.log()
        cls.actd.cleanup()
        shutil.rmtree(cls.dir, ignore_errors=True)
        if cls.node and node_code != 0:
            raise AssertionError("the node worker exited %s on SIGTERM:\n%s"
                                 % (node_code, node_log))
        if actd_code != 0:
            raise AssertionError("actd exited %s on SIGTERM:\n%s" % (actd_code, actd_log))

    def require(self, lang):
        """The Node worker must be there: fail (never skip) when it cannot run."""
        if lang == "node" and self.node_problem:
            self.fail(self.node_problem)

    def actctl(self, *args):
        """Run actctl --endpoint EP --json --timeout 60000 ARGS; (exit code, stdout, stderr)."""
        command = [find_binary("actctl"), "--endpoint", self.actd.client_endpoint,
                   "--json", "--timeout", "60000"] + list(args)
        done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))
        return done.returncode, done.stdout, done.stderr

    # -- the Python Client ------------------------------------------------

    def test_stats_lists_each_worker_with_its_activities_and_lang(self):
        workers = {worker["name"]: worker for worker in self.client.stats()["workers"]}
        self.assertEqual(
            {key: workers["lang-python-worker"][key] for key in ("activities", "capacity", "lang")},
            {"activities": ["py_weather", "py_fail"], "capacity": 2, "lang": "python"})
        self.require("node")
        self.assertEqual(
            {key: workers["lang-node-worker"][key] for key in ("activities", "capacity", "lang")},
            {"activities": ["node_weather", "node_fail"], "capacity": 2, "lang": "node"})

    def test_python_client_result_written_to_the_branch_the_worker_names(self):
        for lang, prefix in self.LANGS:
            for city, branch, sky in (("Oslo", 0, "sunny"), ("Paris", 1, "rainy")):
                with self.subTest(lang=lang, city=city):
                    self.require(lang)
                    context = new_context("py-client-" + lang)
                    self.client.append(context, {"type": "data", "kind": "trip",
                                                 "data": {"city": city}})
                    outcome = self.client.call(context, {
                        "_tool": prefix + "_weather", "_outputPath": WEATHER_PATH,
                        "city": ref("trip.city")}, timeout=LONG)
                    result = {"city": city, "sky": sky, "lang": lang}
                    self.assertEqual(outcome.raw, {
                        "call_id": outcome.call_id, "status": "ok", "branch": branch,
                        "written": [ref("state." + sky)], "seqs": [2], "result": result,
                        "attempts": 1})
                    self.assertEqual(self.client.resolve(context, ref("state." + sky)), result)
                    other = "rainy" if sky == "sunny" else "sunny"
                    with self.assertRaises(actd.NotFound):
                        self.client.resolve(context, ref("state." + other))

    def test_python_client_activity_error_ends_error_written_to_last_alternative(self):
        for lang, prefix in self.LANGS:
            with self.subTest(lang=lang):
                self.require(lang)
                context = new_context("py-fail-" + lang)
                outcome = self.client.call(context, {
                    "_tool": prefix + "_fail", "_outputPath": WEATHER_PATH,
                    "city": "Atlantis"}, timeout=LONG)
                error = {"code": "no_forecast", "message": "no forecast for Atlantis",
                         "city": "Atlantis"}
                # retryable false: one attempt although the default allows 3
                self.assertEqual(outcome.raw, {
                    "call_id": outcome.call_id, "status": "error", "branch": 1,
                    "written": [ref("state.rainy")], "seqs": [1], "error": error,
                    "attempts": 1})
                self.assertEqual(self.client.resolve(context, ref("state.rainy")),
                                 {"error": error})
                with self.assertRaises(actd.NotFound):
                    self.client.resolve(context, ref("state.sunny"))
                status = self.client.status(outcome.call_id)
                self.assertEqual((status.state, status.attempts, status.outcome),
                                 ("error", 1, outcome))

    # -- actctl -------------------------------------------------------------

    def test_actctl_call_wait_prints_the_outcome_and_exits_0(self):
        for lang, prefix in self.LANGS:
            for city, branch, sky in (("Lima", 0, "sunny"), ("Quito", 1, "rainy")):
                with self.subTest(lang=lang, city=city):
                    self.require(lang)
                    context = new_context("actctl-" + lang)
                    call = {"_tool": prefix + "_weather", "_outputPath": WEATHER_PATH,
                            "city": city}
                    code, out, err = self.actctl("call", context, json.dumps(call), "--wait")
                    self.assertEqual(code, 0, err)
                    outcome = json.loads(out)
                    result = {"city": city, "sky": sky, "lang": lang}
                    self.assertEqual(outcome, {
                        "call_id": outcome["call_id"], "status": "ok", "branch": branch,
                        "written": [ref("state." + sky)], "seqs": [1], "result": result,
                        "attempts": 1})
                    code, out, err = self.actctl("resolve", context, ref("state." + sky))
                    self.assertEqual((code, json.loads(out)), (0, result), err)
                    other = "rainy" if sky == "sunny" else "sunny"
                    code, out, err = self.actctl("resolve", context, ref("state." + other))
                    self.assertEqual((code, out), (1, ""))
                    self.assertTrue(err.startswith("actctl: not_found: "), err)

    def test_actctl_failed_call_prints_the_outcome_and_exits_1(self):
        for lang, prefix in self.LANGS:
            with self.subTest(lang=lang):
                self.require(lang)
                context = new_context("actctl-fail-" + lang)
                call = {"_tool": prefix + "_fail", "_outputPath": WEATHER_PATH, "city": "Mu"}
                code, out, err = self.actctl("call", context, json.dumps(call), "--wait")
                self.assertEqual(code, 1, err)
                outcome = json.loads(out)
                error = {"code": "no_forecast", "message": "no forecast for Mu", "city": "Mu"}
                self.assertEqual(outcome, {
                    "call_id": outcome["call_id"], "status": "error", "branch": 1,
                    "written": [ref("state.rainy")], "seqs": [1], "error": error,
                    "attempts": 1})
                code, out, err = self.actctl("resolve", context, ref("state.rainy"))
                self.assertEqual((code, json.loads(out)), (0, {"error": error}), err)
                # The Python Client reads the same call the same way
                self.assertEqual(self.client.status(outcome["call_id"]).outcome.raw, outcome)


# ---------------------------------------------------------------------------
#  2. actd-exec running a shell script

class TestExecWorker(unittest.TestCase):
    """actd-exec serves lang/exec_tool.sh (four activities, one command);
    the Python Client calls each once."""

    ACTIVITIES = ["sh_json", "sh_text", "sh_exit", "sh_slow"]

    @classmethod
    def setUpClass(cls):
        cls.actd = Actd(heartbeat_ms=200).start()
        cls.dir = tempfile.mkdtemp(prefix="actd-lang-exec-")
        cls.exec_log = os.path.join(cls.dir, "actd-exec.log")
        command = [find_binary("actd-exec"), "--endpoint", cls.actd.worker_endpoint,
                   "--heartbeat-ms", "200", "--capacity", "2", "--kill-grace-ms", "500",
                   "--name", "lang-exec", "--verbose"]
        for activity in cls.ACTIVITIES:
            command += ["--activity", activity]
        command += ["--", "/bin/sh", EXEC_TOOL]
        with open(cls.exec_log, "w") as log:
            cls.exec = subprocess.Popen(command, stdout=log, stderr=log,
                                        env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))
        cls.client = actd.Client(cls.actd.client_endpoint, timeout=LONG)

        def registered():
            if cls.exec.poll() is not None:
                raise AssertionError("actd-exec exited with %s:\n%s"
                                     % (cls.exec.returncode, cls.read_exec_log()))
            return any(worker["name"] == "lang-exec" for worker in cls.client.stats()["workers"])
        wait_for(registered, "actd-exec to send READY", LONG)

    @classmethod
    def read_exec_log(cls):
        with open(cls.exec_log, errors="replace") as handle:
            return handle.read()

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.exec.send_signal(signal.SIGTERM)
        try:
            exec_code = cls.exec.wait(LONG)
        except subprocess.TimeoutExpired:
            cls.exec.kill()
            exec_code = cls.exec.wait()
        exec_log = cls.read_exec_log()
        actd_code = cls.actd.stop()
        actd_log = cls.actd.log()
        cls.actd.cleanup()
        shutil.rmtree(cls.dir, ignore_errors=True)
        if exec_code != 0:
            raise AssertionError("actd-exec exited %s on SIGTERM:\n%s" % (exec_code, exec_log))
        if actd_code != 0:
            raise AssertionError("actd exited %s on SIGTERM:\n%s" % (actd_code, actd_log))

    def call(self, context, call):
        outcome = self.client.call(context, call, timeout=LONG)
        self.assertEqual(outcome.call_id, outcome.raw["call_id"])
        return outcome

    def test_json_stdout_is_the_result(self):
        context = new_context("exec-json")
        outcome = self.call(context, {"_tool": "sh_json", "_outputPath": ref("exec.json"),
                                      "city": "Oslo", "days": [1, 2]})
        result = {"activity": "sh_json", "params": {"city": "Oslo", "days": [1, 2]}}
        self.assertEqual(outcome.raw, {"call_id": outcome.call_id, "status": "ok", "branch": 0,
                                       "written": [ref("exec.json")], "seqs": [1],
                                       "result": result, "attempts": 1})
        self.assertEqual(self.client.resolve(context, ref("exec.json")), result)

    def test_non_json_stdout_is_the_result_as_a_json_string(self):
        context = new_context("exec-text")
        outcome = self.call(context, {"_tool": "sh_text", "_outputPath": ref("exec.text")})
        self.assertEqual(outcome.raw, {"call_id": outcome.call_id, "status": "ok", "branch": 0,
                                       "written": [ref("exec.text")], "seqs": [1],
                                       "result": "it is sunny\nin Oslo\n", "attempts": 1})
        self.assertEqual(self.client.resolve(context, ref("exec.text")), "it is sunny\nin Oslo\n")

    def test_nonzero_exit_fails_with_the_tail_of_stderr(self):
        context = new_context("exec-exit")
        outcome = self.call(context, {"_tool": "sh_exit",
                                      "_outputPath": ref("exec.ok") + " || " + ref("exec.failed"),
                                      "_retry": ONE_ATTEMPT})
        error = {"code": "exit_3", "message": "warming up\nno forecast: disk full"}
        self.assertEqual(outcome.raw, {"call_id": outcome.call_id, "status": "error",
                                       "branch": 1, "written": [ref("exec.failed")],
                                       "seqs": [1], "error": error, "attempts": 1})
        self.assertEqual(self.client.resolve(context, ref("exec.failed")), {"error": error})

    def test_timeout_shorter_than_the_script_ends_timeout(self):
        context = new_context("exec-slow")
        outcome = self.call(context, {"_tool": "sh_slow",
                                      "_outputPath": ref("exec.slow") + " || " + ref("exec.late"),
                                      "_timeout": 1000, "_retry": ONE_ATTEMPT})
        error = {"code": "timeout", "message": "attempt 1 ran over its timeout of 1000 ms"}
        self.assertEqual(outcome.raw, {"call_id": outcome.call_id, "status": "timeout",
                                       "branch": 1, "written": [ref("exec.late")],
                                       "seqs": [1], "error": error, "attempts": 1})
        self.assertEqual(self.client.resolve(context, ref("exec.late")), {"error": error})
        # The command was stopped: the worker's slot comes back (running 0)
        wait_for(lambda: [worker for worker in self.client.stats()["workers"]
                          if worker["name"] == "lang-exec" and worker["running"] == 0],
                 "actd-exec to answer the cancelled task", LONG)


# ---------------------------------------------------------------------------
#  3. Majordomo workers, written here from 18/MDP and 7/MDP

#  Command bytes of the worker side of each protocol, and the header every
#  message starts with. Workers in the wild put an empty frame before it
#  (a REQ-style envelope: the ZeroMQ guide's 7/MDP workers, and 18/MDP
#  libraries such as majortomo or the 0.2 reference library) or not;
#  actd accepts both and answers each in its own framing (PROTOCOL.md 2)
MDP = {
    2: {"header": b"MDPW02", "READY": b"\x01", "REQUEST": b"\x02", "PARTIAL": b"\x03",
        "FINAL": b"\x04", "HEARTBEAT": b"\x05", "DISCONNECT": b"\x06"},
    1: {"header": b"MDPW01", "READY": b"\x01", "REQUEST": b"\x02", "FINAL": b"\x03",
        "HEARTBEAT": b"\x04", "DISCONNECT": b"\x05"},
}
#  The framing each version is tested with by default: 7/MDP as in the
#  guide (envelope), 18/MDP without
ENVELOPE = {1: True, 2: False}


class MajordomoWorker(threading.Thread):
    """A Majordomo worker on a raw DEALER socket, in a thread.

    version 2 speaks 18/MDP (MDPW02: READY, REQUEST [address][empty][body],
    PARTIAL and FINAL [address][empty][body], HEARTBEAT, DISCONNECT); version
    1 speaks 7/MDP (MDPW01, each message after an empty frame; REPLY instead
    of PARTIAL/FINAL). on_request(worker, address, body) is called in the
    worker's thread for each REQUEST, body decoded from JSON; it answers
    with worker.final() (and, for 0.2, worker.partial()), which any thread
    may call. Setting heartbeat to False makes the worker silent."""

    def __init__(self, endpoint, version, service, on_request, heartbeat_ms=200,
                 envelope=None):
        super().__init__(daemon=True)
        self.endpoint = endpoint
        self.version = version
        self.codes = dict(MDP[version])
        self.envelope = ENVELOPE[version] if envelope is None else envelope
        self.codes["prefix"] = ([b""] if self.envelope else []) + [self.codes["header"]]
        self.service = service
        self.on_request = on_request
        self.heartbeat_ms = heartbeat_ms
        self.heartbeat = True
        self.stopping = False
        self.outbox = queue.Queue()
        self.requests = []          # (address, [body, ...]) of each REQUEST
        self.heartbeats = 0         # HEARTBEATs from the broker
        self.disconnects = 0        # DISCONNECTs from the broker
        self.strange = []           # anything else the broker sent

    def send(self, command, *args):
        self.outbox.put(self.codes["prefix"] + [self.codes[command]] + list(args))

    def final(self, address, value):
        """FINAL (18/MDP) or REPLY (7/MDP): [address][empty][body]."""
        self.send("FINAL", address, b"", json.dumps(value).encode())

    def partial(self, address, value):
        """PARTIAL (18/MDP only)."""
        assert self.version == 2
        self.send("PARTIAL", address, b"", json.dumps(value).encode())

    def run(self):
        socket = zmq.Context.instance().socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.connect(self.endpoint)
        socket.send_multipart(self.codes["prefix"] + [self.codes["READY"],
                                                      self.service.encode()])
        last = time.time()
        while not self.stopping:
            while not self.outbox.empty():
                socket.send_multipart(self.outbox.get())
            if socket.poll(20):
                self.receive(socket.recv_multipart())
            if self.heartbeat and time.time() - last >= self.heartbeat_ms / 1000.0:
                socket.send_multipart(self.codes["prefix"] + [self.codes["HEARTBEAT"]])
                last = time.time()
        if self.heartbeat:
            socket.send_multipart(self.codes["prefix"] + [self.codes["DISCONNECT"]])
        socket.close(0)

    def receive(self, frames):
        prefix = self.codes["prefix"]
        if frames[:len(prefix)] != prefix or len(frames) == len(prefix):
            self.strange.append(frames)
            return
        command, args = frames[len(prefix)], frames[len(prefix) + 1:]
        if command == self.codes["REQUEST"] and len(args) >= 3 and args[1] == b"":
            bodies = [json.loads(body) for body in args[2:]]
            self.requests.append((args[0], bodies))
            self.on_request(self, args[0], bodies[0])
        elif command == self.codes["HEARTBEAT"] and not args:
            self.heartbeats += 1
        elif command == self.codes["DISCONNECT"]:
            self.disconnects += 1
        else:
            self.strange.append(frames)

    def stop(self):
        self.stopping = True
        self.join(10)


def echo_upper(label):
    """on_request: FINAL {"upper": text in upper case, "via": label}."""
    def answer(worker, address, body):
        worker.final(address, {"upper": body["text"].upper(), "n": body["n"], "via": label})
    return answer


class TestMajordomoLiveness(unittest.TestCase):
    """PROTOCOL.md section 2, Majordomo workers: not declared dead while
    holding a task; idle, judged with the longer of heartbeat_ms and
    mdp_heartbeat_ms (default 2500 ms, the ZeroMQ guide's interval)."""

    def test_a_busy_worker_holding_a_task_past_the_liveness_completes_once(self):
        config = tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False)
        config.write("server\n    mdp_heartbeat_ms = 200\n")
        config.close()
        self.addCleanup(os.unlink, config.name)
        with Actd(heartbeat_ms=200, liveness=3, args=["--config", config.name]) as actd:
            client = actd.client()

            def busy(worker, address, body):
                worker.heartbeat = False
                time.sleep(2.0)                 # silent: more than 3 x 200 ms
                worker.heartbeat = True
                worker.final(address, {"done": body["n"]})
            workers = []
            for version in (1, 2):
                worker = MajordomoWorker(actd.worker_endpoint, version, "busy%d" % version, busy)
                workers.append(worker)
                worker.start()
            try:
                for version, worker in zip((1, 2), workers):
                    with self.subTest(mdp="0.%d" % version):
                        call_id, outcome = client.call("busy", {
                            "_tool": "busy%d" % version, "_outputPath": ref("b.v%d" % version),
                            "n": version}, timeout=LONG)
                        self.assertEqual((outcome["status"], outcome["attempts"]), ("ok", 1),
                                         outcome)
                        self.assertEqual(outcome["result"], {"done": version})
                        self.assertEqual(len(worker.requests), 1)   # ran once
                        self.assertEqual(worker.disconnects, 0)
            finally:
                for worker in workers:
                    worker.stop()
                client.close()

    def test_idle_guide_workers_heartbeating_every_2500_ms_stay_registered(self):
        #  liveness 2: actd's own rule (2 x 1000 ms) would lose them
        with Actd(heartbeat_ms=1000, liveness=2) as actd:
            client = actd.client()
            workers = [MajordomoWorker(actd.worker_endpoint, version, "idle%d" % version,
                                       echo_upper("MDP/0.%d" % version), heartbeat_ms=2500)
                       for version in (1, 2)]
            for worker in workers:
                worker.start()
            try:
                wait_for(lambda: len(client.value("STATS")["workers"]) == 2,
                         "both workers registered", LONG)
                time.sleep(7.0)     # three of actd's own liveness periods
                for worker in workers:
                    self.assertEqual(worker.disconnects, 0, worker.service)
                self.assertEqual(len(client.value("STATS")["workers"]), 2)
                self.assertNotIn("lost (silent", actd.log())
            finally:
                for worker in workers:
                    worker.stop()
                client.close()


class TestMajordomoWorkers(unittest.TestCase):
    """PROTOCOL.md section 2, "Majordomo workers": 18/MDP and 7/MDP workers
    serve activities unchanged: the service is the activity, capacity 1,
    the request body is the params JSON, the reply body the result."""

    @classmethod
    def setUpClass(cls):
        cls.actd = Actd(heartbeat_ms=200, liveness=3).start()

    @classmethod
    def tearDownClass(cls):
        cls.actd.finish()

    def setUp(self):
        self.client = self.actd.client()
        self.workers = []

    def tearDown(self):
        for worker in self.workers:
            worker.stop()
        self.client.close()

    def start(self, version, service, on_request, **options):
        worker = MajordomoWorker(self.actd.worker_endpoint, version, service, on_request,
                                 **options)
        self.workers.append(worker)
        worker.start()
        return worker

    def stats_workers(self, service):
        """STATS's workers that serve service."""
        return [worker for worker in self.client.value("STATS")["workers"]
                if worker["activities"] == [service]]

    def wait_registered(self, service, count=1):
        wait_for(lambda: len(self.stats_workers(service)) == count,
                 "%d worker(s) of %s in STATS" % (count, service), LONG)

    def test_mdp_workers_serve_an_activity_params_in_result_out(self):
        for version, envelope in ((2, False), (1, True), (2, True), (1, False)):
            with self.subTest(mdp="0.%d" % version, envelope=envelope):
                service = "mdp%d_upper%s" % (version, "_env" if envelope else "")
                label = "MDP/0.%d" % version
                worker = self.start(version, service, echo_upper(label), envelope=envelope)
                self.wait_registered(service)
                self.assertEqual([{key: entry[key] for key in ("capacity", "running")}
                                  for entry in self.stats_workers(service)],
                                 [{"capacity": 1, "running": 0}])
                context = "mdp-serve-%d%s" % (version, "-env" if envelope else "")
                reply = self.client.request("APPEND", context, {
                    "type": "data", "kind": "note", "data": {"text": "hello " + label}})
                self.assertEqual((reply[0], json.loads(reply[1])), ("OK", {"seq": 1}))
                call_id, outcome = self.client.call(context, {
                    "_tool": service, "_outputPath": ref("mdp.v%d" % version),
                    "text": ref("note.text"), "n": [version, {"deep": True}]}, timeout=LONG)
                # The body is the params, references resolved, _ keys removed
                self.assertEqual([bodies for _, bodies in worker.requests],
                                 [[{"text": "hello " + label, "n": [version, {"deep": True}]}]])
                result = {"upper": "HELLO " + label.upper(), "n": [version, {"deep": True}],
                          "via": label}
                self.assertEqual(outcome, {"call_id": call_id, "status": "ok", "branch": 0,
                                           "written": [ref("mdp.v%d" % version)], "seqs": [2],
                                           "result": result, "attempts": 1})
                self.assertEqual(self.client.resolve(context, ref("mdp.v%d" % version)), result)
                self.assertEqual((worker.disconnects, worker.strange), (0, []))

    def test_mdp_workers_heartbeat_and_stay_registered(self):
        workers = {version: self.start(version, "mdp%d_beat" % version,
                                       echo_upper("MDP/0.%d" % version))
                   for version in (2, 1)}
        for version in workers:
            self.wait_registered("mdp%d_beat" % version)
        # Two liveness periods (liveness 3) of broker heartbeats, in the
        # worker's own protocol
        for version, worker in workers.items():
            wait_for(lambda: worker.heartbeats >= 6,
                     "6 HEARTBEATs from actd to the MDP/0.%d worker" % version, LONG)
        for version, worker in workers.items():
            with self.subTest(mdp="0.%d" % version):
                service = "mdp%d_beat" % version
                self.assertEqual((worker.disconnects, worker.strange), (0, []))
                self.assertEqual(len(self.stats_workers(service)), 1)
                # Still the same registration: it serves a call on the same socket
                call_id, outcome = self.client.call("mdp-beat", {
                    "_tool": service, "_outputPath": ref("beat.v%d" % version),
                    "text": "still here", "n": 0}, timeout=LONG)
                self.assertEqual((outcome["status"], outcome["result"], outcome["attempts"]),
                                 ("ok", {"upper": "STILL HERE", "n": 0,
                                         "via": "MDP/0.%d" % version}, 1))
                self.assertEqual(len(worker.requests), 1)
                self.assertEqual((worker.disconnects, worker.strange), (0, []))

    def test_mdp_0_2_partial_shows_as_progress_in_status(self):
        addresses = queue.Queue()

        def first_partial(worker, address, body):
            worker.partial(address, {"step": 1, "of": 2, "city": body["city"]})
            addresses.put(address)
        worker = self.start(2, "mdp2_partial", first_partial)
        self.wait_registered("mdp2_partial")
        request = self.client.send("CALL", "mdp-partial", {
            "_tool": "mdp2_partial", "_outputPath": ref("trip.forecast"), "city": "Oslo"})
        reply = self.client.wait(request, timeout=LONG)
        self.assertEqual(reply[0], "ACCEPTED")
        call_id = reply[1]
        status = wait_for(lambda: (lambda status: status if "progress" in status else None)(
            self.client.status(call_id)), "PARTIAL to show as progress", LONG)
        self.assertEqual(status, {"call_id": call_id, "context": "mdp-partial",
                                  "state": "running", "attempts": 1,
                                  "tool": "mdp2_partial", "output_path": ref("trip.forecast"),
                                  "progress": {"step": 1, "of": 2, "city": "Oslo"}})
        worker.final(addresses.get(timeout=LONG), {"sky": "sunny"})
        done = self.client.wait(request, "DONE", timeout=LONG)
        self.assertEqual(json.loads(done[2]), {
            "call_id": call_id, "status": "ok", "branch": 0, "written": [ref("trip.forecast")],
            "seqs": [1], "result": {"sky": "sunny"}, "attempts": 1})
        self.assertEqual((worker.disconnects, worker.strange), (0, []))

    def test_a_second_reply_is_ignored_and_the_task_held_meanwhile_completes(self):
        """PROTOCOL.md section 2: later answers of a task are ignored: a worker
        that replies again to a request while it holds the next stays."""
        for version in (1, 2):
            with self.subTest(mdp="0.%d" % version):
                service = "mdp%d_twice" % version
                answered = []

                def reply_twice(worker, address, body, answered=answered):
                    if answered:    # the last request's again, then this one's
                        worker.final(answered[-1], {"again": True})
                    worker.final(address, {"n": body["n"]})
                    answered.append(address)
                worker = self.start(version, service, reply_twice)
                self.wait_registered(service)
                context = "mdp-twice-%d" % version
                outcomes = [self.client.call(context, {
                    "_tool": service, "_outputPath": ref("twice.n%d" % n), "n": n,
                    "_retry": {"max_attempts": 1}}, timeout=LONG)[1] for n in (1, 2)]
                self.assertEqual([(o["status"], o["attempts"], o.get("result"))
                                  for o in outcomes], [("ok", 1, {"n": 1}), ("ok", 1, {"n": 2})])
                self.assertEqual(self.client.resolve(context, ref("twice")),
                                 {"n1": {"n": 1}, "n2": {"n": 2}})
                self.assertEqual([entry["running"] for entry in self.stats_workers(service)], [0])
                self.assertEqual((len(worker.requests), worker.disconnects, worker.strange),
                                 (2, 0, []))

    def test_mdp_worker_that_hangs_times_out_and_its_task_goes_to_another(self):
        """A Majordomo worker cannot heartbeat while it handles a request:
        holding a task it is not judged, the call's _timeout bounds the
        attempt; the retry goes to another worker, and the hung one, silent
        once that attempt is over, is lost."""
        for silent, other in ((2, 1), (1, 2)):
            with self.subTest(silent="MDP/0.%d" % silent, other="MDP/0.%d" % other):
                service = "mdp_lost_%d" % silent

                def go_silent(worker, address, body):
                    worker.heartbeat = False        # and never answers
                first = self.start(silent, service, go_silent)
                self.wait_registered(service)
                context = "mdp-lost-%d" % silent
                params = {"text": "second try", "n": silent}
                request = self.client.send("CALL", context, dict(
                    params, _tool=service, _outputPath=ref("lost.result"), _timeout=1500,
                    _retry={"max_attempts": 2, "initial_ms": 50}))
                reply = self.client.wait(request, timeout=LONG)
                self.assertEqual(reply[0], "ACCEPTED")
                wait_for(lambda: first.requests, "the first worker to get the request", LONG)
                second = self.start(other, service, echo_upper("MDP/0.%d" % other))
                done = self.client.wait(request, "DONE", timeout=LONG)
                self.assertEqual(json.loads(done[2]), {
                    "call_id": reply[1], "status": "ok", "branch": 0,
                    "written": [ref("lost.result")], "seqs": [1],
                    "result": {"upper": "SECOND TRY", "n": silent, "via": "MDP/0.%d" % other},
                    "attempts": 2})
                self.assertEqual([bodies for _, bodies in first.requests], [[params]])
                self.assertEqual([bodies for _, bodies in second.requests], [[params]])
                # The hung one is lost once its attempt is over: only the
                # second stays registered
                self.wait_registered(service, 1)
                self.assertEqual((second.disconnects, second.strange), (0, []))


class TestCWorkerRefusedReady(unittest.TestCase):
    """The C worker library (actd-example-worker) against a ROUTER that
    answers every READY with DISCONNECT, as actd does when it refuses the
    worker (PROTOCOL.md section 2.1): the worker connects again after a
    wait that doubles, not at once in a busy loop."""

    def test_a_refused_ready_is_sent_again_after_a_growing_wait(self):
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        router = zmq.Context.instance().socket(zmq.ROUTER)
        router.setsockopt(zmq.LINGER, 0)
        router.bind(endpoint)
        self.addCleanup(router.close, 0)
        worker = subprocess.Popen([find_binary("actd-example-worker"), "--endpoint", endpoint],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.addCleanup(end_process, worker)
        readies, others, end = 0, [], time.time() + 3.0
        while time.time() < end:
            if not router.poll(50):
                continue
            frames = router.recv_multipart()
            if frames[2] == b"READY":
                readies += 1
                router.send_multipart([frames[0], b"ACTW01", b"DISCONNECT",
                                       b"capacity: not taken here"])
            else:
                others.append(frames[2])
        end_process(worker)
        output = worker.stdout.read().decode()
        # Waits of 100, 200, 400, 800 ms and more, checked each half
        # heartbeat: a handful of READYs in 3 s; the old library sent one
        # for each DISCONNECT at once, hundreds a second
        self.assertGreaterEqual(readies, 2, output)
        self.assertLessEqual(readies, 10, output)
        self.assertEqual(others, [])
        self.assertIn("refused READY (capacity: not taken here)", output)



class TestCWorkerBadCurveKey(unittest.TestCase):
    """actd-example-worker with a --curve-server that is not 40 characters
    of Z85: a usage error naming the option (exit 2), not an abort in
    CZMQ's assertion when the library applied the key to its socket."""

    def test_a_bad_server_key_exits_2(self):
        keys = tempfile.mkdtemp(prefix="c-worker-keys-")
        self.addCleanup(shutil.rmtree, keys, True)
        made = subprocess.run([find_binary("actctl"), "--json", "keygen", "w", "--dir", keys],
                              capture_output=True, text=True, timeout=LONG)
        cert = json.loads(made.stdout)["file"]
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        for key in ("short", "~" * 40):
            done = subprocess.run([find_binary("actd-example-worker"), "--endpoint", endpoint,
                                   "--curve-server", key, "--curve-cert", cert],
                                  capture_output=True, text=True, timeout=LONG)
            self.assertEqual(done.returncode, 2, done.stderr)
            self.assertIn("actd-example-worker: --curve-server: '%s' is not a CURVE public "
                          "key" % key, done.stderr)

    def test_numbers_are_whole_and_in_range_or_exit_2(self):
        # atol took "5x" as 5 and "abc" as 0
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        for args in (["--capacity", "5x"], ["--capacity", "100001"], ["--capacity", "-1"],
                     ["--heartbeat-ms", "abc"], ["--heartbeat-ms", "99999999999"]):
            done = subprocess.run([find_binary("actd-example-worker"), "--endpoint", endpoint]
                                  + args, capture_output=True, text=True, timeout=LONG)
            self.assertEqual(done.returncode, 2, (args, done.stderr))
            self.assertIn("--capacity takes a whole number of 1 to 100000", done.stderr)


if __name__ == "__main__":
    unittest.main()
