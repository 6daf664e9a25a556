#!/usr/bin/env bash
#  Run the libFuzzer targets for a bounded time.
#
#    tests/fuzz/run.sh TARGET SECONDS     one target (fuzz_reference, ...)
#    tests/fuzz/run.sh all SECONDS        every target, SECONDS each
#    tests/fuzz/run.sh minimize TARGET FILE
#                                         shrink a crash input (-minimize_crash)
#                                         and add it to the corpus as a
#                                         regression seed (corpus/TARGET/crash-*)
#
#  Builds the clang tree build-fuzz/ when needed (CC=clang, ACTD_FUZZ=ON,
#  ACTD_SANITIZE=ON: libFuzzer + AddressSanitizer + UBSan), then runs each
#  target with its seeds (tests/fuzz/corpus/TARGET, read only) and a
#  working corpus that grows across runs (build-fuzz/corpus/TARGET). Prints
#  per target the time it ran, its coverage (edges: "cov:" of libFuzzer's
#  last stats line), its executions and its speed. Exits non-zero when a
#  target crashed (or leaked, or timed out); crash inputs are kept under
#  tests/fuzz/crashes/ (TARGET-crash-*, TARGET-leak-*, ...), with, for the
#  broker targets, TARGET-history-* (every message since the broker
#  started: replay it with FUZZ_REPLAY=1 build-fuzz/bin/TARGET FILE).
#
#  Environment: ACTD_FUZZ_BUILD (default build-fuzz), ACTD_FUZZ_JOBS (build
#  jobs, default nproc).
set -uo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="${ACTD_FUZZ_BUILD:-$ROOT/build-fuzz}"
CRASHES="$HERE/crashes"
TARGETS=(fuzz_reference fuzz_call fuzz_methods fuzz_scan fuzz_schema fuzz_client_frames fuzz_worker_frames)

usage () {
    echo "usage: $0 TARGET|all SECONDS   or   $0 minimize TARGET FILE" >&2
    echo "targets: ${TARGETS[*]}" >&2
    exit 2
}

max_len () {
    case "$1" in
        fuzz_reference) echo 512 ;;
        fuzz_call|fuzz_methods) echo 2048 ;;
        *) echo 4096 ;;
    esac
}

is_target () {
    local name
    for name in "${TARGETS[@]}"; do
        [ "$name" = "$1" ] && return 0
    done
    return 1
}

build () {
    if ! command -v clang >/dev/null; then
        echo "run.sh: clang is missing (apt-get install clang libclang-rt-14-dev)" >&2
        exit 2
    fi
    if [ ! -f "$BUILD/CMakeCache.txt" ]; then
        #  The build type that ships (RelWithDebInfo: -O2 -g -DNDEBUG), so
        #  what is fuzzed is what runs, assert() compiled out included
        mkdir -p "$BUILD"
        CC=clang cmake -S "$ROOT" -B "$BUILD" -DACTD_FUZZ=ON -DACTD_SANITIZE=ON \
            -DACTD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$BUILD/cmake.log" 2>&1 \
            || { cat "$BUILD/cmake.log" >&2; echo "run.sh: cmake failed" >&2; exit 2; }
    fi
    cmake --build "$BUILD" --target fuzzers -j"${ACTD_FUZZ_JOBS:-$(nproc)}" >"$BUILD/fuzz-build.log" 2>&1 \
        || { tail -40 "$BUILD/fuzz-build.log" >&2; echo "run.sh: build failed" >&2; exit 2; }
}

sanitizer_env () {
    export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$HERE/ubsan.supp"
}

