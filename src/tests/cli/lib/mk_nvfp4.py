"""mk_nvfp4.py OUT [--swizzle] [--pertensor] — a tiny bf16 source (OUT/source) and its ModelOpt
NVFP4 export (OUT/export), NumPy alone, quantized round-to-nearest as ModelOpt does
(QUANTIZED.md: ws2 = fp32(group_amax / 2688), byte = e4m3(clamp(block_amax / fp32(6 ws2),
2^-9, 448)), codes the nearest E2M1 point of the fp32 quotient, ties to even).
--swizzle: every weight_scale stored in the cuBLAS 128x4 tile order in its flat shape (as
ModelOpt's opt-in swizzle_nvfp4_scales lays it out, a user's converter forgetting the shape).
--pertensor: each weight's weight_scale_2 from its own amax, not its fused q/k/v group's.
Prints, per weight, name, the group's and the tensor's amax."""
import json, os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nvfp4_np import E4, bf16, bf16_bits, e2m1, e4m3_rne, save_st as save  # noqa: E402

out = sys.argv[1]
SWZ = "--swizzle" in sys.argv
PER = "--pertensor" in sys.argv
rng = np.random.default_rng(1234)


P = "model.layers.0.self_attn."
src = {P + "q_proj.weight": (128, 64), P + "k_proj.weight": (128, 64),
       P + "v_proj.weight": (128, 64), P + "o_proj.weight": (128, 64)}
src = {k: bf16(rng.standard_t(5, size=s) * (0.01 if "v_proj" in k else 0.02)) for k, s in src.items()}
os.makedirs(out + "/source")
save(out + "/source/model.safetensors", {k: ("BF16", bf16_bits(v)) for k, v in src.items()})
group = {k: max(float(np.abs(src[P + m + "_proj.weight"]).max()) for m in "qkv")
         if k.split(".")[-2] in ("q_proj", "k_proj", "v_proj") else float(np.abs(v).max())
         for k, v in src.items()}
T = {}
for k, x in src.items():
    m = k[:-len(".weight")]
    ga = float(np.abs(x).max()) if PER else group[k]
    ws2 = np.float32(np.float32(ga) / np.float32(2688.0))
    R, K = x.shape
    blk = x.reshape(R, K // 16, 16)
    bam = np.abs(blk).max(axis=2).astype(np.float32)
    ratio = np.where(bam == 0, np.float32(1), (bam / np.float32(np.float32(6) * ws2)).astype(np.float32))
    sb = e4m3_rne(np.clip(ratio, np.float32(2.0**-9), np.float32(448)))
    s = (E4[sb].astype(np.float32) * ws2).astype(np.float32)
    codes = e2m1((blk / s[..., None]).astype(np.float32)).reshape(R, K)
    if SWZ:
        C = sb.shape[1]
        sb = sb.reshape(R // 128, 128, C // 4, 4).transpose(0, 2, 1, 3).reshape(-1, 4, 32, 4) \
               .transpose(0, 2, 1, 3).reshape(R, C)
    T[m + ".weight"] = ("U8", (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8))
    T[m + ".weight_scale"] = ("F8_E4M3", np.ascontiguousarray(sb))
    T[m + ".weight_scale_2"] = ("F32", np.array(ws2, np.float32).reshape(()))
    print(k, repr(np.float32(group[k])), repr(np.float32(np.abs(x).max())))
os.makedirs(out + "/export")
save(out + "/export/model.safetensors", T)
json.dump({"producer": {"name": "modelopt", "version": "0.47.0"},
           "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}},
          open(out + "/export/hf_quant_config.json", "w"))
