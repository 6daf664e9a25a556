"""Crash tests for the durable store (PROTOCOL 1: "ACCEPTED is sent only
after the call is durably stored: a broker that crashes after ACCEPTED
still runs the call when it restarts"; SEMANTICS 1: _seq is 1, 2, 3, ...
per context and a message is never changed or removed).

actd is killed with SIGKILL while clients pipeline CALLs and APPENDs, then
restarted on the same store. A request whose reply never came is unknown:
it may or may not have been applied, so it must not break an invariant,
but it need not be present.

Set ACTD_CRASH_SEED to replay a run's random choices (the seed is printed).
A store that fails to commit (a file size limit, a full disk) is in
test_crash_store.py.
"""

import json
import os
import random
import sys
import threading
import time
import unittest

import zmq

from harness import DAGGER, STORE, Actd, Client, NoAnswer, Worker, actd_with_config

CONTEXTS = ["crash-%02d" % i for i in range(20)]
CLIENTS = 4                 # client sockets, each with a fixed routing id
WINDOW = 200                # requests in flight (no first reply yet) per client
OUTPUT_CALLS = 1500         # CALLs pushing onto †state.log
FORGET_CALLS = 1500         # fire-and-forget CALLs
APPENDS = 1000              # APPENDs of data messages
KILLS_WHILE_SUBMITTING = 12  # SIGKILLs at random moments of the submission
BURST_EVERY = 0.2           # seconds of traffic between bursts of requests
BURST_SIZES = (10, 250)     # requests released per burst (uniform)
LOG_PATH = DAGGER + "state.log"
#  Workers here always succeed, but a worker the loaded machine keeps from
#  heartbeating is declared lost, which uses an attempt: room for that
RETRY = {"max_attempts": 20, "initial_ms": 10, "backoff": 1.0, "max_ms": 10}


def say(text):
    print(text, file=sys.stderr, flush=True)


class Ledger:
    """Everything the test sent and every reply it got."""

    def __init__(self):
        self.requests = {}      # request id -> {"kind", "context", "token", "body"}
        self.by_token = {}      # token -> request id
        self.accepted = {}      # request id -> call id (from ACCEPTED)
        self.oks = {}           # request id -> seq (from OK)
        self.dones = {}         # request id -> outcome (from DONE)
        self.errors = []        # (request id, frames) of ERROR or unexpected replies
        self.duplicate_replies = []  # (request id, frames) of a second ACCEPTED/OK/DONE

    def record(self, rid, frames):
        verb = frames[0]
        if rid not in self.requests:
            self.errors.append((rid, frames))
        elif verb == "ACCEPTED" and self.requests[rid]["kind"] != "append":
            if rid in self.accepted:
                self.duplicate_replies.append((rid, frames))
            self.accepted[rid] = frames[1]
        elif verb == "OK" and self.requests[rid]["kind"] == "append":
            if rid in self.oks:
                self.duplicate_replies.append((rid, frames))
            self.oks[rid] = json.loads(frames[1])["seq"]
        elif verb == "DONE" and self.requests[rid]["kind"] == "output":
            if rid in self.dones:
                self.duplicate_replies.append((rid, frames))
            outcome = json.loads(frames[2])
            self.dones[rid] = outcome
            if outcome.get("call_id") != frames[1]:
                self.errors.append((rid, frames))
        else:
            self.errors.append((rid, frames))


class Pipeline:
    """CLIENTS DEALER sockets with fixed routing ids, each keeping up to
    WINDOW requests in flight; replies go to the ledger."""

    def __init__(self, endpoint, ledger):
        self.endpoint = endpoint
        self.ledger = ledger
        self.clients = []
        self.inflight = []
        self.connect()

    def connect(self):
        self.clients = [Client(self.endpoint, identity=b"crash-client-%d" % i)
                        for i in range(CLIENTS)]
        self.inflight = [set() for _ in range(CLIENTS)]

    def close(self):
        """Read what already arrived, then drop the sockets: requests still
        in flight become unknown."""
        self.receive(0)
        for client in self.clients:
            client.close()
        self.clients = []
        self.inflight = []

    def busy(self):
        return sum(len(rids) for rids in self.inflight)

    def room(self, index):
        return len(self.inflight[index]) < WINDOW

    def send(self, index, rid):
        request = self.ledger.requests[rid]
        command = "APPEND" if request["kind"] == "append" else "CALL"
        self.inflight[index].add(rid)
        self.clients[index].send(command, request["context"], request["body"], request_id=rid)

    def receive(self, timeout_ms):
        """Take every reply that arrives within timeout_ms (0: only those
        already there); returns how many came."""
        poller = zmq.Poller()
        for client in self.clients:
            poller.register(client.socket, zmq.POLLIN)
        wait = timeout_ms
        count = 0
        while True:
            ready = dict(poller.poll(wait))
            if not ready:
                return count
            for index, client in enumerate(self.clients):
                if client.socket not in ready:
                    continue
                while True:
                    try:
                        frames = client.socket.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    rid = frames[2].decode()
                    decoded = [frames[1].decode()] + [f.decode() for f in frames[3:]]
                    if frames[0] != b"ACTC01":
                        self.ledger.errors.append((rid, [f.decode(errors="replace") for f in frames]))
                        continue
                    self.ledger.record(rid, decoded)
                    self.inflight[index].discard(rid)
                    count += 1
            wait = 0


