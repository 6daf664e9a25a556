"""The harness's check on its own directories (harness.check_scratch): a
test module that leaves one behind fails, naming it. Runs used to leave
hundreds of actd-test-* directories in /tmp, unnoticed."""

import os
import re
import subprocess
import sys
import unittest

from harness import remove_scratch, scratch_dir

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


if __name__ == "__main__":
    unittest.main()
