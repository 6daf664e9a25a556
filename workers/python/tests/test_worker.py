"""actd.Worker against the real actd: activities served to actd.Client
calls, per PROTOCOL.md section 2 and SEMANTICS.md section 7."""

import asyncio
import os
import signal
import threading
import unittest
from typing import Any, Dict, List

from support import (TIMEOUT, Actd, Gate, listed_worker, make_worker, running, serving,
                     wait_until)

import actd

#  A W3C traceparent, as a call's _trace (docs/protocol.md, CALL)
TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

class WorkerTest(unittest.TestCase):
    """One actd for the class; each test runs its own worker and context."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.broker = Actd()
        cls.broker.__enter__()
        cls.client = actd.Client(cls.broker.client_endpoint, timeout=TIMEOUT)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.broker.__exit__(None, None, None)

    def serve(self, activities: Dict[str, Any], capacity: int = 1) -> Any:
        return serving(self.broker, self.client, activities, self.id(), capacity)

    def test_result_is_written_to_the_output_path(self) -> None:
        def upper(params: Dict[str, Any], task: actd.Task) -> str:
            return params["text"].upper()

        with self.serve({"w-upper": upper}):
            outcome = self.client.call("w-result", {"_tool": "w-upper", "text": "hello",
                                                    "_outputPath": "†state.upper"},
                                       timeout=TIMEOUT)
        self.assertEqual(outcome.status, "ok")
        self.assertEqual(outcome.result, "HELLO")
        self.assertEqual(outcome.branch, 0)
        self.assertEqual(outcome.written, ["†state.upper"])
        self.assertEqual(outcome.attempts, 1)
        self.assertEqual(self.client.resolve("w-result", "†state.upper"), "HELLO")

    def test_branch_names_the_alternative_written(self) -> None:
        def weather(params: Dict[str, Any], task: actd.Task) -> actd.Branch:
            city = params["city"]
            if len(city) % 2 == 0:
                return actd.Branch(0, {"city": city, "sky": "sunny"})
            return actd.Branch(1, {"city": city, "sky": "rainy"})

        with self.serve({"w-weather": weather}):
            oslo = self.client.call("w-branch", {"_tool": "w-weather", "city": "Oslo",
                                                 "_outputPath": "†sunny || †rainy"},
                                    timeout=TIMEOUT)
            paris = self.client.call("w-branch", {"_tool": "w-weather", "city": "Paris",
                                                  "_outputPath": "†sunny2 || †rainy2"},
                                     timeout=TIMEOUT)
        self.assertEqual((oslo.status, oslo.branch, oslo.written), ("ok", 0, ["†sunny"]))
        self.assertEqual((paris.status, paris.branch, paris.written), ("ok", 1, ["†rainy2"]))
        self.assertEqual(self.client.resolve("w-branch", "†sunny"),
                         {"city": "Oslo", "sky": "sunny"})
        self.assertEqual(self.client.resolve("w-branch", "†rainy2"),
                         {"city": "Paris", "sky": "rainy"})
        with self.assertRaises(actd.NotFound):
            self.client.resolve("w-branch", "†sunny2")

    def test_retryable_activity_error_is_tried_again(self) -> None:
        attempts: List[int] = []

        def flaky(params: Dict[str, Any], task: actd.Task) -> None:
            attempts.append(task.attempt)
            raise actd.ActivityError("try later", code="flaky", retryable=True, hint="wait")

        with self.serve({"w-flaky": flaky}):
            outcome = self.client.call("w-retry", {
                "_tool": "w-flaky", "_outputPath": "†ok || †failed",
                "_retry": {"max_attempts": 2, "initial_ms": 10}}, timeout=TIMEOUT)
        self.assertEqual(outcome.status, "error")
        self.assertEqual(outcome.error, {"code": "flaky", "message": "try later", "hint": "wait"})
        self.assertEqual(outcome.attempts, 2)
        self.assertEqual(attempts, [1, 2])
        # SEMANTICS 5: a failure is written to the last alternative
        self.assertEqual(outcome.branch, 1)
        self.assertEqual(self.client.resolve("w-retry", "†failed"),
                         {"error": {"code": "flaky", "message": "try later", "hint": "wait"}})

    def test_activity_error_not_retryable_ends_the_call_at_once(self) -> None:
        attempts: List[int] = []

        def strict(params: Dict[str, Any], task: actd.Task) -> None:
            attempts.append(task.attempt)
            raise actd.ActivityError("no such city", code="bad_city", retryable=False)

        with self.serve({"w-strict": strict}):
            outcome = self.client.call("w-noretry", {
                "_tool": "w-strict", "_outputPath": "†weather",
                "_retry": {"max_attempts": 3, "initial_ms": 10}}, timeout=TIMEOUT)
        self.assertEqual(outcome.status, "error")
        self.assertEqual(outcome.error, {"code": "bad_city", "message": "no such city"})
        self.assertEqual(outcome.attempts, 1)
        self.assertEqual(attempts, [1])
        with self.assertRaises(actd.CallFailed) as raised:
            outcome.raise_for_error()
        self.assertEqual(raised.exception.code, "bad_city")
        self.assertEqual(raised.exception.message, "no such city")

    def test_other_exception_fails_with_activity_failed(self) -> None:
        def broken(params: Dict[str, Any], task: actd.Task) -> None:
            raise ValueError("the input is broken")

        with self.serve({"w-broken": broken}):
            outcome = self.client.call("w-exception", {
                "_tool": "w-broken", "_outputPath": "†out",
                "_retry": {"max_attempts": 2, "initial_ms": 10}}, timeout=TIMEOUT)
        self.assertEqual(outcome.status, "error")
        self.assertEqual(outcome.error, {"code": "activity_failed",
                                         "message": "ValueError: the input is broken"})
        # Retryable by default (PROTOCOL 2: retryable defaults to true)
        self.assertEqual(outcome.attempts, 2)

    def test_the_exception_type_reaches_the_agent(self) -> None:
        def lookup(params: Dict[str, Any], task: actd.Task) -> Any:
            return params["city"]

        async def lookup_async(params: Dict[str, Any], task: actd.Task) -> Any:
            return params["city"]

        def bare(params: Dict[str, Any], task: actd.Task) -> None:
            raise RuntimeError()

        with self.serve({"w-key": lookup, "w-key-async": lookup_async, "w-bare": bare}):
            outcomes = [self.client.call("w-type", {"_tool": tool, "_outputPath": "†out",
                                                    "_retry": {"max_attempts": 1}},
                                         timeout=TIMEOUT)
                        for tool in ("w-key", "w-key-async", "w-bare")]
        self.assertEqual([(outcome.code, outcome.message) for outcome in outcomes],
                         [("activity_failed", "KeyError: 'city'"),
                          ("activity_failed", "KeyError: 'city'"),
                          ("activity_failed", "RuntimeError")])

    def test_coroutine_handlers_run_capacity_at_once_on_one_loop(self) -> None:
        running = 0
        peak = 0
        loops: List[Any] = []

        async def slow(params: Dict[str, Any], task: actd.Task) -> Any:
            nonlocal running, peak
            loops.append(asyncio.get_running_loop())
            running += 1
            peak = max(peak, running)
            # Run one at a time, the first would wait here in vain
            for _ in range(int(TIMEOUT / 0.01)):
                if peak == 4:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(1)
            running -= 1
            if params["n"] == 5:
                raise actd.ActivityError("no sixth", code="sixth", retryable=False)
            return actd.Branch(1, params["n"])

        def sync(params: Dict[str, Any], task: actd.Task) -> str:
            return "still threads"

        with self.serve({"w-async": slow, "w-sync": sync}, capacity=4):
            handles = [self.client.submit("w-async", {
                "_tool": "w-async", "n": n, "_outputPath": "†a.n%d || †b.n%d" % (n, n)})
                for n in range(6)]
            outcomes = [handle.outcome(TIMEOUT) for handle in handles]
            plain = self.client.call("w-async", {"_tool": "w-sync", "_outputPath": "†sync"},
                                     timeout=TIMEOUT)
        # Four at the same moment, never more than the capacity
        self.assertEqual(peak, 4)
        self.assertEqual(len(loops), 6)
        self.assertEqual(len(set(map(id, loops))), 1, "one event loop for all coroutines")
        self.assertEqual([(outcome.status, outcome.branch, outcome.result)
                          for outcome in outcomes[:5]],
                         [("ok", 1, n) for n in range(5)])
        self.assertEqual((outcomes[5].status, outcomes[5].code), ("error", "sixth"))
        self.assertEqual((plain.status, plain.result), ("ok", "still threads"))

    def test_activity_decorator_bare_and_named(self) -> None:
        worker = make_worker(self.broker, {}, self.id())

        @worker.activity
        def w_bare(params: Dict[str, Any], task: actd.Task) -> str:
            return "bare"

        @worker.activity("w-named")
        def anything(params: Dict[str, Any], task: actd.Task) -> str:
            return "named"

        @worker.activity
        async def w_bare_async(params: Dict[str, Any], task: actd.Task) -> str:
            return "bare async"

        self.assertEqual(worker.activities, ["w_bare", "w-named", "w_bare_async"])
        self.assertEqual(w_bare(None, None), "bare")      # returned unchanged
        with running(self.client, worker):
            results = [self.client.call("w-decorator", {"_tool": tool, "_outputPath": "†out"},
                                        timeout=TIMEOUT).result
                       for tool in worker.activities]
        self.assertEqual(results, ["bare", "named", "bare async"])

    def test_result_that_is_not_json_fails_with_activity_failed(self) -> None:
        def odd(params: Dict[str, Any], task: actd.Task) -> Any:
            return {"value": float("nan")}

        with self.serve({"w-nan": odd}):
            outcome = self.client.call("w-nan", {
                "_tool": "w-nan", "_outputPath": "†out",
                "_retry": {"max_attempts": 1}}, timeout=TIMEOUT)
        self.assertEqual(outcome.status, "error")
        self.assertEqual(outcome.code, "activity_failed")
        self.assertEqual(outcome.attempts, 1)

    def test_result_that_is_not_json_is_not_tried_again(self) -> None:
        # The same handler would return the same set again: each retry ran
        # it again (its side effects too) to fail the same way, as a
        # retryable TypeError that did not say it came from the result
        runs: List[int] = []

        def odd(params: Dict[str, Any], task: actd.Task) -> Any:
            runs.append(task.attempt)
            return {"tags": {"a", "b"}}

        with self.serve({"w-set": odd}):
            outcome = self.client.call("w-set", {
                "_tool": "w-set", "_outputPath": "†out",
                "_retry": {"max_attempts": 3, "initial_ms": 10}}, timeout=TIMEOUT)
        self.assertEqual(outcome.status, "error")
        self.assertEqual(outcome.code, "activity_failed")
        self.assertEqual(outcome.attempts, 1)
        self.assertEqual(runs, [1])
        self.assertTrue(outcome.message.startswith("the result is not JSON: "), outcome.message)
        self.assertIn("set", outcome.message)

    def test_a_failure_over_a_mib_keeps_its_code_and_is_not_retried(self) -> None:
        # actd reads a FAIL over max_message_bytes (1 MiB by default) as {}:
        # the call was retried, its code and message lost
        runs: List[int] = []

        def huge(params: Dict[str, Any], task: actd.Task) -> Any:
            runs.append(task.attempt)
            raise actd.ActivityError("é" * (1 << 20), code="w_huge", retryable=False,
                                     context="x" * (1 << 20))

        with self.serve({"w-huge-fail": huge}):
            outcome = self.client.call("w-huge-fail", {
                "_tool": "w-huge-fail", "_outputPath": "†out",
                "_retry": {"max_attempts": 3, "initial_ms": 10}}, timeout=TIMEOUT)
        self.assertEqual((outcome.status, outcome.code, outcome.attempts), ("error", "w_huge", 1))
        self.assertEqual(runs, [1])
        self.assertTrue(outcome.message.startswith("éé"), outcome.message[:40])
        self.assertLess(len(outcome.message.encode()), 70000)
        self.assertIn("cut", outcome.message)

    def test_a_failure_naming_a_file_name_that_is_not_utf8_keeps_its_message(self) -> None:
        # os.fsdecode (os.listdir too) gives the bytes of such a name as lone
        # surrogates: the FAIL could not be encoded, and the call ended "the
        # handler was interrupted", its code and message lost
        def unreadable(params: Dict[str, Any], task: actd.Task) -> Any:
            name = os.fsdecode(b"caf\xe9.txt")
            raise actd.ActivityError("cannot read " + name, code="w_" + name,
                                     retryable=False)

        with self.serve({"w-bad-name": unreadable}):
            outcome = self.client.call("w-bad-name", {
                "_tool": "w-bad-name", "_outputPath": "†out",
                "_retry": {"max_attempts": 2, "initial_ms": 10}}, timeout=TIMEOUT)
        self.assertEqual((outcome.status, outcome.code, outcome.message, outcome.attempts),
                         ("error", "w_caf?.txt", "cannot read caf?.txt", 1))

    def test_a_failure_whose_details_hold_lone_surrogates_keeps_them(self) -> None:
        # A string or key of the details that could not be encoded dropped
        # every detail: the error held only the code and message
        def unreadable(params: Dict[str, Any], task: actd.Task) -> Any:
            name = os.fsdecode(b"caf\xe9.txt")
            raise actd.ActivityError("cannot read " + name, code="w_x", retryable=False,
                                     file=name, tried=[name, {name: "x\udfff"}], ok="fine")

        with self.serve({"w-bad-details": unreadable}):
            outcome = self.client.call("w-bad-details", {
                "_tool": "w-bad-details", "_outputPath": "†out",
                "_retry": {"max_attempts": 2, "initial_ms": 10}}, timeout=TIMEOUT)
        self.assertEqual((outcome.status, outcome.attempts), ("error", 1))
        self.assertEqual(outcome.error, {
            "code": "w_x", "message": "cannot read caf?.txt", "file": "caf?.txt",
            "tried": ["caf?.txt", {"caf?.txt": "x?"}], "ok": "fine"})

    def test_progress_holding_lone_surrogates_is_sent_with_question_marks(self) -> None:
        # task.progress raised UnicodeEncodeError in the handler: the call
        # failed, retried, and no progress was ever shown
        gate = Gate()
        sent: List[bool] = []

        def slow(params: Dict[str, Any], task: actd.Task) -> str:
            name = os.fsdecode(b"caf\xe9.txt")
            sent.append(task.progress({"file": name, name: 1}))
            gate.enter()
            return "finished"

        with self.serve({"w-bad-progress": slow}):
            handle = self.client.submit("w-bad-progress", {
                "_tool": "w-bad-progress", "_outputPath": "†out",
                "_retry": {"max_attempts": 2, "initial_ms": 10}})
            call_id = handle.accepted(TIMEOUT)
            status = wait_until(lambda: (lambda s: s if s.has_progress or s.state == "error"
                                         else None)(self.client.status(call_id)),
                                what="progress in STATUS")
            gate.release()
            outcome = handle.outcome(TIMEOUT)
        self.assertEqual(status.progress, {"file": "caf?.txt", "caf?.txt": 1})
        self.assertEqual((outcome.status, outcome.result, outcome.attempts, sent),
                         ("ok", "finished", 1, [True]))

    def test_a_result_holding_a_lone_surrogate_fails_once_naming_it(self) -> None:
        # As the Node worker's: the result is data, not sent with "?"
        runs: List[int] = []

        def named(params: Dict[str, Any], task: actd.Task) -> Any:
            runs.append(task.attempt)
            return actd.Branch(0, {"file": os.fsdecode(b"caf\xe9.txt")})

        with self.serve({"w-bad-result": named}):
            outcome = self.client.call("w-bad-result", {
                "_tool": "w-bad-result", "_outputPath": "†out",
                "_retry": {"max_attempts": 3, "initial_ms": 10}}, timeout=TIMEOUT)
        self.assertEqual((outcome.status, outcome.code, outcome.attempts, runs),
                         ("error", "activity_failed", 1, [1]))
        self.assertEqual(outcome.message, "the result is not JSON: it holds a lone "
                         "surrogate (\\udce9), which UTF-8 cannot carry")

    def test_a_result_over_max_message_bytes_fails_only_its_own_call(self) -> None:
        # Past 4 x max_message_bytes + 65536 (4.06 MiB by default) actd
        # drops the connection that sent it: the call beside it on the
        # same worker failed worker_lost too, its work thrown away
        gate = Gate()

        def big(params: Dict[str, Any], task: actd.Task) -> str:
            return "x" * 5000000

        def slow(params: Dict[str, Any], task: actd.Task) -> str:
            gate.enter()
            return "finished"

        retry = {"max_attempts": 3, "initial_ms": 10}
        with self.serve({"w-big": big, "w-slow": slow}, capacity=2):
            handle = self.client.submit("w-big-slow", {"_tool": "w-slow", "_retry": retry,
                                                       "_outputPath": "†slow"})
            self.assertTrue(gate.entered.wait(TIMEOUT))
            outcome = self.client.call("w-big", {"_tool": "w-big", "_retry": retry,
                                                 "_outputPath": "†out"}, timeout=TIMEOUT)
            gate.release()
            slow_outcome = handle.outcome(TIMEOUT)
        self.assertEqual((outcome.status, outcome.code, outcome.attempts),
                         ("error", "activity_failed", 1))
        self.assertEqual(outcome.message,
                         "the result is 5000002 bytes, over max_message_bytes (1048576)")
        self.assertEqual((slow_outcome.status, slow_outcome.result, slow_outcome.attempts),
                         ("ok", "finished", 1))

    def test_progress_is_shown_by_status(self) -> None:
        gate = Gate()

        def slow(params: Dict[str, Any], task: actd.Task) -> str:
            self.assertTrue(task.progress({"done": 1, "of": 2}))
            gate.enter()
            return "finished"

        with self.serve({"w-progress": slow}):
            handle = self.client.submit("w-progress", {"_tool": "w-progress",
                                                       "_outputPath": "†out"})
            call_id = handle.accepted(TIMEOUT)
            status = wait_until(lambda: (lambda s: s if s.has_progress else None)(
                self.client.status(call_id)), what="progress in STATUS")
            self.assertEqual(status.state, "running")
            self.assertEqual(status.progress, {"done": 1, "of": 2})
            gate.release()
            outcome = handle.outcome(TIMEOUT)
        self.assertEqual((outcome.status, outcome.result), ("ok", "finished"))

    def test_cancel_is_seen_by_the_handler_and_frees_the_slot(self) -> None:
        started = threading.Event()
        seen: List[bool] = []

        def patient(params: Dict[str, Any], task: actd.Task) -> str:
            if params.get("quick"):
                return "quick"
            started.set()
            seen.append(task.wait_cancelled(TIMEOUT))
            return "too late"

        with self.serve({"w-cancel": patient}, capacity=1) as worker:
            handle = self.client.submit("w-cancel", {"_tool": "w-cancel", "_outputPath": "†out"})
            call_id = handle.accepted(TIMEOUT)
            self.assertTrue(started.wait(TIMEOUT))
            self.client.cancel(call_id)
            outcome = handle.outcome(TIMEOUT)
            self.assertEqual(outcome.status, "cancelled")
            self.assertEqual(outcome.code, "cancelled")
            wait_until(lambda: seen, what="the handler to see the cancellation")
            self.assertEqual(seen, [True])
            # The result was still sent, so the only slot serves the next task
            quick = self.client.call("w-cancel", {"_tool": "w-cancel", "quick": True,
                                                  "_outputPath": "†quick"}, timeout=TIMEOUT)
            self.assertEqual((quick.status, quick.result), ("ok", "quick"))
            self.assertEqual(worker.connections, 1)

    def test_capacity_runs_tasks_at_once_while_heartbeats_continue(self) -> None:
        capacity = 3
        barrier = threading.Barrier(capacity, timeout=TIMEOUT)
        # Longer than the broker waits for a silent worker: only heartbeats
        # sent while the handlers run keep the worker alive.
        silence = 2.0 * self.broker.liveness * self.broker.heartbeat_ms / 1000.0
        together: List[int] = []

        def hold(params: Dict[str, Any], task: actd.Task) -> int:
            barrier.wait()          # all three tasks run at the same time
            together.append(params["n"])
            threading.Event().wait(silence)
            return params["n"]

        with self.serve({"w-hold": hold}, capacity=capacity) as worker:
            handles = [self.client.submit("w-capacity", {"_tool": "w-hold", "n": n,
                                                         "_outputPath": "†out.n%d" % n})
                       for n in range(capacity)]
            outcomes = [handle.outcome(TIMEOUT) for handle in handles]
            self.assertEqual(worker.connections, 1)
            listed = listed_worker(self.client, self.id())
        self.assertEqual(sorted(together), [0, 1, 2])
        self.assertEqual([(o.status, o.result, o.attempts) for o in outcomes],
                         [("ok", 0, 1), ("ok", 1, 1), ("ok", 2, 1)])
        self.assertEqual(listed, {"name": self.id(), "activities": ["w-hold"],
                                  "capacity": capacity, "running": 0, "lang": "python"})

    def test_task_carries_the_meta(self) -> None:
        tasks: List[actd.Task] = []

        def record(params: Dict[str, Any], task: actd.Task) -> Dict[str, Any]:
            tasks.append(task)
            return params

        with self.serve({"w-meta": record}):
            outcome = self.client.call("w-meta", {
                "_tool": "w-meta", "a": 1, "_instance": "i1", "_timeout": 20000,
                "_outputPath": "†yes || †no", "_trace": TRACE}, timeout=TIMEOUT)
            forgotten = self.client.call("w-meta", {"_tool": "w-meta", "b": 2})
            self.client.wait(forgotten, timeout=TIMEOUT)
        first, second = tasks
        self.assertEqual(outcome.result, {"a": 1})
        self.assertEqual((first.activity, first.params, first.context, first.call_id,
                          first.attempt, first.instance, first.branches, first.discard,
                          first.trace),
                         ("w-meta", {"a": 1}, "w-meta", outcome.call_id, 1, "i1", 2, False,
                          TRACE))
        self.assertEqual(first.id, "%s.1" % outcome.call_id)
        self.assertIsNotNone(first.deadline_ms)
        self.assertTrue(0 < first.deadline_ms <= 20000, first.deadline_ms)
        self.assertEqual(first.meta["call_id"], outcome.call_id)
        self.assertEqual((second.params, second.call_id, second.instance, second.branches,
                          second.discard, second.trace), ({"b": 2}, forgotten, None, 0, True,
                                                           None))

    def test_stop_from_another_thread_ends_run_and_disconnects(self) -> None:
        worker = make_worker(self.broker, {"w-stop": lambda params, task: None}, self.id())
        thread = threading.Thread(target=worker.run)
        thread.start()
        wait_until(lambda: listed_worker(self.client, self.id()), what="worker registered")
        worker.stop()
        thread.join(TIMEOUT)
        self.assertFalse(thread.is_alive())
        self.assertFalse(worker.running)
        # It sent DISCONNECT: the broker no longer lists it
        wait_until(lambda: listed_worker(self.client, self.id()) is None,
                   what="worker gone from STATS")
        worker.close()

    def test_stop_lets_a_running_handler_answer_first(self) -> None:
        gate = Gate()

        def slow(params: Dict[str, Any], task: actd.Task) -> str:
            gate.enter()
            return "answered"

        worker = make_worker(self.broker, {"w-grace": slow}, self.id())
        thread = worker.start()
        try:
            wait_until(lambda: listed_worker(self.client, self.id()), what="worker registered")
            handle = self.client.submit("w-grace", {"_tool": "w-grace", "_outputPath": "†out"})
            self.assertTrue(gate.entered.wait(TIMEOUT))
            worker.stop()
            gate.release()
            outcome = handle.outcome(TIMEOUT)
            thread.join(TIMEOUT)
        finally:
            gate.release()
            worker.stop(wait=True, timeout=TIMEOUT)
            worker.close()
        self.assertEqual((outcome.status, outcome.result, outcome.attempts),
                         ("ok", "answered", 1))
        self.assertFalse(thread.is_alive())

    def test_a_task_that_comes_during_the_grace_runs(self) -> None:
        # The broker sends a stopping worker tasks while it has free slots:
        # one that came during the grace was dropped unrun, and failed
        # worker_lost at its end (an attempt lost: with one, the call ended
        # error though another worker could have run it)
        gate = Gate()

        def slow(params: Dict[str, Any], task: actd.Task) -> str:
            gate.enter()
            return "slow"

        worker = make_worker(self.broker, {"w-drain-slow": slow,
                                           "w-drain-quick": lambda params, task: "quick"},
                             self.id(), capacity=2)
        thread = worker.start()
        try:
            wait_until(lambda: listed_worker(self.client, self.id()), what="worker registered")
            handle = self.client.submit("w-drain", {"_tool": "w-drain-slow", "_outputPath": "†a"})
            self.assertTrue(gate.entered.wait(TIMEOUT))
            worker.stop()
            quick = self.client.call("w-drain", {"_tool": "w-drain-quick", "_outputPath": "†b",
                                                 "_retry": {"max_attempts": 1}}, timeout=TIMEOUT)
            self.assertEqual((quick.status, quick.result, quick.attempts), ("ok", "quick", 1))
            gate.release()
            slow_outcome = handle.outcome(TIMEOUT)
            thread.join(TIMEOUT)
        finally:
            gate.release()
            worker.stop(wait=True, timeout=TIMEOUT)
            worker.close()
        self.assertEqual((slow_outcome.status, slow_outcome.result), ("ok", "slow"))
        self.assertFalse(thread.is_alive())

    def test_worker_reconnects_when_the_broker_is_silent(self) -> None:
        with self.serve({"w-silent": lambda params, task: params["x"]}) as worker:
            os.kill(self.broker.process.pid, signal.SIGSTOP)
            try:
                wait_until(lambda: worker.connections >= 2, what="a new READY")
            finally:
                os.kill(self.broker.process.pid, signal.SIGCONT)
            outcome = self.client.call("w-silent", {"_tool": "w-silent", "x": 7,
                                                    "_outputPath": "†x"}, timeout=TIMEOUT)
        self.assertEqual((outcome.status, outcome.result), ("ok", 7))


class RestartTest(unittest.TestCase):
    """The worker serves again after actd is stopped and started on the
    same endpoints."""

    def test_worker_serves_again_after_the_broker_restarts(self) -> None:
        with Actd() as broker, actd.Client(broker.client_endpoint, timeout=TIMEOUT) as client:
            with serving(broker, client, {"r-upper": lambda p, t: p["text"].upper()},
                         self.id()) as worker:
                before = client.call("restart", {"_tool": "r-upper", "text": "one",
                                                 "_outputPath": "†one"}, timeout=TIMEOUT)
                self.assertEqual(broker.stop(), 0)
                broker.start()
                wait_until(lambda: listed_worker(client, self.id()),
                           what="worker registered with the new actd")
                after = client.call("restart", {"_tool": "r-upper", "text": "two",
                                                "_outputPath": "†two"}, timeout=TIMEOUT)
                self.assertGreaterEqual(worker.connections, 2)
            self.assertEqual((before.status, before.result), ("ok", "ONE"))
            self.assertEqual((after.status, after.result), ("ok", "TWO"))
            self.assertEqual(client.resolve("restart", "†one"), "ONE")


    def test_a_handler_of_the_lost_connection_leaves_the_capacity_to_new_tasks(self) -> None:
        # The restarted broker is told capacity 1 and sends a task; it waited
        # in the pool behind the handler of the dropped connection, which
        # still held the pool's one thread, and ran past its _timeout
        gate = Gate()

        def hold(params: Dict[str, Any], task: actd.Task) -> str:
            gate.enter()
            return "held"

        with Actd() as broker, actd.Client(broker.client_endpoint, timeout=TIMEOUT) as client:
            activities = {"r-hold": hold, "r-quick": lambda p, t: "quick"}
            try:
                with serving(broker, client, activities, self.id()) as worker:
                    client.submit("lost", {"_tool": "r-hold", "_outputPath": "†held",
                                           "_retry": {"max_attempts": 1}}).accepted(TIMEOUT)
                    self.assertTrue(gate.entered.wait(TIMEOUT))
                    broker.kill()
                    broker.start()
                    wait_until(lambda: worker.connections >= 2, what="READY to the new actd")
                    quick = client.call("lost", {"_tool": "r-quick", "_outputPath": "†quick",
                                                 "_timeout": 5000,
                                                 "_retry": {"max_attempts": 1}}, timeout=TIMEOUT)
                    self.assertEqual((quick.status, quick.result), ("ok", "quick"))
                    gate.release()
            finally:
                gate.release()


if __name__ == "__main__":
    unittest.main()
