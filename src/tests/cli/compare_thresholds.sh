#!/bin/sh
# compare_thresholds.sh — `fp4diag compare` on the sample reports: identical reports exit 0,
# a 1 dB SQNR drop exits 1 and is named on stderr, and each threshold option is respected.
set -u
F=${FP4DIAG:-$PWD/fp4diag}
S=testdata/reports/sample_sqnr.json
G=testdata/reports/sample_gemm.json
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect() { # expect RC CMD...: run CMD, check its exit status
    want=$1; shift
    "$@" >"$T/out" 2>"$T/err"; rc=$?
    [ "$rc" -eq "$want" ] || { cat "$T/out" "$T/err"; fail "'$*' exited $rc, expected $want"; }
}
grep -q '"sqnr_db": 20.559776275034068,' "$S" || fail "fixture changed: regenerate the sed edits"

expect 0 "$F" compare "$S" "$S"
grep -q "0 regressed" "$T/out" || fail "identical reports: no '0 regressed' line"
expect 0 "$F" compare "$G" "$G"
expect 0 "$F" compare "$S" - <"$S"

# a 1 dB drop on one result
sed 's/"sqnr_db": 20.559776275034068,/"sqnr_db": 19.559776275034068,/' "$S" >"$T/drop.json"
expect 1 "$F" compare "$S" "$T/drop.json"
grep -q '^regression: /blocks/0/fc1/weight e2m1/fp32/16/rht=off/rtne: SQNR' "$T/err" ||
    fail "the regression is not named on stderr"
[ "$(grep -c '^regression:' "$T/err")" -eq 1 ] || fail "expected exactly one regression"
grep -q 'REGRESSED' "$T/out" || fail "the table does not mark the regression"
expect 1 "$F" compare --max-sqnr-drop 0.99 "$S" "$T/drop.json"
expect 0 "$F" compare --max-sqnr-drop 1.01 "$S" "$T/drop.json"
grep -q 'changed' "$T/out" || fail "a difference within threshold is not listed as changed"
# the reverse direction is a rise: never a regression
expect 0 "$F" compare "$T/drop.json" "$S"
# --json carries the verdict
expect 1 "$F" compare --json "$S" "$T/drop.json"
grep -q '"pass":	false' "$T/out" || fail "--json: no pass false"
grep -q '"verdict":	"regressed"' "$T/out" || fail "--json: no regressed row"

# alpha of the same result: 0.99331... -> -0.004, farther from 1: a regression
a=$(grep -m1 '"alpha":' "$S" | sed 's/.*"alpha": \([0-9.]*\),/\1/')
b=$(awk -v a="$a" 'BEGIN { printf "%.17g", a - 0.004 }')
sed "0,/\"alpha\": $a,/s//\"alpha\": $b,/" "$S" >"$T/alpha.json"
expect 1 "$F" compare "$S" "$T/alpha.json"
grep -q 'alpha.*farther from 1' "$T/err" || fail "alpha regression not named"
expect 0 "$F" compare --max-alpha-change 0.005 "$S" "$T/alpha.json"
# the other way, alpha closer to 1 (and the 1 dB rise above): improved, exit 0
expect 0 "$F" compare "$T/alpha.json" "$S"
grep -q 'improved' "$T/out" || fail "alpha closer to 1 is not listed as improved"
expect 0 "$F" compare "$T/drop.json" "$S"
grep -q '^overall: .* 1 of 16 results higher by more than 0.05 dB, 0 lower (mean .*); alpha closer to 1 by more than 0.001 in 0, farther in 0$' "$T/out" ||
    fail "no overall line for a rise naming the thresholds its counts are beyond"
# the counts are those beyond the thresholds in force, and the line says which
expect 0 "$F" compare --max-sqnr-drop 1.5 --max-alpha-change 0.01 "$T/drop.json" "$S"
grep -q '^overall: .* 0 of 16 results higher by more than 1.5 dB, 0 lower (mean .*); alpha closer to 1 by more than 0.01 in 0, farther in 0$' "$T/out" ||
    fail "the overall line does not name the thresholds given"
expect 0 "$F" compare --json "$T/drop.json" "$S"
grep -q '"higher":	1,' "$T/out" || fail "--json: overall.higher is not 1"

# B15 of the same result drops by 0.05
b15=$(grep -m1 '"bucket_ratio_15":' "$S" | sed 's/.*"bucket_ratio_15": \([0-9.]*\),/\1/')
b=$(awk -v a="$b15" 'BEGIN { printf "%.17g", a - 0.05 }')
sed "0,/\"bucket_ratio_15\": $b15,/s//\"bucket_ratio_15\": $b,/" "$S" >"$T/b15.json"
expect 1 "$F" compare "$S" "$T/b15.json"
grep -q 'B15' "$T/err" || fail "B15 regression not named"
expect 0 "$F" compare --max-bucket-drop 0.06 "$S" "$T/b15.json"

# gemm: one path 1 dB lower
sed '0,/"sqnr_db": 17.6,/s//"sqnr_db": 16.6,/' "$G" >"$T/gemm.json"
expect 1 "$F" compare "$G" "$T/gemm.json"
grep -q '^regression: /blocks/1/fc2 ufp4/fprop' "$T/err" || fail "gemm regression not named"
echo "ok"
