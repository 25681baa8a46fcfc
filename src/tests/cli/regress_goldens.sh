#!/bin/sh
# regress_goldens.sh — scripts/regress.sh: exits 2 with a clear message when the goldens are
# missing; passes against goldens made by this build; exits 1 when a golden SQNR is 1 dB higher
# than what the build measures. Skips the last two until `fp4diag sqnr`/`rht` work on testdata.
set -u
F=${FP4DIAG:-$PWD/fp4diag}
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
GOLDEN_DIR="$T/none" BUILD="$T/build" FP4DIAG="$F" sh scripts/regress.sh 2>"$T/err"
rc=$?
[ "$rc" -eq 2 ] || { cat "$T/err"; fail "missing goldens: exit $rc, expected 2"; }
grep -q 'golden report(s) missing' "$T/err" || fail "missing goldens: no clear message"

mkdir -p "$T/g"
for job in "sqnr ckpt_small" "rht gemm_small"; do
    set -- $job
    [ -s "testdata/gpt_$2.h5" ] || { echo "skip: testdata/gpt_$2.h5 not there yet"; exit 77; }
    if ! "$F" "$1" "testdata/gpt_$2.h5" -o "$T/g/$1_$2.json" 2>"$T/err"; then
        echo "skip: 'fp4diag $1 testdata/gpt_$2.h5' does not work yet: $(head -n 1 "$T/err")"
        exit 77
    fi
done
GOLDEN_DIR="$T/g" BUILD="$T/build" FP4DIAG="$F" sh scripts/regress.sh >"$T/out" 2>&1 ||
    { cat "$T/out"; fail "regress against this build's own reports failed"; }
# raise the first finite SQNR of the sqnr golden by 1 dB: the build now "dropped" 1 dB
python3 - "$T/g/sqnr_ckpt_small.json" <<'PY' || fail "could not edit the golden"
import json, sys
p = sys.argv[1]; d = json.load(open(p))
r = next(r for t in d["tensors"] for r in t["results"] if r.get("sqnr_db") is not None)
r["sqnr_db"] += 1.0
json.dump(d, open(p, "w"))
PY
GOLDEN_DIR="$T/g" BUILD="$T/build" FP4DIAG="$F" sh scripts/regress.sh >"$T/out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || { cat "$T/out"; fail "a 1 dB drop: regress exit $rc, expected 1"; }
grep -q '^regression:' "$T/out" || fail "the regression is not named"
echo "ok"