class TokenWorkers:
    """Workers that answer at once: "echo" returns its token and call id,
    "record" notes the token it ran (fire-and-forget)."""

    def __init__(self, endpoint, count=2, capacity=32):
        self.lock = threading.Lock()
        self.ran = set()
        self.workers = [Worker(endpoint, ["echo", "record"], self.handle, capacity=capacity,
                               name="crash-worker-%d" % i)
                        for i in range(count)]
        for worker in self.workers:
            worker.start()

    def handle(self, activity, params, meta):
        if activity == "record":
            with self.lock:
                self.ran.add(params["token"])
            return {"ran": params["token"]}
        return {"token": params["token"], "call_id": meta["call_id"]}

    def ran_tokens(self):
        with self.lock:
            return set(self.ran)

    def disconnects(self):
        return sum(worker.disconnects for worker in self.workers)

    def stop(self):
        for worker in self.workers:
            worker.stop()


def stats(actd):
    client = actd.client()
    try:
        return client.value("STATS", timeout=30.0)
    finally:
        client.close()


def wait_workers(actd, count, timeout=60.0):
    """Poll STATS until count workers are registered (after a restart the
    harness workers are told DISCONNECT and send READY again)."""
    deadline = time.time() + timeout
    while True:
        registered = len(stats(actd)["workers"])
        if registered >= count:
            return
        if time.time() > deadline:
            raise AssertionError("%d of %d workers registered again after a restart:\n%s"
                                 % (registered, count, actd.log()[-4000:]))
        time.sleep(0.05)


def history(client, context, limit=1000):
    """Every message of context, paging HISTORY with from-seq and limit."""
    messages = []
    start = 1
    while True:
        page = client.value("HISTORY", context, str(start), str(limit), timeout=60.0)
        messages += page
        if len(page) < limit:
            return messages
        start = page[-1]["_seq"] + 1


def statuses(client, call_ids):
    """STATUS of every call id, pipelined 200 at a time."""
    found = {}
    call_ids = list(call_ids)
    for begin in range(0, len(call_ids), 200):
        batch = {client.send("STATUS", call_id): call_id for call_id in call_ids[begin:begin + 200]}
        for rid, call_id in batch.items():
            reply = client.wait(rid, timeout=60.0)
            found[call_id] = json.loads(reply[1]) if reply[0] == "VALUE" else reply
    return found


