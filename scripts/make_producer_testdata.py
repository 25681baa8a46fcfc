#!/usr/bin/env python3
"""make_producer_testdata.py — testdata/quantized/producer/: NVFP4/MXFP4 checkpoints written by
the producers' own code (not by our writer, scripts/make_quantized_testdata.py), for the audit.

A tiny Llama (transformers' LlamaForCausalLM from a config: hidden 64, intermediate 128, one
layer, vocab 32, seed 0, bf16) is saved as the source, then quantized three ways:

  source/              the bf16 checkpoint (save_pretrained)
  modelopt_nvfp4/      NVIDIA ModelOpt: mtq.quantize(NVFP4_DEFAULT_CFG) with a one-batch
                       calibration, then modelopt.torch.export.export_hf_checkpoint (the unified
                       HF export: weight U8, weight_scale F8_E4M3, weight_scale_2, input_scale,
                       hf_quant_config.json)
  modelopt_mixed/      the same with down_proj in FP8 (F8_E4M3 weight, not audited): ModelOpt
                       writes quant_algo MIXED_PRECISION and each module's quant_algo in
                       quantized_layers
  ct_nvfp4/            compressed-tensors nvfp4-pack-quantized (preset NVFP4A16) and
  ct_mxfp4/            mxfp4-pack-quantized (preset MXFP4A16): apply_quantization_config, the
                       qparams from compressed-tensors' own calculate_qparams / generate_gparam
                       on the bf16 min/max as llm-compressor's min-max observer gives them (per
                       block; the global scale of the fused groups q/k/v and gate/up the minimum
                       of the members', as llm-compressor's update_fused_layer_weight_global_scales
                       sets it), then ModelCompressor.compress_model and update_config
  gptoss_source/        a tiny gpt-oss (transformers' GptOssForCausalLM from a config: hidden 64,
                       intermediate 64, 2 experts, one layer, seed 0, bf16) as transformers
                       saves it: experts.gate_up_proj [E, H, 2I] (gate/up columns interleaved),
                       experts.down_proj [E, I, H] (square here: H = I)
  gptoss_mxfp4/        its experts in gpt-oss' MXFP4 layout (gate_up_proj_blocks [E, 2I, H/32,
                       16], _scales [E, 2I, H/32]; down_proj the same over I), the other
                       tensors bf16, config.json quant_method mxfp4. No gpt-oss quantizer runs
                       on a CPU (transformers' quantize_to_mxfp4 needs Triton on a GPU), so the
                       codes are written here: the source transposed to [E, R, K], OCP floor
                       scales, round-to-nearest-even of the fp32 quotient
  expected.safetensors every quantized tensor decoded to F32 by the producer's own dequantize:
                       ModelOpt NVFP4QTensor.dequantize(dtype=float32) (non-fast path),
                       compressed-tensors unpack_fp4_from_uint8 + forward.dequantize in float32
                       transformers' convert_moe_packed_tensors(dtype=float32) for gpt-oss,
                       transposed back to the export's [E, R, K]
                       (names "<fixture>/<logical name>")
  expected.json        per fixture and tensor, from numpy in fp64 (source bf16 -> fp64, the
                       expected decode -> fp64): sqnr_db = 10 log10(sum x^2 / sum (x - q)^2),
                       alpha = sum xq / sum x^2, and the pooled values; plus the versions of
                       every package used

Only the weights are quantized (lm_head and the embeddings stay bf16). Needs torch,
transformers, compressed-tensors and nvidia-modelopt (CPU is enough), e.g. in a venv:
    pip install torch transformers compressed-tensors nvidia-modelopt
Run from the repository root: python scripts/make_producer_testdata.py
"""
import json
import os
import shutil
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

OUT = "testdata/quantized/producer"
FUSED = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


def tiny_llama():
    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2, vocab_size=32,
                      max_position_embeddings=64, dtype="bfloat16",
                      architectures=["LlamaForCausalLM"])
    return LlamaForCausalLM(cfg).to(torch.bfloat16)


def tidy(d):
    """Keep only what a checkpoint needs: no generation_config.json."""
    p = os.path.join(d, "generation_config.json")
    if os.path.exists(p):
        os.remove(p)


# ---- ModelOpt ---------------------------------------------------------------------------------
def modelopt_nvfp4(expected, name="modelopt_nvfp4", mixed=False):
    import copy

    import modelopt
    import modelopt.torch.quantization as mtq
    from modelopt.torch.export import export_hf_checkpoint
    from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor

    m = tiny_llama()
    torch.manual_seed(1)
    batch = torch.randint(0, 32, (2, 8))
    cfg = copy.deepcopy(mtq.NVFP4_DEFAULT_CFG)
    if mixed:  # down_proj in FP8: the export says MIXED_PRECISION, quant_algo per layer
        fp8 = {"num_bits": (4, 3), "axis": None}
        cfg["quant_cfg"] += [{"quantizer_name": "*mlp.down_proj.weight_quantizer", "cfg": fp8},
                             {"quantizer_name": "*mlp.down_proj.input_quantizer", "cfg": fp8}]
    mtq.quantize(m, cfg, lambda model: model(batch))
    d = os.path.join(OUT, name)
    export_hf_checkpoint(m, export_dir=d)
    tidy(d)
    sd = load_file(os.path.join(d, "model.safetensors"))
    for k in sorted(sd):
        if not k.endswith(".weight_scale_2"):
            continue
        mod = k[: -len(".weight_scale_2")]
        packed, scale, ws2 = sd[mod + ".weight"], sd[mod + ".weight_scale"], sd[k]
        shape = (packed.shape[0], packed.shape[1] * 2)
        qt = NVFP4QTensor(torch.Size(shape), torch.float32, packed)
        w = qt.dequantize(dtype=torch.float32, scale=scale, double_scale=ws2,
                          block_sizes={-1: 16})
        expected[name + "/" + mod + ".weight"] = w.contiguous()
    return {"nvidia-modelopt": modelopt.__version__}


