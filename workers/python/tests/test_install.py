"""The install lines of README.md (the same in the project's README) work as
written, offline: they are run, with HOME a temporary directory (so
``~/actd-venv`` is a fresh venv) in a copy of the checkout (pip builds in
the source tree). Their apt-get line is not run: the test checks that its
packages are installed and that scripts/deps.sh installs them for the
tests."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest
from typing import List

from support import PACKAGE_ROOT, PROJECT_ROOT


def install_lines(readme: str) -> List[str]:
    """The lines of the README's sh block that holds the pip install."""
    with open(readme, encoding="utf-8") as handle:
        blocks = re.findall(r"```sh\n(.*?)```", handle.read(), re.S)
    found = [block for block in blocks if "--no-build-isolation" in block]
    if len(found) != 1:
        raise AssertionError("%s: %d install blocks" % (readme, len(found)))
    return found[0].splitlines()


class InstallTest(unittest.TestCase):

    def test_the_readme_install_lines_work_as_written(self) -> None:
        lines = install_lines(os.path.join(PACKAGE_ROOT, "README.md"))
        self.assertEqual(install_lines(os.path.join(PROJECT_ROOT, "README.md")), lines,
                         "the project's README gives other install lines")
        apt, commands = lines[0], lines[1:]
        packages = apt.split("apt-get install ")[1].split()
        with open(os.path.join(PROJECT_ROOT, "scripts", "deps.sh"), encoding="utf-8") as handle:
            tested = re.search(r"^test=\((.*?)\)", handle.read(), re.M | re.S).group(1).split()
        for package in packages:
            self.assertIn(package, tested, "scripts/deps.sh does not install %s" % package)
            installed = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                                       capture_output=True, text=True)
            self.assertIn("install ok installed", installed.stdout, package)
        with tempfile.TemporaryDirectory(prefix="actd-install-") as scratch:
            shutil.copytree(PACKAGE_ROOT, os.path.join(scratch, "workers", "python"),
                            ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            environment = {key: value for key, value in os.environ.items()
                           if key not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
            environment["HOME"] = scratch
            run = subprocess.run(["bash", "-ec", "\n".join(commands)], env=environment,
                                 cwd=scratch, capture_output=True, text=True, timeout=600)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertEqual(run.stdout.splitlines()[-1], "0.1.0")
            # The installed copy, not the checkout's, with its metadata
            python = os.path.join(scratch, "actd-venv", "bin", "python")
            probe = subprocess.run(
                [python, "-c", "import actd, actd.aio, os; "
                 "print(os.path.realpath(actd.__file__)); "
                 "print(os.path.exists(os.path.join(os.path.dirname(actd.__file__), 'py.typed')))"],
                env=environment, cwd="/", capture_output=True, text=True, timeout=60)
            self.assertEqual(probe.returncode, 0, probe.stderr)
            location, typed = probe.stdout.splitlines()
            self.assertTrue(location.startswith(
                os.path.join(os.path.realpath(scratch), "actd-venv") + os.sep), location)
            self.assertEqual(typed, "True")
            shown = subprocess.run([python, "-m", "pip", "show", "actd"], env=environment,
                                   capture_output=True, text=True, timeout=60)
            for field in ("Name: actd", "Requires: pyzmq", "License: Apache-2.0",
                          "Author: actd developers"):
                self.assertIn(field, shown.stdout)


if __name__ == "__main__":
    unittest.main()
