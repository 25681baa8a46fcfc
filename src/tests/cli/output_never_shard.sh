#!/bin/sh
# output_never_shard.sh — -o never writes over a file that reading an input reads, checked before
# anything is read: a shard named by a safetensors index (the index given, or found in the
# directory given), the index itself when a directory is the input, any file of an input
# directory, the same through a symlink, and a gemm operand given as INDEX:NAME. Each is exit 2
# with one line naming the file and the input, and every file is unchanged; a new file in the
# input directory is written.
set -u
python3 -c 'import safetensors, numpy, h5py' 2>/dev/null || { echo "no python3 safetensors"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 scripts/make_hf_testdata.py testdata/gpt_ckpt_small.h5 "$tmp" >/dev/null || exit 1
S=$tmp/sharded
I=$S/model.safetensors.index.json
sh1=$S/model-00001-of-00002.safetensors
sh2=$S/model-00002-of-00002.safetensors
[ -f "$I" ] && [ -f "$sh1" ] && [ -f "$sh2" ] || { ls "$S"; fail "test data: not two shards and an index"; }
echo "notes" >"$S/README.txt"
sums() { cksum "$I" "$sh1" "$sh2" "$S/README.txt"; }
before=$(sums)
expect() { # expect PATTERN ARGS...: exit 2, one stderr line matching PATTERN, nothing changed
    pat=$1; shift
    "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 2 ] || { cat "$tmp/err"; fail "fp4diag $*: exit $rc, want 2"; }
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "fp4diag $*: want one line"; }
    grep -q -- "$pat" "$tmp/err" || { cat "$tmp/err"; fail "fp4diag $*: no '$pat'"; }
    [ "$(sums)" = "$before" ] || fail "fp4diag $*: an input file changed"
}
expect "is $sh1, read as part of the input $I" sqnr "$I" -o "$sh1"
expect "read as part of the input" sqnr "$I" -o "$sh2"
expect "read as part of the input $S" sqnr "$S" -o "$sh2"
expect "read as part of the input" bias "$S" -o "$I"
expect "read as part of the input" sqnr "$S" -o "$S/README.txt"
ln -s "$sh1" "$tmp/link.safetensors"
expect "read as part of the input" rht "$I" -o "$tmp/link.safetensors"
expect "read as part of the input" buckets "$tmp/sharded/" -o "$S/./model-00001-of-00002.safetensors"
expect "read as part of the input" gemm --x "$I:model.layers.0.mlp.up_proj.weight" \
    --w "$I:model.layers.0.mlp.up_proj.weight" --dy "$I:model.layers.0.mlp.down_proj.weight" \
    -o "$sh2"
# a new file beside the shards is no input: written
"$FP4DIAG" sqnr "$S" model.layers.0.mlp.up_proj.weight -q -o "$S/report.json" ||
    fail "a new report in the input directory: exit $?"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$S/report.json" || fail "report.json"
[ "$(sums)" = "$before" ] || fail "an input file changed"
exit 0
