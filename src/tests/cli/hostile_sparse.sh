#!/bin/sh
# hostile_sparse.sh — never-written storage whose fill value is 0 counts as zeros without
# being read or analysed value by value: a 4 TiB dataset with 1 MiB stored ends in seconds
# (timeout 60, under ASan too) with 2^40 elements and the SQNR of its stored values alone;
# chunked datasets with never-written chunks, and contiguous storage never allocated, give
# the very numbers of the same values written out (every config family, both block axes,
# small --mem-limit: many slabs, some all zeros); a non-zero fill value is read as values.
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
need_fixtures sparse.h5
f=$tmp/fx/sparse.h5

timeout 60 "$FP4DIAG" sqnr "$f" /big /small -o "$tmp/r.json" 2>"$tmp/err" ||
    fail "sqnr /big /small: exit $? (a hang is exit 124)"
python3 - "$tmp/r.json" <<'PY' || fail "/big: not the numbers of its stored chunk plus zeros"
import json, sys
r = json.load(open(sys.argv[1]))
t = {x["name"]: x["results"] for x in r["tensors"]}
assert not r["errors"], r["errors"]
for b, s in zip(t["/big"], t["/small"]):
    assert b["sqnr_db"] == s["sqnr_db"] and b["nmse"] == s["nmse"], (b, s)
    assert b["counts"]["elements"] == 2**40, b["counts"]
    assert b["counts"]["zero"] == 2**40 - 16 * 16384 + s["counts"]["zero"], b["counts"]
PY

# results of NAME equal those of NAME_full (every field but the name), each run alone (SR
# streams follow the selection index)
names="/mid /late /fill"
pair() { # ARGS... : each of $names against its _full copy
    for n in $names; do
        for m in "$n" "${n}_full"; do
            timeout 120 "$FP4DIAG" sqnr "$@" --mem-limit 1M --threads 2 "$f" "$m" \
                -o "$tmp/$(basename "$m").json" 2>"$tmp/err" || fail "$* $m: exit $?"
        done
        python3 - "$tmp/$(basename "$n").json" "$tmp/$(basename "$n")_full.json" <<'PY' ||
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert not a["errors"] and not b["errors"], (a["errors"], b["errors"])
assert a["tensors"][0]["results"] == b["tensors"][0]["results"]
PY
            fail "$* $n: never-written storage differs from written zeros"
    done
}
cfgs="--format=all --rht=both|--scale=nvfp4 --rht=both|--scale=nvfp4 --weight-2d|--scale=mxfp4 --rounding=sr|--scale=tensor --rht=on"
axes="-1 0"
# under ASan and valgrind (FP4T_SLOW): the config that exercises the most (tiles, SR, RHT off)
[ "$SLOW" = 1 ] && cfgs="--scale=nvfp4 --weight-2d --rounding=sr" && axes="-1" && names=/mid
IFS='|'
for c in $cfgs; do
    IFS=' '
    for axis in $axes; do
        set -- $c
        pair "$@" --axis "$axis"
    done
    IFS='|'
done
exit 0
