"""The client libraries' watches (C, through actctl tail; Python; Node) on
several brokers sharing a PostgreSQL store (test_multibroker's Brokers):
when the broker a watch is on dies, the watch goes on at another, from
the message after the last it gave, within about 10 s."""

import json
import os
import queue
import subprocess
import sys
import threading
import time
import unittest

from harness import find_binary, node_problem, remove_scratch, scratch_dir
from test_multibroker import Brokers, actctl, owner

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON_PACKAGE = os.path.join(ROOT, "workers", "python")
NODE_PACKAGE = os.path.join(ROOT, "workers", "node")

#  Seconds from the kill by which the messages appended after it (within
#  about a second) have all come: the C client (actctl tail --timeout
#  3000) leaves a dead owner after 1 s; the libraries leave it after their
#  request timeout, 5 s by default with several brokers
BOUND = 10.0

#  Each prints every event of the watch of argv[2] from 1, one JSON line
#  each, given the brokers' endpoints (comma-separated) as argv[1]
PYTHON_WATCHER = r"""
import json, sys
sys.path.insert(0, %s)
import actd
with actd.Client(sys.argv[1]) as client:
    for event in client.watch(sys.argv[2], 1):
        print(json.dumps(event), flush=True)
"""

NODE_WATCHER = r"""
'use strict';
const { Client } = require (%s);
const client = new Client ({ endpoints: process.argv [2] });
(async () => {
    for await (const event of client.watch (process.argv [3], { fromSeq: 1 }))
        console.log (JSON.stringify (event));
}) ().catch ((error) => { console.error (error); process.exit (1); });
"""


def message(n):
    return json.dumps({"type": "data", "kind": "input", "data": {"n": n}})


class MultiBrokerWatchLangsTest(unittest.TestCase):

    def setUp(self):
        self.dir = scratch_dir("actd-watch-langs-")
        self.group = None

    def tearDown(self):
        if self.group:
            self.group.close()
        remove_scratch(self.dir)

    def test_c_watch_on_a_killed_broker_goes_on_at_another(self):
        """The C client's connection to the dead broker dropped, and its
        watch waited for that broker to come back (for ever, as actctl
        tail did). Now it is sent to the other broker (told moved to the
        dead owner until its lease runs out, then served there)."""
        self.check_watcher(lambda endpoints, context: [
            find_binary("actctl"), "--endpoint", endpoints, "--json", "--timeout", "3000",
            "tail", context, "--from", "1"], "watched-c")

    def test_python_watch_on_a_killed_broker_goes_on_at_another(self):
        """Told moved to the dead owner, the Python watch went back to it
        each time (its skip of 10 s ran out as its probe gave up): nothing
        after message 3 within 40 s. Now it goes on at the survivor after
        request_timeout (5 s)."""
        script = os.path.join(self.dir, "watch.py")
        with open(script, "w") as handle:
            handle.write(PYTHON_WATCHER % json.dumps(PYTHON_PACKAGE))
        self.check_watcher(lambda endpoints, context: [sys.executable, script, endpoints,
                                                       context], "watched-py")

    def test_node_watch_on_a_killed_broker_goes_on_at_another(self):
        """The Node watch went back to the dead owner (a dropped
        connection with only a watch on it did not skip that broker) and
        left it once its idle PING failed: messages 4-6 came 15 s after
        the kill. Now it goes on at the survivor after requestTimeoutMs
        (5 s)."""
        self.assertIsNone(node_problem())
        script = os.path.join(self.dir, "watch.js")
        with open(script, "w") as handle:
            handle.write(NODE_WATCHER % json.dumps(NODE_PACKAGE))
        self.check_watcher(lambda endpoints, context: ["node", script, endpoints, context],
                           "watched-node")

    def check_watcher(self, command, context):
        """command (endpoints, comma-separated, context) is the command line
        of a watcher that prints each event as a JSON line; it watches from 1 and
        has printed messages 1-3; the context's owner is killed, 4-6 are
        appended through the other: the watcher prints them within BOUND
        seconds, each message 1-6 once, in order, and nothing more."""
        self.group = Brokers(2)
        endpoints = self.group.client_endpoints()
        for n in (1, 2, 3):
            code, _, error = actctl(endpoints, "append", context, message(n))
            self.assertEqual(code, 0, error)
        victim = next(broker for broker in self.group.brokers
                      if broker.client_endpoint == owner(self.group.brokers, context))
        survivor = next(broker for broker in self.group.brokers if broker is not victim)
        watcher = subprocess.Popen(command(",".join(endpoints), context),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = queue.Queue()
        reader = threading.Thread(target=lambda: [lines.put(line) for line in watcher.stdout],
                                  daemon=True)
        reader.start()
        try:
            seen = [self.next_event(lines, time.monotonic() + 30) for _ in range(3)]
            victim.kill()
            killed = time.monotonic()
            for n in (4, 5, 6):
                #  actctl told moved to the dead owner goes back after a
                #  third of its timeout (as actctl tail --timeout 3000 does)
                append = subprocess.run([find_binary("actctl"), "--endpoint",
                                         survivor.client_endpoint, "--timeout", "3000",
                                         "append", context, message(n)],
                                        capture_output=True, text=True, timeout=60)
                self.assertEqual(append.returncode, 0, append.stderr)
            seen += [self.next_event(lines, killed + BOUND, seen) for _ in range(3)]
            took = time.monotonic() - killed
            #  Nothing more: no message given twice
            time.sleep(1)
            self.assertTrue(lines.empty(), lines.queue)
        finally:
            watcher.terminate()
            _, error = watcher.communicate(timeout=30)
        self.assertEqual([event["seq"] for event in seen], [1, 2, 3, 4, 5, 6], error)
        self.assertEqual([event["message"]["data"]["n"] for event in seen], [1, 2, 3, 4, 5, 6])
        print("%s: messages 4-6 within %.1f s of the kill" % (context, took), file=sys.stderr)

    def next_event(self, lines, deadline, seen=()):
        """The next event the watcher printed, by deadline."""
        try:
            return json.loads(lines.get(timeout=max(0.0, deadline - time.monotonic())))
        except queue.Empty:
            self.fail("no event from the watcher by the deadline after %s" % list(seen))


if __name__ == "__main__":
    unittest.main()