# ---- compressed-tensors -----------------------------------------------------------------------
def ct(fmt, expected):
    import compressed_tensors
    from compressed_tensors.compressors.model_compressors.model_compressor import ModelCompressor
    from compressed_tensors.compressors.nvfp4.helpers import unpack_fp4_from_uint8
    from compressed_tensors.compressors.mx_utils import decompress_mx_scale
    from compressed_tensors.quantization import (QuantizationConfig, QuantizationScheme,
                                                 apply_quantization_config)
    from compressed_tensors.quantization.lifecycle.forward import dequantize
    from compressed_tensors.quantization.quant_scheme import MXFP4A16, NVFP4A16
    from compressed_tensors.quantization.utils.helpers import calculate_qparams, generate_gparam

    m = tiny_llama()
    preset = NVFP4A16 if fmt == "nvfp4" else MXFP4A16
    qc = QuantizationConfig(
        config_groups={"group_0": QuantizationScheme(targets=["Linear"], **preset)},
        ignore=["lm_head"])
    apply_quantization_config(m, qc)
    mods = {n: mod for n, mod in m.named_modules() if hasattr(mod, "quantization_scheme")}
    args = {n: mod.quantization_scheme.weights for n, mod in mods.items()}
    with torch.no_grad():
        if fmt == "nvfp4":
            # the min-max observer's global scale, from the tensor's bf16 min and max
            for n, mod in mods.items():
                w = mod.weight
                mod.weight_global_scale.copy_(generate_gparam(w.amin(), w.amax()))
            # the fused groups share the smallest (llm-compressor
            # update_fused_layer_weight_global_scales)
            for n in list(mods):
                for group in FUSED:
                    if n.endswith("." + group[0]):
                        pre = n[: -len(group[0])]
                        members = [mods[pre + g] for g in group if pre + g in mods]
                        gs = torch.min(torch.cat([x.weight_global_scale for x in members]))
                        for x in members:
                            x.weight_global_scale.fill_(gs)
        for n, mod in mods.items():
            a = args[n]
            w = mod.weight
            blocks = w.reshape(w.shape[0], -1, a.group_size)
            gs = mod.weight_global_scale if fmt == "nvfp4" else None
            scale, zp = calculate_qparams(blocks.amin(dim=-1), blocks.amax(dim=-1), a, gs)
            mod.weight_scale.copy_(scale.to(mod.weight_scale.dtype))
    compressor = ModelCompressor.from_pretrained_model(m, f"{fmt}-pack-quantized")
    compressor.compress_model(m)
    d = os.path.join(OUT, f"ct_{fmt}")
    os.makedirs(d, exist_ok=True)
    sd = {k: v.contiguous() for k, v in m.state_dict().items()}
    save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    m.config.to_json_file(os.path.join(d, "config.json"))
    compressor.update_config(d)
    sd = load_file(os.path.join(d, "model.safetensors"))
    for k in sorted(sd):
        if not k.endswith(".weight_packed"):
            continue
        mod = k[: -len(".weight_packed")]
        packed = sd[k]
        rows, cols = packed.shape[0], packed.shape[1] * 2
        x_q = unpack_fp4_from_uint8(packed, rows, cols, dtype=torch.float32)
        if fmt == "nvfp4":
            scale = sd[mod + ".weight_scale"].to(torch.float32)
            gs = sd[mod + ".weight_global_scale"]
        else:
            scale = decompress_mx_scale(sd[mod + ".weight_scale"]).to(torch.float32)
            gs = None
        w = dequantize(x_q=x_q, scale=scale, args=args[mod], global_scale=gs,
                       dtype=torch.float32)
        expected[f"ct_{fmt}/" + mod + ".weight"] = w.contiguous()
    return {"compressed-tensors": compressed_tensors.__version__}


# ---- gpt-oss (transformers' layout and decode) -------------------------------------------------
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float32)


def e2m1_rtne(q):
    """fp32 quotients -> E2M1 codes, nearest, ties to the even code, saturating at 6."""
    a = np.abs(q).astype(np.float64)
    d = np.abs(a[..., None] - E2M1.astype(np.float64))
    best = np.argmin(d, axis=-1)
    m = d.min(axis=-1)
    tie = (d == m[..., None]).sum(axis=-1) > 1
    best = np.where(tie & (best % 2 == 1), best + 1, best)
    best = np.where(a >= 6, 7, best)
    return (best | np.where(np.signbit(q), 8, 0)).astype(np.uint8)


