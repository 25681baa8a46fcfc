#!/bin/sh
# merge_fields.sh — merge copies no field of a part it has not checked (hostile input): an
# analysis tensor's shape that does not hold the elements its exact sums count, an axis that is
# not the one --axis gives its rank, a dtype no reader gives; a shape (its dims permuted) or
# dtype other than the one shard.shapes / shard.dtypes list at its position (audit: the shape;
# gemm: an input's, shard.inputs), lists that differ between parts or are missing (an older
# part: make the shares again); an audit tensor's zero_blocks
# other than the part's exact state, a special scale byte its finite export sums rule out, a
# quant.layout the reader never writes, a layout hypothesis' SQNR other than its exact sums
# give or its label out of the run's order; a gemm layer's recipe, an input's source (a file the
# shares did not fingerprint), shape or dtype, a path's shape or contraction, an operand's
# configuration or its SQNR or tensor_amax other than its exact sums give, a key no run writes;
# an audit tensor or errors entry under another name than shard.names lists at its position;
# an audit or gemm part without a top-level key the merged report is made from, or with one
# its run does not write — each is refused with one line naming the part, the
# tensor and the field; nothing is written on a refusal; the unedited parts merge. A part's
# provenance (forged inputs, version, build) never reaches the merged report, and a
# fingerprint's "hashed" must be what its size samples.
. src/tests/cli/lib/parts.sh
. src/tests/cli/lib/edit_parts.sh
cd "$tmp" || exit 1
for i in 0 1; do
    "$FP4DIAG" sqnr "$C" --format e2m1 -q --shard $i/2 -o s$i.json 2>/dev/null ||
        fail "sqnr share $i"
done
"$FP4DIAG" merge s0.json s1.json -o ok.json 2>err || { cat err; fail "unedited sqnr parts refused"; }
# analysis parts: shape, axis, dtype
edit s0.json a_shape.json 'd["tensors"][0]["shape"] = [1, 7]'
bad shape "a_shape.json: .*: \"shape\" does not hold the [0-9]* elements" a_shape.json s1.json
edit s0.json a_shape2.json 't = d["tensors"][0]; t["shape"] = t["shape"][::-1] + [1]'
"$FP4DIAG" merge a_shape2.json s1.json -o x.json 2>/dev/null &&
    python3 -c 'import json,sys; sys.exit(json.load(open("x.json"))["tensors"][0]["shape"][-1] == 1)' &&
    fail "a shape of other dims but the same product copied"
# the dims permuted keep their product and rank (and the block count when both are multiples
# of the block): the shape must be the one described at its position before the split
edit s0.json a_perm.json 't = d["tensors"][0]; t["shape"] = t["shape"][::-1]'
bad shape_perm "a_perm.json: .*: \"shape\" \[256,1024\] is not the one the selection lists at its position (shard.shapes: \[1024,256\]" a_perm.json s1.json
edit s0.json a_perms.json 't = d["tensors"][0]; i = d["shard"]["tensors"][0]["index"]
t["shape"] = d["shard"]["shapes"][i] = t["shape"][::-1]'
bad shapes_part "a_perms.json is not a share of the run of s0.json: its selection's shapes (shard.shapes) differs" s0.json a_perms.json
edit s0.json a_noshapes.json 'del d["shard"]["shapes"]'
bad shapes_none "a_noshapes.json: no shard.shapes and shard.dtypes of the 5 selected tensors (a part of an older fp4diag: make the shares again)" a_noshapes.json s1.json
edit s1.json a_nodtypes.json 'del d["shard"]["dtypes"]'
bad dtypes_none "a_nodtypes.json: no shard.shapes and shard.dtypes of the 5 selected tensors" s0.json a_nodtypes.json
edit s0.json a_shapes_bad.json 'd["shard"]["shapes"][1] = [1.5]'
bad shapes_entry "a_shapes_bad.json: shard.shapes holds an entry that is not a shape" a_shapes_bad.json s1.json
edit s0.json a_axis.json 'd["tensors"][0]["axis"] = 5'
bad axis "a_axis.json: .*: \"axis\" is not the axis --axis -1 gives a tensor of rank 2" a_axis.json s1.json
edit s0.json a_axis0.json 'd["tensors"][0]["axis"] = 0'
bad axis0 "a_axis0.json: .*: \"axis\"" a_axis0.json s1.json
edit s0.json a_dtype.json 'd["tensors"][0]["dtype"] = "bf16x"'
bad dtype "a_dtype.json: .*: \"dtype\" is not a dtype fp4diag reads" a_dtype.json s1.json
# a dtype some reader gives, but not the tensor's (described at its position before the split)
edit s0.json a_dtype64.json 'd["tensors"][0]["dtype"] = "f64"'
bad dtype_other "a_dtype64.json: .*: \"dtype\" \"f64\" is not the one the selection lists at its position (shard.dtypes: \"bf16\"" a_dtype64.json s1.json
edit s0.json a_dtypes.json 'd["tensors"][0]["dtype"] = "f64"; d["shard"]["dtypes"][d["shard"]["tensors"][0]["index"]] = "f64"'
bad dtypes_part "a_dtypes.json is not a share of the run of s0.json: its selection's dtypes (shard.dtypes) differs" s0.json a_dtypes.json
# a fingerprint's sampled bytes follow from its size (the merged provenance shows them)
edit s0.json s_hashed.json 'd["shard"]["fingerprint"][0]["hashed"] = 5'
bad hashed "s_hashed.json: shard.fingerprint of .*: \"hashed\" is not the bytes its size samples" s_hashed.json s1.json
edit s1.json s_hashed1.json 'del d["shard"]["fingerprint"][0]["hashed"]'
bad hashed_none "s_hashed1.json: shard.fingerprint of .*: \"hashed\"" s0.json s_hashed1.json
# audit parts
Q=$OLDPWD/testdata/quantized
for i in 0 1; do
    "$FP4DIAG" audit -q --shard $i/2 -o q$i.json "$Q/source/model.safetensors" \
        "$Q/modelopt_nvfp4/model.safetensors" 2>/dev/null || fail "audit share $i"
