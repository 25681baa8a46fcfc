#!/bin/sh
# options_conflicts.sh — an option that would be silently ignored is a usage error (exit 2,
# one line on stderr naming the conflict, nothing on stdout): --block against the fixed block
# of nvfp4/mxfp4, --weight-2d without nvfp4, gemm --rht/--rounding/--axis (the recipe decides),
# several formats for gemm --recipe custom, grid given analysis options. Also: --rht-size
# messages, case-insensitive format names (canonical in the report), the --help hint.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect() { # expect RC PATTERN ARGS...: exit RC; for RC != 0 one stderr line matching PATTERN
    want=$1; pat=$2; shift 2
    "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq "$want" ] || { cat "$tmp/err"; fail "fp4diag $*: exit $rc, want $want"; }
    [ "$want" -eq 0 ] && return 0
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "fp4diag $*: want one line"; }
    [ ! -s "$tmp/out" ] || fail "fp4diag $*: output on stdout"
    grep -q -- "$pat" "$tmp/err" || { cat "$tmp/err"; fail "fp4diag $*: no '$pat'"; }
}
expect 2 "--block 32 conflicts with --scale nvfp4" sqnr "$F" --scale nvfp4 --block 32
expect 2 "--block 16 conflicts with --scale mxfp4" bias "$F" --block 16 --scale mxfp4
expect 0 "" sqnr "$F" /qkv/w --scale nvfp4 --block 16 -q
expect 0 "" sqnr "$F" /qkv/w --scale mxfp4 --block 32 -q
expect 2 "--weight-2d needs --scale nvfp4" sqnr "$F" --scale mxfp4 --weight-2d
expect 2 "--weight-2d needs --scale nvfp4" gemm "$F" --weight-2d
for o in "--rht on" "--rounding sr" "--axis 0"; do
    # shellcheck disable=SC2086
    expect 2 "use --recipe custom with --rht-scope/--sr" gemm "$F" $o
done
expect 2 "--recipe custom takes one --format" gemm "$F" --recipe custom --format e2m1,int4
expect 2 "--format, --rht-scope and --sr need --recipe custom" gemm "$F" --format e1m2
expect 0 "" gemm "$F" --mem-limit 1G -q -o "$tmp/g.json" # the chunk decoder's bound (gemm_mem_limit.sh)
for o in "--scale nvfp4" "--rht on" "--block 32" "--layers 3" "--device cpu" "--seed 3"; do
    # shellcheck disable=SC2086
    expect 2 "does not apply to grid" grid $o
done
expect 0 "" grid --format E2M1,INT4 -q
python3 -c 'import json,sys; g=json.load(open(sys.argv[1])); f=[x["format"] for x in g["grids"]]; assert f == ["e2m1","int4"], f' "$tmp/out" || fail "grid formats not canonical"
for s in 12 8 512 0 x 17; do
    expect 2 "'$s': RHT size must be a power of two in \[16, 256\]" sqnr "$F" --rht on --rht-size "$s"
done
expect 0 "" sqnr "$F" /qkv/w --format E2M1,Int4 -q
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["config"]["formats"] == ["e2m1","int4"], r["config"]["formats"]; assert {x["format"] for x in r["tensors"][0]["results"]} == {"e2m1","int4"}' "$tmp/out" || fail "report formats not canonical"
for c in sqnr bias buckets rht grid gemm ls compare; do
    expect 2 "see 'fp4diag $c --help'" "$c" --no-such-option
done
expect 2 "see 'fp4diag sqnr --help'" sqnr
exit 0
