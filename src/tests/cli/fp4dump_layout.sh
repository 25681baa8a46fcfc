#!/bin/sh
# fp4dump_layout.sh — scripts/fp4dump.py's writer, without torch: the operands of
# testdata/gpt_gemm_small.h5 (x, dy bf16; w f32) written back through fp4dump.write() as HDF5
# keep their types (the project's bf16 custom float, bit for bit) and give `fp4diag gemm` the
# same numbers as the original file; the safetensors form passes the reference reader
# (safetensors.safe_open) and, where fp4diag reads safetensors, gives the same numbers too;
# BF16.from_float32 rounds to nearest even; bad shapes and names are refused; the torch part is
# fp4dump_torch.sh.
set -u
python3 -c 'import numpy, h5py' 2>/dev/null || { echo "skip: numpy and h5py are not installed (scripts/install-deps.sh)"; exit 77; }
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "skip: no $F"; exit 77; }
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

PYTHONPATH=scripts python3 - "$F" "$T" <<'PY' || fail "fp4dump.write"
import sys, numpy as np, h5py
import fp4dump as fd
src, out = sys.argv[1], sys.argv[2]
# known answers of the bf16 rounding (RTNE), bit patterns
v = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, -2.0, np.inf, 3.4028235e38, 1 + 2**-8 + 2**-20], np.float32)
got = [int(b) for b in fd.BF16.from_float32(v).bits]
assert got == [0x3F80, 0x3F80, 0x3F82, 0xC000, 0x7F80, 0x7F80, 0x3F81], [hex(g) for g in got]
assert np.isnan(fd.BF16.from_float32(np.array([np.nan], np.float32)).to_float32()[0])
layers = {}
with h5py.File(src, "r") as f:
    for g in ("proj", "qkv"):
        ops = {}
        for k in ("x", "w", "dy"):
            a = f[g][k][...].astype(np.float32)  # h5py converts the bf16 type exactly
            bf = f[g][k].id.get_type().get_fields() == (15, 7, 8, 0, 7)
            ops[k] = fd.BF16.from_float32(a) if bf else a
            if bf:
                assert np.array_equal(ops[k].to_float32(), a)  # bf16 values: exact
        layers[f"blk.{g}"] = ops
fd.write(f"{out}/dump.h5", layers, {"note": "test"})
fd.write(f"{out}/dump.safetensors", layers)
with h5py.File(f"{out}/dump.h5", "r") as f, h5py.File(src, "r") as s:
    for g in ("proj", "qkv"):
        for k in ("x", "w", "dy"):
            d, o = f[f"blk/{g}/{k}"], s[f"{g}/{k}"]
            assert d.shape == o.shape, (g, k, d.shape, o.shape)
            td, to = d.id.get_type(), o.id.get_type()
            assert (td.get_size(), td.get_fields(), td.get_ebias()) == \
                (to.get_size(), to.get_fields(), to.get_ebias()), (g, k)
            assert np.array_equal(d[...], o[...]), (g, k)
            if to.get_size() == 2:
                assert d.attrs["dtype"] == "bfloat16"
try:
    from safetensors import safe_open
except ImportError:
    print("note: the safetensors package is missing; its reference reader not run")
else:
    with safe_open(f"{out}/dump.safetensors", framework="numpy") as st:
        assert sorted(st.keys()) == sorted(f"blk.{g}.{k}" for g in ("proj", "qkv") for k in ("x", "w", "dy"))
        assert st.get_slice("blk.proj.x").get_dtype() == "BF16"
        assert st.get_slice("blk.proj.dy").get_shape() == [1024, 256]
        assert np.array_equal(st.get_tensor("blk.qkv.w"), layers["blk.qkv"]["w"])
# refused: shapes that do not pair, and an unknown extension (nothing written)
bad = {"l": {"x": np.zeros((4, 8), np.float32), "w": np.zeros((3, 9), np.float32),
             "dy": np.zeros((4, 3), np.float32)}}
for path, ok in ((f"{out}/bad.h5", "not x (tokens x in)"), (f"{out}/bad.npy", "give a .h5")):
    try:
        fd.write(path, bad if path.endswith(".h5") else layers)
    except ValueError as e:
        assert ok in str(e), e
    else:
        raise AssertionError(path + " was accepted")
import os
assert sorted(os.listdir(out)) == ["dump.h5", "dump.safetensors"], os.listdir(out)
assert fd.glob_regex("blocks.*.fc1").match("blocks.3.fc1")
assert not fd.glob_regex("blocks.*.fc1").match("blocks.3.x.fc1")
assert fd.glob_regex("blocks.1").match("blocks.1.fc2") and not fd.glob_regex("blocks.1").match("blocks.10")
PY

# fp4diag gemm on the dump: the same numbers as on the original file
for L in proj qkv; do
    "$FP4DIAG" gemm "$F" "/$L" -q -o "$T/orig_$L.json" || fail "gemm on $F /$L"
    "$FP4DIAG" gemm "$T/dump.h5" "/blk/$L" -q -o "$T/dump_$L.json" || fail "gemm on the dump /blk/$L"
done
"$FP4DIAG" gemm "$T/dump.h5" -q -o "$T/all.json" || fail "gemm on the dump, every group"
python3 - "$T" <<'PY' || fail "the dump's gemm numbers differ from the original's"
import json, sys
t = sys.argv[1]
def key(d):
    return [(p["path"], p["sqnr_db"], p["eta"], [(o["name"], o["sqnr_db"]) for o in p["operands"]])
            for l in d["layers"] for p in l["paths"]]
for L in ("proj", "qkv"):
    a, b = (json.load(open(f"{t}/{w}_{L}.json")) for w in ("orig", "dump"))
    assert key(a) == key(b), L
    assert [v["dtype"] for v in b["layers"][0]["inputs"].values()] == ["bf16", "f32", "bf16"]
allr = json.load(open(f"{t}/all.json"))
assert sorted(l["name"] for l in allr["layers"]) == ["/blk/proj", "/blk/qkv"], [l["name"] for l in allr["layers"]]
PY
if "$FP4DIAG" ls "$T/dump.safetensors" >/dev/null 2>&1; then
    "$FP4DIAG" gemm "$T/dump.safetensors" blk.proj -q -o "$T/st.json" || fail "gemm on the safetensors dump"
    python3 -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); assert [p["sqnr_db"] for p in a["layers"][0]["paths"]]==[p["sqnr_db"] for p in b["layers"][0]["paths"]]' \
        "$T/orig_proj.json" "$T/st.json" || fail "safetensors dump: different gemm numbers"
else
    echo "note: this fp4diag does not read safetensors; the safetensors dump was checked by the reference reader only"
fi
echo ok