done
"$FP4DIAG" merge q0.json q1.json -o okq.json 2>err || { cat err; fail "unedited audit parts refused"; }
shown() { echo "the numbers shown are not what its exact sums give (\"$1\""; }
edit q0.json dev.json 'd["device"] = "cpux"'
bad device "dev.json: \"device\" is not one an audit runs on" dev.json q1.json
# a shown number spelled out of the double range reads as inf: never within any tolerance
edit q0.json inf.json 'd["tensors"][0]["export"]["sqnr_db"] = 1234567.25'
sed -i 's/1234567\.25/1e999/' inf.json
grep -q '"sqnr_db": 1e999' inf.json || fail "inf: the edit did not take"
bad inf "inf.json: .*$(shown export)" inf.json q1.json
edit q0.json z.json 'd["tensors"][0]["zero_blocks"] += 1'
bad zero_blocks "z.json: .*: $(shown zero_blocks)" z.json q1.json
edit q0.json n.json 'd["tensors"][0]["special_scale_bytes"]["e4m3_nan"] += 1'
bad e4m3_nan "n.json: .*: $(shown special_scale_bytes)" n.json q1.json
edit q0.json l.json 'd["tensors"][0]["quant"]["layout"] = "nibble high=even (forged)"'
bad layout "l.json: .*: $(shown quant.layout)" l.json q1.json
edit q0.json l2.json 'd["tensors"][0]["quant"]["layout"] += "x"'
bad layout2 "l2.json: .*: $(shown quant.layout)" l2.json q1.json
edit q0.json h.json 'd["tensors"][0]["layout_check"]["hypotheses"][1]["sqnr_db"] = 42.0'
bad hyp_sqnr "h.json: .*: $(shown layout_check.hypotheses)" h.json q1.json
edit q0.json h2.json 'h = d["tensors"][0]["layout_check"]["hypotheses"]; h[1], h[2] = h[2], h[1]'
bad hyp_order "h2.json: .*: $(shown layout_check.hypotheses)" h2.json q1.json
edit q0.json h3.json 'd["tensors"][0]["layout_check"]["hypotheses"][1]["layout"] = "scales flat"'
bad hyp_label "h3.json: .*: $(shown 'layout_check.hypotheses\[\]\.layout')" h3.json q1.json
# names (SPEC §11): every tensor and errors entry under the name shard.names lists at its
# position, the same list in every part; two tensors' names swapped would show each one's
# numbers under the other's name
edit q0.json w_swap.json 'x = {t["name"].rsplit(".", 2)[-2]: t for t in d["tensors"]}
x["k_proj"]["name"], x["v_proj"]["name"] = x["v_proj"]["name"], x["k_proj"]["name"]'
bad name_swap "w_swap.json: tensor [^ ]*v_proj.weight at position 1, where the selection (shard.names) lists [^ ]*k_proj.weight" w_swap.json q1.json
edit q1.json w_x.json 'd["tensors"][0]["name"] = "x"'
bad name_x "w_x.json: tensor x at position [0-9]*, where the selection (shard.names) lists" q0.json w_x.json
edit q1.json w_xs.json 'i = d["shard"]["tensors"][0]["index"]; d["tensors"][0]["name"] = d["shard"]["names"][i] = "x"'
bad names_part "w_xs.json is not a share of the run of q0.json: its selection (shard.names) differs" q0.json w_xs.json
# the shape: [32, 64] with its dims swapped keeps the elements and the scale bytes its exact
# sums count; it must be the one described at its position before the split
edit q0.json w_perm.json 't = d["tensors"][0]; t["shape"] = t["shape"][::-1]'
bad audit_shape_perm "w_perm.json: [^ ]*q_proj.weight: \"shape\" \[64,32\] is not the one the selection lists at its position (shard.shapes: \[32,64\]" w_perm.json q1.json
edit q0.json w_perms.json 't = d["tensors"][0]; t["shape"] = d["shard"]["shapes"][0] = t["shape"][::-1]'
bad audit_shapes_part "w_perms.json is not a share of the run of q0.json: its selection's shapes (shard.shapes) differs" q0.json w_perms.json
edit q1.json w_noshapes.json 'del d["shard"]["shapes"]'
bad audit_shapes_none "w_noshapes.json: no shard.shapes of the 4 selected tensors (a part of an older fp4diag: make the shares again)" q0.json w_noshapes.json
edit q0.json w_none.json 'del d["shard"]["names"]'
bad names_none "w_none.json: no shard.names of the 4 selected tensors" w_none.json q1.json
edit q0.json w_nn.json 'd["shard"]["names"][2] = 7'
edit q1.json w_nn1.json 'd["shard"]["names"][2] = 7'
bad names_type "w_nn.json: shard.names holds an entry that is not a name" w_nn.json w_nn1.json
edit q0.json w_dup0.json 'n = d["shard"]["names"]; n[1] = n[0]; d["tensors"][1]["name"] = n[0]'
edit q1.json w_dup1.json 'n = d["shard"]["names"]; n[1] = n[0]'
bad names_twice "w_dup0.json: shard.names lists [^ ]*q_proj.weight twice" w_dup0.json w_dup1.json
for i in 0 1; do
    edit q$i.json w_sk$i.json 'k = dict(d["skipped"][0]); k["name"] = d["shard"]["names"][3]
