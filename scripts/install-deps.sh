#!/bin/sh
# install-deps.sh — install what fp4diag needs on Debian 12 (as root, or through sudo for a
# normal user): the C libraries from Debian's packages and the Python packages for the plots.
# valgrind, clang, libclang-rt-14-dev (libFuzzer) and libomp-dev serve `make check`s hostile-input
# passes (check-valgrind, fuzz-ci); gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user
# its aarch64 passes (check-aarch64: the CPU engine cross-built and run under qemu; make
# wheel-aarch64 and its test: the Python wheel cross-built against an arm64 sysroot that
# scripts/aarch64_sysroot.py unpacks from Debian's arm64 packages into build-aarch64/, with apt's
# own tools and a private apt state, installing nothing on this machine); libopenmpi-dev
# and openmpi-bin the mpirun mode (MPI=auto) and its test; python3-venv the test that installs the
# Python package (python/) in a fresh virtual environment.
# Installs only what is missing; safe to run again.
set -eu
cd "$(dirname "$0")/.."
PKGS="build-essential pkg-config libhdf5-dev hdf5-tools libcjson-dev libcmocka-dev \
libdeflate-dev zlib1g-dev libxxhash-dev librandom123-dev libopenblas-dev python3 python3-pip python3-venv valgrind clang libclang-rt-14-dev \
libomp-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libopenmpi-dev openmpi-bin"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    echo "install-deps: installing Debian packages:$missing" >&2
    $SUDO apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing >&2
fi
# Python packages for scripts/ (plots, benchmark, schema checks), pinned.
if ! python3 -c 'import numpy, h5py, matplotlib, jsonschema, safetensors, gguf' 2>/dev/null; then
    echo "install-deps: installing Python packages from scripts/requirements.txt" >&2
    python3 -m pip install -q -r scripts/requirements.txt >&2 ||
        python3 -m pip install -q --break-system-packages -r scripts/requirements.txt >&2 ||
        python3 -m pip install -q --user --break-system-packages -r scripts/requirements.txt >&2
fi
