"""Tests of the fp4diag Python package against the CLI: every result is compared with the
report `fp4diag` writes for the same values and options (dict equality: the same JSON numbers
parse to the same floats, so equal dicts mean equal bits).

Run from the repository root: FP4DIAG=./fp4diag FP4DIAG_LIBRARY=build/libfp4diag.so.0
PYTHONPATH=python python3 -m unittest discover -s python/tests -v
(src/tests/cli/python_api.sh does this in `make check`). torch parts skip without torch.
"""
import glob
import json
import os
import struct
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import numpy as np

import fp4diag

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("FP4DIAG") or os.path.join(ROOT, "fp4diag")
H5 = os.path.join(ROOT, "testdata", "gpt_ckpt_small.h5")
H5_TENSOR = "/blocks/0/fc1/weight"  # bf16 1024x256
QDIR = os.path.join(ROOT, "testdata", "quantized")

try:
    import torch
except ImportError:
    torch = None
try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None


def cli(*args, check=True):
    p = subprocess.run([CLI] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if check and p.returncode != 0:
        raise AssertionError("fp4diag %s exited %d: %s" % (args, p.returncode,
                                                           p.stderr.decode()))
    return p


def cli_json(*args):
    return json.loads(cli(*args, "--json").stdout)


def st_names(path):
    """The tensor names a safetensors file stores (its header's keys)."""
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        return [k for k in json.loads(fh.read(n)) if k != "__metadata__"]


def argv(**options):
    return fp4diag._options(options)


# option sets: the defaults, NVFP4 with RHT both ways, MXFP4 rceil, per-tensor scale, SR
OPTION_SETS = [
    {},
    {"format": "nvfp4", "rht": "both"},
    {"formats": ["mxfp4", "int4"], "mx_rule": "rceil"},
    {"format": "e2m1", "scale": "tensor"},
    {"format": "e1m2", "block": 32},
    {"format": "e2m1,e1m2", "rounding": "sr", "seed": 7, "sr_bits": 8},
    {"format": "nvfp4", "axis": 0, "rht": True, "rht_size": 32, "rht_signs": "seed:3"},
    {"format": "nvfp4", "weight_2d": True, "threads": 1},
    {"formats": ["e2m1", "int4"], "scale": "mxfp4", "error_split": True},
]


class AnalyzeNumpy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        rng = np.random.default_rng(1)
        cls.x = (rng.standard_normal((96, 64)) * np.exp(rng.standard_normal((96, 1)))
                 ).astype(np.float32)
        cls.x[3, 5] = 0.0

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def npy(self, name, a):
        path = os.path.join(self.tmp.name, name + ".npy")
        np.save(path, a)
        return path

    def check_equal(self, a, name, **options):
        path = self.npy(name, a)
        # named exactly, as analyze's tensor is: analysed whatever its rank
        want = cli_json("sqnr", *argv(**options), path, name)["tensors"]
        self.assertEqual(len(want), 1)
        got = fp4diag.analyze(a, name=name, **options)
        self.assertEqual(got, want[0])
        return got

    def test_f32_every_option_set(self):
        for opts in OPTION_SETS:
            with self.subTest(opts=opts):
                self.check_equal(self.x, "x32", **opts)

    def test_error_split_opt_in(self):
        # only asked for; the shares add to 1, and nothing else moves
        on = self.check_equal(self.x, "xs", format="nvfp4", error_split=True)
        off = fp4diag.analyze(self.x, name="xs", format="nvfp4")
        es = on["results"][0]["error_split"]
        self.assertAlmostEqual(es["flushed"] + es["scale"] + es["grid"] + es["cross"], 1.0,
                               delta=1e-12)
        self.assertNotIn("error_split", off["results"][0])
        del on["results"][0]["error_split"]
        self.assertEqual(on, off)

    def test_f16(self):
        for opts in OPTION_SETS[:3]:
            with self.subTest(opts=opts):
                got = self.check_equal(self.x.astype(np.float16), "x16", **opts)
                self.assertEqual(got["dtype"], "f16")

    def test_strides_and_byte_order(self):
        """A transposed view, a strided slice and a big-endian array: the values as stored
        contiguously in C order give the same entry."""
        base = fp4diag.analyze(np.ascontiguousarray(self.x.T), name="t", format="nvfp4")
        self.assertEqual(fp4diag.analyze(self.x.T, name="t", format="nvfp4"), base)
        self.assertEqual(fp4diag.analyze(self.x.T.astype(">f4"), name="t", format="nvfp4"),
                         base)
        s = self.x[::2, 16:48]
        self.check_equal(np.ascontiguousarray(s), "s", format="e2m1")
        self.assertEqual(fp4diag.analyze(s, name="s", format="e2m1"),
                         fp4diag.analyze(np.ascontiguousarray(s), name="s", format="e2m1"))
        # negative strides (reversed views) and zero strides (broadcast) read in place
        for v in (self.x[::-1, ::-2], np.broadcast_to(self.x[5], self.x.shape)):
            self.assertEqual(fp4diag.analyze(v, name="v", format="nvfp4", rht="both"),
                             fp4diag.analyze(np.ascontiguousarray(v), name="v", format="nvfp4",
                                             rht="both"))
        self.check_equal(np.ascontiguousarray(self.x[::-1, ::-2]), "rev", format="nvfp4")
        empty = fp4diag.analyze(np.zeros((0, 16), np.float32), format="e2m1")
        self.assertEqual(empty["results"][0]["counts"]["elements"], 0)
        # rank 1, rank 3 and a scalar
        self.check_equal(self.x.reshape(-1), "r1", format="nvfp4")
        self.check_equal(self.x.reshape(6, 16, 64), "r3", format="nvfp4")
        self.check_equal(np.float32(2.5).reshape(()), "r0", format="e2m1")

    def test_the_comparison_can_fail(self):
        y = self.x.copy()
        y[10, 10] = np.nextafter(y[10, 10], np.float32(np.inf))
        path = self.npy("y", y)
        want = cli_json("sqnr", "--format", "e2m1", path)["tensors"][0]
        self.assertNotEqual(fp4diag.analyze(self.x, name="y", format="e2m1"), want)
        self.assertNotEqual(fp4diag.analyze(y, name="other", format="e2m1"), want)

    def test_usage_errors_carry_the_cli_message(self):
        path = self.npy("e", self.x)
        for opts in ({"format": "e9m9"}, {"bogus": 3}, {"block": "x"}, {"sr_bits": 8},
                     {"rht": "sideways"}):
            with self.subTest(opts=opts):
                p = cli("sqnr", *argv(**opts), path, check=False)
                self.assertEqual(p.returncode, 2)
                with self.assertRaises(ValueError) as cm:
                    fp4diag.analyze(self.x, **opts)
                self.assertIsInstance(cm.exception, fp4diag.UsageError)
                msg = str(cm.exception)
                self.assertTrue(msg and msg in p.stderr.decode(), (msg, p.stderr.decode()))
        for bad in (self.x.astype(np.float64), self.x.astype(np.int32),
                    np.zeros([1] * 9, np.float32)):
            with self.assertRaises(ValueError):
                fp4diag.analyze(bad)
        with self.assertRaises(ValueError):
            fp4diag.analyze(self.x, json=True)  # about the CLI's output: not for the library
        with self.assertRaises(ValueError):
            fp4diag.analyze(self.x, weight_2d="yes")
        # a NUL byte would cut the C string: another option value, name or file, never read
        for call in (lambda: fp4diag.analyze(self.x, format="nvfp4\0int4"),
                     lambda: fp4diag.analyze(self.x, name="w\0x"),
                     lambda: fp4diag.open(H5 + "\0.bak"),
                     lambda: fp4diag.report(H5, H5_TENSOR + "\0x")):
            with self.assertRaises(ValueError):
                call()

    def test_te_stats_known_answer(self):
        """Transformer Engine's underflows% and mse: one e2m1 block under an fp32 scale, amax 6
        (scale 1), fifteen 0.125s that round to 0, one of them 0 already in the input."""
        x = np.full(16, 0.125, np.float32)
        x[0], x[1] = 6.0, 0.0
        sums = []
        e = fp4diag._analyze(x, "k", {"format": "e2m1"}, sums)
        r = e["results"][0]
        self.assertEqual(sums, [(36.0 + 14 / 64, 14 / 64)])
        self.assertEqual(fp4diag._te_stats(r, sums[0][1]),
                         {"underflows%": 100.0 * 14 / 16, "mse": (14 / 64) / 16})
        # the sums are the ones nmse is computed from (within an ulp or two: its division is
        # the engine's own)
        y = self.x
        sums = []
        e = fp4diag._analyze(y, "y", {"format": "nvfp4,int4", "rht": "both"}, sums)
        self.assertEqual(len(sums), 4)
        for r, (x2, e2) in zip(e["results"], sums):
            self.assertTrue(abs(r["nmse"] - e2 / x2) <= 1e-14 * r["nmse"], (r["nmse"], e2 / x2))
        self.assertEqual(fp4diag._te_stats(dict(r, counts=dict(r["counts"], elements=0)), 1.0),
                         {"underflows%": None, "mse": None})

    def test_recipe_keeps_known_answers(self):
        """The default selection's rule table through the library (SPEC §9)."""
        self.assertEqual(fp4diag.recipe_keeps("lm_head.weight"), ("output head", "*lm_head*"))
        self.assertEqual(fp4diag.recipe_keeps("/model/layers/3/mlp/gate/weight")[0],
                         "MoE router")
        self.assertEqual(fp4diag.recipe_keeps("model.embed_tokens.weight")[0], "embedding")
        self.assertIsNone(fp4diag.recipe_keeps("model.layers.0.mlp.down_proj.weight"))
        self.assertIsNone(fp4diag.recipe_keeps("blocks.0.fc1.weight"))
        with self.assertRaises(ValueError):
            fp4diag.recipe_keeps("lm_head\0.weight")

    @unittest.skipIf(ml_dtypes is None, "ml_dtypes is not installed: bfloat16 NumPy arrays "
                     "not tested (torch bf16 tensors are, where torch is)")
    def test_bf16_ml_dtypes(self):
        with fp4diag.open(H5) as f:
            v = f.read(H5_TENSOR)
            want = f.analyze(H5_TENSOR, format="nvfp4")
        got = fp4diag.analyze(v.astype(ml_dtypes.bfloat16), name=H5_TENSOR, format="nvfp4")
        self.assertEqual(got, want)


class Producer:
    """An object that is only a DLPack producer (not an ndarray or a torch tensor): analyze()
    must take it through __dlpack__. legacy=True: a producer of DLPack < 1.0, whose __dlpack__
    takes no max_version. `calls` records the keyword arguments of each __dlpack__ call."""

    def __init__(self, t, legacy=False, device=None):
        self.t, self.legacy, self.device, self.calls = t, legacy, device, []

    def __dlpack_device__(self):
        return self.device or self.t.__dlpack_device__()

    def __dlpack__(self, **kw):
        self.calls.append(kw)
        if self.legacy and "max_version" in kw:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        return self.t.__dlpack__(**kw)


def numpy_exports(a, **kw):
    """Whether NumPy exports the array `a` through a.__dlpack__(**kw): NumPy 2.1 and later
    export DLPack 1.0 (max_version), read-only arrays and bool; older ones (1.24 in Debian 12,
    the aarch64 wheel's test under qemu) take no max_version and export neither."""
    try:
        a.__dlpack__(**kw)
        return True
    except (BufferError, RuntimeError, TypeError, ValueError):
        return False


NUMPY_DLPACK_1 = hasattr(np.ndarray, "__dlpack__") and numpy_exports(np.zeros(1, np.float32),
                                                                     max_version=(1, 0))


_CAPSULE_NAMES = {False: b"dltensor", True: b"dltensor_versioned"}  # alive as long as capsules
_capsule_new = None


class Synthetic:
    """A DLPack producer made here, over a NumPy buffer, with what NumPy and torch never export:
    a byte_offset, strides NULL (C order), a vector dtype, a capsule naming another device
    than __dlpack_device__, a version 2. Its capsule has no destructor (the buffer is `base`)."""

    def __init__(self, base, offset, shape, strides=None, code=2, bits=32, lanes=1, device=1,
                 versioned=True, major=1):
        import ctypes
        from fp4diag import _lib

        global _capsule_new
        if _capsule_new is None:
            _capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                             ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))
        self.base, self.versioned = base, versioned
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = (ctypes.c_int64 * max(len(shape), 1))(*strides) if strides else None
        t = _lib.DLTensor(base.ctypes.data, _lib.DLDevice(device, 0), len(shape),
                          _lib.DLDataType(code, bits, lanes), self.shape, self.strides, offset)
        if versioned:
            self.m = _lib.DLManagedTensorVersioned(major, 0, None, None, 1, t)  # 1: read-only
        else:
            self.m = _lib.DLManagedTensor(t, None, None)

    def __dlpack__(self, **kw):
        import ctypes

        return _capsule_new(ctypes.addressof(self.m), _CAPSULE_NAMES[self.versioned], None)


