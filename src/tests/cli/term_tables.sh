#!/bin/sh
# term_tables.sh — the tables of ls, audit, compare and gemm fit the width as the analyses' do
# (SPEC §9 "Terminal output"): on a sharded Hugging Face checkpoint with long MoE names (and
# gemm operands with Hugging Face layer names),
# COLUMNS=80 and 120 give no line longer than COLUMNS (characters), names keep their layer
# number, and without a width the output is as it always was (names and shards in full); gemm at
# 40 columns one record per layer (audit per tensor); grid at 40 without the left/right
# columns.
. src/tests/cli/lib/term.sh
python3 - "$tmp" <<'PY' || exit 77
import json, os, sys
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(11)
d = os.path.join(sys.argv[1], "hf")
os.makedirs(d)
shards = [{}, {}]
for l in range(4):
    for e in range(2):
        n = f"model.language_model.layers.{l}.block_sparse_moe.experts.{e}.w1.weight"
        shards[l // 2][n] = rng.standard_normal((32, 64)).astype(np.float32)
wm = {}
for i, s in enumerate(shards):
    f = f"model-{i + 1:05d}-of-00002.safetensors"
    save_file(s, os.path.join(d, f))
    wm.update({k: f for k in s})
json.dump({"metadata": {"total_size": 0}, "weight_map": wm},
          open(os.path.join(d, "model.safetensors.index.json"), "w"))
g = {}  # gemm operands of HF-named layers
for l in range(2):
    for mod, (m, k, n) in (("self_attn.q_proj", (16, 32, 32)), ("mlp.down_proj", (16, 64, 32))):
        for op, shape in (("x", (m, k)), ("w", (n, k)), ("dy", (m, n))):
            g[f"model.language_model.layers.{l}.{mod}.{op}"] = rng.standard_normal(shape).astype(np.float32)
save_file(g, os.path.join(sys.argv[1], "g.safetensors"))
PY
H=$tmp/hf
# ls: the empty columns left out, the shards shortened to what tells them apart, names elided
# keeping the layer number
for c in 80 120; do
    COLUMNS=$c LC_ALL=C.UTF-8 "$FP4DIAG" ls "$H" >"$tmp/ls" 2>&1 || { echo "ls exited $?"; fail=1; }
    fits ls $c "$tmp/ls"
    [ "$(grep -c ' 0000[12]-of-00002$' "$tmp/ls")" -eq 8 ] || { echo "ls COLUMNS=$c: shards not shortened"; cat "$tmp/ls"; fail=1; }
done
# 40 columns: one record per tensor, the name on its own line (layer and expert kept), its
# fields as KEY=VALUE words under it, the shard shortened to what tells them apart
COLUMNS=40 LC_ALL=C.UTF-8 "$FP4DIAG" ls "$H" >"$tmp/ls" 2>&1 || { echo "ls 40 exited $?"; fail=1; }
fits ls 40 "$tmp/ls"
if grep -q '^name ' "$tmp/ls" || [ "$(grep -c '^  shape=32x64 dtype=f32 size=8\.0KiB$' "$tmp/ls")" -ne 8 ] ||
    [ "$(grep -c '^    shard=0000[12]-of-00002$' "$tmp/ls")" -ne 8 ] ||
    ! grep -q '^[a-z.]*…3[.…][a-z_.]*experts\.1\.w1\.weight$' "$tmp/ls"; then
    echo "ls COLUMNS=40: not one record per tensor"; cat "$tmp/ls"; fail=1
fi
COLUMNS=80 LC_ALL=C.UTF-8 "$FP4DIAG" ls "$H" >"$tmp/ls"
[ "$(grep -c -e '…[0-3]…' -e '[….][0-3]\.block' "$tmp/ls")" -eq 8 ] || { echo "ls COLUMNS=80: a layer number lost"; cat "$tmp/ls"; fail=1; }
if head -n 1 "$tmp/ls" | grep -q -e chunks -e filters; then echo "ls COLUMNS=80: empty columns shown"; fail=1; fi
# no width: as always, every column, names and shards in full
"$FP4DIAG" ls "$H" >"$tmp/ls"
head -n 1 "$tmp/ls" | grep -q '^name  *shape  *dtype  *chunks  *filters  *size  *stored  *offset  *shard$' ||
    { echo "ls, no width: header"; cat "$tmp/ls"; fail=1; }
grep -q '^model\.language_model\.layers\.3\.block_sparse_moe\.experts\.1\.w1\.weight .* model-00002-of-00002\.safetensors$' "$tmp/ls" ||
    { echo "ls, no width: names or shards not in full"; cat "$tmp/ls"; fail=1; }
# a note under a width goes on its own line
Q=testdata/quantized/modelopt_nvfp4
if [ -d "$Q" ]; then
    COLUMNS=80 "$FP4DIAG" ls "$Q" >"$tmp/ls" 2>&1
    fits "ls $Q" 80 "$tmp/ls"
    grep -q '^    note: modelopt, ' "$tmp/ls" || { echo "ls COLUMNS=80: no note line"; cat "$tmp/ls"; fail=1; }
fi
# gemm: the layer column as wide as the names (no width) or narrowed and elided (a width), the
# compounds of --layers on their own line, the ranking's compact line
G=$tmp/g.safetensors
for c in 80 120; do
    COLUMNS=$c LC_ALL=C.UTF-8 "$FP4DIAG" gemm "$G" --layers 2 -v -o "$tmp/g.json" 2>"$tmp/gemm" ||
        { echo "gemm exited $?"; fail=1; }
    fits gemm $c "$tmp/gemm"
    [ "$(grep -v '^\[' "$tmp/gemm" | grep -c -e '…[01]…' -e '…[01]\.' -e 'layers\.[01]\.')" -eq 16 ] ||
        { echo "gemm COLUMNS=$c: a layer number lost"; cat "$tmp/gemm"; fail=1; }
done
grep -q '^  (over 2 layers: prod eta' "$tmp/gemm" || { echo "gemm: no compound line"; cat "$tmp/gemm"; fail=1; }
# grid at 40 columns: the left/right distances left out (the bins hold them), 38 columns
COLUMNS=40 "$FP4DIAG" grid -v -o "$tmp/gr.json" 2>"$tmp/grid" || { echo "grid 40 exited $?"; fail=1; }
fits "grid" 40 "$tmp/grid" "fp4diag: wrote "
grep -q '^     7      6 (     5,     6\]     +0\.5$' "$tmp/grid" || { echo "grid COLUMNS=40: e2m1 top level"; cat "$tmp/grid"; fail=1; }
COLUMNS=80 "$FP4DIAG" grid -v -o "$tmp/gr.json" 2>"$tmp/grid"
grep -q '^  code  *q  *left  *right  *bin  *bias$' "$tmp/grid" || { echo "grid COLUMNS=80: not the full table"; cat "$tmp/grid"; fail=1; }
# gemm at 40 columns: one record per layer (its name on its own line, a KEY=VALUE line per path)
COLUMNS=40 LC_ALL=C.UTF-8 "$FP4DIAG" gemm "$G" -v -o "$tmp/g.json" 2>"$tmp/gemm" || { echo "gemm 40 exited $?"; fail=1; }
fits "gemm" 40 "$tmp/gemm" "fp4diag: wrote "
if grep -q '^layer ' "$tmp/gemm" || [ "$(grep -c '^  fprop x\.w SQNR_dB=[0-9.]* eta=' "$tmp/gemm")" -ne 4 ] ||
    [ "$(grep -c '^[a-z_.]*…[01][.…][a-z_.]*\(q_proj\|down_proj\)$' "$tmp/gemm")" -ne 4 ] ||
    ! grep -q '^pooled$' "$tmp/gemm"; then
    echo "gemm COLUMNS=40: not one record per layer"; cat "$tmp/gemm"; fail=1
fi
"$FP4DIAG" gemm "$G" -v -o "$tmp/g.json" 2>"$tmp/gemm"
# no width: every row's path starts in the same column, after the longest name in full
[ "$(grep -E '^model\.language_model\.layers\.[01]\.[a-z_.]+ +(fprop|dgrad|wgrad) ' "$tmp/gemm" |
     awk '{print index($0, $2)}' | sort -u | wc -l)" -eq 1 ] || { echo "gemm, no width: rows out of line"; cat "$tmp/gemm"; fail=1; }
# audit: under a width the compact layout, one format/producer line for all, names elided
S=testdata/quantized/source
if [ -d "$Q" ] && [ -d "$S" ]; then
    for c in 80 120; do
        COLUMNS=$c LC_ALL=C.UTF-8 "$FP4DIAG" audit "$S" "$Q" >"$tmp/audit" 2>&1 || { echo "audit exited $?"; fail=1; }
        fits audit $c "$tmp/audit"
        grep -q '^format/producer: nvfp4 modelopt (every tensor)$' "$tmp/audit" || { echo "audit COLUMNS=$c: no format line"; cat "$tmp/audit"; fail=1; }
        # (the rows: the skipped line after them names tensors too)
        [ "$(sed -n '1,/^(pooled/p' "$tmp/audit" | grep -c -e '…0…' -e '[….]0\.[a-z]')" -eq 4 ] || { echo "audit COLUMNS=$c: a layer number lost"; cat "$tmp/audit"; fail=1; }
        # the pooled row in line with the tensor rows: its export SQNR ends in the column theirs
        # do (at 80 columns "(pooled, 4 tensors)" overflowed the name column and the row was
        # reflowed at spaces, its numbers out of their columns)
        python3 - "$tmp/audit" <<'PY' || { echo "audit COLUMNS=$c: the pooled row out of line"; cat "$tmp/audit"; fail=1; }
import re, sys
rows = [l for l in open(sys.argv[1], encoding="utf-8").read().split("\n")
        if re.match(r"(…|model|\(pooled)", l)]
ends = {m.end() for m in (re.search(r" \d+\.\d{3}(?= )", l) for l in rows) if m}
sys.exit(0 if len(rows) == 5 and rows[-1].startswith("(pooled") and len(ends) == 1 else 1)
PY
    done
    # 40 columns: one record per tensor, the name whole on its line, KEY=VALUE words under it
    COLUMNS=40 LC_ALL=C.UTF-8 "$FP4DIAG" audit "$S" "$Q" >"$tmp/audit" 2>&1 || { echo "audit 40 exited $?"; fail=1; }
    fits audit 40 "$tmp/audit"
    if grep -q '^tensor ' "$tmp/audit" || [ "$(grep -c '^  export=[0-9.]* alpha=[0-9.]*$' "$tmp/audit")" -ne 5 ] ||
        ! grep -q '^model\.layers\.0\.self_attn\.q_proj\.weight$' "$tmp/audit" || ! grep -q '^(pooled, 4 tensors)$' "$tmp/audit"; then
        echo "audit COLUMNS=40: not one record per tensor"; cat "$tmp/audit"; fail=1
    fi
    "$FP4DIAG" audit "$S" "$Q" >"$tmp/audit" 2>&1
    head -n 1 "$tmp/audit" | grep -q '^tensor  *format/producer  *export dB  *alpha  *flushed%  *RTN dB  *alpha  *gain dB  *nonnear%  *scale same%$' ||
        { echo "audit, no width: header"; cat "$tmp/audit"; fail=1; }
fi
exit $fail
