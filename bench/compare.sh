#!/usr/bin/env bash
#  actd against the physical limit and the peers, side by side on this
#  machine, in one run: a null broker (bench/null_relay.c), actd (SQLite
#  synchronous FULL and NORMAL; its memory store for reference) and
#  Gearman (Debian's gearmand, in memory and with its SQLite queue), each
#  with ~200-byte calls and one echo worker of capacity 64, then again
#  with 4 workers. Prints a table of
#  throughput and latency, each actd figure as a ratio of the null
#  broker's and Gearman's from the same run, actd's peak RSS, and the RSS
#  after 1 000 000 stored messages in 10 000 contexts; then the
#  fdatasync of the disk the stores live on, and actd's instructions per
#  durable call under callgrind (memory store and SQLite FULL), each
#  against the performance issue's targets.
#
#  bench/compare.sh [--quick] [--repeat R] [--workers LIST] [--no-gearman]
#                   [--no-rss] [--no-instructions] [--latency-only] [--profile DIR]
#    --quick        small runs (a smoke run: counts divided by ten or so)
#    --repeat R     run each measurement R times, keep the best (1)
#    --workers LIST worker counts to run (1,4)
#    --no-gearman   skip Gearman
#    --no-rss       skip the memory figure (the slowest part)
#    --no-instructions  skip the callgrind counts (needs valgrind)
#    --latency-only the one-at-a-time runs alone (null relay, actd FULL and
#                   NORMAL, all up at once, their runs interleaved round by
#                   round; no pipelined runs, Gearman, RSS or callgrind),
#                   with each round's ratios printed, for their spread
#    --profile DIR  then profile actd (perf record, needs linux-perf) during
#                   durable and fire-and-forget runs: summaries printed,
#                   data and reports in DIR
#  Environment: CALLS (pipelined calls per run, 100000), LATENCY_CALLS
#  (2000), SQLITE_CALLS (Gearman's SQLite queue, 1000), RSS_MESSAGES
#  (1000000), RSS_CONTEXTS (10000), WINDOW (1000), SIZE (200),
#  CG_CALLS (calls counted under callgrind, 5000); BUILD_DIR (the build
#  tree, build/).
#
#  Installs gearman-job-server, gearman-tools and libgearman-dev when
#  missing (scripts/deps.sh bench), builds build/ (RelWithDebInfo), runs
#  everything on 127.0.0.1, and asserts nothing: figures are for reading.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${BUILD_DIR:-$root/build}"
quick=0 repeat=1 worker_counts="1,4" gearman=1 rss=1 instructions=1 profile="" latency_only=0
while (($#)); do
    case "$1" in
        --quick) quick=1 ;;
        --repeat) repeat="$2"; shift ;;
        --workers) worker_counts="$2"; shift ;;
        --no-gearman) gearman=0 ;;
        --no-rss) rss=0 ;;
        --no-instructions) instructions=0 ;;
        --latency-only) latency_only=1 gearman=0 rss=0 instructions=0 ;;
        --profile) profile="$2"; shift ;;
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^#\( \{1,2\}\)\{0,1\}//'; exit 0 ;;
        *) echo "compare.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
if [ "$quick" = 1 ]; then
    : "${CALLS:=3000}" "${LATENCY_CALLS:=300}" "${SQLITE_CALLS:=100}"
    : "${RSS_MESSAGES:=50000}" "${RSS_CONTEXTS:=1000}" "${CG_CALLS:=1000}"
fi
calls=${CALLS:-100000}   # about 1 s of actd; 20,000 (0.13-0.27 s) were too short (bench/README.md)
null_calls=$((calls * 10))      # the null relay is fast: longer runs for a stable figure
latency_calls=${LATENCY_CALLS:-2000}
sqlite_calls=${SQLITE_CALLS:-1000}
rss_messages=${RSS_MESSAGES:-1000000}
rss_contexts=${RSS_CONTEXTS:-10000}
window=${WINDOW:-1000}
size=${SIZE:-200}
cg_calls=${CG_CALLS:-5000}
capacity=64

#  Dependencies and build
if [ "$gearman" = 1 ] || [ "$instructions" = 1 ]; then
    bash "$root/scripts/deps.sh" bench
else
    bash "$root/scripts/deps.sh" build
fi
targets=(actd-daemon null_relay cmp_worker cmp_client cmp_rss)
[ "$instructions" = 1 ] && targets+=(bench_calls)
[ "$gearman" = 1 ] && targets+=(cmp_gearman)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null
bin="$build/bin"
if [ "$gearman" = 1 ] && [ ! -x "$bin/cmp_gearman" ]; then
    echo "compare.sh: cmp_gearman was not built (libgearman-dev missing?)" >&2
    exit 1
fi

