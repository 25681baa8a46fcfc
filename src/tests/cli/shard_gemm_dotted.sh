#!/bin/sh
# shard_gemm_dotted.sh — `gemm --shard I/N` balances layers by their operands' elements also when
# the source spells names with '.' (safetensors: model.layers.0.mlp.x): one large layer and
# three small ones split over 2 shares put the large one alone, as for the same layers in HDF5
# (same shares), and merge gives the one-process report.
set -u
python3 -c 'import h5py, numpy, safetensors' 2>/dev/null || { echo "no python3 h5py/safetensors"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 - "$tmp/m.safetensors" "$tmp/m.h5" <<'PY' || fail "cannot write the test files"
import sys, h5py, numpy as np
from safetensors.numpy import save_file
r = np.random.default_rng(11)
layers = {"a": (16, 32, 16), "big": (256, 128, 192), "c": (16, 32, 8), "d": (32, 16, 16)}
t = {}
with h5py.File(sys.argv[2], "w") as f:
    for name, (m, k, n) in layers.items():  # x: m x k, w: n x k, dy: m x n
        for op, shape in (("x", (m, k)), ("w", (n, k)), ("dy", (m, n))):
            v = r.standard_normal(shape).astype(np.float32)
            t[f"model.layers.{name}.{op}"] = v
            f[f"{name}/{op}"] = v
save_file(t, sys.argv[1])
PY
cd "$tmp" || exit 1
for src in m.safetensors m.h5; do # -o r.json in two folders: the same argv
    mkdir "$src.one" "$src.merged" || exit 1
    (cd "$src.one" && "$FP4DIAG" gemm "$tmp/$src" -q -o r.json) || fail "$src: one process exit $?"
    for i in 0 1; do
        "$FP4DIAG" gemm "$tmp/$src" -q --shard $i/2 -o "$src.p$i.json" || fail "$src: share $i/2 exit $?"
    done
    (cd "$src.merged" && "$FP4DIAG" merge "../$src.p0.json" "../$src.p1.json" -o r.json) ||
        fail "$src: merge exit $?"
    grep -v '"seconds"\|"time"' "$src.one/r.json" >x1; grep -v '"seconds"\|"time"' "$src.merged/r.json" >x2
    cmp -s x1 x2 || { diff x1 x2 | head; fail "$src: merge differs from one process"; }
done
python3 - <<'PY' || fail "shares"
import json
def shares(src):
    parts = [json.load(open(f"{src}.p{i}.json")) for i in (0, 1)]
    return [sorted(l["name"].replace("model.layers.", "").strip("/") for l in p["layers"])
            for p in parts], [p["shard"]["assigned"] for p in parts]
st, sta = shares("m.safetensors")
h5, h5a = shares("m.h5")
assert ["big"] in st, ("the large layer shares its part", st)
assert st == h5 and sta == h5a, ("safetensors and HDF5 split differently", st, h5)
PY
exit 0
