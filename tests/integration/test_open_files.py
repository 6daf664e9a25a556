"""actd's open files (docs/operations.md, "Limits"): every client and
worker connection is a file descriptor. actd raises its soft limit to the
hard one at the start; at the limit it accepts no more connections until
some close, and says so in the log, then says when they can be had
again. Nothing is timed: the test waits for states."""

import resource
import unittest

from harness import Actd, Client, wait_for


def limited(soft, hard):
    """A preexec for actd: RLIMIT_NOFILE set to (soft, hard)"""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def open_files_limit(pid):
    """The soft limit on open files of process pid (/proc/PID/limits)"""
    with open("/proc/%d/limits" % pid) as limits:
        for line in limits:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no open files line")


class OpenFilesTest(unittest.TestCase):

    def pings(self, endpoint, count, timeout):
        """count clients, each sends a PING: (the clients, how many were
        answered within timeout seconds, all together)"""
        clients = [Client(endpoint) for _ in range(count)]
        sent = [(client, client.send("PING")) for client in clients]
        answered = 0
        for client, rid in sent:
            try:
                self.assertEqual(client.wait(rid, timeout=timeout), ["PONG"])
                answered += 1
            except TimeoutError:
                timeout = 0.05      # the rest are given a moment each
        return clients, answered

    def test_the_soft_limit_is_raised_to_the_hard_one(self):
        actd = Actd(preexec=limited(64, 512)).start()
        try:
            self.assertEqual(open_files_limit(actd.process.pid), 512)
            self.assertIn("open files: limit raised from 64 to 512", actd.log())
            #  More connections than the soft limit allowed, all served
            clients, answered = self.pings(actd.client_endpoint, 100, 30)
            self.assertEqual(answered, 100)
            for client in clients:
                client.close()
        finally:
            self.assertEqual(actd.stop(), 0)
            actd.cleanup()

    def test_running_out_is_logged_and_connections_come_back(self):
        actd = Actd(preexec=limited(48, 48)).start()
        try:
            clients, answered = self.pings(actd.client_endpoint, 80, 10)
            self.assertLess(answered, 80)
            wait_for(lambda: "open files: none left" in actd.log(), "the warning", 30)
            self.assertIn("raise LimitNOFILE", actd.log())
            for client in clients:
                client.close()
            #  Their descriptors are given back: a new client is served
            wait_for(lambda: "descriptors can be had again" in actd.log(), "the notice", 30)
            clients, answered = self.pings(actd.client_endpoint, 1, 30)
            self.assertEqual(answered, 1)
            clients[0].close()
            #  One warning for the spell, not one a second
            self.assertEqual(actd.log().count("open files: none left"), 1)
        finally:
            self.assertEqual(actd.stop(), 0)
            actd.cleanup()


if __name__ == "__main__":
    unittest.main()
