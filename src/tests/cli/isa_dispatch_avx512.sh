#!/bin/sh
# isa_dispatch_avx512.sh — isa_dispatch.sh for FP4DIAG_ISA=avx512: skipped (exit 77) on a CPU
# without AVX-512 F/VL/BW/DQ (the 2-core development VM); runs on the GPU machine's host.
. "$(dirname "$0")/lib/isa.sh"
[ "$(uname -m)" = x86_64 ] || skip "avx512 is an x86-64 variant"
isa_case avx512
