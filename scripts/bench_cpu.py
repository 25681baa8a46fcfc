#!/usr/bin/env python3
"""bench_cpu.py — `make bench`: CPU speed of fp4diag against a plain read of the same data.

Generates a 256 MiB float32 HDF5 dataset (random normal, 0.1% outliers) in a temp dir and times,
in one run (median of BENCH_REPEATS, default 3):
  read   build/bench_read: the whole dataset through fp4_h5_read_slab (our HDF5 path) into one
         buffer, as a plain `h5py d[...]` does — the issue's baseline, which the targets use
  read8  the same read in 8 MiB slabs into one reused buffer: no page faults on a fresh 256 MiB
         buffer, so the I/O floor fp4diag's own streaming could reach (ratios printed too)
  one    fp4diag sqnr FILE --format e2m1 --scale fp32 --rht off -q -o /dev/null
  six    fp4diag sqnr FILE --format e2m1,e1m2,int4 --scale fp32 --rht both -q -o /dev/null
  numpy  the same analysis as `one` in float64 numpy (fp32 block scales, e2m1 RTNE,
         SQNR / alpha / code histogram), checked against fp4diag's numbers
Targets (2-core machine): one <= 2x read, six <= 4x read, numpy >= 50x one.
The CPU engine's variant that ran is printed (`fp4diag --version`, FP4DIAG_ISA); with --all-isa
`one` and `six` also run once per variant this CPU runs (FP4DIAG_ISA=...), one row each.
Each row also gives the median CPU time (user + system, all threads) and its ratio to read8's,
which a loaded machine disturbs less than wall time.
Env: BENCH_REPEATS, BENCH_NUMPY_REPEATS (default 1), BENCH_MIB (default 256), FP4DIAG and
BENCH_READ (the binaries, default ./fp4diag and build/bench_read: scripts/bench_bundle.sh runs
this from a folder without the source tree), TMPDIR.
"""
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FP4DIAG = os.environ.get("FP4DIAG", os.path.join(ROOT, "fp4diag"))
READER = os.environ.get("BENCH_READ", os.path.join(ROOT, "build", "bench_read"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
NP_REPEATS = int(os.environ.get("BENCH_NUMPY_REPEATS", "1"))
MIB = int(os.environ.get("BENCH_MIB", "256"))
COLS = 4096
DSET = "/w"


def make_data(path):
    rows = MIB * (1 << 20) // 4 // COLS
    rng = np.random.default_rng(1234)
    with h5py.File(path, "w") as f:
        d = f.create_dataset(DSET, shape=(rows, COLS), dtype="<f4")
        step = 1024
        for r in range(0, rows, step):
            x = rng.standard_normal((min(step, rows - r), COLS), dtype=np.float32)
            m = rng.random(x.shape) < 0.001
            x[m] *= 20.0
            d[r:r + x.shape[0]] = x
    return rows


CPU = {}  # run name -> CPU seconds (user + system) of each timed run


def timed(cmd, env=None, name=None):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    w = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if name:
        CPU.setdefault(name, []).append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return w


def e2m1_numpy(path, rows):
    """fp32 block scales (block 16), e2m1 RTNE (ties to the even index), fp64 sums."""
    q = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float32)
    mids = (q[:-1] + q[1:]) / 2
    sx2 = se2 = sxqx = 0.0
    hist = np.zeros(16, dtype=np.int64)
    with h5py.File(path, "r") as f:
        d = f[DSET]
        step = 512
        for r in range(0, rows, step):
            x = d[r:r + step].reshape(-1, 16)
            amax = np.max(np.abs(x), axis=1, keepdims=True)
            s = (amax / np.float32(6.0)).astype(np.float32)
            live = s > 0
            t = np.where(live, np.abs(x) / np.where(live, s, np.float32(1)), np.float32(0))
            t = np.minimum(t, np.float32(6.0)).astype(np.float32)
            ix = np.zeros(t.shape, dtype=np.int64)
            for i, m in enumerate(mids):
                ix += (t >= m) if i % 2 else (t > m)
            xq = np.copysign(q[ix] * s, x).astype(np.float32)
            xd, qd = x.astype(np.float64), xq.astype(np.float64)
            sx2 += float(np.sum(xd * xd))
            se2 += float(np.sum((qd - xd) ** 2))
            sxqx += float(np.sum(qd * xd))
            hist += np.bincount((ix + 8 * np.signbit(x)).ravel(), minlength=16)
    return 10 * np.log10(sx2 / se2), sxqx / sx2, hist


def engine_info():
    """(variant that runs, [variants this CPU runs]) from `fp4diag --version`."""
    out = subprocess.run([FP4DIAG, "--version"], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("cpu engine: "):
            name, _, rest = line[len("cpu engine: "):].partition(" (this CPU runs:")
            return name.strip(), rest.rstrip(")").split()
    return "?", []


def main():
    all_isa = "--all-isa" in sys.argv[1:]
    isa, isas = engine_info()
    for exe in (FP4DIAG, READER):
        if not os.access(exe, os.X_OK):
            sys.exit(f"bench_cpu: {exe} missing (run `make bench`)")
    tmp = tempfile.mkdtemp(prefix="fp4diag-bench-")
    try:
        path = os.path.join(tmp, "bench.h5")
        rows = make_data(path)
        size = os.path.getsize(path)
        load0 = os.getloadavg()
        # --device cpu: a CUDA build on a GPU machine would otherwise take the GPU (auto)
        one = [FP4DIAG, "sqnr", path, "--format", "e2m1", "--scale", "fp32", "--rht", "off",
               "--device", "cpu", "-q", "-o", "/dev/null"]
        six = [FP4DIAG, "sqnr", path, "--format", "e2m1,e1m2,int4", "--scale", "fp32",
               "--rht", "both", "--device", "cpu", "-q", "-o", "/dev/null"]
        read = [READER, path, DSET]
        read8 = [READER, path, DSET, "8"]
        timed(read)  # page cache warm-up
        t = {"read": [], "read8": [], "one": [], "six": []}
        per_isa = [v for v in isas if all_isa]
        for v in per_isa:
            t[f"one-{v}"], t[f"six-{v}"] = [], []
        for _ in range(REPEATS):
            t["read"].append(timed(read, name="read"))
            t["read8"].append(timed(read8, name="read8"))
            t["one"].append(timed(one, name="one"))
            t["six"].append(timed(six, name="six"))
            for v in per_isa:  # interleaved with the rest: the same load for every variant
                env = dict(os.environ, FP4DIAG_ISA=v)
                t[f"one-{v}"].append(timed(one, env, f"one-{v}"))
                t[f"six-{v}"].append(timed(six, env, f"six-{v}"))
        np_t = []
        for _ in range(NP_REPEATS):
            t0 = time.perf_counter()
            sq, alpha, hist = e2m1_numpy(path, rows)
            np_t.append(time.perf_counter() - t0)
        load1 = os.getloadavg()
        # the numbers agree (fp64 sums in another order: not bitwise)
        rep = os.path.join(tmp, "one.json")
        subprocess.run(one[:-1] + [rep], check=True)
        with open(rep) as fh:
            r = json.load(fh)["tensors"][0]["results"][0]
        ok = (abs(r["sqnr_db"] - sq) < 1e-6 and abs(r["alpha"] - alpha) < 1e-9
              and r["histogram"] == [int(v) for v in hist])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in t.items()}
    med["numpy"] = statistics.median(np_t)
    base = med["read"]
    print(f"fp4diag bench: {size / 2**20:.0f} MiB float32 ({rows} x {COLS}), "
          f"{os.cpu_count()} CPUs, median of {REPEATS} (numpy {NP_REPEATS})")
    print(f"cpu engine: {isa} (this CPU runs: {' '.join(isas)}; FP4DIAG_ISA picks one)")
    print(f"load average before {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, "
          f"after {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}"
          + ("  (machine shared with other jobs: timings are pessimistic)"
             if max(load0[0], load1[0]) > 0.5 * (os.cpu_count() or 1) else ""))
    cpu = {k: statistics.median(v) for k, v in CPU.items()}
    print(f"{'run':<12}{'seconds':>9}{'x read':>9}{'x read8':>9}{'GB/s':>8}{'cpu s':>8}"
          f"{'x read8':>8}  target")
    rows_out = [("read", "plain read, whole dataset (fp4_h5_read_slab)", None),
                ("read8", "the same read in 8 MiB slabs, buffer reused", None),
                ("one", "sqnr e2m1 fp32, 1 analysis", 2.0),
                ("six", "sqnr e2m1,e1m2,int4 x rht off/on", 4.0),
                ("numpy", "numpy fp64, 1 analysis", None)]
    for v in per_isa:
        rows_out += [(f"one-{v}", f"one, FP4DIAG_ISA={v}", 2.0),
                     (f"six-{v}", f"six, FP4DIAG_ISA={v}", 4.0)]
    for k, label, tgt in rows_out:
        ratio = med[k] / base
        tg = f"<= {tgt:.0f}x {'ok' if ratio <= tgt else 'MISSED'}" if tgt else ""
        c = (f"{cpu[k]:8.3f}{cpu[k] / cpu['read8']:8.2f}" if k in cpu and cpu["read8"] > 0
             else f"{'':16}")
        print(f"{k:<12}{med[k]:9.3f}{ratio:9.2f}{med[k] / med['read8']:9.2f}"
              f"{size / med[k] / 1e9:8.2f}{c}  {tg}  {label}")
    sp = med["numpy"] / med["one"]
    print(f"numpy / one = {sp:.0f}x (target >= 50x {'ok' if sp >= 50 else 'MISSED'}); "
          f"fp4diag vs numpy SQNR {r['sqnr_db']:.6f} / {sq:.6f} dB, alpha, histogram: "
          f"{'agree' if ok else 'DIFFER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
