#!/bin/sh
# compare_errors.sh — `fp4diag compare` exits 3 on garbage, a missing file, a wrong schema or
# reports of incomparable commands (gemm vs an analysis report); 2 on a bad command line, in
# one line; --help prints the usage.
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
expect 3 "$F" compare "$S" testdata/reports/sample_gemm.json
grep -q 'not comparable' "$T/err" || fail "different commands: no clear message"
# sqnr and rht reports hold the same result objects: compared by key (rht=on rows are added)
expect 0 "$F" compare "$S" testdata/reports/sample_rht.json
grep -q '^analysis reports:.* 0 regressed' "$T/out" || fail "sqnr vs rht not compared"
for bad in "$S" "--max-sqnr-drop -1 $S $S" "--bogus $S $S" "-x $S $S" "--ignore-key nope $S $S" "$S $S --max-sqnr-drop"; do
    # shellcheck disable=SC2086
    expect 2 "$F" compare $bad
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "compare $bad: usage error is not one line"
    [ ! -s "$T/out" ] || fail "compare $bad: output on stdout"
done
grep -q "see 'fp4diag compare --help'" "$T/err" || fail "no hint"
# one option parser: the analysis options are named as not applying, a missing value hints
expect 2 "$F" compare --format e2m1 "$S" "$S"
grep -q -- "--format does not apply to compare" "$T/err" || fail "--format: $(cat "$T/err")"
expect 2 "$F" compare "$S" "$S" --max-bucket-drop
grep -q -- "'--max-bucket-drop' needs a value; see 'fp4diag compare --help'" "$T/err" ||
    fail "missing value: $(cat "$T/err")"
# -o FILE implies --json; --all lists the same rows too
expect 0 "$F" compare --all -o "$T/cmp.json" "$S" "$S"
grep -q '"schema":[[:space:]]*"fp4diag.compare/1"' "$T/cmp.json" || fail "-o does not write JSON"
grep -q '"verdict":[[:space:]]*"same"' "$T/cmp.json" || fail "--all does not list same rows"
expect 0 "$F" compare --help
grep -q 'usage: fp4diag compare' "$T/out" || fail "--help does not print the usage"
expect 0 "$F" help compare
# a table that cannot be written (a full disk) is an error, as for every command
if [ -w /dev/full ]; then
    "$F" compare "$S" "$S" >/dev/full 2>"$T/err"; rc=$?
    [ "$rc" -eq 3 ] || fail "compare > /dev/full exited $rc, expected 3"
    grep -q 'stdout: write error: No space left on device' "$T/err" ||
        fail "compare > /dev/full: $(cat "$T/err")"
fi
echo "ok"
