#!/bin/sh
# term_width.sh — the human tables fit the width (SPEC §9 "Terminal output"): with long Hugging
# Face names, COLUMNS=80 and 120 give no line longer than COLUMNS (characters, not bytes) for
# every analysis command, one scale and mixed scales; names are elided by whole components with "…"
# under a UTF-8 locale and "..." otherwise, keeping the layer number (between two marks when
# the end from it does not fit); no COLUMNS and a file for stderr: names in full; a pseudo-terminal of 90 columns (script, stty) is fitted
# without COLUMNS. At 40 columns (the names would get under 12) one record per tensor: the
# name on a line of its own (elided to the width, layer and expert kept), under it a line per
# config of KEY=VALUE words wrapped at spaces; the progress lines of -v fit too.
. src/tests/cli/lib/term.sh
python3 - "$tmp/m.safetensors" <<'PY' || exit 77
import sys
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(7)
d = {}
for l in (3, 31):
    d[f"model.layers.{l}.self_attn.q_proj.weight"] = rng.standard_normal((32, 64)).astype(np.float32)
    d[f"model.layers.{l}.block_sparse_moe.experts.{l % 8}.w1.weight"] = rng.standard_normal((32, 64)).astype(np.float32)
save_file(d, sys.argv[1])
PY
M=$tmp/m.safetensors
for cmd in sqnr bias buckets rht; do
    for fmt in e2m1,e1m2 nvfp4,mxfp4; do
        for c in 80 120; do
            COLUMNS=$c LC_ALL=C.UTF-8 "$FP4DIAG" $cmd "$M" --format $fmt -v -o "$tmp/r.json" 2>"$tmp/err"
            rc=$?
            n=$(maxlen "$tmp/err")
            if [ $rc -ne 0 ] || [ "$n" -gt $c ] || ! grep -q '^verdict' "$tmp/err"; then
                echo "$cmd --format $fmt COLUMNS=$c: exit $rc, longest line $n"; cat "$tmp/err"; fail=1
            fi
        done
    done
done
for cmd in sqnr bias buckets rht; do
    COLUMNS=40 LC_ALL=C.UTF-8 "$FP4DIAG" $cmd "$M" --format nvfp4,mxfp4 -v -o "$tmp/r.json" 2>"$tmp/err" ||
        { echo "$cmd COLUMNS=40: exit $?"; fail=1; }
    fits "$cmd" 40 "$tmp/err" "fp4diag: wrote "
    case $cmd in rht) v='SQNR=[0-9.]* ' ;; *) v='SQNR_dB=[0-9.]*$' ;; esac
    if grep -q '^tensor ' "$tmp/err" || ! grep -q "^  e2m1/nvfp4 $v" "$tmp/err" ||
        ! grep -q '^[a-z.]*…31[.…][a-z_.]*experts\.7\.w1\.weight$' "$tmp/err" ||
        ! grep -q '^(pooled)$' "$tmp/err"; then
        echo "$cmd COLUMNS=40: not one record per tensor"; cat "$tmp/err"; fail=1
    fi
done
# the sqnr table at 80 columns: the MoE name elided with "…" (UTF-8) or "..." (C locale)
COLUMNS=80 LC_ALL=C.UTF-8 "$FP4DIAG" sqnr "$M" -v -o "$tmp/r.json" 2>"$tmp/err"
grep -q '^[a-z._]*…[0-9]*…[a-z0-9_.]*w1\.weight ' "$tmp/err" || { echo "no '…' elision at 80 columns (UTF-8)"; cat "$tmp/err"; fail=1; }
if grep -q '\.\.\.' "$tmp/err"; then echo "'...' under a UTF-8 locale"; fail=1; fi
COLUMNS=80 LC_ALL=C "$FP4DIAG" sqnr "$M" -v -o "$tmp/r.json" 2>"$tmp/err"
grep -q '^[a-z._]*\.\.\.[0-9]*\.\.\.[a-z0-9_.]*w1\.weight ' "$tmp/err" || { echo "no '...' elision at 80 columns (C locale)"; cat "$tmp/err"; fail=1; }
if grep -q '…' "$tmp/err"; then echo "'…' under the C locale"; fail=1; fi
# the layer number kept when the end from it fits (the rank rows at 120 hold the names whole)
COLUMNS=100 LC_ALL=C.UTF-8 "$FP4DIAG" rht "$M" -v -o "$tmp/r.json" 2>"$tmp/err"
grep -q '^\(model\)\{0,1\}…31\.block_sparse_moe\.experts\.7\.w1\.weight ' "$tmp/err" || { echo "COLUMNS=100 rht: layer number not kept"; cat "$tmp/err"; fail=1; }
# at 80 columns the ranking's names keep the layer number ("…31…q_proj.weight"): the four
# tensors are four different names there, each with its layer (issue 29)
COLUMNS=80 LC_ALL=C.UTF-8 "$FP4DIAG" sqnr "$M" -v -o "$tmp/r.json" 2>"$tmp/err"
awk '$2 == "best" {print $1}' "$tmp/err" | sort -u >"$tmp/names"
if [ "$(wc -l <"$tmp/names")" -ne 4 ] || [ "$(grep -c -F -e '…3…' -e '…31…' -e '…3.' -e '…31.' "$tmp/names")" -ne 4 ]; then
    echo "COLUMNS=80 ranking: layer numbers lost"; cat "$tmp/err"; fail=1
fi
# no width: names in full, nothing elided
LC_ALL=C.UTF-8 "$FP4DIAG" sqnr "$M" -v -o "$tmp/r.json" 2>"$tmp/err"
grep -q '^model\.layers\.31\.block_sparse_moe\.experts\.7\.w1\.weight ' "$tmp/err" || { echo "no COLUMNS, stderr a file: name not in full"; cat "$tmp/err"; fail=1; }
if grep -q '…' "$tmp/err"; then echo "no COLUMNS, stderr a file: a name elided"; fail=1; fi
# a terminal of 90 columns, no COLUMNS: the table on it fits (TIOCGWINSZ)
if command -v script >/dev/null 2>&1; then
    LC_ALL=C.UTF-8 script -qec "stty cols 90 rows 50; '$FP4DIAG' sqnr '$M' 2>/dev/null" /dev/null >"$tmp/tty" 2>&1 </dev/null
    tr -d '\r' <"$tmp/tty" >"$tmp/tty2"
    n=$(maxlen "$tmp/tty2")
    if [ "$n" -gt 90 ] || ! grep -q '^verdict' "$tmp/tty2"; then
        echo "a 90-column terminal: longest line $n"; cat "$tmp/tty2"; fail=1
    fi
fi
# a terminal that reports no size (stty cols 0: mpirun's pty, script's under a batch job), no
# COLUMNS: the table fits 80 columns
if command -v script >/dev/null 2>&1; then
    LC_ALL=C.UTF-8 script -qec "stty cols 0 rows 0; '$FP4DIAG' sqnr '$M' 2>/dev/null" /dev/null >"$tmp/tty" 2>&1 </dev/null
    tr -d '\r' <"$tmp/tty" >"$tmp/tty2"
    n=$(maxlen "$tmp/tty2")
    if [ "$n" -gt 80 ] || ! grep -q '^verdict' "$tmp/tty2"; then
        echo "a terminal of no size: longest line $n, want <= 80"; cat "$tmp/tty2"; fail=1
    fi
fi
exit $fail
