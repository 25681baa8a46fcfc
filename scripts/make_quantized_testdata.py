#!/usr/bin/env python3
"""make_quantized_testdata.py — the small already-quantized checkpoints under testdata/quantized/.

An independent writer (numpy only) following ../shared/QUANTIZED.md and the producers' code it
quotes; the producers' own packages (compressed-tensors, ModelOpt: both need torch) were not
installable on the build machine, so every rule below is written out here, in the producers'
fp32/bf16 order of operations:

  source/model.safetensors      the bf16 source: q/k/v_proj, mlp.down_proj, lm_head, norm and a
                                gpt-oss expert tensor (gate_up_proj [E, R, K])
  modelopt_nvfp4/               ModelOpt W4A16_NVFP4: weight U8, weight_scale F8_E4M3 flat,
                                weight_scale_2 F32 0-d (q/k/v share one), hf_quant_config.json
                                excluding lm_head; lm_head and norm stay bf16
  ct_nvfp4/                     compressed-tensors nvfp4-pack-quantized: weight_packed,
                                weight_scale, weight_global_scale [1] (bf16 arithmetic),
                                config.json quantization_config
  ct_mxfp4/                     compressed-tensors mxfp4-pack-quantized (U8 E8M0 scales, group
                                32, its power-of-two rounding)
  gptoss_mxfp4/                 gpt-oss: gate_up_proj_blocks [E, R, K/32, 16] + _scales
  modelopt_mxfp4/               ModelOpt MXFP4 (W4A8_MXFP4_FP8 weights, mxfp4_tensor.py): weight
                                U8, weight_scale U8 E8M0 [out, in/32] by ModelOpt's float ceil
                                rule ceil(max(log2(amax / 6), -127)) + 127, codes by its
                                cast_fp4: an exact midpoint rounds toward zero (0.75 -> 0.5,
                                1.75 -> 1.5, 3.5 -> 3) and an exact 0 is code 0x8 (-0);
                                input_scale F32; hf_quant_config.json
  bad_mx_nibble/, bad_mx_rule/  that export with down_proj's nibbles swapped / with every
                                tensor's scales by the OCP floor rule (codes cast_fp4 of them),
                                declared ModelOpt all the same
  bad_*/                        partner faults: a missing weight_scale_2, a scale of the wrong
                                shape, a config naming another producer, an orphan scale;
                                bad_nibble/: down_proj's nibbles swapped (the audit's layout
                                check names it); bad_fused/: k_proj with a global scale of its
                                own; bad_swizzle/: scales swizzled 128x4 in the flat shape
expected/<name>.safetensors holds every logical tensor decoded to F32 by
the producer's formula (the unit test compares fp4diag's decode with it bit for bit).

Run from the repository root: python3 scripts/make_quantized_testdata.py
"""
import json
import os
import struct

import numpy as np

OUT = "testdata/quantized"
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float32)


# ---- number formats ----------------------------------------------------------------------
def bf16_round(x):
    """fp32 -> nearest bf16 (ties to even), returned as fp32."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return b.astype(np.uint32).view(np.float32)


def bf16_bits(x):
    return (np.asarray(x, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def e4m3_decode(b):
    b = int(b)
    e, m = (b >> 3) & 15, b & 7
    if (b & 0x7F) == 0x7F:
        v = float("nan")
    elif e == 0:
        v = m / 512.0
    else:
        v = (1 + m / 8.0) * 2.0 ** (e - 7)
    return np.float32(-v if b & 0x80 else v)


E4M3_VALUES = np.array([e4m3_decode(b) for b in range(0x7F)], dtype=np.float64)  # 0 .. 448


def e4m3_encode(v):
    """RTNE to E4M3 with saturation at 448 (torch's float8_e4m3fn cast of a finite value)."""
    v = float(np.float32(v))
    if v >= 448.0:
        return 0x7E
    i = int(np.searchsorted(E4M3_VALUES, v))
    if i < len(E4M3_VALUES) and E4M3_VALUES[i] == v:
        return i
    lo, hi = i - 1, i
    dl, dh = v - E4M3_VALUES[lo], E4M3_VALUES[hi] - v
    if dl < dh or (dl == dh and lo % 2 == 0):
        return lo
    return hi


def e2m1_rtne(q):
    """fp32 quotient -> E2M1 code (ties to the even code), sign in bit 3 (+0 for 0)."""
    a = np.abs(q)
    idx = np.zeros(q.shape, dtype=np.uint8)
    bounds = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
    for k, t in enumerate(bounds):
        # above the midpoint, or on it when the upper neighbour is even
        up = (a > t) | ((a == t) & ((k + 1) % 2 == 0))
        idx = np.where(up, k + 1, idx).astype(np.uint8)
    return (idx | np.where(q < 0, 8, 0)).astype(np.uint8)


def pack(codes):
    """element 2j -> low nibble, 2j+1 -> high nibble (every HF producer)."""
    c = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 2, 2)
    return (c[..., 0] | (c[..., 1] << 4)).astype(np.uint8)


