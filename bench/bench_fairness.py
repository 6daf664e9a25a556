#!/usr/bin/env python3
"""bench_fairness: one heavy reader must not stall everyone else (issue 16).

A steady workload against a real actd (SQLite file store): durable calls
through one echo worker (actd-example-worker, capacity 16), a window of 32
calls in flight, and a PING every 10 ms from another client. It runs
alone, then beside a heavy reader: a client reading a context of 8 MB
whole (HISTORY, 4 requests in flight, reading its replies), and one that
sends HISTORY requests and never reads. For each run it prints calls per
second, the PING latency (p50, p99, max), actd's peak RSS, and the ratios
of the second run to the first. Nothing here is a test: the figures move
with the machine.

    /usr/bin/python3 bench/bench_fairness.py [--seconds S] [--context-mb M]

ACTD_BIN (default build/bin/actd) and ACTD_WORKER_BIN (default
build/bin/actd-example-worker) choose the programs.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "tests", "integration"))
from harness import free_port  # noqa: E402  (below the ephemeral port range)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def dealer(endpoint, rcvhwm=1000):
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVHWM, rcvhwm)
    sock.connect(endpoint)
    return sock


def request(sock, *frames, timeout=60):
    sock.send_multipart([b"ACTC01"] + [f if isinstance(f, bytes) else f.encode() for f in frames])
    if not sock.poll(timeout * 1000):
        raise TimeoutError(frames[0])
    return sock.recv_multipart()


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Broker:
    """actd on a fresh SQLite file, with one echo worker."""

    def __init__(self, actd_bin, worker_bin):
        self.dir = tempfile.mkdtemp(prefix="bench-fair-")
        self.client = "tcp://127.0.0.1:%d" % free_port()
        worker = "tcp://127.0.0.1:%d" % free_port()
        self.process = subprocess.Popen(
            [actd_bin, "--db", os.path.join(self.dir, "actd.db"), "--client-endpoint",
             self.client, "--worker-endpoint", worker, "--log-level", "warning"],
            cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sock = dealer(self.client)
        deadline = time.time() + 20
        while True:
            try:
                request(sock, "PING", "p", timeout=1)
                break
            except TimeoutError:
                if time.time() > deadline:
                    raise
        sock.close(0)
        self.worker = subprocess.Popen([worker_bin, "--endpoint", worker, "--capacity", "16"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def close(self):
        for process in (self.worker, self.process):
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def steady(broker, seconds, window=32):
    """Calls and PINGs for seconds: (calls/s, PING latencies, peak RSS kB)."""
    stop = threading.Event()
    latencies, peak = [], [0]

    def ping():
        sock = dealer(broker.client)
        n = 0
        while not stop.is_set():
            n += 1
            started = time.time()
            request(sock, "PING", "p%d" % n, timeout=120)
            latencies.append(time.time() - started)
            peak[0] = max(peak[0], rss_kb(broker.process.pid))
            time.sleep(0.01)
        sock.close(0)
    pinger = threading.Thread(target=ping)
    pinger.start()
    sock = dealer(broker.client)
    call = json.dumps({"_tool": "echo", "n": 1, "_outputPath": "\u2020state.echo"})
    sent = done = 0
    started = time.time()
    while time.time() - started < seconds or done < sent:
        while sent - done < window and time.time() - started < seconds:
            sent += 1
            sock.send_multipart([b"ACTC01", b"CALL", b"c%d" % sent,
                                 b"steady-%d" % (sent % 8), call.encode()])
        if not sock.poll(120000):
            raise TimeoutError("calls")
        frames = sock.recv_multipart()
        if frames[1] == b"DONE":
            done += 1
        elif frames[1] == b"ERROR":
            raise RuntimeError(frames)
    elapsed = time.time() - started
    stop.set()
    pinger.join()
    sock.close(0)
    return done / elapsed, latencies, peak[0]


def heavy(broker, context_mb, stop):
    """A reader of the whole context (4 in flight) and one that never reads."""
    writer = dealer(broker.client)
    piece = "x" * (500 * 1000)
    for n in range(context_mb * 2):
        message = {"type": "data", "kind": "input", "data": {"k%d" % n: piece}}
        reply = request(writer, "APPEND", "a%d" % n, "heavy", json.dumps(message))
        assert reply[1] == b"OK", reply
    writer.close(0)
    pages = [0]

    def reader():
        sock = dealer(broker.client)
        for n in range(4):
            sock.send_multipart([b"ACTC01", b"HISTORY", b"h%d" % n, b"heavy", b"1", b"1000"])
        while not stop.is_set():
            if sock.poll(1000):
                reply = sock.recv_multipart()
                assert reply[1] == b"VALUE", reply[:5]
                pages[0] += 1
                sock.send_multipart([b"ACTC01", b"HISTORY", b"h", b"heavy", b"1", b"1000"])
        sock.close(0)

    def sink():
        sock = dealer(broker.client, rcvhwm=1)
        sock.setsockopt(zmq.RCVBUF, 4096)
        n = 0
        while not stop.is_set():
            n += 1
            sock.send_multipart([b"ACTC01", b"HISTORY", b"s%d" % n, b"heavy", b"1", b"1000"])
            time.sleep(0.05)
        sock.close(0)
    threads = [threading.Thread(target=reader), threading.Thread(target=sink)]
    for thread in threads:
        thread.start()
    return threads, pages


def report(name, rate, latencies, peak):
    print("%-24s %10.0f %10.1f %10.1f %10.1f %12d" % (
        name, rate, 1000 * percentile(latencies, 0.5), 1000 * percentile(latencies, 0.99),
        1000 * max(latencies), peak))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--context-mb", type=int, default=8)
    args = parser.parse_args()
    actd_bin = os.environ.get("ACTD_BIN", os.path.join(ROOT, "build", "bin", "actd"))
    worker_bin = os.environ.get("ACTD_WORKER_BIN",
                                os.path.join(os.path.dirname(actd_bin), "actd-example-worker"))
    print("bench_fairness: %s; %.0f s per run; heavy reader on a %d MB context; load %s" % (
        actd_bin, args.seconds, args.context_mb, os.getloadavg()))
    print("%-24s %10s %10s %10s %10s %12s" % ("run", "calls/s", "PING p50", "PING p99",
                                               "PING max", "peak RSS kB"))
    broker = Broker(actd_bin, worker_bin)
    try:
        alone = steady(broker, args.seconds)
        report("alone", *alone)
        stop = threading.Event()
        threads, pages = heavy(broker, args.context_mb, stop)
        try:
            beside = steady(broker, args.seconds)
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        report("beside a heavy reader", *beside)
        print("heavy reader: %d pages of %d MB read in the run" % (pages[0], args.context_mb))
        print("ratios (beside / alone): calls/s %.2f, PING p99 %.1f" % (
            beside[0] / alone[0], percentile(beside[1], 0.99) / max(percentile(alone[1], 0.99),
                                                                    1e-6)))
    finally:
        broker.close()


if __name__ == "__main__":
    main()
