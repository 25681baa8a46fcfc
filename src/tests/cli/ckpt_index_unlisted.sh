#!/bin/sh
# ckpt_index_unlisted.sh — a tensor a shard holds that the index's weight_map does not list is
# still read (transformers loads every tensor of the shards an index names), after the listed
# ones in file order, for safetensors and PyTorch indexes alike: never left out silently. A
# name held by two shards (the index naming one of them, or neither) is ambiguous: exit 3, one
# line naming both shards.
. "$(dirname "$0")/lib/hostile.sh"
python3 -c 'import numpy' 2>/dev/null || skip "python3 with numpy not found"
python3 - "$tmp" <<'PY' || fail "cannot write the checkpoints"
import collections, json, os, struct, sys
import numpy as np
sys.path.insert(0, "scripts")
import torch_writer as tw
d = sys.argv[1]
def st(path, ts):
    hdr, off = {}, 0
    for k, a in ts.items():
        hdr[k] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    h = json.dumps(hdr).encode(); h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for a in ts.values(): f.write(a.tobytes())
def pt(path, ts):
    tw.save(path, collections.OrderedDict(
        (k, tw.contiguous("FloatStorage", a.tobytes(), list(a.shape), str(i)))
        for i, (k, a) in enumerate(ts.items())))
a = np.arange(32, dtype="<f4").reshape(2, 16)
for kind, ext, idx, w in (("st", ".safetensors", "model.safetensors.index.json", st),
                          ("pt", ".bin", "pytorch_model.bin.index.json", pt)):
    # unlisted: shard 2 holds d, which the index leaves out
    u = os.path.join(d, kind + "_unlisted"); os.makedirs(u)
    w(os.path.join(u, "m-1" + ext), collections.OrderedDict([("a", a), ("b", a * 2)]))
    w(os.path.join(u, "m-2" + ext), collections.OrderedDict([("d", a * 4), ("c", a * 3)]))
    json.dump({"weight_map": {"a": "m-1" + ext, "b": "m-1" + ext, "c": "m-2" + ext}},
              open(os.path.join(u, idx), "w"))
    # twice: c in both shards, the index naming shard 2's
    t = os.path.join(d, kind + "_twice"); os.makedirs(t)
    w(os.path.join(t, "m-1" + ext), collections.OrderedDict([("a", a), ("c", a * 5)]))
    w(os.path.join(t, "m-2" + ext), collections.OrderedDict([("c", a * 3)]))
    json.dump({"weight_map": {"a": "m-1" + ext, "c": "m-2" + ext}},
              open(os.path.join(t, idx), "w"))
PY
for kind in st pt; do
    run ls "$tmp/${kind}_unlisted"
    [ "$rc" -eq 0 ] || fail "$kind: ls exit $rc"
    [ "$(awk 'NR > 1 {print $1}' "$tmp/out" | tr '\n' ' ')" = "a b c d " ] ||
        fail "$kind: the unlisted tensor d not listed after the index's: $(cat "$tmp/out")"
    run sqnr --all-tensors "$tmp/${kind}_unlisted" -q -o "$tmp/$kind.json"
    [ "$rc" -eq 0 ] || fail "$kind: sqnr exit $rc"
    python3 - "$tmp/$kind.json" <<'PY' || fail "$kind: d not analysed"
import json, sys
r = json.load(open(sys.argv[1]))
names = [t["name"] for t in r["tensors"]]
assert names == ["a", "b", "c", "d"], names
PY
    clean_fail "tensor c is held by both $tmp/${kind}_twice/m-1" ls "$tmp/${kind}_twice"
done
exit 0
