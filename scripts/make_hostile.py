#!/usr/bin/env python3
"""make_hostile.py — small HDF5 files with awkward contents, for the hostile-input CLI cases
(src/tests/cli/hostile_*.sh) and the fuzz seeds (src/tests/fuzz/seeds/h5load/).

usage: python3 scripts/make_hostile.py OUTDIR [NAME...]      (default: every fixture)

Fixtures (each a few KiB, libver='earliest' so the C library we link reads them):
  values.h5    /nan /inf /denormal /zeros /mixed (f32, 4x32): NaN, +-Inf, subnormals, all-zero
  shapes.h5    /empty (0x16) /scalar (f64) /one (1) /huge (2^40 x 2^30, chunked, nothing
               stored: the size overflows 64 bits) /wide (2^31 x 2^31 f16: 2^62 elements fit,
               2^63 bytes do not)
  mixed.h5     /a/good (f32 8x16), /a/name (string), /a/blosc (f32 behind an unavailable
               optional filter 32001), /b/good (bf16 4x16), /c/compound (compound class)
  small.h5     /blocks/0/w (bf16 16x32, deflate), /blocks/0/b (f16 32), /x (i32 be 4x4),
               attribute scale on /x
  gemm.h5      layers for `gemm`: /good (x 32x64, w 48x64, dy 32x48 f32); /huge (int8, each
               operand 2^31 x 2^31 = 2^62 values, declared, nothing stored: its fp32 copy
               overflows 64 bits); /big16 (f32, each operand 2^16 x 2^16: 16 GiB, nothing
               stored); /big (f32, 2^20 x 2^20 each: 4 TiB); /bad (x 32x64 but w 48x60)
  names.h5     f32 4x16 datasets named with invalid UTF-8 (b"/bad\xff\xfename"), a newline,
               a terminal escape (ESC [31m), a C1 control (U+009B) and valid UTF-8 ("/ünïcode");
               b"/str\xff\nx" is a string dataset (an errors entry with such a name)
  links        a folder (and OUTDIR/outside.h5, OUTDIR/outside.bin beside it) of files that
               point at other files; each f32 4x16 dataset holds linspace(-1, 1, 64):
               vds_self.h5 /v (a VDS whose source is itself), vds_a.h5 and vds_b.h5 /v (each
               the other's source), vds_missing.h5 /v (source gone.h5 absent), vds_fifo.h5 /v
               (source fifo_src.h5, a FIFO), vds_dev.h5 /v (source /dev/zero), vds_out.h5 /v
               (source ../outside.h5), vds_good.h5 /v (source src.h5 /d beside it);
               elink.h5: /good -> target.h5:/d, /fifo -> fifo_target.h5 (a FIFO),
               /outside -> ../outside.h5, /dev -> /dev/zero, /self -> elink.h5:/good;
               ext.h5 (external raw storage): /good (ext_good.bin), /short (ext_short.bin of
               100 bytes for 256), /zero (2^36 values on /dev/zero), /urandom (/dev/urandom),
               /fifo (ext_fifo.bin, a FIFO), /outside (../outside.bin), /abs (the absolute
               path of ext_good.bin: inside the tree, allowed);
               never.h5: /never (fill time never, never written), /null (NULL dataspace),
               /r32 (rank 32), /good;
               long.h5: /good, a dataset at a path of 4,500 characters (/l/AAA.../d) and one
               at 1,100 characters (/g/BBB.../d, for globs);
               badtype.h5: /good (f64), /bad (f32 whose datatype message names class 11,
               which no HDF5 1.10 knows: it cannot be opened)
  trunc.h5     300 contiguous f32 datasets /tNNN of 64x256 (20 MB), to be cut while read
  trunc_chunked.h5  the same values in chunks of 16x256 (shuffle+deflate: read from the
               stored chunks by fp4diag's own reader), to be cut while read
  many.h5      10,000 tiny datasets /dNNNNN (f32, 32 values each): the per-tensor cost
  sparse.h5    never-written storage (fill value 0): /big (f32 2^26 x 2^14 = 4 TiB, chunks
               of 16 x 16384 = 1 MiB, only the first stored, holding /small's values);
               /small (16 x 16384); /mid (512 x 2048, chunks 64 x 256, 3 of 64 stored) and
               /mid_full (the same values, every chunk written); /late (256 x 1024
               contiguous, never written: late allocation) and /late_full (its zeros
               written); /fill (as /mid with fill value 1.5) and /fill_full
"""
import os
import sys

