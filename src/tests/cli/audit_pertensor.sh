#!/bin/sh
# audit_pertensor.sh — issue 27: a ModelOpt NVFP4 export whose weight_scale_2 comes from each
# weight's own amax, not from its fused q/k/v group's (lib/mk_nvfp4.py --pertensor). Its block
# bytes are the rule's GIVEN the stored per-tensor scale, so "scale same%" is 100 for every
# tensor (not 0); the per-tensor scale's own difference is said once per tensor, on the
# "global scale:" line, with both numbers: the rule's from the group amax (per fused group)
# and the stored one, the rule's from the tensor's own amax (per tensor). Both pinned against
# NumPy's fp32(amax / 2688) from the bf16 source.
. src/tests/cli/lib/quantized.sh
python3 src/tests/cli/lib/mk_nvfp4.py "$tmp/p" --pertensor >"$tmp/amax" || fail "generator"
"$FP4DIAG" audit "$tmp/p/source" "$tmp/p/export" -o "$tmp/p.json" >"$tmp/table" || fail "audit exited $?"
python3 - "$tmp/p.json" "$tmp/amax" "$tmp/table" <<'PY' || { cat "$tmp/table"; fail "per-tensor global scales"; }
import json, re, sys
import numpy as np
r = json.load(open(sys.argv[1]))
amax = {}
for line in open(sys.argv[2]):
    name, g, own = line.split()
    f = lambda s: np.float32(float(re.sub(r"np\.float32\((.*)\)", r"\1", s)))
    amax[name] = (f(g), f(own))
table = open(sys.argv[3]).read().splitlines()
assert r["pooled"]["scale_match_frac"] == 1, r["pooled"]
lines = [l for l in table if l.startswith("global scale: ")]
assert len(lines) == 2, lines  # q and v: k holds the group's amax, o is in no group
for t in r["tensors"]:
    g, own = amax[t["name"]]
    gs = t["global_scale"]
    assert t["scale_match_frac"] == 1 and t["scale_byte_diff"][8] == t["scale_bytes"], t["name"]
    # fp32 values, compared as fp32 (the JSON prints 15 significant digits)
    assert np.float32(gs["stored"]) == np.float32(own / np.float32(2688)), gs
    assert np.float32(gs["rule"]) == np.float32(g / np.float32(2688)), gs
    assert gs["group_amax"] == float(g), gs
    if own != g:
        assert not gs["match"], gs
        want = "global scale: %s: stored %.9g, the modelopt rule gives %.9g from the qkv amax %.9g " \
               "(one scale per fused group); the stored one is the rule's from this tensor's own " \
               "amax %.9g (per tensor); block scales judged under the stored one" % (
                   t["name"], np.float32(own / np.float32(2688)), np.float32(g / np.float32(2688)),
                   g, own)
        assert want in lines, (want, lines)
    else:
        assert gs["match"], gs
assert not [l for l in table if l.startswith("scale bytes: ")], table
PY
exit 0
