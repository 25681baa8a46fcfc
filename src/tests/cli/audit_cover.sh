#!/bin/sh
# audit_cover.sh — `fp4diag audit` leaves no tensor of QUANTIZED out silently (SPEC §11): every
# tensor `ls` lists is audited ("tensors"), an errors entry, or in "skipped" with its reason and
# format. A GGUF tensor of an unknown type id (999) is an errors entry naming it (exit 3) and
# other GGUF block types (q8_0, q4_0) are skipped; the FP8 down_proj of ModelOpt's
# MIXED_PRECISION export (and its scales) is skipped as FP8; the table says "skipped N tensors"
# naming them; --shard parts merge to the single run's report (the errors entry of share 0,
# the skipped list the same in every part); a tensor of SOURCE that QUANTIZED lacks is
# skipped "in SOURCE only" (audit_gate_up.sh and audit_gptoss_original.sh: never one a pairing
# reads under another name); compare reads audits with "skipped"; the reports
# say their device and follow schema/audit.schema.json.
set -u
G=testdata/gguf
P=testdata/quantized/producer
[ -f "$G/model.gguf" ] && [ -d "$P/modelopt_mixed" ] || { echo "no $G or $P"; exit 77; }
python3 -c 'import json' 2>/dev/null || { echo "python3 not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/err" 2>/dev/null | head -5; exit 1; }

# every name of `ls --json` is in exactly one of tensors, errors, skipped; $1 ls, $2 audit
covers() {
    python3 - "$1" "$2" <<'PY'
import json, sys
names = [d["name"] for d in json.load(open(sys.argv[1]))["datasets"]]
r = json.load(open(sys.argv[2]))
got = ([t["name"] for t in r["tensors"]] + [e["tensor"] for e in r["errors"]] +
       [s["name"] for s in r["skipped"]])
assert sorted(got) == sorted(names), (sorted(set(names) - set(got)), sorted(got))
assert [s["name"] for s in r["skipped"]] == sorted(s["name"] for s in r["skipped"]), r["skipped"]
PY
}

# GGUF: blk.0.ffn_up.weight (q8_0) made type 999
python3 - "$G/model.gguf" "$tmp/bad.gguf" <<'PY' || fail "patch"
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
name = b"blk.0.ffn_up.weight"
i = b.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
t = i + 4 + 8 * struct.unpack_from("<I", b, i)[0]
assert struct.unpack_from("<I", b, t)[0] == 8  # q8_0
struct.pack_into("<I", b, t, 999)
open(sys.argv[2], "wb").write(b)
PY
"$FP4DIAG" ls --json "$G/model.gguf" >"$tmp/ls.json" || fail "ls exited $?"
"$FP4DIAG" audit --device cpu "$G/source.safetensors" "$G/model.gguf" -o "$tmp/g.json" \
    >"$tmp/g.out" 2>"$tmp/err"
[ $? -eq 3 ] || fail "gguf audit: exit not 3 (special.* have no source)"
covers "$tmp/ls.json" "$tmp/g.json" || fail "gguf: a tensor is nowhere in the report"
python3 - "$tmp/g.json" <<'PY' || fail "gguf skipped"
import json, sys
r = json.load(open(sys.argv[1]))
sk = {s["name"]: s for s in r["skipped"]}
assert sk["blk.0.ffn_up.weight"]["format"] == "q8_0", sk
assert sk["blk.0.ffn_up.weight"]["reason"] == "GGUF q8_0 blocks: audit covers the 4-bit float types mxfp4 and nvfp4", sk
assert sk["blk.0.ffn_up.weight"]["shape"] == [64, 128], sk
assert sk["blk.0.attn_output.weight"]["format"] == "q4_0", sk
assert sk["blk.0.attn_v.weight"] == {"name": "blk.0.attn_v.weight", "shape": [32, 128], "dtype": "bf16",
                                     "format": None, "reason": "not quantized (bf16)"}, sk
assert r["device"] == "cpu", r.get("device")
PY
grep -q '^skipped 6 tensors (not audited, not pooled): blk.0.attn_output.weight \[GGUF q4_0 blocks: audit covers the 4-bit float types mxfp4 and nvfp4\], blk.0.ffn_up.weight \[GGUF q8_0 blocks: .*\], blk.0.attn_k.weight \[not quantized (f16)\], blk.0.attn_q.weight \[.*\], \.\.\. (the JSON report.s "skipped" lists all)$' "$tmp/g.out" ||
    { cat "$tmp/g.out"; fail "gguf table: skipped line"; }

