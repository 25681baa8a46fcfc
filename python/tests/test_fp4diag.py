"""Tests of the fp4diag Python package against the CLI: every result is compared with the
report `fp4diag` writes for the same values and options (dict equality: the same JSON numbers
parse to the same floats, so equal dicts mean equal bits).

Run from the repository root: FP4DIAG=./fp4diag FP4DIAG_LIBRARY=build/libfp4diag.so.0
PYTHONPATH=python python3 -m unittest discover -s python/tests -v
(src/tests/cli/python_api.sh does this in `make check`). torch parts skip without torch.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

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

    @unittest.skipIf(ml_dtypes is None, "ml_dtypes is not installed: bfloat16 NumPy arrays "
                     "not tested (torch bf16 tensors are, where torch is)")
    def test_bf16_ml_dtypes(self):
        with fp4diag.open(H5) as f:
            v = f.read(H5_TENSOR)
            want = f.analyze(H5_TENSOR, format="nvfp4")
        got = fp4diag.analyze(v.astype(ml_dtypes.bfloat16), name=H5_TENSOR, format="nvfp4")
        self.assertEqual(got, want)


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
        for k in ("timing", "argv", "seconds", "provenance"):
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
        with self.assertRaises(ValueError):
            fmon.Monitor(model, format="e9m9")


if __name__ == "__main__":
    unittest.main()
