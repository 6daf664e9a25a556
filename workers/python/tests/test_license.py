"""The packages carry the project's license text: workers/python/LICENSE
and workers/node/LICENSE are copies of the repository's LICENSE (Apache
2.0), and each package ships its copy (the wheel in its .dist-info, the
npm tarball at its root: workers/node/test/install.test.js lists it)."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

from support import PACKAGE_ROOT, PROJECT_ROOT

NODE_ROOT = os.path.join(PROJECT_ROOT, "workers", "node")


def read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


class LicenseTest(unittest.TestCase):

    def test_each_package_has_a_copy_of_the_license(self) -> None:
        license_text = read(os.path.join(PROJECT_ROOT, "LICENSE"))
        self.assertIn(b"Apache License", license_text)
        for root in (PACKAGE_ROOT, NODE_ROOT):
            copy = os.path.join(root, "LICENSE")
            self.assertTrue(os.path.isfile(copy), "%s is missing: cp LICENSE %s" % (copy, copy))
            self.assertEqual(read(copy), license_text,
                             "%s differs from the repository's LICENSE: cp LICENSE %s"
                             % (copy, copy))

    def test_the_packages_name_it(self) -> None:
        with open(os.path.join(PACKAGE_ROOT, "pyproject.toml"), encoding="utf-8") as handle:
            self.assertRegex(handle.read(), r'(?m)^license-files = \["LICENSE"\]$')
        with open(os.path.join(NODE_ROOT, "package.json"), encoding="utf-8") as handle:
            self.assertIn("LICENSE", json.load(handle)["files"])

    def test_the_wheel_holds_the_license(self) -> None:
        with tempfile.TemporaryDirectory(prefix="actd-wheel-") as scratch:
            # A copy: pip builds in the source tree (build/, *.egg-info)
            source = os.path.join(scratch, "python")
            shutil.copytree(PACKAGE_ROOT, source,
                            ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            built = subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                 "--no-index", source, "-w", os.path.join(scratch, "wheel")],
                capture_output=True, text=True, timeout=300)
            self.assertEqual(built.returncode, 0, built.stdout + built.stderr)
            (wheel,) = os.listdir(os.path.join(scratch, "wheel"))
            with zipfile.ZipFile(os.path.join(scratch, "wheel", wheel)) as archive:
                names = archive.namelist()
                licenses = [name for name in names
                            if re.fullmatch(r"actd-[^/]+\.dist-info/(licenses/)?LICENSE", name)]
                self.assertEqual(len(licenses), 1, names)
                self.assertEqual(archive.read(licenses[0]),
                                 read(os.path.join(PROJECT_ROOT, "LICENSE")))
                metadata = archive.read(next(name for name in names
                                             if name.endswith(".dist-info/METADATA")))
                self.assertIn(b"\nLicense-File: LICENSE\n", metadata)


if __name__ == "__main__":
    unittest.main()
