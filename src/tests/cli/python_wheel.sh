#!/bin/sh
# python_wheel.sh — `pip install .` (and `pip install python/`) in a fresh virtual environment,
# offline (--no-index: the in-tree build backend needs no Python package; numpy comes from the
# system's site packages): the wheel builds over `make lib` of this checkout (the make's variables reach it
# through MAKEFLAGS, so this build's library is bundled, not rebuilt), installs, imports from
# outside the tree with its bundled libfp4diag.so.0, and the issue's one-liner prints the SQNR
# the CLI reports for the same values.
set -u
case "${BUILD:-build}" in *-san) echo "the sanitizer build makes no shared library"; exit 77 ;; esac
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
python3 -c 'import numpy, venv' 2>/dev/null ||
    { echo "numpy or venv is not installed (scripts/install-deps.sh installs them)"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
python3 -m venv --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1 ||
    { cat "$tmp/venv.log"; echo "python3 -m venv failed"; exit 1; }
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
# from the root (`pip install .`), then again from python/ over it
"$tmp/venv/bin/python" -m pip install --no-index "$PWD" >"$tmp/pip.log" 2>&1 ||
    { tail -n 30 "$tmp/pip.log"; echo "pip install . failed"; exit 1; }
"$tmp/venv/bin/python" -m pip install --no-index --force-reinstall --no-deps "$PWD/python" \
    >"$tmp/pip2.log" 2>&1 || { tail -n 30 "$tmp/pip2.log"; echo "pip install python/ failed"; exit 1; }
root=$PWD
cd "$tmp" || exit 1
unset FP4DIAG_LIBRARY PYTHONPATH
"$tmp/venv/bin/python" - "$tmp" <<'PY' || exit 1
import os, sys
import fp4diag
lib = fp4diag.library_path
assert lib.startswith(os.path.join(sys.argv[1], "venv")) and lib.endswith("fp4diag/libfp4diag.so.0"), lib
assert os.path.realpath(fp4diag.__file__).startswith(os.path.join(sys.argv[1], "venv")), fp4diag.__file__
print("python_wheel: fp4diag", fp4diag.version(), "from", lib)
PY
# the issue's check: a 256x256 standard normal array's SQNR, as the CLI reports it
"$tmp/venv/bin/python" -c "
import fp4diag, numpy
numpy.random.seed(5)
x = numpy.random.standard_normal((256, 256)).astype('float32')
numpy.save('x.npy', x)
print(repr(fp4diag.analyze(x, name='x')['results'][0]['sqnr_db']))" >"$tmp/py.txt" ||
    { echo "the one-liner failed"; exit 1; }
"$FP4DIAG" sqnr --json x.npy >"$tmp/cli.json" || { echo "fp4diag sqnr exited $?"; exit 1; }
python3 -c "
import json, sys
want = repr(json.load(open('$tmp/cli.json'))['tensors'][0]['results'][0]['sqnr_db'])
got = open('$tmp/py.txt').read().strip()
assert got == want, (got, want)
print('python_wheel: SQNR', got, 'dB, the CLI\'s')" || exit 1
cd "$root" && exit 0
