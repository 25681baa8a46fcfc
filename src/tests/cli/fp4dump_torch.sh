#!/bin/sh
# fp4dump_torch.sh — scripts/fp4dump.py with torch: LinearRecorder on the built-in demo model
# records, per chosen nn.Linear, x and w bit for bit as the layer saw them and dy such that
# dy^T x equals the weight gradient torch computed; a bf16 model and an fp32 model under
# torch.autocast to bf16 both give bf16 operands (the project's bf16 HDF5 type); a glob that
# selects no Linear, and a save without backward, are clear errors; the safetensors form reads
# back equal through safetensors.torch; `fp4dump.py --demo` (and on CUDA, where there is a GPU)
# writes a file `fp4diag gemm` reads, with finite SQNRs for every layer. Skips (77) where torch
# is not importable. Run alone: FP4DIAG=$PWD/fp4diag sh src/tests/cli/fp4dump_torch.sh
set -u
PY=${PYTHON:-python3}
if ! "$PY" -c 'import torch' 2>/dev/null; then
    echo "skip: torch is not importable here; where it is: make && FP4DIAG=\$PWD/fp4diag sh src/tests/cli/fp4dump_torch.sh"
    exit 77
fi
"$PY" -c 'import numpy, h5py' 2>/dev/null || { echo "skip: numpy and h5py are not installed (scripts/install-deps.sh)"; exit 77; }
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

PYTHONPATH=scripts "$PY" - "$T" <<'PY' || fail "LinearRecorder"
import sys, numpy as np, torch, h5py
import fp4dump as fd
out = sys.argv[1]
devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
print("torch", torch.__version__, "devices", devices)

def as_f64(a):
    return (a.to_float32() if isinstance(a, fd.BF16) else a).astype(np.float64)

def check(rec, model, want_bf16, what):
    mods = dict(model.named_modules())
    assert sorted(rec.layers) == sorted(n for n, _ in rec.chosen), what
    for n, r in rec.layers.items():
        m = mods[n]
        x, w, dy = r["x"], r["w"], r["dy"]
        for k in ("x", "w", "dy"):
            assert isinstance(r[k], fd.BF16) == want_bf16, (what, n, k, type(r[k]))
        assert w.shape == tuple(m.weight.shape) and x.shape[1] == w.shape[1] and \
            dy.shape == (x.shape[0], w.shape[0]), (what, n, x.shape, w.shape, dy.shape)
        if not want_bf16 or m.weight.dtype == torch.bfloat16:  # w as stored, bit for bit
            wt = m.weight.detach().cpu()
            got = w.bits if isinstance(w, fd.BF16) else w
            ref = wt.view(torch.int16).numpy().view(np.uint16) if wt.dtype == torch.bfloat16 else wt.numpy()
            assert np.array_equal(got, ref), (what, n, "w differs from the module's weight")
        # dW = dy^T x: torch's weight gradient from the recorded operands
        g = m.weight.grad.detach().float().cpu().numpy().astype(np.float64)
        mine = as_f64(dy).T @ as_f64(x)
        err = np.linalg.norm(mine - g) / np.linalg.norm(g)
        # Y = x w^T + b: the output this layer gave (caught by the test's own hook)
        b = m.bias.detach().float().cpu().numpy() if m.bias is not None else 0
        y = outs[n].reshape(-1, outs[n].shape[-1])
        yerr = np.linalg.norm(as_f64(x) @ as_f64(w).T + b - y) / np.linalg.norm(y)
        errs.append((err, yerr))
        assert err < 5e-3 and yerr < 5e-3, (what, n, err, yerr)
    return len(rec.layers)

outs, errs = {}, []
def catch(model):
    for n, m in model.named_modules():
        if isinstance(m, torch.nn.Linear):
            m.register_forward_hook(lambda mod, i, o, n=n: outs.__setitem__(n, o.detach().float().cpu().numpy().astype(np.float64)))

for dev in devices:
    # a bf16 model: operands bf16 as stored
    model, tok = fd.demo_model("bf16", 1, dev)
    catch(model)
    with fd.LinearRecorder(model, ["blocks.*.fc1", "blocks.1"]) as rec:
        loss = model(tok).float().logsumexp(-1).mean()
        loss.backward()
    n = check(rec, model, True, f"bf16 on {dev}")
    assert n == 5 and "blocks.0.fc1" in rec.layers and "blocks.1.qkv" in rec.layers, sorted(rec.layers)
    rec.save(f"{out}/bf16_{dev}.h5")
    rec.save(f"{out}/bf16_{dev}.safetensors")
    # an fp32 model under autocast to bf16: operands recorded in bf16, as the GEMM takes them
    model, tok = fd.demo_model("fp32", 2, dev)
    catch(model)
    with fd.LinearRecorder(model, ["blocks.0.*"]) as rec:
        with torch.autocast(dev, dtype=torch.bfloat16):
            logits = model(tok)
        logits.float().logsumexp(-1).mean().backward()
    check(rec, model, True, f"autocast on {dev}")
    # fp32 without autocast: fp32 operands, w bit for bit
    model, tok = fd.demo_model("fp32", 3, dev)
    catch(model)
    with fd.LinearRecorder(model, ["head"]) as rec:
        model(tok).logsumexp(-1).mean().backward()
    check(rec, model, False, f"fp32 on {dev}")
    rec.save(f"{out}/fp32_{dev}.h5")

