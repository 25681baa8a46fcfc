#!/bin/sh
# term_progress.sh — the progress line (SPEC §9 "Terminal output"): [I/N] with the bytes done
# of the total, before each tensor (gemm: each layer); redrawn with escapes on a terminal and
# fitting $COLUMNS with a long name elided; one plain line per tensor, no escape, under
# TERM=dumb; nothing with -q; off a terminal a plain line per tensor with -v, and without -v
# plain lines only once the run has lasted FP4DIAG_PROGRESS_EVERY seconds (default 5, then one
# each 10 s), then a final line — a short run leaves stderr empty; a --shard run's lines open
# with "shard I/N". Terminals are pseudo-terminals made by script(1).
set -u
command -v script >/dev/null 2>&1 || { echo "no script(1)"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
unset COLUMNS
python3 - "$tmp/m.safetensors" <<'PY' || exit 77
import sys
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(3)
t = {f"model.language_model.layers.{l}.block_sparse_moe.experts.{l % 8}.w1.weight":
     rng.standard_normal((16, 64)).astype(np.float32) for l in range(30)}
save_file(t, sys.argv[1])
PY
M=$tmp/m.safetensors
fail=0
pty() { script -qec "stty cols 250 rows 50 2>/dev/null; $1" /dev/null </dev/null 2>&1 | tr -d '\r' >"$tmp/tty"; }
esc=$(printf '\033')
# each tensor is 16*64*4 = 4096 bytes: before tensor 30, 29 of 30 are done
pty "TERM=dumb '$FP4DIAG' sqnr '$M' -o '$tmp/r.json'"
if grep -q "$esc" "$tmp/tty" ||
    ! grep -q '^\[1/30\] 0 B/120\.0 KiB model\.language_model\.layers\.0\.' "$tmp/tty" ||
    ! grep -q '^\[30/30\] 116\.0 KiB/120\.0 KiB model\.language_model\.layers\.[0-9]*\.' "$tmp/tty"; then
    echo "TERM=dumb: escapes, or no plain [1/30] and [30/30] lines"; cat -v "$tmp/tty"; fail=1
fi
[ "$(grep -c '^\[[0-9]*/30\] ' "$tmp/tty")" -eq 30 ] || { echo "TERM=dumb: not one line per tensor"; fail=1; }
pty "TERM= '$FP4DIAG' sqnr '$M' -o '$tmp/r.json'"
grep -q "$esc" "$tmp/tty" && { echo "no TERM: escapes"; cat -v "$tmp/tty"; fail=1; }
# a terminal: redrawn in place, each line within the width with the long name elided
pty "LC_ALL=C TERM=xterm COLUMNS=60 '$FP4DIAG' sqnr '$M' -o '$tmp/r.json'"
grep -q "${esc}\[K\[1/30\] 0 B/120\.0 KiB " "$tmp/tty" || { echo "TERM=xterm: no redrawn progress"; cat -v "$tmp/tty"; fail=1; }
long=$(sed "s/${esc}\[K/\n/g" "$tmp/tty" | grep '^\[[0-9]*/30\]' | awk 'length($0) > 59' | head -n 3)
[ -z "$long" ] || { echo "COLUMNS=60: progress lines wider than 59 columns:"; echo "$long"; fail=1; }
sed "s/${esc}\[K/\n/g" "$tmp/tty" | grep -q '^\[30/30\] .*w1\.weight$' || { echo "COLUMNS=60: the name's end not kept"; cat -v "$tmp/tty"; fail=1; }
pty "TERM=xterm '$FP4DIAG' sqnr '$M' -q -o '$tmp/r.json'"
[ -s "$tmp/tty" ] && { echo "-q: output on the terminal"; cat -v "$tmp/tty"; fail=1; }
# off a terminal: nothing in a short run without -v; plain lines with it
unset FP4DIAG_PROGRESS_EVERY
"$FP4DIAG" sqnr "$M" -o "$tmp/r.json" 2>"$tmp/err" >/dev/null
[ -s "$tmp/err" ] && { echo "stderr a file: progress in a short run without -v"; cat "$tmp/err"; fail=1; }
# ... and once the run has lasted the interval (0 here: every tensor), plain lines and the final
# line, in a pipe as in a file (an mpirun rank's stderr); -q: none
FP4DIAG_PROGRESS_EVERY=0 "$FP4DIAG" sqnr "$M" -o "$tmp/r.json" 2>&1 >/dev/null | cat >"$tmp/err"
if grep -q "$esc" "$tmp/err" || [ "$(grep -c '^\[[0-9]*/30\] ' "$tmp/err")" -ne 31 ] ||
    ! grep -q '^\[1/30\] 0 B/120\.0 KiB model\.language_model\.layers\.0\.' "$tmp/err" ||
    ! grep -q '^\[30/30\] 120\.0 KiB/120\.0 KiB done in [0-9]*:[0-9][0-9]' "$tmp/err"; then
    echo "FP4DIAG_PROGRESS_EVERY=0, stderr a pipe: not 30 plain lines and the final line"; cat -v "$tmp/err"; fail=1
fi
FP4DIAG_PROGRESS_EVERY=0 "$FP4DIAG" sqnr "$M" -q -o "$tmp/r.json" 2>"$tmp/err" >/dev/null
[ -s "$tmp/err" ] && { echo "-q: progress off a terminal"; cat "$tmp/err"; fail=1; }
FP4DIAG_PROGRESS_EVERY=0 "$FP4DIAG" sqnr "$M" --shard 1/3 -o "$tmp/r.json" 2>"$tmp/err" >/dev/null
if [ "$(grep -c '^shard 1/3 \[[0-9]*/10\] ' "$tmp/err")" -ne 11 ] || grep -v -q '^shard 1/3 ' "$tmp/err"; then
    echo "--shard 1/3: not 10 lines and the final one, each opening with 'shard 1/3'"; cat "$tmp/err"; fail=1
fi
"$FP4DIAG" sqnr "$M" -v -o "$tmp/r.json" 2>"$tmp/err" >/dev/null
if grep -q "$esc" "$tmp/err" || [ "$(grep -c '^\[[0-9]*/30\] ' "$tmp/err")" -ne 30 ]; then
    echo "-v, stderr a file: not 30 plain progress lines"; cat -v "$tmp/err"; fail=1
fi
# gemm: layers, the bytes read so far
G=testdata/gpt_gemm_small.h5
if [ -f "$G" ]; then
    pty "TERM=dumb '$FP4DIAG' gemm '$G' -o '$tmp/g.json'"
    n=$(grep -c '^\[[0-9]*/[0-9]*\] [0-9.]* [KMG]*i*B ' "$tmp/tty")
    if [ "$n" -lt 2 ] || ! grep -q '^\[1/[0-9]*\] 0 B read /' "$tmp/tty" || grep -q "$esc" "$tmp/tty"; then
        echo "gemm TERM=dumb: no plain per-layer progress"; cat -v "$tmp/tty"; fail=1
    fi
    # off a terminal (a pipe, as under mpirun): the layers, then the final line with the bytes read
    FP4DIAG_PROGRESS_EVERY=0 "$FP4DIAG" gemm "$G" --shard 0/2 -o "$tmp/g.json" 2>&1 >/dev/null | cat >"$tmp/err"
    if ! grep -q '^shard 0/2 \[1/1\] 0 B read /' "$tmp/err" ||
        ! grep -q '^shard 0/2 \[1/1\] [0-9.]* [KM]iB read, done in ' "$tmp/err"; then
        echo "gemm --shard 0/2 off a terminal: no layer line and final line"; cat "$tmp/err"; fail=1
    fi
fi
# audit: first the group-amax pass (a line per source tensor an NVFP4 group's scale rule
# needs the amax of: on a large checkpoint it reads a good part of the source), then a line
# per quantized tensor, the source bytes read before it (no total), plain under TERM=dumb,
# redrawn on a terminal; nothing with -q or off a terminal
S=testdata/quantized/source Q=testdata/quantized/modelopt_nvfp4
if [ -d "$S" ] && [ -d "$Q" ]; then
    pty "TERM=dumb '$FP4DIAG' audit '$S' '$Q' -o '$tmp/a.json'"
    if grep -q "$esc" "$tmp/tty" || [ "$(grep -c '^\[[1-8]/8\] ' "$tmp/tty")" -ne 8 ] ||
        [ "$(grep -c '^\[[1-4]/8\] .* (group amax)$' "$tmp/tty")" -ne 4 ] ||
        ! grep -q '^\[1/8\] 0 B read model\.layers\.0\.self_attn\.q_proj\.weight (group amax)$' "$tmp/tty" ||
        ! grep -q '^\[5/8\] [0-9.]* KiB read model\.layers\.0\.self_attn\.q_proj\.weight$' "$tmp/tty" ||
        ! grep -q '^\[8/8\] [0-9.]* KiB read model\.layers\.0\.mlp\.down_proj\.weight$' "$tmp/tty"; then
        echo "audit TERM=dumb: no plain progress of the amax pass and per tensor"; cat -v "$tmp/tty"; fail=1
    fi
    pty "TERM=xterm '$FP4DIAG' audit '$S' '$Q' -o '$tmp/a.json'"
    grep -q "${esc}\[K\[1/8\] 0 B " "$tmp/tty" || { echo "audit TERM=xterm: no redrawn progress"; cat -v "$tmp/tty"; fail=1; }
    pty "TERM=dumb '$FP4DIAG' audit '$S' '$Q' -q -o '$tmp/a.json'"
    grep -q '^\[1/8\]' "$tmp/tty" && { echo "audit -q: progress"; fail=1; }
    "$FP4DIAG" audit "$S" "$Q" -o "$tmp/a.json" >/dev/null 2>"$tmp/err"
    [ -s "$tmp/err" ] && { echo "audit off a terminal: stderr not empty"; cat "$tmp/err"; fail=1; }
fi
exit $fail
