#!/bin/sh
# sqnr_golden_nvfp4_axis0.sh — `sqnr --scale nvfp4 --axis 0` (two passes for the tensor amax,
# blocks along the first axis: slabs transposed into rows) matches its golden report.
set -u
. src/tests/cli/golden.inc
golden_case sqnr_gemm_nvfp4_axis0 sqnr testdata/gpt_gemm_small.h5 --scale nvfp4 --axis 0
