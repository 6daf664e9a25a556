#!/usr/bin/env bash
#  Run integration tests with actd under valgrind memcheck, and fail on any
#  memory error or definite leak.
#
#    tests/valgrind/run.sh [TEST_FILE...]   default: test_broker test_broker_reads
#                                          test_broker_errors test_dataflow
#
#  test_reliability and test_reliability_shutdown are not among the
#  defaults (the CI budget): their 23 short tests each start actd (26 of
#  them took 86 s under memcheck for what the ASan run checks in 15 s,
#  leaks included). Run them by name after a change to retries, timeouts,
#  the loss of workers or the stop:
#      tests/valgrind/run.sh test_reliability test_reliability_shutdown
#
#  Builds a tree without sanitizers (build-valgrind/, Debug), makes a folder
#  build-valgrind/valgrind-bin/ holding an "actd" wrapper that execs
#      valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite
#               --error-exitcode=99 --suppressions=tests/valgrind/actd.supp ... actd
#  with symlinks to the other programs (the harness looks for them next to
#  $ACTD_BIN), and runs the test files with ACTD_BIN pointing at the wrapper.
#
#  --read-inline-info=no: the libraries have no debug information to read
#  it from, and actd's Debug build inlines nothing; reading it cost a
#  quarter of a second at each of the some 90 actd starts.
#
#  Every actd run writes its own valgrind log (build-valgrind/valgrind-logs/,
#  emptied first). The run fails when a test fails, or when any log has an
#  error (ERROR SUMMARY not 0) or a definite leak, whatever the tests saw.
#
#  Under valgrind actd runs some 20-50 times slower, so the tests run with
#  ACTD_TEST_TIME_SCALE (default 10 here): the harness multiplies the
#  --liveness it gives actd, its wait for the first PONG and its wait for a
#  stop by it, so that a slow pass never makes actd take a live test worker
#  for dead; heartbeat_ms is unchanged.
#
#  Environment: ACTD_VALGRIND_BUILD (default build-valgrind),
#  ACTD_TEST_TIME_SCALE (default 10), ACTD_VALGRIND_JOBS (build jobs),
#  ACTD_VALGRIND_ORIGINS=1 (--track-origins=yes: where an uninitialised
#  value came from; off by default, as it makes memcheck a third slower,
#  76 s against 51 s for test_dataflow, and finds no more errors).
set -uo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="${ACTD_VALGRIND_BUILD:-$ROOT/build-valgrind}"
BIN="$BUILD/valgrind-bin"
LOGS="$BUILD/valgrind-logs"
PYTHON=/usr/bin/python3
FILES=("$@")
#  The default files need actd and the example worker only: the rest of the
#  tree is not built (half a minute of a CI lane on a loaded machine)
TARGETS=()
[ ${#FILES[@]} -gt 0 ] || {
    FILES=(test_broker test_broker_reads test_broker_errors test_dataflow)
    TARGETS=(--target actd-daemon actd-example-worker)
}

command -v valgrind >/dev/null || { echo "run.sh: valgrind is missing (apt-get install valgrind)" >&2; exit 2; }

mkdir -p "$BUILD"
#  Configured every time: an older tree may predate an option (jemalloc
#  would hide every allocation from memcheck)
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DACTD_SANITIZE=OFF -DACTD_JEMALLOC=OFF \
    >"$BUILD/cmake.log" 2>&1 || { cat "$BUILD/cmake.log" >&2; exit 2; }
cmake --build "$BUILD" -j"${ACTD_VALGRIND_JOBS:-$(nproc)}" "${TARGETS[@]}" >"$BUILD/build.log" 2>&1 \
    || { tail -40 "$BUILD/build.log" >&2; echo "run.sh: build failed" >&2; exit 2; }

#  The wrapper folder: actd under valgrind, the other programs as they are
rm -rf "$BIN" "$LOGS"
mkdir -p "$BIN" "$LOGS"
for program in "$BUILD"/bin/*; do
    name="$(basename "$program")"
    [ "$name" = actd ] || ln -s "$program" "$BIN/$name"
done
origins=""
[ "${ACTD_VALGRIND_ORIGINS:-0}" = 1 ] && origins=" --track-origins=yes"
cat >"$BIN/actd" <<EOF
#!/usr/bin/env bash
#  actd under valgrind memcheck (written by tests/valgrind/run.sh)
exec valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite \\
    --errors-for-leak-kinds=definite --error-exitcode=99$origins --read-inline-info=no \\
    --num-callers=30 --suppressions="$HERE/actd.supp" \\
    --log-file="$LOGS/actd-%p.log" "$BUILD/bin/actd" "\$@"
EOF
chmod +x "$BIN/actd"

cd "$ROOT/tests/integration"
start=$(date +%s)
ACTD_TEST_TIME_SCALE="${ACTD_TEST_TIME_SCALE:-10}" \
    ACTD_BIN="$BIN/actd" PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -m unittest -v "${FILES[@]}"
tests=$?
end=$(date +%s)

#  Every actd run's report
runs=0 bad=0
for log in "$LOGS"/actd-*.log; do
    [ -f "$log" ] || continue
    runs=$((runs + 1))
    errors="$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -1)"
    definite="$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tail -1 | tr -d ,)"
    if [ -z "$errors" ]; then
        #  No summary: valgrind did not finish (actd was killed); report it
        echo "valgrind: $(basename "$log"): no summary (actd killed?)"
        continue
    fi
    if [ "$errors" != 0 ] || [ "${definite:-0}" != 0 ]; then
        bad=$((bad + 1))
        echo "==== $(basename "$log"): $errors errors, ${definite:-0} bytes definitely lost"
        sed -n '/^==[0-9]*== [A-Z].*/,$p' "$log" | head -150
    fi
done
echo "valgrind: ${FILES[*]}: $runs actd runs in $((end - start)) s, $bad with errors or leaks; tests exit $tests"
[ "$bad" -eq 0 ] || [ -n "$origins" ] \
    || echo "valgrind: ACTD_VALGRIND_ORIGINS=1 $0 ${FILES[*]} shows where uninitialised values came from"
[ "$tests" -eq 0 ] && [ "$bad" -eq 0 ] && [ "$runs" -gt 0 ]