def decode_values(codes):
    v = E2M1[codes & 7]
    return np.where(codes & 8, -v, v).astype(np.float32)


# ---- safetensors writer -------------------------------------------------------------------
def write_st(path, tensors, metadata=None):
    """tensors: list of (name, dtype string, shape, bytes)."""
    header, off, blobs = {}, 0, []
    if metadata:
        header["__metadata__"] = metadata
    for name, dt, shape, data in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
        blobs.append(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def f32(name, a):
    a = np.asarray(a, dtype=np.float32)
    return (name, "F32", a.shape, a.astype("<f4").tobytes())


def u8(name, a, dt="U8"):
    a = np.asarray(a, dtype=np.uint8)
    return (name, dt, a.shape, a.tobytes())


def bf16(name, a):
    a = np.asarray(a, dtype=np.float32)
    return (name, "BF16", a.shape, bf16_bits(a).astype("<u2").tobytes())


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


# ---- the source ---------------------------------------------------------------------------
def make_source(rng):
    P = "model.layers.0."
    src = {}
    for name, shape in [("self_attn.q_proj", (32, 64)), ("self_attn.k_proj", (16, 64)),
                        ("self_attn.v_proj", (16, 64)), ("mlp.down_proj", (32, 64))]:
        w = rng.standard_normal(shape).astype(np.float32) * 0.02
        w *= np.exp(rng.standard_normal((shape[0], 1))).astype(np.float32)  # rows of all sizes
        src[P + name + ".weight"] = bf16_round(w)
    src[P + "self_attn.q_proj.weight"][3, 16:32] = 0.0  # one all-zero block
    src[P + "mlp.down_proj.weight"][5, 7] = 0.9         # an outlier
    src[P + "mlp.down_proj.weight"] = bf16_round(src[P + "mlp.down_proj.weight"])
    src["lm_head.weight"] = bf16_round(rng.standard_normal((16, 64)).astype(np.float32) * 0.05)
    src["model.norm.weight"] = bf16_round(1 + 0.1 * rng.standard_normal(64).astype(np.float32))
    src[P + "mlp.experts.gate_up_proj"] = bf16_round(
        rng.standard_normal((2, 8, 64)).astype(np.float32) * 0.03)
    src["model.layers.1.mlp.up_proj.weight"] = bf16_round(  # for the swizzle fault
        np.random.default_rng(28).standard_normal((128, 64)).astype(np.float32) * 0.02)
    return src


LINEARS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.down_proj"]
FUSED = {"self_attn.q_proj": "qkv", "self_attn.k_proj": "qkv", "self_attn.v_proj": "qkv",
         "mlp.down_proj": "down"}


def group_amax(src, P):
    g = {}
    for m in LINEARS:
        a = np.float32(np.max(np.abs(src[P + m + ".weight"])))
        g[FUSED[m]] = max(g.get(FUSED[m], np.float32(0)), a)
    return g


# ---- ModelOpt NVFP4 (weight-only export) ---------------------------------------------------
def modelopt_nvfp4(w, ws2):
    """ws2 = fp32(group_amax / 2688); byte = e4m3(clamp(block_amax / fp32(6 * ws2), 2^-9, 448)),
    zero blocks 1.0 before the cast; codes = RTNE(w / (e4m3(byte) * ws2)) in fp32."""
    rows, K = w.shape
    blk = w.reshape(rows, K // 16, 16)
    amax = np.max(np.abs(blk), axis=-1).astype(np.float32)
    den = np.float32(np.float32(6.0) * ws2)
    ratio = (amax / den).astype(np.float32)
    ratio = np.where(amax == 0, np.float32(1.0), ratio)
    ratio = np.clip(ratio, np.float32(2.0 ** -9), np.float32(448.0))
    sbytes = np.vectorize(e4m3_encode, otypes=[np.uint8])(ratio)
    s = (np.vectorize(e4m3_decode, otypes=[np.float32])(sbytes) * ws2).astype(np.float32)
    q = (blk / s[..., None]).astype(np.float32)
    codes = e2m1_rtne(q).reshape(rows, K)
    # ModelOpt's dequantize table has +0 at code 8 (nvfp4_tensor.py e2m1_values)
    vals = np.where(codes == 8, np.float32(0.0), decode_values(codes))
    dec = (vals.reshape(rows, K // 16, 16) * s[..., None]).astype(np.float32)
    return pack(codes), sbytes, dec.reshape(rows, K)


# ---- compressed-tensors NVFP4 --------------------------------------------------------------
def ct_global(amax):
    """2688 / amax in bf16: amax.reciprocal() * 2688, each step rounded to bf16."""
    return bf16_round(np.float32(2688.0) * bf16_round(np.float32(1.0) / np.float32(amax)))


def ct_nvfp4(w, gs):
    """byte = e4m3_rne(fp32(gs * bf16(block_amax / 6))), zero blocks 0x20 (0.125); scale =
    e4m3(byte) / gs; codes = RTNE(w / scale)."""
    rows, K = w.shape
    blk = w.reshape(rows, K // 16, 16)
    amax = np.max(np.abs(blk), axis=-1).astype(np.float32)
    t = (gs * bf16_round((amax / np.float32(6.0)).astype(np.float32))).astype(np.float32)
    sbytes = np.vectorize(e4m3_encode, otypes=[np.uint8])(t)
    sbytes = np.where(sbytes == 0, np.uint8(0x20), sbytes).astype(np.uint8)
    s = (np.vectorize(e4m3_decode, otypes=[np.float32])(sbytes) / gs).astype(np.float32)
    q = (blk / s[..., None]).astype(np.float32)
    codes = e2m1_rtne(q).reshape(rows, K)
    dec = (decode_values(codes).reshape(rows, K // 16, 16) * s[..., None]).astype(np.float32)
    return pack(codes), sbytes, dec.reshape(rows, K)


# ---- MXFP4 ---------------------------------------------------------------------------------
def ct_mx_byte(amax):
    """compressed-tensors generate_mx_scales: round amax to a power of two by adding
    1 << (23 - 2) to its bits and masking the mantissa, then 127 + floor(log2) - 2."""
    if amax == 0:
        return 0
    b = int(np.float32(amax).view(np.uint32))
    b = (b + (1 << 21)) & 0x7F800000
    e = (b >> 23) - 127
    return max(0, min(254, 127 + e - 2))


def ocp_floor_byte(amax):
    if amax == 0:
        return 0
    e = int(np.floor(np.log2(np.float64(amax))))
    return max(0, min(254, 127 + e - 2))


def mxfp4(w, byte_rule):
    lead, K = w.shape[:-1], w.shape[-1]
    blk = w.reshape(*lead, K // 32, 32)
    amax = np.max(np.abs(blk), axis=-1).astype(np.float32)
    sbytes = np.vectorize(byte_rule, otypes=[np.uint8])(amax)
    s = np.vectorize(lambda b: np.float32(2.0 ** (int(b) - 127)), otypes=[np.float32])(sbytes)
    q = (blk / s[..., None]).astype(np.float32)
    codes = e2m1_rtne(q).reshape(*lead, K)
    dec = (decode_values(codes).reshape(*lead, K // 32, 32) * s[..., None]).astype(np.float32)
    return pack(codes), sbytes, dec.reshape(*lead, K)


def modelopt_mx_byte(amax):
    """ModelOpt MXFP4QTensor.quantize: e = ceil(max(log2(fp32(amax / 6)), -127)) in fp32 (an
    all-zero block: log2(0) = -inf -> -127), byte e + 127."""
    with np.errstate(divide="ignore"):
        lg = np.log2(np.float32(np.float32(amax) / np.float32(6.0)))
    return int(np.ceil(np.maximum(lg, np.float32(-127.0)))) + 127


def modelopt_cast_fp4(q):
    """ModelOpt's cast_fp4: sign bit (2 - sign(x)) // 2 (1 for an exact 0, -0 included),
    magnitude the count of E2M1 bounds strictly below |x| (an exact midpoint goes down)."""
    sign_bit = np.where(q > 0, 0, 1).astype(np.uint8)
    a = np.abs(q)
    idx = np.zeros(q.shape, dtype=np.uint8)
    for t in [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]:
        idx += ((a - np.float32(t)) > 0).astype(np.uint8)
    return (idx | (sign_bit << 3)).astype(np.uint8)


def modelopt_mxfp4(w, byte_rule=modelopt_mx_byte):
    """ModelOpt MXFP4: bytes by byte_rule, codes cast_fp4(w / 2^(byte - 127)) in fp32; decode
    as MXFP4QTensor.dequantize: (1 - 2 sign) * E2M1[mag] * exp2(byte - 127) (code 8 is -0)."""
    lead, K = w.shape[:-1], w.shape[-1]
    blk = w.reshape(*lead, K // 32, 32)
    amax = np.max(np.abs(blk), axis=-1).astype(np.float32)
    sbytes = np.vectorize(byte_rule, otypes=[np.uint8])(amax)
    s = np.vectorize(lambda b: np.float32(2.0 ** (int(b) - 127)), otypes=[np.float32])(sbytes)
    q = (blk / s[..., None]).astype(np.float32)
    codes = modelopt_cast_fp4(q).reshape(*lead, K)
    dec = (decode_values(codes).reshape(*lead, K // 32, 32) * s[..., None]).astype(np.float32)
    return pack(codes), sbytes, dec.reshape(*lead, K)


def main():
    rng = np.random.default_rng(27)
    P = "model.layers.0."
    src = make_source(rng)
    write_st(f"{OUT}/source/model.safetensors", [bf16(k, v) for k, v in src.items()])
    gam = group_amax(src, P)
    keep = [bf16("lm_head.weight", src["lm_head.weight"]),
            bf16("model.norm.weight", src["model.norm.weight"])]

    # ModelOpt NVFP4
    t, exp = [], []
    for m in LINEARS:
        ws2 = np.float32(gam[FUSED[m]] / np.float32(2688.0))
        p, sb, dec = modelopt_nvfp4(src[P + m + ".weight"], ws2)
        t += [u8(P + m + ".weight", p), u8(P + m + ".weight_scale", sb, "F8_E4M3"),
              f32(P + m + ".weight_scale_2", np.float32(ws2).reshape(()))]
        exp.append(f32(P + m + ".weight", dec))
    write_st(f"{OUT}/modelopt_nvfp4/model.safetensors", t + keep)
    write_st(f"{OUT}/expected/modelopt_nvfp4.safetensors", exp)
    write_json(f"{OUT}/modelopt_nvfp4/hf_quant_config.json", {
        "producer": {"name": "modelopt", "version": "0.47.0 (layout; written by fp4diag)"},
        "quantization": {"quant_algo": "W4A16_NVFP4", "group_size": 16,
                         "kv_cache_quant_algo": None,
                         "exclude_modules": ["lm_head", "model.embed_tokens"]}})
    modelopt_t = t

    # compressed-tensors NVFP4
    t, exp = [], []
    for m in LINEARS:
        gs = ct_global(gam[FUSED[m]])
        p, sb, dec = ct_nvfp4(src[P + m + ".weight"], gs)
        t += [u8(P + m + ".weight_packed", p), u8(P + m + ".weight_scale", sb, "F8_E4M3"),
              f32(P + m + ".weight_global_scale", np.float32(gs).reshape(1))]
        exp.append(f32(P + m + ".weight", dec))
    write_st(f"{OUT}/ct_nvfp4/model.safetensors", t + keep)
    write_st(f"{OUT}/expected/ct_nvfp4.safetensors", exp)
    ct_group = {"targets": ["Linear"], "input_activations": None, "output_activations": None,
                "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                            "group_size": 16, "symmetric": True, "dynamic": False,
                            "observer": "minmax"}}
    write_json(f"{OUT}/ct_nvfp4/config.json", {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "quantization_config": {"quant_method": "compressed-tensors",
                                "format": "nvfp4-pack-quantized",
                                "config_groups": {"group_0": ct_group}, "ignore": ["lm_head"]}})

    # compressed-tensors MXFP4
    t, exp = [], []
    for m in LINEARS:
        p, sb, dec = mxfp4(src[P + m + ".weight"], ct_mx_byte)
        t += [u8(P + m + ".weight_packed", p), u8(P + m + ".weight_scale", sb)]
        exp.append(f32(P + m + ".weight", dec))
    write_st(f"{OUT}/ct_mxfp4/model.safetensors", t + keep)
    write_st(f"{OUT}/expected/ct_mxfp4.safetensors", exp)
    write_json(f"{OUT}/ct_mxfp4/config.json", {
        "model_type": "llama",
        "quantization_config": {"quant_method": "compressed-tensors",
                                "format": "mxfp4-pack-quantized", "ignore": ["lm_head"]}})

    # gpt-oss MXFP4 (OCP floor scales; blocks [E, R, K/32, 16])
    g = src[P + "mlp.experts.gate_up_proj"]
    p, sb, dec = mxfp4(g, ocp_floor_byte)
    E, R, K = g.shape
    write_st(f"{OUT}/gptoss_mxfp4/model.safetensors", [
        u8(P + "mlp.experts.gate_up_proj_blocks", p.reshape(E, R, K // 32, 16)),
        u8(P + "mlp.experts.gate_up_proj_scales", sb),
        bf16(P + "mlp.experts.gate_up_proj_bias", np.zeros((E, R), np.float32))])
    write_st(f"{OUT}/expected/gptoss_mxfp4.safetensors",
             [f32(P + "mlp.experts.gate_up_proj", dec)])
    write_json(f"{OUT}/gptoss_mxfp4/config.json", {
        "model_type": "gpt_oss",
        "quantization_config": {"quant_method": "mxfp4",
                                "modules_to_not_convert": ["model.layers.*.self_attn",
                                                           "model.layers.*.mlp.router",
                                                           "model.embed_tokens", "lm_head"]}})

    # ModelOpt MXFP4 (weights of W4A8_MXFP4_FP8; input_scale: the FP8 activations' scale)
    t, exp = [], []
    for m in LINEARS:
        p, sb, dec = modelopt_mxfp4(src[P + m + ".weight"])
        t += [u8(P + m + ".weight", p), u8(P + m + ".weight_scale", sb),
              f32(P + m + ".input_scale", np.float32(0.01).reshape(()))]
        exp.append(f32(P + m + ".weight", dec))
    write_st(f"{OUT}/modelopt_mxfp4/model.safetensors", t + keep)
    write_st(f"{OUT}/expected/modelopt_mxfp4.safetensors", exp)
    mx_config = {
        "producer": {"name": "modelopt", "version": "0.47.0 (layout; written by fp4diag)"},
        "quantization": {"quant_algo": "W4A8_MXFP4_FP8", "group_size": 32,
                         "kv_cache_quant_algo": None,
                         "exclude_modules": ["lm_head", "model.embed_tokens"]}}
    write_json(f"{OUT}/modelopt_mxfp4/hf_quant_config.json", mx_config)
    # its faults: down_proj's nibbles swapped; every tensor's scales by the OCP floor rule
    swapped = []
    for name, dt, shape, data in t:
        if name == P + "mlp.down_proj.weight":
            b = np.frombuffer(data, np.uint8)
            data = ((b >> 4) | ((b & 15) << 4)).astype(np.uint8).tobytes()
        swapped.append((name, dt, shape, data))
    write_st(f"{OUT}/bad_mx_nibble/model.safetensors", swapped + keep)
    write_json(f"{OUT}/bad_mx_nibble/hf_quant_config.json", mx_config)
    t = []
    for m in LINEARS:
        p, sb, _ = modelopt_mxfp4(src[P + m + ".weight"], ocp_floor_byte)
        t += [u8(P + m + ".weight", p), u8(P + m + ".weight_scale", sb)]
    write_st(f"{OUT}/bad_mx_rule/model.safetensors", t + keep)
    write_json(f"{OUT}/bad_mx_rule/hf_quant_config.json", mx_config)

    # faults, each in a file of its own (ModelOpt layout unless said)
    q = P + "self_attn.q_proj."
    by = {n: x for x in modelopt_t for n in [x[0]]}
    write_st(f"{OUT}/bad_partners/model.safetensors", [
        by[q + "weight"], by[q + "weight_scale"],                      # weight_scale_2 missing
        by[P + "self_attn.k_proj.weight"],                             # scale of the wrong shape:
        u8(P + "self_attn.k_proj.weight_scale", np.full((16, 8), 0x38, np.uint8), "F8_E4M3"),
        by[P + "self_attn.k_proj.weight_scale_2"],
        u8(P + "mlp.up_proj.weight_scale", np.full((8, 4), 0x38, np.uint8), "F8_E4M3"),  # orphan
        by[P + "self_attn.v_proj.weight"], by[P + "self_attn.v_proj.weight_scale"],
        by[P + "self_attn.v_proj.weight_scale_2"],                     # v_proj is consistent
        keep[0]])
    write_st(f"{OUT}/bad_config/model.safetensors", modelopt_t + keep)
    write_json(f"{OUT}/bad_config/config.json", {
        "quantization_config": {"quant_method": "compressed-tensors",
                                "format": "nvfp4-pack-quantized", "ignore": ["lm_head"]}})
    write_st(f"{OUT}/bad_exclude/model.safetensors", modelopt_t + keep)
    # a layout fault for the audit: down_proj's nibbles swapped (element 2j in the high
    # nibble), everything else as ModelOpt writes it
    swapped = []
    for name, dt, shape, data in modelopt_t:
        if name == P + "mlp.down_proj.weight":
            b = np.frombuffer(data, np.uint8)
            data = ((b >> 4) | ((b & 15) << 4)).astype(np.uint8).tobytes()
        swapped.append((name, dt, shape, data))
    write_st(f"{OUT}/bad_nibble/model.safetensors", swapped + keep)
    # fused partners not sharing one global scale: k_proj re-exported with its own
    t = []
    for name, dt, shape, data in modelopt_t:
        if ".k_proj." not in name:
            t.append((name, dt, shape, data))
    kw = src[P + "self_attn.k_proj.weight"]
    ws2 = np.float32(np.float32(np.max(np.abs(kw))) / np.float32(2688.0))
    p, sb, _ = modelopt_nvfp4(kw, ws2)
    t += [u8(P + "self_attn.k_proj.weight", p), u8(P + "self_attn.k_proj.weight_scale", sb, "F8_E4M3"),
          f32(P + "self_attn.k_proj.weight_scale_2", np.float32(ws2).reshape(()))]
    write_st(f"{OUT}/bad_fused/model.safetensors", t + keep)
    # swizzled scales stored in the flat shape (128 rows, 4 scale columns: the two layouts have
    # one shape), declared flat: ModelOpt's swizzle_nvfp4_scales,
    # view(nR,128,nC,4).permute(0,2,1,3).reshape(-1,4,32,4).transpose(1,2)
    uw = src["model.layers.1.mlp.up_proj.weight"]
    ws2 = np.float32(np.float32(np.max(np.abs(uw))) / np.float32(2688.0))
    p, sb, _ = modelopt_nvfp4(uw, ws2)
    R, C = sb.shape
    swz = sb.reshape(R // 128, 128, C // 4, 4).transpose(0, 2, 1, 3).reshape(-1, 4, 32, 4)
    swz = swz.transpose(0, 2, 1, 3).reshape(R, C)
    write_st(f"{OUT}/bad_swizzle/model.safetensors", [
        u8("model.layers.1.mlp.up_proj.weight", p),
        u8("model.layers.1.mlp.up_proj.weight_scale", swz, "F8_E4M3"),
        f32("model.layers.1.mlp.up_proj.weight_scale_2", np.float32(ws2).reshape(()))])
    write_json(f"{OUT}/bad_nibble/hf_quant_config.json", {
        "producer": {"name": "modelopt"},
        "quantization": {"quant_algo": "W4A16_NVFP4", "group_size": 16,
                         "exclude_modules": ["lm_head"]}})
    write_json(f"{OUT}/bad_exclude/hf_quant_config.json", {
        "producer": {"name": "modelopt"},
        "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                         "exclude_modules": ["lm_head", "model.layers.0.mlp.down_proj"]}})


if __name__ == "__main__":
    main()
