"""Where a lost worker's tasks go (PROTOCOL.md 2: "Tasks held by a dead
worker are dispatched again (a new attempt) or failed with worker_lost
when attempts are used up"; 1: calls "dispatched in the order they became
ready (first in, first out), retries going to the front"). Found by an
audit of the worker side: a retry went to a worker judged dead in the
same heartbeat round, and a lost worker's tasks came back newest first.

Each worker here is driven frame by frame from the test (raw ACT/1 on a
DEALER), so that when it speaks, and when it falls silent, is exact.

Run: ACTD_BIN=build-x/bin/actd /usr/bin/python3 -m unittest -v test_worker_lost
"""

import json
import threading
import time
import unittest

import zmq

from harness import DAGGER, Actd


class RawWorker:
    """A worker that sends only what the test says: READY at once, then
    HEARTBEATs while collect() runs (when asked), RESULTs when told."""

    def __init__(self, endpoint, activity, capacity=1, identity=None, ready=True):
        self.socket = zmq.Context.instance().socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        if identity:
            self.socket.setsockopt(zmq.ROUTING_ID, identity)
        self.socket.connect(endpoint)
        self.ready = json.dumps({"activities": [activity], "capacity": capacity,
                                 "name": (identity or b"raw").decode()}).encode()
        self.disconnects = 0            # DISCONNECTs received
        self.answer_disconnect = False  # READY again on DISCONNECT, as libraries do
        if ready:
            self.send(b"READY", self.ready)

    def send(self, *frames):
        self.socket.send_multipart([b"ACTW01"] + list(frames))

    def collect(self, seconds, beat=True):
        """The task ids of the TASKs that come within seconds, in order;
        HEARTBEAT every 100 ms meanwhile when beat."""
        tasks, beaten, deadline = [], 0.0, time.time() + seconds
        while time.time() < deadline:
            if beat and time.time() - beaten > 0.1:
                self.send(b"HEARTBEAT")
                beaten = time.time()
            if self.socket.poll(20):
                frames = self.socket.recv_multipart()
                if frames[1] == b"TASK":
                    tasks.append(frames[2].decode())
                elif frames[1] == b"DISCONNECT":
                    self.disconnects += 1
                    if self.answer_disconnect:
                        self.send(b"READY", self.ready)
        return tasks

    def close(self):
        self.socket.close(0)


class WorkerCase(unittest.TestCase):
    """One actd a test, its workers raw."""

    heartbeat_ms = 200

    def setUp(self):
        self.actd = Actd(heartbeat_ms=self.heartbeat_ms, liveness=3).start()
        self.addCleanup(self.actd.finish)
        self.client = self.actd.client()
        self.addCleanup(self.client.close)
        self.workers = []
        self.addCleanup(lambda: [worker.close() for worker in self.workers])

    def worker(self, *args, **kwargs):
        worker = RawWorker(self.actd.worker_endpoint, *args, **kwargs)
        self.workers.append(worker)
        return worker


