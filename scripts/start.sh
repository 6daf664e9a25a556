#!/usr/bin/env bash
#  The first command of the README: install what is missing, build, start
#  actd with its embedded defaults (actd.db in the working directory,
#  clients on tcp://127.0.0.1:5555, workers on tcp://127.0.0.1:5556), start
#  the example C worker, make one call and resolve its output, then keep
#  actd in the foreground (logging to stderr) until Ctrl-C.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh" build
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$(nproc)"
bin="$root/build/bin"

"$bin/actd" -v &
actd=$!
worker=
trap '[ -n "$worker" ] && kill $worker 2>/dev/null; kill $actd 2>/dev/null; wait' EXIT
trap 'exit 0' INT TERM
for _ in $(seq 50); do
    "$bin/actctl" --timeout 200 ping >/dev/null 2>&1 && break
    kill -0 $actd 2>/dev/null || { echo "start.sh: actd did not start (see above)" >&2; exit 1; }
done
"$bin/actd-example-worker" --name example &
worker=$!

echo "== one call: the example worker's 'upper' writes its result to †state.greeting"
"$bin/actctl" call demo '{"_tool": "upper", "text": "hello from actd", "_outputPath": "†state.greeting"}' --wait
echo "== resolve †state.greeting in context demo"
"$bin/actctl" resolve demo '†state.greeting'
echo "== actd is running (store $(pwd)/actd.db). Try: $bin/actctl stats   Ctrl-C stops it."
wait $actd