"$FP4DIAG" ls --json "$tmp/bad.gguf" >"$tmp/lsb.json" || fail "ls bad exited $?"
"$FP4DIAG" audit "$G/source.safetensors" "$tmp/bad.gguf" 'blk.0.ffn_*' -o "$tmp/b.json" \
    >"$tmp/b.out" 2>"$tmp/err"; rc=$?
[ $rc -eq 3 ] || fail "type 999: exit $rc, expected 3"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "bad.gguf: blk.0.ffn_up.weight: unknown ggml type 999" "$tmp/err" ||
    fail "type 999: the error does not name the file and tensor"
grep -q "^error: .*bad.gguf: blk.0.ffn_up.weight: unknown ggml type 999$" "$tmp/b.out" || fail "type 999: table"
python3 - "$tmp/b.json" <<'PY' || fail "type 999 report"
import json, sys
r = json.load(open(sys.argv[1]))
assert sorted(t["name"] for t in r["tensors"]) == ["blk.0.ffn_down.weight", "blk.0.ffn_gate.weight"], r["tensors"]
assert [e["tensor"] for e in r["errors"]] == ["blk.0.ffn_up.weight"], r["errors"]
assert r["errors"][0]["status"] == "input_error", r["errors"]
assert r["skipped"] == [], r["skipped"]
PY
"$FP4DIAG" audit "$G/source.safetensors" "$tmp/bad.gguf" -q -o "$tmp/bs.json" 2>/dev/null
covers "$tmp/lsb.json" "$tmp/bs.json" || fail "type 999: a tensor is nowhere in the report"

# --shard parts merge to the single run's report
for i in 0 1; do
    "$FP4DIAG" audit "$G/source.safetensors" "$tmp/bad.gguf" --shard $i/2 -q -o "$tmp/p$i.json" 2>/dev/null
    [ $? -eq 3 ] || fail "share $i exit"
done
"$FP4DIAG" merge "$tmp/p0.json" "$tmp/p1.json" -o "$tmp/m.json" -v >/dev/null 2>"$tmp/m.out"
[ $? -eq 3 ] || fail "merge exit"
grep -v '"seconds"\|"time"' "$tmp/bs.json" | sed "s|$tmp/bs.json|OUT|" >"$tmp/x"
grep -v '"seconds"\|"time"' "$tmp/m.json" | sed "s|$tmp/m.json|OUT|" >"$tmp/y"
cmp -s "$tmp/x" "$tmp/y" || { diff "$tmp/x" "$tmp/y" | head; fail "merged report differs from the single run's"; }
grep -q '^skipped 5 tensors (not audited; the JSON report.s "skipped" lists them)$' "$tmp/m.out" || { cat "$tmp/m.out"; fail "merge table"; }
# a part whose skipped list was edited is refused
python3 - "$tmp/p1.json" "$tmp/p1e.json" <<'PY' || fail "edit"
import json, sys
r = json.load(open(sys.argv[1])); r["skipped"] = r["skipped"][1:]; json.dump(r, open(sys.argv[2], "w"))
PY
"$FP4DIAG" merge "$tmp/p0.json" "$tmp/p1e.json" -o "$tmp/m2.json" 2>"$tmp/err"; rc=$?
[ $rc -eq 3 ] && grep -q "skipped list" "$tmp/err" || fail "an edited skipped list merged (exit $rc)"
# parts of both devices: the merged report says so
python3 - "$tmp/p1.json" "$tmp/p1c.json" <<'PY' || fail "edit"
import json, sys
r = json.load(open(sys.argv[1]))  # made on cpu, or on cuda where --device auto finds a GPU
r["device"] = "cuda" if r["device"] == "cpu" else "cpu"; json.dump(r, open(sys.argv[2], "w"), indent=1)
PY
"$FP4DIAG" merge "$tmp/p0.json" "$tmp/p1c.json" -o "$tmp/m3.json" 2>/dev/null
python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['device']; assert d == 'cpu+cuda', d" "$tmp/m3.json" ||
    fail "merge of cpu and cuda parts"

