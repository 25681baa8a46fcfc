#!/bin/sh
# options_effect.sh — formats users name and options that would change nothing:
# --format nvfp4 / mxfp4 are E2M1 with NVFP4 / MXFP4 scales (the results name format and scale
# apart; numbers equal --format e2m1 --scale nvfp4|mxfp4); repeated formats merged; gemm
# --recipe nvfp4 equals --recipe e2m1 --scale nvfp4 --weight-2d. Usage errors (exit 2, one
# line, one message per rule): --sr-bits without --rounding sr, --rht-size/--rht-signs without
# --rht, --mx-rule without mxfp4 scales (gemm: without SR/RHT/mxfp4 in the recipe), --block 7
# under every scale, --sr-bits 0 and 16 alike, --scale tensor --block 32, a --scale against
# nvfp4/mxfp4. Seeds: decimal only, exact above 2^53. Tables mark tensors holding NaN/Inf and
# explain the saturated column.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect() { # expect PATTERN ARGS...: exit 2, one stderr line matching PATTERN, nothing on stdout
    pat=$1; shift
    "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 2 ] || { cat "$tmp/err"; fail "fp4diag $*: exit $rc, want 2"; }
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "fp4diag $*: want one line"; }
    [ ! -s "$tmp/out" ] || fail "fp4diag $*: output on stdout"
    grep -q -- "$pat" "$tmp/err" || { cat "$tmp/err"; fail "fp4diag $*: no '$pat'"; }
}
"$FP4DIAG" sqnr "$F" /qkv/w --format NVFP4,mxfp4,e1m2,nvfp4 -q -o "$tmp/a.json" || fail "aliases"
"$FP4DIAG" sqnr "$F" /qkv/w --format e2m1 --scale nvfp4 -q -o "$tmp/nv.json" || fail "nvfp4"
"$FP4DIAG" sqnr "$F" /qkv/w --format e2m1 --scale mxfp4 -q -o "$tmp/mx.json" || fail "mxfp4"
python3 - "$tmp/a.json" "$tmp/nv.json" "$tmp/mx.json" <<'PY' || fail "aliases' results"
import json, sys
a, nv, mx = (json.load(open(p)) for p in sys.argv[1:4])
r = a["summary"]["results"]
assert [(x["format"], x["scale"], x["block"]) for x in r] == [("e2m1", "nvfp4", 16), ("e2m1", "mxfp4", 32), ("e1m2", "fp32", 16)], r
assert a["config"]["scales"] == ["nvfp4", "mxfp4", "fp32"]
for x, y in ((r[0], nv["summary"]["results"][0]), (r[1], mx["summary"]["results"][0])):
    assert x["sqnr_db"] == y["sqnr_db"] and x["histogram"] == y["histogram"]
assert "scales" not in nv["config"]
PY
"$FP4DIAG" sqnr "$F" /qkv/w --format e2m1,E2M1,e2m1 -q -o "$tmp/d.json" || fail "repeats"
python3 -c "import json,sys; r=json.load(open('$tmp/d.json')); assert len(r['summary']['results']) == 1 and r['config']['formats'] == ['e2m1']" ||
    fail "repeated formats not merged"
"$FP4DIAG" gemm "$F" /qkv --recipe nvfp4 -q -o "$tmp/g1.json" || fail "--recipe nvfp4"
"$FP4DIAG" gemm "$F" /qkv --recipe e2m1 --scale nvfp4 --weight-2d -q -o "$tmp/g2.json" || fail "e2m1 recipe"
python3 - "$tmp/g1.json" "$tmp/g2.json" <<'PY' || fail "--recipe nvfp4 is not the full NVFP4 recipe"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["config"]["recipe"] == "nvfp4" and a["config"]["scale"] == "nvfp4" and a["config"]["weight_2d"] is True
assert a["config"]["rht"] == {"fprop": "off", "dgrad": "off", "wgrad": "on"}
assert a["config"]["rounding"]["dy"] == "sr"
assert [p["sqnr_db"] for p in a["layers"][0]["paths"]] == [p["sqnr_db"] for p in b["layers"][0]["paths"]]
PY
expect "--sr-bits needs --rounding sr" sqnr "$F" --sr-bits 8
expect "--rht-size needs --rht on or both" bias "$F" --rht-size 32
expect "--rht-signs needs --rht on or both" sqnr "$F" --rht-signs none
expect "--mx-rule needs mxfp4 scales" buckets "$F" --mx-rule rceil --scale nvfp4
for s in fp32 nvfp4 mxfp4 tensor; do
    expect "--block: '7' must be a power of two" sqnr "$F" --scale "$s" --block 7
