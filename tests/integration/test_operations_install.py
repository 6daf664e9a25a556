"""What "cmake --install" puts where (docs/operations.md): the programs,
the headers, libactd (static and shared, its soname and links, exporting
exactly the functions of the installed headers), a pkg-config file that
works without PCRE2's, the CMake package (find_package (actd)), the
systemd units (systemd-analyze verify), tmpfiles.d and sysusers.d, the
config (an edited one kept by a second install) and the man pages; the
installed actd runs on the installed config, and a program built against
the install runs. Split from test_operations.py, whose helpers it uses.
"""

import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import unittest

from harness import ROOT, find_binary, free_port
from test_operations import EXAMPLE, RawActd, write


class InstallTest(unittest.TestCase):
    """cmake --install of the build these tests run from (docs/operations.md)."""

    PROGRAM = r"""
        #include <stdio.h>
        #include <actd/act.h>
        #include <actd/act_client.h>

        int
        main (int argc, char *argv [])
        {
            act_err_t err = { 0 };
            act_ctx_t *ctx = act_ctx_new ("t");
            json_t *message = json_loads (
                "{\"type\":\"data\",\"kind\":\"user\",\"data\":{\"name\":\"Alex\"}}", 0, NULL);
            json_t *stored = act_ctx_append (ctx, message, &err);
            act_expr_t *expr = act_expr_parse ("\xe2\x80\xa0user.name", false, &err);
            json_t *value = act_ctx_resolve (ctx, expr, NULL);
            act_client_t *client = act_client_new ("tcp://127.0.0.1:9");
            printf ("%s %s\n", json_string_value (value), client? "client": "none");
            act_client_destroy (&client);
            json_decref (value);
            act_expr_destroy (&expr);
            json_decref (stored);
            json_decref (message);
            act_ctx_destroy (&ctx);
            return 0;
        }
        """

    def setUp(self):
        self.build = os.path.dirname(os.path.dirname(os.environ.get("ACTD_BIN")
                                                     or find_binary("actd")))
        with open(os.path.join(self.build, "CMakeCache.txt")) as handle:
            self.cache = dict(re.findall(r"(?m)^([A-Za-z_]+):[A-Z]+=(.*)$", handle.read()))
        #  The config goes under the prefix unless the build was configured
        #  for /usr, / or /opt (then it goes to /etc, which is not ours)
        prefix = self.cache["CMAKE_INSTALL_PREFIX"]
        self.assertFalse(prefix in ("/usr", "/") or prefix.startswith("/opt/")
                         or self.cache["CMAKE_INSTALL_SYSCONFDIR"].startswith("/"),
                         "this test installs with --prefix: configure %s with the default prefix"
                         % self.build)
        self.prefix = tempfile.mkdtemp(prefix="actd-install-")
        self.addCleanup(shutil.rmtree, self.prefix, True)

    def test_install_puts_everything_in_place(self):
        P = self.prefix
        done = subprocess.run(["cmake", "--install", self.build, "--prefix", P],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        programs = ["actd", "actctl", "actd-example-worker", "actd-http"]
        #  actd-exec's folder is optional: its page comes with the program
        pages = ["share/man/man1/actd-example-worker.1"]
        if os.path.exists(os.path.join(self.build, "bin", "actd-exec")):
            programs.append("actd-exec")
            pages.append("share/man/man1/actd-exec.1")
        for program in programs:
            self.assertTrue(os.access(os.path.join(P, "bin", program), os.X_OK), program)
        headers = sorted(os.listdir(os.path.join(ROOT, "include", "actd")))
        self.assertEqual(sorted(os.listdir(os.path.join(P, "include", "actd"))), headers)
        libdir = self.cache.get("CMAKE_INSTALL_LIBDIR", "lib")
        self.assertTrue(os.path.exists(os.path.join(P, libdir, "libactd.a")))
        for path in ("lib/systemd/system/actd.service", "lib/sysusers.d/actd.conf",
                     "lib/tmpfiles.d/actd.conf", "etc/actd/actd.cfg",
                     "share/man/man8/actd.8", "share/man/man1/actctl.1",
                     "share/doc/actd/LICENSE", "share/bash-completion/completions/actctl",
                     "lib/systemd/system/actd-http.service", "etc/actd/actd-http.cfg",
                     "share/man/man8/actd-http.8",
                     "share/doc/actd/http.md", "share/doc/actd/protocol.md",
                     "share/doc/actd/semantics.md", "share/doc/actd/operations.md",
                     *pages):
            self.assertTrue(os.path.exists(os.path.join(P, path)), path)
        with open(os.path.join(P, "etc", "actd", "actd.cfg")) as installed, open(EXAMPLE) as example:
            self.assertEqual(installed.read(), example.read())

        #  The unit runs the installed actd on the installed config
        unit = os.path.join(P, "lib", "systemd", "system", "actd.service")
        with open(unit) as handle:
            text = handle.read()
        self.assertIn("\nExecStart=%s/bin/actd --config %s/etc/actd/actd.cfg\n" % (P, P), text)
        self.assertNotRegex(text, r"@[A-Z_]+@")
        #  The tmpfiles.d snippet makes the config directory the unit reads
        with open(os.path.join(P, "lib", "tmpfiles.d", "actd.conf")) as handle:
            entries = [line.split() for line in handle.read().splitlines()
                       if line.strip() and not line.startswith("#")]
        self.assertEqual(entries, [["d", "%s/etc/actd" % P, "0750", "root", "actd", "-"]])
        verify = subprocess.run(["systemd-analyze", "verify", "--man=no", unit],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual((verify.returncode, verify.stderr), (0, ""))
        #  actd-http's unit beside it, on its own installed config
        unit = os.path.join(P, "lib", "systemd", "system", "actd-http.service")
        with open(unit) as handle:
            text = handle.read()
        self.assertIn("\nExecStart=%s/bin/actd-http --config %s/etc/actd/actd-http.cfg\n"
                      % (P, P), text)
        self.assertNotRegex(text, r"@[A-Z_]+@")
        verify = subprocess.run(["systemd-analyze", "verify", "--man=no", unit],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual((verify.returncode, verify.stderr), (0, ""))

        #  The installed actd runs on the installed config (its endpoints
        #  and store moved here by flags)
        port = free_port()
        actd = RawActd(["--config", os.path.join(P, "etc", "actd", "actd.cfg"),
                        "--db", os.path.join(P, "actd.db"),
                        "--client-endpoint", "tcp://127.0.0.1:%d" % port,
                        "--worker-endpoint", "tcp://127.0.0.1:%d" % free_port()],
                       binary=os.path.join(P, "bin", "actd"))
        self.addCleanup(actd.cleanup)
        actd.wait_ping("tcp://127.0.0.1:%d" % port)
        self.assertEqual(actd.stop(), 0, actd.log())
        version = subprocess.run([os.path.join(P, "bin", "actd"), "--version"],
                                 capture_output=True, text=True, timeout=60).stdout.split()

        #  A second install keeps an edited config and puts the example beside it
        with open(os.path.join(P, "etc", "actd", "actd.cfg"), "a") as handle:
            handle.write("# edited\n")
        done = subprocess.run(["cmake", "--install", self.build, "--prefix", P],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        with open(os.path.join(P, "etc", "actd", "actd.cfg")) as handle:
            self.assertTrue(handle.read().endswith("# edited\n"))
        self.assertTrue(os.path.exists(os.path.join(P, "etc", "actd", "actd.cfg.example")))

        #  pkg-config, then a program built and linked against the install
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(P, libdir, "pkgconfig"))
        modversion = subprocess.run(["pkg-config", "--modversion", "libactd"], env=env,
                                    capture_output=True, text=True, timeout=60)
        self.assertEqual(["actd", modversion.stdout.strip()], version)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libactd"], env=env,
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(flags.returncode, 0, flags.stderr)
        self.assertIn("-I%s/include" % P, flags.stdout.split())
        self.assertIn("-lactd", flags.stdout.split())
        #  The store is the daemon's: libactd needs no database
        requires = subprocess.run(["pkg-config", "--print-requires", "libactd"], env=env,
                                  capture_output=True, text=True, timeout=60).stdout.split()
        self.assertEqual(sorted(requires), ["jansson", "libczmq", "libzmq"])
        #  PCRE2 only for a static link (libactd.a), without its .pc: a
        #  program that links libactd.so needs no libpcre2-dev
        static = subprocess.run(["pkg-config", "--static", "--libs", "libactd"], env=env,
                                capture_output=True, text=True, timeout=60)
        self.assertIn("-lpcre2-8", static.stdout.split())
        with open(os.path.join(P, libdir, "pkgconfig", "libactd.pc")) as handle:
            pc = handle.read()
        self.assertIn("\nlibdir=${prefix}/%s\n" % libdir, pc)
        self.assertIn("\nincludedir=${prefix}/include\n", pc)
        env_without_pcre2 = dict(os.environ, PKG_CONFIG_LIBDIR=self.pc_dir_without_pcre2(P))
        without = subprocess.run(["pkg-config", "--cflags", "--libs", "libactd"],
                                 env=env_without_pcre2, capture_output=True, text=True,
                                 timeout=60)
        self.assertEqual((without.returncode, without.stdout), (0, flags.stdout), without.stderr)
        self.assertFalse(os.path.exists(os.path.join(P, "include", "actd", "act_store.h")))
        source = os.path.join(P, "program.c")
        with open(source, "w") as handle:
            handle.write(textwrap.dedent(self.PROGRAM))
        program = os.path.join(P, "program")
        compiler = self.cache.get("CMAKE_C_COMPILER", "cc")
        built = subprocess.run([compiler, "-o", program, source]
                               + flags.stdout.split(), capture_output=True, text=True,
                               timeout=300)
        self.assertEqual(built.returncode, 0, built.stderr)
        #  (-lactd finds libactd.so first, which is not where the loader looks)
        ran = subprocess.run([program], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1",
                                      LD_LIBRARY_PATH=os.path.join(P, libdir)))
        #  (CZMQ's log, where the store says it made its schema, goes to
        #  stdout too)
        self.assertEqual(ran.returncode, 0, ran.stdout + ran.stderr)
        self.assertEqual(ran.stdout.splitlines()[-1], "Alex client")
        self.check_shared_library(os.path.join(P, libdir))
        self.check_find_package(source, compiler, env_without_pcre2)

    def pc_dir_without_pcre2(self, P):
        """A pkg-config directory as on a machine without libpcre2-dev: the
        system's .pc files but PCRE2's, and the installed libactd.pc."""
        folder = os.path.join(P, "pc-without-pcre2")
        os.mkdir(folder)
        search = subprocess.run(["pkg-config", "--variable", "pc_path", "pkg-config"],
                                capture_output=True, text=True, timeout=60).stdout.strip()
        for directory in reversed(search.split(":")):
            for name in (os.listdir(directory) if os.path.isdir(directory) else ()):
                if name.endswith(".pc") and not name.startswith("libpcre2"):
                    target = os.path.join(folder, name)
                    if os.path.lexists(target):
                        os.remove(target)
                    os.symlink(os.path.join(directory, name), target)
        libdir = self.cache.get("CMAKE_INSTALL_LIBDIR", "lib")
        os.symlink(os.path.join(P, libdir, "pkgconfig", "libactd.pc"),
                   os.path.join(folder, "libactd.pc"))
        return folder

    def dynamic_section(self, path):
        done = subprocess.run(["objdump", "-p", path], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        return re.findall(r"(?m)^\s+(NEEDED|SONAME)\s+(\S+)$", done.stdout)

    def check_shared_library(self, libdir):
        """libactd.so.0.1.0 with the soname libactd.so.0, and the links to it."""
        self.assertIn(("SONAME", "libactd.so.0"),
                      self.dynamic_section(os.path.join(libdir, "libactd.so.0.1.0")))
        self.assertEqual(os.readlink(os.path.join(libdir, "libactd.so.0")), "libactd.so.0.1.0")
        self.assertEqual(os.readlink(os.path.join(libdir, "libactd.so")), "libactd.so.0")
        #  It exports the functions of the installed headers, and nothing
        #  else: the internal ones its modules share stay local
        #  (protocol/libactd.map)
        done = subprocess.run(["nm", "-D", "--defined-only", os.path.join(libdir, "libactd.so")],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        exported = set(re.findall(r"(?m)^\S+ [A-Z] (\w+)@@ACTD_0$", done.stdout))
        others = [line for line in done.stdout.splitlines()
                  if not line.endswith(("@@ACTD_0", " A ACTD_0")) and "__odr_asan" not in line]
        self.assertEqual(others, [], "exported without the version node ACTD_0")
        declared = public_functions(os.path.join(self.prefix, "include", "actd"))
        self.assertGreater(len(declared), 100)
        self.assertEqual(sorted(exported - declared), [], "exported, declared in no header")
        self.assertEqual(sorted(declared - exported), [], "declared, not exported")

    def check_find_package(self, source, compiler, env):
        """A CMake project builds a program with find_package (actd), and it
        runs; env: without PCRE2's .pc (actd::actd does not need it)."""
        P = self.prefix
        project = os.path.join(P, "project")
        os.mkdir(project)
        shutil.copy(source, os.path.join(project, "program.c"))
        write(os.path.join(project, "CMakeLists.txt"), textwrap.dedent("""\
            cmake_minimum_required (VERSION 3.16)
            project (uses_actd LANGUAGES C)
            find_package (actd 0.1 REQUIRED)
            add_executable (program program.c)
            target_link_libraries (program PRIVATE actd::actd)
            """))
        build = os.path.join(project, "build")
        for command in (["cmake", "-S", project, "-B", build, "-DCMAKE_PREFIX_PATH=" + P,
                         "-DCMAKE_C_COMPILER=" + compiler],
                        ["cmake", "--build", build]):
            done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        program = os.path.join(build, "program")
        #  Linked to the shared library, found through the build's RPATH
        self.assertIn(("NEEDED", "libactd.so.0"), self.dynamic_section(program))
        ran = subprocess.run([program], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))
        self.assertEqual(ran.returncode, 0, ran.stdout + ran.stderr)
        self.assertEqual(ran.stdout.splitlines()[-1], "Alex client")
        #  A version beyond the installed one is refused
        write(os.path.join(project, "CMakeLists.txt"), textwrap.dedent("""\
            cmake_minimum_required (VERSION 3.16)
            project (uses_actd LANGUAGES C)
            find_package (actd 1.0 REQUIRED)
            """))
        done = subprocess.run(["cmake", "-S", project, "-B", os.path.join(project, "build1"),
                               "-DCMAKE_PREFIX_PATH=" + P], capture_output=True, text=True,
                              timeout=300)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("0.1.0", done.stdout + done.stderr)


def public_functions(folder):
    """The functions the headers in folder declare (comments and static
    inline definitions aside)."""
    names = set()
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as handle:
            text = re.sub(r"//[^\n]*|/\*.*?\*/", "", handle.read(), flags=re.S)
        inline = set(re.findall(r"static\s+inline\b[^;{(]*?\b(act_\w+)\s*\(", text))
        names |= set(re.findall(r"\b(act_\w+)\s*\(", text)) - inline
    return names


if __name__ == "__main__":
    unittest.main()
