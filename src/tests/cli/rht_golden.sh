#!/bin/sh
# rht_golden.sh — `rht --format e2m1,e1m2` on the GEMM operands matches its golden report.
set -u
. src/tests/cli/golden.inc
golden_case rht_gemm_small rht testdata/gpt_gemm_small.h5 --format e2m1,e1m2
