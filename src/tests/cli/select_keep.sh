#!/bin/sh
# select_keep.sh — "which layers stay in high precision" on the planted checkpoint
# testdata/select (scripts/make_select_testdata.py; SPEC §9 "Keep in high precision"): the
# default run leaves the embedding out and says so, verdict.keep ranks the flushing down_proj
# and the super-weight o_proj ahead of every clean tensor with the flushed share that shows
# why, and --emit-exclude writes that list as ModelOpt exclude_modules JSON and an
# llm-compressor ignore: YAML block that parse (PyYAML when installed, else a strict line
# check). The verdict states its tie tolerance and its notes. Bad --emit-exclude values are
# usage errors and FILE is never the input. The emitted lists, written back where ModelOpt and
# llm-compressor keep them, are honoured as the checkpoint's own exclude list.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
M=testdata/select/model.safetensors
fail=0
"$FP4DIAG" sqnr "$M" -v -o "$tmp/r.json" --emit-exclude "modelopt:$tmp/ex.json" 2>"$tmp/table" \
    || { echo "sqnr exited $?"; cat "$tmp/table"; exit 1; }
"$FP4DIAG" sqnr "$M" -q -o "$tmp/r2.json" --emit-exclude "llm-compressor:$tmp/ex.yaml" \
    || { echo "sqnr (llm-compressor) exited $?"; exit 1; }
python3 - "$tmp/r.json" "$tmp/ex.json" "$tmp/ex.yaml" <<'PY' || fail=1
import json, re, sys
r = json.load(open(sys.argv[1]))
sk = {s["name"]: s["reason"] for s in r["skipped"]}
assert sk["model.embed_tokens.weight"].startswith("kept in high precision by recipe: embedding"), sk
v = r["verdict"]
k = v["keep"]
planted = ["model.layers.1.mlp.down_proj.weight", "model.layers.2.self_attn.o_proj.weight"]
assert k["tensors"] == planted, k["tensors"]
rk = k["ranking"]
assert [x["tensor"] for x in rk[:2]] == planted and all(x["keep"] for x in rk[:2])
assert all(not x["keep"] for x in rk[2:]), rk[2:]
assert all(x["by"] == "flushed" for x in rk[:2]), rk[:2]
# the statistic that shows why: far more flushed than the typical tensor, SQNR not lower
assert rk[0]["flushed"] > 0.8 and rk[1]["flushed"] > 0.2 and k["median_flushed"] < 0.1, k
assert all(x["sqnr_db"] > k["median_sqnr_db"] for x in rk[:2])
assert k["config"] == {"format": "e2m1", "scale": "fp32", "rht": False}, k["config"]
assert k["gain_db"] > 0 and k["pooled_flushed_kept"] < k["pooled_flushed"]
w = v["winner"]
assert w["tolerance_db"] == 0.05 and w["tie"] is False and w["margin_db"] >= 0.05
assert any("tensor-core" in n for n in v["notes"]) and any("gemm" in n for n in v["notes"])
# ModelOpt exclude_modules JSON
ex = json.load(open(sys.argv[2]))
want = ["lm_head", "model.layers.1.mlp.down_proj", "model.layers.2.self_attn.o_proj"]
assert ex == {"exclude_modules": want}, ex
# llm-compressor ignore: YAML
text = open(sys.argv[3]).read()
try:
    import yaml
    y = yaml.safe_load(text)
    assert y == {"ignore": want}, y
except ImportError:
    lines = text.splitlines()
    assert lines[0] == "ignore:" and len(lines) == 1 + len(want), lines
    for line, m in zip(lines[1:], want):
        assert re.fullmatch(r'  - "[A-Za-z0-9_.]+"', line) and json.loads(line[4:]) == m, line
PY
grep -q "^  keep in high precision (e2m1 fp32 scales; .*): 2 tensors$" "$tmp/table" \
    && grep -q "^    model.layers.1.mlp.down_proj.weight  *flushed  *[0-9.]*%  SQNR .* (flushed)$" "$tmp/table" \
    && grep -q "^  note: weights alone" "$tmp/table" \
    || { echo "table: keep lines or notes missing"; cat "$tmp/table"; fail=1; }
