#!/bin/sh
# bench_mpi.sh — scaling of the mpirun mode on one node, as a Markdown table ready for the
# README. A generated checkpoint (scripts/make_scale_ckpt.py: SCALE_DATASETS datasets of SCALE_MIB
# MiB of SCALE_DTYPE, default 64 x 128 MiB of bf16 = 8 GiB, in a temp dir, deleted afterwards)
# is read once to warm the page cache; then `fp4diag sqnr --device cpu --mem-limit 512M` runs
#   - as one process on every core (the baseline: no mpirun);
#   - "node shared": `mpirun -n R --bind-to none` for R in RANKS (default "1 2 4 8"), each rank
#     taking cores / R threads (fp4diag's default under mpirun);
#   - "fixed threads": the same with --threads T per rank (T = cores / the largest R), so the
#     cores in use grow with R: the ranks' own scaling.
# Each report must equal the one-process report outside timing, argv and config.threads (exit 1
# otherwise). Columns: ranks, threads per rank, cores used, wall s, speed-up (against the
# one-process run for "node shared", against R = 1 for "fixed threads"), efficiency (speed-up /
# the factor of cores used), GB/s of stored bytes, G values/s. Rows are printed as they finish.
# Env: FP4DIAG (a program or wrapper; default ./fp4diag), TMPDIR, SCALE_DATASETS, SCALE_MIB,
# SCALE_DTYPE (bf16|f32), RANKS, THREADS (T), MODES ("shared fixed"), SQNR_ARGS (extra sqnr
# options, e.g. "--format e2m1 --rht both"), PAPER_GB (250) and PAPER_NODES (16): the closing
# line's estimate for a checkpoint of PAPER_GB GB of SCALE_DTYPE on PAPER_NODES nodes at the best
# whole-node rate measured. mpirun is taken from PATH (a relocated Open MPI: scripts/bundle_mpi.sh).
set -eu
cd "$(dirname "$0")/.."
FP4DIAG=${FP4DIAG:-$PWD/fp4diag}
N=${SCALE_DATASETS:-64}
MIB=${SCALE_MIB:-128}
DTYPE=${SCALE_DTYPE:-bf16}
command -v mpirun >/dev/null || { echo "bench_mpi: no mpirun (scripts/install-deps.sh)"; exit 77; }
"$FP4DIAG" --version | grep -q '^mpi: on' ||
    { echo "bench_mpi: $FP4DIAG built without MPI (make MPI=1)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=$(mktemp -d "${TMPDIR:-/tmp}/fp4diag-mpi-XXXXXX")
trap 'rm -rf -- "$dir"' EXIT INT TERM
echo "bench_mpi: writing $N x $MIB MiB $DTYPE datasets to $dir" >&2
rc=0
python3 scripts/make_scale_ckpt.py "$dir/ckpt.h5" "$N" "$MIB" "$DTYPE" || rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
cat "$dir/ckpt.h5" >/dev/null # page cache: every run reads from memory
PYTHONUNBUFFERED=1 python3 - "$FP4DIAG" "$dir" "$DTYPE" <<'PY'
import json, os, shlex, subprocess, sys, time
prog, d, dtype = sys.argv[1:4]
ranks = [int(r) for r in os.environ.get("RANKS", "1 2 4 8").split()]
modes = os.environ.get("MODES", "shared fixed").split()
extra = shlex.split(os.environ.get("SQNR_ARGS", ""))
cores = os.cpu_count()
per = int(os.environ.get("THREADS") or max(1, cores // max(ranks)))
size = os.path.getsize(f"{d}/ckpt.h5")
values = size // (2 if dtype == "bf16" else 4)

def run(name, launcher, threads):
    os.mkdir(f"{d}/{name}")  # each run writes r.json in its own dir: argv otherwise equal
    cmd = launcher + [prog, "sqnr", f"{d}/ckpt.h5", "--device", "cpu", "--mem-limit", "512M",
                      "-q"] + threads + extra + ["-o", "r.json"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=f"{d}/{name}", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    s = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"bench_mpi: {' '.join(cmd)}: exit {p.returncode}\n{p.stdout}")
    r = json.load(open(f"{d}/{name}/r.json"))
    r.pop("argv"); r.pop("provenance", None); r["timing"].pop("seconds"); r["config"].pop("threads")
    return s, r

mpirun = lambda n: ["mpirun", "-n", str(n), "--bind-to", "none", "--oversubscribe"]
one, ref = run("one", [], [])
ntens = len(ref["tensors"])
print(f"{size / 2**30:.2f} GiB of {dtype} ({values / 1e9:.2f} G values, {ntens} tensors), "
      f"{cores} cores, sqnr {' '.join(extra) or '(defaults)'}; load average before "
      f"{os.getloadavg()[0]:.2f}")
print()
print("| mode | ranks | threads per rank | cores used | wall s | speed-up | efficiency | "
      "GB/s stored | G values/s | report = 1 process |")
print("|:---|---:|---:|---:|---:|---:|---:|---:|---:|:---|")
def row(mode, r, t, s, base_s, base_cores, same):
    used = min(cores, r * t)
    sp = base_s / s
    eff = sp / (used / base_cores)
    print(f"| {mode} | {r} | {t} | {used} | {s:.2f} | {sp:.2f} | {eff:.2f} | "
          f"{size / s / 1e9:.2f} | {values / s / 1e9:.3f} | {same} |")
row("one process", 1, cores, one, one, cores, "-")
ok = True
shared = []
for mode in modes:
    base = None
    for r in ranks:
        t = max(1, cores // r) if mode == "shared" else per
        s, rep = run(f"{mode}{r}", mpirun(r), [] if mode == "shared" else ["--threads", str(t)])
        same = rep == ref
        ok &= same
        if mode == "shared":
            shared.append(s)
            row("node shared", r, t, s, one, cores, "yes" if same else "NO")
        else:
            if base is None:  # the first R (normally 1) is the base
                base = (s, min(cores, r * t))
            row("fixed threads", r, t, s, base[0], base[1], "yes" if same else "NO")
print()
best = min([one] + shared)
gb, nodes = float(os.environ.get("PAPER_GB", "250")), int(os.environ.get("PAPER_NODES", "16"))
print(f"load average after {os.getloadavg()[0]:.2f}; per node (the best whole-node run): "
      f"{size / best / 1e9:.2f} GB/s of stored {dtype}, {values / best / 1e9:.3f} G values/s")
print(f"on paper: {gb:g} GB of {dtype} on {nodes} such nodes: {gb * 1e9 / (size / best) / nodes:.0f} s "
      f"({gb * 1e9 / (size / best) / 60:.1f} min on one), plus the merge, if storage delivers "
      f"{nodes * size / best / 1e9:.1f} GB/s")
sys.exit(0 if ok else 1)
PY
