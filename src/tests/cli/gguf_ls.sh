#!/bin/sh
# gguf_ls.sh — `fp4diag ls` and `sqnr` on a GGUF file (testdata/gguf/model.gguf, written by
# gguf-py's GGUFWriter: scripts/make_gguf_testdata.py): shapes row-major (ggml's ne reversed),
# ggml type names, MXFP4/NVFP4 tensors shown as already quantized (producer gguf), every other
# ggml type listed by name and skipped, metadata of every type; `sqnr` analyses the F32/F16/BF16
# tensors and lists the others as skipped; hostile files (version 1, big-endian, a header or
# data cut short) give one-line errors naming the file (and the tensor), exit 3, and a cut data
# section leaves the tensors before it readable.
set -u
G=testdata/gguf/model.gguf
[ -f "$G" ] || { echo "no $G"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out" "$tmp/err" 2>/dev/null | head -40; exit 1; }

"$FP4DIAG" ls "$G" >"$tmp/out" 2>"$tmp/err" || fail "ls exited $?"
for re in '^blk\.0\.attn_q\.weight +64x128 +f32 ' '^blk\.0\.attn_k\.weight +32x128 +f16 ' \
          '^blk\.0\.attn_v\.weight +32x128 +bf16 ' '^output_norm\.weight +128 +f32 ' \
          '^blk\.0\.ffn_down\.weight +64x128 +mxfp4 .* gguf, ggml blocks: e8m0 \+ 16 bytes' \
          '^blk\.0\.ffn_gate\.weight +64x128 +nvfp4 .* gguf, ggml blocks: 4 ue4m3 \+ 32 bytes' \
          '^blk\.0\.ffn_up\.weight +64x128 +q8_0 .*ggml type q8_0 is not read' \
          '^blk\.0\.attn_output\.weight +32x128 +q4_0 .*ggml type q4_0 is not read' \
          '^  general\.alignment: 64$' '^  test\.i8: -100$' '^  test\.u64: 18000000000000000000$' \
          '^  test\.ints: \[0, 1, 2, 3, 4, 5, 6, 7, \.\.\. \(20 i32\)\]$' \
          '^  test\.strings: \[a, bc, def\]$' '^  test\.bool: true$'; do
    grep -Eq "$re" "$tmp/out" || fail "ls: no line matching $re"
done
[ ! -s "$tmp/err" ] || fail "ls wrote to stderr"

"$FP4DIAG" sqnr "$G" -o "$tmp/r.json" -q >"$tmp/out" 2>"$tmp/err" || fail "sqnr exited $?"
if python3 -c 'import json' 2>/dev/null; then
    python3 - "$tmp/r.json" <<'PY' || fail "sqnr report"
import json, sys
r = json.load(open(sys.argv[1]))
assert [t["name"] for t in r["tensors"]] == ["blk.0.attn_q.weight", "blk.0.attn_k.weight",
                                            "blk.0.attn_v.weight"], r["tensors"]
assert r["tensors"][0]["shape"] == [64, 128]
sk = {s["name"]: s["reason"] for s in r["skipped"]}
assert sk["blk.0.ffn_down.weight"] == "already quantized (MXFP4, gguf): audit needs the source", sk
assert sk["blk.0.ffn_gate.weight"] == "already quantized (NVFP4, gguf): audit needs the source", sk
assert sk["blk.0.ffn_up.weight"] == "not numeric (q8_0)", sk
assert sk["blk.0.attn_output.weight"] == "not numeric (q4_0)", sk
assert r["errors"] == [], r["errors"]
PY
fi

# hostile files
printf 'GGUF\001\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' >"$tmp/v1.gguf"
printf 'GGUF\000\000\000\003\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' >"$tmp/be.gguf"
head -c 500 "$G" >"$tmp/head.gguf"
check() { # WANT-EXIT WANT-STDERR-TEXT ARGS...
    want=$1 text=$2; shift 2
    "$FP4DIAG" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq "$want" ] || fail "$*: exit $rc, expected $want"
    grep -qF "$text" "$tmp/err" || fail "$*: stderr lacks: $text"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: more than one line on stderr"
}
check 3 "$tmp/v1.gguf: GGUF version 1 is not read (versions 2 and 3 are)" ls "$tmp/v1.gguf"
check 3 "$tmp/be.gguf: a big-endian GGUF file" ls "$tmp/be.gguf"
check 3 "$tmp/head.gguf: an array of 20 i32 at byte 443 cannot fit in the file (500 bytes) (metadata test.ints)" ls "$tmp/head.gguf"
check 3 "$tmp/head.gguf: an array of 20 i32" sqnr "$tmp/head.gguf" -o "$tmp/h.json"
[ ! -e "$tmp/h.json" ] || fail "a report written for an unreadable file"
head -c 45000 "$G" >"$tmp/cut.gguf"
"$FP4DIAG" ls "$tmp/cut.gguf" >"$tmp/out" 2>"$tmp/err" || fail "ls of a cut file exited $?"
grep -Eq '^blk\.0\.attn_v\.weight .*data \[40960, 49152\) lies past the end of the file \(43784 bytes of data\): truncated' "$tmp/out" || fail "cut: attn_v not named truncated"
"$FP4DIAG" sqnr "$tmp/cut.gguf" -o "$tmp/c.json" -q >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 3 ] || fail "sqnr of a cut file: exit $rc"
grep -qF "6 of 8 tensors failed" "$tmp/err" || fail "sqnr of a cut file: message"
grep -q '"name":	"blk.0.attn_k.weight"' "$tmp/c.json" || fail "sqnr of a cut file: attn_k not analysed"
exit 0
