#!/bin/sh
# term_merge_parts.sh — `merge` of gemm and audit parts follows the terminal-first rule as every
# command (SPEC §9): on a terminal without -o or --json the merged gemm run's table (the very
# table the single run prints, at 80 and 120 columns) or the merged audit's pooled line, and the
# note saying how to get the JSON, never the JSON; piped, the JSON alone; with -o FILE and stdout
# a terminal the table on stdout and the JSON in FILE; -q on a terminal: nothing but the note.
# Terminals are pseudo-terminals made by script(1).
set -u
command -v script >/dev/null 2>&1 || { echo "no script(1)"; exit 77; }
G=$PWD/testdata/gpt_gemm_small.h5
P=$PWD/testdata/quantized/producer
[ -f "$G" ] && [ -d "$P/source" ] || { echo "no testdata"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
unset COLUMNS
fail=0
pty() { # CMD: run CMD (a shell command line) on a pseudo-terminal, its output in $tmp/tty
    script -qec "$1" /dev/null </dev/null 2>&1 | tr -d '\r' >"$tmp/tty"
}
# gemm: two shares, merged on a terminal = the single run on a terminal
for i in 0 1; do
    "$FP4DIAG" gemm "$G" --shard $i/2 -q -o "$tmp/g$i.json" || { echo "gemm share $i"; exit 1; }
done
for w in 80 120; do
    pty "COLUMNS=$w '$FP4DIAG' gemm '$G' 2>/dev/null"
    cp "$tmp/tty" "$tmp/single"
    pty "COLUMNS=$w '$FP4DIAG' merge '$tmp/g0.json' '$tmp/g1.json'"
    if grep -q '"schema"' "$tmp/tty" || ! grep -q -- '--json for standard output' "$tmp/tty" ||
        ! grep -q '^verdict' "$tmp/tty"; then
        echo "gemm merge on a $w-column terminal: not the table"; head -20 "$tmp/tty"; fail=1
    elif ! cmp -s "$tmp/single" "$tmp/tty"; then
        echo "gemm merge on a $w-column terminal: not the single run's table"
        diff "$tmp/single" "$tmp/tty" | head -20; fail=1
    fi
    long=$(awk -v w=$w 'length($0) > w' "$tmp/tty" | head -n 2)
    [ -z "$long" ] || { echo "gemm merge at $w columns: lines too long:"; echo "$long"; fail=1; }
done
"$FP4DIAG" merge "$tmp/g0.json" "$tmp/g1.json" >"$tmp/m.json" 2>"$tmp/err"
if ! grep -q '"schema"' "$tmp/m.json" || [ -s "$tmp/err" ]; then
    echo "gemm merge to a pipe: not the JSON alone"; cat "$tmp/err"; fail=1
fi
pty "'$FP4DIAG' merge '$tmp/g0.json' '$tmp/g1.json' -o '$tmp/o.json'"
if ! grep -q '^verdict' "$tmp/tty" || ! grep -q '"schema"' "$tmp/o.json" 2>/dev/null; then
    echo "gemm merge -o FILE on a terminal: no table on stdout or no JSON in FILE"; cat "$tmp/tty"; fail=1
fi
pty "'$FP4DIAG' merge -q '$tmp/g0.json' '$tmp/g1.json'"
if grep -q '"schema"\|^verdict' "$tmp/tty"; then echo "gemm merge -q on a terminal: output"; cat "$tmp/tty"; fail=1; fi
# audit: three shares, merged on a terminal: the pooled line, not the JSON
for i in 0 1 2; do
    "$FP4DIAG" audit "$P/source" "$P/modelopt_nvfp4" --shard $i/3 -q -o "$tmp/a$i.json" 2>/dev/null ||
        { echo "audit share $i"; exit 1; }
done
pty "COLUMNS=80 '$FP4DIAG' merge '$tmp/a0.json' '$tmp/a1.json' '$tmp/a2.json'"
if grep -q '"schema"' "$tmp/tty" || ! grep -q '^pooled over [0-9]* tensors:$' "$tmp/tty" ||
    ! grep -q '^  export SQNR [0-9.]* dB (alpha 0\.[0-9]*), our requantization [0-9.]* dB$' "$tmp/tty" ||
    ! grep -q -- '--json for standard output' "$tmp/tty"; then
    echo "audit merge on a terminal: not the pooled line"; head -20 "$tmp/tty"; fail=1
fi
long=$(awk 'length($0) > 80' "$tmp/tty" | head -n 2)
[ -z "$long" ] || { echo "audit merge at 80 columns: lines too long:"; echo "$long"; fail=1; }
# the pooled SQNR shown is the merged report's
want=$("$FP4DIAG" merge "$tmp/a0.json" "$tmp/a1.json" "$tmp/a2.json" 2>/dev/null |
    python3 -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["pooled"]["export"]["sqnr_db"])')
grep -q "export SQNR $want dB" "$tmp/tty" || { echo "audit merge: pooled SQNR not $want"; cat "$tmp/tty"; fail=1; }
"$FP4DIAG" merge "$tmp/a0.json" "$tmp/a1.json" "$tmp/a2.json" >"$tmp/m.json" 2>"$tmp/err"
if ! grep -q '"schema"' "$tmp/m.json" || [ -s "$tmp/err" ]; then
    echo "audit merge to a pipe: not the JSON alone"; cat "$tmp/err"; fail=1
fi
exit $fail
