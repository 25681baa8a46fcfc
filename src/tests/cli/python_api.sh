#!/bin/sh
# python_api.sh — the Python package (python/fp4diag) over this build's libfp4diag.so.0: its
# tests (python/tests/test_fp4diag.py) compare every result with the CLI's report for the same
# values and options; the torch parts skip, saying so, where torch is not installed.
# PYTHON=/path/to/python runs them under another interpreter (a venv with torch).
set -u
case "${BUILD:-build}" in *-san) echo "the sanitizer build makes no shared library"; exit 77 ;; esac
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null || { echo "no $PY"; exit 77; }
"$PY" -c 'import numpy' 2>/dev/null ||
    { echo "numpy is not installed (scripts/install-deps.sh installs it)"; exit 77; }
L="${BUILD:-build}/libfp4diag.so.0"
case "$L" in /*) ;; *) L="$PWD/$L" ;; esac
[ -e "$L" ] || { echo "no $L: make lib"; exit 1; }
FP4DIAG_LIBRARY="$L" PYTHONPATH="$PWD/python" FP4DIAG="$FP4DIAG" \
    "$PY" -m unittest discover -s python/tests -v 2>&1
