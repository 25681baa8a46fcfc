"""In-tree PEP 517 build backend of the fp4diag Python package (standard library only).

build_wheel runs `make lib` in the repository that holds this directory ($FP4DIAG_SOURCE
overrides it) and writes a wheel of the package fp4diag/ with the shared library bundled as
fp4diag/libfp4diag.so.0. The make takes its variables from the environment as usual: CUDA=0|1|auto
(default auto: the CUDA kernels when nvcc is found), BUILD=DIR (default build), DEVELOPER=1 ...;
a make that runs pip passes its own through MAKEFLAGS. The wheel is tagged
py3-none-linux_<arch> (ctypes: one wheel for every Python 3.9+ of a platform), <arch> read from
the ELF header of the library it bundles (x86_64, aarch64), not from the interpreter running
the build, so a cross-built library (CC=aarch64-linux-gnu-gcc with an aarch64 sysroot's
pkg-config: `make wheel-aarch64`) is tagged for the machine it runs on. A linux_ tag, not
manylinux: the library
links the system's HDF5, cJSON, OpenBLAS, libdeflate, zlib, xxhash and libgomp as the program
does (scripts/install-deps.sh installs them), which no manylinux policy lists, and nothing
vendors them into the wheel.
"""
import base64
import hashlib
import io
import os
import re
import shlex
import subprocess
import zipfile

NAME = "fp4diag"
HERE = os.path.dirname(os.path.abspath(__file__))


def _root():
    return os.environ.get("FP4DIAG_SOURCE") or os.path.dirname(HERE)


def _version(root):
    with open(os.path.join(root, "src", "base", "version.h")) as f:
        m = re.search(r'#define FP4DIAG_VERSION "([^"]+)"', f.read())
    if not m:
        raise RuntimeError("fp4diag: no FP4DIAG_VERSION in src/base/version.h")
    return m.group(1)


def _metadata(version):
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: FP4 quantization diagnostics over the fp4diag C library\n"
            "Requires-Python: >=3.9\nRequires-Dist: numpy\n" % (NAME, version))


# ELF e_machine -> the architecture of a wheel's platform tag (PEP 425: linux_<uname -m>)
_ELF_MACHINES = {62: "x86_64", 183: "aarch64"}


def _elf_arch(head):
    """The platform architecture of a shared library from its first 20 bytes: a 64-bit
    little-endian Linux (System V or GNU ABI) ELF file of x86-64 or AArch64; RuntimeError
    otherwise."""
    if len(head) < 20 or head[:4] != b"\x7fELF":
        raise RuntimeError("fp4diag: the library is not an ELF file")
    if head[4] != 2 or head[5] != 1 or head[7] not in (0, 3):
        raise RuntimeError("fp4diag: the library is not a 64-bit little-endian Linux ELF file")
    machine = int.from_bytes(head[18:20], "little")
    if machine not in _ELF_MACHINES:
        raise RuntimeError("fp4diag: the library is for ELF machine %d (wheels are made for "
                           "x86-64 and AArch64)" % machine)
    return _ELF_MACHINES[machine]


def _tag(so_bytes):
    return "py3-none-linux_" + _elf_arch(so_bytes[:20])


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version(_root())
    d = "%s-%s.dist-info" % (NAME, version)
    os.makedirs(os.path.join(metadata_directory, d), exist_ok=True)
    with open(os.path.join(metadata_directory, d, "METADATA"), "w") as f:
        f.write(_metadata(version))
    return d


def _cross(env):
    """(target, host) machine names when env's CC compiles for another machine than this one
    (`CC -dumpmachine`: aarch64-linux-gnu on an x86_64 host), else None (no CC, the host's
    own, or a CC that does not answer: make reports that)."""
    cc = env.get("CC")
    if not cc:
        return None
    try:
        out = subprocess.run(shlex.split(cc) + ["-dumpmachine"], capture_output=True,
                             text=True, check=True).stdout.strip()
    except (OSError, ValueError, subprocess.CalledProcessError):
        return None
    target, host = out.split("-")[0], os.uname().machine
    return (target, host) if out and target != host else None


def _refuse_cross(env):
    """A cross build (CC for another machine) is refused, before make runs, unless it is set
    up as one: pkg-config pointed at the target's libraries (PKG_CONFIG_LIBDIR and
    PKG_CONFIG_SYSROOT_DIR: a sysroot holding the target's HDF5, cJSON, OpenBLAS, libdeflate,
    zlib and xxhash with their headers), CUDA=0 (the kernels are built for the host) and a
    BUILD directory of its own. RuntimeError naming what is missing and the ways that work:
    `make wheel-aarch64` (which sets all of that up from Debian's arm64 packages), or pip wheel
    on a machine of the target's architecture."""
    c = _cross(env)
    if not c:
        return
    target, host = c
    missing = []
    if not env.get("PKG_CONFIG_LIBDIR") or not env.get("PKG_CONFIG_SYSROOT_DIR"):
        missing.append("PKG_CONFIG_LIBDIR and PKG_CONFIG_SYSROOT_DIR for a %s sysroot of HDF5, "
                       "cJSON, OpenBLAS, libdeflate, zlib and xxhash" % target)
    if env.get("CUDA", "auto") != "0":
        missing.append("CUDA=0")
    if env.get("BUILD", "build") == "build":
        missing.append("BUILD=DIR (not the host's build/)")
    if missing:
        make = ("`make wheel-aarch64` (which sets that up from Debian's arm64 packages), "
                "or " if target == "aarch64" else "")
        raise RuntimeError(
            "fp4diag: CC=%s builds for %s on this %s machine: a cross-built wheel needs %s. "
            "Build the %s wheel with %son a %s machine: scripts/install-deps.sh, then pip "
            "wheel . (python/README.md, Packaging)"
            % (env["CC"], target, host, "; ".join(missing), target, make, target))


def _make_lib(root):
    _refuse_cross(os.environ)
    build = os.environ.get("BUILD", "build")
    cmd = ["make", "-C", root, "--no-print-directory", "lib"]
    if "-j" not in os.environ.get("MAKEFLAGS", ""):
        cmd.append("-j%d" % (os.cpu_count() or 1))
    print("fp4diag build_backend: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=2)
    so = os.path.join(root, build, "libfp4diag.so.0")
    if not os.path.exists(so):
        raise RuntimeError("fp4diag: make lib made no %s" % so)
    return os.path.realpath(so)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    root = _root()
    version = _version(root)
    so = _make_lib(root)
    files = []  # (archive name, bytes, mode)
    pkg = os.path.join(HERE, NAME)
    for fn in sorted(os.listdir(pkg)):
        if fn.endswith(".py"):
            with open(os.path.join(pkg, fn), "rb") as f:
                files.append(("%s/%s" % (NAME, fn), f.read(), 0o644))
    with open(so, "rb") as f:
        files.append(("%s/libfp4diag.so.0" % NAME, f.read(), 0o755))
    tag = _tag(files[-1][1])
    dist = "%s-%s.dist-info" % (NAME, version)
    files.append((dist + "/METADATA", _metadata(version).encode(), 0o644))
    files.append((dist + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: fp4diag build_backend\n"
                                    "Root-Is-Purelib: false\nTag: %s\n" % tag).encode(), 0o644))
    record = io.StringIO()
    for name, data, _ in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write("%s,sha256=%s,%d\n" % (name, digest, len(data)))
    record.write("%s/RECORD,,\n" % dist)
    files.append((dist + "/RECORD", record.getvalue().encode(), 0o644))
    wheel = "%s-%s-%s.whl" % (NAME, version, tag)
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in files:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel
