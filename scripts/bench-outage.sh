#!/usr/bin/env bash
# Outage benchmark: how soon a backlog queued through an APNs outage reaches APNs once it answers.
#
# Starts `herald sandbox` (its own process, inspection log large enough for every push) and
# `herald serve` sending to it as to Apple (--apns-key/--apns-url), in a fresh temporary
# directory; activates USERS phones (messaging and VoIP tokens); sends one message to warm the
# connections; makes APNs unreachable for OUTAGE_S seconds (POST /sandbox/faults/outage: every
# connection closed, new ones closed before TLS); posts MESSAGES messages at once and, in the
# last CALLS_WINDOW_S seconds of the outage, CALLS calls (calls live 30 s); waits until the
# relay records every push delivered; then reads from the sandbox's inspection log when each
# push was accepted, and prints one JSON line: seconds from APNs answering again to the first
# call, the first push, 99% of the pushes, and the last one. Also the relay's attempts count
# for a sample of pushes (an outage should cost none).
# Builds nothing: build the release binary first (swift build -c release --scratch-path
# .build-release --product herald) and point HERALD at it.
#
# Environment: HERALD (binary, default .build-release/release/herald), USERS (1000), MESSAGES
# (20000), CALLS (100), OUTAGE_S (60), CALLS_WINDOW_S (20), WORKERS (serve --workers),
# OUT (JSON lines, default /tmp/bench-outage.jsonl), KEEP (1: keep the directory and its logs).
#
# Usage: scripts/bench-outage.sh            OUTAGE_S=5 MESSAGES=2000 scripts/bench-outage.sh
set -euo pipefail
cd "$(dirname "$0")/.."

herald=$(realpath "${HERALD:-.build-release/release/herald}")
out=${OUT:-/tmp/bench-outage.jsonl}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

dir=$(mktemp -d /tmp/herald-bench-outage.XXXXXX)
port=$(free_port); apns=$(free_port); control=$(free_port)
messages=${MESSAGES:-20000}; calls=${CALLS:-100}
capacity=$((messages + calls + 1000))
(cd "$dir" && "$herald" keys apns --out keys --key-id BENCHKEY01 --team-id BENCHTEAM1 >/dev/null)
(cd "$dir" && exec "$herald" sandbox --apns-port "$apns" --control-port "$control" --fcm-port 0 --keys-dir keys \
    --app com.example.herald:BENCHTEAM1 --inspection-capacity "$capacity" --log-level error >sandbox.log 2>&1) &
sandbox_pid=$!
for _ in $(seq 1 100); do grep -q "control API" "$dir/sandbox.log" 2>/dev/null && break; sleep 0.1; done
(cd "$dir" && exec "$herald" serve --port "$port" --app com.example.herald:BENCHTEAM1 \
    --apns-key keys/AuthKey_BENCHKEY01.p8 --apns-team-id BENCHTEAM1 \
    --apns-url "https://127.0.0.1:$apns" --apns-ca keys/sandbox-ca.pem \
    ${WORKERS:+--workers "$WORKERS"} --log-level info >serve.log 2>&1) &
serve_pid=$!
stop() {
    kill -TERM "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true
    kill -TERM "$sandbox_pid" 2>/dev/null || true; wait "$sandbox_pid" 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "# kept $dir" >&2; else rm -rf "$dir"; fi
}
trap stop EXIT
for _ in $(seq 1 100); do grep -q "^  relay" "$dir/serve.log" 2>/dev/null && break; sleep 0.1; done
grep -q "^  relay" "$dir/serve.log" || { cat "$dir/serve.log" >&2; exit 1; }

python3 - "http://127.0.0.1:$port" "http://127.0.0.1:$control" "$dir/keys/api.key" \
    "${USERS:-1000}" "$messages" "$calls" "${OUTAGE_S:-60}" "${CALLS_WINDOW_S:-20}" <<'PY' | tee -a "$out"
import json, sys, time, threading, urllib.request, base64, os
from concurrent.futures import ThreadPoolExecutor

relay, control, key_file, users, messages, calls, outage_s, window_s = sys.argv[1:9]
users, messages, calls, outage_s, window_s = int(users), int(messages), int(calls), int(outage_s), int(window_s)
api_key = open(key_file).read().strip()
local = threading.local()

