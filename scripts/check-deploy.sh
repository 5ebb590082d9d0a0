#!/usr/bin/env bash
# Checks deploy/herald.service the way systemd will read it: `systemd-analyze verify` in a scratch
# root holding the host's systemd units, the unit at /etc/systemd/system and the built herald where
# its ExecStart= says (verify refuses an ExecStart that does not exist), then the unit's exposure score
# (systemd-analyze security, 0-100 scale: 20 is the 2.0 it prints).
# verify only warns (exit 0) on an unknown key or a bad value, so any line it prints is a failure.
set -euo pipefail
unit=${1:-deploy/herald.service}
herald=${HERALD_BIN:-.build/debug/herald}
threshold=${HERALD_UNIT_EXPOSURE:-20}

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/local/bin" "$root/etc/systemd/system" "$root/usr/lib"
cp -r /usr/lib/systemd "$root/usr/lib/"
ln -s usr/lib "$root/lib"
# At the path the unit's ExecStart= names (/usr/local/bin/herald, or the package's /usr/bin/herald):
# a hard link when the scratch root is on the same file system; a copy otherwise.
binary=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
mkdir -p "$root$(dirname "$binary")"
ln "$herald" "$root$binary" 2>/dev/null || cp "$herald" "$root$binary"
# ExecReload='s kill, as a Debian system has it.
mkdir -p "$root/usr/bin"
ln -s usr/bin "$root/bin"
cp /usr/bin/kill "$root/usr/bin/kill"
cp "$unit" "$root/etc/systemd/system/herald.service"

output=$(systemd-analyze verify --root="$root" herald.service 2>&1) || { echo "$output"; exit 1; }
if [ -n "$output" ]; then
    echo "systemd-analyze verify $unit:"
    echo "$output"
    exit 1
fi
score=$(systemd-analyze security --offline=true --root="$root" --threshold="$threshold" herald.service 2>&1 |
    grep "Overall exposure level") || {
    systemd-analyze security --offline=true --root="$root" herald.service | grep -E "✗|Overall"
    echo "$unit: exposure over $threshold"
    exit 1
}
echo "$unit: verified; ${score#→ }"