class CrashTest(unittest.TestCase):
    actd_args = ()              # the store's sync mode: the default, full

    def test_sigkill_at_random_moments_loses_nothing_acknowledged(self):
        seed = int(os.environ.get("ACTD_CRASH_SEED", random.randrange(1 << 31)))
        say("\ncrash test seed %d (ACTD_CRASH_SEED=%d replays its choices)" % (seed, seed))
        rng = random.Random(seed)
        ledger = Ledger()

        #  The requests, shuffled; each carries a token no other one has
        kinds = ["output"] * OUTPUT_CALLS + ["forget"] * FORGET_CALLS + ["append"] * APPENDS
        rng.shuffle(kinds)
        order = []
        for number, kind in enumerate(kinds):
            rid = "q%05d" % number
            token = "tok-%05d-%s" % (number, kind)
            context = rng.choice(CONTEXTS)
            if kind == "output":
                body = {"_tool": "echo", "_outputPath": LOG_PATH, "_outputMethod": "push",
                        "_retry": RETRY, "token": token}
            elif kind == "forget":
                body = {"_tool": "record", "_retry": RETRY, "token": token}
            else:
                body = {"type": "data", "kind": "note", "data": {"token": token}}
            ledger.requests[rid] = {"kind": kind, "context": context, "token": token, "body": body}
            ledger.by_token[token] = rid
            order.append(rid)
        #  Requests go out in bursts; kills are drawn at random moments of
        #  traffic time (time in the submission, restarts not counted) and
        #  land in the next burst, while the broker is busy with it
        bursts = []
        while sum(bursts) < len(order):
            bursts.append(rng.randint(*BURST_SIZES))
        span = len(bursts) * BURST_EVERY
        kill_at = sorted(rng.uniform(0.1, span) for _ in range(KILLS_WHILE_SUBMITTING))
        drain_kill_delay = rng.uniform(0.0, 0.5)
        say("%d bursts over %.1f s of traffic; kills at %s s (the second one killed again "
            "during recovery), and %.2f s into the drain"
            % (len(bursts), span, ", ".join("%.2f" % at for at in kill_at), drain_kill_delay))

        actd = Actd(heartbeat_ms=500, liveness=4, args=self.actd_args)
        actd.start()
        workers = TokenWorkers(actd.worker_endpoint)
        pipeline = None
        kills = 0
        started = time.time()
        try:
            wait_workers(actd, len(workers.workers))
            pipeline = Pipeline(actd.client_endpoint, ledger)

            def crash(recovery_kill=None):
                """SIGKILL, restart on the same store, reconnect the clients.
                recovery_kill: seconds after the restart to kill it again,
                while it recovers and workers come back."""
                nonlocal kills
                actd.kill()
                kills += 1
                pipeline.close()
                actd.start()
                pipeline.connect()
                if recovery_kill is not None:
                    deadline = time.time() + recovery_kill
                    while time.time() < deadline:
                        pipeline.receive(5)
                    crash()
                    return
                wait_workers(actd, len(workers.workers))

            #  Submit everything in bursts, at most WINDOW in flight per client
            sent = 0
            allowed = released = 0
            traffic = 0.0       # seconds of traffic so far
            kill_deadline = None
            kill_on_reply = False
            replies = 0
            while sent < len(order) or pipeline.busy() or kill_at or kill_deadline:
                tick = time.time()
                if kill_deadline is not None and (tick >= kill_deadline
                                                  or (kill_on_reply and replies)):
                    kill_deadline = None
                    crash(rng.uniform(0.0, 0.2) if kills == 1 else None)
                    tick = time.time()
                while released < len(bursts) and traffic >= released * BURST_EVERY:
                    allowed += bursts[released]
                    released += 1
                    #  A kill falls a few milliseconds into the next burst
                    #  after its moment: half of them as soon as the first
                    #  replies of the burst arrive (the broker has just
                    #  committed and is sending), the others at a random delay
                    if kill_deadline is None and kill_at and traffic >= kill_at[0]:
                        kill_at.pop(0)
                        kill_on_reply = rng.random() < 0.5
                        kill_deadline = tick + rng.uniform(0.0, 0.03)
                        if kill_on_reply:
                            kill_deadline = tick + 0.2
                if kill_deadline is None and kill_at and traffic >= kill_at[0] \
                        and released == len(bursts):
                    kill_at.pop(0)
                    kill_on_reply = False
                    kill_deadline = tick
                for index in range(CLIENTS):
                    while sent < min(allowed, len(order)) and pipeline.room(index):
                        pipeline.send(index, order[sent])
                        sent += 1
                replies = pipeline.receive(1 if kill_on_reply and kill_deadline else 5)
                traffic += time.time() - tick
            say("submitted %d requests in %.1f s" % (len(order), time.time() - started))

            #  One more crash while calls are still queued or running
            deadline = time.time() + drain_kill_delay
            while time.time() < deadline:
                pipeline.receive(20)
            crash()

            #  Drain: every accepted call ends
            deadline = time.time() + 240
            while True:
                pipeline.receive(100)
                calls = stats(actd)["calls"]
                if calls["running"] == 0 and calls["queued"] == 0 and calls["waiting"] == 0:
                    break
                self.assertLess(time.time(), deadline, "calls did not drain: %s" % calls)
            pipeline.receive(500)
            say("drained after %.1f s" % (time.time() - started))

            self.check(actd, ledger, workers, kills)
            pipeline.close()
            workers.stop()
            code = actd.stop()
            self.assertEqual(code, 0, "actd exited %s on SIGTERM:\n%s" % (code, actd.log()[-4000:]))
        except BaseException:
            actd.kill()
            say("actd's store and log are kept in %s" % actd.dir)
            raise
        finally:
            if pipeline and pipeline.clients:
                pipeline.close()
            workers.stop()
        actd.cleanup()

    def check(self, actd, ledger, workers, kills):
        #  A DONE whose ACCEPTED was lost in a crash still names the call
        call_of = dict(ledger.accepted)
        for rid, outcome in ledger.dones.items():
            call_of.setdefault(rid, outcome["call_id"])
        unknown = {rid for rid in ledger.requests if rid not in call_of and rid not in ledger.oks}
        say("kills %d; requests %d: calls accepted %d, DONE %d, appends OK %d, unknown %d, "
            "ERROR or unexpected replies %d"
            % (kills, len(ledger.requests), len(call_of), len(ledger.dones), len(ledger.oks),
               len(unknown), len(ledger.errors)))
        for rid, outcome in ledger.dones.items():
            self.assertEqual(outcome["call_id"], call_of[rid], "DONE of %s" % rid)
        rid_of_call = {}
        for rid, call_id in call_of.items():
            self.assertFalse(call_id in rid_of_call, "call id %s given to %s and %s"
                             % (call_id, rid_of_call.get(call_id), rid))
            rid_of_call[call_id] = rid

        self.assertEqual(ledger.errors[:10], [], "ERROR or unexpected replies")
        self.assertEqual(ledger.duplicate_replies[:10], [], "a request answered twice")

        client = actd.client()
        try:
            outputs = {}        # call id -> output message
            stray = {}          # call id -> request id, outputs of unknown requests
            appended = {}       # token -> appended message
            for context in CONTEXTS:
                messages = history(client, context)
                #  Pages of 37 read the same list as pages of 1000
                self.assertEqual(history(client, context, 37), messages, context)
                seqs = [message["_seq"] for message in messages]
                #  SEMANTICS 1: _seq is 1, 2, 3, ... per context
                self.assertEqual(seqs, list(range(1, len(messages) + 1)),
                                 "_seq of context %s has gaps, duplicates or disorder" % context)
                for message in messages:
                    self.assertEqual(message["type"], "data",
                                     "a message of %s other than data: %s" % (context, message))
                    if message.get("kind") == "note":
                        token = message["data"]["token"]
                        rid = ledger.by_token.get(token)
                        self.assertIsNotNone(rid, "an appended token never sent: %s" % message)
                        self.assertEqual(ledger.requests[rid]["kind"], "append", message)
                        self.assertEqual(ledger.requests[rid]["context"], context, message)
                        self.assertFalse(token in appended, "append %s stored twice: %s and %s"
                                         % (token, appended.get(token), message))
                        appended[token] = message
                        continue
                    #  An output of an "echo" call
                    self.assertEqual(message.get("kind"), "state", message)
                    self.assertEqual(message.get("_outputPath"), LOG_PATH, message)
                    self.assertEqual(message.get("_outputMethod"), "push", message)
                    call_id = message.get("_callId")
                    self.assertFalse(call_id in outputs, "call %s has two outputs: %s and %s"
                                     % (call_id, outputs.get(call_id), message))
                    outputs[call_id] = message
                    token = message["data"]["log"]["token"]
                    self.assertEqual(message["data"], {"log": {"token": token, "call_id": call_id}},
                                     message)
                    rid = ledger.by_token.get(token)
                    self.assertIsNotNone(rid, "an output for a token never sent: %s" % message)
                    request = ledger.requests[rid]
                    self.assertEqual(request["kind"], "output", message)
                    self.assertEqual(request["context"], context, message)
                    self.assertEqual(message["_call"], request["body"], message)
                    if rid in call_of:
                        self.assertEqual(call_id, call_of[rid],
                                         "output of %s has another call's id: %s" % (rid, message))
                    else:
                        #  A stray output is allowed only for a request whose reply was lost
                        self.assertTrue(rid in unknown, "output of %s, which was answered "
                                        "without this call: %s" % (rid, message))
                        self.assertFalse(call_id in rid_of_call, "output of %s under call id %s "
                                         "of %s: %s" % (rid, call_id, rid_of_call.get(call_id),
                                                        message))
                        stray[call_id] = rid
            output_tokens = sorted(m["data"]["log"]["token"] for m in outputs.values())
            twice = sorted({t for a, t in zip(output_tokens, output_tokens[1:]) if a == t})
            self.assertEqual(twice, [], "calls submitted once that wrote two outputs (tokens)")

            #  Every OK'd append is there once, at the seq OK reported
            for rid, seq in ledger.oks.items():
                token = ledger.requests[rid]["token"]
                self.assertTrue(token in appended, "APPEND %s was answered OK %d but is lost"
                                % (rid, seq))
                self.assertEqual(appended[token]["_seq"], seq, "APPEND %s" % rid)
                self.assertEqual(appended[token]["data"], {"token": token})

            #  Every accepted call with an output path wrote exactly one output
            for rid, call_id in call_of.items():
                if ledger.requests[rid]["kind"] != "output":
                    continue
                self.assertTrue(call_id in outputs, "call %s (%s) was ACCEPTED but its "
                                "output is missing" % (call_id, rid))
                self.assertEqual(outputs[call_id]["data"]["log"]["token"],
                                 ledger.requests[rid]["token"])
            #  and a DONE it got tells where
            for rid, outcome in ledger.dones.items():
                call_id = outcome["call_id"]
                message = outputs.get(call_id)
                self.assertIsNotNone(message, "DONE %s but no output" % outcome)
                self.assertEqual(outcome["status"], "ok", outcome)
                self.assertEqual(outcome["written"], [LOG_PATH], outcome)
                self.assertEqual(outcome["seqs"], [message["_seq"]], outcome)
                self.assertEqual(outcome["result"], message["data"]["log"], outcome)

            #  Every accepted call reached its outcome (and so did every
            #  call of an unknown request that wrote an output)
            found = statuses(client, list(rid_of_call) + list(stray))
            for call_id, status in found.items():
                rid = rid_of_call.get(call_id) or stray[call_id]
                self.assertIsInstance(status, dict, "STATUS %s: %s" % (call_id, status))
                self.assertEqual(status["state"], "ok", "call %s (%s): %s" % (call_id, rid, status))
                self.assertEqual(status["context"], ledger.requests[rid]["context"], status)
                self.assertEqual(status["outcome"]["status"], "ok", status)
                self.assertGreaterEqual(status["attempts"], 1, status)

            #  Fire-and-forget calls ran at least once
            ran = workers.ran_tokens()
            for rid in call_of:
                request = ledger.requests[rid]
                if request["kind"] == "forget":
                    self.assertTrue(request["token"] in ran, "fire-and-forget call %s (%s) "
                                    "ended ok but never ran" % (call_of[rid], rid))
            never_sent = ran - set(ledger.by_token)
            self.assertEqual(never_sent, set(), "workers ran tokens never sent")
        finally:
            client.close()

        output_tokens = set(output_tokens)
        unknown_applied = sum(1 for rid in unknown
                              if ledger.requests[rid]["token"] in appended
                              or ledger.requests[rid]["token"] in output_tokens
                              or ledger.requests[rid]["token"] in ran)
        retried = sum(1 for status in found.values() if status["attempts"] > 1)
        say("all checks passed: unknown requests applied %d; outputs %d, appended %d; "
            "calls with more than one attempt %d; worker DISCONNECTs %d"
            % (unknown_applied, len(outputs), len(appended), retried, workers.disconnects()))


