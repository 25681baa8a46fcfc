#!/bin/sh
# regress.sh — `make regress`: rerun the main job on the stored tensors in testdata/ and compare
# each fresh report against its golden in testdata/golden/ with `fp4diag compare`.
# Each golden is rerun with the command line it records in its "argv" (without -o/--output;
# run from the project root), so a golden made with options is rerun with the same options; a
# golden without argv named CMD_STEM.json is rerun as `fp4diag CMD testdata/gpt_STEM.h5`.
# Required: sqnr_ckpt_small.json and rht_gemm_small.json. Fresh reports are kept in
# $BUILD/regress/ (default build/regress/) for inspection or as CI artifacts.
# Env: FP4DIAG (binary; default ./fp4diag), BUILD, GOLDEN_DIR (default testdata/golden; the
# tests point it elsewhere), COMPARE_ARGS (extra `compare` options, e.g. "--max-sqnr-drop 0.1").
# Exit: 0 all within thresholds; 1 a regression; 2 a golden or its input is missing; otherwise
# the failing fp4diag's exit status (3: a report that cannot be compared).
set -u
cd "$(dirname "$0")/.." || exit 2
F=${FP4DIAG:-./fp4diag}
OUTDIR=${BUILD:-build}/regress
REQUIRED="sqnr_ckpt_small.json rht_gemm_small.json"
COMPARE_ARGS=${COMPARE_ARGS:-}
GD=${GOLDEN_DIR:-testdata/golden}

if [ ! -x "$F" ]; then echo "regress: $F not built (run make)" >&2; exit 2; fi
missing=""
for g in $REQUIRED; do [ -s "$GD/$g" ] || missing="$missing $GD/$g"; done
if [ -n "$missing" ]; then
    echo "regress: golden report(s) missing:$missing" >&2
    echo "regress: make them from a build you trust, e.g." >&2
    echo "  ./fp4diag sqnr testdata/gpt_ckpt_small.h5 -o $GD/sqnr_ckpt_small.json" >&2
    echo "  ./fp4diag rht testdata/gpt_gemm_small.h5 -o $GD/rht_gemm_small.json" >&2
    echo "regress: then review and commit them; nothing was compared" >&2
    exit 2
fi
mkdir -p "$OUTDIR" || exit 2

# The golden's argv after "fp4diag", shell-quoted, without -o/--output and its value.
golden_args() {
    python3 - "$1" 2>/dev/null <<'PY'
import json, shlex, sys
argv = json.load(open(sys.argv[1])).get("argv") or []
out, skip = [], False
for a in argv[1:]:
    if skip:
        skip = False
        continue
    if a in ("-o", "--output"):
        skip = True
        continue
    if a.startswith("--output=") or (a.startswith("-o") and len(a) > 2):
        continue
    out.append(a)
if not out:
    sys.exit(1)
print(shlex.join(out))
PY
}

n=0 bad=0 rc=0
for golden in "$GD"/*.json; do
    base=$(basename "$golden" .json)
    if args=$(golden_args "$golden"); then
        :
    else
        cmd=${base%%_*}
        input="testdata/gpt_${base#*_}.h5"
        if [ ! -s "$input" ]; then
            echo "regress: FAIL $base: no argv in the golden, and no $input" >&2
            rc=2; bad=$((bad + 1)); continue
        fi
        args="$cmd $input"
    fi
    fresh="$OUTDIR/$base.json"
    echo "regress: fp4diag $args > $fresh" >&2
    eval "set -- $args"
    "$F" "$@" >"$fresh"
    st=$?
    if [ "$st" -ne 0 ]; then
        echo "regress: FAIL $base: 'fp4diag $args' exited $st" >&2
        [ "$rc" -eq 0 ] && rc=$st
        bad=$((bad + 1)); continue
    fi
    # shellcheck disable=SC2086 # COMPARE_ARGS is a list of options
    "$F" compare $COMPARE_ARGS "$golden" "$fresh"
    st=$?
    n=$((n + 1))
    if [ "$st" -ne 0 ]; then
        echo "regress: FAIL $base (compare exited $st)" >&2
        bad=$((bad + 1))
        if [ "$rc" -eq 0 ] || [ "$st" -eq 1 ]; then rc=$st; fi
    else
        echo "regress: ok $base" >&2
    fi
done
echo "regress: $n compared, $bad failed" >&2
exit "$rc"
