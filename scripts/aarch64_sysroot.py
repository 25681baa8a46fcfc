#!/usr/bin/env python3
"""aarch64_sysroot.py — an arm64 sysroot made of Debian's own arm64 packages, for the aarch64
wheel (make wheel-aarch64) and its test under qemu-user (make check-wheel-aarch64).

    python3 scripts/aarch64_sysroot.py DIR

DIR/apt holds a private apt state (arm64 package lists of this machine's Debian sources,
/etc/apt/sources.list{,.d}), DIR/debs the downloaded packages, DIR/sysroot what they unpack to:
the -dev packages the library is built from (HDF5, cJSON, OpenBLAS, libdeflate, zlib, xxhash,
Random123) and
python3 with python3-numpy to test the wheel, with everything they depend on (about 100
packages, 47 MB to download, 240 MB unpacked). Nothing outside DIR is written: no dpkg
--add-architecture, no package is installed on this machine, no maintainer script runs. What
those scripts would do that a build needs is done here: the update-alternatives links
(libopenblas.so.0, openblas.pc, cblas.h ... of OpenBLAS) are made as plain symlinks, and
absolute symlinks are made relative, so that they point inside the sysroot.

Use it with the cross compiler (gcc-aarch64-linux-gnu) as CC="aarch64-linux-gnu-gcc
--sysroot=DIR/sysroot" and PKG_CONFIG_SYSROOT_DIR=DIR/sysroot
PKG_CONFIG_LIBDIR=DIR/sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:DIR/sysroot/usr/share/pkgconfig,
and run its programs as qemu-aarch64 -L DIR/sysroot PROGRAM.

DIR/sysroot/.complete is written last (the package list): a sysroot without it is incomplete and
made again. Exit 0: done (or already there); 77: a tool it needs (apt-get, dpkg-deb) is missing
or the packages could not be had (no network, no arm64 packages in the sources), with one line
saying why; 1: anything else.
"""
import os
import shutil
import subprocess
import sys
import tempfile

PACKAGES = ["libhdf5-dev", "libcjson-dev", "libopenblas-dev", "libdeflate-dev", "zlib1g-dev",
            "libxxhash-dev", "librandom123-dev", "libgomp1", "python3", "python3-numpy",
            "python3-pip"]


def skip(msg):
    print("aarch64_sysroot: " + msg, file=sys.stderr)
    sys.exit(77)


def run(cmd, env, log):
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        return subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT).returncode


def alternatives(script):
    """(link, path) of every update-alternatives --install and --slave in a maintainer script."""
    text = script.replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        words = line.split()
        if "update-alternatives" not in words or "--install" not in words:
            continue
        i = words.index("--install")
        if i + 3 < len(words):
            out.append((words[i + 1], words[i + 3]))
        for j, w in enumerate(words):
            if w == "--slave" and j + 3 < len(words):
                out.append((words[j + 1], words[j + 3]))
    return out


def link_inside(root, link, target):
    """Make root+link a symlink to root+target, written relative (so it resolves inside root)."""
    path = os.path.join(root, link.lstrip("/"))
    dest = os.path.join(root, target.lstrip("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.remove(path)
    os.symlink(os.path.relpath(dest, os.path.dirname(path)), path)


def main():
    if len(sys.argv) != 2:
        print("usage: aarch64_sysroot.py DIR", file=sys.stderr)
        return 2
    top = os.path.abspath(sys.argv[1])
    root = os.path.join(top, "sysroot")
    stamp = os.path.join(root, ".complete")
    want = "\n".join(PACKAGES) + "\n"
    if os.path.exists(stamp) and open(stamp).read().startswith(want):
        return 0
    for tool in ("apt-get", "dpkg-deb"):
        if not shutil.which(tool):
            skip("%s not found (a Debian or Ubuntu machine is needed)" % tool)
    apt = os.path.join(top, "apt")
    debs = os.path.join(top, "debs")
    for d in (os.path.join(apt, "lists", "partial"), os.path.join(apt, "preferences.d"),
              os.path.join(debs, "partial")):
        os.makedirs(d, exist_ok=True)
    open(os.path.join(apt, "status"), "w").close()  # nothing installed: the whole closure
    conf = os.path.join(apt, "apt.conf")
    with open(conf, "w") as f:
        f.write('APT::Architecture "arm64";\nAPT::Architectures { "arm64"; };\n'
                'APT::Install-Recommends "false";\nDir::State "%s";\n'
                'Dir::State::Lists "%s/lists";\nDir::State::status "%s/status";\n'
                'Dir::Cache "%s";\nDir::Cache::archives "%s";\n'
                'Dir::Etc::Preferences "/dev/null";\n'
                'Dir::Etc::PreferencesParts "%s/preferences.d";\n'
                'Debug::NoLocking "true";\n'
                % (apt, apt, apt, apt, debs, apt))
    env = dict(os.environ, APT_CONFIG=conf, DEBIAN_FRONTEND="noninteractive", LC_ALL="C")
    log = os.path.join(top, "sysroot.log")
    print("aarch64_sysroot: arm64 packages of %s and their dependencies into %s (log: %s)"
          % (" ".join(PACKAGES), root, log), file=sys.stderr, flush=True)
    if run(["apt-get", "-q", "update"], env, log) != 0:
        skip("apt-get update for arm64 failed (no network?); see " + log)
    if run(["apt-get", "-q", "-y", "install", "--download-only"] + PACKAGES, env, log) != 0:
        skip("apt-get could not download the arm64 packages; see " + log)
    files = sorted(f for f in os.listdir(debs) if f.endswith(".deb"))
    if not files:
        skip("apt-get downloaded no arm64 package; see " + log)
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    alts = []
    with tempfile.TemporaryDirectory() as tmp:
        for fn in files:
            deb = os.path.join(debs, fn)
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
            ctl = os.path.join(tmp, fn)
            subprocess.run(["dpkg-deb", "-e", deb, ctl], check=True)
            post = os.path.join(ctl, "postinst")
            if os.path.exists(post):
                alts += alternatives(open(post, errors="replace").read())
    for link, target in alts:
        if os.path.lexists(os.path.join(root, target.lstrip("/"))):
            link_inside(root, link, target)
    # absolute symlinks (libz.so -> /lib/aarch64-linux-gnu/libz.so.1 ...) point inside the root
    for d, dirs, names in os.walk(root):
        for n in dirs + names:
            p = os.path.join(d, n)
            if os.path.islink(p):
                t = os.readlink(p)
                if t.startswith("/"):
                    rel = os.path.relpath(p, root)
                    link_inside(root, "/" + rel, t)
    # python3 -> python3.11 and the like are relative already; the interpreter must be there
    if not os.path.exists(os.path.join(root, "usr", "bin", "python3")):
        print("aarch64_sysroot: no usr/bin/python3 in the sysroot", file=sys.stderr)
        return 1
    with open(stamp, "w") as f:
        f.write(want + "".join(x + "\n" for x in files))
    print("aarch64_sysroot: %d packages unpacked, %d alternatives linked"
          % (len(files), len(alts)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
