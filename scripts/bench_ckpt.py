#!/usr/bin/env python3
"""bench_ckpt.py — `make bench-ckpt`: fp4diag on a checkpoint of the size users have.

Generates once, into DIR (kept: later runs reuse it), a Hugging Face style sharded bf16 safetensors
checkpoint of Llama-7B decoder layers (q/k/v/o 4096 x 4096, gate/up 11008 x 4096, down
4096 x 11008, two RMSNorm vectors of 4096; 404 MB a layer; heavy-tailed values: Student-t with 4
degrees of freedom x 0.02, each layer's tensors scaled by 1 + i/L), shards of at most 2 GiB and
`model.safetensors.index.json`, then prints one table, page cache warm, median of --repeats:

  read floor     every byte of the shards read by fp4diag's own parallel reader (build/bench_ckread:
                 fp4_pario_pread in 64 MiB runs), no analysis, with 1, 4, 8, 16, 32 threads (up to
                 2x the CPUs); the fastest is the baseline of every ratio
  one / six      `fp4diag sqnr DIR` with one analysis (e2m1, nvfp4) and six (e2m1, e1m2, int4 x RHT
                 off/on, nvfp4), whole processes, --device cpu (every core) and, where a GPU is
                 there, --device cuda
  threads        one and six on the CPU with --threads 1, 2, 4, ... up to every core: seconds,
                 speed-up and parallel efficiency against one thread
  PyTorch        where torch with CUDA is importable: safetensors.torch.load_file(shard,
                 device='cuda') and the same NVFP4-style analyses of every rank-2 tensor (block 16,
                 E4M3 block scale under an fp32 tensor scale, E2M1 by bucketize, INT4 by round,
                 RHT-16 by a matmul, fp64 error sums), timed in this process (start-up excluded)
  cold           with --cold, where this process may write /proc/sys/vm/drop_caches (root): the
                 read floor and one analysis on the CPU after dropping the page cache. It drops
                 the cache of the whole machine, so it is off unless asked for; the table says why
                 a cold row is missing

usage: python3 scripts/bench_ckpt.py --dir DIR [--gib 6] [--repeats 3] [--no-cuda] [--cold]
                                     [--sweep one,six] [--slow-once S]
  --gib G      checkpoint size in GiB (whole layers; default 6 — the issue's 6.48 GB with 16 layers;
               on a 2-core machine use 1)
  --sweep      which analyses the --threads rows run (default one,six; "none" leaves them out)
  --slow-once S  a cell whose first run takes over S seconds (default 20) is not repeated and is
               marked "(1 run)"
Env: FP4DIAG (default ./fp4diag), BENCH_CKREAD (default build/bench_ckread).
"""
import argparse
import datetime
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FP4DIAG = os.environ.get("FP4DIAG", os.path.join(ROOT, "fp4diag"))
CKREAD = os.environ.get("BENCH_CKREAD", os.path.join(ROOT, "build", "bench_ckread"))
ONE = ["--format", "e2m1", "--scale", "nvfp4", "--rht", "off"]
SIX = ["--format", "e2m1,e1m2,int4", "--scale", "nvfp4", "--rht", "both"]
H, F = 4096, 11008
LAYER = [("self_attn.q_proj.weight", (H, H)), ("self_attn.k_proj.weight", (H, H)),
         ("self_attn.v_proj.weight", (H, H)), ("self_attn.o_proj.weight", (H, H)),
         ("mlp.gate_proj.weight", (F, H)), ("mlp.up_proj.weight", (F, H)),
         ("mlp.down_proj.weight", (H, F)), ("input_layernorm.weight", (H,)),
         ("post_attention_layernorm.weight", (H,))]
LAYER_BYTES = sum(2 * int(np.prod(s)) for _, s in LAYER)
SHARD_MAX = 2 << 30


# --- the checkpoint ------------------------------------------------------------------------------

def bf16_words(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)


def write_shard(path, tensors):
    """A safetensors file streamed tensor by tensor (the format: an 8-byte little-endian header
    length, the JSON header, the data). tensors: [(name, shape, fn -> uint16 bf16 words)]."""
    header, off = {}, 0
    for name, shape, _ in tensors:
        n = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for _, _, fn in tensors:
            f.write(fn().tobytes())
    os.replace(tmp, path)