#  run TARGET SECONDS: prints one summary line; returns non-zero on a crash
run_one () {
    local target="$1" seconds="$2"
    local work="$BUILD/corpus/$target" logs="$BUILD/fuzz-logs"
    local log="$logs/$target.log" stamp
    stamp="$(date +%Y%m%d-%H%M%S)"
    mkdir -p "$work" "$logs" "$CRASHES"
    local start end code leaks=1
    #  The broker targets keep state across inputs on purpose: libFuzzer's
    #  check after each input would take it for leaks (and spend most of
    #  the time scanning); they check for leaks themselves, each time their
    #  broker is destroyed
    case "$target" in fuzz_client_frames|fuzz_worker_frames) leaks=0 ;; esac
    #  A target's dictionary of tokens, when it has one (TARGET.dict)
    local dict=()
    [ -f "$HERE/$target.dict" ] && dict=(-dict="$HERE/$target.dict")
    start=$(date +%s)
    FUZZ_HISTORY="$CRASHES/$target-history-$stamp" \
        "$BUILD/bin/$target" -max_total_time="$seconds" -max_len="$(max_len "$target")" \
        "${dict[@]}" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 -detect_leaks=$leaks \
        -artifact_prefix="$CRASHES/$target-" "$work" "$HERE/corpus/$target" >"$log" 2>&1
    code=$?
    end=$(date +%s)
    local stats cov execs speed
    stats="$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)"
    cov="$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$stats")"
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
    speed="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
    if [ -z "$execs" ]; then
        execs="$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$stats")"
    fi
    local result="ok"
    if [ "$code" -ne 0 ]; then
        result="CRASHED (exit $code)"
    elif ! replay_completes "$target"; then
        result="BLIND (its seed corpus completes no call: see $logs/$target-replay.log)"
        code=1
    fi
    printf '%-20s %5ss  cov: %-6s execs: %-10s exec/s: %-7s %s\n' "$target" "$((end - start))" \
        "${cov:-?}" "${execs:-?}" "${speed:-?}" "$result"
    if [ "$code" -ne 0 ]; then
        echo "---- $log (the report) ----"
        grep -E -A60 '^==[0-9]+==ERROR|runtime error|fuzz_[a-z_]+: .* broken|^ALARM|out-of-memory|deadly signal' "$log" | head -120
        grep -E 'Test unit written to|history .* written to' "$log"
        echo "----"
        return 1
    fi
    return 0
}

#  replay_completes TARGET: the broker targets' seed corpus, replayed once,
#  must complete calls (DONE seen). A harness that no longer sees what the
#  broker sends still runs green while it explores nothing: this fails it.
replay_completes () {
    local target="$1"
    case "$target" in fuzz_client_frames|fuzz_worker_frames) ;; *) return 0 ;; esac
    FUZZ_EXPECT_DONE=1 "$BUILD/bin/$target" -runs=0 -detect_leaks=0 -max_len="$(max_len "$target")" \
        "$HERE/corpus/$target" >"$BUILD/fuzz-logs/$target-replay.log" 2>&1 || return 1
    grep -h 'calls completed' "$BUILD/fuzz-logs/$target-replay.log" | sed 's/^/    replay: /'
}

minimize () {
    local target="$1" file="$2"
    is_target "$target" || usage
    [ -f "$file" ] || { echo "run.sh: no file $file" >&2; exit 2; }
    build
    sanitizer_env
    local name out
    name="$(basename "$file")"
    name="${name##*-}"              #  The hash (or name) after the last dash
    out="$CRASHES/$target-minimized-$name"
    mkdir -p "$CRASHES"
    #  The broker targets replay a history on a fresh broker
    FUZZ_REPLAY=1 "$BUILD/bin/$target" -minimize_crash=1 -runs=20000 -max_total_time=600 \
        -exact_artifact_path="$out" "$file" >"$BUILD/minimize-$name.log" 2>&1
    if [ ! -s "$out" ]; then
        echo "run.sh: nothing minimized (does $file still crash? see $BUILD/minimize-$name.log)" >&2
        exit 1
    fi
    cp "$out" "$HERE/corpus/$target/crash-$name"
    echo "minimized: $out ($(wc -c <"$out") bytes), added as corpus/$target/crash-$name"
    FUZZ_REPLAY=1 "$BUILD/bin/$target" "$out" 2>&1 | grep -E -A40 '==ERROR|runtime error|broken' | head -60
}

[ $# -ge 2 ] || usage
if [ "$1" = minimize ]; then
    [ $# -eq 3 ] || usage
    minimize "$2" "$3"
    exit 0
fi
what="$1" seconds="$2"
[[ "$seconds" =~ ^[0-9]+$ ]] && [ "$seconds" -gt 0 ] || usage
if [ "$what" = all ]; then
    selected=("${TARGETS[@]}")
else
    is_target "$what" || usage
    selected=("$what")
fi
build
sanitizer_env
failed=0
for target in "${selected[@]}"; do
    run_one "$target" "$seconds" || failed=$((failed + 1))
done
echo "fuzz: ${#selected[@]} targets, $failed crashed"
#  The closing line ctest-style runners read
echo "$(( ${#selected[@]} - failed )) passed, $failed failed"
[ "$failed" -eq 0 ]