done
expect "'0' must be 24 or 8" sqnr "$F" --rounding sr --sr-bits 0
expect "'16' must be 24 or 8" sqnr "$F" --rounding sr --sr-bits 16
expect "--block 32 has no effect with --scale tensor" sqnr "$F" --scale tensor --block 32
expect "conflicts with --scale mxfp4" sqnr "$F" --format nvfp4 --scale mxfp4
expect "--block 32 conflicts with --format nvfp4" sqnr "$F" --format nvfp4 --block 32
expect "--sr-bits needs SR on some operand" gemm "$F" --recipe custom --sr none --sr-bits 8
expect "--rht-size needs RHT on some path" gemm "$F" --recipe custom --rht-size 32
expect "--mx-rule needs mxfp4 scales" gemm "$F" --mx-rule rceil
expect "conflicts with --scale mxfp4" gemm "$F" --recipe nvfp4 --scale mxfp4
# accepted when they matter
"$FP4DIAG" sqnr "$F" /qkv/w --rounding sr --sr-bits 8 --rht on --rht-size 32 --rht-signs none \
    --format mxfp4 --mx-rule rceil -q >/dev/null || fail "options with their effect refused"
# seeds
expect "--seed: ' -1' is not an unsigned decimal integer" sqnr "$F" --seed ' -1'
expect "--seed: '+1' is not" sqnr "$F" --seed +1
"$FP4DIAG" sqnr "$F" /qkv/w --seed 010 -q -o "$tmp/s10.json" || fail "--seed 010"
python3 -c "import json; assert json.load(open('$tmp/s10.json'))['config']['seed'] == 10" || fail "010 is not 10"
"$FP4DIAG" sqnr "$F" /qkv/w --seed 18446744073709551615 -q -o "$tmp/s.json" || fail "big seed"
python3 -c "import json; assert json.load(open('$tmp/s.json'))['config']['seed'] == 18446744073709551615" ||
    fail "a seed above 2^53 not stored exactly"
"$FP4DIAG" gemm "$F" /qkv --seed 9007199254740993 -q -o "$tmp/gs.json" || fail "gemm big seed"
python3 -c "import json; assert json.load(open('$tmp/gs.json'))['config']['seed'] == 9007199254740993" ||
    fail "gemm: a seed above 2^53 not stored exactly"
expect "below 2^64" sqnr "$F" --seed 18446744073709551616
# the table marks non-finite inputs and explains `saturated`
"$FP4DIAG" buckets "$F" /qkv/w -v -o /dev/null 2>"$tmp/tb" || fail "buckets table"
grep -q "^saturated: .*fp32 rounding leftovers" "$tmp/tb" || { cat "$tmp/tb"; fail "saturated not explained"; }
if python3 -c 'import h5py, numpy' 2>/dev/null; then
    python3 - "$tmp/nf.h5" <<'PY'
import sys, h5py, numpy as np
a = np.random.default_rng(2).standard_normal((16, 32)).astype(np.float32)
a[0, 0] = np.nan; a[1, 1] = np.inf; a[2, 2] = np.nan
with h5py.File(sys.argv[1], "w") as f:
    f["w"] = a
    f["ok"] = np.ones((16, 32), dtype=np.float32)
PY
    "$FP4DIAG" sqnr "$tmp/nf.h5" --format e2m1 -v -o /dev/null 2>"$tmp/tn" || fail "non-finite run"
    grep -q "^/w .*non-finite input: 2 NaN, 1 Inf" "$tmp/tn" || { cat "$tmp/tn"; fail "non-finite not marked"; }
    grep "^/ok " "$tmp/tn" | grep -q "non-finite" && fail "a finite tensor marked"
fi
exit 0
