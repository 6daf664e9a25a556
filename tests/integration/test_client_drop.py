"""No request vanishes when a C client's connection drops (the ZMTP
heartbeat gives up on a broker silent past 10 s: a paused or starved actd).
libzmq forgets what it wrote to the dropped connection, and actd's replies
to it go to a routing id that is gone: the C client must fail each request
still pending on it with ERROR disconnected instead of leaving its caller
waiting, nor an accepted call whose DONE was due on it. Nothing is timed: the helper waits with generous deadlines.
"""

import signal
import subprocess
import time
import unittest

from harness import Actd, find_binary

PINGS = 500
CALLS = 20


class ClientConnectionDrop(unittest.TestCase):

    def test_requests_pending_when_the_connection_drops_all_get_an_answer(self):
        with Actd() as actd:
            helper = subprocess.Popen(
                [find_binary("client_pending"), actd.client_endpoint, str(PINGS), str(CALLS),
                 "90000"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True)
            try:
                self.assertEqual(helper.stdout.readline().strip(), "connected")
                #  actd stops with the connection up; the requests go out
                #  and stay unanswered until the client's heartbeat timeout
                #  (10 s) drops the connection
                actd.process.send_signal(signal.SIGSTOP)
                try:
                    helper.stdin.write("go\n")
                    helper.stdin.flush()
                    deadline = time.monotonic() + 60
                    while helper.poll() is None and time.monotonic() < deadline:
                        time.sleep(0.2)
                    #  Every request was answered while actd was stopped
                    self.assertIsNotNone(helper.returncode,
                                         "requests still pending 60 s after the pause began")
                finally:
                    actd.process.send_signal(signal.SIGCONT)
                out, err = helper.communicate(timeout=120)
            finally:
                if helper.poll() is None:
                    helper.kill()
                    helper.communicate()
            self.assertEqual(helper.returncode, 0, out + err)
            self.assertIn("answered %d of %d" % (PINGS + CALLS, PINGS + CALLS), out)
            counts = dict(line[len("reply "):].split(": ")
                          for line in out.splitlines() if line.startswith("reply "))
            self.assertEqual(set(counts) - {"PONG", "ERROR disconnected"}, set(), out)
            #  The accepted calls' DONE were due on the dropped connection
            #  too (their calls wait for a worker, far longer than the pause)
            self.assertGreaterEqual(int(counts.get("ERROR disconnected", 0)), CALLS, out)
            #  actd itself goes on: a new client is answered
            client = actd.client()
            self.assertEqual(client.request("PING", timeout=60)[0], "PONG")
            client.close()


class ClientBurst(unittest.TestCase):

    def test_a_burst_past_the_high_water_mark_to_a_paused_actd_is_answered_whole(self):
        """5,000 requests of 4 KB (20 MB, more than the socket buffers and
        past libzmq's default send high-water mark of 1,000 messages) sent
        at once while actd is paused, for less than the client's heartbeat
        timeout: every one is answered once actd goes on. Before, each
        request past the 1,000th queued was dropped by the C client's
        non-blocking send, and its caller waited for a reply forever."""
        with Actd() as actd:
            helper = subprocess.Popen(
                [find_binary("client_pending"), actd.client_endpoint, "5000", "0", "120000",
                 "4096"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True)
            try:
                self.assertEqual(helper.stdout.readline().strip(), "connected")
                actd.process.send_signal(signal.SIGSTOP)
                try:
                    helper.stdin.write("go\n")
                    helper.stdin.flush()
                    time.sleep(3)       # the burst fills the buffers meanwhile
                finally:
                    actd.process.send_signal(signal.SIGCONT)
                out, err = helper.communicate(timeout=180)
            finally:
                if helper.poll() is None:
                    helper.kill()
                    helper.communicate()
            self.assertEqual(helper.returncode, 0, out + err)
            self.assertIn("answered 5000 of 5000", out)
            self.assertIn("reply ERROR not_found: 5000", out)


if __name__ == "__main__":
    unittest.main()
