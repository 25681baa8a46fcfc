#!/bin/sh
# demo.sh — the main job on the real tensors kept in testdata/.
set -eu
cd "$(dirname "$0")/.."
./fp4diag ls testdata/gpt_small.h5
