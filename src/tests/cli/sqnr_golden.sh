#!/bin/sh
# sqnr_golden.sh — `sqnr` on the small bf16 checkpoint (defaults: e2m1,e1m2,int4, fp32 blocks of
# 16, RTNE) matches its golden report and the schema.
set -u
. src/tests/cli/golden.inc
golden_case sqnr_ckpt_small sqnr testdata/gpt_ckpt_small.h5 --all-tensors
