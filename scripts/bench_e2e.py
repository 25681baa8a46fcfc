#!/usr/bin/env python3
"""bench_e2e.py — `make bench-e2e`: fp4diag end to end on the forms checkpoints are stored in.

Generates, in a temp dir, files holding the same heavy-tailed values (Student-t, 4 degrees of
freedom, x 0.02, rounded to bf16 and flushed to 0 below 2^-17, so that float32, IEEE f16 and
bf16 hold them exactly), as 4 tensors of ROWS x 4096:
  float32        contiguous <f4
  f16            contiguous IEEE half <f2
  bf16           contiguous HDF5 custom float (16 bits, sign 15, exponent 7..14, mantissa 0..6,
                 bias 127; the stored words written as they are)
  bf16+gzip-4    the same type, chunks of 64 rows, deflate level 4
  float32+gzip-4 float32, chunks of 64 rows, deflate level 4 (the chunk decoder alone: no
                 widening)
  bf16 .safetensors   only when `fp4diag ls` accepts a .safetensors file
and prints one table, median of --repeats runs with the page cache warm:
  stored words   h5py reading the stored words (memory type = file type; for safetensors the
                 file's bytes read into numpy): the baseline of every ratio
  h5py d[...]    what h5py users write (HDF5's conversion to h5py's dtype)
  one / six      fp4diag sqnr, one analysis (e2m1, nvfp4) and six (e2m1, e1m2, int4 x RHT
                 off/on, nvfp4), on the CPU and, where a GPU is there, with --device cuda
  PyTorch        where torch with CUDA is importable: h5py reads the stored words,
                 torch.from_numpy(...).cuda(), then per analysis an NVFP4-style fake quantization
                 (block 16, E4M3 block scale under an fp32 tensor scale, E2M1 by bucketize or INT4
                 by round, RHT-16 by a matmul) and fp64 error sums; its cell also gives the
                 peer's time over fp4diag's (same analyses, same device)
Cells: seconds (ratio to the stored-words read). h5py and PyTorch are timed inside this process
(interpreter, imports and CUDA start-up excluded); fp4diag as a whole process. The PyTorch
script's start-up as a process (Python, imports, CUDA context) is measured apart and printed
below the table. The fp4diag reports of every file must agree (the same values): checked and
printed.
Targets (issue 14) are checked at the end: on a 2-core machine one analysis takes <= 1.2x on the
bf16, f16 and bf16+gzip files what it takes on float32; on a GPU machine see --help.

usage: python3 scripts/bench_e2e.py [--mib N] [--repeats 3] [--dir DIR] [--no-cuda] [--slow-once S]
  --mib N     float32 size of the values in MiB (default 64: this 2-core machine; use >= 1024 on
              the GPU machine). Env BENCH_E2E_MIB sets the default.
  --dir DIR   generate into (and reuse from) DIR instead of a temp dir deleted afterwards
  --slow-once S  a cell whose first run takes over S seconds (default 5) is run once, marked
              "(1 run)": h5py d[...] on bf16 takes ~27 s per GiB
Env: FP4DIAG (default ./fp4diag), TMPDIR.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

from fp4dump import bf16_type  # the HDF5 custom float bf16 of the project's checkpoints

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FP4DIAG = os.environ.get("FP4DIAG", os.path.join(ROOT, "fp4diag"))
COLS = 4096
NT = 4  # tensors per file
GZIP_ROWS = 64
ONE = ["--format", "e2m1", "--scale", "nvfp4", "--rht", "off"]
SIX = ["--format", "e2m1,e1m2,int4", "--scale", "nvfp4", "--rht", "both"]


def values(rows, seed):
    """rows x COLS float32 values exactly representable in bf16 and IEEE f16."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_t(4, size=(rows, COLS)) * 0.02).astype(np.float32)
    u = x.view(np.uint32)
    u = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) & np.uint32(0xFFFF0000))
    x = u.view(np.float32)
    x[np.abs(x) < 2.0 ** -17] = 0.0
    return x


def bf16_words(x):
    return (x.view(np.uint32) >> 16).astype(np.uint16)


def write_h5(path, tensors, kind):
    with h5py.File(path, "w", libver="earliest") as f:
        for name, x in tensors:
            if kind == "f32":
                f.create_dataset(name, data=x, dtype="<f4")
            elif kind == "f32gz":
                f.create_dataset(name, data=x, dtype="<f4", chunks=(GZIP_ROWS, COLS),
                                 compression="gzip", compression_opts=4)
            elif kind == "f16":
                f.create_dataset(name, data=x.astype("<f2"), dtype="<f2")
            else:
                t = bf16_type()
                sp = h5py.h5s.create_simple(x.shape)
                dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                if kind == "bf16gz":
                    dcpl.set_chunk((GZIP_ROWS, COLS))
                    dcpl.set_deflate(4)
                parent, leaf = name.rsplit("/", 1)
                g = f.require_group(parent) if parent else f
                d = h5py.h5d.create(g.id, leaf.encode(), t, sp, dcpl=dcpl)
                d.write(h5py.h5s.ALL, h5py.h5s.ALL, bf16_words(x), mtype=t)


