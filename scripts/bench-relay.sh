#!/usr/bin/env bash
# Relay benchmark: `herald bench relay` against `herald serve` in sandbox mode, on one machine.
#
# Each scenario starts .build/release/herald serve in a fresh temporary directory (new SQLite
# database, durable commits: synchronous = FULL), waits for it, runs `herald bench relay`, reads
# the server's resident memory (VmRSS, and the peak VmHWM) and CPU time (user + system, setup
# included) from /proc, and the load generator's CPU time, then stops the server with SIGTERM.
# Builds nothing: build the release binary first (swift build -c release --product herald).
#
# Scenarios (SCENARIOS, default "throughput latency memory"):
#   throughput  10,000 users, 100,000 messages, as fast as the relay answers (sandbox in-process)
#   throughput-external  the same with the sandbox as its own process
#   latency     10,000 users, 30,000 messages paced at 1,000 per second
#   memory      100,000 devices stored (10,000 users + 90,000 idle), 20,000 messages, with the
#               sandbox as its own process (`herald sandbox`) and serve sending to it as to Apple
#               (--apns-key/--apns-url): the reported RSS is the relay and provider alone, not the
#               sandbox's registry of 100,000 emulated phones.
#   throughput-1-relay  PostgreSQL only: 10,000 users, 100,000 messages into one `herald relay`
#               node sending through one `herald provider` to an external `herald sandbox`
#   throughput-3-nodes  the same with three `herald relay` nodes (distinct --node-id, one database
#               schema, one keys directory), the load's connections spread over the three; the
#               line reports each node's CPU and their sum, the provider's and PostgreSQL's, and
#               CPU milliseconds per message for each, PostgreSQL commits per message (with psql),
#               and the 1-minute load average at the start and the end (other work on the machine)
#
# NODE_CPU (cluster scenarios only, root): caps each relay node at that many cores (e.g. 0.3), a
# CFS quota over 10 ms periods in a cgroup of the node's own (cgroup v1 `cpu`; the v2 path is
# written the same way but was not run, the measuring machine mounts v1), as if each
# node ran on a machine of its own; PostgreSQL, the provider, the sandbox and the load generator
# stay uncapped. The line then carries node_cpu_cap and each node's throttled periods.
#
# The serve scenarios report the server's CPU milliseconds per accepted message too, and on
# PostgreSQL its CPU and commits per message; every line, the 1-minute load average at the start
# and the end.
#
# Environment: HERALD (binary), OUT (JSON lines, default /tmp/bench-relay.jsonl), CONNECTIONS
# (default 32), MESSAGES (overrides the scenario's count), USERS (overrides its users: fewer users
# means more messages per user), WORKERS (serve --workers).
# DATABASE_URL: run serve on PostgreSQL instead of SQLite, each scenario in a schema of its own;
# with PGDATA (the cluster's data directory) the server's CPU time is reported too. Under
# scripts/with-postgres.sh: DATABASE=postgres uses its throw-away cluster (start it with
# HERALD_TEST_POSTGRES_FSYNC=on to compare with SQLite's synced commits).
#
# Usage: scripts/bench-relay.sh            SCENARIOS=latency scripts/bench-relay.sh
#        DATABASE=postgres HERALD_TEST_POSTGRES_FSYNC=on scripts/with-postgres.sh scripts/bench-relay.sh
set -euo pipefail
cd "$(dirname "$0")/.."

herald=$(realpath "${HERALD:-.build/release/herald}")
out=${OUT:-/tmp/bench-relay.jsonl}
connections=${CONNECTIONS:-32}
scenarios=${SCENARIOS:-throughput latency memory}
if [ "${DATABASE:-}" = postgres ]; then
    DATABASE_URL=${DATABASE_URL:-${HERALD_TEST_POSTGRES_URL:-}}
    PGDATA=${PGDATA:-${HERALD_TEST_POSTGRES_DATA:-}}
fi
for scenario in $scenarios; do
    case $scenario in
        throughput-1-relay | throughput-3-nodes)
            if [ -z "${DATABASE_URL:-}" ]; then
                echo "bench-relay: $scenario needs PostgreSQL: set DATABASE_URL, or DATABASE=postgres under scripts/with-postgres.sh" >&2
                exit 2
            fi
            ;;
        throughput | throughput-external | latency | memory) ;;
        *) echo "bench-relay: unknown scenario $scenario" >&2; exit 2 ;;
    esac
