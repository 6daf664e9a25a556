"""actd.Worker on the wire: exact ACT/1 worker frames (PROTOCOL.md section
2), checked against a fake broker (a ROUTER socket in the test), so that
the broker's side of each exchange is under the test's control."""

import json
import threading
import time
import unittest
from typing import Any, Dict, List, Optional, Tuple

import zmq

from support import TIMEOUT, wait_until

import actd

HEARTBEAT_MS = 100
LIVENESS = 5


class FakeBroker:
    """A ROUTER on a free port that speaks the broker's side by hand."""

    def __init__(self) -> None:
        self.socket = zmq.Context.instance().socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        port = self.socket.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = "tcp://127.0.0.1:%d" % port

    def receive(self, timeout: float = TIMEOUT) -> Tuple[bytes, List[bytes]]:
        """(identity, [command, args...]) of the next message."""
        if not self.socket.poll(int(timeout * 1000)):
            raise AssertionError("the worker sent nothing within %s s" % timeout)
        frames = self.socket.recv_multipart()
        assert frames[1] == b"ACTW01", frames
        return frames[0], frames[2:]

    def expect(self, command: bytes, identity: Optional[bytes] = None,
               keep_alive: bool = True) -> Tuple[bytes, List[bytes]]:
        """The next message that is not a HEARTBEAT; answers heartbeats
        meanwhile (keep_alive) so the worker sees a live broker."""
        while True:
            sender, frames = self.receive()
            if frames[0] == b"HEARTBEAT":
                if keep_alive:
                    self.send(sender, b"HEARTBEAT")
                continue
            if identity is not None:
                assert sender == identity, (sender, identity, frames)
            assert frames[0] == command, frames
            return sender, frames

    def send(self, identity: bytes, *frames: bytes) -> None:
        self.socket.send_multipart([identity, b"ACTW01"] + list(frames))

    def task(self, identity: bytes, task_id: str, activity: str, params: Any,
             meta: Dict[str, Any]) -> None:
        self.send(identity, b"TASK", task_id.encode(), activity.encode(),
                  json.dumps(params).encode(), json.dumps(meta).encode())

    def close(self) -> None:
        self.socket.close(0)


def meta(call_id: str = "1", **extra: Any) -> Dict[str, Any]:
    value: Dict[str, Any] = {"context": "ctx", "call_id": call_id, "attempt": 1,
                             "deadline_ms": 300000, "branches": 1, "discard": False}
    value.update(extra)
    return value


