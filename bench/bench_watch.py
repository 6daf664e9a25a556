#!/usr/bin/env python3
"""bench_watch: WATCH under load, against the same load without watchers.

One client appends messages to one context, pipelined (a window of
requests in flight); 0, 1, 10 and 100 watchers follow the context (each
its own DEALER socket, WATCH from 0). For each count it prints appends per
second, events per second delivered to all watchers together, and the
latency from an APPEND's OK to the same message's EVENT at the first
watcher (p50, p99), actd's CPU (all its threads) per APPEND, with the
ratio of appends/s to the run without watchers. --size sets the bytes of
each message's text (150 by default): from 512 bytes on, an event's body
is built once and shared by every watcher's EVENT. Nothing here is a
test: the figures move with the machine.

With --replay N it measures instead the replay of a stored backlog: N
messages appended first, then each count of watchers opens WATCH from 1
and reads the N messages back; it prints the events per second delivered
while the backlog is replayed (the store's texts sent as they are when
they are already in reply form).

    /usr/bin/python3 bench/bench_watch.py [--appends N] [--watchers 0,1,10,100]
                                          [--size BYTES] [--replay N]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "tests", "integration"))
from harness import free_port  # noqa: E402  (below the ephemeral port range)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def dealer(context, endpoint):
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVHWM, 0)
    sock.connect(endpoint)
    return sock


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def cpu_seconds(pid):
    """The CPU time process pid has used, all its threads (/proc)."""
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(actd_bin, appends, watchers, size, window=200):
    port = free_port()
    endpoint = "tcp://127.0.0.1:%d" % port
    workdir = tempfile.mkdtemp(prefix="bench-watch-")
    process = subprocess.Popen([actd_bin, "--db", ":memory:", "--client-endpoint", endpoint,
                                "--worker-endpoint", "tcp://127.0.0.1:%d" % free_port(),
                                "--log-level", "error"], cwd=workdir,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    context = zmq.Context.instance()
    try:
        client = dealer(context, endpoint)
        deadline = time.time() + 10
        while True:
            client.send_multipart([b"ACTC01", b"PING", b"p"])
            if client.poll(200):
                client.recv_multipart()
                break
            if time.time() > deadline:
                raise SystemExit("bench_watch: actd did not answer")
        socks = [dealer(context, endpoint) for _ in range(watchers)]
        for sock in socks:
            sock.send_multipart([b"ACTC01", b"WATCH", b"w", b"bench", b"0"])
        #  A PING on each socket after its WATCH: the watch is open when the
        #  PONG comes back (requests of one socket are served in order)
        for sock in socks:
            sock.send_multipart([b"ACTC01", b"PING", b"p"])
            while sock.recv_multipart()[1] != b"PONG":
                pass
        body = json.dumps({"type": "data", "kind": "log", "data": {"text": "x" * size}}).encode()
        ok_at, event_at = {}, {}
        sent = acked = events = 0
        poller = zmq.Poller()
        poller.register(client, zmq.POLLIN)
        for sock in socks:
            poller.register(sock, zmq.POLLIN)
        start, cpu = time.perf_counter(), cpu_seconds(process.pid)
        while acked < appends or events < appends * watchers:
            while sent < appends and sent - acked < window:
                client.send_multipart([b"ACTC01", b"APPEND", b"a%d" % sent, b"bench", body])
                sent += 1
            for sock, _ in poller.poll(5000):
                while True:
                    try:
                        frames = sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    now = time.perf_counter()
                    if frames[1] == b"OK":
                        acked += 1
                        ok_at[json.loads(frames[3])["seq"]] = now
                    elif frames[1] == b"EVENT":
                        events += 1
                        if sock is socks[0]:
                            event_at[json.loads(frames[3])["seq"]] = now
        elapsed = time.perf_counter() - start
        cpu = cpu_seconds(process.pid) - cpu
        latency = [(event_at[seq] - ok_at[seq]) * 1000 for seq in event_at if seq in ok_at]
        return appends / elapsed, events / elapsed, percentile(latency, 0.5), \
            percentile(latency, 0.99), cpu * 1e6 / appends
    finally:
        process.terminate()
        process.wait(10)


def replay(actd_bin, backlog, watchers, window=200):
    """Events per second while watchers watchers replay backlog stored
    messages (WATCH from 1 on a context of backlog messages)."""
    port = free_port()
    endpoint = "tcp://127.0.0.1:%d" % port
    workdir = tempfile.mkdtemp(prefix="bench-watch-")
    process = subprocess.Popen([actd_bin, "--db", ":memory:", "--client-endpoint", endpoint,
                                "--worker-endpoint", "tcp://127.0.0.1:%d" % free_port(),
                                "--log-level", "error"], cwd=workdir,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    context = zmq.Context.instance()
    try:
        client = dealer(context, endpoint)
        body = json.dumps({"type": "data", "kind": "log", "data": {"text": "x" * 150}}).encode()
        sent = acked = 0
        while acked < backlog:
            while sent < backlog and sent - acked < window:
                client.send_multipart([b"ACTC01", b"APPEND", b"a%d" % sent, b"bench", body])
                sent += 1
            if not client.poll(10000):
                raise SystemExit("bench_watch: actd did not answer")
            if client.recv_multipart()[1] == b"OK":
                acked += 1
        socks = [dealer(context, endpoint) for _ in range(watchers)]
        start = time.perf_counter()
        for sock in socks:
            sock.send_multipart([b"ACTC01", b"WATCH", b"w", b"bench", b"1"])
        events = 0
        poller = zmq.Poller()
        for sock in socks:
            poller.register(sock, zmq.POLLIN)
        while events < backlog * watchers:
            ready = poller.poll(10000)
            if not ready:
                raise SystemExit("bench_watch: the backlog stopped coming after %d events" % events)
            for sock, _ in ready:
                while True:
                    try:
                        frames = sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    events += frames[1] == b"EVENT"
        return events / (time.perf_counter() - start)
    finally:
        process.terminate()
        process.wait(10)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=5000)
    parser.add_argument("--watchers", default="0,1,10,100")
    parser.add_argument("--actd", default=os.path.join(ROOT, "build", "bin", "actd"))
    parser.add_argument("--replay", type=int, default=0)
    parser.add_argument("--size", type=int, default=150,
                        help="bytes of each live message's text (150)")
    options = parser.parse_args()
    counts = [int(n) for n in options.watchers.split(",")]
    if options.replay:
        print("bench_watch: replay of %d stored messages of ~200 bytes; actd %s"
              % (options.replay, options.actd))
        print("%9s %12s" % ("watchers", "events/s"))
        for count in counts:
            if count:
                print("%9d %12.0f" % (count, replay(options.actd, options.replay, count)))
                sys.stdout.flush()
        return
    print("bench_watch: %d APPENDs of ~%d bytes to one context, 200 in flight; actd %s"
          % (options.appends, options.size + 50, options.actd))
    print("%9s %12s %12s %13s %13s %14s %8s" % ("watchers", "appends/s", "events/s",
                                                 "OK->EVENT p50", "OK->EVENT p99",
                                                 "actd CPU/APPEND", "ratio"))
    baseline = None
    for count in counts:
        appends, events, p50, p99, cpu = run(options.actd, options.appends, count, options.size)
        baseline = baseline or appends
        print("%9d %12.0f %12.0f %10.2f ms %10.2f ms %12.0f us %8.2f" % (
            count, appends, events, p50, p99, cpu, appends / baseline))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
