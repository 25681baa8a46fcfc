#!/bin/sh
# report_schema_sources.sh — the report contract holds for every source: sqnr, bias, buckets
# and rht reports made from HDF5 (names /a/b), safetensors, NumPy .npy/.npz, PyTorch and GGUF
# inputs (names without a leading '/') and a ModelOpt NVFP4 checkpoint (its skipped entries'
# quant objects) validate against schema/report.schema.json, each with a
# provenance naming its input files, and so do the
# names themselves as each source spells them. Skips without python3 jsonschema or numpy.
set -u
python3 -c 'import jsonschema, numpy' 2>/dev/null || { echo "skip: no python3 jsonschema/numpy"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 - "$tmp" <<'PY' || fail "making the NumPy inputs"
import sys, numpy as np
r = np.random.default_rng(29)
np.save(sys.argv[1] + "/w.npy", (r.standard_normal((32, 64)) * 0.02).astype(np.float32))
np.savez(sys.argv[1] + "/m.npz", up=(r.standard_normal((16, 64))).astype(np.float32),
         down=r.standard_normal((64, 16)).astype(np.float16))
PY
T=$PWD/testdata
n=0
for src in "$T/gpt_ckpt_small.h5" "$T/torch/small.safetensors" "$T/torch/small.pt" \
           "$T/torch/sharded" "$tmp/w.npy" "$tmp/m.npz" "$T/gguf/model.gguf" \
           "$T/quantized/modelopt_nvfp4"; do
    for cmd in sqnr bias buckets rht; do
        n=$((n + 1))
        "$FP4DIAG" $cmd "$src" --all-tensors -q -o "$tmp/r$n.json" 2>"$tmp/err"; rc=$?
        # the GGUF file holds q8_0 tensors (not read: errors entries, exit 3) beside f32/f16 ones
        case "$rc:$src" in 0:* | 3:*.gguf) ;; *) cat "$tmp/err"; fail "$cmd $src: exit $rc" ;; esac
        echo "$tmp/r$n.json $cmd $src" >>"$tmp/list"
    done
done
python3 - "$tmp/list" <<'PY' || exit 1
import json, sys, jsonschema
v = jsonschema.Draft202012Validator(json.load(open("schema/report.schema.json")))
plain = quant = 0
for line in open(sys.argv[1]):
    path, cmd, src = line.split(None, 2)
    r = json.load(open(path))
    errs = sorted(v.iter_errors(r), key=lambda e: list(e.absolute_path))
    if errs:
        e = errs[0]
        sys.exit("%s %s: %s at /%s" % (cmd, src.strip(), e.message[:200],
                                        "/".join(map(str, e.absolute_path))))
    if not r["tensors"]:
        sys.exit("%s %s: no tensor analysed" % (cmd, src.strip()))
    # provenance: the input's files, each with its size and fingerprint
    ins = r["provenance"]["inputs"]
    if not ins or any(i["size"] <= 0 for i in ins):
        sys.exit("%s %s: provenance.inputs %r" % (cmd, src.strip(), ins))
    plain += sum(not t["name"].startswith("/") for t in r["tensors"])
    quant += sum("quant" in s for s in r["skipped"])
# the names that once failed the schema ('lm_head.weight' does not match '^/') are covered
if plain == 0:
    sys.exit("no report had a name without a leading '/': the test checks nothing new")
# already-quantized tensors' skipped entries carry their codes and scales (quant)
if quant == 0:
    sys.exit("no skipped entry with a quant object: the test checks nothing new")
PY
exit 0
