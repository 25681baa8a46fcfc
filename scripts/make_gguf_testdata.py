#!/usr/bin/env python3
"""make_gguf_testdata.py — write testdata/gguf/ (the GGUF reader's fixtures, SPEC §8 "GGUF").

Run with a Python that has numpy, safetensors and the `gguf` package (gguf-py, the llama.cpp
project's own writer; these fixtures were made with gguf 0.19.0):

    python3 scripts/make_gguf_testdata.py [OUTDIR]        (default testdata/gguf)

Writes:
  model.gguf           GGUF v3 written by gguf-py's GGUFWriter: metadata of every value type
                       (arrays of numbers and strings included) and the tensors
                         blk.0.attn_q.weight      F32   [64, 128]
                         blk.0.attn_k.weight      F16   [32, 128]
                         blk.0.attn_v.weight      BF16  [32, 128]
                         blk.0.ffn_down.weight    MXFP4 [64, 128]  gguf.quants' own quantizer
                         blk.0.ffn_gate.weight    NVFP4 [64, 128]  our writer (below)
                         blk.0.ffn_up.weight      Q8_0  [64, 128]  gguf.quants (not read)
                         blk.0.attn_output.weight Q4_0  [32, 128]  gguf.quants (not read)
                         output_norm.weight       F32   [128]
                         special.mxfp4            MXFP4 [2, 64]   hand-made bytes: E8M0 0, 1,
                                                                  127, 254 and every code
                         special.nvfp4            NVFP4 [2, 64]   hand-made bytes: UE4M3 0x00,
                                                                  0x01, 0x7E, 0x7F, 0x80, 0xFF
  source.safetensors   F32 sources of the quantized tensors (the values that were quantized)
  split/model-0000N-of-00003.gguf
                       a split model (llama.cpp's gguf-split layout) written by gguf-py's
                       GGUFWriter with split_max_tensors=2: metadata in the first part, keys
                       split.no / split.count / split.tensors.count in each, the tensors
                         blk.0.attn_k.weight, blk.0.ffn_down.weight, blk.0.ffn_gate.weight,
                         blk.0.ffn_up.weight, output_norm.weight
                       with the same bytes as in model.gguf
  split_dup/dup-0000N-of-00002.gguf    a split model whose two parts both hold tensor "a"
  split_count/cnt-0000N-of-00002.gguf  a split model whose split.tensors.count (5) is not the
                                       number of tensors its parts hold (3)
                       (both written part by part by GGUFWriter, the split keys added by hand
                       as gguf-py adds them)
  ../../src/tests/fuzz/seeds/gguf/small.gguf   fuzz_gguf's seed (a few tiny tensors)
  expected.safetensors F32 decodes of every MXFP4/NVFP4 tensor by gguf.quants.dequantize
                       (gguf-py's numpy mirror of ggml's dequantize_row_mxfp4/_nvfp4), the
                       reference the unit test and the CLI cases compare fp4diag's decode to
                       bit for bit

NVFP4 is written by our own quantizer, independent of ggml's C code, following
../shared/QUANTIZED.md §1.4: per 16-element sub-block the UE4M3 byte of amax/6 (no per-tensor
scale; mantissa rounded half up on its dropped bit, saturating at 0x7E, as ggml_fp32_to_ue4m3),
each element the nearest of ggml's doubled E2M1 values times the halved scale (ties to the
lower index), low nibbles elements 0..7 and high nibbles 8..15 of each sub-block.
"""
import os
import sys

import numpy as np

try:
    import gguf
    from gguf import GGMLQuantizationType as T
    from gguf import quants
except ImportError:
    sys.exit("make_gguf_testdata.py needs the gguf package (pip install gguf)")
from safetensors.numpy import save_file

KV = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.float32)


def ue4m3_value(b):
    """The full (not halved) value of a UE4M3 byte as ggml decodes it: 0x00/0x7F -> 0, sign
    bit ignored by the exponent mask."""
    b = int(b)
    if b == 0 or b == 0x7F:
        return 0.0
    e, m = (b >> 3) & 0xF, b & 7
    return m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)


def ue4m3_encode(x):
    """fp32 -> UE4M3 byte: our reading of ggml_fp32_to_ue4m3 (round half up, 0x7E max)."""
    x = float(np.float32(min(max(x, 0.0), 448.0)))
    if x <= 0.0:
        return 0
    best, bestd = 0, None
    for b in range(0x7F):  # 0x00..0x7E
        v = ue4m3_value(b)
        d = abs(v - x)
        if bestd is None or d < bestd or (d == bestd and v > ue4m3_value(best)):
            best, bestd = b, d
    return best


