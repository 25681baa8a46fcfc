# isa.sh — sourced by src/tests/cli/isa_dispatch*.sh: `isa_case VARIANT...` runs fp4diag under
# FP4DIAG_ISA=VARIANT on an f16 NumPy file and the bf16 checkpoint, with the configs that reach
# every CPU dispatch on the CPU backend (--device cpu: on a GPU machine auto would pick CUDA and
# no CPU dispatch would run) (nvfp4's tensor amax on fp32 rows and on stored words, RHT on and off),
# and checks that the developer trace's "isa ran:" line (FP4DIAG_TRACE, base/isa.h) names
# VARIANT for each dispatch (neon: its quantizer, generic for the rest; the f16 widening:
# VARIANT or generic, F16C being optional) and
# that the report equals FP4DIAG_ISA=generic's but for timing. A variant this CPU does not
# run (fp4diag --version) skips with a message (exit 77).
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; [ -s "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err" | tail -n 20; exit 1; }
python3 -c 'import numpy' 2>/dev/null || skip "python3 with numpy not found"
python3 -c 'import numpy as np, sys
np.save(sys.argv[1], (np.random.default_rng(3).standard_normal((64, 272)) * 0.1).astype(np.float16))' \
    "$tmp/f16.npy" || fail "cannot write the f16 input"
strip() { python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); r.pop("timing", None); r.pop("argv", None); r.pop("provenance", None)
print(json.dumps(r, sort_keys=True))' "$1"; }

# one VARIANT INPUT NAME: the report in $tmp/NAME.VARIANT.json, the trace's line in $ran
one() {
    FP4DIAG_ISA=$1 FP4DIAG_TRACE=1 timeout 300 "$FP4DIAG" sqnr "$2" --scale nvfp4 --rht both \
        --device cpu --threads 2 -q -o "$tmp/$3.$1.json" 2>"$tmp/err" || fail "FP4DIAG_ISA=$1 sqnr $2: exit $?"
    ran=$(sed -n 's/.*isa ran: //p' "$tmp/err")
    [ -n "$ran" ] || fail "FP4DIAG_ISA=$1: no 'isa ran:' trace line"
    ! grep -q "does not run" "$tmp/err" || fail "FP4DIAG_ISA=$1: refused"
}

# site VARIANT SITE WANT...: the trace names one of WANT for SITE
site() {
    got=$(printf '%s\n' "$ran" | tr ' ' '\n' | sed -n "s/^$2=//p")
    for w in $3 ${4:-}; do [ "$got" = "$w" ] && return 0; done
    fail "FP4DIAG_ISA=$1: $2 ran '$got', want $3 (trace: $ran)"
}

isa_case() {
    runs=$("$FP4DIAG" --version | sed -n 's/.*this CPU runs:\(.*\))/\1/p')
    for v in "$@"; do
        case " $runs " in *" $v "*) ;; *)
            skip "this CPU does not run $v (it runs:$runs); the case runs on a host that has it" ;;
        esac
    done
    for v in generic "$@"; do
        w=$v # neon has its own quantizer; its other dispatches are the portable code
        [ "$v" = neon ] && w=generic
        one "$v" "$tmp/f16.npy" f16
        site "$v" quant "$v"
        for s in rht amax counts words-max; do site "$v" "$s" "$w"; done
        site "$v" widen-f16 "$w" generic
        one "$v" testdata/gpt_ckpt_small.h5 ckpt
        site "$v" quant "$v"
        for s in rht amax counts words-max; do site "$v" "$s" "$w"; done
        for n in f16 ckpt; do
            [ "$(strip "$tmp/$n.$v.json")" = "$(strip "$tmp/$n.generic.json")" ] ||
                fail "FP4DIAG_ISA=$v: the $n report differs from generic's"
        done
    done
    echo ok
}
