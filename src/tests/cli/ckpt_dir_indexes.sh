#!/bin/sh
# ckpt_dir_indexes.sh — a checkpoint directory is read through its one index file; a directory
# holding two (safetensors' model.safetensors.index.json, PyTorch's
# pytorch_model.bin.index.json) is refused with both named, exit 3 and one line, never one
# of them picked; a directory of shards without an index reads every shard in name order.
. "$(dirname "$0")/lib/hostile.sh"
need_command ls
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
a = np.arange(32, dtype="<f4").reshape(2, 16)
for kind in ("st", "pt"):
    os.makedirs(os.path.join(d, kind))
    for i, shard in enumerate(("b", "a")):
        name = "%s-%s" % (kind, shard)
        if kind == "st":
            st(os.path.join(d, kind, shard + ".safetensors"), {name: a})
        else:
            tw.save(os.path.join(d, kind, shard + ".bin"), collections.OrderedDict(
                [(name, tw.contiguous("FloatStorage", a.tobytes(), [2, 16], "0"))]))
suffix = {"st": (".safetensors", "model.safetensors.index.json", "x.safetensors.index.json"),
          "pt": (".bin", "pytorch_model.bin.index.json", "x.bin.index.json")}
for kind, (ext, i1, i2) in suffix.items():
    wm = {"%s-%s" % (kind, s): s + ext for s in ("a", "b")}
    os.makedirs(os.path.join(d, kind + "2"))
    for s in ("a", "b"):
        os.link(os.path.join(d, kind, s + ext), os.path.join(d, kind + "2", s + ext))
    for n in (i1, i2):
        json.dump({"weight_map": wm}, open(os.path.join(d, kind + "2", n), "w"))
PY
for kind in st pt; do
    run ls "$tmp/$kind"
    [ "$rc" -eq 0 ] || fail "$kind: a directory of shards: exit $rc"
    [ "$(awk 'NR > 1 {print $1}' "$tmp/out" | tr '\n' ' ')" = "$kind-a $kind-b " ] ||
        fail "$kind: shards not listed in name order: $(cat "$tmp/out")"
done
clean_fail "st2: holds 2 index files (model.safetensors.index.json, x.safetensors.index.json): name the one to read" \
    ls "$tmp/st2"
clean_fail "pt2: holds 2 index files (pytorch_model.bin.index.json, x.bin.index.json): name the one to read" \
    ls "$tmp/pt2"
exit 0
