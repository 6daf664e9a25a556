"""What a context's instances cost actd, measured from outside: actd's CPU
time (utime + stime from /proc) and its resident memory around each step.

    ACTD_BIN=build-rel/bin/actd /usr/bin/python3 bench/ctx_costs.py [STEP...]

Steps (all by default):
  view_instances  VIEW text and json of a context with 20,000 instances
  view_over       VIEW of a view far past max_reply_bytes (8 MiB): a global
                  list of 50,000 items under 100 instances that write to
                  the kind (refused too_large)
  lazy            a global list of 40,000 items written by a worker with
                  set (kept as text), then in an instance: 2,000 RESOLVEs of
                  one item, 2,000 calls pushing onto the list, 2,000 calls
                  reading one item
  shared          500 instances each reading one item of a global list of
                  100,000 (actd's resident memory after)
"""

import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import harness  # noqa: E402
import zmq  # noqa: E402

DAGGER = harness.DAGGER


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_mb(pid, field="VmRSS"):
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


class Measure:
    """actd's CPU seconds and memory over a with-block, printed."""

    def __init__(self, actd, label):
        self.pid = actd.process.pid
        self.label = label

    def __enter__(self):
        self.cpu = cpu_seconds(self.pid)
        self.wall = time.time()
        self.hwm = memory_mb(self.pid, "VmHWM")
        return self

    def __exit__(self, *exc):
        print("%-48s cpu %7.2f s  wall %7.2f s  rss %7.0f MB  peak +%.0f MB" % (
            self.label, cpu_seconds(self.pid) - self.cpu, time.time() - self.wall,
            memory_mb(self.pid), memory_mb(self.pid, "VmHWM") - self.hwm), flush=True)


def pipelined(client, requests, verb, batch=500):
    """Send the requests (tuples of args) in batches; each reply must be verb."""
    for start in range(0, len(requests), batch):
        ids = [client.send(*request) for request in requests[start:start + batch]]
        for rid in ids:
            reply = client.wait(rid, timeout=600)
            assert reply[0] == verb, reply


def worker_thread(endpoint, results, stop):
    """A worker serving each activity of results: answers its TASK with
    results[activity] (JSON text)."""
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(endpoint)
    socket.send_multipart([b"ACTW01", b"READY", json.dumps(
        {"activities": list(results), "capacity": 64, "name": "bench"}).encode()])
    last = time.time()
    while not stop.is_set():
        if socket.poll(50):
            frames = socket.recv_multipart()
            if frames[1] == b"TASK":
                socket.send_multipart([b"ACTW01", b"RESULT", frames[2],
                                       results[frames[3].decode()].encode()])
        if time.time() - last > 0.2:
            socket.send_multipart([b"ACTW01", b"HEARTBEAT"])
            last = time.time()
    socket.close(0)


def calls(client, context, call, count, batch=200):
    """count CALLs of call, each waited for to its DONE."""
    for start in range(0, count, batch):
        ids = [client.send("CALL", context, call) for _ in range(min(batch, count - start))]
        for rid in ids:
            assert client.wait(rid, timeout=600)[0] == "ACCEPTED"
            done = client.wait(rid, "DONE", timeout=600)
            assert json.loads(done[2])["status"] == "ok", done


def step_view_instances(actd, client):
    pipelined(client, [("APPEND", "vi", {"type": "data", "kind": "s", "_instance": "i%d" % i,
                                         "data": {"n": i, "about": "instance number %d" % i}})
                       for i in range(20000)], "OK")
    with Measure(actd, "VIEW text, 20,000 instances"):
        reply = client.request("VIEW", "vi", "text", timeout=600)
    print("    %s, %d bytes" % (reply[0], len(reply[1])))
    with Measure(actd, "VIEW json, 20,000 instances"):
        reply = client.request("VIEW", "vi", "json", timeout=600)
    print("    %s, %d bytes" % (reply[0], len(reply[1])))


def step_view_over(actd, client):
    client.request("APPEND", "vo", {"type": "data", "kind": "s",
                                    "data": {"list": [{"v": i} for i in range(50000)]}})
    pipelined(client, [("APPEND", "vo", {"type": "data", "kind": "s", "_instance": "i%d" % i,
                                         "data": {"mine": i}}) for i in range(100)], "OK")
    for form in ("json", "text"):
        with Measure(actd, "VIEW %s past max_reply_bytes" % form):
            reply = client.request("VIEW", "vo", form, timeout=600)
        print("    %s" % reply[:3])


def step_lazy(actd, client):
    items = json.dumps([{"v": i} for i in range(40000)])
    stop = threading.Event()
    worker = threading.Thread(target=worker_thread, args=(
        actd.worker_endpoint, {"biglist": items, "one": '{"n": 1}'}, stop))
    worker.start()
    try:
        time.sleep(0.5)
        calls(client, "lz", {"_tool": "biglist", "_outputPath": DAGGER + "s.items"}, 1)
        #  The instance's first write: a call's output below the kind (an
        #  APPEND at the kind's root would parse every value kept as text)
        calls(client, "lz", {"_tool": "one", "_instance": "i",
                             "_outputPath": DAGGER + "s.mine"}, 1)
        with Measure(actd, "2,000 RESOLVEs in an instance"):
            pipelined(client, [("RESOLVE", "lz", DAGGER + "s.items.0.v", "i")] * 2000, "VALUE")
        with Measure(actd, "2,000 calls pushing in an instance"):
            calls(client, "lz", {"_tool": "one", "_instance": "i",
                                 "_outputPath": DAGGER + "s.items",
                                 "_outputMethod": "push"}, 2000)
        with Measure(actd, "2,000 calls reading in an instance"):
            calls(client, "lz", {"_tool": "one", "_instance": "i", "x": DAGGER + "s.items.1.v",
                                 "_outputPath": DAGGER + "s.out"}, 2000)
    finally:
        stop.set()
        worker.join()


def step_shared(actd, client):
    client.request("APPEND", "sh", {"type": "data", "kind": "s",
                                    "data": {"list": list(range(100000))}})
    pipelined(client, [("APPEND", "sh", {"type": "data", "kind": "s", "_instance": "i%d" % i,
                                         "data": {"mine": i}}) for i in range(500)], "OK")
    print("    before the reads: rss %.0f MB" % memory_mb(actd.process.pid))
    with Measure(actd, "500 instances read an item of 100,000"):
        pipelined(client, [("RESOLVE", "sh", DAGGER + "s.list.7", "i%d" % i)
                           for i in range(500)], "VALUE")


def main():
    steps = sys.argv[1:] or ["view_instances", "view_over", "lazy", "shared"]
    for step in steps:
        actd = harness.Actd(args=["--log-level", "warning"])
        actd.start()
        client = actd.client()
        try:
            print("== %s (actd %s)" % (step, harness.find_binary("actd")), flush=True)
            globals()["step_" + step](actd, client)
        finally:
            client.close()
            actd.stop(timeout=600)
            actd.cleanup()


if __name__ == "__main__":
    main()
