#!/bin/sh
# python_wheel_aarch64.sh — the aarch64 wheel, built on this x86-64 machine and run under
# qemu-user: `make wheel-aarch64` (an arm64 sysroot of Debian's own packages, made by
# scripts/aarch64_sysroot.py into build-aarch64/sysroot, and the cross compiler) makes
# fp4diag-VERSION-py3-none-linux_aarch64.whl, whose library is an AArch64 ELF file; Debian's
# arm64 python3 from that sysroot, under qemu-aarch64, makes a FRESH virtual environment,
# installs the wheel into it with its own pip, offline (the tag is checked by an aarch64 pip),
# imports fp4diag from outside the tree with the bundled library, and the issue's one-liner
# prints the SQNR this (x86-64) CLI reports for the same values; the nvfp4,mxfp4 RHT-both
# entry equals the CLI's, as a dict. Then python/tests/test_fp4diag.py runs there against this
# CLI (QEMU_WHEEL_TESTS=0 leaves it out). Skipped (77) without the cross compiler, qemu-aarch64,
# apt-get/dpkg-deb or the arm64 packages (no network the first time), or in the sanitizer build.
set -u
case "${BUILD:-build}" in *-san) echo "the sanitizer build makes no shared library"; exit 77 ;; esac
CROSS_CC=${CROSS_CC:-aarch64-linux-gnu-gcc}
for t in "$CROSS_CC" qemu-aarch64 python3; do
    command -v "$t" >/dev/null ||
        { echo "$t not found (scripts/install-deps.sh installs it)"; exit 77; }
done
root=$PWD
S=$root/build-aarch64/sysroot
python3 scripts/aarch64_sysroot.py build-aarch64
rc=$?
[ "$rc" -eq 77 ] && { echo "no arm64 sysroot (above: why)"; exit 77; }
[ "$rc" -eq 0 ] || { echo "scripts/aarch64_sysroot.py exited $rc"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_NO_INDEX=1
ver=$(sed -n 's/^#define FP4DIAG_VERSION "\(.*\)"/\1/p' src/base/version.h)
want_whl="fp4diag-$ver-py3-none-linux_aarch64.whl"
t0=$(date +%s)

# 1. make wheel-aarch64: one wheel, tagged linux_aarch64, holding an AArch64 library
# (CUDA=0 MPI=0 BUILD=...: this make leaves build/.build-kind as it is)
${MAKE:-make} --no-print-directory CUDA=0 MPI=0 BUILD=build-aarch64/lib WHEEL_DIR="$tmp/dist" \
    wheel-aarch64 >"$tmp/wheel.log" 2>&1 ||
    { tail -n 30 "$tmp/wheel.log"; echo "make wheel-aarch64 failed"; exit 1; }
got_whl=$(cd "$tmp/dist" && ls)
[ "$got_whl" = "$want_whl" ] ||
    { echo "make wheel-aarch64 made '$got_whl', not $want_whl"; exit 1; }
python3 - "$tmp/dist/$want_whl" <<'PY' || exit 1
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
so = z.read("fp4diag/libfp4diag.so.0")
assert so[:4] == b"\x7fELF" and int.from_bytes(so[18:20], "little") == 183, \
    "the bundled library is not an AArch64 ELF file"
print("python_wheel_aarch64: %s, %d bytes, library %d bytes (AArch64)"
      % (sys.argv[1].rsplit("/", 1)[1], len(open(sys.argv[1], "rb").read()), len(so)))
PY
t1=$(date +%s)

# 2. a fresh arm64 virtual environment (numpy from the sysroot's system site packages); the
# wheel installed by the aarch64 pip, offline
Q="qemu-aarch64 -L $S"
$Q "$S/usr/bin/python3" -m venv --system-site-packages --without-pip "$tmp/venv" \
    >"$tmp/venv.log" 2>&1 || { cat "$tmp/venv.log"; echo "arm64 python3 -m venv failed"; exit 1; }
$Q "$tmp/venv/bin/python" -m pip install --no-deps "$tmp/dist/$want_whl" >"$tmp/pip.log" 2>&1 ||
    { tail -n 30 "$tmp/pip.log"; echo "the aarch64 pip did not install the wheel"; exit 1; }
t2=$(date +%s)

# 3. the issue's one-liner from outside the tree, and the whole entry, against this CLI
cd "$tmp" || exit 1
unset FP4DIAG_LIBRARY PYTHONPATH
$Q "$tmp/venv/bin/python" - "$tmp" >"$tmp/py.txt" <<'PY'
import json, os, platform, sys
import fp4diag, numpy
lib = fp4diag.library_path
venv = os.path.join(sys.argv[1], "venv")
assert platform.machine() == "aarch64", platform.machine()
assert lib.startswith(venv) and lib.endswith("fp4diag/libfp4diag.so.0"), lib
numpy.random.seed(5)
x = numpy.random.standard_normal((256, 256)).astype('float32')
numpy.save('x.npy', x)
print(repr(fp4diag.analyze(x, name='x')['results'][0]['sqnr_db']))
json.dump(fp4diag.analyze(x, name='x', format='nvfp4,mxfp4', rht='both'), open('py.json', 'w'))
PY
[ $? -eq 0 ] || { echo "the one-liner failed under qemu"; exit 1; }
"$FP4DIAG" sqnr --json x.npy >"$tmp/cli.json" || { echo "fp4diag sqnr exited $?"; exit 1; }
"$FP4DIAG" sqnr --json --format nvfp4,mxfp4 --rht both x.npy x >"$tmp/cli2.json" ||
    { echo "fp4diag sqnr exited $?"; exit 1; }
python3 -c "
import json
want = repr(json.load(open('$tmp/cli.json'))['tensors'][0]['results'][0]['sqnr_db'])
got = open('$tmp/py.txt').read().strip()
assert got == want, (got, want)
a, b = json.load(open('$tmp/py.json')), json.load(open('$tmp/cli2.json'))['tensors'][0]
assert a == b, 'analyze() on aarch64 differs from the x86 CLI report entry'
print('python_wheel_aarch64: SQNR', got, 'dB under qemu-aarch64, the x86 CLI\'s;',
      'the nvfp4,mxfp4 rht both entry equals the CLI\'s')
" || exit 1
t3=$(date +%s)

# 4. the package's tests (python/tests, from the repository root for its testdata/) under
# qemu, with the wheel's library, against this CLI
if [ "${QEMU_WHEEL_TESTS:-1}" != 0 ]; then
    cd "$root" || exit 1
    FP4DIAG="$FP4DIAG" $Q "$tmp/venv/bin/python" -c '
import sys, unittest
import fp4diag
assert fp4diag.library_path.startswith(sys.argv[1]), fp4diag.library_path
unittest.main(module=None, argv=["python_wheel_aarch64", "discover", "-s", "python/tests"])
' "$tmp/venv" >"$tmp/unittest.log" 2>&1 ||
        { tail -n 40 "$tmp/unittest.log"; echo "python/tests failed under qemu-aarch64"; exit 1; }
    echo "python_wheel_aarch64: python/tests under qemu-aarch64:" \
        "$(grep '^Ran ' "$tmp/unittest.log"), $(tail -n 1 "$tmp/unittest.log")"
fi
t4=$(date +%s)
echo "python_wheel_aarch64: seconds: wheel $((t1 - t0)), venv+install $((t2 - t1))," \
    "one-liner $((t3 - t2)), tests $((t4 - t3))"
cd "$root" && exit 0
