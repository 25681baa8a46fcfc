#!/bin/sh
# term_streams.sh — where the table goes (SPEC §9): stderr carries progress and warnings only
# when the JSON goes to a pipe or file (no table even when stderr is a terminal); with -o FILE
# and stdout a terminal the table is on stdout and one stderr line says what was written
# ("fp4diag: wrote FILE (N bytes)": stderr a terminal or -v, never -q); -v puts the table on
# stderr; merge of analysis parts on a terminal prints the table in place of the JSON.
# Terminals are pseudo-terminals made by script(1).
set -u
command -v script >/dev/null 2>&1 || { echo "no script(1)"; exit 77; }
F=testdata/gpt_ckpt_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
unset COLUMNS
fail=0
pty() { # CMD: run CMD (a shell command line) on a pseudo-terminal, its output in $tmp/tty
    script -qec "$1" /dev/null </dev/null 2>&1 | tr -d '\r' >"$tmp/tty"
}
for cmd in sqnr gemm; do
    G=$F
    [ $cmd = gemm ] && G=testdata/gpt_gemm_small.h5
    [ -f "$G" ] || continue
    # JSON to a file through stdout, stderr the terminal: no table on it
    pty "'$FP4DIAG' $cmd '$G' >'$tmp/r.json'"
    if grep -q '^verdict\|verdict (' "$tmp/tty" || ! grep -q '"schema"' "$tmp/r.json"; then
        echo "$cmd >FILE, stderr a terminal: a table on stderr or no JSON"; cat "$tmp/tty"; fail=1
    fi
    # -o FILE, stdout and stderr the terminal: the table there, and the wrote line
    pty "'$FP4DIAG' $cmd '$G' -o '$tmp/o.json'"
    n=$(wc -c <"$tmp/o.json")
    if ! grep -q 'verdict' "$tmp/tty" || ! grep -qF "fp4diag: wrote $tmp/o.json ($n bytes)" "$tmp/tty"; then
        echo "$cmd -o FILE on a terminal: no table or no wrote line"; cat "$tmp/tty"; fail=1
    fi
    # -o FILE, stdout the terminal, stderr a file: the table on stdout, nothing on stderr
    pty "'$FP4DIAG' $cmd '$G' -o '$tmp/o.json' 2>'$tmp/err'"
    if ! grep -q 'verdict' "$tmp/tty" || [ -s "$tmp/err" ]; then
        echo "$cmd -o FILE, stderr a file: table missing on stdout or stderr not empty"; cat "$tmp/tty" "$tmp/err"; fail=1
    fi
    # -q -o FILE on a terminal: nothing at all
    pty "'$FP4DIAG' $cmd '$G' -q -o '$tmp/o.json'"
    if [ -s "$tmp/tty" ]; then echo "$cmd -q -o FILE: output"; cat "$tmp/tty"; fail=1; fi
    # -v -o FILE, no terminal: the table and the wrote line on stderr, stdout empty
    "$FP4DIAG" $cmd "$G" -v -o "$tmp/o.json" >"$tmp/out" 2>"$tmp/err"
    if [ -s "$tmp/out" ] || ! grep -q 'verdict' "$tmp/err" || ! grep -qF "fp4diag: wrote $tmp/o.json" "$tmp/err"; then
        echo "$cmd -v -o FILE: stdout not empty, or no table / wrote line on stderr"; cat "$tmp/out" "$tmp/err"; fail=1
    fi
    # no terminal, no -v: stderr empty
    "$FP4DIAG" $cmd "$G" -o "$tmp/o.json" >"$tmp/out" 2>"$tmp/err"
    if [ -s "$tmp/out" ] || [ -s "$tmp/err" ]; then echo "$cmd -o FILE, no terminal: output"; cat "$tmp/out" "$tmp/err"; fail=1; fi
done
# merge on a terminal: the table in place of the JSON; on a pipe the JSON
"$FP4DIAG" sqnr "$F" --shard 0/2 -q -o "$tmp/p0.json" && "$FP4DIAG" sqnr "$F" --shard 1/2 -q -o "$tmp/p1.json" || { echo "shards"; exit 1; }
pty "'$FP4DIAG' merge '$tmp/p0.json' '$tmp/p1.json'"
if ! grep -q '^verdict' "$tmp/tty" || grep -q '"schema"' "$tmp/tty" || ! grep -q -- '--json for standard output' "$tmp/tty"; then
    echo "merge on a terminal: not the table"; head -20 "$tmp/tty"; fail=1
fi
"$FP4DIAG" merge "$tmp/p0.json" "$tmp/p1.json" >"$tmp/m.json" 2>"$tmp/err"
if ! grep -q '"schema"' "$tmp/m.json" || [ -s "$tmp/err" ]; then echo "merge to a pipe: not the JSON alone"; cat "$tmp/err"; fail=1; fi
pty "'$FP4DIAG' merge --json '$tmp/p0.json' '$tmp/p1.json'"
grep -q '"schema"' "$tmp/tty" || { echo "merge --json on a terminal: no JSON"; fail=1; }
exit $fail