def request(method, url, body=None, auth=False):
    import http.client, urllib.parse
    parts = urllib.parse.urlsplit(url)
    connections = getattr(local, "connections", None)
    if connections is None:
        connections = local.connections = {}
    connection = connections.get(parts.netloc)
    if connection is None:
        connection = connections[parts.netloc] = http.client.HTTPConnection(parts.netloc, timeout=60)
    headers = {"content-type": "application/json"}
    if auth:
        headers["authorization"] = "Bearer " + api_key
    data = json.dumps(body).encode() if body is not None else None
    try:
        connection.request(method, parts.path + ("?" + parts.query if parts.query else ""), data, headers)
        reply = connection.getresponse()
        payload = reply.read()
    except (http.client.HTTPException, OSError):
        connection.close()
        del connections[parts.netloc]
        raise
    return reply.status, (json.loads(payload) if payload else None)

def now_ms():
    return int(time.time() * 1000)

def activate(index):
    status, device = request("POST", control + "/sandbox/devices", {"bundle_id": "com.example.herald"})
    public = base64.b64encode(os.urandom(32)).decode()
    status, answer = request("POST", relay + "/v1/activations", {
        "user_id": f"user-{index}", "app": "com.example.herald", "platform": "ios", "public_key": public,
        "messaging_token": device["messaging_token"], "voip_token": device["voip_token"]}, auth=True)
    assert status == 201, answer

pool = ThreadPoolExecutor(16)
list(pool.map(activate, range(users)))

def delivered():
    return request("GET", relay + "/health")[1].get("outbox_delivered", 0)

status, receipt = request("POST", relay + "/v1/messages", {"to": "user-0", "from": {"id": "a", "name": "A"},
                                                         "conversation": "warm", "text": "warm up"}, auth=True)
while delivered() < 1:
    time.sleep(0.05)
baseline = delivered()

status, outage = request("POST", control + "/sandbox/faults/outage", {"ms": outage_s * 1000})
assert status == 201, outage
until = outage["until"]

def message(index):
    status, answer = request("POST", relay + "/v1/messages", {
        "to": f"user-{index % users}", "from": {"id": "agent-1", "name": "Agent One"},
        "conversation": f"conv-{index % users}", "text": f"Message {index}: your order has shipped."}, auth=True)
    assert status == 202, answer
    return answer["pushes"][0]["push_id"]

started = now_ms()
push_ids = list(pool.map(message, range(messages)))
queued_seconds = (now_ms() - started) / 1000

# The calls, in the outage's last seconds: a call lives 30 s.
time.sleep(max(0, (until - window_s * 1000 - now_ms()) / 1000))
def call(index):
    status, answer = request("POST", relay + "/v1/calls", {
        "to": f"user-{index % users}", "from": {"id": "agent-1", "name": "Agent One"},
        "call_id": f"call-{index}"}, auth=True)
    assert status == 202, answer
    return answer["pushes"][0]["push_id"]
interval = window_s / max(1, calls)
call_ids = []
for index in range(calls):
    call_ids.append(call(index))
    if until - now_ms() > 2000:
        time.sleep(interval)
total = len(push_ids) + len(call_ids)

deadline = until + 300_000
while delivered() - baseline < total and now_ms() < deadline:
    time.sleep(0.1)
done = delivered() - baseline

status, inspection = request("GET", control + f"/sandbox/inspection?limit={total + 1000}")
records = [r for r in inspection["records"] if r["status"] == 200 and r["received_at"] >= until]
times = sorted(r["received_at"] - until for r in records)
call_times = sorted(r["received_at"] - until for r in records if r.get("push_type") == "voip")
attempts = [request("GET", relay + "/v1/pushes/" + i, auth=True)[1]["attempts"] for i in (push_ids[::200] + call_ids[::10])]

def seconds(ms):
    return None if ms is None else round(ms / 1000, 2)
line = {
    "label": f"apns-outage-{outage_s}s", "users": users, "messages": messages, "calls": calls,
    "queued_seconds": round(queued_seconds, 1), "pushes": total, "pushes_delivered": done,
    "accepted_after_outage": len(times),
    "first_call_s": seconds(call_times[0] if call_times else None),
    "first_push_s": seconds(times[0] if times else None),
    "p99_s": seconds(times[max(0, -(-len(times) * 99 // 100) - 1)] if times else None),
    "last_s": seconds(times[-1] if times else None),
    "all_calls_s": seconds(call_times[-1] if call_times else None),
    "sampled_attempts_max": max(attempts), "sampled_attempts_mean": round(sum(attempts) / len(attempts), 2),
}
print(json.dumps(line, sort_keys=True))
PY
echo "# relay log (network health):" >&2
grep -i "push network" "$dir/serve.log" | cut -c1-200 >&2 || true
