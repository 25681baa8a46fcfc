#!/bin/sh
# fuzz_merge_seeds.sh — fuzz_merge's seeds (src/tests/fuzz/seeds/merge/) are parts this build's
# `merge` accepts: each seed, split at its form-feed lines ("\n\f\n", as fuzz_merge.c splits
# it), merges with exit 0, and holds two or more parts of one run. A stale seed (a report of an
# older build: refused as edited or of another build) starts the fuzzer from inputs rejected at
# the first check; regenerate them with scripts/make_merge_seeds.sh.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
for s in src/tests/fuzz/seeds/merge/*; do
    name=$(basename "$s")
    rm -f "$tmp"/p*.json
    k=$(python3 - "$s" "$tmp" <<'PY'
import os, sys
parts = open(sys.argv[1], "rb").read().split(b"\n\f\n")
for i, p in enumerate(parts):
    open(os.path.join(sys.argv[2], "p%d.json" % i), "wb").write(p)
print(len(parts))
PY
) || { echo "FAIL: $name: cannot split"; fail=1; continue; }
    [ "$k" -ge 2 ] || { echo "FAIL: $name: $k part(s), want 2 or more"; fail=1; continue; }
    if ! "$FP4DIAG" merge "$tmp"/p*.json -q -o "$tmp/merged.json" 2>"$tmp/err"; then
        echo "FAIL: seed $name: merge refuses it (stale: scripts/make_merge_seeds.sh regenerates): $(cat "$tmp/err")"
        fail=1
    fi
    n=$((n + 1))
done
[ "$n" -ge 5 ] || { echo "FAIL: only $n merge seeds"; fail=1; }
exit $fail
