#!/bin/sh
# merge_checked.sh — merge takes no number a part did not compute (issue 26, items 3 and 11):
# a gemm part whose exact sums (shard.partials), whose shown sqnr_db/eta/sqnr_status, layer
# name or operands' alpha (role a, b) were edited is refused with one line naming the part and
# the field, as analysis parts are; timing values that no run writes (1e308 s, negative or
# fractional bytes, a string) are refused; the unedited parts merge. Nothing is written on a
# refusal.
. src/tests/cli/lib/parts.sh
. src/tests/cli/lib/edit_parts.sh
cd "$tmp" || exit 1
for i in 0 1; do
    "$FP4DIAG" gemm "$G" --layers 4 -q --shard $i/2 -o g$i.json 2>/dev/null || fail "gemm share $i"
    "$FP4DIAG" sqnr "$C" /blocks/0 --format e2m1 -q --shard $i/2 -o s$i.json 2>/dev/null ||
        fail "sqnr share $i"
done
"$FP4DIAG" merge g0.json g1.json -o ok.json 2>err || { cat err; fail "unedited gemm parts refused"; }
"$FP4DIAG" merge s0.json s1.json -o ok2.json 2>err || { cat err; fail "unedited sqnr parts refused"; }
# the sums of the first path of g1's first layer scaled as in the issue (Σ(ẑ−z)² x 13):
# the pooled summary would read 14 dB while the layers read 25 and 28
edit g1.json e_sums.json '
s = d["shard"]["partials"][0]["paths"][0]["sums"]
s[1] = float.hex(float.fromhex(s[1]) * 13)'
bad gemm_sums "e_sums.json: layer .* path fprop: \"shard.partials sums" g0.json e_sums.json
# the same with eta and sqnr_db in the sums array recomputed: the layer's own numbers differ
edit g1.json e_sums2.json '
import math
s = d["shard"]["partials"][0]["paths"][0]["sums"]
z2, e2 = float.fromhex(s[0]), float.fromhex(s[1]) * 13
s[1] = float.hex(e2); s[4] = float.hex(10 * math.log10(z2 / e2))'
bad gemm_sums_shown "e_sums2.json: layer .* path fprop: \"sqnr_db\" is not what its exact sums give" g0.json e_sums2.json
edit g1.json e_db.json 'd["layers"][0]["paths"][0]["sqnr_db"] += 0.01'
bad gemm_sqnr "e_db.json: layer .* path fprop: \"sqnr_db\"" g0.json e_db.json
edit g1.json e_eta.json 'd["layers"][0]["paths"][1]["eta"] = 1.0'
bad gemm_eta "e_eta.json: layer .* path dgrad: \"eta\"" g0.json e_eta.json
edit g1.json e_st.json 'd["layers"][0]["paths"][0]["sqnr_status"] = "exact"'
bad gemm_status "e_st.json: layer .* \"sqnr_status\"" g0.json e_st.json
edit g1.json e_ap.json 'd["layers"][0]["paths"][2]["alpha_product"] *= 1.5'
bad gemm_alpha "e_ap.json: layer .* path wgrad: \"alpha_product\"" g0.json e_ap.json
edit g1.json e_op.json 'd["layers"][0]["paths"][0]["operands"][1]["alpha"] *= 1.01'
bad gemm_operand_alpha "e_op.json: layer .* path fprop: \"operands\[\]\.alpha" g0.json e_op.json
edit g1.json e_role.json 'o = d["layers"][0]["paths"][0]["operands"]; o[0], o[1] = o[1], o[0]'
bad gemm_operand_role "e_role.json: layer .* path fprop: \"operands\[\]\.alpha" g0.json e_role.json
edit g1.json e_name.json 'd["layers"][0]["name"] = "/other"'
bad gemm_name "e_name.json: layer [0-9]*: \"name\" is not the layer the selection lists" g0.json e_name.json
# timing: finite, non-negative, plausible, bytes whole; gemm and analysis parts alike
edit g1.json t_big.json 'd["timing"]["seconds"] = 1e308'
bad seconds_big "t_big.json: timing.seconds is not a run time" g0.json t_big.json
edit s1.json t_neg.json 'd["timing"]["seconds"] = -1'
bad seconds_neg "t_neg.json: timing.seconds" s0.json t_neg.json
edit s1.json t_str.json 'd["timing"]["seconds"] = "1"'
bad seconds_str "t_str.json: timing.seconds" s0.json t_str.json
edit s0.json b_neg.json 'd["timing"]["bytes_read"] = -4096'
bad bytes_neg "b_neg.json: timing.bytes_read is not a byte count" b_neg.json s1.json
edit g0.json b_frac.json 'd["timing"]["bytes_read"] = 10.5'
bad bytes_frac "b_frac.json: timing.bytes_read" b_frac.json g1.json
edit g0.json b_huge.json 'd["timing"]["bytes_read"] = 1e300'
bad bytes_huge "b_huge.json: timing.bytes_read" b_huge.json g1.json
edit s0.json no_t.json 'del d["timing"]'
bad no_timing "no_t.json: no \"timing\"" no_t.json s1.json
# a year and 2^53 bytes are still taken (the bounds themselves)
edit g0.json t_edge.json 'd["timing"]["seconds"] = 366 * 86400; d["timing"]["bytes_read"] = 2**53'
"$FP4DIAG" merge t_edge.json g1.json -o edge.json 2>err || { cat err; fail "bounds refused"; }
exit 0
