#!/bin/sh
# bench_gpu.sh — run the GPU throughput driver (build/bench_gpu, `make bench-gpu`): fused
# quantize+statistics with and without RHT beside a device-to-device copy, on a tensor of
# GIB GiB already on the GPU. Usage: scripts/bench_gpu.sh [GIB=1] [REPEATS=20] [LOG]
# Exit 77 (skip) when no GPU is usable.
set -u
cd "$(dirname "$0")/.." || exit 2
BIN=${BENCH_GPU:-build/bench_gpu}
[ -x "$BIN" ] || { echo "bench_gpu: $BIN missing (build with nvcc: make bench-gpu)" >&2; exit 2; }
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
else
    echo "bench_gpu: no nvidia-smi; no GPU here" >&2
    exit 77
fi
date -u +"date: %Y-%m-%d %H:%M UTC"
if [ $# -ge 3 ]; then "$BIN" "${1:-1}" "${2:-20}" | tee "$3"; else "$BIN" "${1:-1}" "${2:-20}"; fi
