"""A broker cut off from PostgreSQL (a network partition between it and
the database, the other broker still connected), longer than the lease
(docs/operations.md, "Several brokers on PostgreSQL"): the others take its
contexts over once its lease has run out, and its clients get there. An
audit saw the cut-off broker, alive and answering, refuse its contexts'
requests (internal) for the whole partition, so that clients given both
brokers never reached the one that could serve them: its contexts were
down as long as the cut lasted. Now, once its lease has lapsed, it sends
them on (moved) to the other broker, which serves them from the end of
the lease on; and it writes nothing meanwhile (no split brain).

Two more gaps, closed since: a broker cut off before it had read that a
peer had joined (it learns the live brokers at each lease renewal and
each claim) knew no broker to name, and refused its contexts (internal)
for the whole cut; it now answers moved with no endpoint, and the client
libraries try the next broker at once. And STATUS of a call it held,
which the libraries poll to follow a call, was refused (internal): it is
sent on (moved) as the context's requests are, so the client gets the
outcome from the broker that took the call over."""

import os
import subprocess
import sys
import time
import unittest

import pg
from harness import Actd, Client, Worker, find_binary, remove_scratch, scratch_dir

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "workers", "python"))
import actd  # noqa: E402  (the Python package under test, from the source tree)

LEASE_MS = 2000
CUT = "127.0.0.2"       #  The address the cut-off broker reaches the server by


def message(n):
    return {"type": "data", "kind": "input", "data": {"n": n}}


class Brokers(unittest.TestCase):
    """A PostgreSQL server on two addresses, and brokers on it: the one to
    be cut off reaches it through CUT."""

    def setUp(self):
        self.server = pg.Server(addresses=("127.0.0.1", CUT))
        self.addCleanup(self.server.stop)
        self.url = self.server.database()
        self.dir = scratch_dir("actd-cut-")
        self.addCleanup(remove_scratch, self.dir)
        self.config = os.path.join(self.dir, "actd.cfg")
        with open(self.config, "w") as handle:
            handle.write("server\n    lease_ms = %d\nstore\n    timeout_ms = 500\n" % LEASE_MS)

    def broker(self, address="127.0.0.1"):
        """A broker started on the server, reaching it through address."""
        broker = Actd(store=self.url.replace("127.0.0.1", address),
                      args=["--config", self.config]).start()
        self.addCleanup(broker.cleanup)
        return broker

    def append_until_served(self, library, n, started):
        """library.append of message n to "cut" (key kn), tried every 0.1 s
        until a broker stores it, within six leases of started: its seq
        and the seconds since started."""
        refusals = set()
        while True:
            try:
                seq = library.append("cut", message(n), key="k%d" % n)
                return seq, time.monotonic() - started
            except actd.ActdError as error:
                refusals.add("%s: %s" % (type(error).__name__, error))
            waited = time.monotonic() - started
            self.assertLess(waited, 6 * LEASE_MS / 1000, "the context is still not served "
                            "(refused: %s)" % sorted(refusals))
            time.sleep(0.1)


