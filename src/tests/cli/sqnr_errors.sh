#!/bin/sh
# sqnr_errors.sh — a string dataset and a dataset behind an unavailable filter become `errors`
# entries naming the class / filter, the other tensors still run (an all-zero tensor is
# zero_signal, an exactly representable one is exact: null SQNR with a status), the whole report
# is written and validates, and the exit status is 3.
set -u
python3 -c 'import h5py, jsonschema' 2>/dev/null || { echo "no python3 h5py/jsonschema"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp/fx.h5" <<'PY' || exit 1
import sys, h5py, numpy as np
from h5py import h5z, h5p, h5t, h5s, h5d
with h5py.File(sys.argv[1], "w") as f:
    f["a_ok"] = np.random.default_rng(1).standard_normal((8, 32)).astype(np.float32)
    f["b_zero"] = np.zeros((4, 16), np.float32)
    f["c_exact"] = np.tile(np.array([0, 1, 2, 3, 4, 5, 6, 7, -7, -6, -5, -4, -3, -2, -1, 0],
                                    np.float32), (2, 1))
    f["d_name"] = "not a tensor"
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk((16,))
    dcpl.set_filter(32001, h5z.FLAG_OPTIONAL, ())
    d = h5d.create(f.id, b"e_blosc", h5t.NATIVE_FLOAT, h5s.create_simple((32,)), dcpl=dcpl)
    d.write(h5s.ALL, h5s.ALL, np.ones(32, np.float32))
PY
"$FP4DIAG" sqnr "$tmp/fx.h5" --all-tensors --format int4 -o "$tmp/r.json" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] || { echo "exit $rc, want 3"; cat "$tmp/err"; exit 1; }
[ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "want one line on stderr:"; cat "$tmp/err"; exit 1; }
grep -q "2 of 5 tensors failed.*d_name" "$tmp/err" || { echo "stderr does not count and name the failures:"; cat "$tmp/err"; exit 1; }
python3 - "$tmp/r.json" <<'PY' || exit 1
import json, sys, jsonschema
r = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator(json.load(open("schema/report.schema.json"))).validate(r)
assert r["input"]["datasets"] == ["/a_ok", "/b_zero", "/c_exact", "/d_name", "/e_blosc"], r["input"]
t = {x["name"]: x["results"][0] for x in r["tensors"]}
assert sorted(t) == ["/a_ok", "/b_zero", "/c_exact"], sorted(t)
assert t["/a_ok"]["sqnr_status"] == "ok" and t["/a_ok"]["sqnr_db"] > 10, t["/a_ok"]
assert t["/b_zero"]["sqnr_db"] is None and t["/b_zero"]["sqnr_status"] == "zero_signal"
assert t["/c_exact"]["sqnr_db"] is None and t["/c_exact"]["sqnr_status"] == "exact"
e = {x["tensor"]: x for x in r["errors"]}
assert sorted(e) == ["/d_name", "/e_blosc"], e
assert e["/d_name"]["status"] == "input_error" and "string" in e["/d_name"]["message"], e
assert "32001" in e["/e_blosc"]["message"], e
assert r["summary"]["results"][0]["tensors"] == 3
PY
exit 0