@unittest.skipUnless(hasattr(np.ndarray, "__dlpack__"), "NumPy %s has no __dlpack__ (1.22+): "
                     "DLPack not tested" % np.__version__)
class DLPack(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rng = np.random.default_rng(3)
        cls.x = (rng.standard_normal((64, 96)) * np.exp(rng.standard_normal((64, 1)))
                 ).astype(np.float32)

    def same(self, producer, like, **options):
        """analyze() of the producer equals analyze() of `like` (already checked against the
        CLI by AnalyzeNumpy / Torch), and the library was handed the producer's own memory."""
        got = fp4diag.analyze(producer, name="d", **options)
        self.assertEqual(got, fp4diag.analyze(like, name="d", **options))
        self.assertTrue(producer.calls)
        return got

    def test_numpy_views_read_in_place(self):
        cases = [self.x, self.x.T, self.x[::-1, 7::3], self.x.astype(np.float16)[2:, :40],
                 np.broadcast_to(self.x[1], self.x.shape), self.x.reshape(-1),
                 self.x.reshape(4, 16, 96), np.array(1.5, np.float32), self.x[:0]]
        for a in cases:
            with self.subTest(shape=a.shape, strides=a.strides, dtype=a.dtype):
                for legacy in (False, True):
                    p = Producer(a, legacy=legacy)
                    # NumPy exports read-only arrays from DLPack 1.0 (NumPy 2.1) only
                    if not a.flags.writeable and (legacy or not NUMPY_DLPACK_1):
                        with self.assertRaises(ValueError) as cm:
                            fp4diag.analyze(p, name="ro")
                        self.assertIn("memory: ro: its __dlpack__() failed: ", str(cm.exception))
                        continue
                    self.same(p, a, format="nvfp4", rht="both")
                    self.assertEqual("max_version" in p.calls[-1], not legacy and NUMPY_DLPACK_1)
                    view, keep, _ = fp4diag._view(Producer(a), "d")
                    self.assertEqual(view.data, a.ctypes.data if a.size else None)
                    self.assertEqual([view.strides[i] for i in range(a.ndim)],
                                     [s // a.itemsize for s in a.strides])
                    del keep
        # one against the CLI directly: the file holds the view's values
        with tempfile.TemporaryDirectory() as d:
            v = self.x[::-1, 7::3]
            np.save(os.path.join(d, "v.npy"), np.ascontiguousarray(v))
            want = cli_json("sqnr", "--format", "nvfp4,int4", os.path.join(d, "v.npy"),
                            "v")["tensors"][0]
        self.assertEqual(fp4diag.analyze(Producer(v), name="v", format="nvfp4,int4"), want)

    def test_offset_c_order_and_capsule_fields(self):
        """byte_offset counts, strides NULL is C order, the capsule's device and version are
        checked, lanes must be 1 (a producer made here: NumPy and torch set none of these)."""
        base = self.x.reshape(-1)
        for versioned in (True, False):
            with self.subTest(versioned=versioned):
                p = Synthetic(base, 4 * 96 * 5, (20, 96), versioned=versioned)
                view, keep, _ = fp4diag._view(p, "o")
                self.assertEqual(view.data, base.ctypes.data + 4 * 96 * 5)
                self.assertEqual(list(view.strides[:2]), [96, 1])
                del keep
                self.assertEqual(fp4diag.analyze(p, name="o", format="nvfp4"),
                                 fp4diag.analyze(self.x[5:25], name="o", format="nvfp4"))
                p = Synthetic(base, 4 * 7, (30, 16), strides=(96 * 2, 3), versioned=versioned)
                self.assertEqual(fp4diag.analyze(p, name="o", format="e2m1"),
                                 fp4diag.analyze(self.x[::2][:30, 7:7 + 48:3], name="o",
                                                 format="e2m1"))
        for kw, msg in (({"lanes": 2}, "DLPack dtype float32x2 is not"),
                        ({"code": 7, "bits": 8}, "DLPack dtype (code 7, 8 bits) is not"),
                        ({"device": 2}, "a DLPack tensor on cuda:0"),
                        ({"major": 2}, "DLPack version 2.0")):
            with self.subTest(**kw):
                with self.assertRaises(ValueError) as cm:
                    fp4diag.analyze(Synthetic(base, 0, (4, 4), **kw), name="c")
                self.assertIn("memory: c: " + msg, str(cm.exception))

    def test_errors(self):
        for a, what in ((self.x.astype(np.float64), "float64"), (self.x.astype(np.int32), "int32"),
                        (self.x.astype(np.uint8), "uint8"), (self.x > 0, "bool8"),
                        (self.x.astype(np.complex64), "complex64")):
            with self.subTest(dtype=a.dtype):
                with self.assertRaises(fp4diag.UsageError) as cm:
                    fp4diag.analyze(Producer(a), name="bad")
                if numpy_exports(a):
                    self.assertIn("memory: bad: DLPack dtype %s is not" % what, str(cm.exception))
                else:  # NumPy before 2.1 exports no bool
                    self.assertIn("memory: bad: its __dlpack__() failed: ", str(cm.exception))
        p = Producer(self.x, device=(2, 1))  # says cuda:1, holds host memory
        with self.assertRaises(ValueError) as cm:
            fp4diag.analyze(p, name="g")
        if fp4diag._lib.cuda_built():  # asked for on the legacy stream: NumPy refuses
            self.assertIn("memory: g: its __dlpack__() failed", str(cm.exception))
            self.assertEqual([c.get("stream") for c in p.calls], [1] * len(p.calls))
        else:  # a library without CUDA: refused before export
            self.assertIn("memory: g: a DLPack tensor on cuda:1", str(cm.exception))
            self.assertEqual(p.calls, [])
        p = Producer(self.x, device=(4, 0))  # OpenCL: refused before export everywhere
        with self.assertRaises(ValueError) as cm:
            fp4diag.analyze(p, name="g")
        self.assertIn("memory: g: a DLPack tensor on opencl:0", str(cm.exception))
        self.assertEqual(p.calls, [])
        with self.assertRaises(ValueError) as cm:
            fp4diag.analyze(Producer(np.zeros([1] * 9, np.float32)), name="r")
        self.assertIn("rank 9", str(cm.exception))

        class Broken:
            def __init__(self, out):
                self.out = out

            def __dlpack__(self, **kw):
                if isinstance(self.out, Exception):
                    raise self.out
                return self.out

        for b, msg in ((Broken(BufferError("read-only")), "__dlpack__() failed: read-only"),
                       (Broken(3), "gave 'int', not a DLPack capsule")):
            with self.assertRaises(ValueError) as cm:
                fp4diag.analyze(b, name="b")
            self.assertIn("memory: b: ", str(cm.exception))
            self.assertIn(msg, str(cm.exception))

    @unittest.skipIf(torch is None, "torch is not installed: torch DLPack tensors not tested")
    def test_torch_bf16_views_read_in_place(self):
        with fp4diag.open(H5) as f:
            v = f.read(H5_TENSOR)
            want = f.analyze(H5_TENSOR, format="nvfp4", rht="both")
        t = torch.from_numpy(v).to(torch.bfloat16)  # exact: the values are bf16
        got = fp4diag.analyze(Producer(t), name=H5_TENSOR, format="nvfp4", rht="both")
        self.assertEqual(got, want)
        for u in (t, t.t(), t[3:, 1::2], t.float()[5:9], t.half().t()[::4]):
            with self.subTest(shape=tuple(u.shape), stride=u.stride(), dtype=u.dtype):
                for legacy in (False, True):
                    self.same(Producer(u, legacy=legacy), u, format="nvfp4,e1m2")
                view, keep, _ = fp4diag._view(Producer(u), "d")
                self.assertEqual(view.data, u.data_ptr())
                self.assertEqual([view.strides[i] for i in range(u.dim())], list(u.stride()))
                self.assertEqual(view.dtype, {torch.bfloat16: 3, torch.float32: 1,
                                              torch.float16: 2}[u.dtype])
                del keep
        with self.assertRaises(ValueError) as cm:
            fp4diag.analyze(Producer(torch.zeros(4, dtype=torch.float64)), name="f64")
        self.assertIn("DLPack dtype float64", str(cm.exception))
        with self.assertRaises(ValueError) as cm:  # torch refuses to export it; said so
            fp4diag.analyze(Producer(torch.zeros(4, requires_grad=True)), name="rg")
        self.assertIn("memory: rg: its __dlpack__() failed", str(cm.exception))


def _cuda_skip():
    """Why the CUDA tests cannot run here, or None when they can: torch with a CUDA device and
    a library built with CUDA (one without raises DeviceError for a CUDA tensor)."""
    if torch is None:
        return "torch is not installed: CUDA tensors not tested"
    if not torch.cuda.is_available():
        return "torch %s sees no CUDA device: CUDA tensors not tested" % torch.__version__
    try:
        fp4diag.analyze(torch.ones(16, device="cuda"), format="e2m1", device="cuda")
    except fp4diag.DeviceError as e:
        return "the library cannot analyse CUDA tensors (%s): CUDA tensors not tested" % e
    return None


CUDA_SKIP = _cuda_skip()


@unittest.skipIf(CUDA_SKIP, CUDA_SKIP)
class TorchCuda(unittest.TestCase):
    """A CUDA tensor (torch, the caller's stream) analysed by a library built with CUDA: the
    entry equals the CPU's for the same values, every field, on either --device, and the CLI's
    report of a file holding them."""

    @classmethod
    def setUpClass(cls):
        g = torch.Generator(device="cuda").manual_seed(4)
        cls.x = (torch.randn(256, 256, device="cuda", generator=g)
                 * torch.randn(256, 1, device="cuda", generator=g).exp()).to(torch.bfloat16)

    def test_bf16_equals_cpu_and_cli(self):
        cpu = self.x.cpu()
        for opts in OPTION_SETS:
            with self.subTest(opts=opts):
                want = fp4diag.analyze(cpu, name="x", **dict(opts, device="cpu"))
                for dev in ("cuda", "auto"):
                    self.assertEqual(fp4diag.analyze(self.x, name="x", **dict(opts, device=dev)),
                                     want)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.pt")
            torch.save({"x": cpu}, path)
            want = cli_json("sqnr", "--format", "nvfp4,int4", "--rht", "both", path,
                            "x")["tensors"][0]
        self.assertEqual(want["dtype"], "bf16")
        self.assertEqual(fp4diag.analyze(self.x, name="x", format="nvfp4,int4", rht="both",
                                         device="cuda"), want)

    def test_views_dtypes_and_stream(self):
        for u in (self.x.t(), self.x[3:, 1::2], self.x.float()[5:60], self.x.half().t()[::4],
                  self.x[:0]):
            with self.subTest(shape=tuple(u.shape), stride=u.stride(), dtype=u.dtype):
                self.assertEqual(fp4diag.analyze(u, name="v", format="nvfp4", rht="both",
                                                 device="cuda"),
                                 fp4diag.analyze(u.cpu(), name="v", format="nvfp4", rht="both",
                                                 device="cpu"))
        # values still being written on another stream when analyze() is called: it waits for
        # the caller's current stream
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            big = self.x.float().repeat(8, 8)
            for _ in range(20):
                big = big * 1.0001
            got = fp4diag.analyze(big, name="b", format="nvfp4", device="cuda")
        s.synchronize()
        self.assertEqual(got, fp4diag.analyze(big.cpu(), name="b", format="nvfp4",
                                              device="cpu"))

    def test_monitor_on_cuda(self):
        import fp4diag.torch as fmon

        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(),
                                    torch.nn.Linear(128, 32)).cuda()
        mon = fmon.Monitor(model, every=1, format="nvfp4", rht="both")
        x = torch.randn(16, 64, device="cuda")
        h = model[1](model[0](x))
        h.retain_grad()
        out = model[2](h)
        out.retain_grad()
        out.square().sum().backward()
        recs = list(mon.records)
        mon.close()
        self.assertEqual([(e["layer"], e["role"]) for e in recs],
                         [("0", "x"), ("0", "w"), ("2", "x"), ("2", "w"), ("2", "dy"),
                          ("0", "dy")])
        want = {("0", "x"): x, ("0", "w"): model[0].weight, ("2", "x"): h,
                ("2", "w"): model[2].weight, ("2", "dy"): out.grad}
        for e in recs:
            t = want.get((e["layer"], e["role"]))
            if t is None:
                continue
            for r in e["results"]:
                del r["underflows%"], r["mse"]
            self.assertEqual({k: v for k, v in e.items() if k not in ("step", "layer", "role")},
                             fp4diag.analyze(t.detach().cpu(), name=e["name"], format="nvfp4",
                                             rht="both", device="cpu"))

    def test_dlpack_cuda_producer(self):
        """A DLPack producer's CUDA tensor (kDLCUDA): asked for on the legacy default stream
        (stream=1) and analysed on the GPU, with the CPU's numbers."""
        for u in (self.x, self.x.float().t()[1::3]):
            p = Producer(u)
            self.assertEqual(fp4diag.analyze(p, name="g", format="nvfp4", rht="both"),
                             fp4diag.analyze(u.cpu(), name="g", format="nvfp4", rht="both",
                                             device="cpu"))
            self.assertEqual(p.calls[-1].get("stream"), 1)

    def test_caller_stream_no_sync_no_host_copy(self):
        """A tensor written on a non-default stream just before the call, with no
        synchronisation by the caller: analyze() orders its reads after that write on the
        current stream (the GPU sleeps first, so a read on another stream, or before the copy,
        would see the zeros), synchronises nothing (the torch calls that would are made to fail
        during it) and copies nothing to the host (.cpu() fails too)."""
        y = self.x.float().repeat(4, 4)
        want = fp4diag.analyze(y.cpu(), name="s", format="nvfp4", rht="both", device="cpu")
        for dt in (torch.float32, torch.bfloat16):
            buf = torch.zeros(y.shape, dtype=dt, device="cuda")
            src = y.to(dt)
            torch.cuda.synchronize()
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time before the copy
                buf.copy_(src)
                fail = mock.Mock(side_effect=AssertionError("synchronised or copied"))
                with mock.patch.object(torch.cuda.Stream, "synchronize", fail), \
                        mock.patch("torch.cuda.synchronize", fail), \
                        mock.patch.object(torch.Tensor, "cpu", fail):
                    got = fp4diag.analyze(buf, name="s", format="nvfp4", rht="both")
            s.synchronize()
            self.assertEqual(got, fp4diag.analyze(src.cpu(), name="s", format="nvfp4",
                                                  rht="both", device="cpu"))
            if dt == torch.float32:
                self.assertEqual(got, want)

    def test_in_place_trace(self):
        """The library's trace says the tensor was analysed where it lies, 0 bytes copied to
        the host (the host reference's copy of a config the kernels lack is counted there)."""
        code = ("import torch, fp4diag\n"
                "x = torch.randn(64, 96, device='cuda').t()\n"
                "fp4diag.analyze(x, name='t', format='nvfp4', rht='both')\n"
                "fp4diag.analyze(x, name='u', format='e2m1', block=512)\n")
        env = dict(os.environ, FP4DIAG_TRACE="1")
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True)
        self.assertIn("device tensor t analysed in place; 0 bytes copied to the host", r.stderr)
        self.assertIn("rows gathered", r.stderr)
        # block 512: the host reference's config, its rows copied (96 x 64 fp32)
        self.assertIn("device tensor u analysed in place; %d bytes copied" % (96 * 64 * 4),
                      r.stderr)


class WheelTag(unittest.TestCase):
    """build_backend.py tags the wheel linux_<arch> from the bundled library's ELF header, not
    from the interpreter that builds it (src/tests/cli/python_wheel.sh builds the wheel)."""

    @classmethod
    def setUpClass(cls):
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "fp4diag_build_backend", os.path.join(ROOT, "python", "build_backend.py"))
        cls.bb = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.bb)

    def test_tags(self):
        with open(fp4diag.library_path, "rb") as f:
            head = f.read(20)
        self.assertEqual(self.bb._tag(head), "py3-none-linux_" + os.uname().machine)
        arm = head[:18] + (183).to_bytes(2, "little")
        self.assertEqual(self.bb._tag(arm), "py3-none-linux_aarch64")
        for bad in (b"", b"MZ" + head[2:], head[:4] + b"\x01" + head[5:],
                    head[:5] + b"\x02" + head[6:], head[:7] + b"\x09" + head[8:],
                    head[:18] + (243).to_bytes(2, "little")):
            with self.assertRaises(RuntimeError):
                self.bb._tag(bad)

    @unittest.skipUnless(shutil.which("aarch64-linux-gnu-gcc") and os.uname().machine != "aarch64",
                         "no aarch64-linux-gnu-gcc (or this is aarch64): the cross-build "
                         "refusal not tested")
    def test_cross_build_refused_unless_set_up(self):
        self.assertIsNone(self.bb._cross({}))
        self.assertIsNone(self.bb._cross({"CC": "cc"}))
        self.assertIsNone(self.bb._cross({"CC": "no-such-compiler-here"}))
        cc = {"CC": "aarch64-linux-gnu-gcc"}
        self.assertEqual(self.bb._cross(cc), ("aarch64", os.uname().machine))
        with self.assertRaises(RuntimeError) as cm:
            self.bb._refuse_cross(cc)
        msg = str(cm.exception)
        for want in ("CC=aarch64-linux-gnu-gcc builds for aarch64", "PKG_CONFIG_LIBDIR and "
                     "PKG_CONFIG_SYSROOT_DIR", "CUDA=0", "BUILD=DIR",
                     "Build the aarch64 wheel with `make wheel-aarch64`",
                     "or on a aarch64 machine"):
            self.assertIn(want, msg)
        ready = dict(cc, PKG_CONFIG_LIBDIR="/s/usr/lib/aarch64-linux-gnu/pkgconfig",
                     PKG_CONFIG_SYSROOT_DIR="/s", CUDA="0", BUILD="build-a64")
        self.bb._refuse_cross(ready)  # set up: make runs
        for drop in ("CUDA", "BUILD", "PKG_CONFIG_LIBDIR"):
            with self.subTest(without=drop):
                with self.assertRaises(RuntimeError):
                    self.bb._refuse_cross({k: v for k, v in ready.items() if k != drop})
        self.bb._refuse_cross({"CC": "cc", "CUDA": "auto"})  # the host's own: nothing asked

    @unittest.skipUnless(shutil.which("aarch64-linux-gnu-gcc"), "aarch64-linux-gnu-gcc not found: "
                         "a cross-built library's tag not tested")
    def test_cross_built_library(self):
        with tempfile.TemporaryDirectory() as d:
            c, so = os.path.join(d, "a.c"), os.path.join(d, "liba.so")
            with open(c, "w") as f:
                f.write("int fp4d_x(void) { return 1; }\n")
            subprocess.run(["aarch64-linux-gnu-gcc", "-shared", "-fPIC", "-o", so, c], check=True)
            with open(so, "rb") as f:
                self.assertEqual(self.bb._tag(f.read(20)), "py3-none-linux_aarch64")


