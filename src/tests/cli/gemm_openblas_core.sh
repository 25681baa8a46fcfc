#!/bin/sh
# gemm_openblas_core.sh — OpenBLAS's runtime dispatch falls back to its SSE3 "Prescott" kernels
# on CPUs newer than the library (3x slower dgemm); gemm then re-runs itself with
# OPENBLAS_CORETYPE set from the CPU's AVX-512/AVX2 flags (gemm_blas.h). Checked through
# OPENBLAS_VERBOSE=2, which makes OpenBLAS print "Core: NAME" each time it loads: the last core
# is not a fallback when the CPU has AVX2; a core the user sets is used as it is, loaded once;
# the report is written once and is complete either way.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "skip: $F missing"; exit 77; }
unset OPENBLAS_CORETYPE
OPENBLAS_VERBOSE=2 "$FP4DIAG" gemm "$F" --device cpu -q -o "$tmp/a.json" >"$tmp/out" 2>&1 ||
    { cat "$tmp/out"; fail "gemm exit $?"; }
cores=$(grep -o 'Core: [A-Za-z0-9]*' "$tmp/out" | sed 's/Core: //')
[ -n "$cores" ] || { echo "skip: this OpenBLAS does not report its core (not a DYNAMIC_ARCH build)"; exit 77; }
first=$(echo "$cores" | head -1) last=$(echo "$cores" | tail -1)
if grep -q -w avx2 /proc/cpuinfo; then
    case "$last" in Prescott|Core2|Katmai|Coppermine|Northwood|Banias|unknown)
        fail "OpenBLAS still on its fallback core '$last' on an AVX2 machine (first: $first)";;
    esac
fi
echo "gemm_openblas_core: OpenBLAS core detected '$first', used '$last'"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['layers'] and r['summary']" \
    "$tmp/a.json" || fail "report incomplete"
OPENBLAS_CORETYPE=Haswell OPENBLAS_VERBOSE=2 "$FP4DIAG" gemm "$F" --device cpu -q -o "$tmp/b.json" \
    >"$tmp/out2" 2>&1 || fail "gemm with OPENBLAS_CORETYPE exit $?"
[ "$(grep -c 'Core: ' "$tmp/out2")" -eq 1 ] || { cat "$tmp/out2"; fail "a user's OPENBLAS_CORETYPE: loaded more than once"; }
grep -q 'Core: Haswell' "$tmp/out2" || { cat "$tmp/out2"; fail "a user's OPENBLAS_CORETYPE not used"; }
python3 "$(dirname "$0")/../../../scripts/check_golden.py" "$tmp/a.json" "$tmp/b.json" >"$tmp/d" 2>&1 ||
    { head "$tmp/d"; fail "reports differ beyond 1e-9 between OpenBLAS cores"; }
exit 0
