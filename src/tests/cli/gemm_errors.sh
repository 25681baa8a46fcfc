#!/bin/sh
# gemm_errors.sh — mismatched operand shapes exit 3 naming both shapes; a missing group exits 3;
# bad recipe or recipe-fixed options exit 2; nothing on stdout in each case.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
check() { # expected-rc, expected-substring, args...
    want=$1 msg=$2; shift 2
    "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq "$want" ] || { echo "$*: exit $rc, want $want"; cat "$tmp/err"; exit 1; }
    grep -qF -- "$msg" "$tmp/err" || { echo "$*: stderr lacks '$msg':"; cat "$tmp/err"; exit 1; }
    [ ! -s "$tmp/out" ] || { echo "$*: stdout not empty"; exit 1; }
}
# qkv: x 1024x256, w 768x256, dy 1024x768; proj: w 256x256
check 3 "w is 256x256 but dy is 1024x768" gemm --x "$F:/qkv/x" --w "$F:/proj/w" --dy "$F:/qkv/dy"
check 3 "w is 256x256 but dy is 1024x768" gemm --x "$F:/qkv/x" --w "$F:/proj/w" --dy "$F:/qkv/dy" --path dgrad
check 3 "/nope/x" gemm "$F" /nope
check 2 "recipe" gemm "$F" /qkv --recipe mxfp4
check 2 "--recipe custom" gemm "$F" /qkv --recipe e2m1 --sr all
check 2 "--dy" gemm --x "$F:/qkv/x" --w "$F:/qkv/w"
# operands from --x/--w only, FPROP only: fine
"$FP4DIAG" gemm --x "$F:/qkv/x" --w "$F:/qkv/w" --path fprop -q >"$tmp/out" || { echo "fprop by spec: exit $?"; exit 1; }
grep -q '"fprop"' "$tmp/out" || { echo "no fprop in report"; exit 1; }
exit 0
