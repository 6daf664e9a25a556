#!/usr/bin/python3
"""Every sh, bash, python and c block of the top-level README.md, and every
sh block of the Python, Node and actd-exec package READMEs (their python
and js blocks are run by the packages' own tests), runs as written against
a live actd (tests/integration/harness.py's Actd, with the
example worker when a block needs 'upper' or 'weather'), or is marked right
before it with <!-- snippet: not run: REASON --> (counted), or, for C that
is not a whole program, <!-- snippet: fragment --> (compiled with -c).

A plain ``` block right after a block is its output: compared line by line,
where "..." in the README stands for any lines.

The package READMEs address a broker on the default endpoints: there, as in
the packages' own README tests, tcp://127.0.0.1:5555 and :5556 are replaced
by the test broker's, and blocks run from a copy of the checkout's workers/
(so `npm ci` does not pull node_modules from under a Node test running at
the same time). A block that starts a worker and exits (`worker &`) has its
whole process group stopped when it is done; a block that only starts a
long-running example worker must serve a call.

usage: test_readme.py SOURCE_DIR BUILD_DIR   (ACTD_BIN: the actd under test)"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                         os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(SOURCE, "build"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))
import harness  # noqa: E402

LANGUAGES = ("sh", "bash", "python", "c")
#  Each Markdown file whose blocks run, and the languages run from it
READMES = (("README.md", LANGUAGES),
           ("workers/python/README.md", ("sh", "bash")),
           ("workers/node/README.md", ("sh", "bash")),
           ("workers/exec/README.md", ("sh", "bash")))
#  What a block that starts an example worker of a package is asked to do
EXAMPLE_CALL = {"_tool": "upper", "text": "readme", "_outputPath": "†state.upper"}
PYTHON = "/usr/bin/python3"


def blocks(path):
    """(line, language, text, marker, output) of each fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found = []
    index = 0
    while index < len(lines):
        fence = re.match(r"^```(\S*)\s*$", lines[index])
        if not fence:
            index += 1
            continue
        start = index
        end = index + 1
        while not lines[end].startswith("```"):
            end += 1
        marker = None
        before = start - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        m = re.match(r"^<!-- snippet: (.*) -->$", lines[before].strip()) if before >= 0 else None
        if m:
            marker = m.group(1)
        found.append([start + 1, fence.group(1), "\n".join(lines[start + 1:end]) + "\n", marker, None])
        index = end + 1
    #  a plain block after a runnable one is its output
    for this, following in zip(found, found[1:]):
        if this[1] in LANGUAGES and following[1] == "":
            this[4] = following[2]
    return found


def matches(expected, actual):
    """Line by line; a line "..." stands for any number of lines."""
    pattern = []
    for line in expected.rstrip("\n").split("\n"):
        pattern.append(r"(?:.*\n)*?" if line.strip() == "..." else re.escape(line) + r"\n")
    return re.fullmatch("".join(pattern), actual.rstrip("\n") + "\n") is not None


