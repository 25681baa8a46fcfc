#!/usr/bin/env python3
"""make_torch_testdata.py — the PyTorch checkpoint fixtures of testdata/torch/, written without
torch by scripts/torch_writer.py (Python's pickler with torch.save's persistent ids and globals),
each a few KiB. Deterministic (fixed seed, fixed zip times).

  small.pt          a state dict as torch.save writes it (protocol 2): f32, bf16, f16 weights,
                    two views at offsets into one shared f32 storage (a fused qkv), a transposed
                    view (column-major), a rank-1 norm gain, an i64 scalar, a plain int
  small_p4.pt       the same with pickle protocol 4 (FRAME, STACK_GLOBAL, MEMOIZE)
  small_be.pt       the same with byteorder "big" and big-endian storages
  small.safetensors the same tensors, contiguous, as safetensors (the reference for numbers)
  sharded/          pytorch_model-0000N-of-00002.bin + pytorch_model.bin.index.json
  nested.pt         {"model": state dict, "optimizer": {"state": {0: {"exp_avg": ...}}}, "epoch": 3}
  views.pt          tensors that cannot be read, each named: a strided view, a view past its
                    storage, a storage missing from the archive, a short storage, bool and
                    complex storages; and one good tensor
  legacy.pt         the legacy (pre-1.6, non-zip) format's first bytes
  evil_os.pt        data.pkl calls os.system (GLOBAL os system + REDUCE)
  evil_reduce.pt    data.pkl from pickle.dumps of an object whose __reduce__ runs a command
  evil_p4.pt        the same at protocol 4 (STACK_GLOBAL builtins.exec)
usage: make_torch_testdata.py [OUTDIR]   (default testdata/torch)
"""
import collections
import json
import os
import pickle
import random
import struct
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_writer as tw  # noqa: E402


def f32(v):
    return struct.pack("<%df" % len(v), *v)


def bf16_round(v):
    """float32 values rounded to bf16 (nearest even), as float32."""
    out = []
    for x in v:
        u = struct.unpack("<I", struct.pack("<f", x))[0]
        u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
        out.append(struct.unpack("<f", struct.pack("<I", u))[0])
    return out


def f16(v):
    return struct.pack("<%de" % len(v), *v)


def st_write(path, tensors):
    """tensors: list of (name, ST dtype, shape, little-endian bytes)"""
    header, off, data = {}, 0, b""
    for name, dt, shape, b in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        data += b
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(h)) + h + data)


