#!/bin/sh
# compare_errors.sh — `fp4diag compare` exits 3 on garbage, a missing file, a wrong schema or
# reports of different commands; 2 on a bad command line; --help prints the usage.
set -u
F=${FP4DIAG:-$PWD/fp4diag}
S=testdata/reports/sample_sqnr.json
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect() {
    want=$1; shift
    "$@" >"$T/out" 2>"$T/err"; rc=$?
    [ "$rc" -eq "$want" ] || { cat "$T/out" "$T/err"; fail "'$*' exited $rc, expected $want"; }
}
echo 'this is not JSON' >"$T/garbage.json"
expect 3 "$F" compare "$S" "$T/garbage.json"
grep -q 'garbage.json: not JSON' "$T/err" || fail "garbage: no clear message"
expect 3 "$F" compare "$T/garbage.json" "$S"
: >"$T/empty.json"
expect 3 "$F" compare "$S" "$T/empty.json"
expect 3 "$F" compare "$S" "$T/absent.json"
sed 's/fp4diag.report\/1/fp4diag.report\/9/' "$S" >"$T/schema.json"
expect 3 "$F" compare "$S" "$T/schema.json"
grep -q 'schema' "$T/err" || fail "wrong schema: no clear message"
expect 3 "$F" compare "$S" testdata/reports/sample_rht.json
grep -q 'not comparable' "$T/err" || fail "different commands: no clear message"
expect 3 "$F" compare "$S" testdata/reports/sample_gemm.json
expect 2 "$F" compare "$S"
expect 2 "$F" compare --max-sqnr-drop -1 "$S" "$S"
expect 2 "$F" compare --bogus "$S" "$S"
expect 0 "$F" compare --help
grep -q 'usage: fp4diag compare' "$T/out" || fail "--help does not print the usage"
expect 0 "$F" help compare
echo "ok"
