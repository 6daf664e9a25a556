#!/usr/bin/env bash
#  Install the Debian packages actd needs, if any is missing. Idempotent:
#  apt runs only when something is missing, and then updates its lists once.
#
#  scripts/deps.sh [build|test|bench]...   (default: build)
set -euo pipefail

build=(build-essential cmake pkg-config libzmq3-dev libczmq-dev libjansson-dev libpq-dev
       libsqlite3-dev libpcre2-dev libcmocka-dev libsystemd-dev libjemalloc-dev sqlite3
       libmicrohttpd-dev)
#  Tests: Python workers and tests use Debian's python3 with python3-zmq
#  (not whatever python3 is first on PATH), plus python3-venv and
#  python3-wheel for the README's pip install line; fuzzers need clang and
#  libFuzzer; valgrind for the leak run; nftables to drop a PostgreSQL
#  server's packets (a host gone silent); Node for the Node package; JSON
#  Schema's official test suite for test_schema; promtool (package
#  prometheus) checks actd-http's /metrics; chromium for the dashboard test;
#  man-db and groff-base render the man pages (test_man_pages).
test=(python3 python3-zmq python3-venv python3-wheel valgrind clang libclang-rt-14-dev nftables
      libfuzzer-14-dev systemd libpq-dev postgresql json-schema-test-suite
      prometheus chromium man-db groff-base)
#  Benchmarks: Gearman to compare with; valgrind for bench/compare.sh's
#  instruction counts; Debian's python3 for its fdatasync probe.
bench=(gearman-job-server gearman-tools libgearman-dev liblmdb-dev valgrind python3)

wanted=()
for group in "${@:-build}"; do
    case "$group" in
        build) wanted+=("${build[@]}") ;;
        test)  wanted+=("${build[@]}" "${test[@]}") ;;
        bench) wanted+=("${build[@]}" "${bench[@]}") ;;
        *) echo "deps.sh: unknown group '$group' (build, test, bench)" >&2; exit 2 ;;
    esac
done
missing=()
for package in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
#  Node.js: the machine image may bring its own; else take Debian's
if [[ " ${*:-build} " == *" test "* ]] && ! command -v node >/dev/null; then
    missing+=(nodejs npm)
fi
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    echo "deps.sh: installing ${missing[*]}"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
