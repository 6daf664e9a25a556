"""The harness's checks on itself: its check on its own directories
(harness.check_scratch: a test module that leaves one behind fails, naming
it; runs used to leave hundreds of actd-test-* directories in /tmp,
unnoticed), and a first start of actd that finds a port taken."""

import os
import re
import socket
import subprocess
import sys
import unittest

from harness import Actd, Client, remove_scratch, scratch_dir

HERE = os.path.dirname(os.path.abspath(__file__))

#  An Actd never started (no actd process) whose cleanup() is forgotten
LEAKY = """
import unittest
from harness import Actd

class Leaky(unittest.TestCase):
    def test_forgets_the_cleanup(self):
        Actd(store="unused.db")
"""


class ScratchCheckTest(unittest.TestCase):

    def test_a_module_that_leaves_an_actd_directory_fails_and_names_it(self):
        folder = scratch_dir("actd-harness-")
        self.addCleanup(remove_scratch, folder)
        with open(os.path.join(folder, "test_leaky.py"), "w") as handle:
            handle.write(LEAKY)
        #  TMPDIR: the leaked directory lands in folder, removed with it
        environment = dict(os.environ, TMPDIR=folder,
                           PYTHONPATH=os.pathsep.join([HERE, folder]))
        run = subprocess.run([sys.executable, "-m", "unittest", "test_leaky"], cwd=folder,
                             env=environment, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(run.returncode, 0, run.stderr)
        self.assertIn("Ran 1 test", run.stderr)
        left = re.findall(r"(\S+/actd-test-\S+) \(made at test_leaky\.py:7\)", run.stderr)
        self.assertEqual(len(left), 1, run.stderr)
        self.assertTrue(os.path.isdir(left[0]), "kept for a look")


class PortTest(unittest.TestCase):

    def test_a_first_start_that_finds_its_port_taken_picks_new_ones(self):
        """Another process binds actd's client port between free_port's
        probe and actd's bind (ctest runs two files at once): the first
        start picks new ports and actd answers on them."""
        actd = Actd()
        self.addCleanup(actd.cleanup)
        self.addCleanup(actd.stop)
        taken = actd.client_port
        with socket.socket() as squatter:
            squatter.bind(("127.0.0.1", taken))
            squatter.listen()
            actd.start()
            self.assertNotEqual(actd.client_port, taken)
            self.assertIn("tcp://127.0.0.1:%d: Address already in use" % taken, actd.log())
            client = Client(actd.client_endpoint)
            try:
                self.assertEqual(client.request("PING"), ["PONG"])
            finally:
                client.close()


if __name__ == "__main__":
    unittest.main()
