#!/usr/bin/env bash
#  Where a pipelined call's machine time goes: one broker (actd on SQLite
#  FULL or NORMAL, actd on its memory store, or the null relay), K echo
#  workers of capacity 64 and one client (cmp_client, window 1000,
#  ~200-byte calls), then the CPU of each of the broker's threads, of the
#  workers and of the client, and the machine's idle time, each in
#  microseconds a call (from /proc), the bytes the broker sent to the disk
#  a call, and actd's commit figures from its STATS. The sum is about
#  cores x seconds / calls: what a throughput target leaves to spend.
#  Asserts nothing: figures are for reading (bench/README.md, "Pipelined:
#  what limits throughput").
#
#  bench/cpu_budget.sh [--broker full|normal|memory|null] [--workers K]
#                      [--calls N] [--rounds R] [--window W] [--capacity C]
#                      [--mode durable|forget]
#  BUILD_DIR: the build tree (build/), built RelWithDebInfo when missing;
#  TMPDIR: where the store goes (/tmp; /dev/shm: no disk).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${BUILD_DIR:-$root/build}"
broker=full workers=4 calls=100000 rounds=1 window=1000 capacity=64 mode=durable
while (($#)); do
    case "$1" in
        --broker) broker="$2"; shift ;;
        --workers) workers="$2"; shift ;;
        --calls) calls="$2"; shift ;;
        --rounds) rounds="$2"; shift ;;
        --window) window="$2"; shift ;;
        --capacity) capacity="$2"; shift ;;
        --mode) mode="$2"; shift ;;
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^#\( \{1,2\}\)\{0,1\}//'; exit 0 ;;
        *) echo "cpu_budget.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
