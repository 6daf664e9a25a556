"""The activities workers' READYs make actd keep are bounded (docs/protocol.md
section 3.2): a READY naming more than server/max_worker_activities
(default 1024) is refused bad_argument, and one that would take the
activities connected workers serve past server/max_served_activities
(default 4096) is refused busy; each gets DISCONNECT with the reason, is
logged, and is counted in STATS' "served". Before, a READY could name as
many activities as its frame held: one of 100,000 names held actd's loop
100 s and took it from 15 MB to 188 MB, and 100 workers of 1,024 names
each made a STATS that held the loop 0.4 s and a /metrics of 50 MB (from
an audit of what one request can cost)."""

import json
import unittest

import zmq

from harness import actd_with_config, wait_for


class ReadyCase(unittest.TestCase):
    """Raw ACT/1 and Majordomo workers that send one READY, and no
    heartbeat: actd's heartbeat is long enough that none is lost."""

    config = ""

    def setUp(self):
        self.actd = actd_with_config(self.config, heartbeat_ms=5000)
        self.addCleanup(self.actd.finish)
        self.actd.start()
        self.client = self.actd.client()
        self.addCleanup(self.client.close)
        self.sockets = []
        self.addCleanup(self._close_sockets)

    def _close_sockets(self):
        for socket in self.sockets:
            socket.close(0)

    def stats(self):
        return self.client.value("STATS")

    def ready(self, names, name):
        """A DEALER that sent READY naming names."""
        socket = zmq.Context.instance().socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.connect(self.actd.worker_endpoint)
        self.sockets.append(socket)
        socket.send_multipart([b"ACTW01", b"READY",
                               json.dumps({"activities": names, "name": name}).encode()])
        return socket

    def disconnect(self, socket, heartbeat=b"HEARTBEAT", timeout=10):
        """The frames of the first message but heartbeats actd sends socket,
        or None when none comes within timeout seconds."""
        while socket.poll(timeout * 1000):
            frames = socket.recv_multipart()
            if frames[1] != heartbeat:
                return frames
        return None

    def joined(self, name):
        wait_for(lambda: any(w["name"] == name for w in self.stats()["workers"]),
                 "worker %s to register" % name, 20.0)

    def served(self):
        return self.client.value("STATS")["served"]


class WorkerActivitiesTest(ReadyCase):
    """The defaults: a READY naming more than server/max_worker_activities
    (1024) is refused bad_argument, as a READY with a capacity out of range
    is, and one naming 1024 joins; four such workers reach
    server/max_served_activities (4096)."""

    def test_a_ready_naming_more_than_max_worker_activities_is_refused(self):
        over = self.ready(["many-%05d" % n for n in range(1025)], "many")
        self.assertEqual(self.disconnect(over, timeout=5),
                         [b"ACTW01", b"DISCONNECT",
                          b"READY names 1025 activities, more than max_worker_activities (1024)"])
        stats = self.client.value("STATS")
        self.assertEqual((stats["workers"], stats["activities"]), ([], {}))
        self.assertEqual(stats["served"], {"activities": 0, "max": 4096, "refused": 0,
                                           "max_per_worker": 1024, "refused_per_worker": 1})
        wait_for(lambda: "READY names 1025 activities, more than max_worker_activities (1024); "
                         "disconnecting it" in self.actd.log(), "the log line")
        #  Names are counted as given, a repeat included; 1024 join
        repeated = self.ready(["twice"] * 1025, "twice")
        self.assertEqual(self.disconnect(repeated, timeout=5)[1], b"DISCONNECT")
        self.ready(["fits-%04d" % n for n in range(1024)], "fits")
        self.joined("fits")
        self.assertEqual(self.served(), {"activities": 1024, "max": 4096, "refused": 0,
                                         "max_per_worker": 1024, "refused_per_worker": 2})

    def test_workers_serve_at_most_max_served_activities_by_default(self):
        """4096 by default: four workers of 1024 names each join, a fifth
        naming one more activity is busy, one naming those served joins."""
        for worker in range(4):
            self.ready(["w%d-%04d" % (worker, n) for n in range(1024)], "w%d" % worker)
            self.joined("w%d" % worker)
        more = self.ready(["w0-0000", "more"], "more")
        self.assertEqual(self.disconnect(more, timeout=5),
                         [b"ACTW01", b"DISCONNECT", b"max_served_activities (4096) reached: "
                          b"workers serve 4096 activities, and this READY names 1 more"])
        self.ready(["w0-0000", "w3-1023"], "same")
        self.joined("same")
        stats = self.stats()
        self.assertEqual(len(stats["workers"]), 5)
        self.assertEqual(len(stats["activities"]), 4096)
        self.assertEqual(stats["served"], {"activities": 4096, "max": 4096, "refused": 1,
                                           "max_per_worker": 1024, "refused_per_worker": 0})