done
if [ -n "${NODE_CPU:-}" ] && ! awk -v c="$NODE_CPU" 'BEGIN {exit !(c + 0 >= 0.01 && c + 0 <= 64 && c ~ /^[0-9.]+$/)}'; then
    echo "bench-relay: NODE_CPU must be a number of cores between 0.01 and 64, not $NODE_CPU" >&2
    exit 2
fi
: >"$out"

cluster_pids=()
# The cluster scenarios' processes, stopped if the script fails half-way, and the cgroups of
# NODE_CPU, removed once their processes are gone.
bench_cgroups=()
trap 'for pid in "${cluster_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
      for pid in "${cluster_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
      for group in "${bench_cgroups[@]}"; do rmdir "$group" 2>/dev/null || true; done' EXIT

# CPU seconds (user + system) of the PostgreSQL server: the postmaster with its exited children,
# and every live backend.
postgres_cpu() {
    [ -n "${PGDATA:-}" ] && [ -f "$PGDATA/postmaster.pid" ] || { echo 0; return; }
    local master total=0 child
    master=$(head -n 1 "$PGDATA/postmaster.pid")
    total=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$master/stat")
    for child in $(cat "/proc/$master/task/$master/children" 2>/dev/null); do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$child/stat" 2>/dev/null || echo 0)))
    done
    awk -v t="$total" 'BEGIN {print t / 100}'
}

# Transactions committed in the PostgreSQL database so far (0 without psql).
postgres_commits() {
    local psql=${HERALD_TEST_POSTGRES_BIN:+$HERALD_TEST_POSTGRES_BIN/}psql
    "$psql" "$DATABASE_URL" -XAtc "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()" \
        2>/dev/null || echo 0
}

# Caps process $1 at NODE_CPU cores in a cgroup named $2 (printed: the directory, removed by
# uncap_cpu). Fails, naming what is missing, where no cgroup cpu controller can be written.
cap_cpu() {
    local pid=$1 name=$2 dir quota
    quota=$(awk -v c="$NODE_CPU" 'BEGIN {printf "%d", c * 10000}')
    if [ -w /sys/fs/cgroup/cpu ] && [ -f /sys/fs/cgroup/cpu/cgroup.procs ]; then
        dir=/sys/fs/cgroup/cpu/$name
        mkdir -p "$dir"
        echo 10000 >"$dir/cpu.cfs_period_us"
        echo "$quota" >"$dir/cpu.cfs_quota_us"
    elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
        grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control || echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
        dir=/sys/fs/cgroup/$name
        mkdir -p "$dir"
        echo "$quota 10000" >"$dir/cpu.max"
    else
        echo "bench-relay: NODE_CPU needs a writable cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2), as root" >&2
        return 1
    fi
    echo "$pid" >"$dir/cgroup.procs"
    echo "$dir"
}

# Periods in which the cgroup $1 was throttled (its quota used up before the period ended).
throttled() { awk '$1 == "nr_throttled" {print $2}' "$1/cpu.stat"; }

