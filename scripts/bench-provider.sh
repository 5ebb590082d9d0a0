#!/usr/bin/env bash
# Provider benchmark: APNs clients against `herald sandbox`, in one run, on one machine.
#
# Starts .build/release/herald sandbox (ports 0, --token-update-interval 0, --log-level error)
# in a temporary directory with a fresh key (`herald keys apns`), registers one device
# (com.example.bench), then for alert-sized (~500 bytes, priority 5) and VoIP-sized
# (~1,000 bytes, priority 10, topic com.example.bench.voip) pushes, each with 1, 2 and 4
# connections and 100 sends in flight per connection, runs
#   * scripts/bench-aioapns.py: aioapns 4.0 on uvloop (the Python reference), and
#   * run_herald: Herald's own provider client, `herald bench provider`.
# Each run prints one JSON line; they go to stdout and to $OUT. Progress, per-run wall time and
# sandbox CPU go to stderr. Builds nothing: build the release binary first
# (swift build -c release --product herald).
#
# --token-update-interval 0: aioapns signs a new provider token for every connection it opens;
# with the sandbox's default (Apple's 20-minute rule) every connection after the first would get
# 429 TooManyProviderTokenUpdates.
#
# Environment:
#   COUNT         pushes per run (default 200000; ~1 minute per aioapns run on 2 cores)
#   OUT           JSON lines file, overwritten (default /tmp/bench-provider.jsonl)
#   HERALD        the herald binary (default .build/release/herald)
#   PYTHON        python3 with aioapns==4.0 and uvloop (default python3)
#   THREADS       sandbox --threads (default: the sandbox's own, the number of cores)
#   AIOAPNS_ARGS  extra arguments for bench-aioapns.py (e.g. --as-shipped, --loop asyncio)
#   CLIENTS       which clients to run (default "aioapns herald")
#
# Usage: scripts/bench-provider.sh            COUNT=20000 scripts/bench-provider.sh
set -euo pipefail
cd "$(dirname "$0")/.."

herald=${HERALD:-.build/release/herald}
count=${COUNT:-200000}
out=${OUT:-/tmp/bench-provider.jsonl}
python=${PYTHON:-python3}
per_connection=100
key_id=BENCHKEY01
team_id=BENCHTEAM1
bundle=com.example.bench

[ -x "$herald" ] || { echo "bench-provider: $herald not found; build it: swift build -c release --product herald" >&2; exit 1; }
"$python" -c 'import aioapns, uvloop' 2>/dev/null ||
    { echo "bench-provider: needs aioapns and uvloop: $python -m pip install aioapns==4.0 uvloop" >&2; exit 1; }

work=$(mktemp -d)
pid=
cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

"$herald" keys apns --out "$work" --key-id "$key_id" --team-id "$team_id" >/dev/null
threads=()
[ -n "${THREADS:-}" ] && threads=(--threads "$THREADS")
"$herald" sandbox --keys-dir "$work" --app "$bundle:$team_id" --apns-port 0 --control-port 0 --fcm-port 0 \
    --token-update-interval 0 --log-level error "${threads[@]}" >"$work/sandbox.out" 2>"$work/sandbox.err" &
pid=$!
for _ in $(seq 300); do
    grep -q "control API" "$work/sandbox.out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { echo "bench-provider: the sandbox exited:" >&2; cat "$work/sandbox.err" >&2; exit 1; }
    sleep 0.1
done
apns=$(awk '/  APNs/ {print $2}' "$work/sandbox.out")
control=$(awk '/control API/ {print $3}' "$work/sandbox.out")
[ -n "$apns" ] && [ -n "$control" ] || { echo "bench-provider: no sandbox banner" >&2; exit 1; }
ca=$work/sandbox-ca.pem
key=$work/AuthKey_$key_id.p8

device=$(curl -sf -X POST "$control/devices" -H 'content-type: application/json' \
    -d "{\"bundle_id\":\"$bundle\",\"messaging_token_delay_ms\":0,\"voip_token_delay_ms\":0}")
token=$("$python" -c 'import json,sys; print(json.loads(sys.argv[1])["messaging_token"])' "$device")
voip=$("$python" -c 'import json,sys; print(json.loads(sys.argv[1])["voip_token"])' "$device")

: >"$out"
sandbox_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$pid/stat"; }
now() { date +%s.%N; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
echo "bench-provider: $count pushes per run, $per_connection in flight per connection;" \
    "herald $(git describe --always --dirty 2>/dev/null || echo '?'), $(nproc) cores, sandbox $apns" >&2

# One run: PUSH_TYPE PAYLOAD_BYTES CONNECTIONS. Prints the client's JSON line (stdout and $OUT).
status=0
run_aioapns() {
    local type=$1 bytes=$2 connections=$3 device_token=$token cpu0 t0
    [ "$type" = voip ] && device_token=$voip
    cpu0=$(sandbox_cpu)
    t0=$(now)
    # shellcheck disable=SC2086 # AIOAPNS_ARGS is a list of words
    "$python" scripts/bench-aioapns.py --apns-url "$apns" --ca "$ca" --key "$key" \
        --key-id "$key_id" --team-id "$team_id" --topic "$bundle" --token "$device_token" \
        --push-type "$type" --payload-bytes "$bytes" --count "$count" \
        --connections "$connections" --concurrency $((per_connection * connections)) \
        ${AIOAPNS_ARGS:-} | tee -a "$out" || status=1
    echo "bench-provider: aioapns $type ${bytes}B x$connections: wall $(minus "$(now)" "$t0") s," \
        "sandbox CPU $(minus "$(sandbox_cpu)" "$cpu0") s" >&2
}

# One run of Herald's own provider client (`herald bench provider`), same shape and load.
run_herald() {
    local type=$1 bytes=$2 connections=$3 device_token=$token cpu0 t0
    [ "$type" = voip ] && device_token=$voip
    cpu0=$(sandbox_cpu)
    t0=$(now)
    "$herald" bench provider --apns-url "$apns" --apns-ca "$ca" --apns-key "$key" --apns-key-id "$key_id" \
        --team-id "$team_id" --bundle "$bundle" --token "$device_token" --push-type "$type" \
        --payload-bytes "$bytes" --count "$count" --connections "$connections" \
        --concurrency $((per_connection * connections)) | tee -a "$out" || status=1
    echo "bench-provider: herald $type ${bytes}B x$connections: wall $(minus "$(now)" "$t0") s," \
        "sandbox CPU $(minus "$(sandbox_cpu)" "$cpu0") s" >&2
}

for shape in "alert 500" "voip 1000"; do
    read -r type bytes <<<"$shape"
    for connections in 1 2 4; do
        for client in ${CLIENTS:-aioapns herald}; do "run_$client" "$type" "$bytes" "$connections"; done
        kill -0 "$pid" 2>/dev/null || { echo "bench-provider: the sandbox died:" >&2; cat "$work/sandbox.err" >&2; exit 1; }
    done
done

echo "bench-provider: sandbox health $(curl -sf "$control/health"), resident memory" \
    "$(ps -o rss= -p "$pid" | awk '{printf "%.1f MB", $1/1024}'), stderr: $(wc -c <"$work/sandbox.err") bytes; results in $out" >&2
exit $status
