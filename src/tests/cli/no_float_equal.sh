#!/bin/sh
# no_float_equal.sh — no test uses cmocka's assert_float_equal / assert_float_not_equal: they
# convert to float, pass NaN and +-Inf against any expected value and cannot check tighter than
# about 1e-7 relative (issue 32). src/tests/testutil.h has the assert_double_* forms to use.
set -u
[ -d src/tests ] || { echo "no src/tests"; exit 1; }
dirs=src/tests
[ -d kernels ] && dirs="$dirs kernels"
# shellcheck disable=SC2086
if grep -rnE 'assert_float_(not_)?equal[[:space:]]*\(' $dirs; then
    echo "use assert_double_exact/_ulp/_rel/_abs/_nan/_inf (src/tests/testutil.h) instead"
    exit 1
fi
exit 0
