#!/bin/sh
# demo.sh — the main job on the real tensors kept in testdata/ (make demo).
set -eu
cd "$(dirname "$0")/.."
./fp4diag ls testdata/gpt_ckpt_small.h5