#  Every process started here, stopped at exit
work=$(mktemp -d "${TMPDIR:-/tmp}/actd-compare-XXXXXX")
pids=()
cleanup () {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_bg () {           # start_bg LOG command...: starts, sets $started
    "${@:2}" >"$1" 2>&1 &
    started=$!
    pids+=("$started")
}
stop_bg () {            # stop_bg PID...: SIGTERM, wait (SIGKILL after 15 s)
    local pid i
    for pid in "$@"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "$@"; do
        for ((i = 0; i < 150; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "compare.sh: process $pid did not stop on SIGTERM in 15 s; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    done
}
port_free () { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
#  A port nothing listens on, below the kernel's ephemeral range: a port in
#  that range may be taken by any outgoing connection before the program
#  meant to listen on it binds it (a run failed so: "4 workers not ready")
ephemeral_low=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 0)
free_port () {
    local port low=$ephemeral_low
    [ "${low:-0}" -gt 12000 ] || low=60000
    while true; do
        port=$((10000 + (RANDOM * 32768 + RANDOM) % (low - 10000)))
        port_free "$port" && { echo "$port"; return; }
    done
}
status_kb () {          # status_kb PID FIELD: VmRSS, VmHWM in kB
    awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0
}

#  Results: R[key.field] from the RESULT lines
declare -A R
record () {             # record KEY LINE: keep the best of repeated runs
    local key=$1 line=$2 field value better=0
    local rate p50
    rate=$(sed -n 's/.* rate=\([^ ]*\).*/\1/p' <<<"$line")
    p50=$(sed -n 's/.* p50_ms=\([^ ]*\).*/\1/p' <<<"$line")
    if [ -z "${R[$key.rate]:-}" ]; then
        better=1
    elif [[ "$key" == *latency* || "$key" == *.do || "$key" == *.do1 ]]; then
        awk -v a="$p50" -v b="${R[$key.p50_ms]}" 'BEGIN { exit !(a < b) }' && better=1
    else
        awk -v a="$rate" -v b="${R[$key.rate]}" 'BEGIN { exit !(a > b) }' && better=1
    fi
    [ "$better" = 1 ] || return 0
    for field in rate p50_ms p99_ms errors cpu_us; do
        value=$(sed -n "s/.* $field=\([^ ]*\).*/\1/p" <<<"$line")
        R[$key.$field]=${value:-0}
    done
}
measure () {            # measure KEY command...: run, record, show progress
    local line out
    out=$("${@:2}") || { echo "compare.sh: $1 failed: ${*:2}" >&2; exit 1; }
    line=$(grep '^RESULT' <<<"$out" | tail -1)
    echo "  $1: ${line#RESULT }" >&2
    record "$1" "$line"
    last_p50=$(sed -n 's/.* p50_ms=\([^ ]*\).*/\1/p' <<<"$line")
}

echo "compare.sh: $calls pipelined calls per run ($null_calls for the null relay), at most" \
     "$window outstanding, ~$size-byte calls, echo workers of capacity $capacity;" \
     "$latency_calls one-at-a-time calls; best of $repeat" >&2
echo "work directory: $work (the SQLite files live here)" >&2

#  The null broker
run_null () {           # run_null K
    local k=$1 fe be relay i workers=()
    fe=$(free_port); be=$(free_port)
    start_bg "$work/null_relay.log" "$bin/null_relay" --frontend "tcp://127.0.0.1:$fe" \
        --backend "tcp://127.0.0.1:$be"
    relay=$started
    for ((i = 0; i < k; i++)); do
        start_bg "$work/null_worker_$i.log" "$bin/cmp_worker" --proto null \
            --endpoint "tcp://127.0.0.1:$be" --capacity "$capacity"
        workers+=("$started")
    done
    for ((r = 0; r < repeat; r++)); do
        measure "null.$k.durable" "$bin/cmp_client" --proto null --endpoint "tcp://127.0.0.1:$fe" \
            --mode durable --calls "$null_calls" --window "$window" --size "$size" \
            --workers "$k" --pid "$relay" --tag "n$r"
        measure "null.$k.latency" "$bin/cmp_client" --proto null --endpoint "tcp://127.0.0.1:$fe" \
            --mode latency --calls "$latency_calls" --size "$size" --workers "$k" \
            --pid "$relay" --tag "nl$r"
        R[null.$k.latency.$r]=$last_p50
    done
    stop_bg "${workers[@]}" "$relay"
}

#  actd with its store on disk (sync full or normal), or on the memory
#  store (memory: nothing durable, no committer thread; pipelined runs
#  only, for what actd does with no durable store); profile: a perf
#  output prefix (the durable and forget runs run under perf record)
actd_config () {
    cat >"$work/actd.cfg" <<EOF
server
    heartbeat_ms = 1000
    liveness = 5
log
    level = notice
    syslog = 0
    stderr = 1
EOF
}
run_actd () {           # run_actd K SYNC [PROFILE_PREFIX]
    local k=$1 sync=$2 prefix=${3:-} ce we actd i workers=() counter db key
    ce=$(free_port); we=$(free_port)
    db="$work/actd-$sync-$k.db"
    rm -f "$db" "$db-wal" "$db-shm"
    counter="$work/counter-actd-$sync-$k"
    rm -f "$counter"
    actd_config
    local store=(--db "$db" --sync "$sync")
    [ "$sync" = memory ] && store=(--db :memory:)
    start_bg "$work/actd-$sync-$k.log" "$bin/actd" --config "$work/actd.cfg" \
        --client-endpoint "tcp://127.0.0.1:$ce" --worker-endpoint "tcp://127.0.0.1:$we" \
        "${store[@]}"
    actd=$started
    for ((i = 0; i < k; i++)); do
        start_bg "$work/actd_worker_$i.log" "$bin/cmp_worker" --proto actd \
            --endpoint "tcp://127.0.0.1:$we" --capacity "$capacity" --counter "$counter" --slot "$i"
        workers+=("$started")
    done
    local client=("$bin/cmp_client" --proto actd --endpoint "tcp://127.0.0.1:$ce"
                  --size "$size" --window "$window" --workers "$k" --pid "$actd"
                  --counter "$counter")
    key="actd-$sync.$k"
    if [ -n "$prefix" ]; then
        local mode perf
        for mode in durable forget; do
            #  Warm up first (the client's own warm-up would be profiled)
            "${client[@]}" --mode "$mode" --calls "$((calls / 10))" --warmup 0 \
                --tag "pw-$mode" >/dev/null
            perf record -F 999 --call-graph dwarf,16384 -o "$prefix-$mode.data" -p "$actd" \
                >"$prefix-$mode.record.log" 2>&1 &
            perf=$!
            pids+=("$perf")
            sleep 1
            "${client[@]}" --mode "$mode" --calls "$calls" --warmup 0 --tag "p-$mode" >&2
            kill -INT "$perf"
            wait "$perf" || true
        done
    else
        for ((r = 0; r < repeat; r++)); do
            measure "$key.durable" "${client[@]}" --mode durable --calls "$calls" --tag "d$r"
            measure "$key.forget" "${client[@]}" --mode forget --calls "$calls" --tag "f$r"
            [ "$sync" = memory ] && continue
            measure "$key.latency" "${client[@]}" --mode latency --calls "$latency_calls" \
                --tag "l$r"
            R[$key.latency.$r]=$last_p50
            #  The disk's fdatasync varies by the minute on a shared machine:
            #  measured right after each FULL run, for that run's ratio
            if [ "$sync" = full ]; then
                run_fsync
                R[fsync.$k.$r]=$last_fsync
                R[fsync-idle.$k.$r]=$last_idle
            fi
        done
        R[$key.hwm_kb]=$(status_kb "$actd" VmHWM)
    fi
    stop_bg "${workers[@]}" "$actd"
}

#  --latency-only: the null relay, actd FULL and actd NORMAL up at once,
#  each with K workers, and their one-at-a-time runs interleaved round by
#  round (null, FULL, the fdatasync probe, NORMAL), so that each round's
#  ratios compare figures taken within seconds of each other
run_latency_rounds () { # run_latency_rounds K
    local k=$1 fe be relay ce we actd i db counter sync workers=() servers=()
    declare -A endpoint pid_of
    fe=$(free_port); be=$(free_port)
    start_bg "$work/null_relay.log" "$bin/null_relay" --frontend "tcp://127.0.0.1:$fe" \
        --backend "tcp://127.0.0.1:$be"
    relay=$started
    servers+=("$relay")
    for ((i = 0; i < k; i++)); do
        start_bg "$work/null_worker_$i.log" "$bin/cmp_worker" --proto null \
            --endpoint "tcp://127.0.0.1:$be" --capacity "$capacity"
        workers+=("$started")
    done
    actd_config
    for sync in full normal; do
        ce=$(free_port); we=$(free_port)
        db="$work/actd-$sync-$k.db"
        counter="$work/counter-actd-$sync-$k"
        rm -f "$db" "$db-wal" "$db-shm" "$counter"
        start_bg "$work/actd-$sync-$k.log" "$bin/actd" --config "$work/actd.cfg" \
            --client-endpoint "tcp://127.0.0.1:$ce" --worker-endpoint "tcp://127.0.0.1:$we" \
            --db "$db" --sync "$sync"
        actd=$started
        servers+=("$actd")
        for ((i = 0; i < k; i++)); do
            start_bg "$work/actd_worker_${sync}_$i.log" "$bin/cmp_worker" --proto actd \
                --endpoint "tcp://127.0.0.1:$we" --capacity "$capacity" --counter "$counter" \
                --slot "$i"
            workers+=("$started")
        done
        endpoint[$sync]="tcp://127.0.0.1:$ce"
        pid_of[$sync]=$actd
    done
    for ((r = 0; r < repeat; r++)); do
        measure "null.$k.latency" "$bin/cmp_client" --proto null --endpoint "tcp://127.0.0.1:$fe" \
            --mode latency --calls "$latency_calls" --size "$size" --workers "$k" \
            --pid "$relay" --tag "nl$r"
        R[null.$k.latency.$r]=$last_p50
        for sync in full normal; do
            measure "actd-$sync.$k.latency" "$bin/cmp_client" --proto actd \
                --endpoint "${endpoint[$sync]}" --size "$size" --workers "$k" \
                --pid "${pid_of[$sync]}" --counter "$work/counter-actd-$sync-$k" \
                --mode latency --calls "$latency_calls" --tag "l$sync$r"
            R[actd-$sync.$k.latency.$r]=$last_p50
            if [ "$sync" = full ]; then
                run_fsync
                R[fsync.$k.$r]=$last_fsync
                R[fsync-idle.$k.$r]=$last_idle
            fi
        done
    done
    R[actd-full.$k.hwm_kb]=$(status_kb "${pid_of[full]}" VmHWM)
    R[actd-normal.$k.hwm_kb]=$(status_kb "${pid_of[normal]}" VmHWM)
    stop_bg "${workers[@]}" "${servers[@]}"
}

#  Gearman: gearmand on 127.0.0.1, in memory or with its SQLite queue
run_gearman () {        # run_gearman K QUEUE (builtin or sqlite)
    local k=$1 queue=$2 port gearmand i workers=() counter key available
    port=$(free_port)
    counter="$work/counter-gearman-$queue-$k"
    rm -f "$counter" "$work/gearman.db"
    local args=(-L 127.0.0.1 -p "$port" -l "$work/gearmand-$queue-$k.log"
                -P "$work/gearmand.pid")
    [ "$queue" = sqlite ] && args+=(-q libsqlite3 --libsqlite3-db="$work/gearman.db")
    start_bg "$work/gearmand-$queue-$k.out" gearmand "${args[@]}"
    gearmand=$started
    for ((i = 0; i < 100; i++)); do
        port_free "$port" || break
        sleep 0.1
    done
    for ((i = 0; i < k; i++)); do
        start_bg "$work/gearman_worker_$i.log" "$bin/cmp_gearman" worker --port "$port" \
            --threads "$capacity" --counter "$counter" --slot "$i"
        workers+=("$started")
    done
    for ((i = 0; i < 300; i++)); do
        available=$(gearadmin -h 127.0.0.1 -p "$port" --status 2>/dev/null \
                    | awk '$1 == "echo" { print $4 }')
        [ "${available:-0}" -ge $((k * capacity)) ] && break
        sleep 0.1
    done
    local client=("$bin/cmp_gearman" --port "$port" --size "$size" --window "$window"
                  --pid "$gearmand" --counter "$counter")
    key="gearman-$queue.$k"
    for ((r = 0; r < repeat; r++)); do
        if [ "$queue" = builtin ]; then
            measure "$key.do" "${client[0]}" do "${client[@]:1}" --calls "$latency_calls"
            measure "$key.fg" "${client[0]}" fg "${client[@]:1}" --calls "$calls"
            measure "$key.dobg" "${client[0]}" dobg "${client[@]:1}" --calls "$latency_calls"
            measure "$key.bg" "${client[0]}" bg "${client[@]:1}" --calls "$calls"
        else
            measure "$key.dobg" "${client[0]}" dobg "${client[@]:1}" --calls "$sqlite_calls" \
                --warmup $((sqlite_calls / 20 + 1))
            measure "$key.bg" "${client[0]}" bg "${client[@]:1}" --calls "$sqlite_calls" \
                --warmup $((sqlite_calls / 20 + 1))
        fi
    done
    stop_bg "${workers[@]}"
    if [ "$queue" = builtin ]; then
        #  One at a time is Gearman's best with workers of one connection
        #  each (no wake-up of 64 idle connections per job): K such workers
        workers=()
        for ((i = 0; i < k; i++)); do
            start_bg "$work/gearman_worker1_$i.log" "$bin/cmp_gearman" worker --port "$port" \
                --threads 1 --counter "$counter" --slot "$i"
            workers+=("$started")
        done
        for ((i = 0; i < 300; i++)); do
            available=$(gearadmin -h 127.0.0.1 -p "$port" --status 2>/dev/null \
                        | awk '$1 == "echo" { print $4 }')
            [ "${available:-0}" -eq "$k" ] && break
            sleep 0.1
        done
        for ((r = 0; r < repeat; r++)); do
            measure "$key.do1" "${client[0]}" do "${client[@]:1}" --calls "$latency_calls"
        done
        stop_bg "${workers[@]}"
    fi
    stop_bg "$gearmand"
}

#  RSS after RSS_MESSAGES stored messages in RSS_CONTEXTS contexts: appended
#  through actd (all contexts written to at once), then every context read;
#  then actd restarted on that store and every context read again
run_rss () {
    local ce we actd db line
    ce=$(free_port); we=$(free_port)
    db="$work/rss.db"
    actd_config
    for phase in fill restart; do
        start_bg "$work/actd-rss-$phase.log" "$bin/actd" --config "$work/actd.cfg" \
            --client-endpoint "tcp://127.0.0.1:$ce" --worker-endpoint "tcp://127.0.0.1:$we" \
            --db "$db" --sync normal
        actd=$started
        if [ "$phase" = fill ]; then
            line=$("$bin/cmp_rss" append --endpoint "tcp://127.0.0.1:$ce" \
                   --messages "$rss_messages" --contexts "$rss_contexts" | grep '^RESULT')
            echo "  rss.append: ${line#RESULT }" >&2
            R[rss.append_rate]=$(sed -n 's/.* rate=\([^ ]*\).*/\1/p' <<<"$line")
            R[rss.append_errors]=$(sed -n 's/.* errors=\([^ ]*\).*/\1/p' <<<"$line")
            R[rss.fill_rss]=$(status_kb "$actd" VmRSS)
        fi
        line=$("$bin/cmp_rss" touch --endpoint "tcp://127.0.0.1:$ce" --contexts "$rss_contexts" \
               | grep '^RESULT')
        echo "  rss.touch ($phase): ${line#RESULT }" >&2
        R[rss.$phase.touch_errors]=$(sed -n 's/.* errors=\([^ ]*\).*/\1/p' <<<"$line")
        R[rss.$phase.touch_rate]=$(sed -n 's/.* rate=\([^ ]*\).*/\1/p' <<<"$line")
        R[rss.$phase.rss]=$(status_kb "$actd" VmRSS)
        R[rss.$phase.hwm]=$(status_kb "$actd" VmHWM)
        stop_bg "$actd"
    done
    R[rss.db_mb]=$(du -sm "$work"/rss.db* | awk '{ s += $1 } END { print s }')
}

#  The fdatasync of the disk the SQLite stores live on ($work): 4 KiB
#  written into a file that already holds that place and fdatasync'd, as a
#  commit to SQLite's WAL does once the WAL has grown (it is rewritten in
#  place from its start after each checkpoint); the median of 200 (the
#  performance issue bounds FULL's one-at-a-time p50 by the null relay's
#  plus two of these). Printed beside it, for reference: an append (the
#  file's size changes too, so the file system's journal is written), and
#  the same rewrite after 1 ms idle, as a one-at-a-time commit finds the
#  machine (its threads asleep since the last call: on this VM a sync
#  after idle costs more than one of a busy loop). Probed after each FULL
#  one-at-a-time run and once at the end; sets last_fsync and last_idle, and the
#  table's figures (the medians of the probes)
run_fsync () {
    local line
    line=$(/usr/bin/python3 - "$work/fsync.probe" <<'PY'
import os, sys, time
block = b"x" * 4096
def probe(append, idle=0):
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0)
    fd = os.open(sys.argv[1], flags, 0o600)
    if not append:
        os.write(fd, block * 256)          # 1 MiB in place first
        os.fsync(fd)
    times = []
    for n in range(200):
        if idle:
            time.sleep(idle)
        start = time.perf_counter()
        if append:
            os.write(fd, block)
        else:
            os.pwrite(fd, block, (n % 256) * 4096)
        os.fdatasync(fd)
        times.append((time.perf_counter() - start) * 1000)
    os.close(fd)
    os.unlink(sys.argv[1])
    times.sort()
    return times[100], times[197]
inplace, appended, idle = probe(False), probe(True), probe(False, 0.001)
print("RESULT p50_ms=%.4f p99_ms=%.4f append_p50_ms=%.4f idle_p50_ms=%.4f"
      % (inplace[0], inplace[1], appended[0], idle[0]))
PY
)
    echo "  fdatasync: ${line#RESULT }" >&2
    last_fsync=$(sed -n 's/.* p50_ms=\([^ ]*\).*/\1/p' <<<"$line")
    fsync_p50s+=("$last_fsync")
    fsync_p99s+=("$(sed -n 's/.* p99_ms=\([^ ]*\).*/\1/p' <<<"$line")")
    last_idle=$(sed -n 's/.* idle_p50_ms=\([^ ]*\).*/\1/p' <<<"$line")
    fsync_idles+=("$last_idle")
    #  The figure of the table: the median of every probe of the run
    R[fsync.p50_ms]=$(median "${fsync_p50s[@]}")
    R[fsync.p99_ms]=$(median "${fsync_p99s[@]}")
    R[fsync.idle_ms]=$(median "${fsync_idles[@]}")
}
fsync_p50s=() fsync_p99s=() fsync_idles=()
median () {             # median VALUE...
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
        END { if (NR) print (NR % 2? v[(NR + 1) / 2]: (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

#  actd's instructions per durable call (bench/README.md, "Counting
#  instructions instead of time"): bench_calls' pipelined load against an
#  actd under callgrind; the inclusive counts of act_broker_run (the loop)
#  and of the committer's thread, divided by the calls (with bench_calls'
#  warm-up of a tenth)
run_instructions () {   # run_instructions MODE (memory or full)
    local mode=$1 wrap="$work/cgwrap.sh" out="$work/cg-$1.out" total
    printf '#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file=%s %s "$@"\n' \
        "$out" "$bin/actd" >"$wrap"
    chmod +x "$wrap"
    ACTD_BIN="$wrap" "$bin/bench_calls" --modes "$mode" --calls "$cg_calls" --repeat 1 \
        --no-fire >"$work/cg-$mode.log" 2>&1 \
        || { echo "compare.sh: bench_calls under callgrind failed:" >&2;
             tail -20 "$work/cg-$mode.log" >&2; exit 1; }
    #  The loop (act_broker_run) and, for a file store, the committer's
    #  thread (s_actor), which runs the store's statements and commits.
    #  callgrind_annotate names a function with its object ("... [path]")
    #  or, from the directory of its sources, without: either is taken.
    #  No line found is "not measured", never 0 instructions
    total=$(callgrind_annotate --inclusive=yes "$out" 2>/dev/null \
            | awk '/:act_broker_run( \[[^]]*\])?$/ && !loop { gsub(",", "", $1); sum += $1; loop = 1 }
                   /act_committer\.c:s_actor( \[[^]]*\])?$/ && !thread {
                       gsub(",", "", $1); sum += $1; thread = 1 }
                   END { if (loop) print sum }')
    if [ -z "$total" ]; then
        echo "compare.sh: no act_broker_run in callgrind's output for $mode ($out)" >&2
        R[cg.$mode]=""
    else
        R[cg.$mode]=$(awk -v t="$total" -v c="$cg_calls" \
                      'BEGIN { printf "%.0f", t / (c + int(c / 10)) }')
    fi
    R[cg.$mode.commits]=$(awk '$1 == "'"$mode"'" && $2 == "durable" && $3 == "#1" { print $(NF-3) }' \
                          "$work/cg-$mode.log")
    echo "  instructions ($mode): ${R[cg.$mode]} per durable call" \
         "(${R[cg.$mode.commits]:-?} commits)" >&2
}

IFS=, read -r -a counts <<<"$worker_counts"
for k in "${counts[@]}"; do
    echo "--- $k worker(s) of capacity $capacity ---" >&2
    if [ "$latency_only" = 1 ]; then
        run_latency_rounds "$k"
        continue
    fi
    run_null "$k"
    run_actd "$k" full
    run_actd "$k" normal
    run_actd "$k" memory
    if [ "$gearman" = 1 ]; then
        run_gearman "$k" builtin
        run_gearman "$k" sqlite
    fi
done
if [ "$rss" = 1 ]; then
    echo "--- memory: $rss_messages messages in $rss_contexts contexts ---" >&2
    run_rss
fi
echo "--- fdatasync of $work ---" >&2
run_fsync
if [ "$instructions" = 1 ]; then
    echo "--- instructions per durable call (callgrind, $cg_calls calls) ---" >&2
    run_instructions memory
    run_instructions full
fi

#  The table
get () { echo "${R[$1]:-}"; }
ratio () {              # ratio A B: A / B, or - when either is missing
    awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-";
                                     else printf "%.2f", a / b }'
}
verdict () {            # verdict VALUE OP TARGET: meets / SHORT
    awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN {
        if (v == "-" || v == "") { print "(not run)"; exit }
        ok = op == ">=" ? v + 0 >= t + 0 : v + 0 <= t + 0
        print ok ? "meets" : "SHORT" }'
}
echo
echo "=== actd against the null broker and Gearman ($(date -u +%Y-%m-%dT%H:%MZ)," \
     "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)) ==="
echo "calls of ~$size bytes; pipelined: at most $window outstanding; echo workers of capacity $capacity"
echo "(Gearman: a worker of capacity $capacity is $capacity connections of one process)"
printf "\n%-46s" "run"
for k in "${counts[@]}"; do
    printf " | %-36s" "$k worker(s)"
done
printf "\n%-46s" ""
for k in "${counts[@]}"; do
    printf " | %9s %8s %8s %8s" "calls/s" "p50 ms" "p99 ms" "CPU us"
done
echo
row () {                # row LABEL KEY
    printf "%-46s" "$1"
    for k in "${counts[@]}"; do
        local key="${2/@/$k}"
        if [ -z "$(get "$key.rate")" ]; then
            printf " | %9s %8s %8s %8s" "-" "-" "-" "-"
        else
            printf " | %9.0f %8.3f %8.3f %8.1f" "$(get "$key.rate")" "$(get "$key.p50_ms")" \
                "$(get "$key.p99_ms")" "$(get "$key.cpu_us")"
            [ "$(get "$key.errors")" != 0 ] && printf " (%s errors)" "$(get "$key.errors")"
        fi
    done
    echo
}
row "null relay: pipelined round trips" "null.@.durable"
row "null relay: one at a time" "null.@.latency"
for sync in full normal; do
    S=${sync^^}
    row "actd $S: pipelined, output path (durable)" "actd-$sync.@.durable"
    row "actd $S: pipelined fire-and-forget" "actd-$sync.@.forget"
    row "actd $S: one at a time, output path" "actd-$sync.@.latency"
done
row "actd memory store: pipelined, output path" "actd-memory.@.durable"
row "actd memory store: pipelined fire-and-forget" "actd-memory.@.forget"
if [ "$gearman" = 1 ]; then
    row "gearman: foreground, gearman_client_do" "gearman-builtin.@.do"
    row "gearman: client_do, workers of 1 connection" "gearman-builtin.@.do1"
    row "gearman: foreground pipelined (add_task)" "gearman-builtin.@.fg"
    row "gearman: background, do_background" "gearman-builtin.@.dobg"
    row "gearman: background pipelined" "gearman-builtin.@.bg"
    row "gearman sqlite queue: do_background" "gearman-sqlite.@.dobg"
    row "gearman sqlite queue: background pipelined" "gearman-sqlite.@.bg"
fi
echo "(p50/p99: send to reply; actd fire-and-forget: send to ACCEPTED; gearman do_background:"
echo " the submission; background pipelined: none. CPU us: the broker's CPU time per call."
echo " Background runs end when the workers have done every job.)"
printf "\n%-46s" "actd peak RSS (VmHWM) after its runs"
for k in "${counts[@]}"; do
    printf " | FULL %6s kB, NORMAL %6s kB   " "$(get "actd-full.$k.hwm_kb")" \
        "$(get "actd-normal.$k.hwm_kb")"
done
echo

echo
echo "ratios (same run) and the issue's targets:"
printf "%-58s %-6s" "" ""
for k in "${counts[@]}"; do printf " %12s" "$k worker(s)"; done
echo
target_row () {         # target_row LABEL OP TARGET EXPR-A-KEY EXPR-B-KEY
    local label=$1 op=$2 target=$3 a=$4 b=$5
    printf "%-58s %-6s" "$label" "$op$target"
    for k in "${counts[@]}"; do
        local value
        value=$(ratio "$(get "${a/@/$k}")" "$(get "${b/@/$k}")")
        printf " %5s %-6s" "$value" "$( [ -n "$target" ] && verdict "$value" "$op" "$target")"
    done
    echo
}
#  The performance issue's targets (issue 21): durable FULL and
#  fire-and-forget against the null relay and Gearman's pipelined jobs,
#  one-at-a-time latency, instructions per call
target_row "actd FULL durable calls/s / null round trips/s" ">=" 0.25 \
    "actd-full.@.durable.rate" "null.@.durable.rate"
target_row "actd FULL fire-and-forget calls/s / null round trips/s" ">=" 0.40 \
    "actd-full.@.forget.rate" "null.@.durable.rate"
target_row "actd NORMAL durable calls/s / null round trips/s" "" "" \
    "actd-normal.@.durable.rate" "null.@.durable.rate"
target_row "actd NORMAL fire-and-forget calls/s / null round trips/s" "" "" \
    "actd-normal.@.forget.rate" "null.@.durable.rate"
#  The memory store keeps nothing durable: no SQLite, no committer, no
#  sync (the loop does the memory store's own work inline, so it is not
#  quite a ceiling of FULL: bench/README.md, "The store's share")
target_row "actd memory durable / null (nothing durable)" "" "" \
    "actd-memory.@.durable.rate" "null.@.durable.rate"
target_row "actd memory fire-and-forget / null (nothing durable)" "" "" \
    "actd-memory.@.forget.rate" "null.@.durable.rate"
target_row "actd NORMAL one-at-a-time p50 / null p50" "<=" 1.5 \
    "actd-normal.@.latency.p50_ms" "null.@.latency.p50_ms"
#  FULL one at a time: at most the relay's p50 plus two fdatasyncs, so
#  (actd's p50 - the relay's) counted in fdatasyncs
for k in "${counts[@]}"; do
    R[full-extra.$k]=$(awk -v a="$(get "actd-full.$k.latency.p50_ms")" \
                          -v b="$(get "null.$k.latency.p50_ms")" \
                          'BEGIN { if (a == "" || b == "") print ""; else print a - b }')
done
R[fsync.one]=$(get fsync.p50_ms)
target_row "(actd FULL one-at-a-time p50 - null p50) / fdatasync" "<=" 2 \
    "full-extra.@" "fsync.one"
if [ "$gearman" = 1 ]; then
    target_row "actd FULL durable / gearman foreground pipelined" ">=" 2 \
        "actd-full.@.durable.rate" "gearman-builtin.@.fg.rate"
    target_row "actd FULL fire-and-forget / gearman background pipelined" ">=" 1.5 \
        "actd-full.@.forget.rate" "gearman-builtin.@.bg.rate"
    target_row "actd FULL durable / gearman foreground (client_do)" "" "" \
        "actd-full.@.durable.rate" "gearman-builtin.@.do.rate"
    target_row "actd FULL one-at-a-time p50 / gearman client_do p50" "" "" \
        "actd-full.@.latency.p50_ms" "gearman-builtin.@.do.p50_ms"
    target_row "actd FULL one-at-a-time p50 / client_do p50 (1-conn)" "" "" \
        "actd-full.@.latency.p50_ms" "gearman-builtin.@.do1.p50_ms"
    target_row "actd FULL durable / gearman sqlite background pipelined" "" "" \
        "actd-full.@.durable.rate" "gearman-sqlite.@.bg.rate"
fi
echo
printf "fdatasync of the stores' disk (4 KiB rewritten in place, as a WAL commit): p50 %s ms, p99 %s ms" \
    "$(get fsync.p50_ms)" "$(get fsync.p99_ms)"
printf " (medians of %d probes; their p50s: %s)\n" "${#fsync_p50s[@]}" "${fsync_p50s[*]}"
printf "  the same after 1 ms idle, as a one-at-a-time commit finds the machine: p50 %s ms (not the target's yardstick; for reading the FULL ratio)\n" \
    "$(get fsync.idle_ms)"
#  One at a time, run by run (each FULL run against the fdatasync probed
#  right after it), for the spread of the noisy machine
echo
echo "one at a time, run by run (p50s in ms; the ratios of the targets above):"
for k in "${counts[@]}"; do
    normal_ratios=() full_ratios=() idle_ratios=()
    for ((r = 0; r < repeat; r++)); do
        n=$(get "null.$k.latency.$r") a=$(get "actd-normal.$k.latency.$r")
        f=$(get "actd-full.$k.latency.$r") d=$(get "fsync.$k.$r")
        [ -n "$n" ] && [ -n "$a" ] && [ -n "$f" ] && [ -n "$d" ] || continue
        nr=$(ratio "$a" "$n")
        fr=$(awk -v f="$f" -v n="$n" -v d="$d" 'BEGIN { printf "%.2f", (f - n) / d }')
        di=$(get "fsync-idle.$k.$r")
        ir=$(awk -v f="$f" -v n="$n" -v d="$di" 'BEGIN { if (d > 0) printf "%.2f", (f - n) / d }')
        normal_ratios+=("$nr") full_ratios+=("$fr") idle_ratios+=("$ir")
        printf "  %d worker(s), run %d: null %s, NORMAL %s (x%s), FULL %s, fdatasync %s: (FULL - null) / fdatasync %s; after idle %s: %s\n" \
            "$k" "$((r + 1))" "$n" "$a" "$nr" "$f" "$d" "$fr" "$di" "$ir"
    done
    if ((${#normal_ratios[@]})); then
        printf "  %d worker(s): NORMAL / null median %s (%s-%s); (FULL - null) / fdatasync median %s (%s-%s)\n" \
            "$k" "$(median "${normal_ratios[@]}")" \
            "$(printf '%s\n' "${normal_ratios[@]}" | sort -g | head -1)" \
            "$(printf '%s\n' "${normal_ratios[@]}" | sort -g | tail -1)" \
            "$(median "${full_ratios[@]}")" \
            "$(printf '%s\n' "${full_ratios[@]}" | sort -g | head -1)" \
            "$(printf '%s\n' "${full_ratios[@]}" | sort -g | tail -1)"
        printf "  %d worker(s): (FULL - null) / fdatasync after idle median %s (%s-%s)\n" \
            "$k" "$(median "${idle_ratios[@]}")" \
            "$(printf '%s\n' "${idle_ratios[@]}" | sort -g | head -1)" \
            "$(printf '%s\n' "${idle_ratios[@]}" | sort -g | tail -1)"
    fi
done
if [ "$instructions" = 1 ]; then
    for mode in memory full; do
        limit=$([ "$mode" = memory ] && echo 50000 || echo 80000)
        printf "instructions per durable call, %-6s store (loop + committer): %7s (%s commits): target <= %s: %s\n" \
            "$mode" "$(get "cg.$mode")" "$(get "cg.$mode.commits")" "$limit" \
            "$(verdict "$(get "cg.$mode")" "<=" "$limit")"
    done
fi
if [ "$rss" = 1 ]; then
    echo
    mib () { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
    echo "memory: $rss_messages messages appended through actd to $rss_contexts contexts" \
         "(${R[rss.append_rate]} APPENDs/s, ${R[rss.append_errors]} errors; store" \
         "${R[rss.db_mb]} MB on disk)"
    echo "  actd VmRSS after the appends: $(mib "${R[rss.fill_rss]}") MiB; after one RESOLVE in" \
         "every context: $(mib "${R[rss.fill.rss]}") MiB (VmHWM $(mib "${R[rss.fill.hwm]}") MiB)"
    echo "  restarted on that store, after one RESOLVE in every context" \
         "(${R[rss.restart.touch_rate]} contexts/s, ${R[rss.restart.touch_errors]} errors):" \
         "VmRSS $(mib "${R[rss.restart.rss]}") MiB, VmHWM $(mib "${R[rss.restart.hwm]}") MiB"
    peak=$(awk -v a="${R[rss.fill.hwm]}" -v b="${R[rss.restart.hwm]}" \
           'BEGIN { print (a > b ? a : b) / 1024 }')
    printf "  target: under 300 MiB: peak %.1f MiB: %s\n" "$peak" "$(verdict "$peak" "<=" 300)"
fi

if [ -n "$profile" ]; then
    mkdir -p "$profile"
    echo >&2
    echo "--- profile: actd FULL, 1 worker, perf record during durable and fire-and-forget ---" >&2
    if ! command -v perf >/dev/null; then
        echo "compare.sh: no perf (apt-get install linux-perf)" >&2
        exit 1
    fi
    run_actd 1 full "$profile/actd-full"
    for mode in durable forget; do
        perf script -i "$profile/actd-full-$mode.data" -F comm,tid,ip,sym,dso 2>/dev/null \
            | /usr/bin/python3 "$root/bench/profile_summary.py" 25 \
            >"$profile/actd-full-$mode.summary.txt" || true
        perf report -i "$profile/actd-full-$mode.data" --no-children --sort dso,symbol \
            -g none --stdio 2>/dev/null >"$profile/actd-full-$mode.report.txt" || true
        echo
        echo "=== profile of actd (SQLite FULL, 1 worker), pipelined $mode calls ==="
        echo "(perf record -F 999 --call-graph dwarf; $profile/actd-full-$mode.data;"
        echo " flat report: $profile/actd-full-$mode.report.txt)"
        cat "$profile/actd-full-$mode.summary.txt"
    done
fi
