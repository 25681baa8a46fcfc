#!/bin/sh
# ls_man_example.sh — the `ls` example in man/fp4diag.1 is what `fp4diag ls` prints.
set -u
[ -f testdata/gpt_ckpt_small.h5 ] || { echo "no testdata"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# The lines between "$ fp4diag ls ..." and .fi, with roff escapes undone.
sed -n '/^\$ fp4diag ls /,/^\.fi/p' man/fp4diag.1 | sed 's/\\(aq/'"'"'/g' >"$tmp/ex"
cmd=$(head -n 1 "$tmp/ex" | sed 's/^\$ fp4diag //')
sed '1d;$d' "$tmp/ex" >"$tmp/want"
[ -s "$tmp/want" ] || { echo "no example in the man page"; exit 1; }
eval "set -- $cmd"
"$FP4DIAG" "$@" >"$tmp/got" || { echo "fp4diag $cmd exited $?"; exit 1; }
diff -u "$tmp/want" "$tmp/got" || exit 1
exit 0
