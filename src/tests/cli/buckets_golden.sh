#!/bin/sh
# buckets_golden.sh — `buckets --format all --scale mxfp4` on the GEMM operands matches its
# golden report.
set -u
. src/tests/cli/golden.inc
golden_case buckets_gemm_mxfp4 buckets testdata/gpt_gemm_small.h5 --format all --scale mxfp4
