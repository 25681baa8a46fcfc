#!/usr/bin/env python3
"""fp4dump.py — record the GEMM operands X, W and dY of chosen torch.nn.Linear layers during
one forward and backward pass, and write them in the layout `fp4diag gemm` reads: one group
per layer (the module's name, dots as slashes in HDF5) holding x (tokens × in), w (out × in)
and dy (tokens × out), in their own types (bf16 stays bf16). Use it from your training code:

    from fp4dump import LinearRecorder
    with LinearRecorder(model, ["blocks.*.mlp.fc1", "blocks.1"]) as rec:
        loss = model(batch).loss
        loss.backward()
    rec.save("dump.h5")            # or "dump.safetensors"

then `fp4diag gemm dump.h5`. Layers are chosen by glob over module names: `*` matches within
one dot-separated component, and a name that is a module (`blocks.1`) selects every Linear
below it. Under torch.autocast the operands are recorded in the autocast type, as the GEMM
consumes them. Run as a command, `fp4dump.py --demo OUT` writes the dump of a small built-in
model (a self-test; needs torch)."""
import argparse
import json
import os
import re
import struct
import sys
import tempfile

import numpy as np


class BF16:
    """A bfloat16 array as its raw 16-bit patterns (numpy has no bfloat16)."""

    def __init__(self, bits):
        self.bits = np.ascontiguousarray(bits, dtype=np.uint16)
        self.shape = self.bits.shape

    @staticmethod
    def from_float32(a):
        """Round float32 values to bfloat16 (round to nearest even; NaN kept NaN)."""
        u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
        r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        nan = np.isnan(np.asarray(a, dtype=np.float32))
        r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
        return BF16(r)

    def to_float32(self):
        return (self.bits.astype(np.uint32) << 16).view(np.float32)


def bf16_type():
    """The HDF5 custom float the project's files store bf16 as: 16 bits, sign bit 15, exponent
    bits 7-14 (bias 127), mantissa bits 0-6. The one definition: the test-data and benchmark
    scripts import it from here."""
    import h5py
    t = h5py.h5t.IEEE_F32LE.copy()
    t.set_fields(15, 7, 8, 0, 7)
    t.set_offset(16)
    t.set_precision(16)
    t.set_size(2)
    t.set_ebias(127)
    return t


def _h5_put(group, name, arr):
    """Dataset NAME in group: float32/float16/float64 as IEEE, BF16 as the custom bf16 type
    (written bit for bit, no conversion); chunked, gzip 4."""
    import h5py
    shape = arr.shape
    chunks = tuple(max(1, min(s, 256)) for s in shape) if all(shape) else None
    if isinstance(arr, BF16):
        ftype = bf16_type()
        space = h5py.h5s.create_simple(shape)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        if chunks:
            dcpl.set_chunk(chunks)
            dcpl.set_deflate(4)
        d = h5py.h5d.create(group.id, name.encode(), ftype, space, dcpl=dcpl)
        if arr.bits.size:
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, arr.bits, mtype=ftype)
        ds = group[name]
        ds.attrs["dtype"] = "bfloat16"
        return ds
    return group.create_dataset(name, data=arr, chunks=chunks,
                                compression="gzip" if chunks else None,
                                compression_opts=4 if chunks else None)


_ST_TYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
             np.dtype(np.float64): "F64"}


