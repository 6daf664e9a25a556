"""A C client's watch on several brokers sharing a PostgreSQL store
(test_multibroker's Brokers): when the broker it is on dies, the watch
goes on at another, from the message after the last it gave."""

import json
import queue
import subprocess
import threading
import time
import unittest

from harness import find_binary
from test_multibroker import Brokers, actctl, owner


def message(n):
    return json.dumps({"type": "data", "kind": "input", "data": {"n": n}})


class MultiBrokerWatchTest(unittest.TestCase):

    def tearDown(self):
        self.group.close()

    def test_a_watch_on_a_killed_broker_goes_on_at_another(self):
        """The C client watched on: its connection to the dead broker
        dropped, and the watch waited for that broker to come back (for
        ever, as actctl tail did). Now it is sent to the other broker
        (told moved to the dead owner until its lease runs out, then
        served there), and every message comes once, in order."""
        self.group = Brokers(2)
        endpoints = self.group.client_endpoints()
        context = "watched-over"
        for n in (1, 2, 3):
            code, _, error = actctl(endpoints, "append", context, message(n))
            self.assertEqual(code, 0, error)
        victim = next(broker for broker in self.group.brokers
                      if broker.client_endpoint == owner(self.group.brokers, context))
        survivor = next(broker for broker in self.group.brokers if broker is not victim)
        tail = subprocess.Popen([find_binary("actctl"), "--endpoint", ",".join(endpoints),
                                 "--json", "--timeout", "3000", "tail", context, "--from", "1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = queue.Queue()
        reader = threading.Thread(target=lambda: [lines.put(line) for line in tail.stdout],
                                  daemon=True)
        reader.start()
        try:
            seen = [self.next_event(lines) for _ in range(3)]
            victim.kill()
            for n in (4, 5, 6):
                code, _, error = actctl([survivor.client_endpoint], "append", context,
                                        message(n))
                self.assertEqual(code, 0, error)
            seen += [self.next_event(lines, seen) for _ in range(3)]
            #  Nothing more: no message given twice
            time.sleep(1)
            self.assertTrue(lines.empty(), lines.queue)
        finally:
            tail.terminate()
            _, error = tail.communicate(timeout=30)
        self.assertEqual([event["seq"] for event in seen], [1, 2, 3, 4, 5, 6], error)
        self.assertEqual([event["message"]["data"]["n"] for event in seen], [1, 2, 3, 4, 5, 6])

    def next_event(self, lines, seen=()):
        """The next event tail printed, within 30 s."""
        try:
            return json.loads(lines.get(timeout=30))
        except queue.Empty:
            self.fail("no event from actctl tail in 30 s after %s" % list(seen))


if __name__ == "__main__":
    unittest.main()