class PartitionTest(Brokers):

    def setUp(self):
        super().setUp()
        self.cut = self.broker(CUT)
        self.other = self.broker()
        #  Both have renewed their heartbeat since the other joined (each
        #  learns there which brokers are live)
        time.sleep(LEASE_MS / 1000)

    def test_a_broker_cut_off_from_the_database_sends_its_clients_to_the_other(self):
        direct = Client(self.cut.client_endpoint)
        self.addCleanup(direct.close)
        #  A context of the broker to be cut off: the first broker asked claims it
        self.assertEqual(direct.request("APPEND", "cut", message(0))[0], "OK")
        library = actd.Client([self.cut.client_endpoint, self.other.client_endpoint],
                              timeout=30)
        self.addCleanup(library.close)
        self.assertEqual(library.append("cut", message(1)), 2)
        stored, n = [0, 1], 2
        with pg.Silence(self.server.port, CUT):
            started = time.monotonic()
            #  The client library, given both brokers, appends until one
            #  broker stores it: the other, once the lease has run out
            seq, served = self.append_until_served(library, n, started)
            stored.append(n)
            self.assertEqual(seq, 3)
            #  Still cut off: the broker names the other one, and writes
            #  nothing (the other owns the context now)
            reply = direct.request("APPEND", "cut", message(99), timeout=30)
            self.assertEqual(reply, ["ERROR", "moved", self.other.client_endpoint])
            reply = direct.request("RESOLVE", "cut", "\u2020input.n", timeout=30)
            self.assertEqual(reply, ["ERROR", "moved", self.other.client_endpoint])
            #  CONTEXTS lists the store, which the other broker reads (it
            #  was refused internal); the library goes there
            reply = direct.request("CONTEXTS", timeout=30)
            self.assertEqual(reply, ["ERROR", "moved", self.other.client_endpoint])
            self.assertEqual([c["context"] for c in library.contexts()], ["cut"])
            #  And the C library (actctl), given the cut-off broker first
            listed = subprocess.run(
                [find_binary("actctl"), "--endpoint", "%s,%s" % (
                    self.cut.client_endpoint, self.other.client_endpoint), "contexts"],
                capture_output=True, text=True, timeout=60)
            self.assertEqual(listed.returncode, 0, listed.stderr)
            self.assertIn("cut", listed.stdout)
        print("a broker cut off from the database: its context served by the other "
              "%.1f s after the cut (lease %d ms)" % (served, LEASE_MS))
        #  Back: the context stays with the other broker, which has it all
        reply = direct.request("APPEND", "cut", message(3), timeout=30)
        self.assertEqual(reply, ["ERROR", "moved", self.other.client_endpoint])
        history = [m["data"]["n"] for m in library.history("cut")]
        self.assertEqual(history, stored)
        self.assertEqual(self.cut.stop(), 0)
        self.assertEqual(self.other.stop(), 0)


    def test_a_call_held_by_a_cut_off_broker_is_followed_to_the_other(self):
        """The libraries follow a call whose DONE they await with STATUS
        (its accepting broker may not be the one that ends it): asked of
        the cut-off broker once its lease has lapsed, STATUS names the
        other broker, which gives the outcome once it has taken the call
        over. It was refused (internal), and the outcome never came."""
        worker = Worker(self.other.worker_endpoint, ["echo"],
                        lambda activity, params, meta: params)
        worker.start()
        self.addCleanup(worker.stop)
        direct = Client(self.cut.client_endpoint)
        self.addCleanup(direct.close)
        #  The context is the cut-off broker's; the call waits there (its
        #  workers are connected to the other broker only)
        self.assertEqual(direct.request("APPEND", "job", message(0))[0], "OK")
        library = actd.Client([self.cut.client_endpoint, self.other.client_endpoint],
                              timeout=30, status_poll=0.2)
        self.addCleanup(library.close)
        handle = library.submit("job", {"_tool": "echo", "n": 1, "_outputPath": "\u2020out"})
        call_id = handle.accepted()
        self.assertEqual(direct.status(call_id)["state"], "queued")
        with pg.Silence(self.server.port, CUT):
            started = time.monotonic()
            outcome = handle.outcome(timeout=6 * LEASE_MS / 1000)
            served = time.monotonic() - started
            self.assertEqual((outcome.status, outcome.result), ("ok", {"n": 1}))
            reply = direct.request("STATUS", call_id, timeout=30)
            self.assertEqual(reply, ["ERROR", "moved", self.other.client_endpoint])
            reply = direct.request("CANCEL", call_id, timeout=30)
            self.assertEqual(reply, ["ERROR", "moved", self.other.client_endpoint])
        print("a call held by a broker cut off from the database: its outcome, from the "
              "other, %.1f s after the cut (lease %d ms)" % (served, LEASE_MS))
        self.assertEqual(library.status(call_id).state, "ok")
        self.assertEqual(self.cut.stop(), 0)
        self.assertEqual(self.other.stop(), 0)


class LateTest(Brokers):
    """A broker cut off before it has read that the other joined: it knows
    no live broker to name."""

    def test_a_broker_cut_off_before_a_peer_joined_sends_its_clients_on(self):
        cut = self.broker(CUT)
        direct = Client(cut.client_endpoint)
        self.addCleanup(direct.close)
        self.assertEqual(direct.request("APPEND", "cut", message(0))[0], "OK")
        with pg.Silence(self.server.port, CUT):
            started = time.monotonic()
            other = self.broker()
            library = actd.Client([cut.client_endpoint, other.client_endpoint], timeout=30)
            self.addCleanup(library.close)
            seq, served = self.append_until_served(library, 1, started)
            self.assertEqual(seq, 2)
            #  Still cut off, knowing no live broker: moved, naming none
            #  (never itself); the libraries try the next broker
            reply = direct.request("APPEND", "cut", message(99), timeout=30)
            self.assertEqual(reply, ["ERROR", "moved", ""])
        print("a broker cut off before a peer joined: its context served by the other "
              "%.1f s after the cut (lease %d ms)" % (served, LEASE_MS))
        self.assertEqual([m["data"]["n"] for m in library.history("cut")], [0, 1])
        self.assertEqual(cut.stop(), 0)
        self.assertEqual(other.stop(), 0)


if __name__ == "__main__":
    unittest.main()
