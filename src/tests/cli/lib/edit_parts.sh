# edit_parts.sh — sourced after parts.sh by the cases that hand merge edited partial reports
# (merge_fields.sh, merge_positions.sh, merge_checked.sh); both work in the current directory:
#   edit PART OUT PYTHON   a copy OUT of the part PART with PYTHON run on its JSON `d` (`t`: its
#                          first tensor, {} when it has none), written indented
#   bad WHAT GREP PARTS... `fp4diag merge PARTS -o bad.json` must refuse: exit 3, one line on
#                          stderr (in ./err) matching GREP, no bad.json written; else fail WHAT
edit() {
    python3 - "$1" "$2" "$3" <<'PY' || fail "edit $2"
import json, sys
d = json.load(open(sys.argv[1]))
t = d.get("tensors", [{}])[0] if d.get("tensors") else {}
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
}
bad() {
    what=$1 pat=$2
    shift 2
    rm -f bad.json
    "$FP4DIAG" merge "$@" -o bad.json 2>err
    rc=$?
    [ "$rc" -eq 3 ] || { cat err; fail "$what: exit $rc, want 3"; }
    grep -q -- "$pat" err || { cat err; fail "$what: message lacks '$pat'"; }
    [ "$(wc -l <err)" -eq 1 ] || { cat err; fail "$what: not one line"; }
    [ -e bad.json ] && fail "$what: wrote a report"
    return 0
}
