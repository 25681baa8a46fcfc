#!/bin/sh
# hostile_sparse.sh — never-written storage whose fill value is 0 counts as zeros without
# being read or analysed value by value: a 4 TiB dataset with 1 MiB stored ends in seconds
# (timeout 60, under ASan too) with 2^40 elements and the SQNR of its stored values alone;
# chunked datasets with never-written chunks, and contiguous storage never allocated, give
# the very numbers of the same values written out (every config family, both block axes,
# small --mem-limit: many slabs, some all zeros); a non-zero fill value is read as values.
# Each on the CPU (--device cpu) and, where a GPU is present, on CUDA too (--device cuda: the
# same 60 s for /big, the counts of the CPU's report and its SQNR within 1e-9 relative).
. "$(dirname "$0")/lib/hostile.sh"
need_command sqnr
need_fixtures sparse.h5
f=$tmp/fx/sparse.h5

devs=cpu
gpu_here && devs="cpu cuda"
for dev in $devs; do
    timeout 60 "$FP4DIAG" sqnr --device "$dev" "$f" /big /small -o "$tmp/r-$dev.json" \
        2>"$tmp/err" || fail "--device $dev sqnr /big /small: exit $? (a hang is exit 124)"
    python3 - "$tmp/r-$dev.json" <<'PY' || fail "--device $dev /big: not the numbers of its stored chunk plus zeros"
import json, sys
r = json.load(open(sys.argv[1]))
t = {x["name"]: x["results"] for x in r["tensors"]}
assert not r["errors"], r["errors"]
for b, s in zip(t["/big"], t["/small"]):
    assert b["sqnr_db"] == s["sqnr_db"] and b["nmse"] == s["nmse"], (b, s)
    assert b["counts"]["elements"] == 2**40, b["counts"]
    assert b["counts"]["zero"] == 2**40 - 16 * 16384 + s["counts"]["zero"], b["counts"]
PY
done
if [ "$devs" != cpu ]; then
    python3 - "$tmp/r-cpu.json" "$tmp/r-cuda.json" <<'PY' || fail "/big: --device cuda is not the CPU's report"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert b["config"]["device"] == "cuda", b["config"]
for ta, tb in zip(a["tensors"], b["tensors"]):
    for x, y in zip(ta["results"], tb["results"]):
        assert x["counts"] == y["counts"], (ta["name"], x["counts"], y["counts"])
        assert abs(x["sqnr_db"] - y["sqnr_db"]) <= 1e-9 * abs(x["sqnr_db"]), (x, y)
PY
fi

# results of NAME equal those of NAME_full (every field but the name), each run alone (SR
# streams follow the selection index)
names="/mid /late /fill"
pair() { # ARGS... : each of $names against its _full copy
    for n in $names; do
        for m in "$n" "${n}_full"; do
            timeout 120 "$FP4DIAG" sqnr --device "$dev" "$@" --mem-limit 1M --threads 2 "$f" "$m" \
                -o "$tmp/$(basename "$m").json" 2>"$tmp/err" || fail "--device $dev $* $m: exit $?"
        done
        python3 - "$tmp/$(basename "$n").json" "$tmp/$(basename "$n")_full.json" <<'PY' ||
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert not a["errors"] and not b["errors"], (a["errors"], b["errors"])
assert a["tensors"][0]["results"] == b["tensors"][0]["results"]
PY
            fail "--device $dev $* $n: never-written storage differs from written zeros"
    done
}
cfgs="--format=all --rht=both|--scale=nvfp4 --rht=both|--scale=nvfp4 --weight-2d|--scale=mxfp4 --rounding=sr|--scale=tensor --rht=on"
axes="-1 0"
# under ASan and valgrind (FP4T_SLOW): the config that exercises the most (tiles, SR, RHT off)
[ "$SLOW" = 1 ] && cfgs="--scale=nvfp4 --weight-2d --rounding=sr" && axes="-1" && names=/mid
for dev in $devs; do
    IFS='|'
    for c in $cfgs; do
        IFS=' '
        for axis in $axes; do
            set -- $c
            pair "$@" --axis "$axis"
        done
        IFS='|'
    done
    IFS=' '
done
exit 0