def gptoss_mxfp4(w):
    """[E, R, K] fp32 -> blocks [E, R, K/32, 16], scales [E, R, K/32] (OCP floor)."""
    E, R, K = w.shape
    blk = w.reshape(E, R, K // 32, 32)
    amax = np.max(np.abs(blk), axis=-1).astype(np.float64)
    e = np.floor(np.log2(np.where(amax > 0, amax, 1.0))).astype(np.int64)
    sb = np.where(amax > 0, np.clip(127 + e - 2, 0, 254), 0).astype(np.uint8)
    s = np.ldexp(np.float32(1.0), sb.astype(np.int32) - 127).astype(np.float32)
    codes = e2m1_rtne((blk / s[..., None]).astype(np.float32)).reshape(E, R, K)
    c = codes.reshape(E, R, K // 2, 2)
    packed = (c[..., 0] | (c[..., 1] << 4)).astype(np.uint8)
    return packed.reshape(E, R, K // 32, 16), sb


def gptoss(expected):
    from transformers import GptOssConfig, GptOssForCausalLM
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    torch.manual_seed(0)
    cfg = GptOssConfig(hidden_size=64, intermediate_size=64, num_hidden_layers=1,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                       num_local_experts=2, num_experts_per_tok=1, vocab_size=32,
                       max_position_embeddings=64, layer_types=["full_attention"],
                       dtype="bfloat16")
    m = GptOssForCausalLM(cfg).to(torch.bfloat16)
    src_dir = os.path.join(OUT, "gptoss_source")
    m.save_pretrained(src_dir)
    tidy(src_dir)
    sd = load_file(os.path.join(src_dir, "model.safetensors"))
    out = {}
    for k, v in sd.items():
        if k.endswith("mlp.experts.gate_up_proj") or k.endswith("mlp.experts.down_proj"):
            w = v.to(torch.float32).transpose(1, 2).contiguous().numpy()  # [E, R, K]
            blocks, scales = gptoss_mxfp4(w)
            out[k + "_blocks"] = torch.from_numpy(blocks)
            out[k + "_scales"] = torch.from_numpy(scales)
            dec = convert_moe_packed_tensors(out[k + "_blocks"], out[k + "_scales"],
                                             dtype=torch.float32)  # [E, K, R]
            expected["gptoss_mxfp4/" + k] = dec.transpose(1, 2).contiguous()
        else:
            out[k] = v
    d = os.path.join(OUT, "gptoss_mxfp4")
    os.makedirs(d, exist_ok=True)
    save_file(out, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    c = json.load(open(os.path.join(src_dir, "config.json")))
    c["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
        "lm_head"]}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")
    return {}


def fp64_metrics(expected):
    src = {}
    for sdir in ("source", "gptoss_source"):
        for k, v in load_file(os.path.join(OUT, sdir, "model.safetensors")).items():
            a = v.to(torch.float32)
            if sdir == "gptoss_source" and a.dim() == 3:
                a = a.transpose(1, 2)  # transformers' [E, K, R] to the export's [E, R, K]
            src[(sdir, k)] = a.numpy().astype(np.float64)
    out = {}
    for key in sorted(expected):
        fx, name = key.split("/", 1)
        x = src[("gptoss_source" if fx.startswith("gptoss") else "source", name)].ravel()
        q = expected[key].numpy().astype(np.float64).ravel()
        xx, ee, xq = float(x @ x), float((x - q) @ (x - q)), float(x @ q)
        f = out.setdefault(fx, {"tensors": {}, "sums": [0.0, 0.0, 0.0]})
        f["tensors"][name] = {"sqnr_db": 10 * np.log10(xx / ee), "alpha": xq / xx}
        f["sums"] = [f["sums"][0] + xx, f["sums"][1] + ee, f["sums"][2] + xq]
    for f in out.values():
        xx, ee, xq = f.pop("sums")
        f["pooled"] = {"sqnr_db": 10 * np.log10(xx / ee), "alpha": xq / xx}
    return out


def main():
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    src = tiny_llama()
    src.save_pretrained(os.path.join(OUT, "source"))
    tidy(os.path.join(OUT, "source"))
    expected = {}
    versions = {"python": sys.version.split()[0], "torch": torch.__version__,
                "transformers": transformers.__version__, "numpy": np.__version__}
    versions.update(modelopt_nvfp4(expected))
    versions.update(ct("nvfp4", expected))
    versions.update(ct("mxfp4", expected))
    versions.update(gptoss(expected))
    # decoded by the same ModelOpt code as modelopt_nvfp4: metrics only, no arrays kept
    metrics_only = {}
    modelopt_nvfp4(metrics_only, "modelopt_mixed", mixed=True)
    save_file(expected, os.path.join(OUT, "expected.safetensors"))
    doc = {"made_by": "scripts/make_producer_testdata.py", "versions": versions,
           "fixtures": fp64_metrics({**expected, **metrics_only})}
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps(versions))


if __name__ == "__main__":
    main()
