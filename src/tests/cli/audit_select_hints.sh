#!/bin/sh
# audit_select_hints.sh — audit's SELECT errors say what the analyses say (SPEC §11): a typo of
# a quantized tensor's name gets "did you mean NAME?", a pattern naming a tensor the checkpoint
# keeps in high precision says which exclude list keeps it (hf_quant_config.json
# exclude_modules, config.json ignore); exit 3 and one line each. `-o FILE --json` writes FILE
# and prints nothing (as the analyses), and --help says so.
set -u
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail=0
Q=testdata/quantized
"$FP4DIAG" audit $Q/source $Q/ct_nvfp4 model.layers.0.self_atn.q_proj.weight 2>"$T/e"
rc=$?
[ $rc -eq 3 ] && grep -q "no quantized tensor matches; did you mean model\.layers\.0\.self_attn\.q_proj\.weight?" "$T/e" &&
    [ "$(wc -l <"$T/e")" -eq 1 ] || { echo "typo: exit $rc: $(cat "$T/e")"; fail=1; }
"$FP4DIAG" audit $Q/source $Q/modelopt_nvfp4 'lm_head*' 2>"$T/e"
rc=$?
[ $rc -eq 3 ] && grep -q "lm_head\*: no quantized tensor matches; lm_head\.weight is kept in high precision (bf16) by hf_quant_config\.json exclude_modules: lm_head$" "$T/e" ||
    { echo "lm_head (modelopt): exit $rc: $(cat "$T/e")"; fail=1; }
"$FP4DIAG" audit $Q/source $Q/ct_nvfp4 lm_head.weight 2>"$T/e"
rc=$?
[ $rc -eq 3 ] && grep -q "kept in high precision (bf16) by config\.json ignore: lm_head$" "$T/e" ||
    { echo "lm_head (compressed-tensors): exit $rc: $(cat "$T/e")"; fail=1; }
"$FP4DIAG" audit $Q/source $Q/ct_nvfp4 'no_such*' 2>"$T/e"
[ $? -eq 3 ] && grep -q "no_such\*: no quantized tensor matches$" "$T/e" ||
    { echo "a glob matching nothing: $(cat "$T/e")"; fail=1; }
# -o FILE --json: FILE alone, nothing printed, as sqnr does
"$FP4DIAG" audit $Q/source $Q/ct_nvfp4 -o "$T/a.json" --json >"$T/out" 2>/dev/null ||
    { echo "audit -o --json exited $?"; fail=1; }
[ ! -s "$T/out" ] && python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["schema"] == "fp4diag.audit/1"' "$T/a.json" ||
    { echo "audit -o --json: stdout not empty or FILE not the report"; fail=1; }
"$FP4DIAG" sqnr $Q/source -o "$T/s.json" --json >"$T/out" 2>/dev/null
[ ! -s "$T/out" ] || { echo "sqnr -o --json prints: the analyses changed, match them"; fail=1; }
"$FP4DIAG" audit --help | tr '\n' ' ' | tr -s ' ' | grep -q "with -o FILE, FILE alone gets it and nothing is printed" ||
    { echo "audit --help does not say what -o --json does"; fail=1; }
exit $fail
