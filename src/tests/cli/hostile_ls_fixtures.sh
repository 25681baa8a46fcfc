#!/bin/sh
# hostile_ls_fixtures.sh — `ls` over awkward but valid HDF5 (scripts/make_hostile.py): string,
# compound and filter-less datasets are listed with a note, zero-sized and scalar datasets
# listed, sizes that overflow 64 bits shown as unknown (JSON null) rather than wrapped; a
# missing dataset exits 3 with one line. Then byte flips all over the small fixtures (dense in
# metadata): each run succeeds or fails cleanly (exit 3, one line), never crashes.
. "$(dirname "$0")/lib/hostile.sh"
need_fixtures
fx=$tmp/fx

run ls "$fx/mixed.h5"
[ "$rc" -eq 0 ] || fail "ls mixed.h5: exit $rc"
grep -q '^/a/name .*string class is not supported' "$tmp/out" || fail "string dataset not noted"
grep -q '^/a/blosc .*filter .*32001.* is not available' "$tmp/out" || fail "missing filter not noted"
grep -q '^/c/compound .*compound class is not supported' "$tmp/out" || fail "compound not noted"
grep -q '^/b/good .*bf16' "$tmp/out" || fail "good bf16 dataset missing"

run ls --json "$fx/shapes.h5"
[ "$rc" -eq 0 ] || fail "ls --json shapes.h5: exit $rc"
python3 - "$tmp/out" <<'PY' || fail "ls --json shapes.h5: wrong sizes"
import json, sys
d = {x["name"]: x for x in json.load(open(sys.argv[1]))["datasets"]}
assert d["/empty"]["shape"] == [0, 16] and d["/empty"]["logical_bytes"] == 0, d["/empty"]
assert d["/scalar"]["shape"] == [] and d["/scalar"]["logical_bytes"] == 8, d["/scalar"]
for k in ("/huge", "/wide"):   # 2^70 elements; 2^62 elements of 2 bytes
    assert d[k]["shape"] is None and d[k]["logical_bytes"] is None, d[k]
    assert "overflows" in d[k]["problem"], d[k]
PY
run ls "$fx/values.h5"
[ "$rc" -eq 0 ] || fail "ls values.h5: exit $rc"

clean_fail "$fx/mixed.h5: /a/nope: no such dataset or group" ls "$fx/mixed.h5" /a/nope
clean_fail "$fx/mixed.h5: /a/good/x: no such dataset or group" ls "$fx/mixed.h5" /a/good/x

# Byte flips over every small fixture.
step=97; [ "$SLOW" = 1 ] && step=1500
for f in small mixed shapes; do
    size=$(wc -c <"$fx/$f.h5")
    flips "$fx/$f.h5" "$tmp/flips-$f" $(seq 3 $step $((size - 1)))
    for g in "$tmp/flips-$f"/*.h5; do no_crash "$g" ls --json "$g"; done
done
exit 0
