#!/bin/sh
# gemm_dup_groups.sh — a layer named twice (any spelling: /proj, proj/, //proj) is run and
# pooled once, so the report holds unique results and `compare` accepts it against itself.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "skip: $F missing"; exit 77; }
"$FP4DIAG" gemm "$F" /proj proj/ //proj /qkv /proj -q -o "$tmp/r.json" || fail "gemm exit $?"
names=$(python3 -c "import json,sys; print(' '.join(l['name'] for l in json.load(open(sys.argv[1]))['layers']))" "$tmp/r.json")
[ "$names" = "/proj /qkv" ] || fail "layers: '$names', want '/proj /qkv'"
"$FP4DIAG" gemm "$F" /proj /qkv -q -o "$tmp/s.json" || fail "gemm exit $?"
"$FP4DIAG" compare "$tmp/s.json" "$tmp/r.json" >"$tmp/c" 2>&1 || { cat "$tmp/c"; fail "compare exit $?"; }
exit 0
