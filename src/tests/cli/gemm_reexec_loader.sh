#!/bin/sh
# gemm_reexec_loader.sh — gemm may re-exec itself for OpenBLAS's core (gemm_blas.h). Started
# through the dynamic loader (ld.so fp4diag gemm ...), /proc/self/exe is the loader, which would
# take "gemm" for the program to load (exit 127, no report): gemm must then run as it is. Also
# argv with spaces and non-ASCII survives the re-exec, and the report is written once.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
F=testdata/gpt_gemm_small.h5
[ -f "$F" ] || { echo "skip: $F missing"; exit 77; }
ld=$(python3 -c 'import sys
f = open(sys.argv[1], "rb").read()
import struct
phoff, = struct.unpack_from("<Q", f, 0x20); phentsize, phnum = struct.unpack_from("<HH", f, 0x36)
for i in range(phnum):
    t, = struct.unpack_from("<I", f, phoff + i * phentsize)
    if t == 3:
        off, = struct.unpack_from("<Q", f, phoff + i * phentsize + 8)
        sz, = struct.unpack_from("<Q", f, phoff + i * phentsize + 32)
        print(f[off:off + sz].rstrip(b"\0").decode())' "$FP4DIAG" 2>/dev/null)
[ -n "$ld" ] && [ -x "$ld" ] || { echo "skip: no ELF interpreter for $FP4DIAG"; exit 77; }
unset OPENBLAS_CORETYPE
"$ld" "$FP4DIAG" gemm "$F" /proj --device cpu -q -o "$tmp/ld.json" >"$tmp/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { head -5 "$tmp/out"; fail "gemm through $ld: exit $rc"; }
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['layers'] and r['summary']" \
    "$tmp/ld.json" || fail "gemm through $ld: report incomplete"
mkdir "$tmp/d ü é" && cp "$F" "$tmp/d ü é/in put.h5" || exit 1
"$FP4DIAG" gemm "$tmp/d ü é/in put.h5" /proj --device cpu -q -o "$tmp/d ü é/o ü.json" ||
    fail "gemm with spaces/unicode in argv: exit $?"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['input']['file'].endswith('in put.h5'), r['input']" \
    "$tmp/d ü é/o ü.json" || fail "argv changed across the re-exec"
"$FP4DIAG" gemm "$F" /proj --device cpu -q >"$tmp/p.json" || fail "gemm to a pipe: exit $?"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/p.json" ||
    fail "stdout report is not one JSON document"
exit 0
