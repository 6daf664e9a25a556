"""A step of the wall clock (an NTP step, a VM resumed, an admin's typo)
while actd and actd-http run, made in their processes alone by the
LD_PRELOAD library clock_step (tests/helpers/clock_step.c): retention
deletes nothing early, a request of actd-http ends at its timeout, and
on PostgreSQL a context's creation date is on actd's clock, as its
cutoff is (docs/operations.md, "Deleting contexts and the space it
frees")."""

import json
import os
import threading
import time
import unittest
from unittest import mock

from harness import STORE, DAGGER, Worker, actd_with_config, find_binary, wait_for
from test_http import ActdHttp

DAY_MS = 24 * 3600 * 1000
HOUR_MS = 3600 * 1000
MESSAGE = {"type": "data", "kind": "log", "data": {"n": 1}}


class Stepped:
    """The environment of a process whose wall clock this test steps."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "clock-step")
        self.step(0)
        asan = os.environ.get("ASAN_OPTIONS", "detect_leaks=1")
        self.env = {"LD_PRELOAD": find_binary("libclock_step.so"),
                    "ACTD_CLOCK_STEP": self.path,
                    #  The library comes before the sanitizers' runtime
                    "ASAN_OPTIONS": asan + ":verify_asan_link_order=0"}

    def step(self, offset_ms):
        """The wall clock of the processes is real time plus offset_ms from now."""
        with open(self.path + ".new", "w") as handle:
            handle.write("%d\n" % offset_ms)
        os.replace(self.path + ".new", self.path)


def gone(client, context):
    """True once context has no message (deleted)."""
    return client.request("HISTORY", context, "1", "1")[0] == "ERROR"


class RetentionStepTest(unittest.TestCase):

    def start(self, config):
        self.actd = actd_with_config(config)
        self.clock = Stepped(self.actd.dir)
        self.actd.env = self.clock.env
        self.addCleanup(self.actd.cleanup)
        self.actd.start()
        self.client = self.actd.client()
        self.addCleanup(self.client.close)

    def test_a_step_forward_deletes_nothing_early(self):
        """retain_ms 3 s: a day forward, and a context written a moment
        before looked a day old to the cutoff: it was deleted within the
        second, for good. It is now deleted once 3 s have really passed."""
        self.start("store\n    retain_ms = 3000\n")
        self.assertEqual(self.client.request("APPEND", "fresh", json.dumps(MESSAGE))[0], "OK")
        written = time.monotonic()
        self.clock.step(DAY_MS)
        time.sleep(2.0)
        self.assertFalse(gone(self.client, "fresh"),
                         "deleted %.1f s after its write, retain_ms 3 s" %
                         (time.monotonic() - written))
        wait_for(lambda: gone(self.client, "fresh"), "the context to be deleted once idle 3 s",
                 timeout=15)
        self.assertGreaterEqual(time.monotonic() - written, 2.9)
        #  Written after the step: stamped on the stepped clock, it is not
        #  taken for old either
        self.assertEqual(self.client.request("APPEND", "later", json.dumps(MESSAGE))[0], "OK")
        time.sleep(2.0)
        self.assertFalse(gone(self.client, "later"))

    def test_a_step_back_deletes_what_is_idle_once_time_catches_up(self):
        """An hour back: nothing written after it is taken for old, and
        retention still runs (the context written before the step is
        kept longer, never shorter; docs/operations.md)."""
        self.start("store\n    retain_ms = 2000\n")
        self.clock.step(-HOUR_MS)
        time.sleep(0.1)
        self.assertEqual(self.client.request("APPEND", "after", json.dumps(MESSAGE))[0], "OK")
        time.sleep(1.0)
        self.assertFalse(gone(self.client, "after"))
        wait_for(lambda: gone(self.client, "after"), "the context to be deleted once idle 2 s",
                 timeout=15)

    @unittest.skipUnless(STORE == "postgres", "the creation date of the PostgreSQL store")
    def test_a_context_without_messages_is_judged_on_actds_clock(self):
        """PostgreSQL stamped a context's creation with the database
        server's now(), and retention compared it with a cutoff on actd's
        clock: with actd's clock 2 h ahead and retain_ms 1 h, a context a
        fire-and-forget call made a moment before (no message) was
        deleted at once."""
        self.start("store\n    retain_ms = 3600000\n")
        self.clock.step(2 * HOUR_MS)
        time.sleep(0.1)
        worker = Worker(self.actd.worker_endpoint, ["noop"], lambda activity, params, meta: {})
        worker.start()
        self.addCleanup(worker.stop)
        reply = self.client.request("CALL", "quiet", json.dumps({"_tool": "noop"}))
        self.assertEqual(reply[0], "ACCEPTED", reply)
        self.client.wait_status(reply[1], ("ok",))
        time.sleep(2.5)                     #  Retention looks each second
        listed = self.client.value("CONTEXTS", "quiet")["contexts"]
        self.assertEqual([c["context"] for c in listed], ["quiet"])
        self.assertEqual(self.client.value("STATS")["deleted"], 0)


class HttpWaitStepTest(unittest.TestCase):

    def test_a_wait_ends_at_its_timeout_when_the_clock_steps_back(self):
        """actd-http waited on a condition of the real-time clock: an hour
        back during a ?wait=1 of 2 s held the request an hour."""
        self.actd = actd_with_config("")
        self.addCleanup(self.actd.cleanup)
        self.actd.start()
        clock = Stepped(self.actd.dir)
        with mock.patch.dict(os.environ, clock.env):
            http = ActdHttp(self.actd.client_endpoint)
        self.addCleanup(http.finish)
        started = time.monotonic()
        threading.Timer(0.5, clock.step, (-HOUR_MS,)).start()
        try:
            code, _, body = http.request("POST",
                                         "/v1/contexts/held/calls?wait=1&timeout_ms=2000",
                                         {"_tool": "nobody", "_outputPath": DAGGER + "x"},
                                         timeout=20)
        except TimeoutError:
            self.fail("no answer within 20 s to a wait of 2 s")
        waited = time.monotonic() - started
        self.assertEqual(code, 504, body)
        self.assertLess(waited, 10, "the 2 s wait took %.1f s" % waited)


if __name__ == "__main__":
    unittest.main()