import h5py
import numpy as np

from fp4dump import bf16_type  # the HDF5 custom float bf16 of the project's checkpoints


def put(parent, name, arr, ftype, chunks=None, gzip=None):
    """Dataset NAME with on-disk type FTYPE (an h5t id) holding arr (converted by HDF5)."""
    space = h5py.h5s.create_simple(arr.shape) if arr.shape else h5py.h5s.create(h5py.h5s.SCALAR)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    if chunks:
        dcpl.set_chunk(chunks)
        if gzip is not None:
            dcpl.set_deflate(gzip)
    d = h5py.h5d.create(parent.id, name.encode(), ftype, space, dcpl=dcpl)
    if arr.size:
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(arr, dtype=np.float32))
    return d


def values(path):
    with h5py.File(path, "w", libver="earliest") as f:
        n = np.full((4, 32), np.nan, np.float32)
        f.create_dataset("nan", data=n)
        inf = np.linspace(-1, 1, 128, dtype=np.float32).reshape(4, 32)
        inf[0, 3] = np.inf
        inf[2, 17] = -np.inf
        f.create_dataset("inf", data=inf)
        den = (np.arange(128, dtype=np.float32).reshape(4, 32) - 64) * np.float32(1e-44)
        f.create_dataset("denormal", data=den)
        f.create_dataset("zeros", data=np.zeros((4, 32), np.float32))
        mixed = np.linspace(-3, 3, 128, dtype=np.float32).reshape(4, 32)
        mixed[1, 5] = np.nan
        mixed[3, 0] = np.inf
        mixed[3, 1:16] = 0
        f.create_dataset("mixed", data=mixed)


def shapes(path):
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("empty", shape=(0, 16), dtype=np.float32)
        f.create_dataset("scalar", data=np.float64(2.5))
        f.create_dataset("one", data=np.array([1.5], np.float32))
        # Declared but never written: chunked, so nothing is stored.
        sp = h5py.h5s.create_simple((2**40, 2**30), (h5py.h5s.UNLIMITED, h5py.h5s.UNLIMITED))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((1, 16))
        h5py.h5d.create(f.id, b"huge", h5py.h5t.IEEE_F32LE, sp, dcpl=dcpl)
        sp = h5py.h5s.create_simple((2**31, 2**31), (h5py.h5s.UNLIMITED,) * 2)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((1, 16))
        h5py.h5d.create(f.id, b"wide", h5py.h5t.IEEE_F16LE, sp, dcpl=dcpl)


def mixed(path):
    with h5py.File(path, "w", libver="earliest") as f:
        a = f.create_group("a")
        a.create_dataset("good", data=np.linspace(-2, 2, 128, dtype=np.float32).reshape(8, 16))
        a.create_dataset("name", data=np.array([b"not", b"a", b"tensor"]))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4, 16))
        dcpl.set_filter(32001, h5py.h5z.FLAG_OPTIONAL, ())
        d = h5py.h5d.create(a.id, b"blosc", h5py.h5t.IEEE_F32LE,
                            h5py.h5s.create_simple((8, 16)), dcpl=dcpl)
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ones((8, 16), np.float32))
        b = f.create_group("b")
        put(b, "good", np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16), bf16_type())
        c = f.create_group("c")
        c.create_dataset("compound", data=np.zeros(4, dtype=[("x", "<f4"), ("y", "<i4")]))


def small(path):
    with h5py.File(path, "w", libver="earliest") as f:
        g = f.create_group("blocks/0")
        w = np.sin(np.arange(512, dtype=np.float32)).reshape(16, 32)
        put(g, "w", w, bf16_type(), chunks=(8, 32), gzip=4)
        put(g, "b", np.cos(np.arange(32, dtype=np.float32)), h5py.h5t.IEEE_F16LE)
        x = f.create_dataset("x", data=np.arange(16, dtype=">i4").reshape(4, 4))
        x.attrs["scale"] = np.float64(0.5)


def declared(parent, name, shape, ftype):
    """A chunked dataset of `shape` with nothing stored (reads give the fill value)."""
    sp = h5py.h5s.create_simple(shape, (h5py.h5s.UNLIMITED,) * len(shape))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((1, 64))
    h5py.h5d.create(parent.id, name.encode(), ftype, sp, dcpl=dcpl)


