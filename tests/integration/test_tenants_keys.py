"""A key's reach ends with its connection and its revocation (docs/
operations.md section 8): a worker key that takes the routing id of a
worker registered with another key gets none of that worker's tasks, and
a client key revoked by a reload, or moved by one to another tenant, gets
no DONE of the calls it made before in contexts it no longer reaches; a
reply that waits for its commit while its client leaves does not reach a
client of another key that took the routing id, nor does a HISTORY page
or a busy refusal owed to it.
Each test runs a real actd with CURVE (test_tenants.TenantsBase)."""

import json
import os
import re
import time
import unittest

import zmq

import test_tenants
from harness import find_binary, wait_for


class KeysTest(test_tenants.TenantsBase):

    def worker_on(self, name, routing_id):
        """A raw worker socket with key name and routing id, connected"""
        socket = zmq.Context.instance().socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.ROUTING_ID, routing_id)
        socket.curve_publickey = self.keys[name][0].encode()
        socket.curve_secretkey = self.keys[name][1].encode()
        socket.curve_serverkey = self.keys["server"][0].encode()
        socket.connect(self.actd.worker_endpoint)
        self.sockets.append(socket)
        return socket

    def test_a_worker_routing_id_taken_by_another_key_gets_no_task(self):
        """A payments worker (a key of worker_keys: any activity) leaves;
        a summarizers key, whose group may not serve payments, connects on
        its routing id before actd judged it lost. Before, its messages
        were taken for the registered worker's: it got the payments TASK,
        parameters and all, and its RESULT was accepted. The heartbeat is
        long (the harness's 200 ms would judge the victim lost 600 ms after
        it left, and on a loaded machine the intruder may take longer to
        get the routing id: it would then be told to send READY first)."""
        self.assertEqual(self.actd.stop(), 0)
        self.actd.heartbeat_ms = 10000
        self.actd.start(wait=False)
        self.clients.clear()
        self.wait_up()
        victim = self.worker_on("anyworker", b"payments-1")
        victim.send_multipart([b"ACTW01", b"READY", json.dumps(
            {"activities": ["payments"], "name": "payments-1"}).encode()])
        wait_for(lambda: "payments-1" in self.workers(), "the payments worker")
        victim.close(0)
        self.sockets.remove(victim)
        #  libzmq refuses the id while the old connection is known: retried
        deadline, frames = time.time() + 20, None
        while frames is None and time.time() < deadline:
            intruder = self.worker_on("summarizer", b"payments-1")
            intruder.send_multipart([b"ACTW01", b"HEARTBEAT"])
            frames = self.next_command(intruder, b"DISCONNECT", timeout=2)
            if frames is None:
                intruder.close(0)
                self.sockets.remove(intruder)
        self.assertIsNotNone(frames, "the intruder was never told to DISCONNECT")
        self.assertIn(b"another key", frames[2])
        self.wait_log(r"registered with another key")
        #  The registered worker is gone with its connection
        self.assertNotIn("payments-1", self.workers())
        acme = self.client("acme")
        rid = acme.send("CALL", "acme/pay", {"_tool": "payments", "card": "4111",
                                            "_outputPath": "\u2020paid"})
        self.assertEqual(acme.wait(rid, "ACCEPTED")[0], "ACCEPTED")
        self.assertIsNone(self.next_command(intruder, b"TASK", timeout=1.5))
        self.assertEqual(self.client("ops").value("STATS")["calls"]["queued"], 1)

    def test_a_revoked_client_key_gets_no_done_of_its_earlier_calls(self):
        """acme calls a tool; its tenant is removed and actd reloaded (its
        connection is cut); acme's socket connects again on its routing id
        and speaks (refused); the worker answers. Before, the DONE, result
        and all, went to the revoked key."""
        worker = self.holding_worker()
        acme = self.take_routing_id("acme", b"agent-revoked")
        rid = acme.send("CALL", "acme/r", {"_tool": "hold", "q": "secret",
                                          "_outputPath": "\u2020answer"})
        self.assertEqual(acme.wait(rid, "ACCEPTED")[0], "ACCEPTED")
        task = self.task_of(worker, 1)
        self.rewrite(tenants=[t for t in test_tenants.TENANTS if t[0] != "acme"])
        self.wait_log(r"client key %s revoked" % re.escape(self.keys["acme"][0]))
        #  Back on the same routing id (libzmq connects again by itself)
        deadline, reply = time.time() + 20, None
        while reply is None and time.time() < deadline:
            try:
                reply = acme.request("PING", timeout=1.0)
            except TimeoutError:
                pass
        self.assertEqual(reply[:2], ["ERROR", "unauthorized"], reply)
        worker.send_result(task, "TOP SECRET RESULT")
        wait_for(lambda: self.unowned() >= 1, "the DONE owed to acme dropped")
        with self.assertRaises(TimeoutError):
            acme.wait(rid, "DONE", timeout=1.0)
        self.wait_log(r"reply owed to key %s not sent" % re.escape(self.keys["acme"][0]))

    def test_a_client_key_moved_to_another_tenant_gets_no_done_of_its_old_calls(self):
        """acme calls a tool in acme/r; its key file moves to globex's
        directory and actd reloads (the key now reaches globex/ only; its
        connection is cut); acme's socket connects again on its routing id;
        the worker answers. Before, the DONE, result and all, still went to
        the key: the guard asked only whether the key was still allowed."""
        worker = self.holding_worker()
        acme = self.take_routing_id("acme", b"agent-moved")
        rid = acme.send("CALL", "acme/r", {"_tool": "hold", "q": "secret",
                                          "_outputPath": "\u2020answer"})
        call_id = acme.wait(rid, "ACCEPTED")[1]
        task = self.task_of(worker, 1)
        os.rename(os.path.join(self.dir, "tenants", "acme", "acme.key"),
                  os.path.join(self.dir, "tenants", "globex", "acme.key"))
        self.rewrite()
        self.wait_log(r"client key %s lost rights" % re.escape(self.keys["acme"][0]))
        #  Back on the same routing id; what it sends is judged as globex's
        deadline, reply = time.time() + 20, None
        while reply is None and time.time() < deadline:
            try:
                reply = acme.request("STATUS", call_id, timeout=1.0)
            except TimeoutError:
                pass
        self.assertEqual(reply[:2], ["ERROR", "not_found"], reply)
        worker.send_result(task, "TOP SECRET RESULT")
        wait_for(lambda: self.unowned() >= 1, "the DONE owed to acme/r dropped")
        with self.assertRaises(TimeoutError):
            acme.wait(rid, "DONE", timeout=1.0)
        self.wait_log(r"reply owed to key %s not sent .* no longer reaches context acme/r"
                      % re.escape(self.keys["acme"][0]))
        #  The call itself ended as usual
        self.assertEqual(self.clients["ops"].status(call_id)["state"], "ok")

    def test_a_reply_waiting_for_its_commit_does_not_reach_a_newcomer_on_its_routing_id(self):
        """Every reply is owed to the key of the request it answers, not
        only DONE and EVENT. acme's ACCEPTED waits for its commit (the
        commit hold: a tool's result may share it); acme leaves, and a
        globex client takes its routing id (libzmq lets any peer once the
        id is free: actd does not set ROUTER_HANDOVER, so no one takes an
        id while its connection lives). Before, globex's PING ended the
        hold and acme's ACCEPTED, call id and all, went to globex."""
        self.assertEqual(self.actd.stop(), 0)
        with open(self.config, "a") as handle:
            handle.write("store\n    hold_us = 10000000\n")
        self.actd.start(wait=False)
        self.clients.clear()
        self.wait_up()
        worker = self.holding_worker()
        self.unowned()                  # ops's STATS answered before the hold
        acme = self.take_routing_id("acme", b"agent-held")
        acme.send("CALL", "acme/h", {"_tool": "hold", "_outputPath": "\u2020answer"})
        task = self.task_of(worker, 1)  # served: its ACCEPTED waits in the hold
        self.assertFalse(acme.socket.poll(300), "the ACCEPTED did not wait for the hold")
        acme.socket.close(0)
        self.sockets.remove(acme.socket)
        globex = self.take_routing_id("globex", b"agent-held")
        globex.socket.poll(500)
        while globex.socket.poll(0):
            globex.pending.append(globex._receive(0))
        self.assertEqual([frames for _, frames in globex.pending if frames[0] == "ACCEPTED"],
                         [], "globex received acme's ACCEPTED")
        self.assertEqual(self.unowned(), 1, "the ACCEPTED was not withheld by the guard")
        self.wait_log(r"reply owed to key %s not sent to routing id %s"
                      % (re.escape(self.keys["acme"][0]), b"agent-held".hex().upper()))
        #  The call ends as usual (its DONE, owed to acme, withheld too)
        worker.send_result(task, "acme's result")
        wait_for(lambda: self.unowned() == 2, "the DONE owed to acme withheld")

    def stalled_store(self):
        """actd again, its fsyncs held while the file self.stall exists
        (tests/helpers/fsync_stall.c): a commit lasts as long as the test
        wants, and what waits for it (replies, requests read ahead) waits."""
        self.assertEqual(self.actd.stop(), 0)
        self.stall = os.path.join(self.dir, "stall")
        asan = os.environ.get("ASAN_OPTIONS", "detect_leaks=1")
        self.actd.env = {"LD_PRELOAD": find_binary("libfsync_stall.so"),
                         "ACTD_FSYNC_STALL": self.stall,
                         #  The library comes before the sanitizers' runtime
                         "ASAN_OPTIONS": asan + ":verify_asan_link_order=0"}
        self.actd.start(wait=False)
        self.clients.clear()
        self.wait_up()

    def left_during_a_held_commit(self, routing_id, requests):
        """acme, on routing_id, sends requests ((command, args) each) while
        ops's APPEND waits for a held commit, and leaves once actd read
        them; a globex client takes routing_id and PINGs, then the commit
        goes. Returns what globex received, up to its PONG. The waits only
        let actd read what came (it reads ahead while a commit is in
        flight) and drop acme's connection before globex's arrives: libzmq
        keeps a connection on an id still held aside, unnamed."""
        acme = self.take_routing_id("acme", routing_id)
        writer = self.client("ops")
        open(self.stall, "w").close()
        try:        # never left held: actd could not stop
            writer.send("APPEND", "ops/stall", {"type": "note"})
            wait_for(lambda: os.path.exists(self.stall + ".stalled"), "the commit held")
            for command, args in requests:
                acme.send(command, *args)
            time.sleep(1.0)
            acme.socket.close(0)
            self.sockets.remove(acme.socket)
            time.sleep(1.0)
            globex = self.fixed_client("globex", routing_id)
            globex.socket.connect(self.actd.client_endpoint)
            ping = globex.send("PING")
            time.sleep(1.0)
        finally:
            os.remove(self.stall)
        received = []
        deadline = time.time() + 60
        while globex.socket.poll(max(0, int((deadline - time.time()) * 1000))):
            rid, frames = globex._receive(0)
            if (rid, frames[0]) == (ping, "PONG"):
                return received
            received.append((rid, frames[0], frames[1:2]))
        self.fail("globex never had its PONG (its connection was kept aside?); it had %s\n%s"
                  % (received, self.actd.log()[-6000:]))

    def test_a_history_page_owed_to_a_client_that_left_does_not_reach_a_newcomer(self):
        """A HISTORY page is owed to the key that asked for it, as an
        ACCEPTED is: acme's page of acme/h, built while a commit is held,
        goes (or is withheld) when the commit ends; acme left meanwhile,
        and a globex client took its routing id. Without the page's owner
        (before 9ed1836) globex got acme's history."""
        self.stalled_store()
        acme = self.client("acme")
        self.assertEqual(acme.request("APPEND", "acme/h", {"type": "note", "text": "acme only"})
                         [0], "OK")
        before = self.unowned()
        received = self.left_during_a_held_commit(
            b"agent-page", [("HISTORY", ("acme/h", "1", "10"))])
        self.assertEqual(received, [], "globex received what was owed to acme")
        self.assertEqual(self.unowned() - before, 1, "the page was not withheld by the guard")
        self.wait_log(r"reply owed to key %s not sent to routing id %s"
                      % (re.escape(self.keys["acme"][0]), b"agent-page".hex().upper()))

    def test_a_busy_refusal_owed_to_a_client_that_left_does_not_reach_a_newcomer(self):
        """A busy refusal is owed to the key of the request refused: acme
        asks for 65 HISTORY pages while a commit is held (the first of a
        context big enough to take several passes, so that 64 are pending
        when the 65th is judged), and leaves; a globex client takes its
        routing id. Without an owner on the refusal (before 9ed1836)
        globex got acme's ERROR busy, and its pages; so it did, 3 runs in
        8, while acme's requests read during the commit were tied, once
        handled, to the socket then on their descriptor number: globex's,
        when it got the number acme's connection had."""
        self.stalled_store()
        acme = self.client("acme")
        ids = [acme.send("APPEND", "acme/big", {"type": "note", "text": "x" * 8000})
               for _ in range(200)]
        for rid in ids:
            self.assertEqual(acme.wait(rid, timeout=60)[0], "OK")
        self.assertEqual(acme.request("APPEND", "acme/h", {"type": "note"})[0], "OK")
        before = self.unowned()
        requests = [("HISTORY", ("acme/big", "1", "1000"))]
        requests += [("HISTORY", ("acme/h", "1", "10"))] * 64
        received = self.left_during_a_held_commit(b"agent-busy", requests)
        self.assertEqual([r for r in received if r[1] == "ERROR"], [],
                         "globex received acme's busy refusal")
        self.assertEqual(received, [], "globex received what was owed to acme")
        self.wait_log(r"client %s: a request refused busy" % b"agent-busy".hex().upper())
        #  64 pages and the refusal
        self.assertEqual(self.unowned() - before, 65, "not all withheld by the guard")


if __name__ == "__main__":
    unittest.main()
