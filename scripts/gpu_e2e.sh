#!/bin/sh
# gpu_e2e.sh — end-to-end CPU-vs-CUDA check on a GPU machine: the same `fp4diag sqnr` run on
# real tensors with --device cpu and --device cuda, over 12 option sets (every grid, scale mode,
# rounding, RHT size, axis), reports compared by scripts/check_golden.py (1e-9 relative; codes,
# counts and histograms exact); and `fp4diag gemm` with CBLAS vs cuBLAS products under three
# recipes on the files that hold GEMM layers; with no FILE given, also on the checkpoint's
# tensors stored as contiguous bf16, f16 (part big-endian) and bf16+shuffle+gzip
# (scripts/stored_forms.py, where h5py is importable): the words the CUDA backend uploads and
# widens itself. Each pair also counts as bit-identical when every number is equal (--rtol 0).
# Usage: scripts/gpu_e2e.sh [FILE.h5 ...]
# Env: FP4DIAG (default ./fp4diag), OUT (default a temp dir; reports are left there on a
# difference). Exit 0 when every pair agrees, 1 otherwise, 77 when no GPU is usable.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${FP4DIAG:-./fp4diag}
out=${OUT:-$(mktemp -d)}
if [ $# -eq 0 ]; then
  set -- testdata/gpt_ckpt_small.h5 testdata/gpt_gemm_small.h5
  if python3 "$here/stored_forms.py" testdata/gpt_ckpt_small.h5 "$out/forms" >/dev/null; then
    set -- "$@" "$out/forms/bf16.h5" "$out/forms/f16.h5" "$out/forms/bf16_gz.h5"
  else
    echo "gpu_e2e: note: no h5py here: the bf16, f16 and bf16+gzip forms are not checked"
  fi
fi
if ! "$bin" grid --format e2m1 -q >/dev/null 2>&1; then echo "gpu_e2e: $bin does not run" >&2; exit 1; fi
"$bin" sqnr "$1" --format e2m1 --device cuda -q -o /dev/null 2>"$out/probe.err"
if [ $? -eq 4 ]; then echo "gpu_e2e: skip: $(cat "$out/probe.err")"; exit 77; fi
ok=0 bad=0 exact=0
# pair CMD FILE OPTS: CMD with --device cpu, then cuda; the CUDA report must name device cuda
# and agree with the CPU's (check_golden.py). gemm on a file without GEMM layers (x, w, dy
# groups) fails on the CPU too: that pair is skipped.
pair() {
  n=$(echo "$1 $2 $3" | cksum | cut -d' ' -f1)
  # shellcheck disable=SC2086
  "$bin" "$1" "$2" $3 --device cpu -q -o "$out/c_$n.json" 2>"$out/c_$n.err"; rc1=$?
  [ $rc1 -ne 0 ] && [ "$1" = gemm ] && return 0
  # shellcheck disable=SC2086
  "$bin" "$1" "$2" $3 --device cuda -q -o "$out/g_$n.json" 2>"$out/g_$n.err"; rc2=$?
  if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && grep -q '"device":[[:space:]]*"cuda' "$out/g_$n.json" &&
     python3 "$here/check_golden.py" "$out/c_$n.json" "$out/g_$n.json" >"$out/d_$n.txt" 2>&1; then
    ok=$((ok + 1))
    if python3 "$here/check_golden.py" --rtol 0 "$out/c_$n.json" "$out/g_$n.json" \
        >"$out/x_$n.txt" 2>&1; then
      exact=$((exact + 1))
    else
      echo "same within 1e-9, not bit-identical: $1 $2 $3"; head -2 "$out/x_$n.txt"
    fi
    rm -f "$out/c_$n.json" "$out/g_$n.json"
  else
    bad=$((bad + 1)); echo "DIFF (exit $rc1/$rc2) $1 $2 $3"; head -5 "$out/d_$n.txt" "$out/g_$n.err"
  fi
}
for f in "$@"; do
  for opts in "--format all --rht both" "--scale nvfp4 --format e2m1 --rht both" \
      "--scale nvfp4 --weight-2d --format e2m1" "--scale mxfp4 --format all --rht both" \
      "--scale mxfp4 --mx-rule rceil --format e2m1" "--scale tensor --format all" \
      "--rounding sr --seed 7 --format e2m1,int4 --rht both" "--rounding sr --sr-bits 8 --format e2m1" \
      "--rht on --rht-size 64 --format e2m1,e1m2" "--rht on --rht-size 256 --rht-signs seed:3 --format e2m1" \
      "--axis 0 --format e2m1,int4 --rht both" "--block 32 --format e3m0,e2m1:max=4"; do
    pair sqnr "$f" "$opts"
  done
  # gemm: products through CBLAS vs cuBLAS (operands quantized on the CPU both times)
  for opts in "--recipe ufp4" "--recipe e2m1" "--recipe e2m1 --scale nvfp4 --weight-2d"; do
    pair gemm "$f" "$opts"
  done
done
echo "gpu_e2e: cpu vs cuda: $ok same ($exact of them bit-identical), $bad different"
[ "$bad" -eq 0 ]
