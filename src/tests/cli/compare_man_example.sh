#!/bin/sh
# compare_man_example.sh — the `compare` example in man/fp4diag.1 is what `fp4diag compare`
# prints on stdout (and it exits 1: the example holds a regression).
set -u
F=${FP4DIAG:-$PWD/fp4diag}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
sed -n '/^\$ fp4diag compare /,/^\.fi/p' man/fp4diag.1 | sed 's/\\-/-/g' >"$tmp/ex"
cmd=$(head -n 1 "$tmp/ex" | sed 's/^\$ fp4diag //')
sed '1d;$d' "$tmp/ex" >"$tmp/want"
[ -s "$tmp/want" ] || { echo "no compare example in the man page"; exit 1; }
eval "set -- $cmd"
"$F" "$@" >"$tmp/got" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || { cat "$tmp/err"; echo "fp4diag $cmd exited $rc, expected 1"; exit 1; }
diff -u "$tmp/want" "$tmp/got" || exit 1
exit 0
