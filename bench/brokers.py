#!/usr/bin/python3
"""Throughput with 1, 2 and 3 brokers sharing one PostgreSQL (issue 11).

Starts a private PostgreSQL server (Debian's binaries, a temporary data
directory, fsync on, as the postgres user when run as root: see
tests/integration/pg.py), makes a fresh database, and runs

    build/bin/bench_calls --postgres URL --brokers 1,2,3 [ARGS...]

which starts the brokers itself and prints calls per second, latencies,
commits and actd CPU per call for each broker count, with ratios against
one broker measured in the same run. Extra arguments go to bench_calls
(e.g. --calls 5000 --repeat 1). Asserts nothing. Needs /usr/bin/python3
with python3-zmq and the postgresql package (scripts/deps.sh bench).
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import pg  # noqa: E402


def main():
    bench = os.path.join(ROOT, "build", "bin", "bench_calls")
    if not os.access(bench, os.X_OK):
        sys.exit("brokers.py: build bench_calls first (bench/run.sh or "
                 "cmake --build build --target bench_calls)")
    server = pg.Server(fsync=True)
    try:
        url = server.database()
        print("PostgreSQL %s (fsync on), database %s" % (pg._bin("postgres"), url), flush=True)
        arguments = sys.argv[1:]
        if not any(a.startswith("--brokers") for a in arguments):
            arguments = ["--brokers", "1,2,3"] + arguments
        return subprocess.call([bench, "--postgres", url] + arguments)
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
