#!/bin/sh
# gemm_recipes.sh — `gemm` on two real layers under the ufp4 and e2m1 recipes: all three paths
# with their shapes, the recipe's format/RHT/SR per operand, sane SQNRs, SR reproducible by seed.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
for r in ufp4 e2m1; do
    "$FP4DIAG" gemm "$F" /qkv /proj --recipe "$r" -q -o "$tmp/$r.json" || { echo "$r: exit $?"; exit 1; }
done
"$FP4DIAG" gemm "$F" /qkv --recipe ufp4 -q >"$tmp/same.json" || exit 1
"$FP4DIAG" gemm "$F" /qkv --recipe ufp4 --seed 7 -q >"$tmp/seed7.json" || exit 1
"$FP4DIAG" gemm "$F" /qkv --recipe e2m1 --scale nvfp4 --weight-2d --path fprop,dgrad -q \
    >"$tmp/nvfp4.json" || { echo "nvfp4: exit $?"; exit 1; }
python3 - "$tmp" <<'PY' || exit 1
import json, sys, math
t = sys.argv[1]
shapes = {"/qkv": (1024, 768, 256), "/proj": (1024, 256, 256)}  # M, N, K
for recipe, fmt, rht_paths in (("ufp4", "e1m2", {"fprop", "dgrad", "wgrad"}), ("e2m1", "e2m1", {"wgrad"})):
    d = json.load(open(f"{t}/{recipe}.json"))
    assert d["command"] == "gemm" and d["schema"] == "fp4diag.report/1", d["command"]
    assert d["config"]["recipe"] == recipe and d["config"]["formats"] == [fmt], d["config"]
    assert [l["name"] for l in d["layers"]] == ["/qkv", "/proj"]
    for l in d["layers"]:
        M, N, K = shapes[l["name"]]
        assert l["recipe"] == recipe
        want = {"fprop": ([M, N], K, "x", "w"), "dgrad": ([M, K], N, "dy", "w"),
                "wgrad": ([N, K], M, "dy", "x")}
        assert [p["path"] for p in l["paths"]] == ["fprop", "dgrad", "wgrad"]
        for p in l["paths"]:
            shape, contr, a, b = want[p["path"]]
            assert p["shape"] == shape and p["contraction"] == contr, (l["name"], p["path"], p["shape"])
            assert p["sqnr_status"] == "ok" and 8 < p["sqnr_db"] < 40, (recipe, l["name"], p["path"], p["sqnr_db"])
            assert 0.9 < p["eta"] < 1.1 and abs(p["alpha_product"] - p["alpha_a"] * p["alpha_b"]) < 1e-12
            ops = p["operands"]
            assert [o["name"] for o in ops] == [a, b] and [o["role"] for o in ops] == ["a", "b"]
            for o in ops:
                assert o["format"] == fmt and o["scale"] == "fp32" and o["block"] == 16
                assert o["rounding"] == ("sr" if o["name"] == "dy" else "rtne"), o
                assert (o["rht"] is not False) == (p["path"] in rht_paths), (p["path"], o["rht"])
                if o["rht"]:
                    assert o["rht"] == {"size": 16, "signs": "te"}
                assert 10 < o["sqnr_db"] < 40
    s = {p["path"]: p for p in d["summary"]["paths"]}
    assert sorted(s) == ["dgrad", "fprop", "wgrad"] and s["fprop"]["layers"] == 2
# SR: the same seed reproduces every number; another seed moves the SR paths only
a = json.load(open(f"{t}/ufp4.json"))["layers"][0]["paths"]
b = json.load(open(f"{t}/same.json"))["layers"][0]["paths"]
c = json.load(open(f"{t}/seed7.json"))["layers"][0]["paths"]
assert a == b
assert a[0] == c[0], "fprop has no SR operand"
assert a[1]["sqnr_db"] != c[1]["sqnr_db"] and a[2]["sqnr_db"] != c[2]["sqnr_db"]
# full NVFP4 recipe: 16x16 tiles on W only
n = json.load(open(f"{t}/nvfp4.json"))
assert n["config"]["weight_2d"] is True
for p in n["layers"][0]["paths"]:
    for o in p["operands"]:
        assert o["scale"] == "nvfp4" and o["weight_2d"] == (o["name"] == "w"), o
        assert o["rht"] is False
PY
exit 0