def generate(d, gib):
    layers = max(1, round(gib * 2**30 / LAYER_BYTES))
    index = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            meta = json.load(f)["metadata"]
        if meta.get("fp4diag_bench_layers") == layers:
            return sorted(glob.glob(os.path.join(d, "model-*.safetensors"))), layers
    need = layers * LAYER_BYTES + (1 << 30)
    free = shutil.disk_usage(d).free
    if free < need:
        sys.exit(f"bench_ckpt: {d} has {free >> 20} MiB free, needs {need >> 20} MiB")
    for old in glob.glob(os.path.join(d, "model-*.safetensors")):
        os.unlink(old)
    rng = np.random.default_rng(7)
    base = {s: (rng.standard_t(4, size=s).astype(np.float32) * np.float32(0.02))
            for s in {s for _, s in LAYER}}
    plan, cur, size = [], [], 0
    for i in range(layers):
        k = np.float32(1.0 + i / layers)
        for leaf, s in LAYER:
            name = f"model.layers.{i}.{leaf}"
            n = 2 * int(np.prod(s))
            if cur and size + n > SHARD_MAX:
                plan.append(cur)
                cur, size = [], 0
            cur.append((name, s, lambda b=base[s], k=k: bf16_words(b * k)))
            size += n
    plan.append(cur)
    files, weight_map = [], {}
    for j, tensors in enumerate(plan):
        fn = f"model-{j + 1:05d}-of-{len(plan):05d}.safetensors"
        print(f"bench_ckpt: writing {fn} ({len(tensors)} tensors)", file=sys.stderr)
        write_shard(os.path.join(d, fn), tensors)
        files.append(os.path.join(d, fn))
        weight_map.update({name: fn for name, _, _ in tensors})
    with open(index + ".part", "w") as f:
        json.dump({"metadata": {"total_size": layers * LAYER_BYTES,
                                "fp4diag_bench_layers": layers},
                   "weight_map": weight_map}, f, indent=1)
    os.replace(index + ".part", index)
    return files, layers


# --- what is timed -------------------------------------------------------------------------------

def timed(cmd, env=None):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def timed_call(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def read_floor(files, threads):
    env = dict(os.environ, FP4DIAG_READ_THREADS=str(threads))
    out = subprocess.run([CKREAD, "64", *files], check=True, capture_output=True, text=True,
                         env=env).stdout.split()
    return float(out[0])


def fp4diag(d, args, device, threads=None):
    cmd = [FP4DIAG, "sqnr", d, *args, "--device", device, "-q", "-o", os.devnull]
    if threads:
        cmd += ["--threads", str(threads)]
    return cmd


def torch_peer():
    """The script a user writes instead, or None without torch + CUDA + safetensors."""
    try:
        import torch
        from safetensors.torch import load_file
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    dev = torch.device("cuda")
    grids = {"e2m1": torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6], device=dev),
             "e1m2": torch.tensor([0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5], device=dev)}
    gmax = {"e2m1": 6.0, "e1m2": 3.5, "int4": 7.0}
    h = torch.tensor([[1.0]], device=dev)
    while h.shape[0] < 16:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    g = torch.Generator(device="cpu").manual_seed(0)
    signs = (torch.randint(0, 2, (16,), generator=g) * 2 - 1).to(dev, torch.float32)
    rht = (torch.diag(signs) @ h) / 4.0

    def fake_quant(x, name):
        b, m = x.reshape(-1, 16), gmax[name]
        ts = (b.abs().max() / (m * 448.0)).clamp_min(1e-30)
        bs = (b.abs().amax(dim=1, keepdim=True) / m / ts).clamp(max=448.0)
        bs = bs.to(torch.float8_e4m3fn).float() * ts
        safe = torch.where(bs > 0, bs, torch.ones_like(bs))
        t = (b.abs() / safe).clamp(max=m)
        if name == "int4":
            q = torch.round(t)
        else:
            grid = grids[name]
            q = grid[torch.bucketize(t, (grid[1:] + grid[:-1]) / 2)]
        xq = torch.where(bs > 0, torch.copysign(q * safe, b), torch.zeros_like(b))
        xd, ed = b.double(), (xq - b).double()
        return (xd * xd).sum(), (ed * ed).sum()

    def run(files, six):
        res = []
        for path in files:
            for _, w in load_file(path, device="cuda").items():
                if w.dim() != 2:
                    continue
                x = w.float()
                for rh in ((False, True) if six else (False,)):
                    xr = (x.reshape(-1, 16) @ rht) if rh else x
                    for name in (("e2m1", "e1m2", "int4") if six else ("e2m1",)):
                        sx, se = fake_quant(xr, name)
                        res.append(10.0 * torch.log10(sx / se))
        torch.cuda.synchronize()
        return len(res)

    run.device = torch.cuda.get_device_name(0)
    return run


def drop_caches():
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return None
    except OSError as e:
        return f"cannot drop the page cache here ({e.strerror})"


