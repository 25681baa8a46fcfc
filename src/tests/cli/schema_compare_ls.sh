#!/bin/sh
# schema_compare_ls.sh — `compare --json` validates against schema/compare.schema.json (sqnr
# reports with a drop, gemm reports, two recipes side by side with --ignore-key, --all), and
# `ls --json` against schema/ls.schema.json on HDF5, safetensors, sharded safetensors, PyTorch,
# NumPy, GGUF and already-quantized inputs; a schema that rejects nothing would pass, so one
# edited comparison and one edited listing must fail; `make install-schemas` installs all four
# schemas. Skips without python3 jsonschema/numpy.
set -u
python3 -c 'import jsonschema, referencing, numpy' 2>/dev/null ||
    { echo "skip: no python3 jsonschema/referencing/numpy"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
T=$PWD/testdata
R=$T/reports
python3 -c 'import numpy as np, sys; np.save(sys.argv[1], np.ones((4, 32), np.float32))' \
    "$tmp/w.npy" || fail "making w.npy"
n=0
cmpjson() { # cmpjson ARGS...: compare --json into $tmp/cN.json (exit 0 or 1 both fine)
    n=$((n + 1))
    "$FP4DIAG" compare --json "$@" >"$tmp/c$n.json" 2>"$tmp/err"; rc=$?
    [ "$rc" -le 1 ] || { cat "$tmp/err"; fail "compare $*: exit $rc"; }
    echo "$tmp/c$n.json compare" >>"$tmp/list"
}
cmpjson "$R/sample_sqnr.json" "$R/sample_sqnr_drop.json"
cmpjson --all "$R/sample_sqnr.json" "$R/sample_sqnr.json"
cmpjson "$R/sample_gemm.json" "$R/sample_gemm.json"
"$FP4DIAG" sqnr "$T/gpt_ckpt_small.h5" --format nvfp4 -q -o "$tmp/nv.json" || fail "sqnr nvfp4"
"$FP4DIAG" sqnr "$T/gpt_ckpt_small.h5" --format mxfp4 -q -o "$tmp/mx.json" || fail "sqnr mxfp4"
cmpjson --ignore-key scale,block "$tmp/nv.json" "$tmp/mx.json"
grep -q '"better":' "$tmp/c$n.json" || fail "two recipes: no overall.better"
for src in "$T/gpt_ckpt_small.h5" "$T/torch/small.safetensors" "$T/torch/sharded" \
           "$T/torch/small.pt" "$tmp/w.npy" "$T/gguf/model.gguf" "$T/quantized/ct_nvfp4"; do
    n=$((n + 1))
    "$FP4DIAG" ls --json "$src" >"$tmp/l$n.json" 2>"$tmp/err" || { cat "$tmp/err"; fail "ls $src"; }
    echo "$tmp/l$n.json ls" >>"$tmp/list"
done
python3 - "$tmp/list" <<'PY' || exit 1
import copy, json, sys, jsonschema
from referencing import Registry, Resource
rep = json.load(open("schema/report.schema.json"))
reg = Registry().with_resources([(rep["$id"], Resource.from_contents(rep))])
val = {k: jsonschema.Draft202012Validator(json.load(open("schema/%s.schema.json" % k)), registry=reg)
       for k in ("compare", "ls")}
for k, v in val.items():
    v.check_schema(v.schema)
docs = {}
for line in open(sys.argv[1]):
    path, kind = line.split()
    d = json.load(open(path))
    errs = sorted(val[kind].iter_errors(d), key=lambda e: list(e.absolute_path))
    if errs:
        e = errs[0]
        sys.exit("%s %s: %s at /%s" % (kind, path, e.message[:200], "/".join(map(str, e.absolute_path))))
    docs.setdefault(kind, d)
# the schemas can fail: an unknown verdict, a dataset without its dtype
bad = copy.deepcopy(docs["compare"]); bad["rows"][0]["verdict"] = "better"
if val["compare"].is_valid(bad): sys.exit("compare schema accepts verdict 'better'")
bad = copy.deepcopy(docs["ls"]); del bad["datasets"][0]["dtype"]
if val["ls"].is_valid(bad): sys.exit("ls schema accepts a dataset without dtype")
PY
# make install puts the schemas where validators find them
make -s --no-print-directory install-schemas DESTDIR="$tmp/inst" PREFIX=/usr >"$tmp/log" 2>&1 ||
    { cat "$tmp/log"; fail "make install-schemas"; }
for k in report audit compare ls; do
    cmp -s "schema/$k.schema.json" "$tmp/inst/usr/share/fp4diag/schema/$k.schema.json" ||
        fail "make install-schemas: $k.schema.json not installed"
done
exit 0
