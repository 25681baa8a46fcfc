#!/bin/sh
# grid_golden.sh — `grid --format all` matches its golden report (levels, bins, analytic bias).
set -u
. src/tests/cli/golden.inc
golden_case grid_all grid --format all