def _write_safetensors(path, tensors, metadata):
    """A safetensors file: 8-byte little-endian header size, the JSON header (padded with spaces
    to 8 bytes), then the tensors' bytes, little-endian, C order."""
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        if isinstance(arr, BF16):
            dt, raw = "BF16", arr.bits.astype("<u2").tobytes()
        else:
            a = np.ascontiguousarray(arr)
            if a.dtype not in _ST_TYPES:
                raise ValueError(f"{name}: type {a.dtype} has no safetensors name here")
            dt, raw = _ST_TYPES[a.dtype], a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def write(path, layers, metadata=None):
    """Write a dump. `layers`: {module name: {"x": arr, "w": arr, "dy": arr}}, each array a
    numpy float array or a BF16. The format follows the extension: .h5/.hdf5 (one group per
    layer, /a/b/c for module a.b.c) or .safetensors (tensors a.b.c.x, a.b.c.w, a.b.c.dy). The
    file is written beside its final name and renamed, so it is whole or absent."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".h5", ".hdf5", ".safetensors"):
        raise ValueError(f"{path}: give a .h5, .hdf5 or .safetensors name")
    for name, ops in layers.items():
        x, w, dy = ops["x"], ops["w"], ops["dy"]
        if len(x.shape) != 2 or len(w.shape) != 2 or len(dy.shape) != 2 or \
                x.shape[1] != w.shape[1] or dy.shape[1] != w.shape[0] or x.shape[0] != dy.shape[0]:
            raise ValueError(f"{name}: shapes x {x.shape}, w {w.shape}, dy {dy.shape} are not "
                             "x (tokens x in), w (out x in), dy (tokens x out)")
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".fp4dump-", suffix=ext, dir=d)
    os.close(fd)
    try:
        if ext == ".safetensors":
            _write_safetensors(tmp, {f"{n}.{k}": ops[k] for n, ops in layers.items()
                                     for k in ("x", "w", "dy")}, metadata)
        else:
            import h5py
            with h5py.File(tmp, "w", libver="earliest") as f:
                for k, v in (metadata or {}).items():
                    f.attrs[k] = str(v)
                for n, ops in layers.items():
                    g = f.require_group("/" + n.replace(".", "/"))
                    for k in ("x", "w", "dy"):
                        _h5_put(g, k, ops[k])
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def glob_regex(pattern):
    """A module-name glob as a regex: `*` within one dot-separated component, `?` one character;
    the pattern also matches every name below a matched one (`blocks.1` -> `blocks.1.fc1`)."""
    out = ""
    for c in pattern:
        out += "[^.]*" if c == "*" else "[^.]" if c == "?" else re.escape(c)
    return re.compile(out + r"(\..*)?\Z")


def _autocast_dtype(device_type):
    """The type torch.autocast runs linears in on this device, or None outside autocast."""
    import torch
    try:
        if torch.is_autocast_enabled(device_type):  # torch >= 2.4
            return torch.get_autocast_dtype(device_type)
        return None
    except TypeError:  # older torch: per-device functions
        if device_type == "cpu":
            return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None
        return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None


def _to_numpy(t):
    """A torch tensor as a 2-D numpy array or BF16 (leading dims flattened into tokens)."""
    import torch
    t = t.detach()
    if t.dim() != 2:
        t = t.reshape(-1, t.shape[-1])
    t = t.contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return BF16(t.view(torch.int16).numpy().view(np.uint16))
    if t.dtype in (torch.float16, torch.float32, torch.float64):
        return t.numpy()
    return t.float().numpy()


class LinearRecorder:
    """Hooks on the nn.Linear modules whose names match `patterns`; records each one's input X,
    weight W and output gradient dY on its first call inside the `with` block. `save(path)`
    writes them (see write()). Raises ValueError when a pattern selects no nn.Linear."""

    def __init__(self, model, patterns):
        import torch
        self.model = model
        self.layers = {}
        self.handles = []
        self.calls = {}
        linears = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
        chosen = []
        for p in patterns:
            rx = glob_regex(p)
            hit = [(n, m) for n, m in linears if rx.match(n)]
            if not hit:
                some = ", ".join(n for n, _ in linears[:8]) or "(the model has none)"
                raise ValueError(f"{p!r} selects no nn.Linear; Linear modules: {some}"
                                 + (" ..." if len(linears) > 8 else ""))
            chosen += [h for h in hit if h not in chosen]
        self.chosen = chosen

    def __enter__(self):
        for n, m in self.chosen:
            self.handles.append(m.register_forward_hook(self._hook(n)))
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        self.handles = []
        return False

    def _hook(self, name):
        def fwd(module, inputs, output):
            self.calls[name] = self.calls.get(name, 0) + 1
            if name in self.layers:  # a module called twice: keep the first call
                return
            x, w = inputs[0], module.weight
            dt = _autocast_dtype(x.device.type)
            if dt is not None and x.is_floating_point():
                x, w = x.to(dt), w.to(dt)
            rec = {"x": _to_numpy(x), "w": _to_numpy(w)}
            self.layers[name] = rec
            if output.requires_grad:
                output.register_hook(lambda g: rec.__setitem__("dy", _to_numpy(g)))
        return fwd

    def save(self, path, metadata=None):
        """Write the recorded layers. Raises ValueError for a layer without dY (no backward
        pass reached it) or none recorded."""
        if not self.layers:
            raise ValueError("no layer was called inside the `with` block")
        missing = [n for n, r in self.layers.items() if "dy" not in r]
        if missing:
            raise ValueError("no dY for " + ", ".join(missing) +
                             ": call loss.backward() inside the `with` block")
        twice = [n for n, c in self.calls.items() if c > 1]
        if twice:
            print("fp4dump: called more than once, first call recorded: " + ", ".join(twice),
                  file=sys.stderr)
        import torch
        meta = {"tool": "fp4dump.py", "torch": torch.__version__,
                "model": type(self.model).__name__}
        meta.update(metadata or {})
        write(path, self.layers, meta)
        return path


def demo_model(dtype="bf16", seed=0, device="cpu"):
    """A small GPT-like stack (2 blocks of attention-free MLP and projection linears, d=64) and
    a batch of 4 x 32 tokens, seeded."""
    import torch
    torch.manual_seed(seed)
    d, vocab = 64, 96

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = torch.nn.LayerNorm(d)
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.proj = torch.nn.Linear(d, d)
            self.fc1 = torch.nn.Linear(d, 4 * d)
            self.fc2 = torch.nn.Linear(4 * d, d)

        def forward(self, h):
            q, k, v = self.qkv(self.ln(h)).chunk(3, dim=-1)
            a = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5, dim=-1) @ v
            h = h + self.proj(a)
            return h + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(h))))

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(vocab, d)
            self.blocks = torch.nn.ModuleList([Block() for _ in range(2)])
            self.head = torch.nn.Linear(d, vocab)

        def forward(self, tok):
            h = self.emb(tok)
            for b in self.blocks:
                h = b(h)
            return self.head(h)

    m = Tiny()
    if dtype == "bf16":
        m = m.to(torch.bfloat16)
    tok = torch.randint(0, vocab, (4, 32))
    return m.to(device), tok.to(device)


def main():
    ap = argparse.ArgumentParser(description=(
        "Record the GEMM operands X, W and dY of chosen torch.nn.Linear layers during one "
        "forward and backward pass, in the layout `fp4diag gemm` reads (one group per layer "
        "with x, w, dy, bf16 kept bf16), as HDF5 or safetensors. It is used from your own "
        "training code (LinearRecorder; see the README or this file's docstring); as a command "
        "it writes the dump of a small built-in model, a self-test that needs torch."))
    ap.add_argument("--demo", metavar="OUT", required=True,
                    help="write the dump of the built-in demo model to OUT (.h5 or .safetensors)")
    ap.add_argument("--layers", nargs="+", default=["blocks.*"], metavar="GLOB",
                    help="module-name globs of the Linear layers to record (default blocks.*)")
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16",
                    help="the demo model's parameter type (default bf16)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the demo model and batch (0)")
    ap.add_argument("--device", default="cpu", help="torch device of the demo model (cpu)")
    ap.add_argument("--autocast", action="store_true",
                    help="run the demo's fp32 model under torch.autocast to bf16")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("fp4dump.py: torch is not importable (pip install torch)", file=sys.stderr)
        return 3
    model, tok = demo_model("fp32" if a.autocast else a.dtype, a.seed, a.device)
    try:
        with LinearRecorder(model, a.layers) as rec:
            with torch.autocast(torch.device(a.device).type, dtype=torch.bfloat16,
                                enabled=a.autocast):
                logits = model(tok)
            loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                                     tok.reshape(-1))
            loss.backward()
        rec.save(a.demo, {"demo": f"fp4dump.py --demo, seed {a.seed}, "
                 + ("fp32 under autocast to bf16" if a.autocast else a.dtype)})
    except ValueError as e:
        print(f"fp4dump.py: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"fp4dump.py: {e.filename or a.demo}: {e.strerror}", file=sys.stderr)
        return 3
    print(f"fp4dump.py: wrote {a.demo}: {len(rec.layers)} layers ({', '.join(rec.layers)})",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
