#!/bin/sh
# analysis_man_examples.sh — every "$ fp4diag sqnr|bias|buckets|rht|grid ..." line of the
# EXAMPLES section of man/fp4diag.1 runs (from a scratch directory that sees testdata/), exits
# 0, and its report (stdout or -o FILE) validates against the schema.
set -u
python3 -c 'import jsonschema' 2>/dev/null || { echo "no python3 jsonschema"; exit 77; }
[ -f testdata/gpt_ckpt_small.h5 ] || { echo "no testdata"; exit 77; }
root=$PWD
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
ln -s "$root/testdata" "$tmp/testdata"
sed -n '/^\.SH EXAMPLES/,/^\.SH /p' man/fp4diag.1 |
    sed -n 's/^\$ fp4diag //p' | sed "s/\\\\(aq/'/g; s/\\\\-/-/g" >"$tmp/cmds"
n=$(wc -l <"$tmp/cmds")
[ "$n" -ge 5 ] || { echo "only $n examples found"; exit 1; }
i=0
while IFS= read -r cmd; do
    i=$((i + 1))
    eval "set -- $cmd"
    (cd "$tmp" && "$FP4DIAG" "$@" >"$tmp/out$i.json" 2>"$tmp/err$i") ||
        { echo "example $i: fp4diag $cmd: exit $?"; cat "$tmp/err$i"; exit 1; }
    out="$tmp/out$i.json"
    case " $cmd " in *" -o "*) out="$tmp/$(echo "$cmd" | sed 's/.* -o \([^ ]*\).*/\1/')" ;; esac
    python3 - "$root/schema/report.schema.json" "$out" <<'PY' || { echo "example $i: fp4diag $cmd"; exit 1; }
import json, sys, jsonschema
r = json.load(open(sys.argv[2]))
jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate(r)
assert r["errors"] == [] if "errors" in r else True, r["errors"]
PY
done <"$tmp/cmds"
exit 0