def write_safetensors(path, tensors):
    """A .safetensors file written by hand (the format: 8-byte little-endian header length,
    a JSON header, then the tensors' bytes), so no package is needed."""
    header, off, blobs = {}, 0, []
    for name, x in tensors:
        b = bf16_words(x).astype("<u2").tobytes()
        header[name.lstrip("/")] = {"dtype": "BF16", "shape": list(x.shape),
                                    "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)


def generate(d, mib):
    rows = max(16, mib * (1 << 20) // 4 // COLS // NT)
    stamp = os.path.join(d, "params.json")
    want = {"rows": rows, "cols": COLS, "tensors": NT, "version": 2}
    files = {"float32": "f32.h5", "f16": "f16.h5", "bf16": "bf16.h5",
             "bf16+gzip-4": "bf16_gz4.h5", "float32+gzip-4": "f32_gz4.h5",
             "bf16 .safetensors": "bf16.safetensors"}
    files = {k: os.path.join(d, v) for k, v in files.items()}
    try:
        with open(stamp) as fh:
            if json.load(fh) == want and all(os.path.exists(p) for p in files.values()):
                return files, rows
    except (OSError, ValueError):
        pass
    print(f"bench_e2e: writing {NT} tensors of {rows} x {COLS} in 5 forms to {d}",
          file=sys.stderr)
    tensors = [(f"/layers/{i}/weight", values(rows, 1000 + i)) for i in range(NT)]
    write_h5(files["float32"], tensors, "f32")
    write_h5(files["f16"], tensors, "f16")
    write_h5(files["bf16"], tensors, "bf16")
    write_h5(files["bf16+gzip-4"], tensors, "bf16gz")
    write_h5(files["float32+gzip-4"], tensors, "f32gz")
    write_safetensors(files["bf16 .safetensors"], tensors)
    with open(stamp, "w") as fh:
        json.dump(want, fh)
    return files, rows


# --- the runs ---------------------------------------------------------------------------------

def h5_names(path):
    names = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    return names


def stored_words_h5(path):
    """Read every dataset's stored words (memory type = file type): no conversion."""
    out = []
    with h5py.File(path, "r") as f:
        for n in h5_names(path):
            d = f[n]
            t = d.id.get_type()
            size = t.get_size()
            arr = np.empty(d.shape, dtype={2: np.uint16, 4: np.uint32, 8: np.uint64}[size])
            d.id.read(h5py.h5s.ALL, h5py.h5s.ALL, arr, mtype=t)
            out.append((n, t, arr))
    return out


def stored_words_st(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        base = 8 + n
        out = []
        for name, m in header.items():
            if name == "__metadata__":
                continue
            a, b = m["data_offsets"]
            arr = np.empty((b - a) // 2, dtype=np.uint16)
            f.seek(base + a)
            f.readinto(memoryview(arr).cast("B"))
            out.append((name, None, arr.reshape(m["shape"])))
    return out


def h5py_convert(path):
    with h5py.File(path, "r") as f:
        for n in h5_names(path):
            f[n][...]


def fp4diag_cmd(path, args, device):
    return [FP4DIAG, "sqnr", path, *args, "--device", device, "-q", "-o", "/dev/null"]


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_proc(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def fp4diag_accepts(path):
    r = subprocess.run([FP4DIAG, "ls", path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return r.returncode == 0


def cuda_usable(path):
    r = subprocess.run(fp4diag_cmd(path, ONE, "cuda"), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return r.returncode == 0


# --- the PyTorch peer ---------------------------------------------------------------------------

def torch_peer():
    """The script a user writes instead of fp4diag, or None without torch + CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    dev = torch.device("cuda")
    e2m1 = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6], device=dev)
    e1m2 = torch.tensor([0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5], device=dev)
    h = torch.tensor([[1.0]], device=dev)
    while h.shape[0] < 16:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    g = torch.Generator(device="cpu").manual_seed(0)
    signs = (torch.randint(0, 2, (16,), generator=g) * 2 - 1).to(dev, torch.float32)
    rht = (torch.diag(signs) @ h) / 4.0

    def to_f32(t, arr):
        if arr.dtype == np.uint16:
            w = torch.from_numpy(arr.view(np.int16)).to(dev)
            if t is not None and t.get_ebias() == 15:  # IEEE half
                return w.view(torch.float16).float()
            return w.view(torch.bfloat16).float()
        return torch.from_numpy(arr.view(np.float32)).to(dev)

    def fake_quant(x, grid_name, gmax):
        b = x.reshape(-1, 16)
        amax_t = b.abs().max()
        ts = (amax_t / (gmax * 448.0)).clamp_min(1e-30)
        bamax = b.abs().amax(dim=1, keepdim=True)
        bs = (bamax / gmax / ts).clamp(max=448.0).to(torch.float8_e4m3fn).float() * ts
        safe = torch.where(bs > 0, bs, torch.ones_like(bs))
        t = (b.abs() / safe).clamp(max=gmax)
        if grid_name == "int4":
            q = torch.round(t)
        else:
            grid = e2m1 if grid_name == "e2m1" else e1m2
            mids = (grid[1:] + grid[:-1]) / 2
            q = grid[torch.bucketize(t, mids)]
        xq = torch.where(bs > 0, torch.copysign(q * safe, b), torch.zeros_like(b))
        xd, ed = b.double(), (xq - b).double()
        return (xd * xd).sum(), (ed * ed).sum()

    def analyse(words, six):
        res = []
        for _, t, arr in words:
            x = to_f32(t, arr)
            configs = ([("e2m1", 6.0), ("e1m2", 3.5), ("int4", 7.0)] if six else
                       [("e2m1", 6.0)])
            for rh in ((False, True) if six else (False,)):
                xr = (x.reshape(-1, 16) @ rht) if rh else x
                for name, gmax in configs:
                    sx, se = fake_quant(xr, name, gmax)
                    res.append(10.0 * torch.log10(sx / se))
        torch.cuda.synchronize()
        return [float(r) for r in res]

    def run(path, reader, six):
        return analyse(reader(path), six)

    run.device = torch.cuda.get_device_name(0)
    return run


def torch_startup():
    """Seconds a process takes to start Python, import torch, h5py and numpy and make its CUDA
    context: what the PyTorch script pays on every run before its first read (median of 3)."""
    code = ("import torch, h5py, numpy\n"
            "torch.zeros(1, device='cuda').sum().item()\n")
    ts = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


# --- the table ----------------------------------------------------------------------------------

def cell(t, base, peer_of=None):
    if t is None:
        return "-"
    s = f"{t:.3f} ({t / base:.2f}x)"
    if peer_of:
        s += f"; {t / peer_of:.2f}x fp4diag"
    return s


def machine():
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=int(os.environ.get("BENCH_E2E_MIB", "64")))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir")
    ap.add_argument("--no-cuda", action="store_true")
    ap.add_argument("--slow-once", type=float, default=5.0, metavar="S",
                    help="a cell whose first run takes over S seconds is not repeated")
    a = ap.parse_args()
    if not os.access(FP4DIAG, os.X_OK):
        sys.exit(f"bench_e2e: {FP4DIAG} missing (run `make bench-e2e`)")
    tmp = a.dir or tempfile.mkdtemp(prefix="fp4diag-e2e-")
    os.makedirs(tmp, exist_ok=True)
    try:
        return bench(a, tmp)
    finally:
        if not a.dir:
            shutil.rmtree(tmp, ignore_errors=True)


def bench(a, tmp):
    files, rows = generate(tmp, a.mib)
    if not fp4diag_accepts(files["bf16 .safetensors"]):
        del files["bf16 .safetensors"]
    first = files["float32"]
    devices = ["cpu"]
    if not a.no_cuda and cuda_usable(first):
        devices.append("cuda")
    peer = torch_peer() if "cuda" in devices else None
    nelem = rows * COLS * NT
    load0 = os.getloadavg()

    # warm the page cache
    for p in files.values():
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass

    runs = {}  # (file, run) -> list of seconds
    for kind, p in files.items():
        st = kind.endswith(".safetensors")
        reader = stored_words_st if st else stored_words_h5
        todo = [("words", lambda p=p, r=reader: r(p))]
        if not st:
            todo.append(("h5py", lambda p=p: h5py_convert(p)))
        for dev in devices:
            for n, args in (("one", ONE), ("six", SIX)):
                cmd = fp4diag_cmd(p, args, dev)
                todo.append((f"{n}-{dev}", lambda c=cmd: run_proc(c)))
        if peer:
            for n, six in (("one", False), ("six", True)):
                peer(p, reader, six)  # warm-up (kernels, allocator)
                todo.append((f"torch-{n}", lambda p=p, r=reader, s=six: peer(p, r, s)))
        for rep in range(a.repeats):
            for name, fn in todo:
                got = runs.setdefault((kind, name), [])
                if rep and got[0] > a.slow_once:
                    continue  # h5py d[...] on bf16 takes ~27 s per GiB: once is enough
                got.append(timed(fn))
        print(f"bench_e2e: {kind} done", file=sys.stderr)
    load1 = os.getloadavg()

    # the reports of every file agree (the same values)
    agree = True
    ref = None
    for kind, p in files.items():
        rep = os.path.join(tmp, "report.json")
        subprocess.run([FP4DIAG, "sqnr", p, *SIX, "-q", "-o", rep], check=True)
        with open(rep) as fh:
            r = json.load(fh)
        got = sorted((t["name"].lstrip("/"), json.dumps(t["results"], sort_keys=True))
                     for t in r["tensors"])
        if ref is None:
            ref = got
        elif got != ref:
            agree = False
            print(f"bench_e2e: the report of {kind} differs from float32's", file=sys.stderr)

    med = {k: statistics.median(v) for k, v in runs.items()}
    once = {k for k, v in runs.items() if len(v) < a.repeats}
    start = torch_startup() if peer else None
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    busy = max(load0[0], load1[0]) > 0.5 * (os.cpu_count() or 1)
    print(f"fp4diag bench-e2e, {now}: {NT} tensors of {rows} x {COLS} ({nelem / 1e6:.1f} M "
          f"values, {nelem * 4 / 2**20:.0f} MiB as float32), median of {a.repeats}, page cache "
          f"warm")
    print(f"machine: {machine()}" + (f"; GPU: {peer.device}" if peer else "")
          + f"; load average {load0[0]:.2f} before, {load1[0]:.2f} after"
          + (" (shared with other jobs: timings noisy)" if busy else ""))
    print("cells: seconds (x the stored-words read of the same file); PyTorch: also its time "
          "over fp4diag's")
    cols = [("words", "stored words"), ("h5py", "h5py d[...]")]
    for dev in devices:
        cols += [(f"one-{dev}", f"one, {dev}"), (f"six-{dev}", f"six, {dev}")]
    if peer:
        cols += [("torch-one", "PyTorch one"), ("torch-six", "PyTorch six")]
    print("| file | " + " | ".join(c[1] for c in cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for kind in files:
        base = med[(kind, "words")]
        cells = []
        for key, _ in cols:
            t = med.get((kind, key))
            peer_of = None
            if key.startswith("torch-"):
                peer_of = med.get((kind, f"{key[6:]}-{devices[-1]}"))
            cells.append(cell(t, base, peer_of) + (" (1 run)" if (kind, key) in once else ""))
        print(f"| {kind} | " + " | ".join(cells) + " |")
    print(f"reports of every file agree: {'yes' if agree else 'NO'}")
    if start is not None:
        print(f"PyTorch script start-up, not in its cells (interpreter, imports of torch, h5py "
              f"and numpy, CUDA context): {start:.3f} s, median of 3 processes")

    # targets of issue 14
    f32 = med[("float32", "one-cpu")]
    worst = max(med[(k, "one-cpu")] / f32 for k in ("f16", "bf16", "bf16+gzip-4"))
    print(f"one analysis on cpu, worst stored form over float32: {worst:.2f}x "
          f"(2-core target <= 1.2x: {'ok' if worst <= 1.2 else 'MISSED'})")
    if "cuda" in devices:
        for k in ("float32", "bf16"):
            r = med[(k, "one-cpu")] / med[(k, "words")]
            print(f"{k}: one, cpu / stored words = {r:.2f}x (GPU machine target <= 1.5x: "
                  f"{'ok' if r <= 1.5 else 'MISSED'})")
        r = med[("bf16+gzip-4", "one-cpu")] / med[("bf16+gzip-4", "words")]
        print(f"bf16+gzip-4: one, cpu / stored words = {r:.2f}x (target <= 0.3x: "
              f"{'ok' if r <= 0.3 else 'MISSED'})")
        r = max(med[(k, "six-cuda")] / med[(k, "words")] for k in files)
        print(f"six, cuda / stored words, worst file = {r:.2f}x (target <= 2x: "
              f"{'ok' if r <= 2 else 'MISSED'})")
        if peer:
            slow = [f"{k} {n}" for k in files for n in ("one", "six")
                    if med[(k, f"{n}-cuda")] >= med[(k, f"torch-{n}")]]
            print("fp4diag --device cuda faster than PyTorch on every row: "
                  + ("ok" if not slow else "MISSED (" + ", ".join(slow) + ")"))
            slow = [f"{k} {n}" for k in files for n in ("one", "six")
                    if med[(k, f"{n}-cuda")] >= med[(k, f"torch-{n}")] + start]
            print("... and than the PyTorch script as a process (its cell + start-up, as "
                  "fp4diag's cells are whole processes): "
                  + ("ok" if not slow else "MISSED (" + ", ".join(slow) + ")"))
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