class Broker:
    """A live actd, with the example worker if asked, and the environment
    the snippets run in."""

    def __init__(self, example_worker):
        self.actd = harness.Actd().start()
        self.worker = None
        if example_worker:
            self.worker = subprocess.Popen(
                [os.path.join(BUILD, "bin", "actd-example-worker"),
                 "--endpoint", self.actd.worker_endpoint],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.wait_worker()
        self.env = dict(os.environ, ACTD_ENDPOINT=self.actd.client_endpoint,
                        ACTD_WORKER_ENDPOINT=self.actd.worker_endpoint,
                        PATH=os.path.join(BUILD, "bin") + os.pathsep + os.environ["PATH"],
                        PYTHONPATH=os.path.join(SOURCE, "workers", "python"))

    def wait_worker(self, count=1):
        deadline = time.time() + 20
        while time.time() < deadline:
            stats = last_json(subprocess.run(
                [os.path.join(BUILD, "bin", "actctl"), "--endpoint", self.actd.client_endpoint,
                 "stats", "--json"], capture_output=True, text=True).stdout) or {}
            workers = stats.get("workers")
            if (len(workers) if isinstance(workers, list) else workers or 0) >= count:
                return
            time.sleep(0.1)
        raise RuntimeError("no worker came: %s" % stats)

    def actctl(self, *args):
        return subprocess.run(["actctl"] + list(args), capture_output=True, text=True,
                              env=self.env, timeout=60)

    def close(self):
        if self.worker:
            self.worker.terminate()
            self.worker.wait()
        code = self.actd.stop()
        log = self.actd.log()
        self.actd.cleanup()         # removes its directory (store, actd.log)
        assert code == 0, log


def serves(broker, command, call, check, cwd=None):
    """Start a worker snippet, check that a call reaches it, stop it."""
    process = subprocess.Popen(command, env=broker.env, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        broker.wait_worker()
        done = broker.actctl("call", "readme", json.dumps(call), "--wait", "--json")
        assert done.returncode == 0, (done.stdout, done.stderr)
        check(last_json(done.stdout))
    finally:
        harness.end_process(process)


def last_json(text):
    """The last of the JSON documents actctl --json printed (indented)."""
    decoder = json.JSONDecoder()
    index, value = 0, None
    text = text.strip()
    while index < len(text):
        value, index = decoder.raw_decode(text, index)
        while index < len(text) and text[index].isspace():
            index += 1
    return value


def needs_example(text):
    return re.search(r"\b(upper|weather)\b", text) is not None


def s_endpoints(text, broker):
    """The block with the default endpoints replaced by the test broker's."""
    return text.replace("tcp://127.0.0.1:5555", broker.actd.client_endpoint) \
               .replace("tcp://127.0.0.1:5556", broker.actd.worker_endpoint)


def s_copy_workers(directory):
    """A copy of the checkout's workers/ (no node_modules, no caches), the
    directory to run a package README's blocks from."""
    shutil.copytree(os.path.join(SOURCE, "workers"), os.path.join(directory, "workers"),
                    ignore=shutil.ignore_patterns("node_modules", "__pycache__", "*.egg-info"))
    return directory


def run_sh(block, cwd=None):
    _, _, text, _, output = block
    if re.match(r"\s*actd-exec\b", text):
        broker = Broker(False)
        try:
            serves(broker, ["bash", "-c", text], {"_tool": "wc", "text": "abc", "_outputPath": "†state.n"},
                   lambda outcome: print("   actd-exec served:", outcome), cwd=cwd)
        finally:
            broker.close()
        return
    if re.match(r"\s*\S*python3 \S*examples/worker\.py", text):
        broker = Broker(False)
        try:
            def check(outcome):
                assert outcome["status"] == "ok", outcome
                print("   example worker served:", outcome)
            serves(broker, ["bash", "-c", s_endpoints(text, broker)], EXAMPLE_CALL, check, cwd=cwd)
        finally:
            broker.close()
        return
    broker = Broker(needs_example(text) or "examples/client" in text)
    try:
        #  A session of its own: what the block left running in the
        #  background is stopped with it. Output goes to files, since a
        #  background process keeps a pipe open after the block is done.
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            process = subprocess.Popen(["bash", "-c", s_endpoints(text, broker)], cwd=cwd,
                                       env=broker.env, stdout=out, stderr=err, text=True,
                                       start_new_session=True)
            try:
                process.wait(timeout=240)
            finally:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                process.wait()
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        assert process.returncode == 0, (process.returncode, stdout, stderr)
        if output is not None:
            assert matches(output, stdout + stderr), \
                "README shows:\n%s\nit printed:\n%s%s" % (output, stdout, stderr)
    finally:
        broker.close()


def run_python(block):
    _, _, text, _, output = block
    if "worker.run()" in text:
        broker = Broker(False)
        try:
            def check(outcome):
                print("   python worker served:", outcome)
            serves(broker, [PYTHON, "-c", text],
                   {"_tool": "weather", "city": "Oslo", "_outputPath": "†state.sunny || †state.rainy"}, check)
            view = broker.actctl("resolve", "readme", "†state.sunny")
            assert view.returncode == 0 and "Oslo" in view.stdout, (view.stdout, view.stderr)
        finally:
            broker.close()
        return
    broker = Broker(needs_example(text))
    try:
        done = subprocess.run([PYTHON, "-c", text], capture_output=True, text=True,
                              env=broker.env, timeout=60)
        assert done.returncode == 0, (done.stdout, done.stderr)
        if output is not None:
            assert matches(output, done.stdout), (output, done.stdout)
        else:
            assert done.stdout.startswith("ok "), done.stdout
        print("   printed:", done.stdout.strip().replace("\n", " | "))
    finally:
        broker.close()


def s_sanitizers():
    """The sanitizer flags the build under test was made with: a program
    linked with a sanitized libactd must be built with them too (else the
    sanitizer's runtime is not first and the program does not start)."""
    cache = os.path.join(BUILD, "CMakeCache.txt")
    if os.path.exists(cache) and "ACTD_SANITIZE:BOOL=ON" in open(cache).read():
        return ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    return []


def run_c(block, directory):
    line, _, text, marker, _ = block
    source = os.path.join(directory, "snippet_%d.c" % line)
    open(source, "w").write(text)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libczmq", "libzmq", "jansson",
                            "libpcre2-8"], capture_output=True, text=True, check=True).stdout.split()
    base = ["cc", "-Wall", "-Werror", "-I", os.path.join(SOURCE, "include")] + s_sanitizers ()
    if marker == "fragment":
        subprocess.run(base + ["-c", source, "-o", source + ".o"], check=True)
        return
    program = source[:-2]
    subprocess.run(base + [source, "-o", program, "-L", os.path.join(BUILD, "lib"),
                           "-Wl,-rpath," + os.path.join(BUILD, "lib"), "-lactd"] + flags, check=True)
    broker = Broker(False)
    try:
        def check(outcome):
            print("   C program served:", outcome)
        serves(broker, [program], {"_tool": "upper", "text": "hello", "_outputPath": "†state.greeting"}, check)
        got = broker.actctl("resolve", "readme", "†state.greeting")
        assert got.returncode == 0 and "hello" in got.stdout, (got.stdout, got.stderr)
    finally:
        broker.close()


def main():
    ran = marked = 0
    failed = []
    with tempfile.TemporaryDirectory(prefix="readme-") as directory:
        checkout = s_copy_workers(os.path.join(directory, "checkout"))
        for name, languages in READMES:
            for block in blocks(os.path.join(SOURCE, name)):
                line, language, text, marker, _ = block
                where = "%s:%d" % (name, line)
                if language not in languages:
                    continue
                if marker and marker.startswith("not run:"):
                    print("%s %s: marked %s" % (where, language, marker))
                    marked += 1
                    continue
                if marker and not (marker == "fragment" and language == "c"):
                    failed.append("%s: unknown marker %r" % (where, marker))
                    continue
                print("%s %s: running" % (where, language))
                try:
                    if language in ("sh", "bash"):
                        run_sh(block, None if name == "README.md" else checkout)
                    elif language == "python":
                        run_python(block)
                    else:
                        run_c(block, directory)
                    ran += 1
                except Exception as error:  # noqa: BLE001 - reported, and the test fails
                    failed.append("%s %s: %s" % (where, language, error))
                    print("   FAILED:", error)
    print("README snippets: %d ran, %d marked not run, %d failed" % (ran, marked, len(failed)))
    for failure in failed:
        print(failure)
    return 1 if failed or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