def swap(b, size):
    return b"".join(b[i:i + size][::-1] for i in range(0, len(b), size))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata/torch"
    os.makedirs(os.path.join(out, "sharded"), exist_ok=True)
    rnd = random.Random(29)
    g = lambda n, s=1.0: [rnd.gauss(0, s) for _ in range(n)]
    emb = g(64 * 32, 0.02)
    up = bf16_round(g(64 * 32, 0.05))
    down = g(32 * 64, 0.05)
    down = list(struct.unpack("<%de" % len(down), f16(down)))
    qkv = g(3 * 32 * 32, 0.04)
    tr = g(32 * 48, 0.03)  # stored column-major: the tensor is its transpose
    norm = [1.0 + x for x in g(32, 0.1)]

    def state(big=False):
        sw = (lambda b, k: swap(b, k)) if big else (lambda b, k: b)
        s_qkv = tw.Storage("FloatStorage", sw(f32(qkv), 4), "3")
        d = collections.OrderedDict()
        d["model.embed_tokens.weight"] = tw.contiguous("FloatStorage", sw(f32(emb), 4), (64, 32), "0")
        d["model.layers.0.mlp.up_proj.weight"] = tw.contiguous(
            "BFloat16Storage", sw(tw.bf16_bytes(f32(up)), 2), (64, 32), "1")
        d["model.layers.0.mlp.down_proj.weight"] = tw.contiguous("HalfStorage", sw(f16(down), 2), (32, 64), "2")
        d["model.layers.0.self_attn.q_proj.weight"] = tw.Tensor(s_qkv, 0, (32, 32))
        d["model.layers.0.self_attn.k_proj.weight"] = tw.Tensor(s_qkv, 1024, (32, 32))
        d["model.layers.0.self_attn.v_proj.weight"] = tw.Tensor(s_qkv, 2048, (32, 32))
        d["model.layers.0.self_attn.o_proj.weight"] = tw.Tensor(
            tw.Storage("FloatStorage", sw(f32(tr), 4), "4"), 0, (48, 32), (1, 48))
        d["model.norm.weight"] = tw.contiguous("FloatStorage", sw(f32(norm), 4), (32,), "5")
        d["num_batches_tracked"] = tw.contiguous("LongStorage", sw(struct.pack("<q", 7), 8), (), "6")
        d["step"] = 100
        return d

    tw.save(os.path.join(out, "small.pt"), state())
    tw.save(os.path.join(out, "small_p4.pt"), state(), protocol=4, archive="small_p4")
    tw.save(os.path.join(out, "small_be.pt"), state(big=True), byteorder="big")
    # the reference: the same tensors, contiguous (o_proj transposed into row-major)
    o_rows = [tr[c * 48 + r] for r in range(48) for c in range(32)]
    st_write(os.path.join(out, "small.safetensors"), [
        ("model.embed_tokens.weight", "F32", (64, 32), f32(emb)),
        ("model.layers.0.mlp.up_proj.weight", "BF16", (64, 32), tw.bf16_bytes(f32(up))),
        ("model.layers.0.mlp.down_proj.weight", "F16", (32, 64), f16(down)),
        ("model.layers.0.self_attn.q_proj.weight", "F32", (32, 32), f32(qkv[:1024])),
        ("model.layers.0.self_attn.k_proj.weight", "F32", (32, 32), f32(qkv[1024:2048])),
        ("model.layers.0.self_attn.v_proj.weight", "F32", (32, 32), f32(qkv[2048:])),
        ("model.layers.0.self_attn.o_proj.weight", "F32", (48, 32), f32(o_rows)),
        ("model.norm.weight", "F32", (32,), f32(norm)),
        ("num_batches_tracked", "I64", (), struct.pack("<q", 7)),
    ])
    # two shards and an index
    d = state()
    names = [k for k in d if not isinstance(d[k], int)]
    parts = (names[:3], names[3:])
    weight_map = {}
    for i, part in enumerate(parts):
        shard = "pytorch_model-%05d-of-00002.bin" % (i + 1)
        tw.save(os.path.join(out, "sharded", shard), collections.OrderedDict((k, d[k]) for k in part))
        weight_map.update({k: shard for k in part})
    with open(os.path.join(out, "sharded", "pytorch_model.bin.index.json"), "w") as fh:
        json.dump({"metadata": {"total_size": 40000}, "weight_map": weight_map}, fh, indent=2)
        fh.write("\n")
    # nested: a training checkpoint
    nested = collections.OrderedDict()
    nested["model"] = state()
    nested["optimizer"] = {"state": {0: {"step": 5, "exp_avg": tw.contiguous(
        "FloatStorage", f32(g(64 * 32, 0.001)), (64, 32), "9")}}, "param_groups": [{"lr": 0.001, "params": [0]}]}
    nested["epoch"] = 3
    tw.save(os.path.join(out, "nested.pt"), nested)
    # views that cannot be read
    s = tw.Storage("FloatStorage", f32(g(256)), "0")
    v = collections.OrderedDict()
    v["good"] = tw.Tensor(s, 0, (8, 32))
    v["strided"] = tw.Tensor(s, 0, (8, 16), (32, 2))
    v["past_end"] = tw.Tensor(s, 200, (8, 16))
    v["missing"] = tw.Tensor(tw.Storage("FloatStorage", b"", "77", numel=64), 0, (8, 8))
    v["short"] = tw.Tensor(tw.Storage("FloatStorage", f32(g(16)), "2", numel=64), 0, (8, 8))
    v["mask"] = tw.contiguous("BoolStorage", b"\1" * 64, (8, 8), "3")
    v["cplx"] = tw.contiguous("ComplexFloatStorage", b"\0" * 512, (8, 8), "4")
    pk, seen = tw.pickle_bytes(v)
    del seen["77"]
    with zipfile.ZipFile(os.path.join(out, "views.pt"), "w") as z:
        for name, data in [("archive/data.pkl", pk), ("archive/byteorder", "little")] + \
                [("archive/data/" + k, seen[k].data) for k in sorted(seen)]:
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)
    # legacy: the magic number pickle, the protocol version, then more pickles
    with open(os.path.join(out, "legacy.pt"), "wb") as fh:
        fh.write(pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2) + pickle.dumps(1001, protocol=2) +
                 pickle.dumps({"little_endian": True}, protocol=2))
    # malicious pickles: never run (the command would create the file fp4diag-pickle-ran)
    cmd = b"touch fp4diag-pickle-ran-os"
    evil = b"\x80\x02cos\nsystem\nq\x00X" + struct.pack("<I", len(cmd)) + cmd + b"q\x01\x85q\x02Rq\x03."
    tw.save(os.path.join(out, "evil_os.pt"), {}, data_pkl=evil)

    class Evil:
        def __reduce__(self):
            return (os.system, ("touch fp4diag-pickle-ran",))

    tw.save(os.path.join(out, "evil_reduce.pt"), {}, data_pkl=pickle.dumps(
        collections.OrderedDict(w=Evil()), protocol=2))

    class Evil4:
        def __reduce__(self):
            return (exec, ("open('fp4diag-pickle-ran', 'w')",))

    tw.save(os.path.join(out, "evil_p4.pt"), {}, data_pkl=pickle.dumps({"w": Evil4()}, protocol=4))


if __name__ == "__main__":
    main()
