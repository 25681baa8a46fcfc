#!/bin/sh
# bias_golden.sh — `bias` on the datasets of group /blocks/0 with --layers 6 (compound
# shrinkage) matches its golden report.
set -u
. src/tests/cli/golden.inc
golden_case bias_ckpt_block0 bias testdata/gpt_ckpt_small.h5 /blocks/0 --layers 6 --all-tensors
