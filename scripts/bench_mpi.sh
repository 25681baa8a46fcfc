#!/bin/sh
# bench_mpi.sh — scaling of the mpirun mode: a generated checkpoint (SCALE_DATASETS float32
# datasets of SCALE_MIB MiB, default 64 x 128 MiB = 8 GiB, in a temp dir, deleted afterwards) read
# once to warm the page cache, then `fp4diag sqnr --device cpu` as one process and under
# `mpirun -n R --bind-to none` for R in RANKS (default "1 2 4 8"); each report must equal the
# one-process report outside "timing". Prints a Markdown table: ranks, wall seconds, speed-up,
# GB/s, threads per rank. Env: FP4DIAG, TMPDIR, SCALE_DATASETS, SCALE_MIB, RANKS, SQNR_ARGS
# (extra sqnr options, e.g. "--format e2m1 --rht both").
set -eu
cd "$(dirname "$0")/.."
FP4DIAG=${FP4DIAG:-$PWD/fp4diag}
N=${SCALE_DATASETS:-64}
MIB=${SCALE_MIB:-128}
RANKS=${RANKS:-"1 2 4 8"}
SQNR_ARGS=${SQNR_ARGS:-}
command -v mpirun >/dev/null || { echo "bench_mpi: no mpirun (scripts/install-deps.sh)"; exit 77; }
ldd "$FP4DIAG" | grep -q libmpi || { echo "bench_mpi: $FP4DIAG built without MPI (make MPI=1)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
base=${TMPDIR:-/tmp}
need_kib=$(( (N * MIB + 1024) * 1024 ))
avail_kib=$(df -Pk "$base" | awk 'NR == 2 {print $4}')
[ "$avail_kib" -ge "$need_kib" ] || { echo "bench_mpi: $base needs $((need_kib / 1024)) MiB free"; exit 77; }
dir=$(mktemp -d "$base/fp4diag-mpi-XXXXXX")
trap 'rm -rf -- "$dir"' EXIT INT TERM
echo "bench_mpi: writing $N x $MIB MiB float32 datasets to $dir" >&2
python3 - "$dir/ckpt.h5" "$N" "$MIB" <<'PY'
import sys, h5py, numpy as np
path, n, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cols = 4096
rows = mib * (1 << 20) // 4 // cols
rng = np.random.default_rng(7)
base = rng.standard_normal((rows, cols), dtype=np.float32)
base[rng.random(base.shape) < 0.001] *= 20.0
with h5py.File(path, "w") as f:
    for i in range(n):
        f.create_dataset(f"/layers/{i:02d}/weight", data=base * np.float32(1.0 + i / n))
PY
cat "$dir/ckpt.h5" >/dev/null # page cache: every run reads from memory
size=$(stat -c %s "$dir/ckpt.h5")
cores=$(nproc)
now() { python3 -c 'import time; print(time.monotonic())'; }
t0=$(now)
# shellcheck disable=SC2086
mkdir "$dir/one" && cd "$dir/one"
"$FP4DIAG" sqnr "$dir/ckpt.h5" --device cpu --mem-limit 512M -q $SQNR_ARGS -o r.json
t1=$(now)
echo "$t0 $t1" >"$dir/t_one"
for r in $RANKS; do
    mkdir "$dir/r$r" && cd "$dir/r$r" # the same -o r.json: argv equal too
    t0=$(now)
    # shellcheck disable=SC2086
    mpirun -n "$r" --bind-to none --oversubscribe "$FP4DIAG" sqnr "$dir/ckpt.h5" --device cpu \
        --mem-limit 512M -q $SQNR_ARGS -o r.json
    t1=$(now)
    echo "$t0 $t1" >"$dir/t_$r"
done
python3 - "$dir" "$size" "$cores" "$RANKS" <<'PY'
import json, os, sys
d, size, cores, ranks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
def secs(name):
    a, b = map(float, open(f"{d}/t_{name}").read().split())
    return b - a
def body(name):
    r = json.load(open(f"{d}/{name}/r.json"))
    r["timing"].pop("seconds")
    return r
one = secs("one")
ref = body("one")
print(f"{size / 2**30:.2f} GiB, {len(ref['tensors'])} tensors, {cores} cores, "
      f"load average {os.getloadavg()[0]:.2f}")
print("| ranks | wall s | speed-up | GB/s | threads per rank | report = 1 process |")
print("|---:|---:|---:|---:|---:|:---|")
print(f"| 1 (no mpirun) | {one:.2f} | 1.00 | {size / one / 1e9:.2f} | {cores} | - |")
ok = True
for r in ranks:
    s = secs(r)
    same = body(f"r{r}") == ref
    ok &= same
    print(f"| {r} | {s:.2f} | {one / s:.2f} | {size / s / 1e9:.2f} | {max(1, cores // int(r))} | "
          f"{'yes' if same else 'NO'} |")
sys.exit(0 if ok else 1)
PY