uncap_cpu() { rmdir "$1" 2>/dev/null || true; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run() {
    local label=$1 users=$2 extra=$3 messages=$4 rate=$5 external=${6:-}
    local dir port apns control pid line sandbox_pid=""
    dir=$(mktemp -d /tmp/herald-bench-relay.XXXXXX)
    port=$(free_port); apns=$(free_port); control=$(free_port)
    local database=() pg_before
    if [ -n "${DATABASE_URL:-}" ]; then
        local separator='?'
        case $DATABASE_URL in *\?*) separator='&' ;; esac
        database=(--database "${DATABASE_URL}${separator}schema=bench_$(date +%s%N)")
    fi
    pg_before=$(postgres_cpu)
    local commits_before=0 load_before
    [ -n "${DATABASE_URL:-}" ] && commits_before=$(postgres_commits)
    load_before=$(cut -d ' ' -f 1 /proc/loadavg)
    if [ -n "$external" ]; then
        (cd "$dir" && "$herald" keys apns --out keys --key-id BENCHKEY01 --team-id BENCHTEAM1 >/dev/null)
        (cd "$dir" && exec "$herald" sandbox --apns-port "$apns" --control-port "$control" --fcm-port 0 --keys-dir keys \
            --app com.example.herald:BENCHTEAM1 --log-level error >sandbox.log 2>&1) &
        sandbox_pid=$!
        for _ in $(seq 1 100); do grep -q "control API" "$dir/sandbox.log" 2>/dev/null && break; sleep 0.1; done
        (cd "$dir" && exec "$herald" serve --port "$port" --app com.example.herald:BENCHTEAM1 \
            --apns-key keys/AuthKey_BENCHKEY01.p8 --apns-team-id BENCHTEAM1 \
            --apns-url "https://127.0.0.1:$apns" --apns-ca keys/sandbox-ca.pem \
            ${WORKERS:+--workers "$WORKERS"} ${BATCH:+--batch-size "$BATCH"} "${database[@]}" --log-level error >serve.log 2>&1) &
    else
        (cd "$dir" && exec "$herald" serve --port "$port" --sandbox-apns-port "$apns" --sandbox-control-port "$control" --sandbox-fcm-port 0 \
            ${WORKERS:+--workers "$WORKERS"} ${BATCH:+--batch-size "$BATCH"} "${database[@]}" --log-level error >serve.log 2>&1) &
    fi
    pid=$!
    for _ in $(seq 1 100); do
        grep -q "^  relay" "$dir/serve.log" 2>/dev/null && break
        sleep 0.1
    done
    grep -q "^  relay" "$dir/serve.log" || { cat "$dir/serve.log" >&2; kill "$pid"; exit 1; }
    local started=$SECONDS
    local TIMEFORMAT="%U %S"
    { time "$herald" bench relay --relay "http://127.0.0.1:$port" --sandbox "http://127.0.0.1:$control" \
        --api-key-file "$dir/keys/api.key" --users "${USERS:-$users}" --extra-devices "$extra" \
        --messages "${MESSAGES:-$messages}" --rate "$rate" --connections "$connections" --label "$label" \
        >"$dir/bench.json"; } 2>"$dir/bench.time"
    line=$(cat "$dir/bench.json")
    local rss hwm cpu client
    cpu=$(awk '{print ($14 + $15) / 100}' "/proc/$pid/stat")
    local sandbox_cpu=0
    if [ -n "$sandbox_pid" ]; then sandbox_cpu=$(awk '{print ($14 + $15) / 100}' "/proc/$sandbox_pid/stat"); fi
    client=$(awk '{print $1 + $2}' "$dir/bench.time")
    local pg_cpu engine=sqlite
    [ -n "${DATABASE_URL:-}" ] && engine=postgres
    pg_cpu=$(awk -v a="$pg_before" -v b="$(postgres_cpu)" 'BEGIN {printf "%.2f", b - a}')
    local commits=0
    [ -n "${DATABASE_URL:-}" ] && commits=$(($(postgres_commits) - commits_before))
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
    kill -TERM "$pid"
    wait "$pid" || true
    if [ -n "$sandbox_pid" ]; then
        kill -TERM "$sandbox_pid"
        wait "$sandbox_pid" || true
    fi
    line=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["server_rss_mb"]=round(int(sys.argv[2])/1024,1); d["server_peak_rss_mb"]=round(int(sys.argv[3])/1024,1); d["server_cpu_seconds"]=float(sys.argv[4]); d["client_cpu_seconds"]=round(float(sys.argv[5]),2); d["sandbox_process_cpu_seconds"]=float(sys.argv[6]); d["database"]=sys.argv[7]; d["postgres_cpu_seconds"]=float(sys.argv[8]); n=d.get("accepted") or 1; d["server_cpu_ms_per_message"]=round(float(sys.argv[4])*1000/n,3); d["postgres_cpu_ms_per_message"]=round(float(sys.argv[8])*1000/n,3); d["postgres_commits_per_message"]=round(int(sys.argv[9])/n,2); d["load_average_1m"]=[float(v) for v in sys.argv[10].split()]; print(json.dumps(d, sort_keys=True))' "$line" "$rss" "$hwm" "$cpu" "$client" "$sandbox_cpu" "$engine" "$pg_cpu" "$commits" "$load_before $(cut -d ' ' -f 1 /proc/loadavg)")
    echo "$line" | tee -a "$out"
    echo "# $label: $((SECONDS - started)) s; database $(du -sh "$dir/data" 2>/dev/null | cut -f1)" >&2
    rm -rf "$dir"
}

