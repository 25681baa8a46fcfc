#!/bin/sh
# gguf_ggufpy.sh — fp4diag reads testdata/gguf/model.gguf as gguf-py (the llama.cpp project's
# own Python reader) does: the same tensors, shapes (ne reversed) and ggml types, and the
# MXFP4/NVFP4 tensors decoded bit for bit as gguf.quants.dequantize decodes them now (not only
# as the committed expected values say). Skips where the gguf package is not importable by
# ${FP4_PYTHON:-python3} (pip install gguf).
set -u
D=testdata/gguf
PY=${FP4_PYTHON:-python3}
"$PY" -c 'import gguf, numpy' 2>/dev/null || { echo "gguf (gguf-py) not importable by $PY: pip install gguf"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/err" 2>/dev/null | head -20; exit 1; }

"$FP4DIAG" ls "$D/model.gguf" --json >"$tmp/ls.json" 2>"$tmp/err" || fail "ls exited $?"
"$PY" - "$D/model.gguf" "$tmp/ls.json" "$tmp/deq.safetensors" <<'PY' || fail "gguf-py comparison"
import json, struct, sys
import numpy as np
import gguf
rd = gguf.GGUFReader(sys.argv[1])
ls = {t["name"]: t for t in json.load(open(sys.argv[2]))["datasets"]}
assert list(ls) == [t.name for t in rd.tensors], (list(ls), [t.name for t in rd.tensors])
out = {}
for t in rd.tensors:
    shape = [int(n) for n in reversed(t.shape.tolist())]
    assert ls[t.name]["shape"] == shape, (t.name, ls[t.name]["shape"], shape)
    assert ls[t.name]["dtype"] == t.tensor_type.name.lower(), (t.name, ls[t.name]["dtype"])
    if t.tensor_type in (gguf.GGMLQuantizationType.MXFP4, gguf.GGMLQuantizationType.NVFP4) \
            and not t.name.startswith("special.mxfp4"):  # its 12 * 2^126 is inf
        out[t.name] = gguf.quants.dequantize(t.data, t.tensor_type).astype("<f4").reshape(shape)
hdr, off, blobs = {}, 0, []
for k, a in out.items():
    b = a.tobytes(); hdr[k] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
    off += len(b); blobs.append(b)
h = json.dumps(hdr).encode(); h += b" " * (-len(h) % 8)
open(sys.argv[3], "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
"$FP4DIAG" audit "$tmp/deq.safetensors" "$D/model.gguf" 'blk.0.ffn_*' special.nvfp4 \
    -o "$tmp/a.json" -q 2>"$tmp/err" || fail "audit exited $?"
python3 - "$tmp/a.json" <<'PY' || fail "decode differs from gguf-py"
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["tensors"]) == 3 and r["errors"] == [], r
for t in r["tensors"]:
    assert t["export"]["sqnr_status"] == "exact", (t["name"], t["export"])
PY
exit 0
