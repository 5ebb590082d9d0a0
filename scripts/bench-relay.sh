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
#
# Environment: HERALD (binary), OUT (JSON lines, default /tmp/bench-relay.jsonl), CONNECTIONS
# (default 32), MESSAGES (overrides the scenario's count), WORKERS (serve --workers).
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
    DATABASE_URL=${DATABASE_URL:-$HERALD_TEST_POSTGRES_URL}
    PGDATA=${PGDATA:-${HERALD_TEST_POSTGRES_DATA:-}}
fi
: >"$out"

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
        --api-key-file "$dir/keys/api.key" --users "$users" --extra-devices "$extra" \
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
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
    kill -TERM "$pid"
    wait "$pid" || true
    if [ -n "$sandbox_pid" ]; then
        kill -TERM "$sandbox_pid"
        wait "$sandbox_pid" || true
    fi
    line=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["server_rss_mb"]=round(int(sys.argv[2])/1024,1); d["server_peak_rss_mb"]=round(int(sys.argv[3])/1024,1); d["server_cpu_seconds"]=float(sys.argv[4]); d["client_cpu_seconds"]=round(float(sys.argv[5]),2); d["sandbox_process_cpu_seconds"]=float(sys.argv[6]); d["database"]=sys.argv[7]; d["postgres_cpu_seconds"]=float(sys.argv[8]); print(json.dumps(d, sort_keys=True))' "$line" "$rss" "$hwm" "$cpu" "$client" "$sandbox_cpu" "$engine" "$pg_cpu")
    echo "$line" | tee -a "$out"
    echo "# $label: $((SECONDS - started)) s; database $(du -sh "$dir/data" 2>/dev/null | cut -f1)" >&2
    rm -rf "$dir"
}

for scenario in $scenarios; do
    case $scenario in
        throughput) run throughput 10000 0 100000 0 ;;
        throughput-external) run throughput-external-sandbox 10000 0 100000 0 external ;;
        latency) run latency-1000-per-s 10000 0 30000 1000 ;;
        memory) run memory-100k-devices 10000 90000 20000 0 external ;;
        *) echo "unknown scenario $scenario" >&2; exit 2 ;;
    esac
done
