"""PostgreSQL restarted after an outage longer than actd's lease allows
(docs/operations.md, "After the connection is lost"): actd stops writing
when its lease lapses, connects again once the server is back, renews the
lease at once, and serves and stores the next requests. Nothing is timed
but the bound on how soon after the server's return."""

import json
import time
import unittest

import pg
from harness import actd_with_config, wait_for

#  A lease whose renewals are 7 s apart: a renewal that waited for the next
#  of them left actd refusing every write for up to 7 s after the server
#  was back
LEASE_MS = 21000


def message(n):
    return {"type": "data", "kind": "input", "data": {"n": n}}


class RestartTest(unittest.TestCase):

    def test_writes_are_served_soon_after_a_long_outage(self):
        server = pg.Server()
        self.addCleanup(server.stop)
        config = "server\n    lease_ms = %d\nstore\n    timeout_ms = 1000\n" % LEASE_MS
        with actd_with_config(config, store=server.database()) as actd:
            client = actd.client()
            self.addCleanup(client.close)
            self.assertEqual(client.request("APPEND", "a", message(0))[0], "OK")
            server.halt()
            #  Two thirds of the lease without a renewal: writing stops
            wait_for(lambda: "the lease was not renewed" in actd.log(), "the lease lapsed",
                     LEASE_MS / 1000 + 30)
            server.start()
            back = time.monotonic()
            stored, n = [0], 1
            while True:
                reply = client.request("APPEND", "a", message(n), timeout=30)
                if reply[0] == "OK":
                    break
                self.assertEqual(reply[:2], ["ERROR", "internal"], reply)
                self.assertLess(time.monotonic() - back, 60, "not served again")
                time.sleep(0.1)
                n += 1
            took = time.monotonic() - back
            stored.append(n)
            print("writes served again %.1f s after the server was back (lease %d ms)"
                  % (took, LEASE_MS))
            #  Connecting again takes a second at most (one attempt a
            #  second); the renewal follows at once, not a third of the
            #  lease later
            self.assertLess(took, 3.5)
            self.assertEqual(client.request("APPEND", "a", message(n + 1))[0], "OK")
            stored.append(n + 1)
            history = client.request("HISTORY", "a", "1", "100")
            self.assertEqual(history[0], "VALUE", history)
            self.assertEqual([m["data"]["n"] for m in json.loads(history[1])], stored)


if __name__ == "__main__":
    unittest.main()