def gemm(path):
    r = np.random.default_rng(5)
    with h5py.File(path, "w", libver="earliest") as f:
        for g, (m, n, k, k2) in {"good": (32, 48, 64, 64), "bad": (32, 48, 64, 60)}.items():
            grp = f.create_group(g)
            grp.create_dataset("x", data=r.standard_normal((m, k)).astype(np.float32))
            grp.create_dataset("w", data=r.standard_normal((n, k2)).astype(np.float32))
            grp.create_dataset("dy", data=r.standard_normal((m, n)).astype(np.float32))
        for g, side, t in (("huge", 2**31, h5py.h5t.STD_I8LE), ("big16", 2**16, h5py.h5t.IEEE_F32LE),
                           ("big", 2**20, h5py.h5t.IEEE_F32LE)):
            grp = f.create_group(g)
            for d in ("x", "w", "dy"):
                declared(grp, d, (side, side), t)


NAMES = [b"bad\xff\xfename", b"nl\nname", b"esc\x1b[31mred", b"c1\xc2\x9bx",
         "\u00fcn\u00efcode".encode()]


def names(path):
    with h5py.File(path, "w", libver="earliest") as f:
        a = np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16)
        for nm in NAMES:
            d = h5py.h5d.create(f.id, nm, h5py.h5t.IEEE_F32LE, h5py.h5s.create_simple(a.shape))
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, a)
        t = h5py.h5t.C_S1.copy()
        t.set_size(4)
        h5py.h5d.create(f.id, b"str\xff\nx", t, h5py.h5s.create_simple((2,)))


def links(path):
    import os
    os.makedirs(path, exist_ok=True)
    out = os.path.dirname(os.path.abspath(path))
    a = np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16)
    j = lambda n: os.path.join(path, n)

    def plain(name, dset="d"):
        with h5py.File(name, "w", libver="earliest") as f:
            f.create_dataset(dset, data=a)

    def vds(name, src, dset="v", here=None):
        lay = h5py.VirtualLayout(shape=a.shape, dtype="f4")
        lay[:] = h5py.VirtualSource(src, dset if here is None else here, shape=a.shape)
        with h5py.File(name, "w") as f:
            f.create_virtual_dataset(dset, lay, fillvalue=0)

    plain(os.path.join(out, "outside.h5"))
    plain(j("src.h5"))
    plain(j("target.h5"))
    open(os.path.join(out, "outside.bin"), "wb").write(a.tobytes())
    for fifo in ("fifo_src.h5", "fifo_target.h5", "ext_fifo.bin"):
        if not os.path.exists(j(fifo)):
            os.mkfifo(j(fifo))
    vds(j("vds_self.h5"), ".")
    vds(j("vds_a.h5"), "vds_b.h5")
    vds(j("vds_b.h5"), "vds_a.h5")
    vds(j("vds_missing.h5"), "gone.h5", here="d")
    vds(j("vds_fifo.h5"), "fifo_src.h5", here="d")
    vds(j("vds_dev.h5"), "/dev/zero", here="d")
    vds(j("vds_out.h5"), "../outside.h5", here="d")
    vds(j("vds_good.h5"), "src.h5", here="d")
    with h5py.File(j("elink.h5"), "w", libver="earliest") as f:
        f.create_dataset("good", data=a)
        f["ok"] = h5py.ExternalLink("target.h5", "/d")
        f["fifo"] = h5py.ExternalLink("fifo_target.h5", "/d")
        f["outside"] = h5py.ExternalLink("../outside.h5", "/d")
        f["dev"] = h5py.ExternalLink("/dev/zero", "/d")
    open(j("ext_good.bin"), "wb").write(a.tobytes())
    open(j("ext_short.bin"), "wb").write(a.tobytes()[:100])
    with h5py.File(j("ext.h5"), "w") as f:
        for name, ext in (("good", "ext_good.bin"), ("short", "ext_short.bin"),
                          ("urandom", "/dev/urandom"), ("fifo", "ext_fifo.bin"),
                          ("outside", "../outside.bin"), ("abs", j("ext_good.bin"))):
            f.create_dataset(name, shape=a.shape, dtype="f4", external=[(ext, 0, a.nbytes)])
        f.create_dataset("zero", shape=(2**20, 2**16), dtype="f4",
                         external=[("/dev/zero", 0, 2**38)])
    with h5py.File(j("never.h5"), "w", libver="earliest") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
        h5py.h5d.create(f.id, b"never", h5py.h5t.IEEE_F32LE, h5py.h5s.create_simple(a.shape),
                        dcpl=dcpl)
        f.create_dataset("null", data=h5py.Empty("f4"))
        f.create_dataset("r32", data=np.ones((1,) * 31 + (2,), np.float32))
        f.create_dataset("good", data=a)
    with h5py.File(j("long.h5"), "w", libver="earliest") as f:
        f.create_dataset("good", data=a)
        g = f.create_group("l")
        for i in range(18):
            g = g.create_group("%02d" % i + "A" * 248)
        g.create_dataset("d", data=a)
        g = f.create_group("g")
        for i in range(4):
            g = g.create_group("%02d" % i + "B" * 270)
        g.create_dataset("d", data=a)
    with h5py.File(j("badtype.h5"), "w", libver="earliest") as f:
        f.create_dataset("good", data=a.astype(np.float64))
        f.create_dataset("bad", data=a)
    b = bytearray(open(j("badtype.h5"), "rb").read())
    at = b.find(b"\x11\x20\x1f\x00\x04\x00\x00\x00")  # version 1, class 1 (float), f32 LE
    assert at > 0, "badtype.h5: datatype message not found"
    b[at] = 0x1B
    open(j("badtype.h5"), "wb").write(b)


