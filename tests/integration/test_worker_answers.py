"""What the C worker library answers (act_worker.h), driven through
tests/helpers/worker_answers.c: against a fake broker (a ROUTER socket in
the test speaking ACTW01), so that what the broker sends is under the
test's control, and against a real actd.

- A result over the worker's max_message_bytes is not sent: the task fails
  activity_failed, not retryable (a fire-and-forget task's result goes as
  null). Before, it was sent: actd fails such an attempt itself, but one
  past 4 x max_message_bytes + 65536 it does not read, and libzmq dropped
  the worker's connection, every task running on it failing worker_lost.
  Progress over it is not sent either.
- A TASK whose frames are not a task id, an activity, params and meta
  that read is answered FAIL bad_task (it was dropped, or failed with no
  code), an activity not served FAIL unknown_activity, retryable, as the
  Python and Node libraries answer them: the broker frees the slot.
- The same task id given again on a later connection, while the first
  task's handler still runs, is a task of its own: the first one's answer
  no longer makes the worker forget the second (whose CANCEL was then
  lost)."""

import json
import signal
import subprocess
import time
import unittest

import zmq

from harness import DAGGER, Actd, end_process, find_binary, wait_for

OK_META = {"context": "c", "call_id": "1", "attempt": 1, "deadline_ms": 60000,
           "branches": 1, "discard": False}


