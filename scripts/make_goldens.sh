#!/bin/sh
# make_goldens.sh — regenerate testdata/golden/*.json from the small testdata files, with the
# same commands the CLI cases (src/tests/cli/*_golden.sh) run. Review the diff before committing.
set -eu
cd "$(dirname "$0")/.."
F=./fp4diag
$F sqnr testdata/gpt_ckpt_small.h5 --all-tensors -q >testdata/golden/sqnr_ckpt_small.json
$F sqnr testdata/gpt_gemm_small.h5 --scale nvfp4 --axis 0 -q >testdata/golden/sqnr_gemm_nvfp4_axis0.json
$F bias testdata/gpt_ckpt_small.h5 /blocks/0 --layers 6 --all-tensors -q >testdata/golden/bias_ckpt_block0.json
$F buckets testdata/gpt_gemm_small.h5 --format all --scale mxfp4 -q >testdata/golden/buckets_gemm_mxfp4.json
$F rht testdata/gpt_gemm_small.h5 --format e2m1,e1m2 -q >testdata/golden/rht_gemm_small.json
$F rht testdata/gpt_ckpt_small.h5 '/blocks/*/proj/weight' --rht-size 64 --rht-signs seed:3 -q >testdata/golden/rht_ckpt_proj64.json
$F grid --format all -q >testdata/golden/grid_all.json
echo "goldens written:"; ls -l testdata/golden
