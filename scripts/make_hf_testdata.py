#!/usr/bin/env python3
"""make_hf_testdata.py — the shared GPT checkpoint (an fp4diag HDF5 file) rewritten with the
reference writers in the forms Hugging Face and NumPy users have: Hugging Face names
(model.layers.N.mlp.down_proj.weight ...), one model.safetensors, two shards plus
model.safetensors.index.json (in sharded/), model.npz (stored) and model_z.npz (deflated), and
PyTorch checkpoints as torch.save writes them (scripts/torch_writer.py, no torch needed):
pytorch_model.bin, and two shards plus pytorch_model.bin.index.json (in sharded_pt/).
Tensors whose HDF5 dataset says dtype = "bfloat16" are stored as BF16 in safetensors (their
values are bf16 exactly, so nothing changes); NumPy has no bf16, so .npz holds float32.
Deterministic: the same input gives the same bytes (zip timestamps fixed by numpy).

usage: make_hf_testdata.py [--names] [IN.h5] OUTDIR
  --names   also write OUTDIR/names.tsv: HDF5 path <TAB> Hugging Face name, one per line
"""
import collections
import json
import os
import sys

import h5py
import numpy as np
import safetensors

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_writer  # noqa: E402

# fp4diag's GPT names -> the Hugging Face (Llama/Phi-3 style) names.
PARTS = {
    "qkv": "self_attn.qkv_proj",
    "proj": "self_attn.o_proj",
    "fc1": "mlp.up_proj",
    "fc2": "mlp.down_proj",
    "ln1": "input_layernorm",
    "ln2": "post_attention_layernorm",
}


def hf_name(path):
    p = path.strip("/").split("/")
    if p[0] == "blocks" and len(p) == 4:
        return "model.layers.%s.%s.%s" % (p[1], PARTS[p[2]], p[3])
    if p[0] == "lnf":
        return "model.norm." + p[1]
    return ".".join(p)


def bf16_bytes(a):
    u = np.ascontiguousarray(a, dtype="<f4").view("<u4")
    if np.any(u & 0xFFFF):
        raise SystemExit("a bfloat16 dataset holds values that are not bf16")
    return (u >> 16).astype("<u2").tobytes()


def main():
    args = [a for a in sys.argv[1:] if a != "--names"]
    names = "--names" in sys.argv[1:]
    src = args[0] if len(args) == 2 else "testdata/gpt_ckpt_small.h5"
    out = args[-1]
    os.makedirs(os.path.join(out, "sharded"), exist_ok=True)
    tensors = []  # (hdf5 path, hf name, float32 array, is bf16)
    with h5py.File(src, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                bf = obj.attrs.get("dtype", b"")
                bf = (bf.decode() if isinstance(bf, bytes) else str(bf)) == "bfloat16"
                tensors.append(("/" + name, hf_name(name), obj[()].astype(np.float32), bf))
        f.visititems(visit)

    def st_dict(ts):
        return {n: {"dtype": "bfloat16" if bf else "float32", "shape": list(a.shape),
                    "data": bf16_bytes(a) if bf else np.ascontiguousarray(a, "<f4").tobytes()}
                for _, n, a, bf in ts}

    meta = {"format": "pt", "source": os.path.basename(src)}
    with open(os.path.join(out, "model.safetensors"), "wb") as fh:
        fh.write(bytes(safetensors.serialize(st_dict(tensors), metadata=meta)))
    # Two shards: the first layer's tensors, then the rest.
    first = [t for t in tensors if t[1].startswith("model.layers.0.")]
    rest = [t for t in tensors if not t[1].startswith("model.layers.0.")]
    weight_map = {}
    total = 0
    for i, part in enumerate((first, rest)):
        shard = "model-%05d-of-00002.safetensors" % (i + 1)
        with open(os.path.join(out, "sharded", shard), "wb") as fh:
            fh.write(bytes(safetensors.serialize(st_dict(part), metadata={"format": "pt"})))
        for _, n, a, bf in part:
            weight_map[n] = shard
            total += a.size * (2 if bf else 4)
    index = {"metadata": {"total_size": total},
             "weight_map": {k: weight_map[k] for k in sorted(weight_map)}}
    with open(os.path.join(out, "sharded", "model.safetensors.index.json"), "w") as fh:
        json.dump(index, fh, indent=2)
        fh.write("\n")
    # PyTorch: BFloat16Storage for the bf16 tensors, FloatStorage for the rest
    def pt_dict(ts):
        d = collections.OrderedDict()
        for k, (_, n, a, bf) in enumerate(ts):
            d[n] = torch_writer.contiguous("BFloat16Storage" if bf else "FloatStorage",
                                           bf16_bytes(a) if bf else np.ascontiguousarray(a, "<f4").tobytes(),
                                           a.shape, str(k))
        return d

    torch_writer.save(os.path.join(out, "pytorch_model.bin"), pt_dict(tensors))
    os.makedirs(os.path.join(out, "sharded_pt"), exist_ok=True)
    pt_map = {}
    for i, part in enumerate((first, rest)):
        shard = "pytorch_model-%05d-of-00002.bin" % (i + 1)
        torch_writer.save(os.path.join(out, "sharded_pt", shard), pt_dict(part))
        pt_map.update({n: shard for _, n, _, _ in part})
    with open(os.path.join(out, "sharded_pt", "pytorch_model.bin.index.json"), "w") as fh:
        json.dump({"metadata": {"total_size": total}, "weight_map": {k: pt_map[k] for k in sorted(pt_map)}},
                  fh, indent=2)
        fh.write("\n")
    arrays = {n: a for _, n, a, _ in tensors}
    np.savez(os.path.join(out, "model.npz"), **arrays)
    np.savez_compressed(os.path.join(out, "model_z.npz"), **arrays)
    if names:
        with open(os.path.join(out, "names.tsv"), "w") as fh:
            for p, n, _, _ in tensors:
                fh.write("%s\t%s\n" % (p, n))


if __name__ == "__main__":
    main()
