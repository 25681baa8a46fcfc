#!/bin/sh
# merge_positions.sh — merge takes no number a part did not compute and no position twice
# (issue 26): an audit part whose visible per-tensor fields (scale_match_frac, the histogram,
# the scale-byte differences, the per-tensor scale's match, the layout verdict) or whose
# exact state (scale_match, the pooled flag) disagree with each other is refused with one line
# naming the part, the tensor and the field; in audit, analysis and gemm parts a position
# given twice, one outside the part's shard.assigned, one both a result and an errors entry,
# and a tensor under another position's name (analysis: input.datasets; gemm errors:
# shard.layers; audit: a name other than shard.names lists there) are refused; nothing is written then.
. src/tests/cli/lib/parts.sh
. src/tests/cli/lib/edit_parts.sh
P=$PWD/testdata/quantized
[ -d "$P/source" ] && [ -d "$P/modelopt_nvfp4" ] || { echo "no $P"; exit 77; }
cd "$tmp" || exit 1
for i in 0 1; do
    "$FP4DIAG" audit "$P/source" "$P/modelopt_nvfp4" --shard $i/2 -q -o a$i.json 2>/dev/null ||
        fail "audit share $i"
    "$FP4DIAG" gemm "$G" --layers 4 -q --shard $i/2 -o g$i.json 2>/dev/null || fail "gemm share $i"
    "$FP4DIAG" sqnr "$C" /blocks/0 --format e2m1 -q --shard $i/2 -o s$i.json 2>/dev/null ||
        fail "sqnr share $i"
done
for k in a g s; do
    "$FP4DIAG" merge ${k}0.json ${k}1.json -o ok.json 2>err || { cat err; fail "unedited $k parts refused"; }
done
shown() { echo "a0e.json: model.layers.0.self_attn.q_proj.weight: the numbers shown are not what its exact sums give (\"$1\""; }
# audit: the exact state and the visible fields, one edit each
edit a0.json a0e.json 'd["shard"]["tensors"][0]["scale_match"] = 999'
bad scale_match "$(shown scale_match)" a0e.json a1.json
edit a0.json a0e.json 'd["shard"]["tensors"][0]["scale_match"] = 100'
bad scale_match_frac "$(shown scale_match_frac)" a0e.json a1.json
edit a0.json a0e.json 'd["shard"]["tensors"][0]["pooled"] = False'
bad pooled "$(shown 'shard.tensors\[\].pooled')" a0e.json a1.json
edit a0.json a0e.json 't["scale_match_frac"] = 0.5'
bad visible_scale_match "$(shown scale_match_frac)" a0e.json a1.json
edit a0.json a0e.json 't["nonnearest_frac"] = 0.5'
bad visible_nonnearest "$(shown nonnearest_frac)" a0e.json a1.json
edit a0.json a0e.json 't["export"]["histogram"] = [0] * 16'
bad histogram "$(shown export.histogram)" a0e.json a1.json
edit a0.json a0e.json 'h = t["requant"]["histogram"]; h[6] += 1; h[7] -= 1'
bad rq_buckets "$(shown requant.bucket_ratio_15)" a0e.json a1.json
# (+0 and -0 are one bucket in B15 and B8: the histogram's move leaves its bucket use as it was)
edit a0.json a0e.json 'h = t["export"]["histogram"]; h[0] += 1; h[8] -= 1
t["scale_byte_diff"][8] -= 1; t["scale_byte_diff"][9] += 1'
bad diff "$(shown scale_byte_diff)" a0e.json a1.json
edit a0.json a0e.json 't["global_scale"]["stored"] = 1.0'
bad global_scale "$(shown global_scale.match)" a0e.json a1.json
edit a0.json a0e.json 't["layout_check"]["fits"] = "nibble order swapped"'
bad fits "$(shown layout_check.fits)" a0e.json a1.json
edit a0.json a0e.json 't["layout_check"]["as_declared"] = False'
bad as_declared "$(shown layout_check.as_declared)" a0e.json a1.json
edit a0.json a0e.json 't["layout_check"]["hypotheses"][0]["sqnr_db"] = 30.0'
bad hypotheses "$(shown layout_check.hypotheses)" a0e.json a1.json
edit a0.json a0e.json 't["shape"] = [64, 64]'
bad shape "$(shown shape)" a0e.json a1.json
edit a0.json a0e.json 't["quant"]["block"] = 32'
bad block "$(shown quant)" a0e.json a1.json
# the pool flag and the verdict edited together: the SQNRs still say "as declared"
edit a0.json a0e.json 'd["shard"]["tensors"][0]["pooled"] = False
t["layout_check"]["as_declared"] = False; t["layout_check"]["fits"] = "nibble order swapped"'
bad verdict "$(shown layout_check.fits)" a0e.json a1.json
# positions: twice, outside the part's share, a result and an errors entry at once
edit a0.json a0e.json 'd["shard"]["tensors"][1]["index"] = d["shard"]["tensors"][0]["index"]'
bad audit_dup "a0e.json: position 0 is given twice (a duplicated index" a0e.json a1.json
edit a0.json a0e.json 'd["shard"]["tensors"][0]["index"] = 3'
bad audit_foreign "a0e.json: a tensor at position 3, which is not in its shard.assigned" a0e.json a1.json
edit a0.json a0e.json 'd["shard"]["errors"].append(0)
d["errors"].append({"tensor": t["name"], "status": "input_error", "message": "x"})'
bad audit_both "a0e.json: position 0 is given twice (both a result and an errors entry" a0e.json a1.json
edit s0.json s0e.json 'x = d["shard"]["tensors"]; x[1]["index"] = x[0]["index"]'
bad sqnr_dup "s0e.json: position 0 is given twice" s0e.json s1.json
edit s0.json s0e.json 'd["shard"]["tensors"][0]["index"] = 1'
bad sqnr_foreign "s0e.json: a tensor at position 1, which is not in its shard.assigned" s0e.json s1.json
edit s0.json s0e.json 'd["shard"]["errors"].append(0)
d["errors"].append({"tensor": t["name"], "status": "input_error", "message": "x"})'
bad sqnr_both "s0e.json: position 0 is given twice (both a result and an errors entry" s0e.json s1.json
# two tensors of one part with their names swapped: each under the other's position
edit s0.json s0e.json 'x = d["tensors"]; x[0]["name"], x[1]["name"] = x[1]["name"], x[0]["name"]'
bad sqnr_name "s0e.json: tensor .* at position 0, where the selection (input.datasets) lists" s0e.json s1.json
# audit: one tensor's name on another position (its numbers are its own: only the name moved)
edit a0.json a0e.json 'd["tensors"][1]["name"] = t["name"]'
bad audit_name "a0e.json: tensor model.layers.0.self_attn.q_proj.weight at position 1, where the selection (shard.names) lists" a0e.json a1.json
# gemm: an errors entry naming another layer than the selection lists at its position
edit g1.json g1e.json 'd["shard"]["partials"] = []; d["layers"] = []
d["shard"]["errors"] = [0]; d["errors"] = [{"tensor": "/other", "status": "input_error", "message": "x"}]'
bad gemm_error_name "g1e.json: errors entry at position 0: \"tensor\" is not the layer the selection lists" g0.json g1e.json
edit g1.json g1e.json 'd["shard"]["partials"][0]["index"] = 1'
bad gemm_foreign "g1e.json: a layer at position 1, which is not in its shard.assigned" g0.json g1e.json
exit 0
