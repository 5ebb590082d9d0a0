#!/usr/bin/env bash
# The hostile corpus (Tests/interop/test_hostile_bodies.py, issue 30) as a benchmark: every hostile
# body posted to every listener of `herald serve` (relay routes, the Genesys adapter, the sandbox's
# control API and FCM listener) and to `herald provider`'s batch API, each request timed, and the
# peak resident memory (VmHWM) of `herald serve` and of the provider before and after the corpus.
# The test's assertions hold too (the peak under 150 MB, every listener still answering): the
# script's exit status is pytest's.
# Usage: scripts/bench-hostile.sh [HERALD_BINARY]
#   default: .build/release/herald when it exists, else .build/debug/herald (say which in figures).
set -euo pipefail
cd "$(dirname "$0")/.."
herald=${1:-}
if [ -z "$herald" ]; then
    if [ -x .build/release/herald ]; then herald=.build/release/herald; else herald=.build/debug/herald; fi
fi
[ -x "$herald" ] || { echo "no herald binary at $herald (swift build first)" >&2; exit 1; }
python=.venv/bin/python
[ -x "$python" ] || python=python3

echo "herald $herald ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources || echo ', with uncommitted changes'))," \
    "$(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
HERALD_BIN=$herald HERALD_HOSTILE_REPORT=1 "$python" -m pytest -q -s -p no:cacheprovider Tests/interop/test_hostile_bodies.py
