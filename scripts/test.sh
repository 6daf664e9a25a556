#!/usr/bin/env bash
#  Install what is missing, build everything with AddressSanitizer and
#  UBSan in build-asan/, and run the whole test suite. Exits non-zero when
#  any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
cmake -S . -B build-asan -DACTD_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
#  One test more than there are cores: the integration tests spend much of
#  their time waiting on sockets and timers (at -j2 on 2 cores, the suite
#  kept them 57% busy)
ctest --test-dir build-asan --output-on-failure -j"$(( $(nproc) + 1 ))" "$@"
