#!/bin/sh
# audit_empty.sh — `audit` on a weight of shape 0xK or Kx0 (issue 26: a division by the zero
# dimension killed it with SIGFPE): an errors entry "no elements (shape ...): nothing to
# audit", the other tensors (the rest of its q/k/v group included) audited, exit 3.
set -u
P=testdata/quantized/producer
[ -d "$P/source" ] || { echo "no $P"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
K=model.layers.0.self_attn.k_proj.
for mode in rows cols; do
    mkdir "$tmp/$mode"
    python3 - "$P" "$tmp/$mode" "$mode" <<'PY' || fail "making the $mode copy"
import json, os, shutil, struct, sys
P, T, mode = sys.argv[1], sys.argv[2], sys.argv[3]
def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n]); base = 8 + n
    meta = h.pop("__metadata__", None)
    return {k: [v["dtype"], v["shape"], b[base + v["data_offsets"][0]:base + v["data_offsets"][1]]]
            for k, v in h.items()}, meta
def save(path, t, meta):
    h, off, blobs = {}, 0, []
    if meta: h["__metadata__"] = meta
    for k in sorted(t):
        d, s, raw = t[k]
        h[k] = {"dtype": d, "shape": s, "data_offsets": [off, off + len(raw)]}
        off += len(raw); blobs.append(raw)
    hb = json.dumps(h).encode(); hb += b" " * (-len(hb) % 8)
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + b"".join(blobs))
for d in ("source", "modelopt_nvfp4"):
    shutil.copytree(os.path.join(P, d), os.path.join(T, d))
K = "model.layers.0.self_attn.k_proj."
s, m = load(os.path.join(T, "source/model.safetensors"))
q, qm = load(os.path.join(T, "modelopt_nvfp4/model.safetensors"))
ws, wq, sc = ([0, 64], [0, 32], [0, 4]) if mode == "rows" else ([32, 0], [32, 0], [32, 0])
s[K + "weight"] = [s[K + "weight"][0], ws, b""]
q[K + "weight"] = [q[K + "weight"][0], wq, b""]
q[K + "weight_scale"] = [q[K + "weight_scale"][0], sc, b""]
save(os.path.join(T, "source/model.safetensors"), s, m)
save(os.path.join(T, "modelopt_nvfp4/model.safetensors"), q, qm)
PY
    "$FP4DIAG" audit -q -o "$tmp/$mode.json" "$tmp/$mode/source" "$tmp/$mode/modelopt_nvfp4" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 3 ] || { cat "$tmp/err"; fail "$mode: exit $rc, want 3"; }
    want=$([ "$mode" = rows ] && echo 0x64 || echo 32x0)
    python3 - "$tmp/$mode.json" "$want" <<'PY' || fail "$mode: report"
import json, sys
r = json.load(open(sys.argv[1]))
errs = {e["tensor"]: e["message"] for e in r["errors"]}
k = "model.layers.0.self_attn.k_proj.weight"
assert list(errs) == [k], errs
assert errs[k].endswith("no elements (shape %s): nothing to audit" % sys.argv[2]), errs
names = [t["name"] for t in r["tensors"]]
assert len(names) == 6 and k not in names, names
assert "model.layers.0.self_attn.q_proj.weight" in names, names
PY
done
exit 0
