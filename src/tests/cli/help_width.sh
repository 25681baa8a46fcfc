#!/bin/sh
# help_width.sh — every help text fits 80 columns: `fp4diag --help`, and for each command its
# list names, `fp4diag COMMAND --help` and `fp4diag help COMMAND` (the same text). A line of
# more than 80 characters (the help is ASCII: one a column) fails, naming it.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# the lines of $1 longer than 80 columns, each as "LENGTH: LINE"; fails when there is one
check() {
    LC_ALL=C awk -v what="$1" 'length($0) > 80 { printf "%s: %d columns: %s\n", what, length($0), $0; bad = 1 }
                               END { exit bad }' "$tmp/h" || fail "$1 has lines over 80 columns"
}
"$FP4DIAG" --help >"$tmp/h" || fail "--help exit $?"
check "fp4diag --help"
LC_ALL=C grep -q '[^ -~]' "$tmp/h" && fail "fp4diag --help is not printable ASCII"
cmds=$(sed -n '/^commands:/,/^$/{s/^  \([a-z][a-z]*\) .*/\1/p}' "$tmp/h")
[ "$(echo "$cmds" | wc -w)" -ge 10 ] || fail "--help lists only: $cmds"
for c in $cmds; do
    "$FP4DIAG" "$c" --help >"$tmp/h" || fail "$c --help exit $?"
    grep -q "^usage: fp4diag $c" "$tmp/h" || fail "$c --help: no usage line"
    LC_ALL=C grep -q '[^ -~]' "$tmp/h" && fail "$c --help is not printable ASCII"
    check "fp4diag $c --help"
    "$FP4DIAG" help "$c" >"$tmp/h" || fail "help $c exit $?"
    check "fp4diag help $c"
done
exit 0
