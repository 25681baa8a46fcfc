#!/bin/sh
# gguf_two_sidecars.sh — issue 27: a GGUF NVFP4 weight with both spellings of its per-tensor
# scale sidecar, blk.0.w.scale (0.5) and blk.0.w.weight.scale (4.0). Which one a loader
# applies is ambiguous (an 8x factor), so neither is: the weight's problem names both (ls),
# an errors entry in the analyses and in audit (exit 3), and both sidecars are its members —
# never analysed as a weight (even with --all-tensors), never listed as skipped.
set -u
python3 -c 'import numpy, gguf' 2>/dev/null || { echo "skip: numpy or gguf-py not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 - "$tmp" <<'PY' || fail "generator"
import json, struct, sys
import numpy as np, gguf
T = gguf.GGMLQuantizationType
d = sys.argv[1]
nv = np.random.default_rng(0).integers(0, 256, (4, 72), dtype=np.uint8)  # 4 x 128 NVFP4
nv[:, :4] = 0x38  # sub-block scales 1.0 (finite)
w = gguf.GGUFWriter(d + "/m.gguf", "llama")
w.add_tensor("blk.0.w.weight", nv, raw_shape=nv.shape, raw_dtype=T.NVFP4)
w.add_tensor("blk.0.w.scale", np.array([0.5], np.float32))
w.add_tensor("blk.0.w.weight.scale", np.array([4.0], np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
x = np.random.default_rng(1).standard_normal((4, 128)).astype(np.float32)
h = json.dumps({"blk.0.w.weight": {"dtype": "F32", "shape": [4, 128], "data_offsets": [0, x.nbytes]}}).encode()
h += b" " * ((8 - len(h) % 8) % 8)
open(d + "/src.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + x.tobytes())
PY
MSG='blk.0.w.weight: two scale sidecars, blk.0.w.scale and blk.0.w.weight.scale: which one a loader applies is ambiguous; neither is read'
"$FP4DIAG" ls "$tmp/m.gguf" >"$tmp/ls" || fail "ls exited $?"
grep -q "two scale sidecars, blk.0.w.scale and blk.0.w.weight.scale" "$tmp/ls" || { cat "$tmp/ls"; fail "ls: no problem"; }
grep -q '^blk.0.w.weight.scale\|^blk.0.w.scale' "$tmp/ls" && { cat "$tmp/ls"; fail "ls: a sidecar listed as a tensor"; }
for all in "" --all-tensors; do
    "$FP4DIAG" sqnr $all --json "$tmp/m.gguf" >"$tmp/r.json" 2>/dev/null; rc=$?
    [ "$rc" -eq 3 ] || fail "sqnr $all: exit $rc"
    python3 - "$tmp/r.json" "$MSG" <<'PY' || fail "sqnr $all report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["tensors"] == [], [t["name"] for t in r["tensors"]]
assert [e["tensor"] for e in r["errors"]] == ["blk.0.w.weight"], r["errors"]
assert r["errors"][0]["message"].endswith(sys.argv[2]), r["errors"]
assert not [s for s in r["skipped"] if "scale" in s["name"]], r["skipped"]
PY
done
"$FP4DIAG" audit "$tmp/src.safetensors" "$tmp/m.gguf" -q -o "$tmp/a.json" 2>"$tmp/e"; rc=$?
[ "$rc" -eq 3 ] || { cat "$tmp/e"; fail "audit: exit $rc"; }
python3 - "$tmp/a.json" "$MSG" <<'PY' || fail "audit report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["tensors"] == [] and [e["tensor"] for e in r["errors"]] == ["blk.0.w.weight"], r
assert r["errors"][0]["message"].endswith(sys.argv[2]), r["errors"]
assert not [s for s in r["skipped"] if "scale" in s["name"]], r["skipped"]
PY
exit 0