class ServedActivitiesTest(ReadyCase):
    """server/max_served_activities: a READY whose activities no connected
    worker serves would take those served past it is refused busy; room
    comes as workers leave. A Majordomo worker's service counts too."""

    config = "server\n    max_served_activities = 6\n    max_worker_activities = 4\n"

    def test_a_ready_past_max_served_activities_is_busy_until_a_worker_leaves(self):
        first = self.ready(["a", "b", "c", "d"], "first")
        self.joined("first")
        #  c and d are served already: only e is more
        self.ready(["c", "d", "e"], "second")
        self.joined("second")
        self.assertEqual(self.served()["activities"], 5)
        refused = self.ready(["f", "g"], "third")
        self.assertEqual(self.disconnect(refused),
                         [b"ACTW01", b"DISCONNECT", b"max_served_activities (6) reached: "
                          b"workers serve 5 activities, and this READY names 2 more"])
        #  A name repeated counts once: a, served, and f make 6
        self.ready(["a", "f", "f"], "fourth")
        self.joined("fourth")
        self.assertEqual(self.served()["activities"], 6)
        majordomo = zmq.Context.instance().socket(zmq.DEALER)
        majordomo.setsockopt(zmq.LINGER, 0)
        majordomo.connect(self.actd.worker_endpoint)
        self.sockets.append(majordomo)
        majordomo.send_multipart([b"MDPW02", b"\x01", b"g"])
        self.assertEqual(self.disconnect(majordomo, heartbeat=b"\x05"), [b"MDPW02", b"\x06"])
        stats = self.stats()
        self.assertEqual(sorted(worker["name"] for worker in stats["workers"]),
                         ["first", "fourth", "second"])
        self.assertNotIn("g", stats["activities"])
        #  first leaves: b is served no more (a is, by fourth), room for one
        first.send_multipart([b"ACTW01", b"DISCONNECT"])
        wait_for(lambda: self.served()["activities"] == 5, "first to leave")
        self.ready(["g"], "fifth")
        self.joined("fifth")
        self.assertEqual(self.served(), {"activities": 6, "max": 6, "refused": 2,
                                         "max_per_worker": 4, "refused_per_worker": 0})
        self.assertIn("max_served_activities (6) reached: workers serve 5 activities, and "
                      "this READY names 2 more; disconnecting it", self.actd.log())


class ReadySizeTest(ReadyCase):
    """A READY over server/max_message_bytes is refused too_large, as every
    frame over it is (docs/protocol.md section 1): libzmq reads frames up
    to four times that, and a READY was taken whatever its size."""

    config = "server\n    max_message_bytes = 2048\n"

    def test_a_ready_over_max_message_bytes_is_refused(self):
        names = ["name-%03d" % n for n in range(200)]
        size = len(json.dumps({"activities": names, "name": "big"}).encode())
        self.assertGreater(size, 2048)
        big = self.ready(names, "big")
        self.assertEqual(self.disconnect(big, timeout=5),
                         [b"ACTW01", b"DISCONNECT", b"READY is %d bytes, over "
                          b"max_message_bytes (2048)" % size])
        self.assertNotIn("big", [worker["name"] for worker in self.stats()["workers"]])
        #  One within it joins
        self.ready(names[:100], "within")
        self.joined("within")
        self.assertIn("READY is %d bytes, over max_message_bytes (2048)" % size,
                      self.actd.log())


if __name__ == "__main__":
    unittest.main()