d["skipped"].append(k)'
done
bad skipped_selected "w_sk0.json: skipped entry [^ ]*down_proj.weight is a selected tensor" w_sk0.json w_sk1.json
# an errors entry's tensor: bad_partners' share 0 has two (q_proj, k_proj), swapped here
for i in 0 1; do
    "$FP4DIAG" audit -q --shard $i/2 -o b$i.json "$Q/source" "$Q/bad_partners" 2>/dev/null
    [ $? -eq 3 ] || fail "bad_partners share $i"
done
"$FP4DIAG" merge b0.json b1.json -o okb.json 2>err
[ $? -eq 3 ] && [ -e okb.json ] || { cat err; fail "unedited bad_partners parts"; }
edit b0.json w_err.json 'e = d["errors"]; e[0]["tensor"], e[1]["tensor"] = e[1]["tensor"], e[0]["tensor"]'
bad error_name "w_err.json: errors entry for [^ ]*k_proj.weight at position 0, where the selection (shard.names) lists [^ ]*q_proj.weight" w_err.json b1.json
# a part without a key the merged report is made from is not a part (the merge made the key
# and lost it: a report without it, and the memory leaked)
for k in errors pooled tensors provenance; do
    edit q0.json k_$k.json "del d['$k']"
    bad "no_$k" "k_$k.json: no \"$k\" (an [a-z]* every part of a run has" k_$k.json q1.json
