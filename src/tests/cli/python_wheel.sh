#!/bin/sh
# python_wheel.sh — the wheel: `pip wheel .` makes fp4diag-VERSION-py3-none-linux_ARCH.whl (this
# machine's architecture; a linux_ tag, not manylinux: the bundled library links the system's
# HDF5, cJSON, OpenBLAS, libdeflate, xxhash and libgomp, which no manylinux policy allows)
# holding the package and libfp4diag.so.0; it installs offline (--no-index; numpy from the
# system's site packages) into a FRESH virtual environment, imports from outside the tree with
# its bundled library, and analyze() gives the tensor's entry of the CLI's report for the same
# values, the whole dict (the issue's one-liner: its SQNR printed as the CLI prints it). Then
# `pip install .` and `pip install python/` over it. The make's variables reach the in-tree
# backend through MAKEFLAGS, so this build's library is bundled, not rebuilt.
set -u
case "${BUILD:-build}" in *-san) echo "the sanitizer build makes no shared library"; exit 77 ;; esac
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
python3 -c 'import numpy, venv, zipfile' 2>/dev/null ||
    { echo "numpy or venv is not installed (scripts/install-deps.sh installs them)"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
root=$PWD
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
ver=$(sed -n 's/^#define FP4DIAG_VERSION "\(.*\)"/\1/p' src/base/version.h)
want_whl="fp4diag-$ver-py3-none-linux_$(uname -m).whl"

# 1. pip wheel . : one wheel, named for this platform, with the package and the library
python3 -m pip wheel --no-index --no-deps -w "$tmp/dist" "$root" >"$tmp/wheel.log" 2>&1 ||
    { tail -n 30 "$tmp/wheel.log"; echo "pip wheel . failed"; exit 1; }
got_whl=$(cd "$tmp/dist" && ls)
[ "$got_whl" = "$want_whl" ] || { echo "pip wheel . made '$got_whl', not $want_whl"; exit 1; }
python3 - "$tmp/dist/$want_whl" "$ver" "$(uname -m)" <<'PY' || exit 1
import base64, hashlib, sys, zipfile
whl, ver, arch = sys.argv[1:]
z = zipfile.ZipFile(whl)
names = set(z.namelist())
dist = "fp4diag-%s.dist-info/" % ver
need = {"fp4diag/__init__.py", "fp4diag/_lib.py", "fp4diag/torch.py", "fp4diag/libfp4diag.so.0",
        dist + "WHEEL", dist + "METADATA", dist + "RECORD"}
assert need <= names, sorted(need - names)
wheel = z.read(dist + "WHEEL").decode()
assert "Tag: py3-none-linux_%s\n" % arch in wheel and "Root-Is-Purelib: false" in wheel, wheel
so = z.read("fp4diag/libfp4diag.so.0")
assert so[:4] == b"\x7fELF", "the bundled library is not an ELF file"
assert (z.getinfo("fp4diag/libfp4diag.so.0").external_attr >> 16) & 0o111, "library not executable"
for line in z.read(dist + "RECORD").decode().splitlines():  # every file's hash and size
    name, h, size = line.rsplit(",", 2)
    if name == dist + "RECORD":
        continue
    data = z.read(name)
    d = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert h == "sha256=" + d and int(size) == len(data), "RECORD is wrong for " + name
print("python_wheel: %s, %d files, RECORD checked" % (whl.rsplit("/", 1)[1], len(names)))
PY

# 2. the wheel in a fresh virtual environment, offline
python3 -m venv --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1 ||
    { cat "$tmp/venv.log"; echo "python3 -m venv failed"; exit 1; }
"$tmp/venv/bin/python" -m pip install --no-index "$tmp/dist/$want_whl" >"$tmp/pip.log" 2>&1 ||
    { tail -n 30 "$tmp/pip.log"; echo "pip install of the wheel failed"; exit 1; }
cd "$tmp" || exit 1
unset FP4DIAG_LIBRARY PYTHONPATH
check_import() {
    "$tmp/venv/bin/python" - "$tmp" "$1" <<'PY' || exit 1
import os, sys
import fp4diag
lib = fp4diag.library_path
assert lib.startswith(os.path.join(sys.argv[1], "venv")) and lib.endswith("fp4diag/libfp4diag.so.0"), lib
assert os.path.realpath(fp4diag.__file__).startswith(os.path.join(sys.argv[1], "venv")), fp4diag.__file__
print("python_wheel: %s: fp4diag %s from %s" % (sys.argv[2], fp4diag.version(), lib))
PY
}
check_import "the wheel"
# the issue's check, and the whole entry: a 256x256 standard normal array, against the CLI
"$tmp/venv/bin/python" -c "
import fp4diag, numpy
numpy.random.seed(5)
x = numpy.random.standard_normal((256, 256)).astype('float32')
numpy.save('x.npy', x)
print(repr(fp4diag.analyze(x, name='x')['results'][0]['sqnr_db']))
import json
json.dump(fp4diag.analyze(x, name='x', format='nvfp4,mxfp4', rht='both'), open('py.json', 'w'))
" >"$tmp/py.txt" || { echo "the one-liner failed"; exit 1; }
"$FP4DIAG" sqnr --json x.npy >"$tmp/cli.json" || { echo "fp4diag sqnr exited $?"; exit 1; }
"$FP4DIAG" sqnr --json --format nvfp4,mxfp4 --rht both x.npy x >"$tmp/cli2.json" ||
    { echo "fp4diag sqnr exited $?"; exit 1; }
python3 -c "
import json, sys
want = repr(json.load(open('$tmp/cli.json'))['tensors'][0]['results'][0]['sqnr_db'])
got = open('$tmp/py.txt').read().strip()
assert got == want, (got, want)
a, b = json.load(open('$tmp/py.json')), json.load(open('$tmp/cli2.json'))['tensors'][0]
assert a == b, 'analyze() differs from the CLI report entry'
print('python_wheel: SQNR', got, 'dB, the CLI\'s; the nvfp4,mxfp4 rht both entry equals the CLI\'s')
" || exit 1

# 3. pip install . (from the root) and pip install python/ over it
"$tmp/venv/bin/python" -m pip install --no-index --force-reinstall --no-deps "$root" \
    >"$tmp/pip1.log" 2>&1 || { tail -n 30 "$tmp/pip1.log"; echo "pip install . failed"; exit 1; }
check_import "pip install ."
"$tmp/venv/bin/python" -m pip install --no-index --force-reinstall --no-deps "$root/python" \
    >"$tmp/pip2.log" 2>&1 || { tail -n 30 "$tmp/pip2.log"; echo "pip install python/ failed"; exit 1; }
check_import "pip install python/"
cd "$root" && exit 0
