#!/usr/bin/env bash
# Migration benchmark: how long `herald store migrate` takes to move a SQLite deployment.
#
# Starts `herald serve` (in-process sandbox) once in a fresh temporary directory so it makes its
# database, stops it, fills the database with DEVICES devices and PUSHES messages, each with its
# idempotency key and a pending (queued) push (scripts/bench-migrate-fill.py writes the rows
# directly: random bytes in the sealed columns), then times `herald store migrate` into the
# PostgreSQL named by HERALD_TEST_POSTGRES_URL. Run it through scripts/with-postgres.sh.
#
# Environment: HERALD (binary, default .build/debug/herald), DEVICES (10000), PUSHES (100000),
# KEEP (1: keep the directory).
#
# Usage: scripts/with-postgres.sh scripts/bench-migrate.sh
set -euo pipefail
cd "$(dirname "$0")/.."

herald=$(realpath "${HERALD:-.build/debug/herald}")
: "${HERALD_TEST_POSTGRES_URL:?run through scripts/with-postgres.sh}"
dir=$(mktemp -d /tmp/herald-bench-migrate.XXXXXX)
echo '{"port": 0, "sandbox": {"apns_port": 0, "fcm_port": 0, "control_port": 0}}' >"$dir/serve.json"
"$herald" serve --config "$dir/serve.json" --data "$dir/data" --keys-dir "$dir/keys" \
    --app com.example.chat:TEAM123456 >"$dir/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 600); do grep -q "  relay" "$dir/serve.log" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$serve_pid"
wait "$serve_pid"
python3 scripts/bench-migrate-fill.py "$dir/data/herald.sqlite" "${DEVICES:-10000}" "${PUSHES:-100000}"
ls -l "$dir/data/herald.sqlite"
time "$herald" store migrate --from "sqlite:$dir/data/herald.sqlite" --to "$HERALD_TEST_POSTGRES_URL"
[ "${KEEP:-0}" = 1 ] && echo "kept $dir" || rm -rf "$dir"
