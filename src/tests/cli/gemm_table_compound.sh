#!/bin/sh
# gemm_table_compound.sh — the gemm table shows the compound gains (prod eta, exp(-sum delta))
# exactly when the JSON has them: with --layers K, not without.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "skip: $F missing"; exit 77; }
"$FP4DIAG" gemm "$F" -v -o "$tmp/a.json" 2>"$tmp/a.err" || fail "gemm exit $?"
grep -q '^pooled' "$tmp/a.err" || fail "no pooled rows for two layers"
grep -q 'prod eta' "$tmp/a.err" && fail "table shows compounds without --layers"
grep -q '"compound"' "$tmp/a.json" && fail "JSON has compounds without --layers"
"$FP4DIAG" gemm "$F" -v --layers 12 -o "$tmp/b.json" 2>"$tmp/b.err" || fail "gemm --layers exit $?"
grep -q 'over 12 layers: prod eta' "$tmp/b.err" || fail "table lacks compounds with --layers 12"
grep -q '"compound"' "$tmp/b.json" || fail "JSON lacks compounds with --layers 12"
exit 0
