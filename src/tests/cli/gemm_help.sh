#!/bin/sh
# gemm_help.sh — gemm is CPU-only: its help does not offer --device cuda as working, and
# --device cuda exits 4 saying so; the custom --format line says "one format, default e2m1";
# --layers is listed once; grid's help lists only what changes a grid.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$FP4DIAG" gemm --help >"$tmp/h" || fail "gemm --help exit $?"
grep -q "one format, default e2m1" "$tmp/h" || fail "no 'one format, default e2m1'"
[ "$(grep -c -- '--layers' "$tmp/h")" -eq 1 ] || fail "--layers listed more than once"
grep -- '--device' "$tmp/h" | grep -q 'cpu, cuda or auto' && fail "gemm help offers cuda"
grep -q "gemm runs on the CPU only" "$tmp/h" || fail "help does not say CPU only"
grep -q -- '--mem-limit' "$tmp/h" && fail "gemm help lists --mem-limit (unused)"
F=testdata/gpt_gemm_small.h5
if [ -f "$F" ]; then
    "$FP4DIAG" gemm "$F" --device cuda >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 4 ] || fail "gemm --device cuda exit $rc, want 4"
    grep -q "gemm runs on the CPU only (the GPU backend covers sqnr/bias/buckets/rht)" "$tmp/err" ||
        { cat "$tmp/err"; fail "gemm --device cuda message"; }
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "gemm --device cuda: not one line"
fi
"$FP4DIAG" grid --help >"$tmp/g" || fail "grid --help exit $?"
for o in --scale --block --rht --layers --device --mem-limit --threads; do
    grep -q -- "^  $o" "$tmp/g" && fail "grid --help lists $o"
done
grep -q -- "--format" "$tmp/g" || fail "grid --help lacks --format"
exit 0
