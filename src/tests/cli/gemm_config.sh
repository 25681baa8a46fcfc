#!/bin/sh
# gemm_config.sh — a gemm report's config says what the recipe decided: "rounding" per operand
# tensor {x, w, dy} and "rht" per path {fprop, dgrad, wgrad}; the report validates.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
python3 -c 'import jsonschema' 2>/dev/null || { echo "no python3 jsonschema"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
run() { # run NAME ARGS...
    n=$1; shift
    "$FP4DIAG" gemm "$F" /qkv -q "$@" >"$tmp/$n.json" || { echo "gemm $*: exit $?"; exit 1; }
}
run ufp4
run e2m1 --recipe e2m1
run custom --recipe custom --format INT4 --rht-scope wgrad --sr all
python3 - "$tmp" schema/report.schema.json <<'PY' || exit 1
import json, sys, jsonschema
d, schema = sys.argv[1], json.load(open(sys.argv[2]))
want = {
    "ufp4": ({"x": "rtne", "w": "rtne", "dy": "sr"}, {"fprop": "on", "dgrad": "on", "wgrad": "on"}),
    "e2m1": ({"x": "rtne", "w": "rtne", "dy": "sr"}, {"fprop": "off", "dgrad": "off", "wgrad": "on"}),
    "custom": ({"x": "sr", "w": "sr", "dy": "sr"}, {"fprop": "off", "dgrad": "off", "wgrad": "on"}),
}
for n, (rnd, rht) in want.items():
    r = json.load(open(f"{d}/{n}.json"))
    jsonschema.Draft202012Validator(schema).validate(r)
    c = r["config"]
    assert c["rounding"] == rnd, (n, c["rounding"])
    assert c["rht"] == rht, (n, c["rht"])
    # the per-operand entries agree with the config
    for p in r["layers"][0]["paths"]:
        for o in p["operands"]:
            assert o["rounding"] == rnd[o["name"]], (n, p["path"], o)
            assert (o["rht"] is not False) == (rht[p["path"]] == "on"), (n, p["path"], o)
assert json.load(open(f"{d}/custom.json"))["config"]["formats"] == ["int4"]
PY
exit 0
