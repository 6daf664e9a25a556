#!/usr/bin/env bash
#  Run integration tests against actd built as it ships: RelWithDebInfo
#  (NDEBUG, optimized) with jemalloc, in build-release/. The rest of the
#  suite runs a sanitized Debug actd, which is not the program users run.
#
#    tests/release/run.sh [TEST_FILE...]   default: test_broker test_broker_reads
#                                          test_broker_errors test_dataflow test_crash
#                                          test_crash_store
#
#  Environment: ACTD_RELEASE_BUILD (default build-release), ACTD_RELEASE_JOBS
#  (build jobs).
set -uo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="${ACTD_RELEASE_BUILD:-$ROOT/build-release}"
FILES=("$@")
[ ${#FILES[@]} -gt 0 ] || FILES=(test_broker test_broker_reads test_broker_errors test_dataflow test_crash
                                    test_crash_store)

mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACTD_SANITIZE=OFF \
    -DACTD_JEMALLOC=ON -DACTD_TESTS=OFF >"$BUILD/cmake.log" 2>&1 \
    || { cat "$BUILD/cmake.log" >&2; exit 2; }
cmake --build "$BUILD" -j"${ACTD_RELEASE_JOBS:-$(nproc)}" >"$BUILD/build.log" 2>&1 \
    || { tail -40 "$BUILD/build.log" >&2; echo "run.sh: build failed" >&2; exit 2; }
#  The build must be what it claims: jemalloc linked in
if ! readelf -d "$BUILD/bin/actd" | grep -q 'libjemalloc'; then
    echo "run.sh: $BUILD/bin/actd is not linked with jemalloc" >&2
    exit 1
fi

cd "$ROOT/tests/integration" || exit 2
export ACTD_BIN="$BUILD/bin/actd" PYTHONDONTWRITEBYTECODE=1
status=0
for file in "${FILES[@]}"; do
    echo "=== $file against $ACTD_BIN"
    /usr/bin/python3 -m unittest -v "$file" || status=1
done
exit $status