class WorkerLostTest(WorkerCase):

    def test_a_retry_never_goes_to_a_worker_judged_dead_in_the_same_round(self):
        """A holds a call of two attempts; A and B fall silent at the same
        moment, C keeps beating: the retry is C's. Before, it often went
        to B (lost in the same round), and the call ended worker_lost."""
        for trial in range(4):
            activity = "round-%d" % trial
            first = self.worker(activity, identity=b"A%d" % trial)
            time.sleep(0.05)
            second = self.worker(activity, identity=b"B%d" % trial)
            time.sleep(0.05)
            alive = self.worker(activity, identity=b"C%d" % trial)
            time.sleep(0.05)
            rid = self.client.send("CALL", "lost-%d" % trial,
                                   {"_tool": activity, "_outputPath": DAGGER + "s.x",
                                    "_retry": {"max_attempts": 2}})
            # B and C beat while A takes its task, so that all three are
            # alive at the last words however late this process runs (on a
            # loaded machine 0.6 s of silence before them judged B and C
            # dead first, and the retry found no one: "0 != 1 : trial 2")
            taken, until = [], time.time() + 0.3
            while time.time() < until:
                taken += first.collect(0.05)
                second.send(b"HEARTBEAT")
                alive.send(b"HEARTBEAT")
            self.assertEqual(len(taken), 1)
            for worker in (first, second, alive):     # the last words, together
                worker.send(b"HEARTBEAT")
            retried = alive.collect(2.0)
            self.assertEqual(len(retried), 1, "trial %d" % trial)
            alive.send(b"RESULT", retried[0].encode(), b'"from C"')
            self.assertEqual(second.collect(0.1, beat=False), [], "trial %d" % trial)
            done = json.loads(self.client.wait(rid, "DONE", timeout=10)[2])
            self.assertEqual((done["status"], done["attempts"]), ("ok", 2), done)

    def test_a_lost_workers_tasks_come_back_oldest_first(self):
        """Five calls held by a worker that leaves go to the next worker
        (capacity 1) in the order they were submitted; before, newest
        first."""
        holder = self.worker("fifo", capacity=5, identity=b"holder")
        time.sleep(0.1)
        for n in range(5):
            self.client.send("CALL", "fifo", {"_tool": "fifo", "_outputPath": DAGGER + "s.a%d" % n})
        held = holder.collect(0.5)
        self.assertEqual(len(held), 5)
        holder.send(b"DISCONNECT")
        time.sleep(0.2)
        taker = self.worker("fifo", capacity=1, identity=b"taker")
        order = []
        deadline = time.time() + 10
        while len(order) < 5 and time.time() < deadline:
            for task in taker.collect(0.25):
                order.append(task)
                taker.send(b"RESULT", task.encode(), b"1")
        calls = [int(task.split(".")[0]) for task in order]
        self.assertEqual(calls, sorted(int(task.split(".")[0]) for task in held), order)

    def test_a_silent_worker_is_found_while_another_floods_progress(self):
        """D falls silent holding a task while F streams PROGRESS faster
        than actd reads: D is still found lost and its call runs on E.
        Before, workers were judged only when the worker socket was read
        empty, which a flood never let happen (the audit saw D's call
        wait out a 6 s flood; with 200 KB PROGRESS, 20 s after it)."""
        flooder = self.worker("flood", identity=b"F")
        silent = self.worker("quiet", identity=b"D")
        time.sleep(0.1)
        self.client.send("CALL", "flood", {"_tool": "flood", "_outputPath": DAGGER + "s.f"})
        rid = self.client.send("CALL", "flood", {"_tool": "quiet", "_outputPath": DAGGER + "s.d"})
        task = flooder.collect(0.3)[0]
        self.assertEqual(len(silent.collect(0.3)), 1)
        spare = self.worker("quiet", identity=b"E")
        stop = threading.Event()

        def flood():
            body = json.dumps({"p": "x" * 100}).encode()
            while not stop.is_set():
                flooder.send(b"PROGRESS", task.encode(), body)
        thread = threading.Thread(target=flood)
        thread.start()
        try:
            retried, started = [], time.time()
            while not retried and time.time() - started < 5:
                retried = spare.collect(0.1)
        finally:
            stop.set()
            thread.join()
        self.assertEqual(len(retried), 1, "D's call did not reach E during the flood")
        self.assertLess(time.time() - started, 4)
        spare.send(b"RESULT", retried[0].encode(), b'"from E"')
        done = json.loads(self.client.wait(rid, "DONE", timeout=10)[2])
        self.assertEqual((done["status"], done["result"]), ("ok", "from E"), done)

    def test_a_call_that_failed_for_good_is_a_warning(self):
        """docs/operations.md, Logs: warning is "calls that failed for
        good". A FAIL that may not be retried ended the call at info only,
        under an operator's log/level = warning."""
        worker = self.worker("fatal", identity=b"fatal")
        rid = self.client.send("CALL", "fatal", {"_tool": "fatal", "_outputPath": DAGGER + "s.f"})
        task = worker.collect(0.5)[0]
        worker.send(b"FAIL", task.encode(),
                    json.dumps({"message": "bad input", "retryable": False}).encode())
        done = json.loads(self.client.wait(rid, "DONE", timeout=10)[2])
        self.assertEqual(done["status"], "error", done)
        self.assertRegex(self.actd.log(), r"(?m)^W: actd \S+ call %s \(fatal\) failed at "
                         r"attempt 1, not to be retried: \S+: bad input$" % done["call_id"])

    def test_a_long_failure_message_is_cut_in_the_log(self):
        """A worker's error message may be a MiB (max_message_bytes) and
        carry the call's parameters: the log showed it whole, twice (an
        audit of the logs: 34 MB/s of log from one worker). The log shows
        its first 200 bytes; the outcome keeps it whole."""
        worker = self.worker("wordy", identity=b"wordy")
        rid = self.client.send("CALL", "wordy", {"_tool": "wordy", "_outputPath": DAGGER + "s.w"})
        task = worker.collect(0.5)[0]
        message = "\u00e9" * 150 + "secret=hunter2" + "x" * 50000
        worker.send(b"FAIL", task.encode(),
                    json.dumps({"message": message, "retryable": False}).encode())
        done = json.loads(self.client.wait(rid, "DONE", timeout=10)[2])
        self.assertEqual(done["error"]["message"], message)
        lines = [line for line in self.actd.log().splitlines() if "call %s " % done["call_id"]
                 in line and "wordy" in line and ("failed" in line or "ended" in line)]
        self.assertEqual(len(lines), 2, lines)
        for line in lines:
            self.assertTrue(line.endswith(": " + "\u00e9" * 100 + "..."), line[-300:])
            self.assertNotIn("hunter2", line)


class UnreachableTest(WorkerCase):

    #  The worker is not judged silent during the test (6 s): only the
    #  TASK that found no route can tell actd it is gone
    heartbeat_ms = 2000

    def test_a_task_sent_to_a_connection_gone_goes_back(self):
        """A worker with a fixed routing id loses its connection; a TASK
        sent meanwhile finds no route and is dropped by the socket. Before,
        actd counted it as held: the worker, back on its routing id (no
        new READY) and idle, kept its only slot taken for good, and the
        call ended timeout. Now the worker is lost when the TASK finds no
        route, and the call runs once it is READY again."""
        worker = self.worker("gap", identity=b"fixed-id")
        worker.collect(0.3)
        worker.close()
        time.sleep(0.5)         # libzmq has seen the connection go
        rid = self.client.send("CALL", "gap", {"_tool": "gap", "_outputPath": DAGGER + "s.a",
                                               "_timeout": 20000})
        self.assertEqual(self.client.wait(rid, "ACCEPTED")[0], "ACCEPTED")
        time.sleep(0.1)         # the TASK found no route
        back = self.worker("gap", identity=b"fixed-id", ready=False)
        back.answer_disconnect = True
        tasks, deadline = [], time.time() + 4
        while not tasks and time.time() < deadline:
            tasks = back.collect(0.2)
        self.assertEqual(len(tasks), 1, "the call never came back to the worker")
        self.assertGreaterEqual(back.disconnects, 1)    # told to send READY first
        back.send(b"RESULT", tasks[0].encode(), b'"ran"')
        done = json.loads(self.client.wait(rid, "DONE", timeout=10)[2])
        self.assertEqual((done["status"], done["result"]), ("ok", "ran"), done)

if __name__ == "__main__":
    unittest.main()
