"""What a peer can do to actd's log (docs/operations.md section 4 and
section 8, "Refusals in the log"): no line of its own making, and a flood
of refused requests costs a few lines, not one each."""

import json
import re
import time
import unittest

import zmq

from harness import Actd, actd_with_config, wait_for


class LogPeersTest(unittest.TestCase):

    def setUp(self):
        #  info: actd's default level, at which refusals are logged
        self.actd = Actd(args=["--log-level", "info"]).start()
        self.addCleanup(self.stop)
        self.client = self.actd.client()
        self.addCleanup(self.client.close)

    def stop(self):
        self.assertEqual(self.actd.stop(), 0)
        self.actd.cleanup()

    def test_control_characters_from_peers_do_not_make_lines(self):
        """A tool name and a worker's name with line breaks in them: before,
        each became a line of the log that looked like actd's own."""
        forged = "x\nW: actd 2026-01-01T00:00:00.000Z FORGED-BY-CLIENT\r\x1b[2J"
        reply = self.client.request("CALL", "c", {"_tool": forged, "_outputPath": "\u2020o"})
        self.assertEqual(reply[0], "ACCEPTED", reply)
        #  Cancelled, the call is logged with its tool
        self.assertEqual(self.client.request("CANCEL", reply[1])[0], "OK")
        worker = zmq.Context.instance().socket(zmq.DEALER)
        worker.setsockopt(zmq.LINGER, 0)
        worker.connect(self.actd.worker_endpoint)
        self.addCleanup(worker.close, 0)
        worker.send_multipart([b"ACTW01", b"READY", json.dumps(
            {"activities": ["t"], "name": "w\nN: actd 2026-01-01T00:00:00.000Z FORGED-BY-WORKER"}
        ).encode()])
        wait_for(lambda: "FORGED-BY-WORKER" in self.actd.log(), "the worker's name logged")
        wait_for(lambda: "FORGED-BY-CLIENT" in self.actd.log(), "the tool's name logged")
        lines = [line for line in self.actd.log().splitlines() if "FORGED" in line]
        self.assertTrue(lines)
        for line in lines:
            #  Each is one of actd's lines, the peer's text escaped in it
            self.assertNotRegex(line, r"^[EWNID]: actd \S+ FORGED", lines)
            self.assertNotIn("\r", line)
            self.assertNotIn("\x1b", line)
        self.assertIn("\\nW: actd", self.actd.log())

    def test_workers_that_come_and_go_cost_a_few_lines(self):
        """Worker joins and losses were logged each time: a worker joining
        and leaving in a loop wrote thousands of lines a second (an audit
        of the logs). At most 50 of each kind are logged each 10 s; the
        rest are counted, and the count is logged when the 10 s end."""
        context = zmq.Context.instance()
        for n in range(120):
            worker = context.socket(zmq.DEALER)
            worker.setsockopt(zmq.LINGER, 2000)     #  Its two messages go
            worker.setsockopt(zmq.ROUTING_ID, b"churn-%d" % n)
            worker.connect(self.actd.worker_endpoint)
            worker.send_multipart([b"ACTW01", b"READY", json.dumps(
                {"activities": ["churn"], "name": "churn-%d" % n}).encode()])
            worker.send_multipart([b"ACTW01", b"DISCONNECT"])
            worker.close()
        wait_for(lambda: "left out" in self.actd.log(), "the count of the lines left out", 30)
        wait_for(lambda: self.actd.log().count("'worker joined' lines left out") == 1
                 and self.actd.log().count("'worker lost' lines left out") == 1,
                 "both counts", 30)
        log = self.actd.log()
        joined = len(re.findall(r"(?m)^I: actd \S+ worker churn-\d+ joined \(", log))
        lost = len(re.findall(r"(?m)^N: actd \S+ worker churn-\d+ lost \(", log))
        self.assertEqual((joined, lost), (50, 50))
        left_joined = int(re.search(r"(\d+) more 'worker joined' lines left out", log).group(1))
        left_lost = int(re.search(r"(\d+) more 'worker lost' lines left out", log).group(1))
        self.assertEqual((joined + left_joined, lost + left_lost), (120, 120))

    def test_a_flood_of_refused_requests_costs_a_few_lines(self):
        """2,000 refused requests of three kinds from one client: before,
        2,000 lines; now one line per kind, then the count of repeats."""
        kinds = [("STATUS", "9999999"), ("CALL", "c", "{not json"),
                 ("HISTORY", "c", "one", "1")]
        before = self.actd.log().count("refused")
        ids = [self.client.send(*kinds[n % len(kinds)]) for n in range(2000)]
        for rid in ids:
            self.assertEqual(self.client.wait(rid, timeout=60)[0], "ERROR")
        self.assertEqual(self.client.request("PING"), ["PONG"])
        lines = [line for line in self.actd.log().splitlines() if "refused" in line]
        print("2,000 refused requests: %d lines" % (len(lines) - before))
        self.assertLessEqual(len(lines) - before, 10, lines[-20:])
        #  Each kind was said once, with what was wrong
        for code in ("not_found", "bad_json", "bad_argument"):
            self.assertTrue(any(re.search(r"refused: %s: " % code, line) for line in lines),
                            (code, lines))

    def worker(self, identity):
        worker = zmq.Context.instance().socket(zmq.DEALER)
        worker.setsockopt(zmq.LINGER, 0)
        worker.setsockopt(zmq.ROUTING_ID, identity)
        worker.connect(self.actd.worker_endpoint)
        self.addCleanup(worker.close, 0)
        return worker

    @staticmethod
    def disconnects(worker, count):
        """Read count DISCONNECTs from worker (each refusal sends one)."""
        got = 0
        deadline = time.time() + 60
        while got < count and time.time() < deadline:
            if worker.poll(1000):
                frames = worker.recv_multipart()
                if frames[:2] == [b"ACTW01", b"DISCONNECT"]:
                    got += 1
        return got

    def test_a_peer_varying_its_errors_is_logged_once(self):
        """300 READYs from one worker, each refused with an error naming
        its bad value: before, each error text was a kind of its own, the
        first 256 were logged and filled the table of peers, and another
        peer's misbehaviour then went unlogged. Now they are one kind
        (READY refused: bad_argument): one line, then the count."""
        before = len(self.actd.log())
        varying = self.worker(b"varying-worker")
        count = 300
        for n in range(count):
            varying.send_multipart([b"ACTW01", b"READY", json.dumps(
                {"activities": ["vary"], "tools": {"bad-%d" % n: {}}}).encode()])
        self.assertEqual(self.disconnects(varying, count), count)
        key = b"varying-worker".hex().upper()
        grown = self.actd.log()[before:]
        lines = [line for line in grown.splitlines() if "disconnecting it" in line]
        self.assertEqual(len(lines), 1, lines[:5])
        self.assertIn("tools names bad-0,", lines[0])
        #  Another peer's misbehaviour is logged at once, named
        second = self.worker(b"second-worker")
        second.send_multipart([b"ACTW01", b"HEARTBEAT"])
        self.assertEqual(self.disconnects(second, 1), 1)
        wait_for(lambda: "worker %s: not registered" % b"second-worker".hex().upper()
                 in self.actd.log()[before:], "the second worker's line", 5)
        #  Every READY is accounted for when the 10 s end
        counted = re.compile(r"READY refused: bad_argument \(and (\d+) more like it from %s "
                             % key)
        wait_for(lambda: counted.search(self.actd.log()), "the count of the repeats", 30)
        self.assertEqual(int(counted.search(self.actd.log()).group(1)), count - 1)

    def test_other_peers_are_counted_per_reason(self):
        """Past the 256 peers followed, the repeats of the others were
        counted together under the last reason seen: 4 clients' garbage
        and 40 worker HEARTBEATs came out as 43 HEARTBEATs. Now each
        reason has its own count."""
        before = len(self.actd.log())
        clients = [self.actd.client(identity=b"peer-%04d" % n) for n in range(260)]
        for client in clients:
            client.send_raw([b"garbage", "0"])
        for client in clients:
            self.assertEqual(client.request("PING", timeout=60), ["PONG"])
            client.close()
        workers = [self.worker(b"quiet-%02d" % n) for n in range(20)]
        for worker in workers:
            for _ in range(2):
                worker.send_multipart([b"ACTW01", b"HEARTBEAT"])
        for worker in workers:
            self.assertEqual(self.disconnects(worker, 2), 2)

        def accounted(what):
            """Lines of what, and the counts of the other peers' repeats."""
            total = 0
            for line in self.actd.log()[before:].splitlines():
                if what not in line:
                    continue
                found = re.search(r"\(and (\d+) more like it from other peers", line)
                total += int(found.group(1)) if found else 1
            return total
        wait_for(lambda: self.actd.log()[before:].count("more like it from other peers") >= 2,
                 "the other peers' counts", 30)
        self.assertEqual(accounted("not registered: send READY first"), 40)
        self.assertEqual(accounted("without a request id or ACTC01 header"), 260)


    def test_bad_fail_and_progress_bodies_are_logged(self):
        """A FAIL body that does not parse counts as {} and a PROGRESS one
        is ignored (PROTOCOL.md section 3), but actd said nothing of
        either: the call failed "the activity failed", STATUS showed no
        progress, and the operator had no why. Now each is logged, naming
        the worker, the task and the parse error, once per worker and kind
        (50 bad PROGRESS bodies: one line)."""
        before = len(self.actd.log())
        worker = self.worker(b"bad-bodies")
        worker.send_multipart([b"ACTW01", b"READY", json.dumps(
            {"activities": ["bodies"], "name": "bodies-worker"}).encode()])
        rid = self.client.send("CALL", "c", json.dumps(
            {"_tool": "bodies", "_outputPath": "\u2020s.x",
             "_retry": {"max_attempts": 1}}))
        self.assertEqual(self.client.wait(rid, timeout=10)[0], "ACCEPTED")
        self.assertTrue(worker.poll(10000), "no TASK")
        frames = worker.recv_multipart()
        self.assertEqual(frames[1], b"TASK", frames[:2])
        task = frames[2]
        for _ in range(50):
            worker.send_multipart([b"ACTW01", b"PROGRESS", task, b"{\"pct\": 5"])
        worker.send_multipart([b"ACTW01", b"FAIL", task, b"{\"code\": \"w_x\""])
        done = json.loads(self.client.wait(rid, "DONE", timeout=10)[2])
        #  As documented: the FAIL read as {}, the progress ignored
        self.assertEqual(done["error"]["code"], "activity_failed", done)
        self.assertNotIn("progress", self.client.status(done["call_id"]))
        grown = lambda: self.actd.log()[before:]
        wait_for(lambda: "bad FAIL body" in grown(), "the FAIL's line", 5)
        progress = [line for line in grown().splitlines() if "bad PROGRESS body for task" in line]
        self.assertEqual(len(progress), 1, progress[:5])
        self.assertIn("worker bodies-worker: bad PROGRESS body for task %s ignored: "
                      % task.decode(), progress[0])
        fail = [line for line in grown().splitlines() if "bad FAIL body" in line]
        self.assertEqual(len(fail), 1, fail)
        self.assertIn("read as {}: ", fail[0])


