#!/bin/sh
# api_install.sh — the library with a public face from outside the project: `make install-lib`
# into a temporary prefix, a small C program (src/tests/api/api_demo.c) built in a temporary
# directory with `pkg-config --cflags --libs fp4diag` (the shared library, then --static), run
# on a testdata tensor: its numbers (%.17g) equal the CLI's `sqnr -o` report on the same tensor
# under the same options (the report's as cJSON writes them: %.15g where that reads back within
# its tolerance), and its JSON text is that report's entry byte for byte.
set -u
F=testdata/gpt_ckpt_small.h5
T=/blocks/0/fc1/weight
OPTS="--format nvfp4,e1m2 --rht both --threads 2"
[ -f "$F" ] || { echo "no $F"; exit 77; }
case "${BUILD:-build}" in *-san) echo "the sanitizer build makes no shared library"; exit 77 ;; esac
command -v pkg-config >/dev/null || { echo "no pkg-config"; exit 77; }
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# the variables of the make that runs the check (CUDA=0 ...) reach this one through MAKEFLAGS
make --no-print-directory -s install-lib BUILD="${BUILD:-build}" PREFIX=/opt/fp4 \
    DESTDIR="$tmp/root" >"$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; echo "install-lib failed"; exit 1; }
P="$tmp/root/opt/fp4"
for f in include/fp4diag.h lib/libfp4diag.a lib/libfp4diag.so lib/libfp4diag.so.0 \
         lib/pkgconfig/fp4diag.pc; do
    [ -e "$P/$f" ] || { echo "not installed: $f"; exit 1; }
done
[ "$(readlink "$P/lib/libfp4diag.so.0")" = "libfp4diag.so.0.1.0" ] || { echo "bad soname link"; exit 1; }
objdump -p "$P/lib/libfp4diag.so.0.1.0" 2>/dev/null | grep -q 'SONAME *libfp4diag.so.0$' ||
    { command -v objdump >/dev/null && { echo "soname is not libfp4diag.so.0"; exit 1; }; }
if command -v nm >/dev/null; then
    bad=$(nm -D --defined-only "$P/lib/libfp4diag.so" | awk '$2 ~ /^[TDBRW]$/ && $3 !~ /^fp4d_/' | head -3)
    [ -z "$bad" ] || { echo "exported beside fp4d_*: $bad"; exit 1; }
fi
# the .pc names the prefix it was installed for; point pkg-config at the staged copy
sed "s|^prefix=.*|prefix=$P|; s|^libdir=.*|libdir=$P/lib|; s|^includedir=.*|includedir=$P/include|" \
    "$P/lib/pkgconfig/fp4diag.pc" >"$tmp/fp4diag.pc"
grep -q '^libdir=/opt/fp4/lib$' "$P/lib/pkgconfig/fp4diag.pc" || { echo "bad libdir in fp4diag.pc"; exit 1; }
export PKG_CONFIG_PATH="$tmp"
mkdir "$tmp/outside" && cp src/tests/api/api_demo.c "$tmp/outside/" || exit 1
"$FP4DIAG" sqnr -q -o "$tmp/cli.json" $OPTS "$F" "$T" || { echo "fp4diag sqnr exited $?"; exit 1; }
(
    cd "$tmp/outside" || exit 1
    ${CC:-cc} -std=c11 -Wall -Werror -o demo_so api_demo.c $(pkg-config --cflags --libs fp4diag) || exit 1
    ${CC:-cc} -std=c11 -Wall -Werror -o demo_static api_demo.c \
        $(pkg-config --cflags fp4diag) $P/lib/libfp4diag.a $(pkg-config --static --libs-only-other --libs-only-L fp4diag) \
        $(pkg-config --static --libs fp4diag | sed 's/-lfp4diag//') || exit 1
) || { echo "building the program outside failed"; exit 1; }
LD_LIBRARY_PATH="$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/outside/demo_so" "$F" "$T" "$OPTS" \
    "$tmp/so.json" >"$tmp/so.txt" 2>"$tmp/so.err" || { cat "$tmp/so.err"; echo "demo (shared) failed"; exit 1; }
ldd "$tmp/outside/demo_so" 2>/dev/null | grep -q "$P/lib/libfp4diag.so.0" ||
    { LD_LIBRARY_PATH="$P/lib" ldd "$tmp/outside/demo_so" | grep -q "$P/lib/libfp4diag.so.0" ||
      { echo "demo_so does not use the installed libfp4diag.so.0"; exit 1; }; }
"$tmp/outside/demo_static" "$F" "$T" "$OPTS" "$tmp/st.json" >"$tmp/st.txt" 2>"$tmp/st.err" ||
    { cat "$tmp/st.err"; echo "demo (static) failed"; exit 1; }
# the program's version is the library's
v=$(sed -n 's/^fp4diag library \([^ ]*\) .*/\1/p' "$tmp/so.err")
[ -n "$v" ] && [ "$("$FP4DIAG" --version | head -n 1)" = "fp4diag $v" ] ||
    { echo "fp4diag --version is not 'fp4diag $v' (the library's)"; exit 1; }
cmp -s "$tmp/so.txt" "$tmp/st.txt" || { diff "$tmp/so.txt" "$tmp/st.txt"; echo "static != shared"; exit 1; }
cmp -s "$tmp/so.json" "$tmp/st.json" || { echo "static JSON != shared JSON"; exit 1; }
python3 - "$tmp/cli.json" "$tmp/so.json" "$tmp/so.txt" "$T" <<'PY' || exit 1
import json, sys
cli_text = open(sys.argv[1]).read()
api_text = open(sys.argv[2]).read()
rep = json.loads(cli_text)
ent = [t for t in rep["tensors"] if t["name"] == sys.argv[4]]
assert len(ent) == 1, [t["name"] for t in rep["tensors"]]
ent = ent[0]
# the JSON: the report's entry byte for byte, less the nesting's two tabs per line
lines = api_text.rstrip("\n").split("\n")
nested = "\n".join([lines[0]] + ["\t\t" + l for l in lines[1:]])
assert api_text.endswith("}\n") and nested in cli_text, "JSON text is not the report's entry"
assert json.loads(api_text) == ent
# the struct's numbers, printed %.17g, are the report's
rows = open(sys.argv[3]).read().splitlines()
assert len(rows) == len(ent["results"]) == 4, rows
# cJSON writes a number as %.15g when that reads back within its tolerance, else %.17g: the
# report's value is the struct's exactly, or the struct's %.15g
def same(text, v):
    if v is None:
        return text == "nan"
    x = float(text)
    return x == v or float("%.15g" % x) == v
for row, r in zip(rows, ent["results"]):
    f = row.split()
    rht = r["rht"]["size"] if r["rht"] else 0
    assert f[:5] == [r["format"], r["scale"], str(r["block"]), str(rht), r["rounding"]], (f, r)
    kv = dict(x.split("=") for x in f[5:])
    for k in ("sqnr_db", "alpha", "delta", "nmse", "bucket_ratio_15"):
        assert same(kv[k], r[k]), (k, kv[k], r[k])
    assert kv["elements"] == str(r["counts"]["elements"]), (kv, r["counts"])
print("api_install: %d configs equal the CLI's report" % len(rows))
PY
exit 0
