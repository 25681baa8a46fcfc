#!/bin/sh
# compare_pair_keys.sh — an NVFP4 and an MXFP4 report pair nothing (scale and block differ):
# compare's note names the exact --ignore-key list that pairs them, computed from the results,
# also when part of it was given already; with that list every result pairs and no note
# follows (issue 29).
set -u
F=${FP4DIAG:-$PWD/fp4diag}
D=testdata/gpt_gemm_small.h5
[ -f "$D" ] || { echo "no $D"; exit 77; }
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$F" sqnr "$D" --format nvfp4 -o "$T/nv.json" 2>/dev/null || fail "nvfp4 run"
"$F" sqnr "$D" --format mxfp4 -o "$T/mx.json" 2>/dev/null || fail "mxfp4 run"
note="fp4diag compare: note: no result of $T/nv.json pairs with one of $T/mx.json: they differ in key fields; --ignore-key scale,block puts them side by side"
"$F" compare "$T/nv.json" "$T/mx.json" >"$T/out" 2>"$T/err"
[ $? -eq 1 ] || fail "nothing paired: expected exit 1"
grep -qxF "$note" "$T/err" || { cat "$T/err"; fail "no exact --ignore-key note"; }
"$F" compare --ignore-key scale "$T/nv.json" "$T/mx.json" >"$T/out" 2>"$T/err"
grep -qxF "$note" "$T/err" || { cat "$T/err"; fail "--ignore-key scale: no exact note"; }
"$F" compare --ignore-key scale,block "$T/nv.json" "$T/mx.json" >"$T/out" 2>"$T/err"
grep -q 'no result of' "$T/err" && fail "a note although everything paired"
grep -q '(0 missing from NEW), 0 added' "$T/out" || { cat "$T/out"; fail "not all paired"; }
exit 0