class RestartTest(unittest.TestCase):

    def test_restart_recovers_waiting_queued_and_running_calls(self):
        actd = Actd()
        actd.start()
        try:
            first = Worker(actd.worker_endpoint, ["held"], lambda a, p, m: NoAnswer, name="holder")
            first.start()
            wait_workers(actd, 1)
            client = Client(actd.client_endpoint, identity=b"fixed-client")
            calls = {
                "running": {"_tool": "held", "_outputPath": DAGGER + "held.x", "n": 1},
                "queued_a": {"_tool": "later", "_outputPath": DAGGER + "q.a", "n": 2},
                "queued_b": {"_tool": "later", "_outputPath": DAGGER + "q.b", "n": 3},
                "queued_forget": {"_tool": "later", "n": 4},
                "waiting": {"_tool": "later", "_outputPath": DAGGER + "w.x", "v": DAGGER + "q.a"},
            }
            rids, ids = {}, {}
            for name in ["running", "queued_a", "queued_b", "queued_forget", "waiting"]:
                rids[name] = client.send("CALL", "recover", calls[name])
                reply = client.wait(rids[name], timeout=20.0)
                self.assertEqual(reply[0], "ACCEPTED", reply)
                ids[name] = reply[1]
            held = client.wait_status(ids["running"], ["running"])
            self.assertEqual(held["attempts"], 1)
            for name in ["queued_a", "queued_b", "queued_forget"]:
                self.assertEqual(client.status(ids[name])["state"], "queued")
            waiting = client.status(ids["waiting"])
            self.assertEqual(waiting["state"], "waiting")
            self.assertEqual(waiting["waiting_on"], [DAGGER + "q.a"])
            self.assertEqual([task[0] for task in first.tasks], [ids["running"] + ".1"])

            actd.kill()
            client.close()
            first.stop()
            actd.start()

            #  Recovered: nothing ran meanwhile, the running call is queued again
            client = Client(actd.client_endpoint, identity=b"fixed-client")
            held = client.status(ids["running"])
            self.assertEqual((held["state"], held["attempts"]), ("queued", 1), held)
            for name in ["queued_a", "queued_b", "queued_forget"]:
                status = client.status(ids[name])
                self.assertEqual((status["state"], status["attempts"]), ("queued", 0), status)
            waiting = client.status(ids["waiting"])
            self.assertEqual(waiting["state"], "waiting", waiting)
            self.assertEqual(waiting["waiting_on"], [DAGGER + "q.a"], waiting)

            def answer(activity, params, meta):
                return {"params": params, "attempt": meta["attempt"]}
            second = Worker(actd.worker_endpoint, ["held", "later"], answer, capacity=4,
                            name="after-restart")
            second.start()
            try:
                #  DONE reaches the new socket with the same routing id, with
                #  the request ids of before the crash
                dones = {}
                for name in ["running", "queued_a", "queued_b", "waiting"]:
                    done = client.wait(rids[name], "DONE", timeout=30.0)
                    self.assertEqual(done[1], ids[name])
                    dones[name] = json.loads(done[2])
                self.assertEqual(dones["running"]["status"], "ok", dones["running"])
                self.assertEqual(dones["running"]["attempts"], 2, dones["running"])
                self.assertEqual(dones["running"]["result"], {"params": {"n": 1}, "attempt": 2})
                self.assertEqual(dones["queued_a"]["result"], {"params": {"n": 2}, "attempt": 1})
                self.assertEqual(dones["queued_b"]["result"], {"params": {"n": 3}, "attempt": 1})
                self.assertEqual(dones["waiting"]["result"],
                                 {"params": {"v": {"params": {"n": 2}, "attempt": 1}}, "attempt": 1})
                for name in ["running", "queued_a", "queued_b", "waiting"]:
                    self.assertEqual(dones[name]["status"], "ok", dones[name])
                    status = client.status(ids[name])
                    self.assertEqual(status["state"], "ok", status)
                    self.assertEqual(status["outcome"], dones[name])
                forget = client.wait_status(ids["queued_forget"], ["ok", "error", "timeout",
                                                                   "skipped", "cancelled"])
                self.assertEqual((forget["state"], forget["attempts"]), ("ok", 1), forget)
                ran = sorted(task[0] for task in second.tasks)
                self.assertEqual(ran, sorted([ids["running"] + ".2", ids["queued_a"] + ".1",
                                              ids["queued_b"] + ".1", ids["queued_forget"] + ".1",
                                              ids["waiting"] + ".1"]))
                seqs = [message["_seq"] for message in client.value("HISTORY", "recover", "1", "1000")]
                self.assertEqual(seqs, [1, 2, 3, 4])
            finally:
                second.stop()
                client.close()
            code = actd.stop()
            self.assertEqual(code, 0, "actd exited %s on SIGTERM:\n%s" % (code, actd.log()[-4000:]))
        finally:
            actd.cleanup()


    def test_restart_never_runs_more_attempts_than_retry_allows(self):
        """A crash during a call's last allowed attempt does not give it
        one more: at the restart the attempt counts, and the call ends
        worker_lost (attempts == max_attempts) without running again."""
        actd = Actd()
        actd.start()
        try:
            holder = Worker(actd.worker_endpoint, ["held"], lambda a, p, m: NoAnswer, name="holder")
            holder.start()
            wait_workers(actd, 1)
            client = Client(actd.client_endpoint, identity=b"fixed-client")
            last = client.send("CALL", "attempts", {
                "_tool": "held", "_outputPath": DAGGER + "out.x", "_retry": {"max_attempts": 2}})
            ids = {"last": client.wait(last, timeout=20.0)[1]}
            #  Attempt 1 is lost with its worker; attempt 2 (the last) runs
            holder.stop()
            held = client.wait_status(ids["last"], ["queued"])
            second = Worker(actd.worker_endpoint, ["held"], lambda a, p, m: NoAnswer, name="second")
            second.start()
            held = client.wait_status(ids["last"], ["running"])
            self.assertEqual(held["attempts"], 2, held)
            spare = client.send("CALL", "attempts", {
                "_tool": "held", "_outputPath": DAGGER + "out.y", "_retry": {"max_attempts": 2}})
            ids["spare"] = client.wait(spare, timeout=20.0)[1]
            actd.kill()
            client.close()
            second.stop()
            actd.start()
            client = Client(actd.client_endpoint, identity=b"fixed-client")
            after = Worker(actd.worker_endpoint, ["held"], lambda a, p, m: {"ran": True},
                           name="after")
            after.start()
            try:
                #  It ended at recovery, maybe before this socket connected:
                #  a client that reconnects asks with STATUS (PROTOCOL.md 1)
                status = client.wait_status(ids["last"], ["ok", "error", "timeout", "skipped",
                                                          "cancelled"])
                done = status["outcome"]
                self.assertEqual((status["state"], status["attempts"]), ("error", 2), status)
                self.assertEqual(done["error"]["code"], "worker_lost", done)
                spare_done = json.loads(client.wait(spare, "DONE", timeout=30.0)[2])
                self.assertEqual(spare_done["status"], "ok", spare_done)
                #  The worker after the restart ran only the call with an
                #  attempt left
                self.assertEqual([task[0].split(".")[0] for task in after.tasks], [ids["spare"]])
            finally:
                after.stop()
                client.close()
            self.assertEqual(actd.stop(), 0)
        finally:
            actd.cleanup()

    def test_a_call_running_past_the_grace_of_a_stop_runs_again(self):
        """PROTOCOL.md 2.5: calls that had not ended when a SIGTERM's grace
        ran out run again at the next start. A clean stop is not a crash:
        the attempt it interrupted does not end the call, even its last
        allowed one, and the next attempt has a new task id."""
        actd = actd_with_config("server\n    shutdown_grace_ms = 300\n")
        actd.start()
        try:
            holder = Worker(actd.worker_endpoint, ["held"], lambda a, p, m: NoAnswer,
                            name="holder")
            holder.start()
            wait_workers(actd, 1)
            client = Client(actd.client_endpoint, identity=b"fixed-client")
            rid = client.send("CALL", "stopped", {
                "_tool": "held", "_outputPath": DAGGER + "out.x", "_retry": {"max_attempts": 1}})
            call_id = client.wait(rid, timeout=20.0)[1]
            self.assertEqual(client.wait_status(call_id, ["running"])["attempts"], 1)
            self.assertEqual(actd.stop(), 0)
            holder.stop()
            client.close()
            actd.start()
            client = Client(actd.client_endpoint, identity=b"fixed-client")
            after = Worker(actd.worker_endpoint, ["held"],
                           lambda a, p, m: {"attempt": m["attempt"]}, name="after")
            after.start()
            try:
                status = client.wait_status(call_id, ["ok", "error", "timeout", "skipped",
                                                      "cancelled"])
                self.assertEqual((status["state"], status["attempts"]), ("ok", 2), status)
                self.assertEqual(status["outcome"]["result"], {"attempt": 2})
                self.assertEqual([task[0] for task in after.tasks], [call_id + ".2"])
            finally:
                after.stop()
                client.close()
            self.assertEqual(actd.stop(), 0)
        finally:
            actd.cleanup()


@unittest.skipIf(STORE != "sqlite", "store/sync is SQLite's")
class SigkillNormalSyncTest(CrashTest):
    """The SIGKILL test with store/sync normal: a commit is not fsynced, so
    what a crash of actd must not lose is what each commit wrote to the
    file before its replies left. The store's VFS holds a commit's WAL
    frames in memory until its commit frame is complete (docs/operations.md
    section 6); with sync full the fsync would write them out anyway."""
    actd_args = ("--sync", "normal")


if __name__ == "__main__":
    unittest.main()
