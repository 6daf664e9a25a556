"""Who may do what (issue 18): client keys in tenants (a context prefix and
rights), worker keys in groups (the activities they may serve), revocation
on SIGHUP, and refusals that do not fill the log. Every test runs a real
actd with CURVE and keys made by `actctl keygen`."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import zmq
from zmq.utils.monitor import recv_monitor_message

from harness import Actd, NoAnswer, Worker, abandon, find_binary, node_problem, wait_for
from test_security import CurveClient, keygen

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "workers", "python"))
import actd  # noqa: E402  (the Python package under test, from the source tree)

NODE_PACKAGE = os.path.join(ROOT, "workers", "node")

#  Tenants: acme and globex (read, write), audit (read only, over acme's
#  contexts) and ops (admin). Worker groups: summarizers (summarize and
#  translate-*). "legacy" is a key of security/client_keys (every right),
#  "anyworker" one of security/worker_keys (any activity).
TENANTS = (("acme", "acme/", "read,write"), ("globex", "globex/", "read,write"),
           ("audit", "acme/", "read"), ("ops", "ops/", "read,write,admin"))


def config_text(directory, tenants=TENANTS, groups=(("summarizers", "summarize, translate-*"),)):
    """actd.cfg with the tenants and groups given (their keys in
    directory/tenants/NAME and directory/workers/NAME)."""
    text = ("security\n"
            "    server_key = %s\n"
            "    client_keys = %s\n"
            "    worker_keys = %s\n"
            % (os.path.join(directory, "server.key_secret"), os.path.join(directory, "clients"),
               os.path.join(directory, "anyworkers")))
    text += "tenants\n"
    for name, prefix, rights in tenants:
        text += ("    %s\n        prefix = \"%s\"\n        rights = %s\n        keys = %s\n"
                 % (name, prefix, rights, os.path.join(directory, "tenants", name)))
    if groups:
        text += "workers\n"
        for name, activities in groups:
            text += ("    %s\n        activities = %s\n        keys = %s\n"
                     % (name, activities, os.path.join(directory, "workers", name)))
    return text


class TenantsBase(unittest.TestCase):
    """A real actd with CURVE keys, the tenants of TENANTS and the group
    summarizers (keys made by `actctl keygen`), and helpers to reach it."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="actd-tenants-")
        self.addCleanup(shutil.rmtree, self.dir, True)     # also when setUp fails
        self.keys = {"server": keygen("server", self.dir)}
        for folder, name in [("tenants/" + t[0], t[0]) for t in TENANTS] + [
                ("workers/summarizers", "summarizer"), ("workers/summarizers", "summarizer2"),
                ("clients", "legacy"), ("anyworkers", "anyworker"), ("", "mallory")]:
            path = os.path.join(self.dir, folder)
            os.makedirs(path, exist_ok=True)
            self.keys[name] = keygen(name, path)
            self.keys[name + ".file"] = os.path.join(path, name + ".key_secret")
        self.config = os.path.join(self.dir, "actd.cfg")
        with open(self.config, "w") as handle:
            handle.write(config_text(self.dir))
        self.actd = Actd(args=["--config", self.config])
        self.actd.start(wait=False)
        self.sockets = []
        self.monitors = []          # (socket, its monitor), closed in tearDown
        self.clients = {}
        try:
            self.wait_up()
        except BaseException:
            abandon(self.actd, self.sockets)
            raise

    def tearDown(self):
        #  Monitors first: a monitor left open (a test that failed before
        #  closing its own) would be closed later by the garbage collector,
        #  while its socket's events may still be queued to it
        for socket, monitor in self.monitors:
            if not socket.closed:
                socket.disable_monitor()
            monitor.close(0)
        for socket in self.sockets:
            socket.close(0)
        code = self.actd.stop()
        log = self.actd.log()
        self.actd.cleanup()
        self.assertEqual(code, 0, log)

    def monitor(self, socket, events):
        """A monitor of socket's events, closed in tearDown whatever happens."""
        monitor = socket.get_monitor_socket(events)
        self.monitors.append((socket, monitor))
        return monitor

    def client(self, name):
        client = CurveClient(self.actd.client_endpoint, self.keys["server"][0], self.keys[name])
        self.sockets.append(client.socket)
        return client

    def wait_up(self):
        client = self.client("ops")
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if client.request("PING", timeout=0.5)[0] == "PONG":
                    return
            except TimeoutError:
                pass
        self.fail("actd did not answer:\n" + self.actd.log())

    def worker_socket(self, name, activities):
        """A raw ACT/1 worker with key name; sends READY for activities."""
        socket = zmq.Context.instance().socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.curve_publickey = self.keys[name][0].encode()
        socket.curve_secretkey = self.keys[name][1].encode()
        socket.curve_serverkey = self.keys["server"][0].encode()
        socket.connect(self.actd.worker_endpoint)
        socket.send_multipart([b"ACTW01", b"READY", json.dumps(
            {"activities": activities, "name": name + "-worker"}).encode()])
        self.sockets.append(socket)
        return socket

    def next_command(self, socket, command, timeout=10.0):
        """The next frames of socket whose command is command (HEARTBEATs
        answered with HEARTBEATs on the way); None at the deadline."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if socket.poll(50):
                frames = socket.recv_multipart()
                if frames[1] == command:
                    return frames
            try:
                #  Never blocking: a DEALER whose connection was cut (and
                #  whose reconnection is refused) would wait for ever
                socket.send_multipart([b"ACTW01", b"HEARTBEAT"], zmq.NOBLOCK)
            except zmq.Again:
                pass
        return None

    def workers(self):
        if "ops" not in self.clients:       # one socket, however often polled
            self.clients["ops"] = self.client("ops")
        return {w["name"] for w in self.clients["ops"].value("STATS")["workers"]}

    def wait_log(self, pattern, timeout=10, log=False):
        wait_for(lambda: re.search(pattern, self.actd.log()), "log line %r" % pattern
                 + (self.actd.log() if log else ""), timeout)

    def fixed_client(self, name, routing_id):
        """A CurveClient with key name whose socket picks routing_id (as a
        client may, and as libzmq lets any peer do once the id is free)."""
        client = CurveClient.__new__(CurveClient)
        client.context = zmq.Context.instance()
        client.socket = client.context.socket(zmq.DEALER)
        client.socket.setsockopt(zmq.LINGER, 0)
        client.socket.setsockopt(zmq.ROUTING_ID, routing_id)
        client.socket.curve_publickey = self.keys[name][0].encode()
        client.socket.curve_secretkey = self.keys[name][1].encode()
        client.socket.curve_serverkey = self.keys["server"][0].encode()
        client.pending = []
        self.sockets.append(client.socket)
        return client

    def take_routing_id(self, name, routing_id):
        """A client of key name holding routing_id at actd: retried until
        actd answers its PING (while the id's earlier connection is still
        known, libzmq refuses a second one)."""
        deadline = time.time() + 20
        while time.time() < deadline:
            client = self.fixed_client(name, routing_id)
            client.socket.connect(self.actd.client_endpoint)
            try:
                if client.request("PING", timeout=1.0)[0] == "PONG":
                    return client
            except TimeoutError:
                pass
            client.socket.close(0)
            self.sockets.remove(client.socket)
        self.fail("routing id %r never became free" % routing_id)

    @staticmethod
    def answers(client):
        try:
            return client.request("PING", timeout=0.5)[0] == "PONG"
        except TimeoutError:
            return False

    def holding_worker(self):
        """A worker of key anyworker serving "hold" that keeps every task
        until the test answers it (it heartbeats on its own thread, so a
        long wait of the test does not make it lost)."""
        worker = Worker(self.actd.worker_endpoint, ["hold"], lambda *task: NoAnswer,
                        name="holder", curve=(self.keys["anyworker"][0],
                                              self.keys["anyworker"][1], self.keys["server"][0]))
        worker.start()
        self.addCleanup(worker.stop)
        wait_for(lambda: "holder" in self.workers(), "the holding worker")
        return worker

    def task_of(self, worker, count):
        """The id of the count-th task worker received."""
        wait_for(lambda: len(worker.tasks) >= count, "task %d" % count)
        return worker.tasks[count - 1][0]

    def unowned(self):
        if "ops" not in self.clients:
            self.clients["ops"] = self.client("ops")
        return self.clients["ops"].value("STATS")["clients"]["unowned"]

    def rewrite(self, tenants=TENANTS, groups=(("summarizers", "summarize, translate-*"),)):
        with open(self.config, "w") as handle:
            handle.write(config_text(self.dir, tenants, groups))
        self.actd.process.send_signal(signal.SIGHUP)
        self.wait_log(r"reload: allowed keys reloaded")


class TenantsTest(TenantsBase):

    def test_two_tenants_cannot_reach_each_others_contexts_or_calls(self):
        worker = self.worker_socket("anyworker", ["hold"])
        wait_for(lambda: "anyworker-worker" in self.workers(), "the worker")
        acme, globex = self.client("acme"), self.client("globex")
        self.assertEqual(acme.request("APPEND", "acme/a", {"type": "note", "text": "mine"})[0], "OK")
        rid = acme.send("CALL", "acme/a", {"_tool": "hold", "_outputPath": "\u2020secret"})
        call_id = acme.wait(rid, "ACCEPTED")[1]
        task = self.next_command(worker, b"TASK")
        self.assertIsNotNone(task, "the call was not dispatched")
        self.assertEqual(globex.request("APPEND", "globex/g", {"type": "note"})[0], "OK")
        #  Every command naming acme's context is refused to globex
        unauthorized = [
            ("CALL", "acme/a", {"_tool": "hold", "_outputPath": "\u2020secret"}),
            ("PLAN", "acme/a", [{"_tool": "hold", "_outputPath": "\u2020x"}]),
            ("APPEND", "acme/a", {"type": "note"}),
            ("RESOLVE", "acme/a", "\u2020secret"),
            ("VIEW", "acme/a"),
            ("HISTORY", "acme/a", "1", "10"),
            ("WATCH", "acme/a", "1"),
            ("DELETE", "acme/a"),
            ("STATS",),
        ]
        for request in unauthorized:
            reply = globex.request(*request)
            self.assertEqual(reply[:2], ["ERROR", "unauthorized"], (request, reply))
        #  Its calls are not found, exactly as a call that never was
        missing = globex.request("STATUS", "999999")
        for command in ("STATUS", "CANCEL"):
            reply = globex.request(command, call_id)
            self.assertEqual(reply[:2], ["ERROR", "not_found"], (command, reply))
            self.assertEqual(reply[2], missing[2].replace("999999", call_id))
        self.assertEqual(acme.status(call_id)["state"], "running")
        #  CONTEXTS lists only globex's, whatever the prefix asked
        for prefix in ((), ("",), ("acme/",), ("a",), ("globex/",)):
            listed = [c["context"] for c in globex.value("CONTEXTS", *prefix)["contexts"]]
            self.assertEqual(listed, [] if prefix in (("acme/",), ("a",)) else ["globex/g"],
                             prefix)
        self.assertEqual([c["context"] for c in acme.value("CONTEXTS")["contexts"]], ["acme/a"])
        #  A read-only tenant over acme's prefix reads but does not write
        audit = self.client("audit")
        self.assertIsInstance(audit.value("VIEW", "acme/a"), list)
        history = audit.value("HISTORY", "acme/a", "1", "10")
        self.assertIn("mine", [m.get("text") for m in history])
        self.assertEqual(audit.status(call_id)["state"], "running")
        for request in (("APPEND", "acme/a", {"type": "note"}), ("CANCEL", call_id),
                        ("DELETE", "acme/a"), ("STATS",)):
            self.assertEqual(audit.request(*request)[:2], ["ERROR", "unauthorized"], request)
        self.assertEqual(audit.request("PING"), ["PONG"])
        #  admin sees every tenant; the legacy client_keys key has every right
        for name in ("ops", "legacy"):
            admin = self.client(name)
            listed = [c["context"] for c in admin.value("CONTEXTS")["contexts"]]
            self.assertEqual(listed, ["acme/a", "globex/g"], name)
            self.assertEqual(admin.status(call_id)["state"], "running")
            self.assertIn("calls", admin.value("STATS"))
        #  The owner cancels; the worker hears of it
        self.assertEqual(acme.request("CANCEL", call_id), ["OK"])
        self.assertIsNotNone(self.next_command(worker, b"CANCEL"))
        self.assertEqual(acme.wait(rid, "DONE")[0], "DONE")
        self.assertEqual(acme.request("DELETE", "acme/a")[0], "OK")

    def test_a_routing_id_taken_over_by_another_key_gets_nothing_owed(self):
        """acme's DONE and watch events are owed to acme's connection: a
        globex client that connects with acme's routing id after acme left
        (and speaks) gets neither (the DONE is dropped, the watch ended with
        acme's socket); acme, back on that id, gets its next."""
        worker = self.holding_worker()
        acme = self.take_routing_id("acme", b"agent-1")
        rid = acme.send("CALL", "acme/a", {"_tool": "hold", "_outputPath": "\u2020secret"})
        call_id = acme.wait(rid, "ACCEPTED")[1]
        acme.send("WATCH", "acme/a", "1")
        self.assertEqual(acme.request("PING")[0], "PONG")   # the WATCH was served
        task = self.task_of(worker, 1)
        acme.socket.close(0)
        self.sockets.remove(acme.socket)
        globex = self.take_routing_id("globex", b"agent-1")
        worker.send_result(task, "acme secret result")
        wait_for(lambda: self.unowned() >= 1, "the DONE owed to acme dropped")
        other = self.client("acme")
        self.assertEqual(other.request("APPEND", "acme/a", {"type": "note", "text": "private"})[0],
                         "OK")
        #  acme's watch ended with its socket, seen when globex's took the
        #  routing id (PROTOCOL.md 1.1): no EVENT is made for it at all
        self.assertFalse(globex.socket.poll(1000), "globex received what was owed to acme")
        self.assertEqual(self.unowned(), 1)
        status = json.loads(other.request("STATUS", call_id)[1])
        self.assertEqual(status["state"], "ok")
        self.assertEqual(json.loads(other.request("RESOLVE", "acme/a", "\u2020secret")[1]),
                         "acme secret result")
        self.wait_log(r"reply owed to key %s not sent" % re.escape(self.keys["acme"][0]))
        #  acme back on its routing id, once it spoke, gets its DONEs again
        globex.socket.close(0)
        self.sockets.remove(globex.socket)
        acme = self.take_routing_id("acme", b"agent-1")
        rid = acme.send("CALL", "acme/a", {"_tool": "hold", "_outputPath": "\u2020again"})
        acme.wait(rid, "ACCEPTED")
        worker.send_result(self.task_of(worker, 2), "second")
        self.assertEqual(json.loads(acme.wait(rid, "DONE")[2])["status"], "ok")

    def test_a_silent_connection_on_a_left_clients_routing_id_gets_nothing_owed(self):
        """A connection that takes a left client's routing id and never
        speaks is not known to be that client's: its DONE is not sent.
        A run proves something only when the silent connection held the
        id (its PING is answered at the end): libzmq may keep a connection
        that came while the id's last one was not yet gone aside, unnamed,
        with no event to tell; such a run is done again, on another id."""
        worker = self.holding_worker()
        for attempt in range(3):
            routing_id = b"agent-2.%d" % attempt
            if self.silent_taker_gets_nothing(worker, attempt + 1, routing_id):
                return
        self.fail("in 3 runs the silent connection never held the routing id")

    def silent_taker_gets_nothing(self, worker, nth, routing_id):
        """One run: acme's call (the worker's nth task) ends while a silent
        globex connection holds acme's routing id. False when that
        connection turned out not to hold it."""
        acme = self.take_routing_id("acme", routing_id)
        rid = acme.send("CALL", "acme/a", {"_tool": "hold", "_outputPath": "\u2020secret"})
        acme.wait(rid, "ACCEPTED")
        task = self.task_of(worker, nth)
        acme.socket.close(0)
        self.sockets.remove(acme.socket)
        #  Make sure actd let the id go: a globex client takes it, then leaves
        taker = self.take_routing_id("globex", routing_id)
        taker.socket.close(0)
        self.sockets.remove(taker.socket)
        deadline = time.time() + 20
        while True:
            silent = self.fixed_client("globex", routing_id)
            monitor = self.monitor(silent.socket,
                                   zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED)
            silent.socket.connect(self.actd.client_endpoint)
            self.assertTrue(monitor.poll(10000), "no handshake")
            self.assertEqual(recv_monitor_message(monitor)["event"], zmq.EVENT_HANDSHAKE_SUCCEEDED)
            #  libzmq refuses a taken id after the handshake, from actd's
            #  loop: on a loaded machine that took over 500 ms (CI 36)
            if not monitor.poll(3000):
                break               # attached, not refused as a duplicate id
            silent.socket.disable_monitor()
            silent.socket.close(0)
            self.sockets.remove(silent.socket)
            self.assertLess(time.time(), deadline, "routing id never free")
        unowned = self.unowned()
        worker.send_result(task, "acme secret result")
        wait_for(lambda: self.unowned() > unowned, "the DONE owed to acme dropped")
        self.assertFalse(silent.socket.poll(300), "a silent taker received acme's DONE")
        #  It was attached all along: it is answered, on the same connection
        try:
            answered = silent.request("PING", timeout=5.0)[0] == "PONG"
        except TimeoutError:
            return False
        self.assertTrue(answered)
        self.assertFalse(monitor.poll(0), "the silent socket was disconnected")
        return True

    def test_after_a_crash_the_owner_key_still_guards_the_done(self):
        """The owner's key is stored with the call: after kill -9 and a
        restart, a globex client on acme's routing id gets nothing of the
        recovered calls, and acme back on it (once it spoke) gets its DONE."""
        acme = self.take_routing_id("acme", b"agent-3")
        first = acme.send("CALL", "acme/k", {"_tool": "hold", "_outputPath": "\u2020one"})
        second = acme.send("CALL", "acme/k", {"_tool": "hold", "_outputPath": "\u2020two"})
        ids = {acme.wait(first, "ACCEPTED")[1]: first, acme.wait(second, "ACCEPTED")[1]: second}
        acme.socket.close(0)
        self.sockets.remove(acme.socket)
        self.actd.kill()
        self.clients.clear()
        self.actd.start(wait=False)
        self.wait_up()
        worker = self.holding_worker()

        def finish(count, result):
            task = self.task_of(worker, count)
            worker.send_result(task, result)
            return task.split(".")[0]

        globex = self.take_routing_id("globex", b"agent-3")
        finish(1, "for acme only")
        wait_for(lambda: self.unowned() >= 1, "the recovered DONE owed to acme dropped")
        self.assertFalse(globex.socket.poll(300), "globex received acme's recovered DONE")
        globex.socket.close(0)
        self.sockets.remove(globex.socket)
        acme = self.take_routing_id("acme", b"agent-3")
        call_id = finish(2, "back")
        done = acme.wait(ids[call_id], "DONE")
        self.assertEqual((done[1], json.loads(done[2])["status"]), (call_id, "ok"))

    def test_a_worker_key_serves_only_its_groups_activities(self):
        refused = self.worker_socket("summarizer", ["summarize", "payments"])
        frames = self.next_command(refused, b"DISCONNECT")
        self.assertIsNotNone(frames, "a READY naming payments was not refused")
        self.assertIn(b"payments", frames[2])
        self.assertNotIn("summarizer-worker", self.workers())
        #  Allowed patterns: summarize and translate-*
        allowed = self.worker_socket("summarizer", ["summarize", "translate-fr"])
        wait_for(lambda: "summarizer-worker" in self.workers(), "the allowed worker")
        acme = self.client("acme")
        rid = acme.send("CALL", "acme/w", {"_tool": "payments", "amount": 5, "_outputPath": "\u2020p"})
        self.assertEqual(acme.wait(rid, "ACCEPTED")[0], "ACCEPTED")
        rid2 = acme.send("CALL", "acme/w", {"_tool": "translate-fr", "text": "hi",
                                            "_outputPath": "\u2020t"})
        task = self.next_command(allowed, b"TASK")
        self.assertEqual(task[3], b"translate-fr")
        allowed.send_multipart([b"ACTW01", b"RESULT", task[2], b'"salut"'])
        self.assertEqual(json.loads(acme.wait(rid2, "DONE")[2])["status"], "ok")
        #  The payments call waits for a worker that may serve it
        self.assertIsNone(self.next_command(allowed, b"TASK", timeout=1.0))
        self.assertEqual(self.client("ops").value("STATS")["calls"]["queued"], 1)
        self.wait_log(r"activity payments is not allowed for this worker's key")

    def test_sighup_revokes_connected_clients_and_workers(self):
        #  A worker of the summarizers holds a task; acme watches a context
        held = self.worker_socket("summarizer", ["summarize"])
        wait_for(lambda: "summarizer-worker" in self.workers(), "the summarizer")
        acme = self.client("acme")
        monitor = self.monitor(acme.socket, zmq.EVENT_DISCONNECTED)
        watch = acme.send("WATCH", "acme/r", "1")
        rid = acme.send("CALL", "acme/r", {"_tool": "summarize", "text": "t", "_outputPath": "\u2020s"})
        self.assertEqual(acme.wait(rid, "ACCEPTED")[0], "ACCEPTED")
        first = self.next_command(held, b"TASK")
        self.assertIsNotNone(first)
        #  A second worker, allowed anything, is there to take the task over
        spare = self.worker_socket("anyworker", ["summarize"])
        wait_for(lambda: "anyworker-worker" in self.workers(), "the spare worker")
        #  The summarizers group is gone, and acme's tenant with it
        self.rewrite(tenants=[t for t in TENANTS if t[0] != "acme"], groups=())
        frames = self.next_command(held, b"DISCONNECT", timeout=5)
        self.assertIsNotNone(frames, "the revoked worker was not told to DISCONNECT")
        self.assertEqual(frames[2], b"key revoked")
        task = self.next_command(spare, b"TASK")
        self.assertIsNotNone(task, "the revoked worker's task was not dispatched again" + self.actd.log())
        self.assertEqual(json.loads(task[5])["attempt"], 2)
        spare.send_multipart([b"ACTW01", b"RESULT", task[2], b'"done"'])
        #  The revoked client's connection is cut (its socket sees it) ...
        self.assertTrue(monitor.poll(5000), "the revoked client was not disconnected")
        self.assertEqual(recv_monitor_message(monitor)["event"], zmq.EVENT_DISCONNECTED)
        self.wait_log(r"connection of client peer .* cut")
        self.wait_log(r"connection of worker peer .* cut", log=True)
        #  ... and, reconnected, it is refused everything
        self.assertEqual(acme.request("VIEW", "acme/r")[:2], ["ERROR", "unauthorized"])
        self.assertEqual(acme.request("PING")[:2], ["ERROR", "unauthorized"])
        self.assertFalse(any(rid_ == watch for rid_, _ in acme.pending))
        #  The call ended, done by the spare worker; the held worker's
        #  reconnection is refused at the handshake
        ops = self.client("ops")
        wait_for(lambda: ops.value("STATS")["calls"]["ok"] == 1, "the call to end ok")
        #  (the spare, a raw socket that heartbeats only while the test
        #  reads it, may have been found silent by now: only the revoked
        #  worker's absence is checked)
        self.assertNotIn("summarizer-worker", self.workers())
        monitor.close(0)

    def test_revocation_takes_less_than_one_heartbeat(self):
        """With a heartbeat of 5 s (liveness would take 15 s), SIGHUP cuts a
        revoked client and worker within that one heartbeat."""
        heartbeat = 5.0
        self.assertEqual(self.actd.stop(), 0)
        self.actd.heartbeat_ms = int(heartbeat * 1000)
        self.actd.start(wait=False)
        self.clients.clear()
        self.wait_up()
        held = self.worker_socket("summarizer", ["summarize"])
        wait_for(lambda: "summarizer-worker" in self.workers(), "the summarizer")
        acme = self.client("acme")
        monitor = self.monitor(acme.socket, zmq.EVENT_DISCONNECTED)
        self.assertEqual(acme.request("PING"), ["PONG"])
        deadline = time.time() + heartbeat
        self.rewrite(tenants=[t for t in TENANTS if t[0] != "acme"], groups=())
        frames = self.next_command(held, b"DISCONNECT", timeout=deadline - time.time())
        self.assertIsNotNone(frames, "the revoked worker was not told within a heartbeat")
        self.assertTrue(monitor.poll(max(0, int((deadline - time.time()) * 1000))),
                        "the revoked client was not cut within a heartbeat")
        self.assertEqual(recv_monitor_message(monitor)["event"], zmq.EVENT_DISCONNECTED)
        monitor.close(0)

    def test_sighup_narrowing_a_group_disconnects_only_the_workers_beyond_it(self):
        wide = self.worker_socket("summarizer", ["summarize", "translate-fr"])
        narrow = self.worker_socket("summarizer2", ["summarize"])
        wait_for(lambda: {"summarizer-worker", "summarizer2-worker"} <= self.workers(),
                 "both summarizers")
        self.rewrite(groups=(("summarizers", "summarize"),))
        frames = self.next_command(wide, b"DISCONNECT", timeout=5)
        self.assertIsNotNone(frames, "a worker beyond its narrowed group was not disconnected")
        self.assertEqual(frames[2], b"key revoked")
        wait_for(lambda: self.workers() == {"summarizer2-worker"}, "only the narrow one to stay")
        #  The one still within its group serves on
        acme = self.client("acme")
        rid = acme.send("CALL", "acme/n", {"_tool": "summarize", "_outputPath": "\u2020n"})
        task = self.next_command(narrow, b"TASK")
        self.assertIsNotNone(task)
        narrow.send_multipart([b"ACTW01", b"RESULT", task[2], b'"short"'])
        self.assertEqual(json.loads(acme.wait(rid, "DONE")[2])["status"], "ok")

    def test_sighup_after_a_tenants_keys_are_removed_revokes_them(self):
        """Removing a tenant's key directory and reloading revokes its
        keys (logged), rather than failing the reload and keeping them."""
        acme = self.client("acme")
        monitor = self.monitor(acme.socket, zmq.EVENT_DISCONNECTED)
        self.assertEqual(acme.request("PING"), ["PONG"])
        shutil.rmtree(os.path.join(self.dir, "tenants", "acme"))
        self.rewrite()
        self.wait_log(r"reload: tenants/acme/keys: cannot read .*: the tenant has no key now")
        self.assertTrue(monitor.poll(5000), "the revoked client was not cut")
        self.assertEqual(acme.request("PING")[:2], ["ERROR", "unauthorized"])
        self.assertEqual(self.client("globex").request("PING"), ["PONG"])
        monitor.close(0)

    def test_sighup_shrinking_rights_drops_watches(self):
        globex = self.client("globex")
        watch = globex.send("WATCH", "globex/w", "0")
        self.assertEqual(globex.request("APPEND", "globex/w", {"type": "note"})[0], "OK")
        self.assertEqual(globex.wait(watch, "EVENT")[0], "EVENT")
        narrowed = [t if t[0] != "globex" else ("globex", "globex/", "write") for t in TENANTS]
        self.rewrite(tenants=narrowed)
        self.wait_log(r"client key %s lost rights" % re.escape(self.keys["globex"][0]))
        reply = globex.request("VIEW", "globex/w")
        self.assertEqual(reply[:2], ["ERROR", "unauthorized"])
        self.assertIn("read", reply[2])

    def test_an_unauthorized_flood_leaves_the_log_bounded(self):
        mallory, globex = self.client("mallory"), self.client("globex")
        for client, request in ((mallory, ("PING",)), (globex, ("VIEW", "acme/x"))):
            ids = [client.send(*request) for _ in range(2000)]
            for rid in ids:
                self.assertEqual(client.wait(rid)[:2], ["ERROR", "unauthorized"])
        log = self.actd.log()
        self.assertLessEqual(len(re.findall(r"CURVE: client refused", log)), 2, log[-3000:])
        self.assertLessEqual(len(re.findall(r"outside its prefix", log)), 2, log[-3000:])
        self.assertLess(len(log.splitlines()), 300)

    def test_python_client_and_worker_with_tenant_and_group_keys(self):
        worker = actd.Worker(self.actd.worker_endpoint, name="py-summarizer", heartbeat_ms=200,
                             curve_server=self.keys["server"][0],
                             curve_cert=self.keys["summarizer.file"])

        @worker.activity("summarize")
        def summarize(params, task):
            return params["text"][:5]

        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        client = actd.Client(self.actd.client_endpoint, curve_server=self.keys["server"][0],
                             curve_cert=self.keys["acme.file"])
        try:
            outcome = client.call("acme/py", {"_tool": "summarize", "text": "hello world",
                                              "_outputPath": "\u2020short"}, timeout=20)
            self.assertEqual(outcome.status, "ok")
            self.assertEqual(client.resolve("acme/py", "\u2020short"), "hello")
            with self.assertRaises(actd.ActdError) as refused:
                client.view("globex/py")
            self.assertEqual(refused.exception.code, "unauthorized")
        finally:
            client.close()
            worker.stop(wait=True, timeout=10)
            thread.join(10)

    def test_c_client_and_worker_from_the_environment(self):
        """libactd given no endpoint reads $ACTD_ENDPOINT (a worker
        $ACTD_WORKER_ENDPOINT), $ACTD_SERVER_KEY and $ACTD_CERT, as actctl,
        Python and Node do."""
        helper = find_binary("env_peers")
        base = {k: v for k, v in os.environ.items() if not k.startswith("ACTD_")}
        base.update(ACTD_ENDPOINT=self.actd.client_endpoint,
                    ACTD_WORKER_ENDPOINT=self.actd.worker_endpoint,
                    ACTD_SERVER_KEY=self.keys["server"][0])
        worker = subprocess.Popen([helper, "worker", "c-env-summarizer", "summarize"],
                                  env=dict(base, ACTD_CERT=self.keys["summarizer.file"]),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            wait_for(lambda: "c-env-summarizer" in self.workers(), "the C worker over CURVE")
            run = subprocess.run([helper, "client", "acme/c", "summarize", "globex/c"],
                                 env=dict(base, ACTD_CERT=self.keys["acme.file"]),
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual((run.returncode, run.stdout), (0, "ok HELLO\nother unauthorized\n"),
                             run.stderr)
            #  Half of CURVE would talk in plain text: no client at all
            run = subprocess.run([helper, "client", "acme/c", "summarize", "globex/c"],
                                 env=base, capture_output=True, text=True, timeout=60)
            self.assertEqual((run.returncode, run.stdout), (3, "no peer\n"), run.stderr)
        finally:
            worker.terminate()
            output = worker.communicate(timeout=30)[0]
        self.assertEqual(worker.returncode, 0, output)

    def test_node_client_and_worker_with_tenant_and_group_keys(self):
        self.assertIsNone(node_problem())
        script = os.path.join(self.dir, "tenant.js")
        with open(script, "w") as handle:
            handle.write(NODE_SCRIPT % json.dumps(NODE_PACKAGE))
        run = subprocess.run(["node", script, self.actd.client_endpoint,
                              self.actd.worker_endpoint, self.keys["server"][0],
                              self.keys["acme.file"], self.keys["summarizer.file"]],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr + self.actd.log()[-3000:])
        self.assertEqual(json.loads(run.stdout.splitlines()[-1]),
                         {"status": "ok", "short": "HELLO", "other": "unauthorized"})


class IpcModeTest(unittest.TestCase):
    """ipc:// endpoints: the socket files get server/ipc_mode (0600 unless
    set), and whoever may write them may connect."""

    def run_ipc(self, mode_line):
        directory = tempfile.mkdtemp(prefix="actd-ipc-")
        self.addCleanup(shutil.rmtree, directory, True)
        config = os.path.join(directory, "actd.cfg")
        with open(config, "w") as handle:
            handle.write("server\n" + mode_line)
        actd_ = Actd(args=["--config", config])
        actd_.client_endpoint = "ipc://%s/clients.sock" % directory
        actd_.worker_endpoint = "ipc://%s/workers.sock" % directory
        with actd_:
            modes = [os.stat(os.path.join(directory, name)).st_mode & 0o777
                     for name in ("clients.sock", "workers.sock")]
            client = actd_.client()
            self.assertEqual(client.request("PING"), ["PONG"])
            client.close()
        return modes

    def test_socket_files_are_the_owners_alone_by_default(self):
        self.assertEqual(self.run_ipc("    heartbeat_ms = 200\n"), [0o600, 0o600])

    def test_ipc_mode_opens_them_to_the_group(self):
        self.assertEqual(self.run_ipc("    ipc_mode = 0660\n"), [0o660, 0o660])

    def test_an_abstract_socket_is_said_to_be_open_to_every_user(self):
        """ipc://@name has no file, so no mode: actd says so at start"""
        actd_ = Actd()
        name = os.path.basename(tempfile.mktemp(prefix="actd-abstract-"))
        actd_.client_endpoint = "ipc://@%s-clients" % name
        with actd_:
            client = actd_.client()
            self.assertEqual(client.request("PING"), ["PONG"])
            client.close()
            self.assertIn("ipc://@%s-clients is an abstract socket: every user of this "
                          "machine can connect to it" % name, actd_.log())
            self.assertNotIn("%s is an abstract" % actd_.worker_endpoint, actd_.log())


class TenantConfigTest(unittest.TestCase):
    """A bad tenants or workers section stops actd at start (status 2),
    naming the file, the line and the setting."""

    def start(self, text):
        directory = tempfile.mkdtemp(prefix="actd-tenant-cfg-")
        self.addCleanup(shutil.rmtree, directory, True)
        config = os.path.join(directory, "actd.cfg")
        with open(config, "w") as handle:
            handle.write(text)
        run = subprocess.run([find_binary("actd"), "--config", config, "--db", ":memory:"],
                             capture_output=True, text=True, timeout=60)
        return run.returncode, run.stderr

    def test_bad_sections_are_refused_with_their_line(self):
        cases = [
            ("tenants\n    acme\n        prefix = acme/\n        rights = read,delete\n"
             "        keys = /tmp\n", "line 4: tenants/acme/rights: must be read, write or admin"),
            ("tenants\n    acme\n        prefix = acme/\n        rights = read\n",
             "tenants/acme: a tenant needs prefix, rights and keys"),
            ("tenants\n    acme\n        prefix = \"a b\"\n        rights = read\n"
             "        keys = /tmp\n", "tenants/acme/prefix: must be the start of a context id"),
            ("workers\n    w\n        activities = a, ,b\n        keys = /tmp\n",
             "workers/w/activities: must be activity names or patterns"),
            ("workers\n    w\n        activities = a\n        colour = red\n",
             "workers/w/colour: unknown setting"),
        ]
        for text, message in cases:
            code, stderr = self.start(text)
            self.assertEqual(code, 2, (text, stderr))
            self.assertIn(message, stderr)

    def test_a_key_in_two_tenants_is_logged_and_the_first_applies(self):
        """A key copied into a second tenant (say an admin one) does not
        silently get that tenant's rights: the first tenant's apply, and
        the log says so."""
        directory = tempfile.mkdtemp(prefix="actd-tenant-twice-")
        self.addCleanup(shutil.rmtree, directory, True)
        server = keygen("server", directory)
        for name in ("acme", "ops"):
            os.makedirs(os.path.join(directory, "tenants", name))
        public = keygen("agent", os.path.join(directory, "tenants", "acme"))
        shutil.copy(os.path.join(directory, "tenants", "acme", "agent.key"),
                    os.path.join(directory, "tenants", "ops", "agent.key"))
        config = os.path.join(directory, "actd.cfg")
        with open(config, "w") as handle:
            handle.write(config_text(directory, tenants=(("acme", "acme/", "read,write"),
                                                         ("ops", "ops/", "read,admin")),
                                     groups=()))
        os.makedirs(os.path.join(directory, "clients"))
        os.makedirs(os.path.join(directory, "anyworkers"))
        broker = Actd(args=["--config", config]).start(wait=False)
        agent = CurveClient(broker.client_endpoint, server[0], public)
        try:
            deadline = time.time() + 20
            while time.time() < deadline:
                try:
                    if agent.request("PING", timeout=0.5) == ["PONG"]:
                        break
                except TimeoutError:
                    pass
            self.assertEqual(agent.request("STATS")[:2], ["ERROR", "unauthorized"])
            self.assertEqual(agent.request("APPEND", "acme/x", {"type": "note"})[0], "OK")
            self.assertIn("CURVE: key %s (%s) is in tenants/acme and in tenants/ops: only "
                          "tenants/acme applies" % (public[0], os.path.join(
                              directory, "tenants", "ops", "agent.key")), broker.log())
        finally:
            agent.close()
            broker.finish()

    def test_tenants_without_curve_are_ignored_and_said_to_be(self):
        directory = tempfile.mkdtemp(prefix="actd-tenant-plain-")
        self.addCleanup(shutil.rmtree, directory, True)
        config = os.path.join(directory, "actd.cfg")
        with open(config, "w") as handle:
            handle.write("tenants\n    acme\n        prefix = acme/\n        rights = read\n"
                         "        keys = %s\n" % directory)
        with Actd(args=["--config", config]) as plain:
            client = plain.client()
            #  Without CURVE there is no key, so no tenant: every right
            self.assertEqual(client.request("APPEND", "globex/x", {"type": "note"})[0], "OK")
            self.assertIn("calls", json.loads(client.request("STATS")[1]))
            client.close()
            self.assertIn("tenants and worker groups are configured but CURVE is off",
                          plain.log())


#  A Node Client of tenant acme and a Node Worker of group summarizers
NODE_SCRIPT = r"""
'use strict';
const { Client, Worker } = require (%s);
const [clientEp, workerEp, curveServer, clientCert, workerCert] = process.argv.slice (2);
(async () => {
    const worker = new Worker ({ endpoint: workerEp, heartbeatMs: 200, name: 'node-summarizer',
                                 curveServer, curveCert: workerCert });
    worker.activity ('summarize', async ({ text }) => text.slice (0, 5).toUpperCase ());
    const running = worker.run ();
    const client = new Client ({ endpoint: clientEp, curveServer, curveCert: clientCert });
    let other = null;
    try {
        const outcome = await client.call ('acme/node', { _tool: 'summarize',
            text: 'hello world', _outputPath: '\u2020short' });
        try { await client.view ('globex/node'); other = 'allowed'; }
        catch (error) { other = error.code; }
        console.log (JSON.stringify ({ status: outcome.status,
            short: await client.resolve ('acme/node', '\u2020short'), other }));
    }
    finally {
        client.close ();
        await worker.stop ();
        await running;
    }
}) ().catch ((error) => { console.error (error); process.exit (1); });
"""


if __name__ == "__main__":
    unittest.main()
