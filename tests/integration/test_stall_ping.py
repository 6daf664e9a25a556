"""A health check is answered while the store stalls (docs/operations.md,
"the commit in flight"): PostgreSQL paused (SIGSTOP) while many clients
have requests waiting. actd reads client requests ahead, up to
S_DEFER_CLIENTS, and answers a PING among them at once; the other requests
wait their turn, in order, and are all answered once the store is back.
Nothing is timed but the PING's bound: the pause is the test's own."""

import json
import time
import unittest

import zmq

from harness import actd_with_config
from pg import Paused

#  Neither the lease nor a statement timeout runs out in the pause
CONFIG = "server\n    lease_ms = 60000\nstore\n    timeout_ms = 60000\n"


def message(n):
    return {"type": "data", "kind": "input", "data": {"n": n}}


def cpu_ticks(process):
    """A process's user and system CPU time so far, in clock ticks"""
    with open("/proc/%d/stat" % process.pid) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_idle(process, quiet=1.0, timeout=120):
    """Until process has used no CPU for quiet seconds"""
    deadline = time.monotonic() + timeout
    last = cpu_ticks(process)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = cpu_ticks(process)
        if now == last:
            return
        last = now
    raise AssertionError("still busy after %d s" % timeout)


class PingDuringStall(unittest.TestCase):

    def setUp(self):
        import pg
        self.server = pg.server()

    def ping_within(self, actd, seconds):
        """A fresh client's PING: the seconds it took, or None when it got
        no answer within seconds"""
        pinger = actd.client()
        try:
            started = time.monotonic()
            rid = pinger.send("PING")
            try:
                self.assertEqual(pinger.wait(rid, timeout=seconds), ["PONG"])
            except TimeoutError:
                return None
            return time.monotonic() - started
        finally:
            pinger.close()

    def test_ping_while_a_read_waits_for_a_stalled_commit(self):
        """A HISTORY waits on the loop for the commit in flight, which waits
        for the paused database; 40 clients send an APPEND each meanwhile.
        Before, only 8 requests were read ahead and the PING behind them
        waited for the database."""
        with actd_with_config(CONFIG, store=self.server.database()) as actd:
            writer, reader = actd.client(), actd.client()
            self.assertEqual(writer.request("APPEND", "a", message(0))[0], "OK")
            others = [actd.client() for _ in range(40)]
            with Paused(self.server):
                appended = writer.send("APPEND", "a", message(1))
                time.sleep(0.5)         # its commit is in flight by now
                history = reader.send("HISTORY", "a", "1", "10")
                time.sleep(0.5)         # the loop waits for that commit
                waiting = [(client, client.send("APPEND", "a", message(2)))
                           for client in others]
                time.sleep(0.5)
                took = self.ping_within(actd, 10)
                #  Nothing else was answered: the database is still paused
                self.assertFalse(writer.socket.poll(0), "a reply during the pause")
            self.assertIsNotNone(took, "PING unanswered while requests waited for the store")
            print("PING while 40 requests waited for a paused database: %.0f ms"
                  % (1000 * took))
            self.assertLess(took, 5)
            self.assertEqual(writer.wait(appended, timeout=60)[0], "OK")
            pages = json.loads(reader.wait(history, timeout=60)[1])
            self.assertEqual([m["data"]["n"] for m in pages][:2], [0, 1])
            for client, rid in waiting:
                reply = client.wait(rid, timeout=60)
                self.assertEqual(reply[0], "OK", reply)
                client.close()
            writer.close()
            reader.close()

    def test_ping_while_the_next_batch_is_full(self):
        """The commit in flight waits for the paused database while one
        client pipelines more APPENDs than the next batch takes (20,000
        writes): the rest wait, read ahead or in the socket, and a PING is
        still answered. Before, the socket was left unread once the batch
        was full. Every APPEND is answered OK, in order, once the database
        is back."""
        count = 21000
        with actd_with_config(CONFIG, store=self.server.database()) as actd:
            client = actd.client()
            self.assertEqual(client.request("APPEND", "a", message(0))[0], "OK")
            raw = zmq.Context.instance().socket(zmq.DEALER)
            raw.setsockopt(zmq.LINGER, 0)
            raw.setsockopt(zmq.SNDHWM, 0)
            raw.setsockopt(zmq.RCVHWM, 0)
            raw.connect(actd.client_endpoint)
            try:
                with Paused(self.server):
                    first = client.send("APPEND", "a", message(1))
                    time.sleep(0.5)     # its commit is in flight by now
                    body = json.dumps(message(2)).encode()
                    for n in range(count):
                        raw.send_multipart([b"ACTC01", b"APPEND", b"p%d" % n,
                                            b"a", body])
                    #  actd reads until the batch is full, then idles
                    wait_idle(actd.process)
                    took = self.ping_within(actd, 10)
                self.assertIsNotNone(took, "PING unanswered while the next batch was full")
                print("PING with the next batch full and a paused database: %.0f ms"
                      % (1000 * took))
                self.assertLess(took, 5)
                self.assertEqual(client.wait(first, timeout=120)[0], "OK")
                seen = []
                while len(seen) < count:
                    self.assertTrue(raw.poll(120000), "%d of %d answered" % (len(seen), count))
                    frames = raw.recv_multipart()
                    self.assertEqual(frames[1], b"OK", frames)
                    seen.append(int(frames[2][1:]))
                self.assertEqual(seen, list(range(count)))
                #  The pause did fill the next batch: a commit of more than
                #  10,000 writes (the histogram's bound below 20,000)
                batch = json.loads(client.request("STATS")[1])["store"]["batch"]
                below = batch["counts"][batch["le"].index(10000)]
                self.assertLess(below, batch["count"], batch)
            finally:
                raw.close(0)
                client.close()


if __name__ == "__main__":
    unittest.main()
