#!/bin/sh
# verbosity_all.sh — every command takes -q and -v with one meaning (-q: no table; -v: the
# table even when stderr/stdout is not a terminal; -vv adds the HDF5 error stack), and
# compare writes its --json comparison with -o FILE.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for c in sqnr bias buckets; do
    "$FP4DIAG" $c "$F" /qkv/w --format e2m1 -q >"$tmp/r.json" 2>"$tmp/err" || fail "$c -q exit $?"
    [ ! -s "$tmp/err" ] || fail "$c -q printed on stderr"
    "$FP4DIAG" $c "$F" /qkv/w --format e2m1 -v >/dev/null 2>"$tmp/err" || fail "$c -v exit $?"
    [ -s "$tmp/err" ] || fail "$c -v: no table"
done
"$FP4DIAG" rht "$F" /qkv/w --format e2m1 --rht both -q >"$tmp/rht.json" 2>"$tmp/err" || fail "rht -q"
[ ! -s "$tmp/err" ] || fail "rht -q printed on stderr"
"$FP4DIAG" grid -q >/dev/null 2>"$tmp/err" || fail "grid -q"
[ ! -s "$tmp/err" ] || fail "grid -q printed"
"$FP4DIAG" grid -v >/dev/null 2>"$tmp/err" || fail "grid -v"
[ -s "$tmp/err" ] || fail "grid -v: no table"
"$FP4DIAG" gemm "$F" -q >"$tmp/g.json" 2>"$tmp/err" || fail "gemm -q"
[ ! -s "$tmp/err" ] || fail "gemm -q printed"
"$FP4DIAG" gemm "$F" -v >/dev/null 2>"$tmp/err" || fail "gemm -v"
[ -s "$tmp/err" ] || fail "gemm -v: no table"
# ls: the table is the default (-v the same), -q prints nothing, -vv adds HDF5's error stack
"$FP4DIAG" ls "$F" >"$tmp/t1" || fail "ls"
"$FP4DIAG" ls -v "$F" >"$tmp/t2" || fail "ls -v"
cmp -s "$tmp/t1" "$tmp/t2" || fail "ls -v differs from ls"
grep -q '^name' "$tmp/t1" || fail "ls: no table"
"$FP4DIAG" ls -q "$F" >"$tmp/out" 2>&1 || fail "ls -q exit $?"
[ ! -s "$tmp/out" ] || fail "ls -q printed"
"$FP4DIAG" ls -q "$tmp/absent.h5" >/dev/null 2>&1; [ $? -eq 3 ] || fail "ls -q missing file: not 3"
"$FP4DIAG" ls -v "$F" /no/such >/dev/null 2>"$tmp/e1"; [ $? -eq 3 ] || fail "ls -v /no/such"
"$FP4DIAG" ls -vv "$F" /no/such >/dev/null 2>"$tmp/e2"; [ $? -eq 3 ] || fail "ls -vv /no/such"
[ "$(wc -l <"$tmp/e1")" -eq 1 ] || { cat "$tmp/e1"; fail "ls -v: HDF5 stack shown"; }
# compare: -q no table, -v accepted, -o FILE writes the JSON comparison
"$FP4DIAG" compare -q "$tmp/r.json" "$tmp/r.json" >"$tmp/out" 2>&1 || fail "compare -q exit $?"
[ ! -s "$tmp/out" ] || fail "compare -q printed"
"$FP4DIAG" compare -v "$tmp/r.json" "$tmp/r.json" >"$tmp/out" || fail "compare -v"
grep -q 'results:' "$tmp/out" || fail "compare -v: no summary line"
"$FP4DIAG" compare -o "$tmp/cmp.json" "$tmp/r.json" "$tmp/r.json" >"$tmp/out" || fail "compare -o"
[ ! -s "$tmp/out" ] || fail "compare -o also wrote stdout"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["schema"] == "fp4diag.compare/1" and d["pass"]' "$tmp/cmp.json" || fail "compare -o: bad JSON"
"$FP4DIAG" compare -o "$tmp/nodir/x.json" "$tmp/r.json" "$tmp/r.json" >/dev/null 2>&1
[ $? -eq 3 ] || fail "compare -o into a missing directory: not exit 3"
[ ! -e "$tmp/nodir" ] || fail "compare -o created a directory"
exit 0