# round trip: the emitted list, put where ModelOpt (hf_quant_config.json exclude_modules) and
# llm-compressor (config.json quantization_config.ignore) keep it, is honoured by the default
# selection: those modules are kept by the checkpoint's list, nothing is left to keep
for fx in modelopt llm-compressor; do
    mkdir -p "$tmp/rt-$fx"
    ln -s "$PWD/$M" "$tmp/rt-$fx/model.safetensors"
done
python3 - "$tmp/ex.json" "$tmp/ex.yaml" "$tmp/rt-modelopt" "$tmp/rt-llm-compressor" <<'PY' || fail=1
import json, sys
mods = json.load(open(sys.argv[1]))["exclude_modules"]
json.dump({"quantization": {"quant_algo": "NVFP4", "exclude_modules": mods}},
          open(sys.argv[3] + "/hf_quant_config.json", "w"))
lines = open(sys.argv[2]).read().splitlines()[1:]
ign = [json.loads(l[4:]) for l in lines]
json.dump({"quantization_config": {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
                                   "ignore": ign}}, open(sys.argv[4] + "/config.json", "w"))
PY
for fx in modelopt llm-compressor; do
    "$FP4DIAG" sqnr "$tmp/rt-$fx/model.safetensors" --allow-external -q -o "$tmp/rt.json" \
        || { echo "round trip $fx: exit $?"; fail=1; continue; }
    python3 - "$tmp/rt.json" "$fx" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
src = "hf_quant_config.json exclude_modules" if sys.argv[2] == "modelopt" else "config.json ignore"
sk = {s["name"]: s["reason"] for s in r["skipped"]}
for n in ("lm_head.weight", "model.layers.1.mlp.down_proj.weight", "model.layers.2.self_attn.o_proj.weight"):
    assert sk[n].startswith("kept in high precision by " + src + ": "), (n, sk.get(n))
assert r["verdict"]["keep"]["tensors"] == [], r["verdict"]["keep"]["tensors"]
PY
done
# (the tie rule itself is unit-tested in test_verdict) bad values:
for bad in "foo:$tmp/x" "modelopt" "modelopt:" "llm-compressor:-"; do
    "$FP4DIAG" sqnr "$M" -q -o "$tmp/b.json" --emit-exclude "$bad" 2>"$tmp/err"
    [ $? -eq 2 ] || { echo "--emit-exclude $bad: wanted exit 2"; fail=1; }
done
"$FP4DIAG" sqnr "$M" -q -o "$tmp/b.json" --emit-exclude "modelopt:$tmp/b.json" 2>"$tmp/err"
[ $? -eq 2 ] || { echo "--emit-exclude onto -o: wanted exit 2"; fail=1; }
cp "$M" "$tmp/in.safetensors"
"$FP4DIAG" sqnr "$tmp/in.safetensors" -q -o "$tmp/b.json" --emit-exclude "modelopt:$tmp/in.safetensors" 2>"$tmp/err"
[ $? -eq 2 ] && cmp -s "$M" "$tmp/in.safetensors" || { echo "--emit-exclude onto the input: wanted exit 2, input intact"; fail=1; }
"$FP4DIAG" sqnr "$M" -q -o "$tmp/b.json" --shard 0/2 --emit-exclude "modelopt:$tmp/x.json" 2>"$tmp/err"
[ $? -eq 2 ] || { echo "--emit-exclude with --shard: wanted exit 2"; fail=1; }
# FILE where no file can be written (a directory, a missing directory): refused before anything
# is read (no report written), the message naming --emit-exclude, not -o
mkdir "$tmp/dir"
for bad in "$tmp/dir" "$tmp/nodir/x.json"; do
    rm -f "$tmp/b.json"
    "$FP4DIAG" sqnr "$M" -q -o "$tmp/b.json" --emit-exclude "modelopt:$bad" 2>"$tmp/err"
    rc=$?
    if [ $rc -ne 3 ] || [ -e "$tmp/b.json" ] || ! grep -q "^fp4diag sqnr: --emit-exclude $bad: " "$tmp/err"; then
        echo "--emit-exclude modelopt:$bad: wanted exit 3 before the run, naming --emit-exclude (exit $rc)"
        cat "$tmp/err"; fail=1
    fi
done
exit $fail
