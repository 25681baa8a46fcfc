#!/usr/bin/env python3
"""make_audit_bench.py — a large ModelOpt NVFP4 export and its bf16 source, to time `fp4diag
audit` (not test data: written where you say, e.g. under /tmp).

    make_audit_bench.py OUT [TENSORS] [ROWS] [COLS]

OUT/source/model.safetensors holds TENSORS bf16 weights model.layers.N.mlp.down_proj.weight of
ROWS x COLS (defaults 114 x 4096 x 4096: a 1.07 GB export, a 3.8 GB source), normal values with
rows of all sizes; OUT/export/ the same as ModelOpt's weight-only NVFP4 export lays them out
(weight U8, weight_scale F8_E4M3 flat, weight_scale_2 F32 0-d, hf_quant_config.json
W4A16_NVFP4), made by ModelOpt's rule in its fp32 order (ws2 = amax / 2688, byte =
e4m3(clamp(block_amax / fp32(6 ws2), 2^-9, 448)), codes round-to-nearest-even of w / s), so
that the audit finds every scale byte and the export equal to its own round-to-nearest. One
tensor at a time in memory. Needs torch (CPU) and safetensors.
"""
import json
import os
import struct
import sys

import torch

BOUNDS = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])


def rtne_codes(q):
    """E2M1 code of fp32 quotient q, ties to the even code, saturating at 6; sign in bit 3."""
    a = q.abs()
    idx = torch.zeros(q.shape, dtype=torch.uint8)
    for k, t in enumerate(BOUNDS.tolist()):
        up = (a > t) | ((a == t) & ((k + 1) % 2 == 0))
        idx = torch.where(up, torch.tensor(k + 1, dtype=torch.uint8), idx)
    return idx | (q < 0).to(torch.uint8) << 3


def modelopt_nvfp4(w):
    rows, cols = w.shape
    wf = w.to(torch.float32)
    ws2 = (wf.abs().max() / 2688.0).to(torch.float32)
    blk = wf.reshape(rows, cols // 16, 16)
    amax = blk.abs().amax(dim=-1)
    ratio = amax / (6.0 * ws2)
    ratio = torch.where(amax == 0, torch.ones_like(ratio), ratio).clamp(2.0 ** -9, 448.0)
    sb = ratio.to(torch.float8_e4m3fn)
    s = sb.to(torch.float32) * ws2
    codes = rtne_codes(blk / s[..., None]).reshape(rows, cols)
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    return packed.contiguous(), sb.view(torch.uint8).contiguous(), ws2


class Writer:
    """A safetensors file written tensor by tensor (the header sized up front)."""

    def __init__(self, path, entries):
        self.f = open(path, "wb")
        header, off = {}, 0
        for name, dtype, shape, nbytes in entries:
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + nbytes]}
            off += nbytes
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        self.f.write(struct.pack("<Q", len(h)) + h)

    def put(self, t):
        self.f.write(t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())

    def close(self):
        self.f.close()


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 114
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
    cols = int(sys.argv[4]) if len(sys.argv) > 4 else 4096
    os.makedirs(os.path.join(out, "source"), exist_ok=True)
    os.makedirs(os.path.join(out, "export"), exist_ok=True)
    names = ["model.layers.%d.mlp.down_proj.weight" % i for i in range(n)]
    src = Writer(os.path.join(out, "source", "model.safetensors"),
                 [(m, "BF16", [rows, cols], rows * cols * 2) for m in names])
    ex_entries = []
    for m in names:
        ex_entries += [(m, "U8", [rows, cols // 2], rows * cols // 2),
                       (m + "_scale", "F8_E4M3", [rows, cols // 16], rows * cols // 16),
                       (m + "_scale_2", "F32", [], 4)]
    ex = Writer(os.path.join(out, "export", "model.safetensors"), ex_entries)
    g = torch.Generator().manual_seed(27)
    for m in names:
        w = torch.randn(rows, cols, generator=g) * 0.02
        w = (w * torch.randn(rows, 1, generator=g).exp()).to(torch.bfloat16)
        src.put(w)
        p, sb, ws2 = modelopt_nvfp4(w)
        ex.put(p)
        ex.put(sb)
        ex.put(ws2.reshape(()))
    src.close()
    ex.close()
    with open(os.path.join(out, "export", "hf_quant_config.json"), "w") as f:
        json.dump({"producer": {"name": "modelopt"},
                   "quantization": {"quant_algo": "W4A16_NVFP4", "group_size": 16,
                                    "exclude_modules": ["lm_head"]}}, f)


if __name__ == "__main__":
    main()
