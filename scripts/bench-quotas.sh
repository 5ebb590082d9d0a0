#!/usr/bin/env bash
# What quotas cost the ingest path: `herald serve` (sandbox mode, SQLite, a fresh one each run)
# whose app has a message quota and a queue cap that never bind, and `herald bench relay` run
# against it in interleaved pairs, with the configured admin key (no key lookup, no bucket, no cap)
# and with the app's own key made by `herald keys api` (keyring lookup, key and app buckets, the
# app's queued count read at most once a second), each first in every other pair. Prints one line
# per run and the medians.
#
#   scripts/bench-quotas.sh                 (HERALD: the binary, default .build/release/herald;
#                                           PAIRS 3, USERS 1000, MESSAGES 20000, CONNECTIONS 32)
set -euo pipefail
cd "$(dirname "$0")/.."

herald=$(realpath "${HERALD:-.build/release/herald}")
pairs=${PAIRS:-3}
users=${USERS:-1000}
messages=${MESSAGES:-20000}
connections=${CONNECTIONS:-32}
app=com.example.herald

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# One run: a fresh `herald serve` (a new database, so no run pushes to devices an earlier one
# activated), the app's key made beside it, `herald bench relay` with the key $1 names (admin or
# app); prints the accepted messages per second.
once() {
    local which=$1 dir port apns fcm control pid key line
    dir=$(mktemp -d /tmp/herald-bench-quotas.XXXXXX)
    port=$(free_port)
    apns=$(free_port)
    fcm=$(free_port)
    control=$(free_port)
    printf 'quotas:\n  apps:\n    %s:\n      messages_per_second: 100000\n      burst: 100000\n      max_queued: 100000000\n' \
        "$app" >"$dir/herald.yaml"
    "$herald" serve --config "$dir/herald.yaml" --data "$dir/data" --keys-dir "$dir/keys" --port "$port" \
        --sandbox-apns-port "$apns" --sandbox-fcm-port "$fcm" --sandbox-control-port "$control" \
        --log-level warning >"$dir/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do
        grep -q "^  relay " "$dir/serve.log" && break
        kill -0 "$pid" 2>/dev/null || { cat "$dir/serve.log" >&2; return 1; }
        sleep 0.1
    done
    key=$dir/keys/api.key
    if [ "$which" = app ]; then
        "$herald" keys api create --name bench --app "$app" --scopes send,read,devices,apps --json \
            --data "$dir/data" | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])' >"$dir/app.key"
        key=$dir/app.key
        sleep 3 # the node reads the stored keys every 2 s
    fi
    line=$("$herald" bench relay --relay "http://127.0.0.1:$port" --sandbox "http://127.0.0.1:$control" \
        --api-key-file "$key" --bundle "$app" --users "$users" --messages "$messages" \
        --connections "$connections" --label "$which" | tail -n 1)
    kill -TERM "$pid"
    wait "$pid" || true
    rm -rf "$dir"
    python3 -c 'import json, sys; print(round(json.loads(sys.argv[1])["accepted_per_second"]))' "$line"
}

admin=()
keyed=()
# ABBA: each key goes first in every other pair, so a machine slowing down or speeding up over the
# runs weighs on both alike.
for pair in $(seq "$pairs"); do
    order="admin app"
    [ $((pair % 2)) = 0 ] && order="app admin"
    for which in $order; do
        rate=$(once "$which")
        echo "$which pair $pair: $rate accepted messages/s"
        if [ "$which" = admin ]; then admin+=("$rate"); else keyed+=("$rate"); fi
    done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
echo "median: admin key (no quota) $(median "${admin[@]}")/s, app key (quota and cap) $(median "${keyed[@]}")/s"
