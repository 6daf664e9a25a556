#!/usr/bin/python3
"""Soak test: minutes of mixed load against a real actd, watching its memory.

    /usr/bin/python3 bench/soak.py [--minutes 10] [--actd PATH] [--clients 4]
                                   [--workers 4] [--report 30]

Not a CI test (it takes minutes); run it by hand before a release. What it does:

- starts actd (a RelWithDebInfo build in build-soak/, made when --actd is not
  given) on free loopback ports with a temporary SQLite store, contexts
  leaving memory after 5 s idle;
- starts worker processes (raw ACT/1, this file run with --worker: capacity
  1 to 4, answering RESULT, sometimes branch 1, sometimes FAIL, sometimes
  PROGRESS first), and every few seconds kills one with SIGKILL or lets one
  leave with DISCONNECT, and starts a new one;
- runs client threads that send, at a bounded rate, calls with and without
  outputs (set, merge, push, concat; alternatives and fan-outs; instances),
  APPENDs, RESOLVEs, PLANs of chained calls, VIEWs, HISTORYs, STATUSes and
  CANCELs, each client moving to a new context now and then;
- prints actd's RSS (from /proc) and its STATS every --report seconds.

At the end it stops the load, waits for the live calls to end, asks STATUS
of every accepted call (each must have ended with an outcome), compares the
RSS slope of the last third of the run with the first third, stops actd
with SIGTERM (exit 0 expected) and prints a summary. Exits 1 when a call has
no outcome, actd died or did not stop cleanly, or RSS kept growing.

Everything goes to 127.0.0.1; every loop is bounded by the run's duration.
"""

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import zmq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
D = "\u2020"
ENDED = ("ok", "error", "timeout", "skipped", "cancelled")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---------------------------------------------------------------------------
# A worker process (soak.py --worker ENDPOINT SEED)

def worker_main(endpoint, seed):
    rng = random.Random(seed)
    capacity = rng.randint(1, 4)
    context = zmq.Context.instance()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)

    def ready():
        sock.send_multipart([b"ACTW01", b"READY", json.dumps(
            {"activities": ["fast", "slow", "flaky", "plan"], "capacity": capacity,
             "name": "soak-%d" % seed, "lang": "python-soak"}).encode()])

    ready()
    pending = []            # (due, task, activity, params)
    last = time.time()
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *a: stop.update(now=True))
    while not stop["now"]:
        if sock.poll(20):
            frames = sock.recv_multipart()
            command = frames[1]
            if command == b"TASK":
                activity = frames[3].decode()
                delay = {"fast": 0.002, "slow": 0.3, "flaky": 0.05, "plan": 0.01}.get(activity, 0.01)
                pending.append((time.time() + rng.uniform(0, delay), frames[2], activity,
                                json.loads(frames[4])))
            elif command == b"DISCONNECT":
                sock.close(0)
                sock = context.socket(zmq.DEALER)
                sock.setsockopt(zmq.LINGER, 0)
                sock.connect(endpoint)
                pending = []
                ready()
        now = time.time()
        for item in [p for p in pending if p[0] <= now]:
            pending.remove(item)
            _, task, activity, params = item
            roll = rng.random()
            if activity == "flaky" and roll < 0.3:
                body = {"message": "flaky failure", "code": "flaky",
                        "retryable": rng.random() < 0.7}
                sock.send_multipart([b"ACTW01", b"FAIL", task, json.dumps(body).encode()])
                continue
            if roll < 0.05:
                sock.send_multipart([b"ACTW01", b"PROGRESS", task, b'{"pct": 50}'])
            result = {"echo": params, "n": rng.randint(0, 1000), "tags": ["t%d" % rng.randint(0, 9)]}
            frames = [b"ACTW01", b"RESULT", task, json.dumps(result).encode()]
            if roll > 0.9:
                frames.append(b"1")          # the second alternative
            sock.send_multipart(frames)
            last = now
        if now - last > 0.5:
            sock.send_multipart([b"ACTW01", b"HEARTBEAT"])
            last = now
    sock.send_multipart([b"ACTW01", b"DISCONNECT"])
    sock.close(0)


