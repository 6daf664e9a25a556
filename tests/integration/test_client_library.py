"""The C client library (workers/c/act_client*.c) against a real actd, with
actd-example-worker, and against a fake broker that sends replies actd
would not: driven through tests/helpers/client_library.c, which prints a
line per step and exits 0 when each went as include/actd/act_client.h
promises."""

import json
import signal
import subprocess
import threading
import time
import unittest

import zmq

from harness import DAGGER, Actd, find_binary


def run_helper(*args, timeout=60):
    """Run client_library with args; (exit code, its output)."""
    run = subprocess.run([find_binary("client_library")] + [str(arg) for arg in args],
                         capture_output=True, text=True, timeout=timeout)
    return run.returncode, run.stdout + run.stderr


def run_steps(test, mode, endpoint, steps):
    """Run client_library mode at endpoint; at each (line, act) of steps,
    in order, wait for that line of its output, call act () and let it go
    on ("go"). (exit code, its whole output, the step lines included)."""
    helper = subprocess.Popen([find_binary("client_library"), mode, endpoint],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    seen = ""
    try:
        for line, act in steps:
            for got in helper.stdout:
                seen += got
                if got.strip() == line:
                    break
            test.assertTrue(seen.endswith(line + "\n"), "no '%s' in: %s" % (line, seen))
            act()
            helper.stdin.write("go\n")
            helper.stdin.flush()
        out, err = helper.communicate(timeout=60)
    finally:
        if helper.poll() is None:
            helper.kill()
            helper.communicate()
    return helper.returncode, seen + out + err


def example_worker(actd):
    """actd-example-worker serving actd (upper, echo, weather, sleep)."""
    return subprocess.Popen([find_binary("actd-example-worker"), "--endpoint",
                             actd.worker_endpoint, "--heartbeat-ms", "200"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(process):
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class FakeBroker(threading.Thread):
    """A ROUTER answering each request as answer (command, request id,
    args) says: a list of reply frames after the header, or None for no
    reply. Counts the requests of each command in seen."""

    def __init__(self, answer):
        super().__init__(daemon=True)
        self.answer = answer
        self.seen = {}
        self.context = zmq.Context()
        self.router = self.context.socket(zmq.ROUTER)
        self.router.linger = 0
        port = self.router.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = "tcp://127.0.0.1:%d" % port
        self.running = True

    def run(self):
        while self.running:
            if not self.router.poll(100):
                continue
            frames = self.router.recv_multipart()
            if len(frames) < 4:
                continue
            identity, command, request, args = frames[0], frames[2], frames[3], frames[4:]
            self.identity = identity        # For an answer that sends more
            command = command.decode()
            self.seen[command] = self.seen.get(command, 0) + 1
            reply = self.answer(command, request, args)
            if reply is not None:
                self.router.send_multipart([identity, b"ACTC01"] + reply)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.running = False
        self.join(5)
        self.router.close()
        self.context.term()


class DeepRepliesTest(unittest.TestCase):
    """Replies nest deeper than the 64 levels actd accepts in a request:
    a stored message (ACT_MAX_STORED_DEPTH) in HISTORY's array or an
    EVENT. The client read them with act_json_parse (64 levels): the call
    timed out, STATUS, VIEW and HISTORY failed bad_json, and the watch
    dropped each EVENT and sent WATCH again in a busy loop."""

    def test_replies_as_deep_as_actd_stores_are_read(self):
        with Actd() as actd:
            worker = example_worker(actd)
            try:
                code, out = run_helper("deep", actd.client_endpoint, "deep", 63)
            finally:
                stop(worker)
        self.assertEqual(code, 0, out)
        for step in ("call", "status", "view", "history", "resolve", "watch"):
            self.assertIn("%s ok" % step, out)

    def test_an_event_that_does_not_read_ends_the_watch(self):
        def answer(command, request, args):
            if command == "WATCH":
                return [b"EVENT", request, b"{not json"]
            return [b"OK", request] if command == "UNWATCH" else None
        with FakeBroker(answer) as broker:
            code, out = run_helper("bad-event", broker.endpoint)
        self.assertEqual(code, 0, out)
        self.assertIn("ended bad_json", out)
        #  Not asked for again and again: one WATCH, closed by one UNWATCH
        self.assertEqual(broker.seen.get("WATCH"), 1, broker.seen)


class WatchRestartTest(unittest.TestCase):
    """A broker restart under a watch whose WATCH had no event yet (still
    pending in the library): the library turned its own WATCH into an
    ERROR disconnected that act_client_recv returned, for a request the
    caller never sent."""

    def test_a_restart_under_a_quiet_watch_gives_the_caller_nothing(self):
        actd = Actd().start()
        try:
            code, out = run_steps(self, "restart", actd.client_endpoint,
                                  [("restart", lambda: (actd.kill(), actd.start()))])
        finally:
            actd.cleanup()
        self.assertEqual(code, 0, out)
        self.assertTrue(out.startswith("restart\n"), out)
        self.assertIn("nothing received ok", out)
        self.assertIn("watch resumed ok", out)


class ConnectedTest(unittest.TestCase):
    """act_client_connected (act_client.h): false with why "refused"
    while nothing listens, true once a broker answered, false again once
    it is gone (actd-http answers at once from it while actd is down)."""

    def test_the_connection_state_follows_the_broker(self):
        actd = Actd()
        actd.start()
        actd.kill()             # Its ports reserved, nothing listening
        try:
            code, out = run_steps(self, "connected", actd.client_endpoint,
                                  [("start", actd.start), ("kill", actd.kill)])
        finally:
            actd.cleanup()
        self.assertEqual(code, 0, out)
        for step in ("not connected, refused", "connected after a PONG",
                     "not connected after the broker went"):
            self.assertIn(step + " ok", out)


class UnwaitedDoneTest(unittest.TestCase):
    """act_client_call and act_client_plan without wait, on calls with an
    _outputPath: their DONEs came later under a request id the caller
    never saw, and were kept for act_client_recv for good (a program of
    synchronous calls only grew without bound)."""

    def test_the_dones_of_calls_not_waited_for_are_dropped(self):
        with Actd() as actd:
            worker = example_worker(actd)
            try:
                code, out = run_helper("nowait", actd.client_endpoint, 20)
            finally:
                stop(worker)
        self.assertEqual(code, 0, out)
        for step in ("submitted", "ended", "nothing received", "nothing kept"):
            self.assertIn("%s ok" % step, out)


class LateReplyTest(unittest.TestCase):
    """A synchronous request that timed out was not forgotten: its late
    reply (a PONG, a call's DONE) came out of act_client_recv, or stayed
    kept for good in a program that never calls it."""

    def test_the_late_reply_of_a_request_that_timed_out_is_dropped(self):
        self.stop_and_go("late", ("call timed out", "no late DONE", "ping timed out",
                                  "no late PONG", "nothing kept"))

    def test_a_request_whose_wait_timed_out_is_forgotten(self):
        """act_client_wait left its request as it was after a timeout: the
        late reply (a call's DONE, its ACCEPTED kept while the DONE was
        waited for, a plan's DONEs, a PONG) stayed kept for
        act_client_recv, for good in a program that never calls it, and
        the request pending meanwhile."""
        self.stop_and_go("wait-late", ("call's DONE timed out", "DONE timed out, ACCEPTED kept",
                                       "plan's DONE timed out", "no late DONE",
                                       "ping timed out", "no late PONG"))

    def stop_and_go(self, mode, steps):
        """Run client_library mode against actd and its worker, stopping
        actd at the helper's "stop" and letting it go on at "cont"; each
        of steps must be ok."""
        actd = Actd().start()
        worker = example_worker(actd)
        try:
            code, out = run_steps(self, mode, actd.client_endpoint,
                                  [("stop", lambda: actd.process.send_signal(signal.SIGSTOP)),
                                   ("cont", lambda: actd.process.send_signal(signal.SIGCONT))])
        finally:
            actd.process.send_signal(signal.SIGCONT)
            stop(worker)
            actd.cleanup()
        self.assertEqual(code, 0, out)
        for step in steps:
            self.assertIn("%s ok" % step, out)


class TablesBoundedTest(unittest.TestCase):
    """A long-lived client's private tables grew with every call and
    watch: 'accepted' (call id -> broker) and 'owners' (context -> broker)
    by one entry per call, 'ignored' by one per closed watch (a WATCH
    gets no OK, the only reply that took an id out). The routes are now
    bounded (the oldest go first, as the Python library's ROUTES_KEPT;
    the test makes the bound 50) and an ignored request goes with its
    last reply."""

    def test_the_tables_stay_bounded(self):
        with Actd() as actd:
            worker = example_worker(actd)
            try:
                code, out = run_helper("tables", actd.client_endpoint, 300, 50)
            finally:
                stop(worker)
        self.assertEqual(code, 0, out)
        for step in ("called", "routes bounded", "nothing ignored"):
            self.assertIn("%s ok" % step, out)


class MalformedRepliesTest(unittest.TestCase):
    """Replies a broker could send that break the protocol: a VALUE
    without its frame made act_client_view_text return NULL with err not
    set, an ACCEPTED without its call id made act_client_call return 0
    with *call_id NULL, and a moved reply not followed (past S_MAX_HOPS,
    or naming no valid endpoint) was returned but its request left
    pending for good."""

    def test_malformed_replies_fail_their_request_and_leave_nothing(self):
        def answer(command, request, args):
            if command == "VIEW":
                return [b"VALUE", request]
            if command in ("CALL", "PLAN"):
                return [b"ACCEPTED", request]
            if command == "RESOLVE":
                owner = broker.endpoint if args[0] == b"ctx" else "not an endpoint"
                return [b"ERROR", request, b"moved", owner.encode()]
            return None
        with FakeBroker(answer) as broker:
            code, out = run_helper("malformed", broker.endpoint)
        self.assertEqual(code, 0, out)
        self.assertIn("view text: bad_frame", out)
        self.assertIn("call: bad_frame", out)
        self.assertIn("plan: bad_frame", out)
        self.assertIn("moved too often: moved", out)
        self.assertIn("moved nowhere: moved", out)
        #  Followed as far as S_MAX_HOPS (5), no further
        self.assertEqual(broker.seen.get("RESOLVE"), 1 + 5 + 1, broker.seen)


class DroppedConnectionTest(unittest.TestCase):
    """Replies that reached the client before their connection dropped,
    still unread when it did: libzmq keeps them readable after its
    DISCONNECTED event, but the library read its connection events first
    and failed their requests with ERROR disconnected (then dropped the
    replies as late): a request the broker had answered looked lost, and
    a call it had accepted could be sent again."""

    def test_replies_read_before_the_drop_answer_their_requests(self):
        pings = []

        def answer(command, request, args):
            if command != "PING":
                return None
            pings.append(request)
            return [b"PONG", request] if len(pings) <= 5 else None
        broker = FakeBroker(answer)
        broker.start()

        def answer_then_go():
            deadline = time.monotonic() + 10
            while len(pings) < 6 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)                 # The PONGs written out
            broker.__exit__(None, None, None)
            time.sleep(0.5)                 # The drop seen by the client
        try:
            code, out = run_steps(self, "dropped", broker.endpoint, [("sent", answer_then_go)])
        finally:
            if not broker.router.closed:
                broker.__exit__(None, None, None)
        self.assertEqual(len(pings), 6, out)
        self.assertEqual(code, 0, out)
        self.assertIn("the five PONGs first ok", out)
        self.assertIn("then one ERROR disconnected ok", out)


class IdleDropTest(unittest.TestCase):
    """A drop that came while the program was away from the library (actd
    killed and started again on the same store): the library read it only
    while waiting for the next request, failed that request with ERROR
    disconnected though it had gone out on the new connection and was
    carried out (an APPEND stored, a CALL run: a caller who sent it again
    did it twice), and then handed its reply to act_client_recv."""

    def test_a_request_sent_after_an_unread_drop_is_not_failed_by_it(self):
        actd = Actd()
        actd.start()

        def restart():
            actd.kill()
            actd.start()
        try:
            code, out = run_steps(self, "idle-drop", actd.client_endpoint, [("idle", restart)])
        finally:
            actd.stop()
            actd.cleanup()
        self.assertEqual(code, 0, out)
        for step in ("ping", "append after the drop", "no stray reply"):
            self.assertIn(step + " ok", out)


class StatusGoneTest(unittest.TestCase):
    """A waited call whose DONE does not come is followed with a watch and
    STATUS; a STATUS that says not_found (actd came back without its
    store, or with it emptied) was taken as "not ended yet", and the
    call waited out the client's whole timeout to end in timeout."""

    def test_a_call_the_broker_no_longer_knows_fails_not_found(self):
        def answer(command, request, args):
            if command == "CALL":
                return [b"ACCEPTED", request, b"7"]
            if command == "STATUS":
                return [b"ERROR", request, b"not_found", b"no call " + args[0]]
            return None             # WATCH: no event ever
        with FakeBroker(answer) as broker:
            code, out = run_helper("status-gone", broker.endpoint)
        self.assertEqual(code, 0, out)
        self.assertIn("call not found ok", out)
        self.assertGreaterEqual(broker.seen.get("STATUS", 0), 1, broker.seen)


class DownTimeoutTest(unittest.TestCase):
    """A request sent while the broker is down waits in libzmq's queue; one
    that timed out there was still delivered once the broker came back,
    and a caller who asked again, told it timed out, had it done twice
    (the Node client drops that queue; now the C client does too)."""

    def test_a_request_that_timed_out_while_down_is_not_delivered_later(self):
        actd = Actd()
        actd.start()
        try:
            code, out = run_steps(self, "down-timeout", actd.client_endpoint,
                                  [("kill", actd.kill), ("start", actd.start)])
        finally:
            actd.stop()
            actd.cleanup()
        self.assertEqual(code, 0, out)
        for step in ("ping", "append timed out", "ping once back", "the append not delivered"):
            self.assertIn(step + " ok", out)


class StrayRepliesTest(unittest.TestCase):
    """Replies that answer nothing the client waits for (a second PONG, a
    PONG to a request never sent) were kept for act_client_recv: a
    program making only synchronous calls kept them for good (the Python
    and Node clients drop them)."""

    def test_replies_that_answer_nothing_are_dropped(self):
        def answer(command, request, args):
            if command != "PING":
                return None
            broker.router.send_multipart([broker.identity, b"ACTC01", b"PONG", b"never-sent"])
            broker.router.send_multipart([broker.identity, b"ACTC01", b"PONG", request])
            return [b"PONG", request]
        with FakeBroker(answer) as broker:
            code, out = run_helper("strays", broker.endpoint)
        self.assertEqual(code, 0, out)
        for step in ("first ping", "second ping", "no stray reply", "nothing kept"):
            self.assertIn(step + " ok", out)


class MovedCallTest(unittest.TestCase):
    """A CALL without an _id from a client given one broker, told moved to
    the owner: the client resends it to a third broker when the owner is
    silent (a third of its timeout), so the call it sends to the owner
    carries a random _id, which makes that resend the same call, not a
    second one (docs/protocol.md section 12)."""

    def test_a_call_sent_on_after_moved_has_an_id(self):
        calls = []

        def owner_answer(command, request, args):
            if command == "CALL":
                calls.append(json.loads(args[1]))
                return [b"ACCEPTED", request, b"7"]
            return None
        with FakeBroker(owner_answer) as owner:
            def first_answer(command, request, args):
                if command == "CALL":
                    calls.append(json.loads(args[1]))
                    return [b"ERROR", request, b"moved", owner.endpoint.encode()]
                return None
            with FakeBroker(first_answer) as first:
                result = subprocess.run(
                    [find_binary("actctl"), "--endpoint", first.endpoint, "--json",
                     "--timeout", "5000", "call", "ctx", json.dumps({"_tool": "t", "x": 1})],
                    capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(len(calls), 2, calls)
        self.assertNotIn("_id", calls[0])           #  One broker known: none
        self.assertIn("_id", calls[1])              #  Sent on to the owner
        self.assertEqual({k: v for k, v in calls[1].items() if k != "_id"}, calls[0])


class MovedNowhereTest(unittest.TestCase):
    """A broker cut off from the database, its lease lapsed, that knew no
    live broker answers moved naming none (docs/protocol.md section 12):
    the C library (actctl here) sends the request to the next broker at
    once, never back to that one. It gave the error to the caller, so
    the request never reached the broker that could serve it."""

    def test_a_request_moved_nowhere_goes_to_the_next_broker(self):
        def answer(broker):
            def reply(command, request, args):
                #  Each broker is cut off the first time it is asked: the
                #  other one is then asked, and the first again
                if broker.seen[command] == 1:
                    return [b"ERROR", request, b"moved", b""]
                return [b"VALUE", request, b"42"]
            return reply
        first = FakeBroker(None)
        second = FakeBroker(None)
        first.answer, second.answer = answer(first), answer(second)
        with first, second:
            result = subprocess.run(
                [find_binary("actctl"), "--endpoint", "%s,%s" % (first.endpoint,
                                                                 second.endpoint),
                 "--timeout", "5000", "resolve", "ctx", "\u2020x"],
                capture_output=True, text=True, timeout=60)
            seen = (first.seen.get("RESOLVE"), second.seen.get("RESOLVE"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "42")
        self.assertIn(seen, ((2, 1), (1, 2)))

    def test_with_no_other_broker_moved_nowhere_says_what_it_means(self):
        """The caller gets the moved error, its empty message replaced by
        what it means (it said "moved: ")."""
        def reply(command, request, args):
            return [b"ERROR", request, b"moved", b""]
        with FakeBroker(reply) as lone:
            result = subprocess.run(
                [find_binary("actctl"), "--endpoint", lone.endpoint, "--timeout", "5000",
                 "resolve", "ctx", "\u2020x"], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("moved: the broker no longer serves the context (cut off from its "
                      "store) and named no other broker", result.stderr)


class ExampleSleepTest(unittest.TestCase):
    """actd-example-worker's sleep cast ms to int: {"ms": 3000000000}
    (negative as an int) and 4294967297 (1) were answered at once. An ms
    the timer cannot take is refused with FAIL bad_params."""

    def test_sleep_refuses_an_ms_beyond_an_int(self):
        with Actd() as actd:
            worker = example_worker(actd)
            client = actd.client()
            try:
                for ms in (3000000000, 4294967297, -1):
                    _, outcome = client.call("sleepy", {"_tool": "sleep", "ms": ms,
                                                        "_outputPath": DAGGER + "state.s"})
                    self.assertEqual(outcome["status"], "error", (ms, outcome))
                    self.assertEqual(outcome["error"]["code"], "bad_params", (ms, outcome))
                _, outcome = client.call("sleepy", {"_tool": "sleep", "ms": 10,
                                                    "_outputPath": DAGGER + "state.s"})
                self.assertEqual(outcome["status"], "ok", outcome)
            finally:
                client.close()
                stop(worker)


if __name__ == "__main__":
    unittest.main()
