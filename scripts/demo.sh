#!/bin/sh
# demo.sh — the main job on the real tensors kept in testdata/ (make demo): list them, SQNR of
# every checkpoint tensor under the default formats, and what the RHT does to the GEMM operands.
# The JSON reports go to build/demo/; the tables (-v) to the terminal.
set -eu
cd "$(dirname "$0")/.."
mkdir -p build/demo
echo "== fp4diag ls testdata/gpt_ckpt_small.h5"
./fp4diag ls testdata/gpt_ckpt_small.h5
echo
echo "== fp4diag sqnr testdata/gpt_ckpt_small.h5 -v -o build/demo/sqnr.json"
./fp4diag sqnr testdata/gpt_ckpt_small.h5 -v -o build/demo/sqnr.json 2>&1
echo
echo "== fp4diag rht testdata/gpt_gemm_small.h5 -v -o build/demo/rht.json"
./fp4diag rht testdata/gpt_gemm_small.h5 -v -o build/demo/rht.json 2>&1
echo
echo "reports: build/demo/sqnr.json build/demo/rht.json"
