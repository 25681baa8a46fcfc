#!/bin/sh
# usage_messages.sh — messages a first run meets name what fp4diag reads and accepts: a file
# no format claims is "not an HDF5, safetensors, PyTorch, GGUF or NumPy file", an empty
# directory "not an ... checkpoint" and --help's first line name the same five formats (one
# list: three were named while five were read); an unknown --format lists the
# nvfp4/mxfp4 names too; `fp4diag help --help` (and -h) prints the general help; a chunk over
# --mem-limit is said to be over the half of it kept for decoding; `audit --error-split` is
# refused with the reason (the split is of fp4diag's own quantization), not as unknown.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
printf '# not a checkpoint\n' >"$tmp/notes.md"
"$FP4DIAG" sqnr "$tmp/notes.md" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] || fail "sqnr on a text file: exit $rc"
grep -q "notes.md: not an HDF5, safetensors, PyTorch, GGUF or NumPy file" "$tmp/err" || { cat "$tmp/err"; fail "message"; }
mkdir "$tmp/empty"
"$FP4DIAG" sqnr "$tmp/empty" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] || fail "sqnr on an empty directory: exit $rc"
grep -q "empty: is a directory, not an HDF5, safetensors, PyTorch, GGUF or NumPy checkpoint" \
    "$tmp/err" || { cat "$tmp/err"; fail "empty directory: message"; }
"$FP4DIAG" --help | grep -q "tensors in HDF5, safetensors, PyTorch, GGUF or NumPy files" ||
    fail "--help does not name the five formats"
"$FP4DIAG" sqnr "$tmp/notes.md" --format nvfp5 >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" -eq 2 ] || fail "--format nvfp5: exit $rc"
grep -q "nvfp4, mxfp4" "$tmp/err" || { cat "$tmp/err"; fail "--format nvfp5: aliases not listed"; }
for h in --help -h; do
    "$FP4DIAG" help $h >"$tmp/out" 2>"$tmp/err" || fail "help $h: exit $?"
    [ ! -s "$tmp/err" ] || fail "help $h: stderr"
    "$FP4DIAG" --help >"$tmp/ref" 2>&1
    cmp -s "$tmp/out" "$tmp/ref" || fail "help $h differs from --help"
done
F=testdata/gpt_ckpt_small.h5
if [ -f "$F" ]; then
    "$FP4DIAG" sqnr "$F" /blocks/0/fc1/weight --mem-limit 1K -q -o "$tmp/r.json" 2>"$tmp/err"
    grep -q "half of --mem-limit kept for decoding (512 bytes; the other half holds the slabs" \
        "$tmp/err" || { cat "$tmp/err"; fail "--mem-limit 1K: the halving not explained"; }
fi
S=testdata/quantized/source Q=testdata/quantized/modelopt_nvfp4
if [ -d "$S" ] && [ -d "$Q" ]; then
    "$FP4DIAG" audit "$S" "$Q" --error-split -q -o "$tmp/a.json" >/dev/null 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 2 ] || fail "audit --error-split: exit $rc"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] && [ ! -e "$tmp/a.json" ] || { cat "$tmp/err"; fail "audit --error-split: not one line, or a report"; }
    grep -q "^fp4diag audit: --error-split does not apply to audit: .*own round-to-nearest.*sqnr SOURCE --format nvfp4 --error-split" \
        "$tmp/err" || { cat "$tmp/err"; fail "audit --error-split: no reason"; }
fi
exit 0
