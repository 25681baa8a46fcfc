#!/usr/bin/env python3
"""make_select_testdata.py — testdata/select/model.safetensors: a small Llama-style bf16
checkpoint with planted problems, for the default selection, the "keep in high precision"
ranking and --emit-exclude (SPEC §9, issue 28).

Tensors (hidden 64, intermediate 128, vocab 128, 4 layers; weights N(0, 0.02), seed 28):
  model.embed_tokens.weight [128, 64], lm_head.weight [128, 64]     kept by recipe
  model.norm.weight, model.layers.N.{input,post_attention}_layernorm.weight [64]  (rank 1)
  model.layers.N.self_attn.{q,k,v,o}_proj.weight [64, 64]
  model.layers.N.mlp.{gate,up}_proj.weight [128, 64], mlp.down_proj.weight [64, 128]
Planted:
  model.layers.1.mlp.down_proj  every block of 16 along a row holds one value of 1.0 (its
                                amax) beside N(0, 0.02) values: under E2M1 with the block
                                scale amax/6 everything below amax/24 = 0.042 flushes to zero
                                (about 96 % of the block); SQNR stays high (the outlier is
                                stored exactly and carries the energy)
  model.layers.2.self_attn.o_proj  a "super weight" input column (column 7 = 2.0 in every
                                row): the block holding it flushes its other 15 values
Values are rounded to bf16 (nearest even) and stored as BF16; deterministic bytes.

usage: make_select_testdata.py [OUTDIR]   (default testdata/select)
"""
import json
import os
import struct
import sys

import numpy as np

H, I, V, L = 64, 128, 128, 4


def bf16_bytes(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    w = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype("<u2")
    return w.tobytes()


def tensors():
    rng = np.random.default_rng(28)
    out = [("model.embed_tokens.weight", rng.normal(0, 0.02, (V, H)))]
    for n in range(L):
        p = f"model.layers.{n}."
        out.append((p + "input_layernorm.weight", 1 + rng.normal(0, 0.05, (H,))))
        for m in ("q", "k", "v", "o"):
            w = rng.normal(0, 0.02, (H, H))
            if n == 2 and m == "o":
                w[:, 7] = 2.0  # super-weight column
            out.append((p + f"self_attn.{m}_proj.weight", w))
        out.append((p + "post_attention_layernorm.weight", 1 + rng.normal(0, 0.05, (H,))))
        out.append((p + "mlp.gate_proj.weight", rng.normal(0, 0.02, (I, H))))
        out.append((p + "mlp.up_proj.weight", rng.normal(0, 0.02, (I, H))))
        w = rng.normal(0, 0.02, (H, I))
        if n == 1:
            w[:, 5::16] = 1.0  # one amax of 1.0 in every block of 16 along the rows
        out.append((p + "mlp.down_proj.weight", w))
    out.append(("model.norm.weight", 1 + rng.normal(0, 0.05, (H,))))
    out.append(("lm_head.weight", rng.normal(0, 0.02, (V, H))))
    return out


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "select")
    os.makedirs(outdir, exist_ok=True)
    header, blobs, off = {}, [], 0
    for name, x in tensors():
        b = bf16_bytes(x)
        header[name] = {"dtype": "BF16", "shape": list(x.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(outdir, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


if __name__ == "__main__":
    main()