# ---------------------------------------------------------------------------
# The soak

class Soak:
    def __init__(self, args):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="actd-soak-")
        self.client_endpoint = "tcp://127.0.0.1:%d" % free_port()
        self.worker_endpoint = "tcp://127.0.0.1:%d" % free_port()
        self.lock = threading.Lock()
        self.accepted = set()           # call ids ACCEPTED
        self.newest = 1                 # the highest of them
        self.counts = {}                # operation -> count
        self.errors = {}                # ERROR code -> count
        self.stop = threading.Event()
        self.workers = []               # Popen
        self.churn = {"killed": 0, "left": 0, "started": 0}
        self.samples = []               # (seconds since start, rss KiB)
        self.seed = 0

    def count(self, name, table=None):
        with self.lock:
            table = self.counts if table is None else table
            table[name] = table.get(name, 0) + 1

    # -- actd --------------------------------------------------------------

    def actd_binary(self):
        if self.args.actd:
            return self.args.actd
        build = os.path.join(ROOT, "build-soak")
        steps = [["cmake", "--build", build, "--target", "actd-daemon", "-j2"]]
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            steps.insert(0, ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"])
        for step in steps:
            done = subprocess.run(step, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if done.returncode:
                raise SystemExit("soak: %s failed:\n%s" % (" ".join(step), done.stdout[-4000:]))
        return os.path.join(build, "bin", "actd")

    def start_actd(self):
        config = os.path.join(self.dir, "actd.cfg")
        with open(config, "w") as handle:
            handle.write("server\n    heartbeat_ms = 500\n    liveness = 3\n"
                         "    context_idle_ms = 5000\n    max_contexts = 200\n"
                         "defaults\n    timeout_ms = 10000\n    schedule_timeout_ms = 20000\n"
                         "    retry\n        max_attempts = 3\n        initial_ms = 50\n"
                         "        max_ms = 500\n")
        self.log_path = os.path.join(self.dir, "actd.log")
        self.log = open(self.log_path, "w")
        self.actd = subprocess.Popen(
            [self.actd_binary(), "--config", config, "--db", os.path.join(self.dir, "actd.db"),
             "--client-endpoint", self.client_endpoint, "--worker-endpoint", self.worker_endpoint,
             "--log-level", "notice", "-v"], stdout=self.log, stderr=self.log)
        client = self.socket()
        deadline = time.time() + 30
        while time.time() < deadline:
            client.send_multipart([b"ACTC01", b"PING", b"p"])
            if client.poll(500):
                client.recv_multipart()
                client.close(0)
                return
        raise SystemExit("actd did not answer PING; log: " + self.log_path)

    def rss_kib(self):
        try:
            with open("/proc/%d/status" % self.actd.pid) as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def socket(self):
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self.client_endpoint)
        return sock

    def request(self, sock, *frames, timeout=30.0):
        """One request, its first reply (DONEs of other requests are skipped)."""
        rid = ("q%d" % random.getrandbits(48)).encode()
        sock.send_multipart([b"ACTC01", frames[0].encode(), rid] +
                            [f if isinstance(f, bytes) else f.encode() for f in frames[1:]])
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not sock.poll(int(max(0.0, deadline - time.time()) * 1000)):
                break
            reply = sock.recv_multipart()
            if reply[2] == rid and reply[1] != b"DONE":
                return [f.decode() for f in reply[1:2] + reply[3:]]
        raise TimeoutError("no reply to %s" % frames[0])

    def stats(self):
        sock = self.socket()
        try:
            reply = self.request(sock, "STATS", timeout=30)
            return json.loads(reply[1]) if reply[0] == "VALUE" else None
        finally:
            sock.close(0)

    # -- workers -----------------------------------------------------------

    def start_worker(self):
        self.seed += 1
        self.workers.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", self.worker_endpoint,
             str(self.seed)]))
        self.churn["started"] += 1

    def churn_workers(self):
        rng = random.Random(7)
        for _ in range(self.args.workers):
            self.start_worker()
        while not self.stop.wait(rng.uniform(3, 8)):
            victim = self.workers.pop(rng.randrange(len(self.workers)))
            if rng.random() < 0.6:
                victim.kill()               # a crash: actd finds out by silence
                self.churn["killed"] += 1
            else:
                victim.terminate()          # it says DISCONNECT
                self.churn["left"] += 1
            victim.wait()
            self.start_worker()

    # -- clients -----------------------------------------------------------

    def client(self, number):
        rng = random.Random(1000 + number)
        sock = self.socket()
        generation = 0
        context = "soak-%d-%d" % (number, generation)
        ops = 0
        outstanding = 0                     # requests sent, first reply not read
        pending = {}                        # rid -> operation
        while not self.stop.is_set():
            ops += 1
            if ops % 150 == 0:
                generation += 1
                context = "soak-%d-%d" % (number, generation)
            op, frames = self.operation(rng, context, ops)
            rid = ("c%d-%d" % (number, ops)).encode()
            sock.send_multipart([b"ACTC01", op.encode(), rid] +
                                [f if isinstance(f, bytes) else f.encode() for f in frames])
            pending[rid] = op
            outstanding += 1
            self.count(op)
            # Read what has come; keep at most 32 requests unanswered
            while outstanding > 0 and sock.poll(0 if outstanding < 32 else 2000):
                reply = sock.recv_multipart()
                verb, rid_in = reply[1].decode(), reply[2]
                if verb == "DONE":
                    continue
                if rid_in in pending:
                    del pending[rid_in]
                    outstanding -= 1
                if verb == "ACCEPTED":
                    body = reply[3].decode()
                    ids = json.loads(body) if body.startswith("[") else [body]
                    with self.lock:
                        self.accepted.update(ids)
                        self.newest = max([self.newest] + [int(i) for i in ids])
                elif verb == "ERROR":
                    self.count(reply[3].decode(), self.errors)
            time.sleep(1.0 / self.args.rate)
        # Drain the last replies
        deadline = time.time() + 30
        while outstanding > 0 and time.time() < deadline and sock.poll(1000):
            reply = sock.recv_multipart()
            if reply[1] == b"DONE":
                continue
            if reply[2] in pending:
                del pending[reply[2]]
                outstanding -= 1
            if reply[1] == b"ACCEPTED":
                body = reply[3].decode()
                with self.lock:
                    self.accepted.update(json.loads(body) if body.startswith("[") else [body])
        sock.close(0)

    def operation(self, rng, context, ops):
        s = D + "state"
        roll = rng.random()
        key = "k%d" % rng.randint(0, 20)
        if roll < 0.25:
            method, value_path = rng.choice([("set", s + "." + key), ("merge", s + ".m"),
                                             ("push", s + ".list"), ("concat", s + ".tags")])
            call = {"_tool": rng.choice(["fast"] * 6 + ["slow", "flaky", "flaky"]),
                    "_outputPath": value_path,
                    "_outputMethod": method, "x": ops}
            if rng.random() < 0.2:
                call["_outputPath"] = s + ".ok." + key + " || " + s + ".err." + key
            if rng.random() < 0.1:
                call["_outputPath"] = s + ".a." + key + " && " + s + ".b." + key
            if rng.random() < 0.2:
                call["_instance"] = "i%d" % rng.randint(0, 3)
            if rng.random() < 0.3:
                call["in"] = s + "." + key + " || " + s + ".m"
            if rng.random() < 0.1:
                call["_id"] = "id-%d" % rng.randint(0, 50)
            if rng.random() < 0.05:
                call["_timeout"] = 100
            return "CALL", [context, json.dumps(call)]
        if roll < 0.40:
            return "CALL", [context, json.dumps({"_tool": rng.choice(["fast"] * 9 + ["slow"]),
                                                 "n": ops})]
        if roll < 0.60:
            message = {"type": "data", "kind": rng.choice(["user", "notes", "state"]),
                       "data": {key: ops, "text": "x" * rng.randint(0, 200)}}
            if rng.random() < 0.2:
                message["_instance"] = "i%d" % rng.randint(0, 3)
            return "APPEND", [context, json.dumps(message)]
        if roll < 0.75:
            expression = rng.choice([s + "." + key, D + "user", s + ".list || " + s + ".m",
                                     D + "notes." + key])
            return "RESOLVE", [context, expression]
        if roll < 0.83:
            first = s + ".p%d" % ops
            plan = [{"_tool": "plan", "_outputPath": first},
                    {"_tool": "plan", "_outputPath": first + "x", "in": first},
                    {"_tool": "fast", "in": first + "x"}]
            return "PLAN", [context, json.dumps(plan)]
        if roll < 0.88:
            return "VIEW", [context] + (["text"] if rng.random() < 0.5 else [])
        if roll < 0.92:
            return "HISTORY", [context, "1", "50"]
        # The newest calls: some still live, so CANCEL meets every state
        known = str(max(1, self.newest - rng.randint(0, 20)))
        if roll < 0.97:
            return "STATUS", [known]
        return "CANCEL", [known]

    # -- the run -----------------------------------------------------------

    def run(self):
        args = self.args
        self.start_actd()
        start = time.time()
        threads = [threading.Thread(target=self.churn_workers, daemon=True)]
        threads += [threading.Thread(target=self.client, args=(n,), daemon=True)
                    for n in range(args.clients)]
        for thread in threads:
            thread.start()
        print("soak: %d minutes, %d clients, %d workers (churned), actd pid %d, store %s"
              % (args.minutes, args.clients, args.workers, self.actd.pid, self.dir), flush=True)
        end = start + args.minutes * 60
        next_report = start
        died = False
        while time.time() < end:
            if self.actd.poll() is not None:
                died = True
                break
            if time.time() >= next_report:
                rss = self.rss_kib()
                elapsed = time.time() - start
                self.samples.append((elapsed, rss))
                stats = self.stats() or {}
                calls = stats.get("calls", {})
                print("t=%4ds rss=%7.1f MiB  accepted=%-7d ok=%-7d error=%-5d timeout=%-4d "
                      "skipped=%-4d cancelled=%-4d live=%d contexts=%s"
                      % (elapsed, rss / 1024.0, calls.get("accepted", 0), calls.get("ok", 0),
                         calls.get("error", 0), calls.get("timeout", 0), calls.get("skipped", 0),
                         calls.get("cancelled", 0), calls.get("running", 0) + calls.get("queued", 0)
                         + calls.get("waiting", 0), stats.get("contexts")), flush=True)
                next_report += args.report
            time.sleep(0.5)
        self.stop.set()
        for thread in threads:
            thread.join(60)
        return self.finish(start, died)

    def finish(self, start, died):
        problems = []
        if died:
            problems.append("actd died (exit %s) during the run" % self.actd.returncode)
        unended = {}
        outcomes = {}
        if not died:
            # Let the live calls end (workers keep serving)
            for _ in range(self.args.workers):
                self.start_worker()
            deadline = time.time() + 120
            while time.time() < deadline:
                calls = (self.stats() or {}).get("calls", {})
                if calls.get("running", 0) + calls.get("queued", 0) + calls.get("waiting", 0) == 0:
                    break
                time.sleep(1)
            rss = self.rss_kib()
            self.samples.append((time.time() - start, rss))
            # STATUS of every accepted call, pipelined
            sock = self.socket()
            ids = sorted(self.accepted, key=int)
            for index in range(0, len(ids), 200):
                batch = ids[index:index + 200]
                for call_id in batch:
                    sock.send_multipart([b"ACTC01", b"STATUS", call_id.encode(), call_id.encode()])
                for _ in batch:
                    if not sock.poll(30000):
                        problems.append("STATUS replies stopped coming")
                        break
                    reply = sock.recv_multipart()
                    if reply[1] == b"DONE":
                        continue
                    call_id = reply[2].decode()
                    if reply[1] != b"VALUE":
                        unended[call_id] = "%s %s" % (reply[1].decode(), reply[3:4])
                        continue
                    status = json.loads(reply[3])
                    state = status["state"]
                    if state not in ENDED or "outcome" not in status:
                        unended[call_id] = state
                    else:
                        outcomes[state] = outcomes.get(state, 0) + 1
            sock.close(0)
        for process in self.workers:
            process.terminate()
        for process in self.workers:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
        code = None
        if self.actd.poll() is None:
            self.actd.send_signal(signal.SIGTERM)
            try:
                code = self.actd.wait(60)
            except subprocess.TimeoutExpired:
                self.actd.kill()
                problems.append("actd did not stop within 60 s of SIGTERM")
        else:
            code = self.actd.returncode
        if code != 0:
            problems.append("actd exited %s" % code)
        if unended:
            problems.append("%d accepted calls have no outcome, e.g. %s"
                            % (len(unended), list(unended.items())[:5]))

        # RSS: least-squares slope over the first and the last third
        def slope(points):
            if len(points) < 2:
                return 0.0
            n = len(points)
            mx = sum(p[0] for p in points) / n
            my = sum(p[1] for p in points) / n
            var = sum((p[0] - mx) ** 2 for p in points)
            return 0.0 if var == 0 else sum((p[0] - mx) * (p[1] - my) for p in points) / var

        samples = [(t, r) for t, r in self.samples if r is not None]
        third = max(2, len(samples) // 3)
        first = slope(samples[:third]) * 60 / 1024.0       # MiB per minute
        last = slope(samples[-third:]) * 60 / 1024.0
        growing = last > 0.5 and last > 0.25 * max(first, 0.0)
        if growing:
            problems.append("RSS still growing: %.2f MiB/min over the last third (%.2f first)"
                            % (last, first))
        print()
        print("soak summary")
        print("  ran            %.1f minutes" % ((time.time() - start) / 60))
        print("  requests       %s" % ", ".join("%s %d" % kv for kv in sorted(self.counts.items())))
        print("  ERROR replies  %s" % (", ".join("%s %d" % kv for kv in sorted(self.errors.items()))
                                       or "none"))
        print("  calls          %d accepted; outcomes %s; %d without one"
              % (len(self.accepted), ", ".join("%s %d" % kv for kv in sorted(outcomes.items())),
                 len(unended)))
        print("  workers        %(started)d started, %(killed)d killed (SIGKILL), "
              "%(left)d left (DISCONNECT)" % self.churn)
        if samples:
            print("  RSS            first %.1f MiB, last %.1f MiB, max %.1f MiB"
                  % (samples[0][1] / 1024.0, samples[-1][1] / 1024.0,
                     max(r for _, r in samples) / 1024.0))
        print("  RSS slope      first third %.2f MiB/min, last third %.2f MiB/min: %s"
              % (first, last, "still growing" if growing else "stopped growing"))
        print("  actd           exit %s on SIGTERM; log %s" % (code, self.log_path))
        print("  verdict        %s" % ("PASS" if not problems else "FAIL: " + "; ".join(problems)))
        return 0 if not problems else 1


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2], int(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--actd", help="actd binary (default: build-soak/bin/actd, built here)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rate", type=float, default=40, help="requests per second per client")
    parser.add_argument("--report", type=float, default=30, help="seconds between RSS lines")
    args = parser.parse_args()
    return Soak(args).run()


if __name__ == "__main__":
    sys.exit(main())
