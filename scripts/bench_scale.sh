#!/bin/sh
# bench_scale.sh — scale check: a generated 8 GiB checkpoint (scripts/make_scale_ckpt.py: 64
# float32 datasets of 128 MiB, in a temp dir, deleted afterwards) through `fp4diag sqnr
# --mem-limit 512M`; prints the wall time, throughput and peak resident size (/usr/bin/time -v),
# and fails when the peak is not under 1 GiB. Env: FP4DIAG, TMPDIR, SCALE_DATASETS (64), SCALE_MIB (128 per dataset).
set -eu
cd "$(dirname "$0")/.."
FP4DIAG=${FP4DIAG:-$PWD/fp4diag}
N=${SCALE_DATASETS:-64}
MIB=${SCALE_MIB:-128}
[ -x /usr/bin/time ] || { echo "bench_scale: /usr/bin/time (GNU time) is needed; skipped"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/fp4diag-scale-XXXXXX")
trap 'rm -rf -- "$dir"' EXIT INT TERM
echo "bench_scale: writing $N x $MIB MiB float32 datasets to $dir"
rc=0
python3 scripts/make_scale_ckpt.py "$dir/ckpt.h5" "$N" "$MIB" f32 || rc=$?
[ "$rc" -eq 0 ] || exit "$rc" # 77: too little free space
size=$(stat -c %s "$dir/ckpt.h5")
"$FP4DIAG" ls "$dir/ckpt.h5" >/dev/null  # warm the metadata
/usr/bin/time -v "$FP4DIAG" sqnr "$dir/ckpt.h5" --mem-limit 512M -q -o "$dir/report.json" \
    2>"$dir/time.txt"
rss_kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.txt")
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$dir/time.txt")
user=$(awk -F': ' '/User time/ {print $2}' "$dir/time.txt")
sys=$(awk -F': ' '/System time/ {print $2}' "$dir/time.txt")
tensors=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(len(r['tensors']), len(r['errors']))" "$dir/report.json")
python3 - "$size" "$wall" "$rss_kib" "$user" "$sys" "$tensors" <<'PY'
import os, sys
size, wall, rss, user, sy, tens = sys.argv[1:7]
size, rss = int(size), int(rss)
parts = [float(p) for p in wall.split(":")]
sec = parts[-1] + (parts[-2] * 60 if len(parts) > 1 else 0) + (parts[-3] * 3600 if len(parts) > 2 else 0)
la = os.getloadavg()
print(f"bench_scale: {size / 2**30:.2f} GiB, {tens.split()[0]} tensors ({tens.split()[1]} errors), "
      f"--mem-limit 512M: {sec:.1f} s wall (user {user} s, sys {sy} s), "
      f"{size / sec / 1e9:.2f} GB/s, peak RSS {rss / 1024:.0f} MiB "
      f"({'under' if rss < 1 << 20 else 'OVER'} 1 GiB); load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
sys.exit(0 if rss < 1 << 20 and tens.split()[1] == "0" else 1)
PY
