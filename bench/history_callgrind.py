#!/usr/bin/python3
"""Instructions actd spends building two large HISTORY replies.

Runs an actd (argument 1, a RelWithDebInfo build) under
valgrind --tool=callgrind with collection only inside act_pages_pump (the
HISTORY pages), on a SQLite file: appends 16 messages of 500 KB and 1 000
messages of about 1 KB (nested objects, reals, UTF-8), reads each context
whole with one HISTORY and prints the replies' sizes. Then read the
figure with: callgrind_annotate --inclusive=yes OUT | grep act_pages_pump

    /usr/bin/python3 bench/history_callgrind.py build-rel/bin/actd OUT
"""

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


def main():
    actd, out = sys.argv[1], sys.argv[2]
    folder = tempfile.mkdtemp(prefix="history-cg-")
    client, worker = free_port(), free_port()
    process = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
         "--toggle-collect=act_pages_pump", actd, "--db", os.path.join(folder, "a.db"),
         "--client-endpoint", "tcp://127.0.0.1:%d" % client,
         "--worker-endpoint", "tcp://127.0.0.1:%d" % worker, "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sock = zmq.Context().socket(zmq.DEALER)
    sock.connect("tcp://127.0.0.1:%d" % client)

    def request(command, rid, *args, timeout=60000):
        sock.send_multipart([b"ACTC01", command.encode(), rid.encode()]
                            + [arg.encode() for arg in args])
        while True:
            if not sock.poll(timeout):
                raise TimeoutError(command)
            reply = sock.recv_multipart()
            if reply[2] == rid.encode():
                return reply

    deadline = time.time() + 60
    while True:
        try:
            request("PING", "p", timeout=1000)
            break
        except TimeoutError:
            if time.time() > deadline:
                raise
    piece = "x" * 500000
    for n in range(16):
        request("APPEND", "a%d" % n, "big", json.dumps(
            {"type": "data", "kind": "input", "data": {"k%d" % n: piece}}))
    for n in range(1000):
        request("APPEND", "s%d" % n, "small", json.dumps(
            {"type": "data", "kind": "input",
             "data": {"k%d" % n: {"a": [0.1, 1e300, n, "caf\u00e9 \u2020"],
                                  "b": {"c": None, "d": "x" * 900}}}}, ensure_ascii=False))
    for context in ("big", "small"):
        reply = request("HISTORY", "h" + context, context, "1", "1000")
        assert reply[1] == b"VALUE", reply[:4]
        print("HISTORY %s: %d bytes" % (context, len(reply[3])))
    process.terminate()
    process.wait(120)


if __name__ == "__main__":
    main()