with h5py.File(f"{out}/bf16_cpu.h5", "r") as f:
    d = f["blocks/0/fc1/x"]
    t = d.id.get_type()
    assert (t.get_size(), t.get_fields(), t.get_ebias()) == (2, (15, 7, 8, 0, 7), 127)
    assert d.attrs["dtype"] == "bfloat16" and f.attrs["tool"] == "fp4dump.py"
    assert f["blocks/0/fc1/x"].shape == (128, 64) and f["blocks/0/fc1/dy"].shape == (128, 256)
with h5py.File(f"{out}/fp32_cpu.h5", "r") as f:
    assert f["head/w"].dtype == np.float32

try:
    from safetensors.torch import load_file
except ImportError:
    print("note: safetensors not installed; the .safetensors form not read back")
else:
    st = load_file(f"{out}/bf16_cpu.safetensors")
    with h5py.File(f"{out}/bf16_cpu.h5", "r") as f:
        for k, v in st.items():
            assert v.dtype == torch.bfloat16, (k, v.dtype)
            h = f["/" + k.replace(".", "/")][...]
            assert np.array_equal(v.float().numpy(), h), k

model, tok = fd.demo_model("bf16", 0)
try:
    fd.LinearRecorder(model, ["blocks.*.mlp"])
except ValueError as e:
    assert "selects no nn.Linear" in str(e) and "blocks.0.qkv" in str(e), e
else:
    raise AssertionError("a glob selecting nothing was accepted")
with fd.LinearRecorder(model, ["head"]) as rec:
    model(tok)
try:
    rec.save(f"{out}/nobackward.h5")
except ValueError as e:
    assert "backward" in str(e), e
else:
    raise AssertionError("a save without dY was accepted")
import os
assert not os.path.exists(f"{out}/nobackward.h5")
print("recorder ok; largest relative errors of dy^T x vs dW and x w^T + b vs Y: %.2g, %.2g"
      % (max(e[0] for e in errs), max(e[1] for e in errs)))
PY

for dev in cpu $("$PY" -c 'import torch; print("cuda" if torch.cuda.is_available() else "")'); do
    "$PY" scripts/fp4dump.py --demo "$T/demo_$dev.h5" --device "$dev" 2>"$T/err" ||
        { cat "$T/err"; fail "fp4dump.py --demo on $dev"; }
    grep -q "wrote $T/demo_$dev.h5: 8 layers" "$T/err" || fail "no 'wrote ... 8 layers' line: $(cat "$T/err")"
    "$PY" scripts/fp4dump.py --demo "$T/auto_$dev.h5" --device "$dev" --autocast --layers blocks.1.fc2 2>/dev/null ||
        fail "fp4dump.py --demo --autocast on $dev"
    for f in demo auto; do
        "$FP4DIAG" gemm "$T/${f}_$dev.h5" -q -o "$T/${f}_$dev.json" || fail "fp4diag gemm on the $f dump ($dev)"
    done
done
"$FP4DIAG" ls "$T/demo_cpu.h5" | grep -q "/blocks/0/fc1/x .*bf16" || fail "fp4diag ls does not see bf16 in the dump"
"$PY" - "$T" <<'PY' || fail "gemm reports on the dumps"
import json, glob, math, sys
for p in sorted(glob.glob(sys.argv[1] + "/*_c*.json")):
    d = json.load(open(p))
    n = 8 if "/demo_" in p else 1
    assert len(d["layers"]) == n, (p, len(d["layers"]))
    for l in d["layers"]:
        assert [v["dtype"] for v in l["inputs"].values()] == ["bf16"] * 3, (p, l["name"])
        for q in l["paths"]:
            assert q["sqnr_status"] == "ok" and 5 < q["sqnr_db"] < 60, (p, l["name"], q["path"], q["sqnr_db"])
    print(p.rsplit("/", 1)[1], "ok:", ", ".join(f'{l["name"]} {l["paths"][0]["sqnr_db"]:.1f} dB' for l in d["layers"][:3]))
PY
if "$FP4DIAG" ls "$T/bf16_cpu.safetensors" >/dev/null 2>&1; then
    "$FP4DIAG" gemm "$T/bf16_cpu.safetensors" blocks.0.fc1 -q -o "$T/st.json" || fail "gemm on the safetensors dump"
    "$FP4DIAG" gemm "$T/bf16_cpu.h5" /blocks/0/fc1 -q -o "$T/h5.json" || fail "gemm on the HDF5 dump"
    "$PY" -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); assert [p["sqnr_db"] for p in a["layers"][0]["paths"]]==[p["sqnr_db"] for p in b["layers"][0]["paths"]]' \
        "$T/st.json" "$T/h5.json" || fail "safetensors and HDF5 dumps give different gemm numbers"
fi
echo ok
