#!/bin/sh
# gemm_help.sh — gemm's --device: the products run through CBLAS (cpu) or cuBLAS (cuda); the
# help says so; --device cpu reports device "cpu"; --device cuda without a GPU exits 4 with one
# line and writes no report, and with a GPU reports device "cuda" with the CPU's numbers
# (within check_golden.py's 1e-9 relative: dgemm orders differ). The custom --format line says
# "one format, default e2m1"; --layers is listed once; grid's help lists only what changes a grid;
# rht's help does not offer --rht off|on (it is always both).
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$FP4DIAG" gemm --help >"$tmp/h" || fail "gemm --help exit $?"
grep -q "one format, default e2m1" "$tmp/h" || fail "no 'one format, default e2m1'"
[ "$(grep -c -- '--layers' "$tmp/h")" -eq 1 ] || fail "--layers listed more than once"
grep -q "cuda (cuBLAS" "$tmp/h" || fail "gemm help does not say cuda runs cuBLAS"
grep -q "quantized on the CPU either way" "$tmp/h" || fail "help does not say where quantizing runs"
# --mem-limit bounds the chunk decoder's memory (gemm_mem_limit.sh), and says so
grep -q -- '--mem-limit SIZE    working memory for decoding compressed chunks' "$tmp/h" ||
    fail "gemm help does not say what --mem-limit bounds"
F=testdata/gpt_gemm_small.h5
if [ -f "$F" ]; then
    "$FP4DIAG" gemm "$F" --device cpu -q -o "$tmp/cpu.json" || fail "gemm --device cpu exit $?"
    grep -q '"device":[[:space:]]*"cpu"' "$tmp/cpu.json" || fail "cpu report: device not cpu"
    "$FP4DIAG" gemm "$F" --device cuda -q >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ "$rc" -eq 4 ]; then
        grep -q "^fp4diag gemm: CUDA requested but" "$tmp/err" ||
            { cat "$tmp/err"; fail "gemm --device cuda message"; }
        [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "gemm --device cuda: not one line"
        [ -s "$tmp/out" ] && fail "gemm --device cuda without a GPU wrote a report"
        echo "gemm_help: no GPU here: --device cuda exits 4 (cuBLAS path not run)"
    else
        [ "$rc" -eq 0 ] || { cat "$tmp/err"; fail "gemm --device cuda exit $rc"; }
        grep -q '"device":[[:space:]]*"cuda"' "$tmp/out" || fail "cuda report: device not cuda"
        python3 "$(dirname "$0")/../../../scripts/check_golden.py" "$tmp/cpu.json" "$tmp/out" \
            >"$tmp/d" 2>&1 || { head -20 "$tmp/d"; fail "gemm cpu vs cuda reports differ"; }
    fi
fi
"$FP4DIAG" grid --help >"$tmp/g" || fail "grid --help exit $?"
for o in --scale --block --rht --layers --device --mem-limit --threads; do
    grep -q -- "^  $o" "$tmp/g" && fail "grid --help lists $o"
done
grep -q -- "--format" "$tmp/g" || fail "grid --help lacks --format"
# rht fixes --rht at both: its help does not offer off|on
"$FP4DIAG" rht --help >"$tmp/r" || fail "rht --help exit $?"
grep -q -- "--rht off|on|both" "$tmp/r" && fail "rht --help offers --rht off|on|both"
grep -q -- "--rht-size" "$tmp/r" || fail "rht --help lacks --rht-size"
exit 0