# Waits (up to 10 s) for a line starting with $2 in the log $1; prints the log and fails otherwise.
wait_for_line() {
    for _ in $(seq 1 100); do grep -q "^$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    echo "bench-relay: no \"$2\" line in $1:" >&2
    cat "$1" >&2
    return 1
}

# One external `herald sandbox`, one `herald provider` sending to it, and $2 `herald relay` nodes
# on one PostgreSQL schema and one keys directory, each sending through the provider; the load's
# connections are spread round robin over the nodes.
run_cluster() {
    local label=$1 nodes=$2 users=$3 messages=$4
    local dir apns control provider_port schema separator='?' started
    dir=$(mktemp -d /tmp/herald-bench-relay.XXXXXX)
    apns=$(free_port); control=$(free_port); provider_port=$(free_port)
    case $DATABASE_URL in *\?*) separator='&' ;; esac
    schema="${DATABASE_URL}${separator}schema=bench_$(date +%s%N)"
    local pg_before sandbox_pid provider_pid relay_pids=() relay_urls=() pid cgroups=() throttles=() group
    local load_before commits_before
    load_before=$(cut -d ' ' -f 1 /proc/loadavg)
    commits_before=$(postgres_commits)
    pg_before=$(postgres_cpu)
    (cd "$dir" && "$herald" keys apns --out keys --key-id BENCHKEY01 --team-id BENCHTEAM1 >/dev/null)
    (cd "$dir" && "$herald" keys master --out keys/master.key >/dev/null)
    (cd "$dir" && exec "$herald" sandbox --apns-port "$apns" --control-port "$control" --fcm-port 0 --keys-dir keys \
        --app com.example.herald:BENCHTEAM1 --log-level error >sandbox.log 2>&1) &
    sandbox_pid=$!
    cluster_pids+=("$sandbox_pid")
    wait_for_line "$dir/sandbox.log" "  control API"
    (cd "$dir" && exec "$herald" provider --port "$provider_port" --apns-key keys/AuthKey_BENCHKEY01.p8 \
        --apns-team-id BENCHTEAM1 --apns-url "https://127.0.0.1:$apns" --apns-ca keys/sandbox-ca.pem \
        --secret-file keys/provider.secret --log-level error >provider.log 2>&1) &
    provider_pid=$!
    cluster_pids+=("$provider_pid")
    wait_for_line "$dir/provider.log" "  listening"
    # All nodes start at once, as a cluster does: migrations and new keys are made once, under
    # their locks.
    local n port
    for n in $(seq 1 "$nodes"); do
        port=$(free_port)
        (cd "$dir" && exec "$herald" relay --port "$port" --keys-dir keys --database "$schema" --node-id "node-$n" \
            --app com.example.herald:BENCHTEAM1 --provider-url "http://127.0.0.1:$provider_port" \
            --provider-secret-file keys/provider.secret ${WORKERS:+--workers "$WORKERS"} ${BATCH:+--batch-size "$BATCH"} \
            --log-level error >"relay-$n.log" 2>&1) &
        relay_pids+=("$!")
        cluster_pids+=("$!")
        relay_urls+=("http://127.0.0.1:$port")
        if [ -n "${NODE_CPU:-}" ]; then
            group=$(cap_cpu "$!" "herald-bench-$$-node-$n") || exit 1
            cgroups+=("$group")
            bench_cgroups+=("$group")
        fi
    done
    for n in $(seq 1 "$nodes"); do wait_for_line "$dir/relay-$n.log" "  relay"; done
    started=$SECONDS
    local TIMEFORMAT="%U %S" relay_arguments=()
    for url in "${relay_urls[@]}"; do relay_arguments+=(--relay "$url"); done
    { time "$herald" bench relay "${relay_arguments[@]}" --sandbox "http://127.0.0.1:$control" \
        --api-key-file "$dir/keys/api.key" --users "${USERS:-$users}" --messages "${MESSAGES:-$messages}" --rate 0 \
        --connections "$connections" --label "$label" >"$dir/bench.json"; } 2>"$dir/bench.time"
    local relay_cpu=() relay_rss=() sandbox_cpu provider_cpu client pg_cpu
    for pid in "${relay_pids[@]}"; do
        relay_cpu+=("$(awk '{print ($14 + $15) / 100}' "/proc/$pid/stat")")
        relay_rss+=("$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")")
    done
    provider_cpu=$(awk '{print ($14 + $15) / 100}' "/proc/$provider_pid/stat")
    sandbox_cpu=$(awk '{print ($14 + $15) / 100}' "/proc/$sandbox_pid/stat")
    client=$(awk '{print $1 + $2}' "$dir/bench.time")
    pg_cpu=$(awk -v a="$pg_before" -v b="$(postgres_cpu)" 'BEGIN {printf "%.2f", b - a}')
    local commits=$(($(postgres_commits) - commits_before)) load_after
    load_after=$(cut -d ' ' -f 1 /proc/loadavg)
    for pid in "${relay_pids[@]}" "$provider_pid" "$sandbox_pid"; do kill -TERM "$pid"; done
    for pid in "${relay_pids[@]}" "$provider_pid" "$sandbox_pid"; do wait "$pid" || true; done
    cluster_pids=()
    for group in "${cgroups[@]}"; do
        throttles+=("$(throttled "$group")")
        uncap_cpu "$group"
    done
    python3 - "$(cat "$dir/bench.json")" "${relay_cpu[*]}" "${relay_rss[*]}" "$provider_cpu" "$sandbox_cpu" \
        "$client" "$pg_cpu" "$commits" "$load_before $load_after" "${NODE_CPU:-}" "${throttles[*]}" <<'PYTHON' | tee -a "$out"
