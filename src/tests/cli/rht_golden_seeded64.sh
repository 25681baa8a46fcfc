#!/bin/sh
# rht_golden_seeded64.sh — `rht` with 64-point groups and seeded signs on a glob selection
# matches its golden report.
set -u
. src/tests/cli/golden.inc
golden_case rht_ckpt_proj64 rht testdata/gpt_ckpt_small.h5 '/blocks/*/proj/weight' \
    --rht-size 64 --rht-signs seed:3