def nvfp4_quantize(w):
    rows, k = w.shape
    out = np.zeros((rows, k // 64, 36), dtype=np.uint8)
    for r in range(rows):
        for blk in range(k // 64):
            for s in range(4):
                x = w[r, blk * 64 + s * 16: blk * 64 + s * 16 + 16].astype(np.float32)
                amax = float(np.max(np.abs(x)))
                ub = ue4m3_encode(np.float32(amax) / np.float32(6.0))
                out[r, blk, s] = ub
                half = np.float32(ue4m3_value(ub) * 0.5)
                codes = np.argmin(np.abs(KV[None, :] * half - x[:, None]), axis=1)
                for j in range(8):
                    out[r, blk, 4 + s * 8 + j] = codes[j] | (codes[j + 8] << 4)
    return out.reshape(rows, k // 64 * 36)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "testdata/gguf"
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(20261204)
    src = {
        "blk.0.attn_q.weight": rng.standard_normal((64, 128)).astype(np.float32),
        "blk.0.attn_k.weight": (rng.standard_normal((32, 128)) * 0.5).astype(np.float16),
        "blk.0.attn_v.weight": rng.standard_normal((32, 128)).astype(np.float32),
        "blk.0.ffn_down.weight": (rng.standard_normal((64, 128)) *
                                  np.exp(rng.standard_normal((64, 1)))).astype(np.float32),
        "blk.0.ffn_gate.weight": (rng.standard_normal((64, 128)) * 0.02).astype(np.float32),
        "blk.0.ffn_up.weight": rng.standard_normal((64, 128)).astype(np.float32),
        "blk.0.attn_output.weight": rng.standard_normal((32, 128)).astype(np.float32),
        "output_norm.weight": (1 + 0.1 * rng.standard_normal(128)).astype(np.float32),
    }
    # bf16: the top half of the fp32 words, rounded to nearest even
    v32 = src["blk.0.attn_v.weight"].view(np.uint32).astype(np.uint64)
    bf16 = ((v32 + 0x7FFF + ((v32 >> 16) & 1)) >> 16).astype(np.uint16)
    src["blk.0.attn_v.weight"] = (bf16.astype(np.uint32) << 16).view(np.float32)

    w = gguf.GGUFWriter(os.path.join(outdir, "model.gguf"), arch="llama")
    w.add_name("fp4diag gguf fixture")
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 0.1)
    w.add_bool("test.bool", True)
    w.add_uint64("test.u64", 18000000000000000000)
    w.add_int64("test.i64", -9000000000000000000)
    w.add_float64("test.f64", 0.1)
    w.add_string("test.string", "tab\there")
    w.add_array("test.ints", list(range(20)))
    w.add_array("test.strings", ["a", "bc", "def"])
    w.add_custom_alignment(64)

    w.add_tensor("blk.0.attn_q.weight", src["blk.0.attn_q.weight"])
    w.add_tensor("blk.0.attn_k.weight", src["blk.0.attn_k.weight"])
    w.add_tensor("blk.0.attn_v.weight", bf16, raw_shape=bf16.shape, raw_dtype=T.BF16)
    mx = quants.quantize(src["blk.0.ffn_down.weight"], T.MXFP4)
    w.add_tensor("blk.0.ffn_down.weight", mx, raw_shape=mx.shape, raw_dtype=T.MXFP4)
    nv = nvfp4_quantize(src["blk.0.ffn_gate.weight"])
    w.add_tensor("blk.0.ffn_gate.weight", nv, raw_shape=nv.shape, raw_dtype=T.NVFP4)
    q8 = quants.quantize(src["blk.0.ffn_up.weight"], T.Q8_0)
    w.add_tensor("blk.0.ffn_up.weight", q8, raw_shape=q8.shape, raw_dtype=T.Q8_0)
    q4 = quants.quantize(src["blk.0.attn_output.weight"], T.Q4_0)
    w.add_tensor("blk.0.attn_output.weight", q4, raw_shape=q4.shape, raw_dtype=T.Q4_0)
    w.add_tensor("output_norm.weight", src["output_norm.weight"])

    # special bytes: MXFP4 E8M0 0, 1, 127, 254 (each block codes 0..15 twice); NVFP4 UE4M3
    # 0x00, 0x01, 0x7E, 0x7F, 0x80, 0xFF, 0x38, 0x08 with codes 0..15
    codes = np.array([c | ((15 - c) << 4) for c in range(16)], dtype=np.uint8)
    smx = np.concatenate([np.concatenate([[e], codes]).astype(np.uint8)
                          for e in (0, 1, 127, 254)]).reshape(2, 34)
    w.add_tensor("special.mxfp4", smx, raw_shape=smx.shape, raw_dtype=T.MXFP4)
    snv = []
    for d in ((0x00, 0x01, 0x7E, 0x7F), (0x80, 0xFF, 0x38, 0x08)):
        snv.append(np.concatenate([d, codes, codes]).astype(np.uint8))
    snv = np.stack(snv)
    w.add_tensor("special.nvfp4", snv, raw_shape=snv.shape, raw_dtype=T.NVFP4)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # a split model: gguf-py's own splitting (NAME-00001-of-00003.gguf, ...)
    os.makedirs(os.path.join(outdir, "split"), exist_ok=True)
    w = gguf.GGUFWriter(os.path.join(outdir, "split", "model.gguf"), arch="llama",
                        split_max_tensors=2)
    w.add_name("fp4diag split gguf fixture")
    w.add_tensor("blk.0.attn_k.weight", src["blk.0.attn_k.weight"])
    w.add_tensor("blk.0.ffn_down.weight", mx, raw_shape=mx.shape, raw_dtype=T.MXFP4)
    w.add_tensor("blk.0.ffn_gate.weight", nv, raw_shape=nv.shape, raw_dtype=T.NVFP4)
    w.add_tensor("blk.0.ffn_up.weight", q8, raw_shape=q8.shape, raw_dtype=T.Q8_0)
    w.add_tensor("output_norm.weight", src["output_norm.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # hostile split models, one GGUFWriter per part with the split keys set by hand
    def write_parts(sub, stem, parts, total):
        os.makedirs(os.path.join(outdir, sub), exist_ok=True)
        for i, names in enumerate(parts):
            pw = gguf.GGUFWriter(os.path.join(outdir, sub, "%s-%05d-of-%05d.gguf" %
                                              (stem, i + 1, len(parts))), arch="llama")
            pw.add_uint16("split.no", i)
            pw.add_uint16("split.count", len(parts))
            pw.add_int32("split.tensors.count", total)
            for nm in names:
                pw.add_tensor(nm, np.full((2, 3), i + 1, dtype=np.float32))
            pw.write_header_to_file()
            pw.write_kv_data_to_file()
            pw.write_tensors_to_file()
            pw.close()

    write_parts("split_dup", "dup", [["a", "b"], ["a"]], 3)
    write_parts("split_count", "cnt", [["a", "b"], ["c"]], 5)

    # the fuzz target's seed (src/tests/fuzz/seeds/gguf/): a small file of each kind of tensor,
    # an NVFP4 weight with its per-tensor .scale sidecar
    seeds = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "tests",
                         "fuzz", "seeds", "gguf")
    os.makedirs(seeds, exist_ok=True)
    w = gguf.GGUFWriter(os.path.join(seeds, "small.gguf"), arch="llama")
    w.add_array("test.strings", ["a", "bc"])
    w.add_tensor("a", np.arange(6, dtype=np.float32).reshape(2, 3))
    w.add_tensor("b", np.ones((2, 2), dtype=np.float16))
    small = quants.quantize(src["blk.0.ffn_down.weight"][:1, :32], T.MXFP4)
    w.add_tensor("blk.0.m.weight", small, raw_shape=small.shape, raw_dtype=T.MXFP4)
    w.add_tensor("blk.0.w.weight", nv[:1, :36], raw_shape=(1, 36), raw_dtype=T.NVFP4)
    w.add_tensor("blk.0.w.scale", np.array([0.5], dtype=np.float32))
    w.add_tensor("blk.0.q.weight", q8[:1, :34], raw_shape=(1, 34), raw_dtype=T.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    save_file({k: np.ascontiguousarray(src[k].astype(np.float32))
               for k in ("blk.0.ffn_down.weight", "blk.0.ffn_gate.weight")},
              os.path.join(outdir, "source.safetensors"))
    exp = {
        "blk.0.ffn_down.weight": quants.dequantize(mx, T.MXFP4),
        "blk.0.ffn_gate.weight": quants.dequantize(nv, T.NVFP4),
        "special.mxfp4": quants.dequantize(smx, T.MXFP4),
        "special.nvfp4": quants.dequantize(snv, T.NVFP4),
    }
    save_file({k: np.ascontiguousarray(v.astype(np.float32)) for k, v in exp.items()},
              os.path.join(outdir, "expected.safetensors"))
    from importlib.metadata import version
    print("wrote", outdir, "with gguf", version("gguf"))


if __name__ == "__main__":
    main()
