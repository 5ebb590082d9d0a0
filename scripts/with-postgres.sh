#!/usr/bin/env bash
# Runs a command beside a throw-away PostgreSQL cluster: initdb in a temporary directory, the
# server on a free loopback port, HERALD_TEST_POSTGRES_URL naming it, and the cluster stopped and
# removed when the command ends, whatever its exit status.
#
#   scripts/with-postgres.sh swift test --filter Postgres
#
# PostgreSQL refuses to run as root, and CI runs as root: then the cluster belongs to the
# `postgres` user (made by Debian's postgresql package, which the Makefile installs).
set -euo pipefail

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    echo "with-postgres: PostgreSQL's server is not installed (Debian: apt-get install postgresql)" >&2
    exit 1
fi

dir=$(mktemp -d /tmp/herald-postgres.XXXXXX)
as_owner=()
if [ "$(id -u)" = 0 ]; then
    chown postgres: "$dir"
    as_owner=(runuser -u postgres --)
fi

stop() {
    "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap stop EXIT
trap 'exit 143' INT TERM

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as_owner[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    exit 1
}
# fsync off: the tests kill nodes, not the machine's power (HERALD_TEST_POSTGRES_FSYNC=on for
# benchmarks that compare with synced SQLite commits). Enough connections for every test's pools.
# HERALD_TEST_POSTGRES_OPTIONS adds server options, e.g. to count statements:
#   HERALD_TEST_POSTGRES_OPTIONS="-c shared_preload_libraries=pg_stat_statements"
"${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=${HERALD_TEST_POSTGRES_FSYNC:-off} ${HERALD_TEST_POSTGRES_OPTIONS:-}" start >/dev/null || {
    cat "$dir/server.log" >&2
    exit 1
}

export HERALD_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
export HERALD_TEST_POSTGRES_BIN="$bin"
export HERALD_TEST_POSTGRES_DATA="$dir/data"
echo "with-postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
set +e
"$@"
status=$?
set -e
exit $status
