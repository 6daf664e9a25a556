"""act_client_destroy sends UNWATCH for the client's open watches (best
effort, their OK awaited 200 ms at most): libzmq tells actd's ROUTER of a
closed peer only when it sends to it, so the watch of a socket that closed
without UNWATCH kept counting against max_watches until its context's next
event (docs/protocol.md section 2.6). Driven through
tests/helpers/client_unwatch.c against a real actd."""

import json
import subprocess
import time
import unittest

from harness import Actd, actd_with_config, find_binary

WATCHES = 3


def helper(actd, context, count):
    """client_unwatch, started: it prints "watching" once its watches are open."""
    process = subprocess.Popen([find_binary("client_unwatch"), actd.client_endpoint, context,
                                str(count)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline().strip()
    if line != "watching":
        process.kill()
        out, err = process.communicate()
        raise AssertionError("client_unwatch: %r %s %s" % (line, out, err))
    return process


def destroy(process):
    """Let the helper destroy its client; (seconds until it exited, its output)."""
    start = time.monotonic()
    process.stdin.write("go\n")
    process.stdin.flush()
    out, err = process.communicate(timeout=60)
    return time.monotonic() - start, out + err


class ClientUnwatchTest(unittest.TestCase):

    def test_destroying_a_client_frees_the_slots_of_its_watches(self):
        with actd_with_config("server\n    max_watches = %d\n" % WATCHES) as actd:
            client = actd.client()
            try:
                self.assertEqual(client.request("APPEND", "cu", json.dumps(
                    {"type": "text", "text": "one"}))[0], "OK")
                process = helper(actd, "cu", WATCHES)
                _, out = destroy(process)
                self.assertEqual(process.returncode, 0, out)
                #  No event came to the context: only the UNWATCHes ended
                #  the old watches, and a new client may open as many
                rids = [client.send("WATCH", "cu", "1") for _ in range(WATCHES)]
                for rid in rids:
                    reply = client.wait(rid, timeout=30)
                    self.assertEqual(reply[0], "EVENT", reply)
                    self.assertEqual(json.loads(reply[1])["seq"], 1)
            finally:
                client.close()

    def test_destroy_is_prompt_when_actd_is_gone(self):
        actd = Actd().start()
        try:
            client = actd.client()
            try:
                self.assertEqual(client.request("APPEND", "cu-gone", json.dumps(
                    {"type": "text", "text": "one"}))[0], "OK")
            finally:
                client.close()
            process = helper(actd, "cu-gone", WATCHES)
            actd.kill()
            elapsed, out = destroy(process)
            self.assertEqual(process.returncode, 0, out)
            self.assertLess(elapsed, 2.0, out)
        finally:
            actd.cleanup()


if __name__ == "__main__":
    unittest.main()