done
edit q1.json k_errors1.json 'del d["errors"]'
bad no_errors_1 "k_errors1.json: no \"errors\"" q0.json k_errors1.json
edit q0.json k_pooled.json 'd["pooled"] = 0'
bad pooled_type "k_pooled.json: \"pooled\" is not an object" k_pooled.json q1.json
# nor one with a key no run writes (it would be copied into the merged report unchecked)
edit q0.json k_note.json 'd["verdict"] = {"winner": "FORGED"}'
bad audit_extra_key "k_note.json: top-level key \"verdict\" is not one an audit run writes" k_note.json q1.json
edit q1.json k_note1.json 'd["note"] = "FORGED"'
bad audit_extra_key1 "k_note1.json: top-level key \"note\"" q0.json k_note1.json
# the skipped list is compared exactly too: a dim spelled 1e999 (inf) is not any number
edit q0.json k_skinf.json 'd["skipped"][1]["shape"][0] = 1234567.25'
sed -i 's/1234567\.25/1e999/' k_skinf.json
grep -q '1e999' k_skinf.json || fail "k_skinf: the edit did not take"
bad skipped_inf "q1.json is not a share of the run of k_skinf.json: its skipped list differs" k_skinf.json q1.json
# provenance (SPEC §9): the merge's own, inputs from the parts' fingerprints, never a part's
# copy: a part's forged input size, hash, version and build do not reach the merged report
# provcheck MERGED UNEDITED WHAT: the two provenances equal but for their time
provcheck() {
    python3 - "$1" "$2" <<'PY' || fail "$3: the merged provenance is not the merge's own"
import json, sys
a, b = (json.load(open(f))["provenance"] for f in sys.argv[1:])
for x in (a, b):
    x.pop("time")
sys.exit(a != b)
PY
}
pv='p = d["provenance"]; i = p["inputs"][0]; i["size"] = 1; i["xxh3"] = "0123456789abcdef"
p["version"] = "forged"; p["build"] = {}'
edit q0.json pv_q.json "$pv"
"$FP4DIAG" merge pv_q.json q1.json -o pvm_q.json 2>err || { cat err; fail "audit provenance: merge"; }
provcheck pvm_q.json okq.json "audit"
# gemm parts: g0 holds the first layer
for i in 0 1; do
    "$FP4DIAG" gemm "$G" -q --shard $i/2 -o g$i.json 2>/dev/null || fail "gemm share $i"
done
"$FP4DIAG" merge g0.json g1.json -o okg.json 2>err || { cat err; fail "unedited gemm parts refused"; }
python3 -c 'import json,sys; sys.exit(not json.load(open("g0.json"))["layers"])' ||
    { mv g0.json gx.json; mv g1.json g0.json; mv gx.json g1.json; }
gbad() { # gbad WHAT FIELD PYTHON (L: the first layer of g0, P its first path, A its operand a)
    edit g0.json "g_$1.json" "L = d['layers'][0]; P = L['paths'][0]; A = P['operands'][0]
$3"
    bad "$1" "g_$1.json: layer .*: \"$2\" is not what" "g_$1.json" g1.json
}
gbad recipe recipe 'L["recipe"] = "nvfp4"'
gbad source 'inputs\[\]\.source' 'L["inputs"]["x"]["source"] = "/etc/passwd:/x"'
gbad dataset 'inputs\[\]\.source' 'L["inputs"]["x"]["source"] += "x"'
gbad in_shape 'inputs\[\]\.shape' 'L["inputs"]["x"]["shape"] = [7, 7]'
gbad in_dtype 'inputs\[\]\.dtype' 'L["inputs"]["w"]["dtype"] = "f32x"'
gbad path_shape 'paths\[\]\.shape' 'P["shape"] = [7, 7]'
gbad contraction 'paths\[\]\.contraction' 'P["contraction"] += 1'
gbad padded 'paths\[\]\.padded_contraction' 'P["padded_contraction"] += 16'
gbad path_rht 'paths\[\]\.rht' 'P["rht"] = False'
gbad op_format 'operands\[\]\.format' 'A["format"] = "e2m1"'
gbad op_block 'operands\[\]\.block' 'A["block"] = 32'
gbad op_transposed 'operands\[\]\.name, transposed' 'A["transposed"] = not A["transposed"]'
gbad op_rounding 'operands\[\]\.rounding' 'A["rounding"] = "sr"; A["sr_stream"] = 1'
gbad op_sqnr 'operands\[\]\.sqnr_db' 'A["sqnr_db"] = 99.0'
gbad op_nmse 'operands\[\]\.nmse' 'A["nmse"] *= 1.5'
gbad op_delta 'operands\[\]\.delta' 'A["delta"] += 0.125'
gbad op_amax 'operands\[\]\.tensor_amax' 'A["tensor_amax"] = 1e6'
# an input's shape and dtype are the ones described before any layer was read (shard.inputs):
# a dtype another reader gives, and M and N swapped all through the layer (inputs, paths'
# shapes and contractions: the sums cannot tell)
gbad in_dtype64 'inputs\[\]\.dtype (shard\.inputs)' 'L["inputs"]["x"]["dtype"] = "f64"'
gbad in_mn_swap 'inputs\[\]\.shape (shard\.inputs)' 'x = L["inputs"]; m, n = x["dy"]["shape"]
f = lambda v: n if v == m else m if v == n else v
for t in x.values(): t["shape"] = [f(v) for v in t["shape"]]
for p in L["paths"]:
    p["shape"] = [f(v) for v in p["shape"]]
    p["contraction"] = f(p["contraction"]); p["padded_contraction"] = f(p["padded_contraction"])'
