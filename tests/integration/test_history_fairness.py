"""HISTORY pages (act_pages) served fairly: the clients with pages pending
take turns, so one client's many HISTORY requests do not hold another's;
a client that is gone has its pages dropped unbuilt; a client may have
64 HISTORY requests pending, the next is refused busy; and a request that
comes after a HISTORY from the same client is answered after it (replies
to one socket keep the order of its requests, docs/protocol.md section 8).

The checks are on state (replies, the order they came in, actd's CPU
ticks against the cost of a page measured in the same run, log lines),
with generous time bounds only.

Run: ACTD_BIN=build-x/bin/actd /usr/bin/python3 -m unittest -v test_history_fairness
"""

import json
import re
import threading
import time
import unittest

import zmq

from harness import Actd, wait_for

BIG = "big"             # 1000 messages of 8 KB: a HISTORY of it is an 8 MB page
MESSAGES = 1000
BLOB = "x" * 8000
HISTORY_CAP = 64        # act_pages.c S_CLIENT_HISTORIES
HELD_CAP = 1024         # act_pages.c S_CLIENT_HELD


def cpu_ticks(pid):
    """User and system CPU ticks the process has used (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_idle(pid, timeout=180.0):
    """Wait until the process uses at most 2 ticks in half a second;
    returns its ticks then. AssertionError after timeout seconds."""
    deadline = time.time() + timeout
    before = cpu_ticks(pid)
    while time.time() < deadline:
        time.sleep(0.5)
        now = cpu_ticks(pid)
        if now - before <= 2:
            return now
        before = now
    raise AssertionError("actd still busy after %.0f s" % timeout)


def short(reply):
    """A reply's verb and the start of its first argument, for messages."""
    return reply[:1] + [arg[:16] for arg in reply[1:2]]


def raw_client(endpoint, identity=None):
    """A DEALER that sends without the harness (no reply bookkeeping)."""
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 10000)    # its requests all go before it closes
    if identity:
        socket.setsockopt(zmq.ROUTING_ID, identity)
    socket.connect(endpoint)
    return socket


def send_histories(socket, count, context=BIG, limit=MESSAGES):
    for n in range(count):
        socket.send_multipart([b"ACTC01", b"HISTORY", b"h%d" % n, context.encode(),
                               b"1", str(limit).encode()])