case "$broker" in full|normal|memory|null) ;; *) echo "cpu_budget.sh: --broker full, normal, memory or null" >&2; exit 2 ;; esac
case "$mode" in durable|forget) ;; *) echo "cpu_budget.sh: --mode durable or forget" >&2; exit 2 ;; esac
[ "$broker" = null ] && [ "$mode" = forget ] && { echo "cpu_budget.sh: the null relay has no fire-and-forget" >&2; exit 2; }
if [ ! -x "$build/bin/cmp_client" ] || [ ! -x "$build/bin/actd" ] || [ ! -x "$build/bin/null_relay" ]; then
    bash "$root/scripts/deps.sh" build
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$build" -j"$(nproc)" --target actd-daemon null_relay cmp_worker cmp_client >/dev/null
fi
bin="$build/bin"
work=$(mktemp -d "${TMPDIR:-/tmp}/actd-budget-XXXXXX")
pids=()
cleanup () {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
port_free () { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port () {
    local port
    while true; do
        port=$((10000 + RANDOM % 20000))
        port_free "$port" && { echo "$port"; return; }
    done
}
ticks () { awk '{ print $14 + $15 }' "$1"; }      # utime + stime of a stat file
us_a_call () { awk -v t="$1" -v n="$calls" -v hz="$(getconf CLK_TCK)" \
                   'BEGIN { printf "%7.2f", t * 1e6 / hz / n }'; }
idle_ticks () { awk '$1 == "cpu" { print $5 + $6 }' /proc/stat; }

fe=$(free_port); be=$(free_port)
if [ "$broker" = null ]; then
    "$bin/null_relay" --frontend "tcp://127.0.0.1:$fe" --backend "tcp://127.0.0.1:$be" \
        >"$work/broker.log" 2>&1 &
    proto=null
else
    printf 'server\n    heartbeat_ms = 1000\n    liveness = 5\nlog\n    level = notice\n    syslog = 0\n    stderr = 1\n' \
        >"$work/actd.cfg"
    store=(--db "$work/actd.db" --sync "$broker")
    [ "$broker" = memory ] && store=(--db :memory:)
    "$bin/actd" --config "$work/actd.cfg" --client-endpoint "tcp://127.0.0.1:$fe" \
        --worker-endpoint "tcp://127.0.0.1:$be" "${store[@]}" >"$work/broker.log" 2>&1 &
    proto=actd
fi
server=$!
pids+=("$server")
worker_pids=()
for ((i = 0; i < workers; i++)); do
    "$bin/cmp_worker" --proto "$proto" --endpoint "tcp://127.0.0.1:$be" --capacity "$capacity" \
        --counter "$work/counter" --slot "$i" >/dev/null 2>&1 &
    worker_pids+=("$!")
    pids+=("$!")
done
client=("$bin/cmp_client" --proto "$proto" --endpoint "tcp://127.0.0.1:$fe" --size 200
        --window "$window" --workers "$workers" --pid "$server" --counter "$work/counter")
"${client[@]}" --mode "$mode" --calls "$((calls / 10))" --warmup 0 --tag warm >/dev/null
echo "broker $broker, $workers worker(s) of capacity $capacity, $calls $mode calls a round" \
     "(window $window), $(nproc) cores; microseconds of CPU a call:"
for ((round = 1; round <= rounds; round++)); do
    declare -A before=()
    for task in /proc/"$server"/task/*; do before[$task]=$(ticks "$task/stat"); done
    workers_before=0
    for pid in "${worker_pids[@]}"; do workers_before=$((workers_before + $(ticks "/proc/$pid/stat"))); done
    idle_before=$(idle_ticks)
    written_before=$(awk '$1 == "write_bytes:" { print $2 }' "/proc/$server/io")
    "${client[@]}" --mode "$mode" --calls "$calls" --warmup 0 --tag "r$round" >"$work/result" &
    client_pid=$!           #  Its CPU is read until its last moment alive
    client_ticks=0
    while kill -0 "$client_pid" 2>/dev/null; do
        client_ticks=$(ticks "/proc/$client_pid/stat" 2>/dev/null || echo "$client_ticks")
        sleep 0.05
    done
    wait "$client_pid"
    idle_after=$(idle_ticks)
    written=$(( $(awk '$1 == "write_bytes:" { print $2 }' "/proc/$server/io") - written_before ))
    line=$(grep '^RESULT' "$work/result")
    echo "round $round: $(sed -n 's/.* rate=\([^ ]*\).*/\1/p' <<<"$line") calls/s"
    total=0
    for task in /proc/"$server"/task/*; do
        spent=$(( $(ticks "$task/stat") - ${before[$task]:-0} ))
        total=$((total + spent))
        [ "$spent" -gt 0 ] && printf '  %-24s %s\n' "thread $(cat "$task/comm")" "$(us_a_call "$spent")"
    done
    workers_after=0
    for pid in "${worker_pids[@]}"; do workers_after=$((workers_after + $(ticks "/proc/$pid/stat"))); done
    printf '  %-24s %s\n' "broker in all" "$(us_a_call "$total")" \
        "workers" "$(us_a_call $((workers_after - workers_before)))" \
        "client" "$(us_a_call "$client_ticks")" \
        "machine idle" "$(us_a_call $((idle_after - idle_before)))"
    #  Bytes the broker sent to the disk (its WAL, the checkpoints), not
    #  CPU: what each fsync must wait for
    printf '  %-24s %7d\n' "disk bytes a call" "$((written / calls))"
    unset before
done
if [ "$broker" != null ]; then
    #  The broker's own view of the run: commits, their batches and holds
    echo "actd's STATS after the rounds:"
    "$bin/actctl" --endpoint "tcp://127.0.0.1:$fe" --json stats \
        | /usr/bin/python3 -c 'import json, sys
s = json.load(sys.stdin)
def find(node, path=""):
    if isinstance(node, dict):
        for key, value in node.items():
            find(value, path + "/" + key if path else key)
    elif any(word in path for word in ("commit", "batch", "held", "hold")):
        print("  %-40s %s" % (path, node))
find(s)' || echo "  (actctl stats failed)"
fi
