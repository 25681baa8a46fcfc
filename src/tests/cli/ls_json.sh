#!/bin/sh
# ls_json.sh — `ls --json` is valid JSON with one entry per dataset, naming bf16 and gzip.
set -u
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "no $F"; exit 77; }
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
"$FP4DIAG" ls --json "$F" >"$tmp" || { echo "ls --json exited $?"; exit 1; }
python3 -m json.tool "$tmp" >/dev/null || { echo "not JSON"; exit 1; }
python3 - "$tmp" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "ls" and d["tool"]["name"] == "fp4diag", d
ds = {e["name"]: e for e in d["datasets"]}
assert sorted(ds) == ["/proj/dy", "/proj/w", "/proj/x", "/qkv/dy", "/qkv/w", "/qkv/x"], sorted(ds)
x = ds["/qkv/x"]
assert x["shape"] == [1024, 256] and x["dtype"] == "bf16" and x["byte_order"] == "le", x
assert x["chunks"] == [256, 256] and x["filters"] == ["deflate(4)"], x
assert x["logical_bytes"] == 1024 * 256 * 2 and 0 < x["stored_bytes"] < x["logical_bytes"], x
assert x["exact_fp32"] is True and x["problem"] is None, x
assert ds["/qkv/w"]["dtype"] == "f32", ds["/qkv/w"]
PY
exit 0