# ModelOpt MIXED_PRECISION: the FP8 down_proj, its scales and the bf16 tensors skipped
M=model.layers.0.mlp.down_proj
"$FP4DIAG" ls --json "$P/modelopt_mixed" >"$tmp/lsm.json" || fail "ls mixed"
"$FP4DIAG" audit "$P/source" "$P/modelopt_mixed" -o "$tmp/x.json" >"$tmp/x.out" 2>"$tmp/err" ||
    fail "mixed: exit $?"
covers "$tmp/lsm.json" "$tmp/x.json" || fail "mixed: a tensor is nowhere in the report"
python3 - "$tmp/x.json" "$M" <<'PY' || fail "mixed: FP8 not skipped"
import json, sys
r = json.load(open(sys.argv[1])); m = sys.argv[2]
sk = {s["name"]: s for s in r["skipped"]}
w = sk[m + ".weight"]
assert w["reason"] == "FP8 (E4M3) export: audit covers 4-bit formats", w
assert w["format"] == "fp8_e4m3" and w["dtype"] == "f8_e4m3" and w["shape"] == [64, 128], w
assert sk[m + ".weight_scale"]["reason"].startswith("the scale of the FP8 E4M3 .weight"), sk
assert sk[m + ".input_scale"]["reason"].startswith("the input (activation) scale of the FP8"), sk
assert sk["model.norm.weight"]["reason"] == "not quantized (bf16)", sk
assert len(r["tensors"]) == 6 and r["errors"] == [], r
PY
grep -q "^skipped 8 tensors (not audited, not pooled): $M.weight \[FP8 (E4M3) export: audit covers 4-bit formats\], " "$tmp/x.out" ||
    { cat "$tmp/x.out"; fail "mixed table: skipped line"; }
# an exact selection lists only what it selects
"$FP4DIAG" audit "$P/source" "$P/modelopt_mixed" 'model.layers.0.mlp.*' -q -o "$tmp/xs.json" 2>"$tmp/err" ||
    fail "mixed selection: exit $?"
python3 - "$tmp/xs.json" "$M" <<'PY' || fail "mixed selection"
import json, sys
r = json.load(open(sys.argv[1])); m = sys.argv[2]
assert sorted(s["name"] for s in r["skipped"]) == [m + ".input_scale", m + ".weight", m + ".weight_scale"], r["skipped"]
PY
# a tensor of SOURCE that QUANTIZED lacks (and does not pair otherwise): "in SOURCE only" (numpy writes it)
if python3 -c 'import numpy' 2>/dev/null; then
    mkdir "$tmp/src" && cp "$P/source/config.json" "$tmp/src/" || fail "mkdir"
    PYTHONPATH="$PWD/scripts" python3 - "$P/source/model.safetensors" "$tmp/src/model.safetensors" <<'PY' || fail "extra source"
import json, struct, sys
import numpy as np
import make_quantized_testdata as m
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); h.pop("__metadata__", None)
# the source's tensors as stored, and one more
t = [(k, v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in h.items()]
t.append(m.bf16("model.layers.0.mlp.extra_proj.weight", np.ones((4, 64), np.float32)))
m.write_st(sys.argv[2], t)
PY
    "$FP4DIAG" audit "$tmp/src" "$P/modelopt_nvfp4" -q -o "$tmp/so.json" 2>"$tmp/err" || fail "source only: exit $?"
    python3 - "$tmp/so.json" <<'PY' || fail "source only"
import json, sys
r = json.load(open(sys.argv[1]))
so = [s for s in r["skipped"] if s["reason"].startswith("in SOURCE only")]
assert so == [{"name": "model.layers.0.mlp.extra_proj.weight", "shape": [4, 64], "dtype": "bf16", "format": None,
               "reason": "in SOURCE only: QUANTIZED has no tensor of this name"}], so
assert len(r["tensors"]) == 7 and r["errors"] == [], r
PY
fi

# compare reads audits with a skipped list
"$FP4DIAG" compare "$tmp/x.json" "$tmp/x.json" >"$tmp/c.out" 2>"$tmp/err" || fail "compare: exit $?"
grep -q '^audit reports: ' "$tmp/c.out" || { cat "$tmp/c.out"; fail "compare"; }

# every report against schema/audit.schema.json (when jsonschema is installed)
python3 - "$tmp" schema/audit.schema.json <<'PY' || fail "schema"
import glob, json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)
s = json.load(open(sys.argv[2]))
for f in glob.glob(sys.argv[1] + "/*.json"):
    if "/ls" in f:
        continue
    jsonschema.validate(json.load(open(f)), s)
PY
exit 0
