#!/bin/sh
# quantized_table.sh — the analysis table shows each already-quantized tensor on a row of its
# own (SPEC §9 "Terminal output", §10): format, producer, zero% (elements at code +-0), max%
# (at +-6), the decoded block scales' smallest and largest, the counts decoding to 0 and to
# inf/NaN, and the per-tensor scale, each equal to the JSON report's quant object of the same
# run (ModelOpt, compressed-tensors, gpt-oss, GGUF with its hand-made special scales: 3 zero
# scales, 2^-127 .. 2^127); under COLUMNS=80 the producer column goes (the heading names it),
# names are elided and no line is longer than 80; COLUMNS=200 keeps the full rows; more than
# 24 quantized tensors show 24 rows and a line saying how many (-v all of them).
set -u
Q=testdata/quantized
[ -d "$Q/modelopt_nvfp4" ] || { echo "no fixtures"; exit 77; }
python3 -c 'import json' 2>/dev/null || { echo "skip: no python3"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/t" 2>/dev/null | head -30; exit 1; }

for input in "$Q/modelopt_nvfp4" "$Q/producer/ct_nvfp4" "$Q/ct_mxfp4" "$Q/gptoss_mxfp4" \
             testdata/gguf/model.gguf; do
    for cols in 200 80; do
        COLUMNS=$cols "$FP4DIAG" sqnr "$input" -v -o "$tmp/r.json" 2>"$tmp/t" || fail "$input: exit $?"
        python3 - "$tmp/r.json" "$tmp/t" "$cols" <<'PY' || fail "$input COLUMNS=$cols rows"
import json, sys
r = json.load(open(sys.argv[1]))
lines = open(sys.argv[2], encoding="utf-8").read().split("\n")
cols = int(sys.argv[3])
compact = cols == 80
q = [s for s in r["skipped"] if "quant" in s]
assert q, "no quantized tensor"
head = [i for i, l in enumerate(lines) if l.startswith("tensor ") and "zero%" in l]
assert len(head) == 1, lines
h = lines[head[0]].split()
want_h = ["tensor", "fmt" if compact else "format"] + ([] if compact else ["producer"]) + \
    ["zero%", "max%", "scale_min", "scale_max", "s0/nf" if compact else "s0/nonfin", "tensor_sc"]
assert h == want_h, h
prods = sorted({s["quant"]["producer"] for s in q})
heading = [l for l in lines if l.startswith("already quantized: ")]
assert len(heading) == 1 and (" by %s (" % ", ".join(prods)) in heading[0] or len(prods) > 1, heading
pf, gf = ("%.1f", "%.3g") if compact else ("%.2f", "%.4g")
g = lambda v: "-" if v is None else gf % v
for k, s in enumerate(q):
    row = lines[head[0] + 1 + k].split()
    x = s["quant"]
    n = sum(x["histogram"])
    want = [x["format"]] + ([] if compact else [x["producer"]]) + [
        pf % (100.0 * (x["histogram"][0] + x["histogram"][8]) / n),
        pf % (100.0 * (x["histogram"][7] + x["histogram"][15]) / n),
        g(x["scales"]["min"]), g(x["scales"]["max"]),
        "%d/%d" % (x["scales"]["zero"], x["scales"]["nonfinite"]), g(x["tensor_scale"])]
    assert row[1:] == want, (row, want)
    if not compact:
        assert row[0] == s["name"], (row[0], s["name"])
if compact:
    too_long = [l for l in lines if len(l) > cols]
    assert not too_long, too_long
PY
    done
done
# the GGUF special tensors: the hand-made scale bytes as known answers
COLUMNS=200 "$FP4DIAG" sqnr testdata/gguf/model.gguf -v -o "$tmp/r.json" 2>"$tmp/t" || fail "gguf: exit $?"
grep -Eq '^special\.nvfp4 +nvfp4 +gguf +12\.50 +12\.50 +0\.001953 +480 +3/0 +-$' "$tmp/t" || fail "special.nvfp4 row"
grep -Eq '^special\.mxfp4 +mxfp4 +gguf +12\.50 +12\.50 +5\.877e-39 +1\.701e\+38 +0/0 +-$' "$tmp/t" || fail "special.mxfp4 row"

# many quantized tensors: 24 rows without -v, a line saying so; -v all
python3 - "$tmp/many" <<'PY' || fail "making the many-tensor export"
import json, os, struct, sys
out = sys.argv[1]
os.makedirs(out)
hdr, blobs, off = {}, [], 0
for l in range(30):
    for nm, dt, shape, data in ((f"model.layers.{l}.mlp.up_proj.weight", "U8", [4, 16], bytes(range(64))),
                                (f"model.layers.{l}.mlp.up_proj.weight_scale", "F8_E4M3", [4, 2], bytes([0x38] * 8)),
                                (f"model.layers.{l}.mlp.up_proj.weight_scale_2", "F32", [], struct.pack("<f", 0.5))):
        hdr[nm] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
        blobs.append(data)
h = json.dumps(hdr).encode()
h += b" " * ((8 - len(h) % 8) % 8)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
json.dump({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16}},
          open(os.path.join(out, "hf_quant_config.json"), "w"))
PY
# the terminal table (no -v): a pseudo-terminal, as a user sees it
if command -v script >/dev/null 2>&1; then
    script -qec "stty cols 200 rows 50; '$FP4DIAG' sqnr '$tmp/many' 2>/dev/null" /dev/null \
        </dev/null | tr -d '\r' >"$tmp/t" 2>&1
    [ "$(grep -c '^model\.layers\.[0-9]*\.mlp\.up_proj\.weight  *nvfp4 ' "$tmp/t")" -eq 24 ] || fail "many: not 24 rows"
    grep -q '^(24 of 30 already-quantized tensors, in the model.s order; -v shows all' "$tmp/t" || fail "many: the line saying so"
    grep -Eq '^model\.layers\.0\.mlp\.up_proj\.weight +nvfp4 +modelopt +[0-9.]+ +[0-9.]+ +0\.5 +0\.5 +0/0 +0\.5$' "$tmp/t" \
        || fail "many: e4m3 0x38 (1.0) x weight_scale_2 0.5"
fi
COLUMNS=200 "$FP4DIAG" sqnr "$tmp/many" -v -o "$tmp/m.json" 2>"$tmp/t" || fail "many -v: exit $?"
[ "$(grep -c '^model\.layers\.[0-9]*\.mlp\.up_proj\.weight  *nvfp4 ' "$tmp/t")" -eq 30 ] || fail "many -v: not 30 rows"
exit 0
