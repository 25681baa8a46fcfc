# term.sh — sourced by the terminal-layout cases (term_compare.sh, term_many.sh, term_tables.sh,
# term_width.sh): a temp dir $tmp removed on exit, COLUMNS unset, fail=0 (a check sets fail=1
# and the case goes on; it ends with `exit $fail`), and
#   need_script             skip (77) without script(1), which pty needs
#   pty CMD                 CMD (a shell command line) on a pseudo-terminal of 250 columns, its
#                           output in $tmp/tty
#   maxlen FILE [PREFIX]    the longest line in characters (UTF-8); with PREFIX, lines that start
#                           with it are left out unless they hold "note:" (an exit message)
#   fits WHAT COLUMNS FILE [PREFIX]   fail=1, saying so, when a line is longer than COLUMNS
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
unset COLUMNS
fail=0
need_script() {
    command -v script >/dev/null 2>&1 || { echo "no script(1)"; exit 77; }
}
pty() { # a terminal of 250 columns (one that reports no size is taken as 80, SPEC §9)
    script -qec "stty cols 250 rows 50 2>/dev/null; $1" /dev/null </dev/null 2>&1 | tr -d '\r' >"$tmp/tty"
}
maxlen() {
    python3 -c 'import sys
p = sys.argv[2]
print(max((len(l) for l in open(sys.argv[1], encoding="utf-8").read().split("\n")
           if not p or not l.startswith(p) or "note:" in l), default=0))' "$1" "${2:-}"
}
fits() {
    n=$(maxlen "$3" "${4:-}")
    if [ "$n" -gt "$2" ]; then echo "$1 COLUMNS=$2: longest line $n"; cat "$3"; fail=1; fi
}