edit g0.json g_ins.json 'x = d["shard"]["inputs"][d["shard"]["partials"][0]["index"]]["x"]
x["dtype"] = d["layers"][0]["inputs"]["x"]["dtype"] = "f64"'
bad gemm_inputs_part "g_ins.json is not a share of the run of g0.json: its layers' inputs (shard.inputs) differs" g0.json g_ins.json
edit g1.json g_noins.json 'del d["shard"]["inputs"]'
bad gemm_inputs_none "g_noins.json: no shard.inputs of the 2 selected layers (a part of an older fp4diag: make the shares again)" g0.json g_noins.json
edit g0.json g_insbad.json 'd["shard"]["inputs"][0]["x"]["note"] = 1'
bad gemm_inputs_entry "g_insbad.json: shard.inputs holds an entry that is not a layer's inputs" g_insbad.json g1.json
# the inputs are exactly the tensors the layer's paths read
gbad in_w_gone 'inputs (the tensors its paths read)' 'del L["inputs"]["w"]'
gbad in_dy_gone 'inputs (the tensors its paths read)' 'del L["inputs"]["dy"]'
gbad key 'layer keys' 'L["note"] = "forged"'
gbad op_key 'operands\[\] keys' 'A["note"] = "forged"'
# what parts must hold alike is compared exactly: a config number spelled 1e999 (read as inf)
# or one next double away is not the run's (the merged gemm report keeps part 0's config)
edit g0.json g_seed.json 'd["config"]["seed"] = 1234567.25'
sed -i 's/1234567\.25/-1e999/' g_seed.json
grep -q '"seed": -1e999' g_seed.json || fail "g_seed: the edit did not take"
bad gemm_config_inf "g1.json is not a share of the run of g_seed.json: its config differs" g_seed.json g1.json
edit g0.json g_mem.json 'import math; c = d["config"]; c["mem_limit"] = math.nextafter(c["mem_limit"], math.inf)'
bad gemm_config_ulp "g1.json is not a share of the run of g_mem.json: its config differs" g_mem.json g1.json
# and member by member in the order the run writes them: config.rounding's reversed is an edit
edit g0.json g_order.json 'r = d["config"]["rounding"]; d["config"]["rounding"] = dict(reversed(list(r.items())))'
bad gemm_config_order "g1.json is not a share of the run of g_order.json: its config differs" g_order.json g1.json
edit g0.json pv_g.json "$pv"
"$FP4DIAG" merge pv_g.json g1.json -o pvm_g.json 2>err || { cat err; fail "gemm provenance: merge"; }
provcheck pvm_g.json okg.json "gemm"
# input.file is the first layer's input file (as the run writes it), never a part's word
edit g0.json gf0.json 'd["input"]["file"] = "/forged.h5"'
edit g1.json gf1.json 'd["input"]["file"] = "/forged.h5"'
"$FP4DIAG" merge gf0.json gf1.json -o gfm.json 2>err || { cat err; fail "gemm input.file: merge"; }
python3 - gfm.json okg.json <<'PY' || fail "gemm: a part's input.file reached the merged report"
import json, sys
a, b = (json.load(open(f))["input"] for f in sys.argv[1:])
sys.exit(a != b or not b["file"].endswith("gpt_gemm_small.h5"))
PY
# top-level keys: each in every part ("input" with its file and datasets)
for k in errors summary input verdict provenance; do
    edit g0.json gk_$k.json "del d['$k']"
    bad "gemm_no_$k" "gk_$k.json: no \"$k\" (an [a-z]* every part of a run has" gk_$k.json g1.json
done
edit g1.json gk_input1.json 'del d["input"]'
bad gemm_no_input_1 "gk_input1.json: no \"input\"" g0.json gk_input1.json
edit g0.json gk_in0.json 'd["input"] = {}'
bad gemm_input_empty "gk_in0.json: no \"input.file\" (a string" gk_in0.json g1.json
edit g0.json gk_in1.json 'd["input"] = 0'
bad gemm_input_type "gk_in1.json: \"input\" is not an object" gk_in1.json g1.json
edit g0.json gk_note.json 'd["note"] = "FORGED"'
bad gemm_extra_key "gk_note.json: top-level key \"note\" is not one a gemm run writes" gk_note.json g1.json
edit g1.json gk_in2.json 'd["input"]["datasets"] = "x"'
bad gemm_datasets "gk_in2.json: \"input.datasets\" is not an array" g0.json gk_in2.json
exit 0
