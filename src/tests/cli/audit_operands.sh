#!/bin/sh
# audit_operands.sh — issue 27: audit's two operands in the wrong roles are one usage error
# (exit 2) saying so, before any tensor is paired, never per-tensor shape or "no such tensor"
# errors: an export given as its own SOURCE (`audit Q Q`), an export of another producer of the
# same model as SOURCE, and the two swapped (`audit QUANTIZED SOURCE`). The right order still
# audits (exit 0), and a QUANTIZED with no 4-bit tensor beside a high-precision SOURCE is still
# the input error it was (exit 3).
. src/tests/cli/lib/quantized.sh
run() { # $1 source, $2 quantized, $3 exit expected, $4 message expected (grep -F)
    "$FP4DIAG" audit "$1" "$2" -q -o "$tmp/o.json" 2>"$tmp/e"; rc=$?
    [ "$rc" -eq "$3" ] || { cat "$tmp/e"; fail "audit $1 $2: exit $rc, expected $3"; }
    [ -z "$4" ] || grep -qF -- "$4" "$tmp/e" || { cat "$tmp/e"; fail "audit $1 $2: no '$4'"; }
    [ "$rc" -eq 0 ] || [ "$(wc -l <"$tmp/e")" -eq 1 ] || { cat "$tmp/e"; fail "audit $1 $2: not one line"; }
    [ "$rc" -eq 0 ] || [ ! -e "$tmp/o.json" ] || fail "audit $1 $2: a report written"
    rm -f "$tmp/o.json"
}
run "$Q/modelopt_nvfp4" "$Q/modelopt_nvfp4" 2 "SOURCE $Q/modelopt_nvfp4 is itself a quantized export (NVFP4 modelopt: model.layers.0."
run "$Q/modelopt_nvfp4" "$Q/modelopt_nvfp4" 2 "give the high-precision checkpoint first"
run "$Q/ct_nvfp4" "$Q/modelopt_nvfp4" 2 "is itself a quantized export (NVFP4 compressed-tensors"
run "$Q/modelopt_nvfp4" "$Q/source" 2 "QUANTIZED $Q/source holds no 4-bit tensor but SOURCE $Q/modelopt_nvfp4 does (NVFP4 modelopt): SOURCE and QUANTIZED swapped?"
run "$Q/source" "$Q/modelopt_nvfp4" 0 ""
run "$Q/source" "$Q/source" 3 "no already-quantized tensor"
exit 0
