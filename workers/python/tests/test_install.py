"""The package installs offline with pip into a venv that sees Debian's
python3-zmq, and imports from outside the source tree:

    /usr/bin/python3 -m venv --system-site-packages VENV
    VENV/bin/pip install --no-build-isolation ./workers/python
"""

import os
import shutil
import subprocess
import tempfile
import unittest

from support import PACKAGE_ROOT

PYTHON = "/usr/bin/python3"


class InstallTest(unittest.TestCase):

    def test_pip_install_into_a_venv_and_import(self) -> None:
        with tempfile.TemporaryDirectory(prefix="actd-venv-") as scratch:
            # Build from a copy: an in-tree build would leave build/ and
            # actd.egg-info/ in the source tree.
            source = os.path.join(scratch, "python")
            shutil.copytree(PACKAGE_ROOT, source, ignore=shutil.ignore_patterns(
                "build", "*.egg-info", "__pycache__", "tests"))
            venv = os.path.join(scratch, "venv")
            environment = {key: value for key, value in os.environ.items()
                           if key not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
            environment["PIP_NO_CACHE_DIR"] = "1"
            environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
            subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", venv],
                           check=True, env=environment, timeout=300)
            python = os.path.join(venv, "bin", "python")
            install = subprocess.run(
                [python, "-m", "pip", "install", "--no-build-isolation", source],
                env=environment, cwd=scratch, capture_output=True, text=True, timeout=300)
            self.assertEqual(install.returncode, 0, install.stdout + install.stderr)
            probe = subprocess.run(
                [python, "-c", "import actd, actd.aio, os; "
                 "print(os.path.realpath(actd.__file__)); print(actd.__version__); "
                 "print(actd.Worker.__name__, actd.Client.__name__, "
                 "actd.aio.AsyncClient.__name__); "
                 "print(os.path.exists(os.path.join(os.path.dirname(actd.__file__), 'py.typed')))"],
                env=environment, cwd=scratch, capture_output=True, text=True, timeout=60)
            self.assertEqual(probe.returncode, 0, probe.stderr)
            location, version, names, typed = probe.stdout.splitlines()
            self.assertTrue(location.startswith(os.path.realpath(venv) + os.sep), location)
            self.assertEqual(version, "0.1.0")
            self.assertEqual(names, "Worker Client AsyncClient")
            self.assertEqual(typed, "True")
            shown = subprocess.run([python, "-m", "pip", "show", "actd"], env=environment,
                                   capture_output=True, text=True, timeout=60)
            self.assertIn("Name: actd", shown.stdout)
            self.assertIn("Requires: pyzmq", shown.stdout)


if __name__ == "__main__":
    unittest.main()