class WorkerProtocolTest(unittest.TestCase):

    def setUp(self) -> None:
        self.broker = FakeBroker()
        self.worker = actd.Worker(self.broker.endpoint, capacity=2, name="proto",
                                  heartbeat_ms=HEARTBEAT_MS, liveness=LIVENESS)

    def tearDown(self) -> None:
        self.worker.stop(wait=True, timeout=TIMEOUT)
        self.worker.close()
        self.broker.close()

    def start(self) -> bytes:
        """Start the worker; returns its identity once READY arrived."""
        self.worker.start()
        identity, frames = self.broker.expect(b"READY")
        self.ready = frames
        return identity

    def test_ready_names_activities_capacity_name_and_lang(self) -> None:
        self.worker.add_activity("a", lambda params, task: None)
        self.worker.add_activity("b", lambda params, task: None)
        self.start()
        self.assertEqual(len(self.ready), 2)
        self.assertEqual(json.loads(self.ready[1]), {"activities": ["a", "b"], "capacity": 2,
                                                     "name": "proto", "lang": "python"})

    def test_idle_worker_sends_heartbeats(self) -> None:
        self.worker.add_activity("a", lambda params, task: None)
        identity = self.start()
        for _ in range(3):
            sender, frames = self.broker.receive()
            self.assertEqual((sender, frames), (identity, [b"HEARTBEAT"]))
            self.broker.send(identity, b"HEARTBEAT")
        self.assertEqual(self.worker.connections, 1)

    def test_disconnect_makes_the_worker_connect_again_with_a_new_socket(self) -> None:
        self.worker.add_activity("a", lambda params, task: None)
        first = self.start()
        self.broker.send(first, b"DISCONNECT", b"go away")
        second, frames = self.broker.expect(b"READY")
        self.assertNotEqual(second, first)
        self.assertEqual(frames, self.ready)
        self.assertEqual(self.worker.connections, 2)

    def test_silent_broker_makes_the_worker_connect_again(self) -> None:
        self.worker.add_activity("a", lambda params, task: None)
        first = self.start()
        # Say nothing: after LIVENESS silent intervals a new socket sends READY
        while True:
            sender, frames = self.broker.receive()
            if frames[0] == b"READY":
                break
            self.assertEqual((sender, frames), (first, [b"HEARTBEAT"]))
        self.assertNotEqual(sender, first)
        self.assertEqual(frames, self.ready)

    def test_result_branch_and_fail_frames(self) -> None:
        def work(params: Dict[str, Any], task: actd.Task) -> Any:
            if params["how"] == "plain":
                return {"n": 1}
            if params["how"] == "branch":
                return actd.Branch(1, [1, 2])
            if params["how"] == "error":
                raise actd.ActivityError("no", code="nope", retryable=False, field="x")
            raise KeyError("boom")

        self.worker.add_activity("work", work)
        identity = self.start()
        self.broker.task(identity, "1.1", "work", {"how": "plain"}, meta("1"))
        self.assertEqual(self.broker.expect(b"RESULT", identity)[1],
                         [b"RESULT", b"1.1", b'{"n":1}'])
        self.broker.task(identity, "2.1", "work", {"how": "branch"}, meta("2", branches=2))
        self.assertEqual(self.broker.expect(b"RESULT", identity)[1],
                         [b"RESULT", b"2.1", b"[1,2]", b"1"])
        self.broker.task(identity, "3.1", "work", {"how": "error"}, meta("3"))
        frames = self.broker.expect(b"FAIL", identity)[1]
        self.assertEqual(frames[:2], [b"FAIL", b"3.1"])
        self.assertEqual(json.loads(frames[2]), {"message": "no", "code": "nope",
                                                 "retryable": False, "field": "x"})
        self.broker.task(identity, "4.1", "work", {"how": "other"}, meta("4"))
        frames = self.broker.expect(b"FAIL", identity)[1]
        self.assertEqual(json.loads(frames[2]), {"message": "KeyError: 'boom'",
                                                 "code": "activity_failed", "retryable": True})

    def test_progress_then_result(self) -> None:
        def work(params: Dict[str, Any], task: actd.Task) -> str:
            task.progress({"step": 1})
            task.progress("half")
            return "done"

        self.worker.add_activity("work", work)
        identity = self.start()
        self.broker.task(identity, "7.2", "work", {}, meta("7", attempt=2))
        self.assertEqual(self.broker.expect(b"PROGRESS", identity)[1],
                         [b"PROGRESS", b"7.2", b'{"step":1}'])
        self.assertEqual(self.broker.expect(b"PROGRESS", identity)[1],
                         [b"PROGRESS", b"7.2", b'"half"'])
        self.assertEqual(self.broker.expect(b"RESULT", identity)[1],
                         [b"RESULT", b"7.2", b'"done"'])

    def test_cancel_sets_cancelled_and_the_result_is_still_sent(self) -> None:
        seen: List[bool] = []

        def work(params: Dict[str, Any], task: actd.Task) -> str:
            seen.append(task.wait_cancelled(TIMEOUT))
            return "stopped"

        self.worker.add_activity("work", work)
        identity = self.start()
        self.broker.task(identity, "5.1", "work", {}, meta("5"))
        self.broker.send(identity, b"CANCEL", b"5.1")
        self.assertEqual(self.broker.expect(b"RESULT", identity)[1],
                         [b"RESULT", b"5.1", b'"stopped"'])
        self.assertEqual(seen, [True])

    def test_tasks_of_a_lost_connection_are_cancelled_and_not_answered(self) -> None:
        started = threading.Event()
        release = threading.Event()
        returned = threading.Event()
        seen: List[bool] = []

        def work(params: Dict[str, Any], task: actd.Task) -> str:
            started.set()
            release.wait(TIMEOUT)
            seen.append(task.cancelled)
            seen.append(task.progress({"late": True}))
            returned.set()
            return "late"

        self.worker.add_activity("work", work)
        first = self.start()
        self.broker.task(first, "6.1", "work", {}, meta("6"))
        self.assertTrue(started.wait(TIMEOUT))
        self.broker.send(first, b"DISCONNECT")
        second, _ = self.broker.expect(b"READY")
        release.set()
        self.assertTrue(returned.wait(TIMEOUT))
        self.assertEqual(seen, [True, False])
        # The answer was dropped: the new socket only heartbeats
        for _ in range(LIVENESS):
            sender, frames = self.broker.receive()
            self.assertEqual((sender, frames), (second, [b"HEARTBEAT"]))
            self.broker.send(second, b"HEARTBEAT")

    def test_capacity_tasks_run_at_once(self) -> None:
        barrier = threading.Barrier(2, timeout=TIMEOUT)

        def work(params: Dict[str, Any], task: actd.Task) -> int:
            barrier.wait()
            return int(params["n"])

        self.worker.add_activity("work", work)
        identity = self.start()
        self.broker.task(identity, "8.1", "work", {"n": 8}, meta("8"))
        self.broker.task(identity, "9.1", "work", {"n": 9}, meta("9"))
        answers = {tuple(self.broker.expect(b"RESULT", identity)[1]) for _ in range(2)}
        self.assertEqual(answers, {(b"RESULT", b"8.1", b"8"), (b"RESULT", b"9.1", b"9")})

    def test_a_task_whose_meta_has_a_wrong_type_fails_bad_task(self) -> None:
        self.worker.add_activity("work", lambda params, task: params["n"])
        identity = self.start()
        for field, value in (("attempt", None), ("deadline_ms", "soon"), ("branches", [1]),
                             ("instance", 5)):
            self.broker.task(identity, "1.1", "work", {"n": 1}, meta("1", **{field: value}))
            frames = self.broker.expect(b"FAIL", identity)[1]
            self.assertEqual(frames[:2], [b"FAIL", b"1.1"])
            body = json.loads(frames[2])
            self.assertEqual((body["code"], body["retryable"]), ("bad_task", False))
            self.assertIn(field, body["message"])
        # The worker goes on, on the same connection
        self.broker.task(identity, "2.1", "work", {"n": 2}, meta("2"))
        self.assertEqual(self.broker.expect(b"RESULT", identity)[1], [b"RESULT", b"2.1", b"2"])
        self.assertTrue(self.worker.running)
        self.assertEqual(self.worker.connections, 1)

    def test_a_refused_ready_is_sent_again_after_a_growing_wait(self) -> None:
        # A heartbeat of 1 s: the broker's DISCONNECT comes well within it,
        # so each READY counts as refused at once
        self.worker.close()
        self.worker = actd.Worker(self.broker.endpoint, name="refused", heartbeat_ms=1000,
                                  liveness=3)
        self.worker.add_activity("a", lambda params, task: None)
        reason = b"tools of a: params: unsupported keyword dependentRequired"
        readies: List[float] = []
        with self.assertLogs("actd.worker", "WARNING") as logs:
            self.worker.start()
            until = time.monotonic() + 1.6
            while time.monotonic() < until:
                if not self.broker.socket.poll(20):
                    continue
                sender, frames = self.broker.receive()
                if frames[0] == b"READY":
                    readies.append(time.monotonic())
                    self.broker.send(sender, b"DISCONNECT", reason)
            # Waits of 0.1, 0.2, 0.4 and 0.8 s: 5 READY in 1.6 s, not hundreds
            self.assertLessEqual(len(readies), 6)
            waits = [later - earlier for earlier, later in zip(readies, readies[1:])]
            for index, wait in enumerate(waits):
                self.assertGreaterEqual(wait, 0.09 * 2 ** index, waits)
            # The next READY is taken
            identity, _ = self.broker.expect(b"READY")
        refusals = [line for line in logs.output if reason.decode() in line]
        self.assertEqual(len(refusals), len(readies), logs.output)
        # Once a connection stayed up a heartbeat interval, a DISCONNECT is
        # followed by the shortest wait again
        sender, frames = self.broker.receive()
        self.assertEqual((sender, frames), (identity, [b"HEARTBEAT"]))
        self.broker.send(identity, b"DISCONNECT", b"go away")
        sent = time.monotonic()
        self.broker.expect(b"READY")
        self.assertLess(time.monotonic() - sent, 1.0)

    def test_ready_fields_beyond_actds_bounds_are_refused_at_once(self) -> None:
        # docs/protocol.md section 3.2: capacity 1 to 100000, a name of up
        # to 256 bytes, activity names of 1 to 256 bytes
        for capacity in (0, 100001, 1.5, True):
            with self.assertRaises(ValueError):
                actd.Worker(self.broker.endpoint, capacity=capacity)  # type: ignore[arg-type]
        for name in ("n" * 257, "\u00e9" * 129):
            with self.assertRaises(ValueError):
                actd.Worker(self.broker.endpoint, name=name)
        actd.Worker(self.broker.endpoint, capacity=100000, name="n" * 256).close()
        for activity in ("", "a" * 257, "\u00e9" * 129):
            with self.assertRaises(ValueError):
                self.worker.add_activity(activity, lambda params, task: None)
        self.worker.add_activity("a" * 256, lambda params, task: None)
        self.assertEqual(self.worker.activities, ["a" * 256])

    def limited(self, limit: int) -> None:
        """Replace the worker with one of max_message_bytes limit."""
        self.worker.close()
        self.worker = actd.Worker(self.broker.endpoint, capacity=2, name="limited",
                                  heartbeat_ms=HEARTBEAT_MS, liveness=LIVENESS,
                                  max_message_bytes=limit)

    def test_max_message_bytes_is_a_positive_integer(self) -> None:
        for limit in (0, -1, 1.5, True, "1000", None):
            with self.assertRaises(ValueError):
                actd.Worker(self.broker.endpoint, max_message_bytes=limit)  # type: ignore
        actd.Worker(self.broker.endpoint, max_message_bytes=1).close()

    def test_a_result_over_max_message_bytes_is_failed_by_the_worker(self) -> None:
        # actd would fail it too, but past 4 x max_message_bytes + 65536 it
        # drops the connection, and every task on it fails worker_lost
        def work(params: Dict[str, Any], task: actd.Task) -> Any:
            value = "x" * (params["size"] - 2)          # A JSON string: its quotes
            return actd.Branch(1, value) if params.get("branch") else value

        self.limited(1000)
        self.worker.add_activity("work", work)
        identity = self.start()
        over = {"code": "activity_failed", "retryable": False,
                "message": "the result is 2000 bytes, over max_message_bytes (1000)"}
        with self.assertLogs("actd.worker", "WARNING") as logs:
            self.broker.task(identity, "1.1", "work", {"size": 2000}, meta("1"))
            frames = self.broker.expect(b"FAIL", identity)[1]
            self.assertEqual(frames[:2], [b"FAIL", b"1.1"])
            self.assertEqual(json.loads(frames[2]), over)
            self.broker.task(identity, "2.1", "work", {"size": 2000, "branch": True},
                             meta("2", branches=2))
            frames = self.broker.expect(b"FAIL", identity)[1]
            self.assertEqual((frames[:2], json.loads(frames[2])), ([b"FAIL", b"2.1"], over))
        self.assertIn("limited", logs.output[0])
        self.assertIn("1.1", logs.output[0])
        self.assertIn("2000 bytes, over max_message_bytes (1000)", logs.output[0])
        # A fire-and-forget call's result is thrown away: null frees the slot
        self.broker.task(identity, "3.1", "work", {"size": 2000}, meta("3", discard=True))
        self.assertEqual(self.broker.expect(b"RESULT", identity)[1],
                         [b"RESULT", b"3.1", b"null"])
        self.broker.task(identity, "4.1", "work", {"size": 2000, "branch": True},
                         meta("4", branches=2, discard=True))
        self.assertEqual(self.broker.expect(b"RESULT", identity)[1],
                         [b"RESULT", b"4.1", b"null"])
        # Exactly the limit is sent
        self.broker.task(identity, "5.1", "work", {"size": 1000}, meta("5"))
        self.assertEqual(self.broker.expect(b"RESULT", identity)[1],
                         [b"RESULT", b"5.1", b'"' + b"x" * 998 + b'"'])
        self.broker.task(identity, "6.1", "work", {"size": 1000, "branch": True},
                         meta("6", branches=2))
        self.assertEqual(self.broker.expect(b"RESULT", identity)[1],
                         [b"RESULT", b"6.1", b'"' + b"x" * 998 + b'"', b"1"])

    def test_progress_over_max_message_bytes_is_not_sent(self) -> None:
        sent: List[bool] = []

        def work(params: Dict[str, Any], task: actd.Task) -> str:
            sent.append(task.progress("x" * 1999))
            sent.append(task.progress("x" * 998))
            return "done"

        self.limited(1000)
        self.worker.add_activity("work", work)
        identity = self.start()
        with self.assertLogs("actd.worker", "WARNING") as logs:
            self.broker.task(identity, "1.1", "work", {}, meta("1"))
            self.assertEqual(self.broker.expect(b"PROGRESS", identity)[1],
                             [b"PROGRESS", b"1.1", b'"' + b"x" * 998 + b'"'])
        self.assertEqual(self.broker.expect(b"RESULT", identity)[1],
                         [b"RESULT", b"1.1", b'"done"'])
        self.assertEqual(sent, [False, True])
        self.assertIn("2001 bytes, over max_message_bytes (1000)", logs.output[0])

    def test_a_failure_over_max_message_bytes_is_cut_to_fit(self) -> None:
        def work(params: Dict[str, Any], task: actd.Task) -> Any:
            raise actd.ActivityError("\u00e9" * 3000, code="long", retryable=False,
                                     details="d" * 3000)

        self.limited(1000)
        self.worker.add_activity("work", work)
        identity = self.start()
        self.broker.task(identity, "1.1", "work", {}, meta("1"))
        frames = self.broker.expect(b"FAIL", identity)[1]
        self.assertLessEqual(len(frames[2]), 1000)
        body = json.loads(frames[2])
        self.assertEqual((body["code"], body["retryable"]), ("long", False))
        self.assertTrue(body["message"].startswith("\u00e9" * 100), body["message"])
        self.assertNotIn("details", body)

    def test_a_task_of_the_wrong_number_of_frames_fails_bad_task(self) -> None:
        # Dropped, the task would hold its slot at the broker until the
        # worker is declared dead
        self.worker.add_activity("work", lambda params, task: params["n"])
        identity = self.start()
        with self.assertLogs("actd.worker", "WARNING") as logs:
            self.broker.send(identity, b"TASK")             # No task id: dropped
            self.broker.send(identity, b"TASK", b"1.1", b"work", b'{"n":1}')
            self.broker.send(identity, b"TASK", b"2.1", b"work", b'{"n":1}',
                             json.dumps(meta("2")).encode(), b"more")
            # The worker goes on, on the same connection
            self.broker.task(identity, "3.1", "work", {"n": 3}, meta("3"))
            answers = [self.broker.expect(command, identity)[1]
                       for command in (b"FAIL", b"FAIL", b"RESULT")]
        self.assertIn("a TASK of 0 frames", logs.output[0])
        for task_id, count in ((b"1.1", 3), (b"2.1", 5)):
            frames = answers.pop(0)
            self.assertEqual(frames[:2], [b"FAIL", task_id])
            self.assertEqual(json.loads(frames[2]), {
                "code": "bad_task", "retryable": False,
                "message": "a TASK of %d frames, not 4 (task id, activity, params, meta)"
                           % count})
        self.assertEqual(answers, [[b"RESULT", b"3.1", b"3"]])
        self.assertEqual(self.worker.connections, 1)

    def test_stop_sends_disconnect(self) -> None:
        self.worker.add_activity("a", lambda params, task: None)
        identity = self.start()
        self.worker.stop()
        self.broker.expect(b"DISCONNECT", identity)
        wait_until(lambda: not self.worker.running, what="run() to return")


if __name__ == "__main__":
    unittest.main()