class HistoryFairnessTest(unittest.TestCase):

    def setUp(self):
        self.actd = Actd().start()
        self.pid = self.actd.process.pid
        self.sockets = []
        self.client = self.actd.client()
        try:
            ids = [self.client.send("APPEND", BIG, {"type": "note", "text": BLOB})
                   for _ in range(MESSAGES)]
            for rid in ids:
                self.assertEqual(self.client.wait(rid, timeout=120)[0], "OK")
            self.assertEqual(self.client.request("APPEND", "small", {"type": "note"})[0], "OK")
        except BaseException:
            self.tearDown()
            raise

    def tearDown(self):
        for socket in self.sockets:
            socket.close(0)
        self.client.close()
        self.actd.finish()

    def page_ticks(self, pages=4):
        """actd's CPU ticks for one big page, as read by a live client."""
        before = cpu_ticks(self.pid)
        for _ in range(pages):
            reply = self.client.request("HISTORY", BIG, "1", str(MESSAGES), timeout=120)
            self.assertEqual(len(json.loads(reply[1])), MESSAGES)
        return max(1.0, (cpu_ticks(self.pid) - before) / pages)

    def other_tenant(self):
        other = self.actd.client()
        self.sockets.append(other.socket)
        return other

    def test_a_departed_clients_2000_requests_do_not_hold_anothers(self):
        """A client sends 2,000 HISTORY requests of an 8 MB page and
        leaves: another client's HISTORY of a one-message context is
        answered before actd has built even a tenth of those pages (it
        used to wait for all of them, a minute of CPU)."""
        per_page = self.page_ticks()
        hog = raw_client(self.actd.client_endpoint)
        send_histories(hog, 2000)
        hog.close()
        start = cpu_ticks(self.pid)
        other = self.other_tenant()
        rid = other.send("HISTORY", "small", "1", "10")
        bound = 200 * per_page
        reply = wait_for(lambda: (other.socket.poll(0) and other.wait(rid, timeout=1))
                         or (cpu_ticks(self.pid) - start > bound and ["still waiting"]),
                         "the small HISTORY", 600)
        used = cpu_ticks(self.pid) - start
        self.assertEqual(reply[0], "VALUE", "after %d ticks (%.1f ticks a page)"
                         % (used, per_page))
        self.assertEqual(len(json.loads(reply[1])), 1)
        self.assertLess(used, bound)

    def test_pages_of_a_client_that_left_are_not_built(self):
        """A client sends 60 HISTORY requests (under the cap) and leaves:
        actd builds a page or two, learns it is gone when a reply finds no
        route, drops the rest unbuilt and goes idle (it built all 60)."""
        per_page = self.page_ticks()
        start = cpu_ticks(self.pid)
        hog = raw_client(self.actd.client_endpoint)
        send_histories(hog, 60)
        hog.close()
        used = wait_idle(self.pid) - start
        dropped = re.search(r"client [0-9A-F]+ is gone: (\d+) HISTORY requests dropped "
                            r"unbuilt", self.actd.log())
        self.assertTrue(dropped, "no drop logged; used %d ticks, %.1f a page"
                        % (used, per_page))
        self.assertGreaterEqual(int(dropped.group(1)), 50)
        self.assertLess(used, 20 * per_page)
        #  It serves as before
        self.assertEqual(self.client.request("HISTORY", "small", "1", "10")[0], "VALUE")

    def test_a_clients_65th_pending_history_is_refused_busy(self):
        """64 HISTORY requests pending per client: the 65th is refused busy
        at once (logged, rate-limited, once), the 64 before it answered."""
        mine = self.other_tenant()
        ids = [mine.send("HISTORY", BIG, "1", str(MESSAGES)) for _ in range(HISTORY_CAP + 1)]
        refused = mine.wait(ids[-1], timeout=120)
        self.assertEqual(short(refused), ["ERROR", "busy"])
        self.assertIn("64 HISTORY requests pending", refused[2])
        first = mine.wait(ids[0], timeout=120)
        self.assertEqual(first[0], "VALUE")
        self.assertEqual(len(json.loads(first[1])), MESSAGES)
        wait_for(lambda: "a request refused busy" in self.actd.log(), "the refusal logged")
        self.assertEqual(self.actd.log().count("a request refused busy"), 1)
        #  Past the pages, requests held behind them are bounded too
        more = [mine.send("PING") for _ in range(HELD_CAP + 1)]
        refused = mine.wait(more[-1], timeout=120)
        self.assertEqual(short(refused), ["ERROR", "busy"])

    def test_one_clients_replies_keep_the_order_of_its_requests(self):
        """HISTORY of 8 MB, PING, APPEND, HISTORY of one message: the
        replies come in that order (the PONG used to overtake the page)."""
        mine = self.other_tenant()
        sent = [mine.send("HISTORY", BIG, "1", str(MESSAGES)), mine.send("PING"),
                mine.send("APPEND", "small", {"type": "note"}),
                mine.send("HISTORY", "small", "1", "10")]
        came = [mine._receive(120) for _ in sent]
        self.assertEqual([(rid, frames[0]) for rid, frames in came],
                         list(zip(sent, ["VALUE", "PONG", "OK", "VALUE"])))
        self.assertEqual(len(json.loads(came[0][1][1])), MESSAGES)
        self.assertEqual(len(json.loads(came[3][1][1])), 2)     # the APPEND before it

    def test_a_reader_with_many_pages_does_not_hold_another_client(self):
        """A client that reads its replies has 32 pages pending: another
        client's small HISTORY is answered while most of those are still
        to come (it used to come after all of them)."""
        hog = raw_client(self.actd.client_endpoint)
        self.sockets.append(hog)
        received, stop, pages = [], threading.Event(), HISTORY_CAP // 2
        send_histories(hog, pages)

        def read():
            while not stop.is_set():
                if hog.poll(100):
                    received.append(hog.recv_multipart()[1])
        reader = threading.Thread(target=read)
        reader.start()
        try:
            wait_for(lambda: received, "the first page", 120)
            other = self.other_tenant()
            reply = other.request("HISTORY", "small", "1", "10", timeout=120)
            seen = len(received)
        finally:
            stop.set()
            reader.join(30)
        self.assertEqual(reply[0], "VALUE")
        self.assertLess(seen, pages // 4, "the hog had %d of its %d pages" % (seen, pages))


if __name__ == "__main__":
    unittest.main()