class BusyLogTest(unittest.TestCase):
    """Requests refused busy at a limit of actd's (docs/operations.md
    section 4): logged at notice, each limit apart, naming the client."""

    def test_each_limit_hit_is_logged_at_notice_naming_the_client(self):
        """Before, they were logged at info, all three in one slot per
        client (the first hit hid the others for 10 s), and the line did
        not say which client it was."""
        actd = actd_with_config("server\n    max_queued_calls = 3\n    max_watches = 1\n"
                                "activities\n    narrow\n        max_queue = 1\n",
                                args=["--log-level", "notice"]).start()
        self.addCleanup(actd.cleanup)
        self.addCleanup(actd.stop)
        client = actd.client(identity=b"busy-client")
        self.addCleanup(client.close)
        peer = b"busy-client".hex().upper()
        before = len(actd.log())
        call = lambda tool: json.dumps({"_tool": tool})
        #  No worker: each call waits in its activity's queue
        self.assertEqual(client.request("CALL", "c", call("narrow"))[0], "ACCEPTED")
        for _ in range(2):
            self.assertEqual(client.request("CALL", "c", call("narrow"))[:2], ["ERROR", "busy"])
        for tool in ("wide1", "wide2"):
            self.assertEqual(client.request("CALL", "c", call(tool))[0], "ACCEPTED")
        for _ in range(2):
            self.assertEqual(client.request("CALL", "c", call("wide3"))[:2], ["ERROR", "busy"])
        client.send("WATCH", "c", "0")     #  Open: no reply until an event
        for _ in range(2):
            self.assertEqual(client.request("WATCH", "c", "0")[:2], ["ERROR", "busy"])
        self.assertEqual(client.request("PING"), ["PONG"])
        lines = [line for line in actd.log()[before:].splitlines() if "refused" in line]
        for limit, why in (("max_queue", "activity narrow has 1 calls waiting"),
                           ("max_queued_calls", "3 calls are waiting or queued"),
                           ("max_watches", "1 watches are open")):
            found = [line for line in lines if "%s reached" % limit in line]
            self.assertEqual(len(found), 1, (limit, lines))
            self.assertRegex(found[0], r"^N: actd \S+ client %s \(key \(none\)\): request "
                             r"(CALL|WATCH) refused: busy: %s reached: " % (peer, limit))
            self.assertIn(why, found[0])
        self.assertEqual(len(lines), 3, lines)


if __name__ == "__main__":
    unittest.main()
