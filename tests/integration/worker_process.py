"""A raw ACT/1 worker (PROTOCOL.md section 2) in its own process, so that a
test can kill it with SIGKILL like a crashed worker.

    worker_process.py ENDPOINT ACTIVITY MODE

MODE is "hold" (take tasks, keep heartbeating, never answer them) or "echo"
(answer each task with {"params": params, "attempt": attempt}). Prints one
line per message of interest, flushed, so the test can follow it:
"READY", "TASK <task-id>", "CANCEL <task-id>", "DISCONNECT".
"""

import json
import sys
import time

import zmq


def connect(context, endpoint, activity):
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(endpoint)
    socket.send_multipart([b"ACTW01", b"READY", json.dumps(
        {"activities": [activity], "capacity": 1, "name": "worker-process",
         "lang": "python-test"}).encode()])
    print("READY", flush=True)
    return socket


def main():
    endpoint, activity, mode = sys.argv[1:4]
    if mode not in ("hold", "echo"):
        sys.exit("MODE is hold or echo")
    context = zmq.Context.instance()
    socket = connect(context, endpoint, activity)
    heartbeat_s = 0.1
    last = time.time()
    while True:
        if socket.poll(50):
            frames = socket.recv_multipart()
            command = frames[1]
            if command == b"TASK":
                task = frames[2].decode()
                print("TASK", task, flush=True)
                if mode == "echo":
                    meta = json.loads(frames[5])
                    result = {"params": json.loads(frames[4]), "attempt": meta["attempt"]}
                    socket.send_multipart([b"ACTW01", b"RESULT", task.encode(),
                                           json.dumps(result).encode()])
                    last = time.time()
            elif command == b"CANCEL":
                print("CANCEL", frames[2].decode(), flush=True)
            elif command == b"DISCONNECT":
                print("DISCONNECT", flush=True)
                socket.close(0)
                socket = connect(context, endpoint, activity)
        if time.time() - last >= heartbeat_s:
            socket.send_multipart([b"ACTW01", b"HEARTBEAT"])
            last = time.time()


if __name__ == "__main__":
    main()
