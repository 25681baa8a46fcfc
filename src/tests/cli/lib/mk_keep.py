#!/usr/bin/env python3
"""mk_keep.py OUT — a small Llama-like bf16 checkpoint and two ModelOpt NVFP4 exports of it
(NumPy only), for audit_keep.sh (issue 27: what audit's KEEP means):

  OUT/source/         bf16: 2 layers of q/k/v/o_proj, gate/up/down_proj (hidden 128,
                      intermediate 512), norms; layer 1's down_proj has a "super weight" input
                      column (column 7 x100): its blocks' scales are set by it, so the rest of
                      each block is coarsened (the non-amax SQNR falls) while the tensor's SQNR
                      rises
  OUT/modelopt/       ModelOpt NVFP4 by its rule (per-tensor scale fp32(amax / 2688) from the
                      fused group's amax, q/k/v and gate/up sharing one; block bytes
                      e4m3(clamp(amax / fp32(6 g), 2^-9, 448)); codes the nearest E2M1 point of
                      the fp32 quotient, ties to even)
  OUT/modelopt_bad/   the same with 5% of both o_proj's codes one level larger in magnitude
                      (never at 0 or 6): an export worse than round-to-nearest of its source

Written after a user's generator; the rules are those of scripts/make_quantized_testdata.py.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nvfp4_np import E4, bf16, bf16_bits, e2m1, e4m3_rne, save_st as _save  # noqa: E402

out = sys.argv[1]
rng = np.random.default_rng(1234)
H, I, L = 128, 512, 2


def save_st(path, tensors):
    _save(path, tensors, {"format": "pt"})


def w(shape, scale=0.02):
    return (rng.standard_t(5, size=shape) * scale).astype(np.float32)


src = {}
for l in range(L):
    p = f"model.layers.{l}."
    src[p + "self_attn.q_proj.weight"] = w((H, H))
    src[p + "self_attn.k_proj.weight"] = w((H // 2, H))
    src[p + "self_attn.v_proj.weight"] = w((H // 2, H), 0.01)
    src[p + "self_attn.o_proj.weight"] = w((H, H))
    src[p + "mlp.gate_proj.weight"] = w((I, H))
    src[p + "mlp.up_proj.weight"] = w((I, H))
    src[p + "mlp.down_proj.weight"] = w((H, I))
    src[p + "input_layernorm.weight"] = np.ones(H, np.float32)
src["model.layers.1.mlp.down_proj.weight"][:, 7] *= 100.0
src = {k: bf16(v) for k, v in src.items()}
os.makedirs(f"{out}/source", exist_ok=True)
save_st(f"{out}/source/model.safetensors", {k: ("BF16", bf16_bits(v)) for k, v in src.items()})

FUSED = {"q_proj": "qkv", "k_proj": "qkv", "v_proj": "qkv", "gate_proj": "gu", "up_proj": "gu"}


def group(name):
    parts = name.split(".")
    return ".".join(parts[:-2]) + "/" + FUSED.get(parts[-2], parts[-2])


qnames = [k for k in src if k.endswith("proj.weight")]
gamax = {}
for k in qnames:
    gamax[group(k)] = max(gamax.get(group(k), 0.0), float(np.max(np.abs(src[k]))))

for prod in ("modelopt", "modelopt_bad"):
    T = {}
    for k, x in src.items():
        if k not in qnames:
            T[k] = ("BF16", bf16_bits(x))
            continue
        ws2 = np.float32(np.float32(gamax[group(k)]) / np.float32(2688.0))
        R, K = x.shape
        blk = x.reshape(R, K // 16, 16)
        bam = np.max(np.abs(blk), axis=2).astype(np.float32)
        ratio = np.where(bam == 0, np.float32(1), (bam / np.float32(np.float32(6) * ws2)).astype(np.float32))
        sb = e4m3_rne(np.clip(ratio, np.float32(2.0**-9), np.float32(448)))
        s = (E4[sb].astype(np.float32) * ws2).astype(np.float32)
        codes = e2m1((blk / s[..., None]).astype(np.float32)).reshape(R, K)
        if prod == "modelopt_bad" and k.endswith("o_proj.weight"):
            mag = codes & 7
            sel = (np.random.default_rng(7).random(codes.shape) < 0.05) & (mag < 7) & (mag > 0)
            codes = np.where(sel, codes + 1, codes).astype(np.uint8)
        m = k[: -len(".weight")]
        T[m + ".weight"] = ("U8", (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8))
        T[m + ".weight_scale"] = ("F8_E4M3", sb)
        T[m + ".weight_scale_2"] = ("F32", np.array(ws2, np.float32).reshape(()))
        T[m + ".input_scale"] = ("F32", np.array(0.01, np.float32).reshape(()))
    d = f"{out}/{prod}"
    os.makedirs(d, exist_ok=True)
    save_st(f"{d}/model.safetensors", T)
    json.dump({"producer": {"name": "modelopt", "version": "0.47.0"},
               "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                "kv_cache_quant_algo": None, "exclude_modules": []}},
              open(f"{d}/hf_quant_config.json", "w"))
    json.dump({"architectures": ["LlamaForCausalLM"]}, open(f"{d}/config.json", "w"))
json.dump({"architectures": ["LlamaForCausalLM"], "hidden_size": H, "intermediate_size": I,
           "num_hidden_layers": L, "torch_dtype": "bfloat16"}, open(f"{out}/source/config.json", "w"))
