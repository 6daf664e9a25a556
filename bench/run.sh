#!/usr/bin/env bash
#  Build the benchmarks (RelWithDebInfo, in the main build/ tree) and run
#  them in turn, printing everything. Benchmarks print figures and ratios
#  against a baseline measured in the same run; they assert no timing.
#
#  bench/run.sh [--quick]
#    --quick   smaller runs (a smoke run of every program, a few seconds each)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
quick=0
for arg in "$@"; do
    case "$arg" in
        --quick) quick=1 ;;
        -h|--help) sed -n '2,7p' "$0" | sed 's/^#\( \{1,2\}\)\{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument '$arg'" >&2; exit 2 ;;
    esac
done

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target actd-daemon bench_resolve bench_schema \
    bench_scan bench_calls bench_restart bench_plan bench_numbers bench_wal
#  bench_lmdb when liblmdb-dev is there (its target exists only then)
cmake --build "$build" -j"$(nproc)" --target bench_lmdb >/dev/null 2>&1 || true
bin="$build/bin"

run () {
    echo
    echo "=== $* ==="
    "$@"
}

if [ "$quick" = 1 ]; then
    run "$bin/bench_resolve" --sizes 10,10000 --seconds 0.3
    run "$bin/bench_schema" --seconds 0.2
    run "$bin/bench_scan" --runs 2
    run "$bin/bench_calls" --calls 2000 --repeat 1
    run "$bin/bench_restart" --messages 100000 --contexts 1000 --pending 10 --probes 20 --runs 1
    run "$bin/bench_plan" --sizes 200,1000 --repeat 1
    run "$bin/bench_numbers" --count 100000 --repeat 1
    run "$bin/bench_wal" --commits 200 --rounds 1
    if [ -x "$bin/bench_lmdb" ]; then run "$bin/bench_lmdb" --calls 10000 --rounds 1; fi
else
    run "$bin/bench_resolve"
    run "$bin/bench_schema"
    run "$bin/bench_scan"
    run "$bin/bench_calls"
    run "$bin/bench_restart"
    run "$bin/bench_plan"
    run "$bin/bench_numbers"
    run "$bin/bench_wal"
    #  Built only where liblmdb-dev is (scripts/deps.sh bench)
    if [ -x "$bin/bench_lmdb" ]; then run "$bin/bench_lmdb"; fi
fi