import json, sys
line = json.loads(sys.argv[1])
relays = [float(cpu) for cpu in sys.argv[2].split()]
rss = [round(int(kb) / 1024, 1) for kb in sys.argv[3].split()]
provider, sandbox, client, postgres = (float(value) for value in sys.argv[4:8])
messages = line["accepted"] or 1
line.update({
    "database": "postgres",
    "relay_cpu_seconds": round(sum(relays), 2),
    "relay_cpu_seconds_per_node": relays,
    "relay_rss_mb_per_node": rss,
    "provider_cpu_seconds": provider,
    "sandbox_process_cpu_seconds": sandbox,
    "client_cpu_seconds": round(client, 2),
    "postgres_cpu_seconds": postgres,
    "relay_cpu_ms_per_message": round(sum(relays) * 1000 / messages, 3),
    "provider_cpu_ms_per_message": round(provider * 1000 / messages, 3),
    "postgres_cpu_ms_per_message": round(postgres * 1000 / messages, 3),
    "postgres_commits_per_message": round(int(sys.argv[8]) / messages, 2),
    "load_average_1m": [float(value) for value in sys.argv[9].split()],
    "all_delivered": line["refused"] == 0 and line["pushes_delivered"] == line["pushes"] == line["accepted"],
})
if sys.argv[10]:
    line["node_cpu_cap"] = float(sys.argv[10])
    line["node_throttled_periods"] = [int(count) for count in sys.argv[11].split()]
print(json.dumps(line, sort_keys=True))
PYTHON
    echo "# $label: $((SECONDS - started)) s" >&2
    rm -rf "$dir"
}

for scenario in $scenarios; do
    case $scenario in
        throughput-1-relay) run_cluster throughput-1-relay 1 10000 100000 ;;
        throughput-3-nodes) run_cluster throughput-3-nodes 3 10000 100000 ;;
        throughput) run throughput 10000 0 100000 0 ;;
        throughput-external) run throughput-external-sandbox 10000 0 100000 0 external ;;
        latency) run latency-1000-per-s 10000 0 30000 1000 ;;
        memory) run memory-100k-devices 10000 90000 20000 0 external ;;
        *) echo "unknown scenario $scenario" >&2; exit 2 ;;
    esac
done
