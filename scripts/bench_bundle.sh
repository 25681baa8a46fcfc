#!/bin/sh
# bench_bundle.sh OUT.tar.xz [BASE_DIR] — `make bench` for another x86-64 machine without the
# source tree or the build's libraries: fp4diag, build/bench_read, build/bench_engine,
# scripts/bench_cpu.py, the shared libraries they load (glibc's own left out: the other machine
# has a glibc at least as new) and run.sh, in one archive. With BASE_DIR (a built checkout of
# an older commit), its fp4diag and bench_engine go in as fp4diag.base and bench_engine.base,
# and run.sh also compares the engines one thread at a time, alternating.
# On the other machine:  mkdir -p /tmp/b && tar xJf OUT.tar.xz -C /tmp/b && sh /tmp/b/run.sh
#   run.sh [--all-isa]: bench_cpu.py (make bench) with one row per CPU engine variant when
#   --all-isa, then `bench_engine time 64 1` per variant (and against the base, if bundled).
set -eu
out=$1
base=${2:-}
for f in fp4diag build/bench_read build/bench_engine scripts/bench_cpu.py; do
    [ -e "$f" ] || { echo "bench_bundle: $f missing (make fp4diag build/bench_read build/bench_engine)" >&2; exit 1; }
done
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir "$d/lib"
cp fp4diag build/bench_read build/bench_engine scripts/bench_cpu.py "$d/"
bins="fp4diag build/bench_read build/bench_engine"
if [ -n "$base" ]; then
    cp "$base/fp4diag" "$d/fp4diag.base"
    cp "$base/build/bench_engine" "$d/bench_engine.base"
    bins="$bins $base/fp4diag $base/build/bench_engine"
fi
# shellcheck disable=SC2086
ldd $bins | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
    case $(basename "$lib") in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | ld-linux*) ;;
    *) cp -L "$lib" "$d/lib/" ;;
    esac
done
cat >"$d/run.sh" <<'EOF'
#!/bin/sh
# make bench from this folder (see bench_bundle.sh); arguments go to bench_cpu.py
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FP4DIAG="$here/fp4diag" BENCH_READ="$here/bench_read"
uname -m; grep -m1 'model name' /proc/cpuinfo; nproc
python3 "$here/bench_cpu.py" "$@" || echo "bench_cpu.py failed: $?"
isas=$("$here/fp4diag" --version | sed -n 's/.*(this CPU runs: \([^);]*\).*/\1/p')
echo "== bench_engine time 64 1 (one thread; thread CPU seconds, wall where named), per variant${isas:+: $isas}"
for r in 1 2 3; do
    for v in $isas; do
        FP4DIAG_ISA=$v "$here/bench_engine" time 64 1 | sed "s/^/$v /"
        if [ -x "$here/bench_engine.base" ] && [ "$v" = avx512 ]; then
            # the base times wall clock: so does this pair (an idle host: the same)
            BENCH_WALL=1 FP4DIAG_ISA=$v "$here/bench_engine" time 64 1 | sed "s/^/$v-wall /"
            "$here/bench_engine.base" time 64 1 | sed "s/^/base-wall /"
        fi
    done
done
EOF
chmod +x "$d/run.sh"
tar cJf "$out" -C "$d" .
echo "bench_bundle: $out ($(du -k "$out" | cut -f1) KiB): mkdir -p /tmp/b && tar xJf $out -C /tmp/b && sh /tmp/b/run.sh --all-isa"