def warm(files):
    for p in files:
        with open(p, "rb") as f:
            while f.read(1 << 26):
                pass


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} CPUs"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--gib", type=float, default=6.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-cuda", action="store_true")
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--sweep", default="one,six")
    ap.add_argument("--slow-once", type=float, default=20.0)
    a = ap.parse_args()
    for exe in (FP4DIAG, CKREAD):
        if not os.access(exe, os.X_OK):
            sys.exit(f"bench_ckpt: {exe} missing (run `make bench-ckpt`)")
    os.makedirs(a.dir, exist_ok=True)
    files, layers = generate(a.dir, a.gib)
    total = sum(os.path.getsize(p) for p in files)
    ncpu = len(os.sched_getaffinity(0))
    cuda = not a.no_cuda and subprocess.run(
        fp4diag(a.dir, ONE, "cuda"), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode == 0
    peer = torch_peer() if cuda else None
    load0 = os.getloadavg()
    warm(files)

    med, once = {}, set()

    def measure(key, fn):
        got = [fn()]
        if got[0] <= a.slow_once:
            got += [fn() for _ in range(a.repeats - 1)]
        else:
            once.add(key)
        med[key] = statistics.median(got)
        print(f"bench_ckpt: {key}: {med[key]:.3f} s", file=sys.stderr)

    rthreads = [t for t in (1, 4, 8, 16, 32) if t <= max(4, 2 * ncpu)]
    for t in rthreads:
        measure(("read", t), lambda t=t: read_floor(files, t))
    floor_t = min(rthreads, key=lambda t: med[("read", t)])
    floor = med[("read", floor_t)]
    devices = ["cpu"] + (["cuda"] if cuda else [])
    for dev in devices:
        for n, args in (("one", ONE), ("six", SIX)):
            measure((n, dev), lambda c=fp4diag(a.dir, args, dev): timed(c))
    if peer:
        for n, six in (("one", False), ("six", True)):
            peer(files[:1], six)  # warm-up: kernels, allocator
            measure(("torch", n), lambda s=six: timed_call(peer, files, s))
    sweep = [] if a.sweep == "none" else a.sweep.split(",")
    tlist = sorted({1 << k for k in range(ncpu.bit_length()) if 1 << k <= ncpu} | {ncpu})
    for n in sweep:
        args = ONE if n == "one" else SIX
        for t in tlist:
            measure((n, "threads", t), lambda c=fp4diag(a.dir, args, "cpu", t): timed(c))
    cold, why_not = {}, None
    if a.cold:
        why_not = drop_caches()
        if why_not is None:
            cold["read"] = read_floor(files, floor_t)
            drop_caches()
            cold["one"] = timed(fp4diag(a.dir, ONE, "cpu"))
            warm(files)
    else:
        why_not = "not measured: give --cold (it drops the page cache of the whole machine)"
    load1 = os.getloadavg()

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"fp4diag bench-ckpt, {now}: {layers} Llama-7B decoder layers, bf16, {len(files)} "
          f"safetensors shards + index, {total / 1e9:.2f} GB; median of {a.repeats}, page cache "
          f"warm")
    print(f"machine: {machine()}" + (f"; GPU: {peer.device}" if peer else "")
          + f"; load average {load0[0]:.2f} before, {load1[0]:.2f} after")
    print(f"read floor: fp4diag's reader with {floor_t} threads: {floor:.3f} s "
          f"({total / floor / 1e9:.2f} GB/s); by threads: "
          + ", ".join(f"{t}: {med[('read', t)]:.3f} s" for t in rthreads))
    print("| run | seconds | GB/s | x read floor | vs PyTorch |")
    print("|---|---:|---:|---:|---:|")

    def row(label, key, peer_key=None):
        t = med[key]
        vs = ""
        if peer_key and peer_key in med:
            vs = f"{med[peer_key] / t:.2f}x faster" if t < med[peer_key] else \
                f"{t / med[peer_key]:.2f}x slower"
        mark = " (1 run)" if key in once else ""
        print(f"| {label} | {t:.3f}{mark} | {total / t / 1e9:.2f} | {t / floor:.2f} | {vs} |")

    for dev in devices:
        for n in ("one", "six"):
            row(f"fp4diag {n}, --device {dev}", (n, dev), ("torch", n) if dev == "cuda" else None)
    if peer:
        for n in ("one", "six"):
            row(f"PyTorch {n} (load_file to cuda + analyses)", ("torch", n))
    for n in sweep:
        base = med[(n, "threads", 1)]
        print(f"{n} on the CPU by --threads: " + ", ".join(
            f"{t}: {med[(n, 'threads', t)]:.2f} s ({base / med[(n, 'threads', t)]:.1f}x, "
            f"efficiency {base / med[(n, 'threads', t)] / t:.2f})" for t in tlist))
    if cold:
        print(f"cold page cache (one run each): read floor {cold['read']:.3f} s, one on cpu "
              f"{cold['one']:.3f} s ({cold['one'] / cold['read']:.2f}x)")
    else:
        print(f"cold page cache: {why_not}")
    # targets (issue 30)
    if cuda:
        for n in ("one", "six"):
            r = med[(n, "cuda")] / floor
            print(f"target: {n}, cuda within 1.2x of the read floor: {r:.2f}x "
                  f"{'ok' if r <= 1.2 else 'MISSED'}")
            if peer:
                r = med[("torch", n)] / med[(n, "cuda")]
                print(f"target: {n}, cuda at least 2x faster than PyTorch: {r:.2f}x "
                      f"{'ok' if r >= 2 else 'MISSED'}")
    if "six" in sweep and ncpu > 1:
        e = med[("six", "threads", 1)] / med[("six", "threads", ncpu)] / ncpu
        print(f"target: six on {ncpu} threads, parallel efficiency >= 0.75: {e:.2f} "
              f"{'ok' if e >= 0.75 else 'MISSED'}")
    r = med[("one", "cpu")] / floor
    print(f"target: one on the CPU within 1.5x of the read floor: {r:.2f}x "
          f"{'ok' if r <= 1.5 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
