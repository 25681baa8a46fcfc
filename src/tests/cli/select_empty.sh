#!/bin/sh
# select_empty.sh — an empty selection pattern ('') is a usage error (exit 2, one line naming
# it, nothing on stdout, no -o report written), never "every tensor" (SPEC §10 "Selection"):
# in ls, the analysis commands (sqnr, bias, buckets, rht) and audit, alone or beside a pattern
# that selects, whatever the file (a missing one included: the argument is refused first).
set -u
Q=testdata/quantized/producer
H=testdata/gpt_gemm_small.h5
[ -d "$Q/ct_nvfp4" ] && [ -f "$H" ] || { echo "no fixtures"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/err" 2>/dev/null | head -5; exit 1; }
n=0
expect2() { # expect2 WHICH ARGS...: exit 2, one line naming selection pattern WHICH, no output
    which=$1; shift
    n=$((n + 1))
    rm -f "$tmp/r.json"
    "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "fp4diag $*: exit $rc, want 2"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "fp4diag $*: want one line on stderr"
    grep -q "selection pattern $which is empty ('')" "$tmp/err" || fail "fp4diag $*: message"
    [ ! -s "$tmp/out" ] || fail "fp4diag $*: output on stdout"
    [ ! -e "$tmp/r.json" ] || fail "fp4diag $*: a report was written"
}
for f in "$Q/ct_nvfp4" "$H" "$tmp/missing.safetensors"; do
    expect2 1 ls "$f" ''
    expect2 2 ls "$f" model.layers.0 ''
    for cmd in sqnr bias buckets rht; do
        expect2 1 $cmd "$f" '' -o "$tmp/r.json"
        expect2 2 $cmd "$f" /qkv/w '' -o "$tmp/r.json"
    done
    expect2 1 audit "$Q/source" "$f" '' -o "$tmp/r.json"
    expect2 3 audit "$Q/source" "$f" model.layers.0 model.layers.0.mlp '' --json
done
[ "$n" -eq 36 ] || fail "ran $n cases, want 36"
# what still selects: no pattern at all, and a pattern with a character
"$FP4DIAG" ls "$Q/ct_nvfp4" >/dev/null 2>"$tmp/err" || fail "ls without a pattern: exit $?"
"$FP4DIAG" ls "$Q/ct_nvfp4" model.norm.weight >"$tmp/out" 2>"$tmp/err" || fail "ls model.norm.weight: exit $?"
[ "$(grep -c '^model\.' "$tmp/out")" -eq 1 ] || fail "ls model.norm.weight lists $(grep -c '^model\.' "$tmp/out") rows"
"$FP4DIAG" audit "$Q/source" "$Q/ct_nvfp4" model.layers.0.mlp -q -o "$tmp/a.json" 2>"$tmp/err" \
    || fail "audit model.layers.0.mlp: exit $?"
exit 0