class Inputs(unittest.TestCase):
    def test_open_lists_what_ls_lists(self):
        ls = json.loads(cli("ls", "--json", H5).stdout)
        with fp4diag.open(H5) as f:
            names = f.names()
            self.assertIn(H5_TENSOR, names)
            t = f.info(H5_TENSOR)
            self.assertEqual((t.dtype, t.shape, t.nelems, t.problem),
                             ("bf16", (1024, 256), 1024 * 256, ""))
        text = json.dumps(ls)
        for n in names:
            self.assertIn(json.dumps(n), text)

    def test_read_gives_the_values_analysed(self):
        """read() then analyze() of the array = the file's tensor analysed = the CLI's."""
        want = cli_json("sqnr", "--format", "nvfp4,int4", "--rht", "both", H5,
                        H5_TENSOR)["tensors"][0]
        with fp4diag.open(H5) as f:
            v = f.read(H5_TENSOR)
            self.assertEqual(v.dtype, np.float32)
            self.assertEqual(v.shape, (1024, 256))
            self.assertEqual(f.analyze(H5_TENSOR, format="nvfp4,int4", rht="both"), want)
        got = fp4diag.analyze(v, name=H5_TENSOR, format="nvfp4,int4", rht="both")
        self.assertEqual(got["results"], want["results"])
        self.assertEqual(got["dtype"], "f32")  # read widened the bf16 words exactly

    def test_input_errors(self):
        with self.assertRaises(fp4diag.InputError) as cm:
            fp4diag.open(os.path.join(ROOT, "testdata", "no-such-file.h5"))
        self.assertIn("no-such-file.h5", str(cm.exception))
        self.assertIsInstance(cm.exception, OSError)
        with fp4diag.open(H5) as f:
            with self.assertRaises(fp4diag.InputError):
                f.analyze("/no/such/tensor")
            with self.assertRaises(KeyError):
                f.read("/no/such/tensor")
            self.assertEqual(len(f.analyze(H5_TENSOR, format="e2m1")["results"]), 1)
        with self.assertRaises(ValueError):
            f.read(H5_TENSOR)  # closed

    def test_read_refuses_quantized_members(self):
        # an export's packed codes (u8), block scales (f8_e4m3), tensor and input scales (f32)
        # and an FP8 weight are stored bytes, not a tensor's values: read raises, naming them
        pq = os.path.join(QDIR, "producer")
        cases = (("modelopt_nvfp4", "model.layers.0.self_attn.q_proj.weight", "4-bit codes"),
                 ("modelopt_nvfp4", "model.layers.0.self_attn.q_proj.weight_scale", "block"),
                 ("modelopt_nvfp4", "model.layers.0.self_attn.q_proj.weight_scale_2", "tensor"),
                 ("modelopt_nvfp4", "model.layers.0.self_attn.q_proj.input_scale", "input"),
                 ("modelopt_mixed", "model.layers.0.mlp.down_proj.weight", "FP8 E4M3 weight"),
                 ("modelopt_mixed", "model.layers.0.mlp.down_proj.weight_scale", "FP8 E4M3"))
        for d, name, what in cases:
            with self.subTest(d=d, name=name), fp4diag.open(os.path.join(pq, d)) as f:
                with self.assertRaises(ValueError) as cm:
                    f.read(name)
                msg = str(cm.exception)
                self.assertIn(name, msg)
                self.assertIn(what, msg)
                self.assertIn("fp4diag audit", msg)
        with fp4diag.open(os.path.join(pq, "modelopt_nvfp4")) as f:
            v = f.read("model.norm.weight")  # a high-precision tensor beside them still reads
            self.assertEqual(v.shape, (64,))
            self.assertEqual(v.dtype, np.float32)

    def test_open_lists_quantized_exports_as_ls(self):
        # an NVFP4/MXFP4 export: one logical tensor per quantized module, as `fp4diag ls`
        # lists it (dtype nvfp4/mxfp4, logical shape), its members not listed; read() of it
        # raises a UsageError saying what it is and what audits it (not KeyError/InputError)
        for d in ("modelopt_nvfp4", "ct_nvfp4", "modelopt_mxfp4"):
            p = os.path.join(QDIR, d)
            ls = json.loads(cli("ls", "--json", p).stdout)["datasets"]
            with self.subTest(d=d), fp4diag.open(p) as f:
                self.assertEqual(f.names(), [x["name"] for x in ls])
                for x in ls:
                    t = f.info(x["name"])
                    self.assertEqual((t.dtype, list(t.shape)), (x["dtype"], x["shape"]))
                self.assertFalse([n for n in f.names() if "_scale" in n or "packed" in n])
                q = [t for t in f if t.dtype in ("nvfp4", "mxfp4")]
                self.assertTrue(q)
                for t in q:
                    with self.assertRaises(fp4diag.UsageError) as cm:
                        f.read(t.name)
                    msg = str(cm.exception)
                    self.assertIn(t.name, msg)
                    self.assertIn("already-quantized", msg)
                    self.assertIn("fp4diag audit SOURCE QUANTIZED", msg)

    def test_analyze_refuses_quantized_as_read(self):
        # analyze() of an already-quantized tensor (its logical name, as names() lists it) or
        # of a member of one says what read() says and raises its class, for every export
        # kind: not "no such tensor" (compressed-tensors, gpt-oss store no tensor under the
        # logical name) nor the CLI's skip reason (ModelOpt)
        dirs = sorted(os.path.dirname(p) for p in
                      glob.glob(os.path.join(QDIR, "*", "model.safetensors"))
                      + glob.glob(os.path.join(QDIR, "producer", "*", "model.safetensors")))
        producers, seen = set(), 0
        for d in dirs:
            with fp4diag.open(d) as f:
                listed = set(f.names())
                q = [t.name for t in f if t.dtype in ("nvfp4", "mxfp4")]
                members = [n for n in st_names(os.path.join(d, "model.safetensors"))
                           if n not in listed]
                for name in q + members:
                    with self.subTest(d=os.path.relpath(d, QDIR), name=name):
                        with self.assertRaises(fp4diag.Error) as r:
                            f.read(name)
                        with self.assertRaises(fp4diag.Error) as a:
                            f.analyze(name, format="e2m1")
                        self.assertIs(type(a.exception), type(r.exception))
                        self.assertEqual(str(a.exception), str(r.exception))
                        self.assertIsInstance(a.exception, fp4diag.UsageError)
                        if name in q:
                            self.assertIn("already-quantized", str(a.exception))
                            producers.add(str(a.exception).split("(")[1].split(")")[0])
                        seen += 1
        self.assertEqual(producers, {"modelopt", "compressed-tensors", "gpt-oss"})
        self.assertGreater(seen, 50)
        # an FP8 weight is analysed as `fp4diag sqnr FILE NAME` analyses it (read refuses it)
        with fp4diag.open(os.path.join(QDIR, "producer", "modelopt_mixed")) as f:
            e = f.analyze("model.layers.0.mlp.down_proj.weight", format="e2m1")
            self.assertEqual(e["dtype"], "f8_e4m3")

    def test_report_is_the_cli_report(self):
        for opts, sel in (({}, []), ({"format": "nvfp4", "rht": "both", "exclude": ["*fc2*"]},
                                     ["/blocks/0"]), ({"all_tensors": True, "format": "e2m1"},
                                                      ["/blocks/5"])):
            with self.subTest(opts=opts, sel=sel):
                args = argv(**opts)
                want = cli_json("sqnr", *args, H5, *sel)
                got = fp4diag.report(H5, *sel, **opts)
                self.assertEqual(got["argv"], ["fp4diag", "sqnr"] + args + [H5] + sel)
                for k in ("timing", "argv", "provenance"):
                    got.pop(k), want.pop(k)
                self.assertEqual(got, want)
        # the default selection leaves out what recipes keep (SPEC 9); all_weights brings it in
        sel = os.path.join(ROOT, "testdata", "select", "model.safetensors")
        for opts in ({"format": "e2m1"}, {"format": "e2m1", "all_weights": True}):
            with self.subTest(opts=opts):
                want = cli_json("sqnr", *argv(**opts), sel)
                got = fp4diag.report(sel, **opts)
                for k in ("timing", "argv", "provenance"):
                    got.pop(k), want.pop(k)
                self.assertEqual(got, want)
                names = {t["name"] for t in got["tensors"]}
                self.assertEqual("lm_head.weight" in names, "all_weights" in opts)
        rht = fp4diag.report(H5, H5_TENSOR, command="rht", format="e2m1")
        self.assertEqual(rht["command"], "rht")
        with self.assertRaises(ValueError):
            fp4diag.report(H5, command="rht", rht="on")
        with self.assertRaises(ValueError):
            fp4diag.report(H5, output="/tmp/x.json")
        with self.assertRaises(fp4diag.InputError):
            fp4diag.report(H5, "/no/such/*")

    @unittest.skipUnless(os.path.isdir(os.path.join(QDIR, "ct_nvfp4")), "no audit fixtures")
    def test_audit_is_the_cli_audit(self):
        src, q = os.path.join(QDIR, "source"), os.path.join(QDIR, "ct_nvfp4")
        want = json.loads(cli("audit", src, q, "--json").stdout)
        got = fp4diag.audit(src, q)
        self.assertEqual(got["schema"], "fp4diag.audit/1")
        for k in ("timing", "argv", "seconds", "provenance", "device"):  # the CLI: --device auto
            got.pop(k, None), want.pop(k, None)
        self.assertEqual(got, want)
        with self.assertRaises(fp4diag.InputError):
            fp4diag.audit(src, src)


