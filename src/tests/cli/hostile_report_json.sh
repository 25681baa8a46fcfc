#!/bin/sh
# hostile_report_json.sh — a report that two JSON readers would read differently is refused by
# merge and compare (issue 26's "Done when", break-it round): a key twice in any object (cJSON
# finds the first, Python's json the last: a part saying "index": 0 and "index": 1 would merge
# as share 0 here and share 1 elsewhere), a NUL escaped inside a string (C cuts the string
# there), bytes after the document. Each: exit 3, one line naming the file and the reason, no
# output written; the same parts unedited still merge.
. "$(dirname "$0")/lib/hostile.sh"
python3 -c 'import json' 2>/dev/null || skip "python3 not found"
sel="/blocks/0/proj/weight /blocks/0/fc1/weight"
for i in 0 1; do
    # shellcheck disable=SC2086
    "$FP4DIAG" sqnr "$CKPT" $sel --format e2m1 -q --shard $i/2 -o "$tmp/p$i.json" ||
        fail "share $i"
done
"$FP4DIAG" sqnr "$CKPT" /blocks/0/proj/weight --format e2m1 -q -o "$tmp/r.json" || fail "run"
python3 - "$tmp" <<'PY' || fail "cannot write the edited parts"
import sys
d = sys.argv[1]
p0 = open(d + "/p0.json").read()
r = open(d + "/r.json").read()
def w(name, text):
    open(d + "/" + name, "w").write(text)
def once(text, old, new):
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)
# fp4diag writes '"key":<TAB>value'
w("dup_top.json", once(p0, '"schema":\t"fp4diag.report/1"',
                       '"schema":\t"fp4diag.report/1",\n"schema": "fp4diag.audit/1"'))
w("dup_shard.json", once(p0, '"index":\t0,', '"index":\t0,\n"index": 1,'))
w("nul.json", once(p0, '"command":\t"sqnr"', '"command": "sqnr\\u0000x"'))
w("after.json", p0 + "{}\n")
w("r_dup.json", once(r, '"command":\t"sqnr"', '"command": "sqnr",\n"command": "bias"'))
w("r_nul.json", once(r, '"schema":\t"fp4diag.report/1"', '"schema": "fp4diag.report/1\\u0000"'))
PY
for c in "dup_top:key schema appears twice" "dup_shard:shard: key index appears twice" \
         "nul:NUL (\\u0000) inside a string" "after:not JSON"; do
    f=${c%%:*}; why=${c#*:}
    rm -f "$tmp/m.json"
    clean_fail "$f.json" merge -o "$tmp/m.json" "$tmp/$f.json" "$tmp/p1.json"
    grep -qF -- "$why" "$tmp/err" || fail "merge $f: stderr does not say '$why'"
    [ ! -e "$tmp/m.json" ] || fail "merge $f: wrote a report"
done
for c in "r_dup:key command appears twice" "r_nul:NUL (\\u0000) inside a string"; do
    f=${c%%:*}; why=${c#*:}
    clean_fail "$f.json" compare "$tmp/r.json" "$tmp/$f.json"
    grep -qF -- "$why" "$tmp/err" || fail "compare $f: stderr does not say '$why'"
    clean_fail "$f.json" compare "$tmp/$f.json" "$tmp/r.json"
done
# the parts and the report as written: accepted
run merge -q -o "$tmp/m.json" "$tmp/p0.json" "$tmp/p1.json"
[ "$rc" -eq 0 ] || fail "merge of the parts as written: exit $rc"
run compare "$tmp/r.json" "$tmp/r.json"
[ "$rc" -eq 0 ] || fail "compare of the report as written: exit $rc"
exit 0
