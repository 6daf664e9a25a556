"""Reliability of actd: lost workers, timeouts and retries, cancellation,
back-pressure (max_queue), floods, schedule timeouts, PROGRESS, and late or
repeated answers. Shutdown with tasks in flight is in
test_reliability_shutdown.py, which uses the helpers here (RawWorker,
ReliabilityCase).

PROTOCOL.md section 2 (worker sub-protocol, heartbeats) and SEMANTICS.md
section 7 (call states, attempts, error codes). Every test asserts exact
outcomes; nothing is timed: tests wait for states, never for durations.
"""

import json
import os
import select
import subprocess
import sys
import threading
import time
import unittest

import zmq

from harness import Absent, Actd, Fail, Worker, actd_with_config, seed_call, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER_PROCESS = os.path.join(HERE, "worker_process.py")
ENDED = ("ok", "error", "timeout", "skipped", "cancelled")


class RawWorker:
    """A raw ACT/1 worker driven step by step by the test (one socket, one
    identity): it answers only when told to. While it waits for a message it
    sends HEARTBEAT every 100 ms, unless heartbeat=False (a silent worker).
    Every message received is kept in self.received, decoded, without the
    ACTW01 header: [command, args...]."""

    def __init__(self, endpoint, activities, capacity=1, name="raw"):
        self.socket = zmq.Context.instance().socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(endpoint)
        self.received = []
        self.last_sent = time.time()
        self.send("READY", {"activities": list(activities), "capacity": capacity,
                            "name": name, "lang": "python-test"})

    def send(self, command, *args):
        frames = [b"ACTW01", command.encode()]
        for arg in args:
            if not isinstance(arg, str):
                arg = json.dumps(arg)
            frames.append(arg.encode())
        self.socket.send_multipart(frames)
        self.last_sent = time.time()

    def answer(self, task, value):
        """RESULT for task with value (branch 0)."""
        self.send("RESULT", task, json.dumps(value))

    def pump(self, heartbeat=True, wait=0.05):
        """Receive what has arrived (up to wait seconds), heartbeating."""
        if heartbeat and time.time() - self.last_sent >= 0.1:
            self.send("HEARTBEAT")
        if self.socket.poll(int(wait * 1000)):
            frames = self.socket.recv_multipart()
            assert frames[0] == b"ACTW01", frames
            self.received.append([f.decode() for f in frames[1:]])
            return self.received[-1]
        return None

    def next(self, command, heartbeat=True, timeout=20.0):
        """The next message with this command (others are kept in received)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            message = self.pump(heartbeat)
            if message and message[0] == command:
                return message
        raise TimeoutError("no %s within %.0f s; received %s" % (command, timeout, self.received))

    def commands(self):
        """Commands received, heartbeats left out."""
        return [m[0] for m in self.received if m[0] != "HEARTBEAT"]

    def close(self):
        self.socket.close(0)


def echo(activity, params, meta):
    return {"params": params, "attempt": meta["attempt"]}


def outputs_of(client, context, call_id):
    """The messages of context appended for call_id (outputs and errors)."""
    history = client.value("HISTORY", context, "0", "1000")
    return [m for m in history if m.get("_callId") == call_id]


class ReliabilityCase(unittest.TestCase):
    """Helpers of the reliability tests (no tests of its own): the
    workers, raw workers and clients a test makes are closed after it;
    submit and done follow a CALL to its ACCEPTED and its DONE."""

    def setUp(self):
        self.workers = []
        self.raw = []

    def tearDown(self):
        for worker in self.workers:
            worker.stop()
        for raw in self.raw:
            raw.close()

    def client(self, actd):
        client = actd.client()
        self.addCleanup(client.close)
        return client

    def worker(self, actd, activities, handler, **kwargs):
        worker = Worker(actd.worker_endpoint, activities, handler, **kwargs)
        worker.start()
        worker.ready.wait(5)
        self.workers.append(worker)
        return worker

    def raw_worker(self, actd, activities, **kwargs):
        raw = RawWorker(actd.worker_endpoint, activities, **kwargs)
        self.raw.append(raw)
        return raw

    def submit(self, client, context, call):
        """CALL; returns (call_id, request_id) once ACCEPTED."""
        rid = client.send("CALL", context, call)
        reply = client.wait(rid, "ACCEPTED", timeout=30)
        return reply[1], rid

    def done(self, client, rid, call_id, timeout=30.0):
        reply = client.wait(rid, "DONE", timeout=timeout)
        self.assertEqual(reply[1], call_id)
        return json.loads(reply[2])


class ReliabilityTest(ReliabilityCase):
    """Lost workers, timeouts and retries, cancellation, back-pressure and
    floods, the schedule timeout, PROGRESS, and late or repeated answers."""

    # ------------------------------------------------------------------
    # Lost workers

    def test_killed_worker_task_completes_on_another_worker_once(self):
        """PROTOCOL 2: tasks held by a dead worker are dispatched again (a
        new attempt); the output is written exactly once."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            process = subprocess.Popen(
                [sys.executable, WORKER_PROCESS, actd.worker_endpoint, "work", "hold"],
                stdout=subprocess.PIPE)
            try:
                call = seed_call("work", "†state.out", n=1)
                call["_retry"] = {"max_attempts": 3, "initial_ms": 50}
                call_id, rid = self.submit(client, "kill", call)
                #  Read from the pipe itself: a buffered readline may take
                #  the TASK line with READY, and select then waits for
                #  more (the TASK may come at once: it does not wait for
                #  the commit of the call)
                printed = b""
                while ("TASK %s.1\n" % call_id).encode() not in printed:
                    ready, _, _ = select.select([process.stdout], [], [], 30)
                    self.assertTrue(ready, "the worker process got no task: %r" % printed)
                    printed += os.read(process.stdout.fileno(), 65536)
                self.assertEqual(client.status(call_id)["state"], "running")
                other = self.worker(actd, ["work"], echo)
                process.kill()           # SIGKILL: no DISCONNECT, the socket just dies
                process.wait()
                outcome = self.done(client, rid, call_id)
            finally:
                process.kill()
                process.wait()
                process.stdout.close()
            self.assertEqual(outcome, {
                "call_id": call_id, "status": "ok", "branch": 0,
                "written": ["†state.out"], "seqs": [1],
                "result": {"params": {"n": 1}, "attempt": 2}, "attempts": 2})
            self.assertEqual([t[0] for t in other.tasks], ["%s.2" % call_id])
            written = outputs_of(client, "kill", call_id)
            self.assertEqual(len(written), 1)
            self.assertEqual(written[0]["data"],
                             {"out": {"params": {"n": 1}, "attempt": 2}})
            self.assertEqual(client.status(call_id)["attempts"], 2)
            client.close()

    def test_silent_worker_is_lost_and_its_late_result_is_not_written(self):
        """PROTOCOL 2: a peer silent for liveness intervals is dead (even with
        its socket open); its task becomes a new attempt elsewhere; a later
        RESULT from it is about a task it does not hold: DISCONNECT."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            silent = self.raw_worker(actd, ["work"], name="silent")
            call_id, rid = self.submit(client, "silent", seed_call("work", "†state.out", n=2))
            task = silent.next("TASK", heartbeat=False)
            self.assertEqual(task[1], "%s.1" % call_id)
            other = self.worker(actd, ["work"], echo)
            # No HEARTBEAT from it: the broker declares it lost
            silent.next("DISCONNECT", heartbeat=False)
            outcome = self.done(client, rid, call_id)
            self.assertEqual(outcome["status"], "ok")
            self.assertEqual(outcome["attempts"], 2)
            self.assertEqual(outcome["result"], {"params": {"n": 2}, "attempt": 2})
            self.assertEqual([t[0] for t in other.tasks], ["%s.2" % call_id])
            # The late RESULT, on the same socket (the identity actd dropped)
            silent.answer(task[1], {"late": True})
            silent.next("DISCONNECT", heartbeat=False)
            self.assertEqual(silent.commands(), ["TASK", "DISCONNECT", "DISCONNECT"])
            written = outputs_of(client, "silent", call_id)
            self.assertEqual(len(written), 1)
            self.assertEqual(client.resolve("silent", "†state.out"),
                             {"params": {"n": 2}, "attempt": 2})
            status = client.status(call_id)
            self.assertEqual(status["state"], "ok")
            self.assertEqual(status["outcome"], outcome)
            client.close()

    # ------------------------------------------------------------------
    # Timeouts and retries

    def test_a_retry_whose_reference_was_erased_meanwhile_is_skipped_and_stays_ended(self):
        """SEMANTICS 5: a call whose reference went absent with no pending
        call to write it again is skipped. Here the value is erased while
        the call waits for its retry, so the call ends when the retry
        dispatches it. actd then saved the freed call as queued (found by
        fuzz_client_frames: a use after free, and a row that would bring
        the ended call back at the next start)."""
        actd = Actd(heartbeat_ms=200, liveness=3).start()
        try:
            client = self.client(actd)
            raw = self.raw_worker(actd, ["work"])
            reply = client.request("APPEND", "erased", json.dumps(
                {"type": "data", "kind": "v", "data": {"a": 1}}))
            self.assertEqual(reply[0], "OK", reply)
            call = seed_call("work", "†s.out", x="†v.a")
            call["_retry"] = {"max_attempts": 3, "initial_ms": 500}
            call_id, rid = self.submit(client, "erased", call)
            task = raw.next("TASK")
            raw.send("FAIL", task[1], json.dumps({"code": "busy", "message": "try again"}))
            reply = client.request("APPEND", "erased", json.dumps(
                {"type": "data", "kind": "v", "data": None, "_outputMethod": "erase"}))
            self.assertEqual(reply[0], "OK", reply)
            outcome = self.done(client, rid, call_id)
            self.assertEqual(outcome["status"], "skipped", outcome)
            self.assertEqual(client.status(call_id)["state"], "skipped")
            client.close()
            actd.stop()
            actd.start()
            client = self.client(actd)
            self.assertEqual(client.status(call_id)["state"], "skipped")
            raw2 = self.raw_worker(actd, ["work"])
            time.sleep(1.0)
            raw2.pump()
            self.assertEqual(raw2.commands(), [], "the ended call was dispatched again")
        finally:
            actd.finish()

    def test_the_largest_timeout_and_retry_delays_mean_never(self):
        """PROTOCOL 3: _timeout and the _retry delays are any positive
        integers. With the largest (2^63 - 1 ms) the deadline and the
        retry never come: their sums with the clock saturate."""
        never = 2 ** 63 - 1
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            raw = self.raw_worker(actd, ["work"])
            call = seed_call("work", "†s.out")
            call["_timeout"] = never
            call["_retry"] = {"max_attempts": 2, "initial_ms": never, "max_ms": never}
            call_id, rid = self.submit(client, "never", call)
            task = raw.next("TASK")
            self.assertEqual(json.loads(task[4])["deadline_ms"], never)
            raw.send("FAIL", task[1], json.dumps({"code": "busy", "message": "later"}))
            client.wait_status(call_id, ["queued"])
            time.sleep(0.5)
            self.assertEqual(client.status(call_id)["state"], "queued")
            self.assertEqual(client.request("PING"), ["PONG"])
            self.assertEqual(client.request("CANCEL", call_id)[0], "OK")
            self.assertEqual(self.done(client, rid, call_id)["status"], "cancelled")

    def test_attempt_over_timeout_is_cancelled_and_retried(self):
        """SEMANTICS 7: when an attempt's _timeout passes the broker sends
        CANCEL for that task; the retry succeeds; a late RESULT of the first
        attempt is dropped quietly and frees the worker's slot."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            raw = self.raw_worker(actd, ["work"], capacity=1)
            call = seed_call("work", "†state.out")
            call["_timeout"] = 300
            call["_retry"] = {"max_attempts": 3, "initial_ms": 50}
            call_id, rid = self.submit(client, "timeout", call)
            first = raw.next("TASK")
            self.assertEqual(first[1], "%s.1" % call_id)
            self.assertEqual(json.loads(first[4])["attempt"], 1)
            self.assertEqual(json.loads(first[4])["deadline_ms"], 300)
            self.assertEqual(raw.next("CANCEL"), ["CANCEL", "%s.1" % call_id])
            # Its slot stays taken until it answers: the late answer frees it
            raw.answer(first[1], "first")
            second = raw.next("TASK")
            self.assertEqual(second[1], "%s.2" % call_id)
            self.assertEqual(json.loads(second[4])["attempt"], 2)
            raw.answer(second[1], "second")
            outcome = self.done(client, rid, call_id)
            self.assertEqual(outcome, {
                "call_id": call_id, "status": "ok", "branch": 0,
                "written": ["†state.out"], "seqs": [1], "result": "second",
                "attempts": 2})
            self.assertEqual(raw.commands(), ["TASK", "CANCEL", "TASK"])
            written = outputs_of(client, "timeout", call_id)
            self.assertEqual([m["data"] for m in written], [{"out": "second"}])
            self.assertEqual(client.resolve("timeout", "†state.out"), "second")
            client.close()

    def test_retries_exhausted_write_the_error_to_the_last_alternative(self):
        """SEMANTICS 5 and 7: a call that fails after max_attempts writes
        {"error": ...} to the last alternative of its output path."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)

            def boom(activity, params, meta):
                raise Fail("it broke", code="boom")

            worker = self.worker(actd, ["work"], boom)
            call = seed_call("work", "†state.ok || †state.failed")
            call["_retry"] = {"max_attempts": 3, "initial_ms": 20, "backoff": 2}
            call_id, rid = self.submit(client, "retry", call)
            outcome = self.done(client, rid, call_id)
            error = {"code": "boom", "message": "it broke"}
            self.assertEqual(outcome, {
                "call_id": call_id, "status": "error", "branch": 1,
                "written": ["†state.failed"], "seqs": [1], "error": error,
                "attempts": 3})
            self.assertEqual([(t[0], t[3]["attempt"]) for t in worker.tasks],
                             [("%s.%d" % (call_id, n), n) for n in (1, 2, 3)])
            self.assertEqual(client.resolve("retry", "†state.failed"), {"error": error})
            self.assertIs(client.resolve("retry", "†state.ok"), Absent)
            self.assertEqual(client.status(call_id)["state"], "error")
            client.close()

    def test_non_retryable_failure_is_tried_once(self):
        """PROTOCOL 2: FAIL with "retryable": false ends the call at once."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)

            def refuse(activity, params, meta):
                raise Fail("bad input", code="bad_input", retryable=False)

            worker = self.worker(actd, ["work"], refuse)
            call = seed_call("work", "†state.out")
            call["_retry"] = {"max_attempts": 3, "initial_ms": 20}
            call_id, rid = self.submit(client, "once", call)
            outcome = self.done(client, rid, call_id)
            error = {"code": "bad_input", "message": "bad input"}
            # One alternative: the error is appended as an error message
            written = outputs_of(client, "once", call_id)
            self.assertEqual(len(written), 1)
            self.assertEqual(written[0]["type"], "error")
            self.assertEqual(written[0]["error"], error)
            self.assertEqual(outcome, {
                "call_id": call_id, "status": "error", "written": [],
                "seqs": [written[0]["_seq"]], "error": error, "attempts": 1})
            self.assertEqual([t[0] for t in worker.tasks], ["%s.1" % call_id])
            status = client.status(call_id)
            self.assertEqual((status["state"], status["attempts"]), ("error", 1))
            client.close()

    # ------------------------------------------------------------------
    # Cancellation

    def assert_cancelled(self, client, rid, call_id, attempts):
        self.assertEqual(client.request("CANCEL", call_id), ["OK"])
        outcome = self.done(client, rid, call_id)
        self.assertEqual(outcome["error"]["code"], "cancelled")
        del outcome["error"]
        self.assertEqual(outcome, {"call_id": call_id, "status": "cancelled",
                                   "written": [], "seqs": [], "attempts": attempts})
        status = client.status(call_id)
        self.assertEqual((status["state"], status["attempts"]), ("cancelled", attempts))

    def test_cancel_queued_call(self):
        """PROTOCOL 1: CANCEL of a call queued for a worker: OK, DONE
        cancelled, nothing written."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            call_id, rid = self.submit(client, "cq", seed_call("nobody", "†state.q"))
            self.assertEqual(client.status(call_id)["state"], "queued")
            self.assert_cancelled(client, rid, call_id, attempts=0)
            self.assertEqual(client.value("HISTORY", "cq", "0", "1000"), [])
            # Cancelling an ended call: OK, nothing changes
            self.assertEqual(client.request("CANCEL", call_id), ["OK"])
            self.assertEqual(client.status(call_id)["state"], "cancelled")
            client.close()

    def test_cancel_waiting_call(self):
        """SEMANTICS 7: a call waiting for a producer can be cancelled."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            producer, producer_rid = self.submit(client, "cw", seed_call("nobody", "†state.a"))
            waiter, rid = self.submit(client, "cw", seed_call("other", "†state.b", x="†state.a"))
            status = client.status(waiter)
            self.assertEqual((status["state"], status["waiting_on"]), ("waiting", ["†state.a"]))
            self.assert_cancelled(client, rid, waiter, attempts=0)
            self.assertEqual(client.status(producer)["state"], "queued")
            self.assert_cancelled(client, producer_rid, producer, attempts=0)
            self.assertEqual(client.value("HISTORY", "cw", "0", "1000"), [])
            client.close()

    def test_cancel_running_call(self):
        """PROTOCOL 2: CANCEL of a running call sends CANCEL to its worker;
        the worker's late RESULT is dropped quietly and frees its slot."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            raw = self.raw_worker(actd, ["work"], capacity=1)
            call_id, rid = self.submit(client, "cr", seed_call("work", "†state.first"))
            task = raw.next("TASK")
            self.assertEqual(task[1], "%s.1" % call_id)
            self.assertEqual(client.status(call_id)["state"], "running")
            self.assert_cancelled(client, rid, call_id, attempts=1)
            self.assertEqual(raw.next("CANCEL"), ["CANCEL", task[1]])
            # The slot stays taken until the worker answers
            next_id, next_rid = self.submit(client, "cr", seed_call("work", "†state.second"))
            self.assertEqual(client.status(next_id)["state"], "queued")
            raw.answer(task[1], "late")
            second = raw.next("TASK")
            self.assertEqual(second[1], "%s.1" % next_id)
            raw.answer(second[1], "served")
            outcome = self.done(client, next_rid, next_id)
            self.assertEqual((outcome["status"], outcome["result"]), ("ok", "served"))
            self.assertEqual(raw.commands(), ["TASK", "CANCEL", "TASK"])
            self.assertEqual(outputs_of(client, "cr", call_id), [])
            self.assertIs(client.resolve("cr", "†state.first"), Absent)
            self.assertEqual(client.status(call_id)["state"], "cancelled")
            client.close()

    # ------------------------------------------------------------------
    # Back-pressure and floods

    def test_busy_at_max_queue(self):
        """PROTOCOL 3: busy when the activity's queue is at max_queue."""
        config = "activities\n    limited\n        max_queue = 3\n"
        with actd_with_config(config, heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            accepted = [self.submit(client, "busy", seed_call("limited", "†state.r%d" % n, n=n))
                        for n in range(3)]
            refused = client.request("CALL", "busy", seed_call("limited", "†state.r3", n=3))
            self.assertEqual(refused[:2], ["ERROR", "busy"])
            self.assertIs(client.resolve("busy", "†state.r3"), Absent)
            self.worker(actd, ["limited"], echo)
            for n, (call_id, rid) in enumerate(accepted):
                outcome = self.done(client, rid, call_id)
                self.assertEqual((outcome["status"], outcome["result"]["params"]),
                                 ("ok", {"n": n}))
            call_id, outcome = client.call("busy", seed_call("limited", "†state.r4", n=4))
            self.assertEqual((outcome["status"], outcome["result"]["params"]), ("ok", {"n": 4}))
            client.close()

    def test_flooded_activity_does_not_hold_up_another(self):
        """A flood of calls to one activity does not delay the calls of
        another: every "quick" call ends while "flood" calls are still
        queued."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            count = 3000
            rids = [client.send("CALL", "flood", {"_tool": "flood", "i": i})
                    for i in range(count)]
            ids = [client.wait(rid, "ACCEPTED", timeout=120)[1] for rid in rids]
            self.assertEqual(len(set(ids)), count)

            def slow(activity, params, meta):
                return None

            self.worker(actd, ["flood"], slow, delay=0.1)
            quick = self.worker(actd, ["quick"], echo)
            wait_for(lambda: client.status(ids[0])["state"] in ENDED,
                     "the first flood call ended")
            for n in range(20):
                call_id, outcome = client.call("quickctx", seed_call("quick", "†state.q", n=n))
                self.assertEqual((outcome["status"], outcome["result"]["params"]),
                                 ("ok", {"n": n}))
            self.assertEqual(len(quick.tasks), 20)
            # Meanwhile most of the flood still waits for its slow worker
            self.assertEqual(client.status(ids[-1])["state"], "queued")
            stats = client.value("STATS")
            self.assertGreater(stats["activities"]["flood"]["queued"], count // 2)
            client.close()

    def test_heartbeat_flood_does_not_block_results(self):
        """A worker flooding the worker socket with HEARTBEATs does not stop
        another worker's results from being processed."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            flooder = zmq.Context.instance().socket(zmq.DEALER)
            flooder.setsockopt(zmq.LINGER, 0)
            flooder.setsockopt(zmq.SNDTIMEO, 100)
            flooder.connect(actd.worker_endpoint)
            flooder.send_multipart([b"ACTW01", b"READY",
                                    b'{"activities": ["idle"], "capacity": 1}'])
            sent = [0]
            stop = threading.Event()

            def flood():
                while not stop.is_set():
                    try:
                        flooder.send_multipart([b"ACTW01", b"HEARTBEAT"])
                        sent[0] += 1
                    except zmq.Again:
                        pass

            thread = threading.Thread(target=flood, daemon=True)
            thread.start()
            try:
                wait_for(lambda: sent[0] >= 10000, "10000 heartbeats sent")
                self.worker(actd, ["quick"], echo)
                for n in range(20):
                    call_id, outcome = client.call("hb", seed_call("quick", "†state.q", n=n))
                    self.assertEqual((outcome["status"], outcome["result"]["params"]),
                                     ("ok", {"n": n}))
                before = sent[0]
                wait_for(lambda: sent[0] > before, "the flood goes on")
                self.assertTrue(thread.is_alive())
            finally:
                stop.set()
                thread.join(5)
                flooder.close(0)
            client.close()

    # ------------------------------------------------------------------
    # Schedule timeout, PROGRESS, repeated answers

    def test_schedule_timeout_ends_call_with_no_worker(self):
        """PROTOCOL 5: no worker for the activity: the call waits up to
        schedule_timeout_ms, then ends timeout (no_worker)."""
        config = "activities\n    lonely\n        schedule_timeout_ms = 300\n"
        with actd_with_config(config, heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            call_id, rid = self.submit(client, "lonely", seed_call("lonely", "†state.x"))
            outcome = self.done(client, rid, call_id)
            written = outputs_of(client, "lonely", call_id)
            self.assertEqual(len(written), 1)
            self.assertEqual(written[0]["type"], "error")
            self.assertEqual(written[0]["error"]["code"], "no_worker")
            self.assertEqual(outcome["error"]["code"], "no_worker")
            del outcome["error"]
            self.assertEqual(outcome, {"call_id": call_id, "status": "timeout", "written": [],
                                       "seqs": [written[0]["_seq"]], "attempts": 0})
            status = client.status(call_id)
            self.assertEqual((status["state"], status["attempts"]), ("timeout", 0))
            client.close()

    def test_progress_is_shown_and_keeps_task_alive(self):
        """PROTOCOL 2: PROGRESS is shown by STATUS as progress and counts as
        a heartbeat."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client = self.client(actd)
            raw = self.raw_worker(actd, ["work"])
            call_id, rid = self.submit(client, "progress", seed_call("work", "†state.out"))
            task = raw.next("TASK")
            raw.send("PROGRESS", task[1], {"pct": 50})
            wait_for(lambda: "progress" in client.status(call_id), "progress shown")
            status = client.status(call_id)
            self.assertEqual((status["state"], status["progress"]), ("running", {"pct": 50}))
            # Only PROGRESS, no HEARTBEAT, across several liveness periods
            # (counted in the broker's own heartbeats to us)
            beats = 0
            while beats < 3 * 3:
                if time.time() - raw.last_sent >= 0.1:
                    raw.send("PROGRESS", task[1], {"pct": 50})
                message = raw.pump(heartbeat=False)
                if message and message[0] == "HEARTBEAT":
                    beats += 1
            raw.answer(task[1], "done")
            outcome = self.done(client, rid, call_id)
            self.assertEqual((outcome["status"], outcome["attempts"], outcome["result"]),
                             ("ok", 1, "done"))
            self.assertEqual(raw.commands(), ["TASK"])
            client.close()

    def first_task(self, actd, context, capacity=1):
        """A client, a raw worker of "work", and the TASK of a call with an
        output path in context: (client, raw, call_id, request_id, task)."""
        client = self.client(actd)
        raw = self.raw_worker(actd, ["work"], capacity=capacity)
        call_id, rid = self.submit(client, context, seed_call("work", "†state.out"))
        return client, raw, call_id, rid, raw.next("TASK")

    def test_repeated_result_first_wins_second_is_ignored(self):
        """PROTOCOL 2: the broker keeps the first RESULT of a task and ignores
        later ones: the second changes nothing and the worker stays (it gets
        the next task; nothing of it is retried)."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client, raw, call_id, rid, task = self.first_task(actd, "twice", capacity=2)
            #  A second task held while the repeat comes: it must not be
            #  failed or dispatched again
            held_id, held_rid = self.submit(client, "twice", seed_call("work", "†state.held"))
            held = raw.next("TASK")
            raw.answer(task[1], "first")
            raw.answer(task[1], "second")
            outcome = self.done(client, rid, call_id)
            self.assertEqual((outcome["status"], outcome["result"], outcome["attempts"]),
                             ("ok", "first", 1))
            #  Still registered: the next call's task comes to it
            next_id, next_rid = self.submit(client, "twice", seed_call("work", "†state.next"))
            task = raw.next("TASK")
            self.assertEqual(task[1], "%s.1" % next_id)
            raw.answer(task[1], "next")
            raw.answer(held[1], "held")
            self.assertEqual(self.done(client, held_rid, held_id)["attempts"], 1)
            self.assertEqual(self.done(client, next_rid, next_id)["result"], "next")
            self.assertEqual(raw.commands(), ["TASK", "TASK", "TASK"])
            self.assertEqual([m["data"] for m in outputs_of(client, "twice", call_id)],
                             [{"out": "first"}])
            self.assertEqual(client.value("RESOLVE", "twice", "†state"),
                             {"out": "first", "held": "held", "next": "next"})
            client.close()

    def test_fail_after_result_is_ignored(self):
        """PROTOCOL 2: a FAIL after the task's RESULT is a later answer: it
        does not change the outcome, and the worker stays."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client, raw, call_id, rid, task = self.first_task(actd, "resfail")
            raw.answer(task[1], "kept")
            raw.send("FAIL", task[1], {"message": "too late", "code": "late"})
            outcome = self.done(client, rid, call_id)
            self.assertEqual((outcome["status"], outcome["result"], outcome["attempts"]),
                             ("ok", "kept", 1))
            self.assertNotIn("error", outcome)
            next_id, next_rid = self.submit(client, "resfail", seed_call("work", "†state.next"))
            self.assertEqual(raw.next("TASK")[1], "%s.1" % next_id)
            self.assertEqual(raw.commands(), ["TASK", "TASK"])
            self.assertEqual(client.status(call_id)["state"], "ok")
            self.assertEqual([m["data"] for m in outputs_of(client, "resfail", call_id)],
                             [{"out": "kept"}])
            client.close()

    def test_repeat_after_65_other_answers_is_ignored_a_call_never_issued_is_not(self):
        """PROTOCOL 2: the broker ignores later RESULTs and FAILs of a task
        however many tasks the worker answered since: the task it holds
        meanwhile completes and the first answer stands. An answer for a
        task actd never gave out still gets DISCONNECT."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client, raw, first_id, first_rid, first = self.first_task(actd, "many", capacity=2)
            raw.answer(first[1], "first")
            self.assertEqual(self.done(client, first_rid, first_id)["result"], "first")
            for n in range(65):
                call_id, rid = self.submit(client, "many", seed_call("work", "†state.n"))
                raw.answer(raw.next("TASK")[1], n)
                self.assertEqual(self.done(client, rid, call_id)["result"], n)
            held = seed_call("work", "†state.held", _retry={"max_attempts": 1})
            held_id, held_rid = self.submit(client, "many", held)
            task = raw.next("TASK")
            raw.answer(first[1], "again")
            raw.send("FAIL", first[1], {"message": "too late", "code": "late"})
            raw.answer(task[1], "held")
            outcome = self.done(client, held_rid, held_id)
            self.assertEqual((outcome["status"], outcome.get("result"), outcome["attempts"]),
                             ("ok", "held", 1))
            self.assertEqual(client.status(first_id)["outcome"]["result"], "first")
            self.assertEqual([m["data"] for m in outputs_of(client, "many", first_id)],
                             [{"out": "first"}])
            raw.answer("%d.1" % (int(held_id) + 1000), "never issued")
            raw.next("DISCONNECT")
            self.assertEqual(raw.commands(), ["TASK"] * 67 + ["DISCONNECT"])
            client.close()

    def test_progress_after_result_and_a_task_never_given_get_disconnect(self):
        """PROTOCOL 2: PROGRESS about a task the worker no longer holds, and a
        RESULT for a task id it was never given, are answered DISCONNECT (only
        a repeated RESULT or FAIL is ignored)."""
        with Actd(heartbeat_ms=200, liveness=3) as actd:
            client, raw, call_id, rid, task = self.first_task(actd, "stray")
            raw.answer(task[1], "done")
            self.assertEqual(self.done(client, rid, call_id)["result"], "done")
            raw.send("PROGRESS", task[1], {"pct": 100})
            raw.next("DISCONNECT")
            other = self.raw_worker(actd, ["work"], name="other")
            call_id, rid = self.submit(client, "stray", seed_call("work", "†state.again"))
            task = other.next("TASK")
            other.answer("%s.7" % call_id, "never given")
            other.next("DISCONNECT")
            #  The task it held is dispatched again, to the next worker
            echo_worker = self.worker(actd, ["work"], echo)
            outcome = self.done(client, rid, call_id)
            self.assertEqual((outcome["status"], outcome["attempts"]), ("ok", 2))
            self.assertEqual([t[0] for t in echo_worker.tasks], ["%s.2" % call_id])
            client.close()

if __name__ == "__main__":
    unittest.main()