@unittest.skipIf(torch is None, "torch is not installed: torch tensors and the monitor "
                 "(fp4diag.torch) not tested here")
class Torch(unittest.TestCase):
    def test_tensors_equal_numpy_and_file(self):
        with fp4diag.open(H5) as f:
            v = f.read(H5_TENSOR)
            want = f.analyze(H5_TENSOR, format="nvfp4", rht="both")
        t = torch.from_numpy(v).to(torch.bfloat16)  # exact: the values are bf16
        self.assertEqual(fp4diag.analyze(t, name=H5_TENSOR, format="nvfp4", rht="both"), want)
        self.assertEqual(fp4diag.analyze(t.t(), name="a", format="nvfp4"),
                         fp4diag.analyze(t.t().contiguous(), name="a", format="nvfp4"))
        x = np.random.default_rng(2).standard_normal((32, 48)).astype(np.float32)
        for dt, npdt in ((torch.float32, np.float32), (torch.float16, np.float16)):
            self.assertEqual(fp4diag.analyze(torch.from_numpy(x).to(dt), format="nvfp4"),
                             fp4diag.analyze(x.astype(npdt), format="nvfp4"))
        with self.assertRaises(ValueError):
            fp4diag.analyze(torch.zeros(4, 4, dtype=torch.float64))

    def test_monitor_records_x_w_dy(self):
        import fp4diag.torch as fmon

        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                    torch.nn.Linear(64, 16))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.jsonl")
            mon = fmon.Monitor(model, layers=["2"], every=2, path=path, format="nvfp4",
                               rht="both")
            seen = {}
            for step in range(3):
                x = torch.randn(8, 32)
                h = model[1](model[0](x))
                h.retain_grad()
                out = model[2](h)
                out.retain_grad()
                out.square().sum().backward()
                if step in (0, 2):
                    seen[step] = (h.detach().clone(), model[2].weight.detach().clone(),
                                  out.grad.clone())
                mon.step()
                model.zero_grad()
            mon.close()
            with open(path) as f:
                lines = [json.loads(l) for l in f]
        self.assertEqual([(e["step"], e["role"]) for e in lines],
                         [(0, "x"), (0, "w"), (0, "dy"), (2, "x"), (2, "w"), (2, "dy")])
        for e in lines:
            xs, w, dy = seen[e["step"]]
            t = {"x": xs, "w": w, "dy": dy}[e["role"]]
            sums = []
            want = fp4diag._analyze(t, "2." + e["role"], {"format": "nvfp4", "rht": "both"},
                                    sums)
            self.assertEqual(len(e["results"]), 2)
            for r, (_, e2) in zip(e["results"], sums):
                te = {k: r.pop(k) for k in ("underflows%", "mse")}
                self.assertEqual(te, fp4diag._te_stats(r, e2))
                self.assertTrue(0 < te["mse"] < 1, te)
            self.assertEqual({k: v for k, v in e.items() if k not in ("step", "layer", "role")},
                             want)
            self.assertEqual(e["layer"], "2")
        with self.assertRaises(ValueError):
            fmon.Monitor(model, layers=["nope"])
        # by default the layers recipes quantize: no lm_head, no MoE router
        lin = torch.nn.Linear
        m = torch.nn.ModuleDict({"fc": lin(8, 8), "lm_head": lin(8, 8),
                                 "mlp": torch.nn.ModuleDict({"gate": lin(8, 2),
                                                             "up_proj": lin(8, 8)})})
        with fmon.Monitor(m) as mon:
            self.assertEqual([n for n, _ in mon.layers], ["fc", "mlp.up_proj"])
        with fmon.Monitor(m, layers="*") as mon:
            self.assertEqual([n for n, _ in mon.layers], ["fc", "lm_head", "mlp.gate",
                                                         "mlp.up_proj"])
        with self.assertRaises(ValueError):
            fmon.Monitor(model, format="e9m9")


if __name__ == "__main__":
    unittest.main()
