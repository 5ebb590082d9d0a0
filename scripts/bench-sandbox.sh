#!/usr/bin/env bash
# Load test of the APNs sandbox with h2load (Debian's nghttp2-client): valid pushes over TLS,
# one shared provider token, to a registered device. Prints h2load's summary and p50/p99/p99.9
# computed from its per-request log. Usage: scripts/bench-sandbox.sh [REQUESTS] [CLIENTS] [STREAMS]
set -euo pipefail
cd "$(dirname "$0")/.."
requests=${1:-200000}
clients=${2:-4}
streams=${3:-100}

swift build -c release --product herald >/dev/null
herald=.build/release/herald
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT

$herald keys apns --out "$work" --key-id BENCHKEY01 --team-id BENCHTEAM1 >/dev/null
$herald sandbox --keys-dir "$work" --app com.example.bench:BENCHTEAM1 --apns-port 0 --control-port 0 --fcm-port 0 \
    --threads "${THREADS:-2}" --log-level error >"$work/sandbox.log" 2>&1 &
pid=$!
for _ in $(seq 50); do grep -q "control API" "$work/sandbox.log" 2>/dev/null && break; sleep 0.1; done
apns=$(awk '/  APNs/ {print $2}' "$work/sandbox.log")
control=$(awk '/control API/ {print $3}' "$work/sandbox.log")
device=$(curl -sf -X POST "$control/devices" -d '{"bundle_id":"com.example.bench"}')
token=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["messaging_token"])' "$device")
jwt=$($herald keys token --key "$work/AuthKey_BENCHKEY01.p8" --team-id BENCHTEAM1)
printf '{"aps":{"alert":{"title":"New message","body":"You have a new message"},"mutable-content":1},"e":"%s"}' \
    "$(head -c 300 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')" >"$work/body.json"

echo "h2load -n $requests -c $clients -m $streams, body $(wc -c <"$work/body.json") bytes, sandbox $(git rev-parse --short HEAD)"
h2load -n "$requests" -c "$clients" -m "$streams" --log-file="$work/h2load.log" \
    -H "authorization: bearer $jwt" -H "apns-topic: com.example.bench" -H "apns-push-type: alert" \
    -H "apns-priority: 5" -d "$work/body.json" "$apns/3/device/$token" | grep -E "finished|requests:|status codes"
python3 - "$work/h2load.log" <<'PY'
import sys
latencies = sorted(int(line.split()[2]) for line in open(sys.argv[1]))
n = len(latencies)
pick = lambda q: latencies[min(n - 1, int(n * q))] / 1000
print(f"latency over {n} requests: p50 {pick(0.5):.2f} ms, p99 {pick(0.99):.2f} ms, p99.9 {pick(0.999):.2f} ms")
PY
echo "sandbox resident memory: $(ps -o rss= -p $pid | awk '{printf "%.1f MB", $1/1024}')"