class FakeBroker:
    """A ROUTER on a free port that speaks the broker's side of ACTW01."""

    def __init__(self):
        self.socket = zmq.Context.instance().socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        port = self.socket.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = "tcp://127.0.0.1:%d" % port

    def expect(self, command, timeout=10.0):
        """(identity, args) of the next message with command, answering
        HEARTBEATs meanwhile so the worker sees a live broker."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.socket.poll(int(left * 1000)):
                raise AssertionError("no %s from the worker within %s s" % (command, timeout))
            identity, header, verb, *args = self.socket.recv_multipart()
            if header != b"ACTW01":
                raise AssertionError("not ACTW01: %r" % header)
            if verb == b"HEARTBEAT":
                self.send(identity, b"HEARTBEAT")
                continue
            if verb != command:
                raise AssertionError("%s while waiting for %s: %r" % (verb, command, args))
            return identity, args

    def idle(self, seconds):
        """Answer HEARTBEATs for seconds (silent, the broker would be
        judged lost); AssertionError on anything else."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.socket.poll(max(1, int((deadline - time.monotonic()) * 1000))):
                identity, _, verb, *args = self.socket.recv_multipart()
                if verb != b"HEARTBEAT":
                    raise AssertionError("%s while idle: %r" % (verb, args))
                self.send(identity, b"HEARTBEAT")

    def until_disconnect(self, timeout=15.0):
        """[(verb, args)] of what the worker sent (but HEARTBEATs, answered)
        up to and with its DISCONNECT."""
        seen, deadline = [], time.monotonic() + timeout
        while not seen or seen[-1][0] != b"DISCONNECT":
            left = deadline - time.monotonic()
            if left <= 0 or not self.socket.poll(int(left * 1000)):
                raise AssertionError("no DISCONNECT within %s s: %r" % (timeout, seen))
            identity, _, verb, *args = self.socket.recv_multipart()
            if verb == b"HEARTBEAT":
                self.send(identity, b"HEARTBEAT")
            else:
                seen.append((verb, args))
        return seen

    def send(self, identity, *frames):
        self.socket.send_multipart([identity, b"ACTW01"] + list(frames))

    def task(self, identity, task_id, activity, params, meta=None, frames=None):
        """Send a TASK; frames, when given, replace its own."""
        if frames is None:
            frames = [task_id.encode(), activity.encode(), json.dumps(params).encode(),
                      json.dumps(OK_META if meta is None else meta).encode()]
        self.send(identity, b"TASK", *frames)

    def answer(self, identity, task_id, activity, params, meta=None, frames=None):
        """(verb, body) of the worker's answer to one TASK."""
        self.task(identity, task_id, activity, params, meta, frames)
        while True:
            sender, args = self.expect_answer()
            if args[1] == task_id.encode():
                return args[0], json.loads(args[2])

    def expect_answer(self, timeout=10.0):
        """The next RESULT or FAIL: (identity, [verb, task id, body...])."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.socket.poll(int(left * 1000)):
                raise AssertionError("no answer within %s s" % timeout)
            identity, _, verb, *args = self.socket.recv_multipart()
            if verb == b"HEARTBEAT":
                self.send(identity, b"HEARTBEAT")
            elif verb in (b"RESULT", b"FAIL"):
                return identity, [verb] + args

    def close(self):
        self.socket.close(0)


class FakeBrokerCase(unittest.TestCase):
    """The worker against a fake broker (no tests of its own)."""

    def start(self, *args):
        """The worker, connected to a fake broker: its identity."""
        self.broker = FakeBroker()
        self.addCleanup(self.broker.close)
        self.worker = subprocess.Popen([find_binary("worker_answers"), self.broker.endpoint]
                                       + [str(arg) for arg in args],
                                       stdout=subprocess.PIPE, text=True)
        self.addCleanup(self.worker.stdout.close)
        self.addCleanup(end_process, self.worker)
        identity, ready = self.broker.expect(b"READY")
        self.assertEqual(json.loads(ready[0])["capacity"], 4)
        return identity

    def printed(self):
        """What the worker printed, once it ended (not its log lines)."""
        end_process(self.worker)
        return [line for line in self.worker.stdout.read().split("\n")
                if line.startswith(("progress ", "cancel ", "stopped"))]


class FakeBrokerTest(FakeBrokerCase):

    def test_a_result_over_max_message_bytes_fails_its_task(self):
        identity = self.start(1000)
        verb, body = self.broker.answer(identity, "1.1", "big", {"n": 1998})
        self.assertEqual((verb, body), (b"FAIL", {
            "code": "activity_failed", "retryable": False,
            "message": "the result is 2000 bytes, over max_message_bytes (1000)"}))
        #  At the limit it is sent
        verb, body = self.broker.answer(identity, "1.2", "big", {"n": 998})
        self.assertEqual((verb, body), (b"RESULT", "x" * 998))
        #  A fire-and-forget task's result, which actd throws away: null
        verb, body = self.broker.answer(identity, "1.3", "big", {"n": 1998},
                                        dict(OK_META, discard=True))
        self.assertEqual((verb, body), (b"RESULT", None))

    def test_a_failure_over_max_message_bytes_is_cut_to_fit(self):
        # Its message was cut to 64 KiB, still over a limit below that
        identity = self.start(1000)
        verb, body = self.broker.answer(identity, "1.1", "fail", {"n": 5000})
        self.assertEqual((verb, body["code"], body["retryable"]), (b"FAIL", "w_long", False))
        self.assertEqual(body["message"], "f" * 500 + "... (cut: the failure was 5048 bytes)")
        self.assertLessEqual(len(json.dumps(body)), 1000)

    def test_the_default_is_actds_default(self):
        identity = self.start()
        verb, body = self.broker.answer(identity, "1.1", "big", {"n": (1 << 20) + 1})
        self.assertEqual((verb, body["code"], body["message"]), (
            b"FAIL", "activity_failed",
            "the result is 1048579 bytes, over max_message_bytes (1048576)"))
        verb, body = self.broker.answer(identity, "1.2", "big", {"n": (1 << 20) - 2})
        self.assertEqual((verb, len(body)), (b"RESULT", (1 << 20) - 2))

    def test_progress_over_max_message_bytes_is_not_sent(self):
        identity = self.start(1000)
        self.broker.task(identity, "1.1", "bigprogress", {"n": 1998})
        _, args = self.broker.expect_answer()
        self.assertEqual(args[:3], [b"RESULT", b"1.1", b'"done"'])
        self.broker.task(identity, "1.2", "bigprogress", {"n": 500})
        _, args = self.broker.expect(b"PROGRESS")
        self.assertEqual(args, [b"1.2", json.dumps("p" * 500).encode()])
        self.assertEqual(self.printed()[:2], ["progress -1", "progress 0"])

    def test_tasks_that_do_not_read_fail_bad_task(self):
        identity = self.start()
        meta = json.dumps(OK_META).encode()
        cases = [
            ("a TASK of 3 frames, not 4 (task id, activity, params, meta)",
             [b"2.1", b"big", b"{}"]),
            ("a TASK of 5 frames, not 4 (task id, activity, params, meta)",
             [b"2.2", b"big", b"{}", meta, b"extra"]),
            ("a TASK of 1 frames, not 4 (task id, activity, params, meta)", [b"2.3"]),
            ("the task does not parse: params: ", [b"2.4", b"big", b"{not json", meta]),
            ("the task does not parse: meta: ", [b"2.5", b"big", b"{}", b"[1"]),
            ("the task does not parse: the meta is not an object",
             [b"2.6", b"big", b"{}", b"[1, 2]"]),
            ("the task does not parse: attempt is not an integer",
             [b"2.7", b"big", b"{}", json.dumps(dict(OK_META, attempt="x")).encode()]),
            ("the task does not parse: instance is not a string",
             [b"2.8", b"big", b"{}", json.dumps(dict(OK_META, instance=3)).encode()]),
        ]
        for message, frames in cases:
            verb, body = self.broker.answer(identity, frames[0].decode(), "", None,
                                            frames=frames)
            self.assertEqual((verb, body["code"], body["retryable"]),
                             (b"FAIL", "bad_task", False), body)
            self.assertTrue(body["message"].startswith(message), (message, body))
        #  A deadline_ms of null is a task with no deadline
        verb, body = self.broker.answer(identity, "2.9", "big", {"n": 3},
                                        dict(OK_META, deadline_ms=None))
        self.assertEqual((verb, body), (b"RESULT", "xxx"))
        verb, body = self.broker.answer(identity, "2.10", "nothing-here", {})
        self.assertEqual((verb, body), (b"FAIL", {
            "code": "unknown_activity", "retryable": True,
            "message": "this worker has no such activity"}))

    def test_an_id_given_again_on_a_new_connection_is_a_task_of_its_own(self):
        identity = self.start()
        self.broker.task(identity, "1.1", "sleep", {"ms": 600})
        #  As a broker restarted on a fresh store: DISCONNECT, a new READY,
        #  and the same task id again
        self.broker.send(identity, b"DISCONNECT", b"broker restarting")
        identity, _ = self.broker.expect(b"READY")
        self.broker.task(identity, "1.1", "sleep", {"ms": 3000})
        #  The first one's answer (after 600 ms) is dropped: its
        #  connection is gone. Then the second one is cancelled
        self.broker.idle(1.2)
        self.broker.send(identity, b"CANCEL", b"1.1")
        _, args = self.broker.expect_answer()
        self.assertEqual(args[:2], [b"RESULT", b"1.1"])
        self.assertEqual(json.loads(args[2]), {"cancelled": True})
        #  Both were told: the first by its connection's end, the second
        #  by CANCEL
        self.assertEqual(self.printed()[:2], ["cancel 1.1", "cancel 1.1"])


class StopTest(FakeBrokerCase):
    """At a stop (SIGTERM, act_worker_stop), running tasks have the grace
    (act_worker_set_grace, 5 s by default) to answer, and TASKs that come
    meanwhile run too; then DISCONNECT. Before, DISCONNECT went at once:
    every running task failed worker_lost at actd and ran again elsewhere,
    and a handler that stopped the worker lost its own answer."""

    def test_running_tasks_answer_before_disconnect(self):
        identity = self.start()
        self.broker.task(identity, "1.1", "sleep", {"ms": 800})
        self.broker.idle(0.3)
        self.worker.send_signal(signal.SIGTERM)
        #  The broker sends tasks until DISCONNECT: this one runs too
        self.broker.task(identity, "1.2", "sleep", {"ms": 100})
        seen = self.broker.until_disconnect()
        self.assertEqual(sorted((verb, args[0], json.loads(args[1])) for verb, args in seen[:-1]),
                         [(b"RESULT", b"1.1", {"cancelled": False}),
                          (b"RESULT", b"1.2", {"cancelled": False})])
        self.assertEqual(self.worker.wait(10), 0)
        self.assertIn("stopped", self.printed())

    def test_a_handler_that_stops_the_worker_has_its_answer_sent(self):
        identity = self.start()
        self.broker.task(identity, "1.1", "stopme", {})
        seen = self.broker.until_disconnect()
        self.assertEqual(seen, [(b"RESULT", [b"1.1", b'"stopped"']), (b"DISCONNECT", [])])
        self.assertEqual(self.worker.wait(10), 0)

    def test_the_grace_ends_the_stop(self):
        for grace in (300, 0):
            with self.subTest(grace=grace):
                identity = self.start(0, grace)
                self.broker.task(identity, "1.1", "sleep", {"ms": 20000})
                self.broker.idle(0.3)
                self.worker.send_signal(signal.SIGTERM)
                #  DISCONNECT, the task not answered: it runs elsewhere
                self.assertEqual(self.broker.until_disconnect(), [(b"DISCONNECT", [])])
                self.assertEqual(self.worker.wait(10), 0)


class RealBrokerTest(unittest.TestCase):
    """Against actd: a result past 4 x max_message_bytes + 65536 cost the
    worker's connection, and the call beside it on the same worker ran
    three times and failed worker_lost."""

    def test_a_result_too_large_fails_alone(self):
        actd = Actd().start()
        self.addCleanup(actd.cleanup)
        worker = subprocess.Popen([find_binary("worker_answers"), actd.worker_endpoint],
                                  stdout=subprocess.PIPE, text=True)
        self.addCleanup(worker.stdout.close)
        self.addCleanup(end_process, worker)
        client = actd.client()
        self.addCleanup(client.close)
        wait_for(lambda: client.value("STATS")["workers"], "the C worker to join")
        slow = client.send("CALL", "answers", json.dumps(
            {"_tool": "sleep", "ms": 1500, "_outputPath": DAGGER + "slow"}))
        big = client.send("CALL", "answers", json.dumps(
            {"_tool": "big", "n": 5000000, "_outputPath": DAGGER + "big"}))
        outcomes = {}
        for rid in (slow, big):
            self.assertEqual(client.wait(rid, timeout=30)[0], "ACCEPTED")
        for rid in (slow, big):
            done = client.wait(rid, "DONE", timeout=60)
            outcomes[rid] = json.loads(done[2])
        self.assertEqual((outcomes[slow]["status"], outcomes[slow]["attempts"]), ("ok", 1),
                         outcomes[slow])
        error = outcomes[big]["error"]
        self.assertEqual((outcomes[big]["attempts"], error["code"], error["message"]), (
            1, "activity_failed",
            "the result is 5000002 bytes, over max_message_bytes (1048576)"))
        self.assertNotIn("lost", actd.log())
        self.assertEqual(actd.stop(), 0, actd.log())


if __name__ == "__main__":
    unittest.main()
