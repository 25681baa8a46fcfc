#!/bin/sh
# sqnr_usage.sh — usage errors exit 2 with one line, input errors exit 3 with no report on
# stdout; --help names the defaults.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
expect() { # expect RC ARGS...
    want=$1; shift
    "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq "$want" ] || { echo "fp4diag $*: exit $rc, want $want"; cat "$tmp/err"; exit 1; }
    if [ "$want" -ne 0 ]; then
        [ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "fp4diag $*: want one line:"; cat "$tmp/err"; exit 1; }
        [ ! -s "$tmp/out" ] || { echo "fp4diag $*: output on stdout"; exit 1; }
    fi
}
expect 2 sqnr
expect 2 sqnr "$F" --bogus
expect 2 sqnr "$F" --format e9m9
expect 2 sqnr "$F" --scale fp32 --weight-2d
expect 2 sqnr "$F" --mem-limit lots
expect 2 sqnr "$F" --device tpu
expect 2 bias "$F" --rht maybe
expect 2 rht "$F" --rht off
expect 2 grid "$F"
expect 3 sqnr "$tmp/missing.h5"
expect 3 sqnr "$F" /no/such/dataset
# a bad axis fails every tensor: the report (all errors) is still written, exit 3
"$FP4DIAG" buckets "$F" --axis 5 -q >"$tmp/out" 2>/dev/null
rc=$?
[ "$rc" -eq 3 ] || { echo "--axis 5: exit $rc, want 3"; exit 1; }
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert not r["tensors"] and len(r["errors"]) == 6, r["errors"]' "$tmp/out" || exit 1
# the report records the command line as typed (getopt_long permutes its own copy)
"$FP4DIAG" sqnr "$F" /qkv/w --format e2m1 -q >"$tmp/out" || { echo "sqnr exit $?"; exit 1; }
python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["argv"]; assert a == ["fp4diag","sqnr",sys.argv[2],"/qkv/w","--format","e2m1","-q"], a' "$tmp/out" "$F" || exit 1
expect 0 sqnr --help
grep -q "e2m1,e1m2,int4" "$tmp/out" || { echo "sqnr --help does not give the default formats"; exit 1; }
grep -q -- "--mem-limit" "$tmp/out" || { echo "sqnr --help lacks --mem-limit"; exit 1; }
for c in bias buckets rht grid; do
    expect 0 help "$c"
    grep -q "usage: fp4diag $c" "$tmp/out" || { echo "help $c: no usage line"; exit 1; }
done
exit 0
