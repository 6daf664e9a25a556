#!/usr/bin/env bash
#  The first command of the README: install what is missing, build, start
#  actd with its embedded defaults (actd.db in the working directory,
#  clients on tcp://127.0.0.1:5555, workers on tcp://127.0.0.1:5556), start
#  the example C worker and actd-http (the HTTP API, metrics and dashboard
#  on http://127.0.0.1:8480/), make one call and resolve its output, then
#  keep actd in the foreground (logging to stderr) until Ctrl-C.
#
#  Other ports (when 5555, 5556 or 8480 is taken), on 127.0.0.1:
#      scripts/start.sh --client-port 6555 --worker-port 6556 --http-port 9480
#  or any endpoints, by flag or from the environment (flags win):
#      scripts/start.sh --client-endpoint ipc:///tmp/actd-c --worker-endpoint ipc:///tmp/actd-w
#      ACTD_CLIENT_ENDPOINT=tcp://127.0.0.1:6555 ACTD_WORKER_ENDPOINT=tcp://127.0.0.1:6556 scripts/start.sh
#  It builds in build/ (RelWithDebInfo), or in $ACTD_BUILD_DIR: a tree
#  configured already is built as it was configured (tests/integration/
#  test_start.py runs this script on the test suite's own tree).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
client_endpoint=${ACTD_CLIENT_ENDPOINT:-tcp://127.0.0.1:5555}
worker_endpoint=${ACTD_WORKER_ENDPOINT:-tcp://127.0.0.1:5556}
http_listen=${ACTD_HTTP_LISTEN:-127.0.0.1:8480}

usage () {
    echo "usage: scripts/start.sh [--client-port N] [--worker-port N] [--http-port N]" \
         "[--client-endpoint EP] [--worker-endpoint EP] [--http-listen ADDR:PORT]"
}

#  A port number, or exit 2: a typo should not reach actd as an endpoint
port () {
    if [[ ! $2 =~ ^[0-9]+$ ]] || (( $2 < 1 || $2 > 65535 )); then
        echo "start.sh: $1 needs a port number (1-65535), not '$2'" >&2
        exit 2
    fi
    echo "tcp://127.0.0.1:$2"
}

while (( $# )); do
    if [[ $1 != -h && $1 != --help && $# -lt 2 ]]; then
        usage >&2
        exit 2
    fi
    case $1 in
        --client-port) client_endpoint=$(port "$1" "$2"); shift 2 ;;
        --worker-port) worker_endpoint=$(port "$1" "$2"); shift 2 ;;
        --http-port) http_listen=127.0.0.1:$(port "$1" "$2" | sed 's/.*://'); shift 2 ;;
        --http-listen) http_listen=$2; shift 2 ;;
        --client-endpoint) client_endpoint=$2; shift 2 ;;
        --worker-endpoint) worker_endpoint=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done

"$root/scripts/deps.sh" build
build=${ACTD_BUILD_DIR:-$root/build}
[ -f "$build/CMakeCache.txt" ] \
    || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"
bin="$build/bin"

"$bin/actd" -v --client-endpoint "$client_endpoint" --worker-endpoint "$worker_endpoint" &
actd=$!
worker=
http=
trap '[ -n "$http" ] && kill $http 2>/dev/null; [ -n "$worker" ] && kill $worker 2>/dev/null; kill $actd 2>/dev/null; wait' EXIT
trap 'exit 0' INT TERM
for _ in $(seq 50); do
    "$bin/actctl" --endpoint "$client_endpoint" --timeout 200 ping >/dev/null 2>&1 && break
    kill -0 $actd 2>/dev/null || { echo "start.sh: actd did not start (see above)" >&2; exit 1; }
done
"$bin/actd-example-worker" --endpoint "$worker_endpoint" --name example &
worker=$!
"$bin/actd-http" --endpoint "$client_endpoint" --listen "$http_listen" \
    --dashboard-dir "$root/share/dashboard" &
http=$!

echo "== one call: the example worker's 'upper' writes its result to †state.greeting"
"$bin/actctl" --endpoint "$client_endpoint" call demo '{"_tool": "upper", "text": "hello from actd", "_outputPath": "†state.greeting"}' --wait
echo "== resolve †state.greeting in context demo"
"$bin/actctl" --endpoint "$client_endpoint" resolve demo '†state.greeting'
echo "== actd is running (store $(pwd)/actd.db, clients on $client_endpoint, workers on" \
     "$worker_endpoint). Try: $bin/actctl --endpoint $client_endpoint stats   Ctrl-C stops it."
kill -0 $http 2>/dev/null \
    && echo "== dashboard: http://$http_listen/   (API: curl http://$http_listen/v1/stats," \
            "metrics: http://$http_listen/metrics)" \
    || echo "start.sh: actd-http did not start (see above; --http-port N for another port)" >&2
wait $actd