def trunc(path):
    r = np.random.default_rng(7)
    with h5py.File(path, "w", libver="earliest") as f:
        for i in range(300):
            f.create_dataset("t%03d" % i, data=r.standard_normal((64, 256)).astype(np.float32))


def trunc_chunked(path):
    r = np.random.default_rng(7)
    with h5py.File(path, "w", libver="earliest") as f:
        for i in range(300):
            f.create_dataset("t%03d" % i, data=r.standard_normal((64, 256)).astype(np.float32),
                             chunks=(16, 256), shuffle=True, compression="gzip",
                             compression_opts=1)


def sparse(path):
    r = np.random.default_rng(11)
    small = r.standard_normal((16, 16384)).astype(np.float32)
    mid = np.zeros((512, 2048), np.float32)
    with h5py.File(path, "w", libver="earliest") as f:
        big = f.create_dataset("big", shape=(2**26, 2**14), dtype="f4", chunks=(16, 16384),
                               compression="gzip", compression_opts=1)
        big[0:16] = small
        f.create_dataset("small", data=small)
        for name, fill in (("mid", None), ("fill", 1.5)):
            m = f.create_dataset(name, shape=mid.shape, dtype="f4", chunks=(64, 256),
                                 compression="gzip", fillvalue=fill)
            full = np.full(mid.shape, fill or 0.0, np.float32)
            for br, bc in ((0, 1), (3, 5), (3, 1)):
                v = (r.standard_t(4, size=(64, 256)) * 0.02).astype(np.float32)
                m[br * 64:(br + 1) * 64, bc * 256:(bc + 1) * 256] = v
                full[br * 64:(br + 1) * 64, bc * 256:(bc + 1) * 256] = v
            f.create_dataset(name + "_full", data=full, chunks=(64, 256), compression="gzip")
        f.create_dataset("late", shape=(256, 1024), dtype="f4")
        f.create_dataset("late_full", data=np.zeros((256, 1024), np.float32))


def many(path):
    with h5py.File(path, "w", libver="earliest") as f:
        a = np.linspace(-1, 1, 32, dtype=np.float32)
        for i in range(10000):
            f.create_dataset("d%05d" % i, data=a * np.float32(i % 97 + 1))


FIXTURES = {"values.h5": values, "shapes.h5": shapes, "mixed.h5": mixed, "small.h5": small,
            "many.h5": many, "gemm.h5": gemm, "names.h5": names, "links": links,
            "trunc.h5": trunc, "trunc_chunked.h5": trunc_chunked, "sparse.h5": sparse}
# Made only when named (slow to write, or only one case needs them).
ON_REQUEST = {"many.h5", "links", "trunc.h5", "trunc_chunked.h5", "sparse.h5"}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[2])
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or sorted(set(FIXTURES) - ON_REQUEST):
        FIXTURES[name](os.path.join(out, name))


if __name__ == "__main__":
    main()
