#!/bin/sh
# bundle_mpi.sh — a developer tool: packs an MPI build of fp4diag (MPI=1 CUDA=0: the scaling
# runs are CPU analyses), Debian's Open MPI 4.1 runtime (orterun, libmpi, libopen-rte/pal, the
# MCA plugins that need no fabric library, help files, PMIx and its plugins), every shared
# library these need (glibc and its loader included) and scripts/bench_mpi.sh into one
# relocatable tarball, for a machine that has no Open MPI and no package registry.
#   usage: scripts/bundle_mpi.sh [OUTDIR]          (default ./.dev/mpi; writes OUTDIR/bundle.tar.xz)
#   Env: FP4DIAG=PATH  pack this MPI build instead of building one (make MPI=1 CUDA=0 into a
#        temp dir); KEEP=1 also leaves the unpacked tree at OUTDIR/fp4mpi.
# Needs here: Debian 12 (bookworm) with scripts/install-deps.sh done (libopenmpi-dev, openmpi-bin,
# libpmix2), xz, and a C build.
#
# On the other machine (x86-64 Linux, any distribution; nothing installed, root or not):
#   tar -xJf bundle.tar.xz -C /tmp                  # -> /tmp/fp4mpi (any directory will do)
#   export PATH=/tmp/fp4mpi/bin:$PATH               # mpirun and fp4diag of the bundle
#   mpirun -n 4 --oversubscribe --bind-to none fp4diag sqnr ckpt.h5 -o report.json
#   FP4DIAG=/tmp/fp4mpi/bin/fp4diag sh /tmp/fp4mpi/scripts/bench_mpi.sh   # the scaling table
# How it runs there: bin/fp4diag and bin/mpirun are shell wrappers that start the real programs
# (libexec/) through the bundle's own dynamic loader with --library-path lib:glibc, so no library
# of the host is loaded (the host's glibc may be older than Debian 12's 2.36) and nothing leaks
# into other programs (no LD_LIBRARY_PATH). bin/mpirun exports the Open MPI and PMIx install
# directories (OPAL_PREFIX, OPAL_*DIR, PMIX_*DIR, the MCA component paths) pointing into the
# bundle, and single-node settings: plm isolated (no ssh/rsh), pml ob1 with btl self,vader
# (shared memory, no single-copy mechanism: containers may forbid ptrace), PMIx gds hash, no
# hwloc plugins; any OMPI_MCA_*/PMIX_MCA_* already set wins. mpirun is started as "mpirun" (a
# relative argv[0]), so Open MPI does not add the bundle's lib/ to the ranks' LD_LIBRARY_PATH;
# ranks are bin/fp4diag, which loads through the bundle again. Root: OMPI_ALLOW_RUN_AS_ROOT=1
# and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 are set by bin/mpirun (bench_mpi.sh sets them too).
# Multi-node runs need more (plm rsh with ssh, a btl such as tcp): not what this bundle is for.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-./.dev/mpi}
mkdir -p "$out"
out=$(cd "$out" && pwd)
MA=x86_64-linux-gnu
OMPI_PLUGINS=/usr/lib/$MA/openmpi/lib/openmpi3
PMIX_DIR=/usr/lib/$MA/pmix2
for need in "$OMPI_PLUGINS/mca_pml_ob1.so" /usr/bin/orterun /usr/share/openmpi \
            "$PMIX_DIR/lib/pmix"; do
    [ -e "$need" ] || { echo "bundle_mpi: $need missing (scripts/install-deps.sh)" >&2; exit 1; }
done
command -v xz >/dev/null || { echo "bundle_mpi: xz missing" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT INT TERM
B=$work/fp4mpi
mkdir -p "$B/bin" "$B/libexec" "$B/lib/openmpi" "$B/lib/pmix" "$B/lib/hwloc" "$B/glibc" \
         "$B/share/openmpi" "$B/share/pmix" "$B/etc" "$B/scripts"

# --- the program ----------------------------------------------------------------------------
if [ -n "${FP4DIAG:-}" ]; then
    cp -L "$FP4DIAG" "$B/libexec/fp4diag"
else
    echo "bundle_mpi: building fp4diag (MPI=1 CUDA=0) in $work/build" >&2
    make -C "$root" --no-print-directory -j"$(nproc)" MPI=1 CUDA=0 BUILD="$work/build" \
        BIN="$work/fp4diag" "$work/fp4diag" >"$work/make.log" 2>&1 ||
        { tail -n 30 "$work/make.log" >&2; exit 1; }
    cp "$work/fp4diag" "$B/libexec/fp4diag"
fi
ldd "$B/libexec/fp4diag" | grep -q libmpi ||
    { echo "bundle_mpi: fp4diag is not an MPI build (make MPI=1)" >&2; exit 1; }
cp /usr/bin/orterun "$B/libexec/orterun"

# --- Open MPI's plugins: all but those needing a fabric library (UCX, libfabric, verbs, PSM)
# or OpenSHMEM; pml ob1 + btl vader is what one node uses -----------------------------------
skip_re='libuc[mpst]\.|libfabric|libibverbs|libpsm|libinfinipath|liboshmem|librdmacm|libefa'
for f in "$OMPI_PLUGINS"/*.so; do
    ldd "$f" | grep -Eq "$skip_re" && continue
    cp "$f" "$B/lib/openmpi/"
done
cp "$PMIX_DIR"/lib/pmix/*.so "$B/lib/pmix/"
cp -r /usr/share/openmpi/. "$B/share/openmpi/"
cp -r "$PMIX_DIR"/share/pmix/. "$B/share/pmix/"
# the packaged parameters (mtl ^ofi, btl ^openib...), the site's own lines left out
grep -v '^[[:space:]]*#' /etc/openmpi/openmpi-mca-params.conf | grep . >"$B/etc/openmpi-mca-params.conf" || true
: >"$B/etc/openmpi-default-hostfile"
: >"$B/etc/pmix-mca-params.conf" # Debian's names /usr/lib/.../pmix2/lib/pmix: the env says ours

# --- every shared library these load (ldd's closure); glibc apart ---------------------------
is_glibc() { case $1 in ld-linux*|libc.so*|libm.so*|libmvec.so*|libpthread.so*|libdl.so*|\
    librt.so*|libresolv.so*|libutil.so*|libanl.so*|libnss_*) return 0 ;; esac; return 1; }
ldd "$B/libexec/fp4diag" "$B/libexec/orterun" "$B"/lib/openmpi/*.so "$B"/lib/pmix/*.so 2>/dev/null |
    awk '$2 == "=>" && $3 ~ /^\// {print $1, $3} $1 ~ /^\/.*ld-linux/ {print "ld-linux-x86-64.so.2", $1}' |
    sort -u >"$work/libs"
while read -r name path; do
    if is_glibc "$name"; then d=glibc; else d=lib; fi
    [ -e "$B/$d/$name" ] || cp -L "$path" "$B/$d/$name"
done <"$work/libs"
# name-service modules glibc may load by itself (user and host look-ups)
for n in libnss_files.so.2 libnss_dns.so.2; do
    [ -e "/lib/$MA/$n" ] && cp -L "/lib/$MA/$n" "$B/glibc/$n"
done
chmod 755 "$B/glibc/ld-linux-x86-64.so.2"
strip --strip-debug "$B/libexec/fp4diag" 2>/dev/null || true

# --- wrappers ---------------------------------------------------------------------------------
cat >"$B/bin/fp4diag" <<'EOF'
#!/bin/sh
# fp4diag of the bundle: the bundle's loader and libraries only (scripts/bundle_mpi.sh)
B=$(cd "$(dirname "$0")/.." && pwd -P)
exec "$B/glibc/ld-linux-x86-64.so.2" --library-path "$B/lib:$B/glibc" --argv0 "$0" \
    "$B/libexec/fp4diag" "$@"
EOF
cat >"$B/bin/mpirun" <<'EOF'
#!/bin/sh
# Open MPI's mpirun (orterun) of the bundle, for one node (scripts/bundle_mpi.sh says how)
B=$(cd "$(dirname "$0")/.." && pwd -P)
export OPAL_PREFIX="$B" OPAL_EXEC_PREFIX="$B" OPAL_BINDIR="$B/bin" OPAL_SBINDIR="$B/bin" \
    OPAL_LIBEXECDIR="$B/libexec" OPAL_LIBDIR="$B/lib" OPAL_PKGLIBDIR="$B/lib/openmpi" \
    OPAL_DATAROOTDIR="$B/share" OPAL_DATADIR="$B/share" OPAL_PKGDATADIR="$B/share/openmpi" \
    OPAL_SYSCONFDIR="$B/etc" OPAL_INCLUDEDIR="$B/include" OPAL_PKGINCLUDEDIR="$B/include"
export PMIX_PREFIX="$B" PMIX_LIBDIR="$B/lib" PMIX_PKGLIBDIR="$B/lib/pmix" \
    PMIX_DATAROOTDIR="$B/share" PMIX_DATADIR="$B/share" PMIX_PKGDATADIR="$B/share/pmix" \
    PMIX_SYSCONFDIR="$B/etc" PMIX_INCLUDEDIR="$B/include" PMIX_PKGINCLUDEDIR="$B/include"
export OMPI_MCA_mca_base_component_path="$B/lib/openmpi" \
    PMIX_MCA_mca_base_component_path="$B/lib/pmix" \
    OMPI_MCA_mca_base_param_files="$B/etc/openmpi-mca-params.conf" \
    OMPI_MCA_orte_default_hostfile="$B/etc/openmpi-default-hostfile" \
    HWLOC_PLUGINS_PATH="$B/lib/hwloc"
# vader's shared memory lives in /dev/shm; a machine without a writable one uses TMPDIR
[ -d /dev/shm ] && [ -w /dev/shm ] ||
    : "${OMPI_MCA_btl_vader_backing_directory:=${TMPDIR:-/tmp}}"
[ -n "${OMPI_MCA_btl_vader_backing_directory:-}" ] && export OMPI_MCA_btl_vader_backing_directory
: "${OMPI_MCA_plm:=isolated}" "${OMPI_MCA_pml:=ob1}" "${OMPI_MCA_btl:=self,vader}" \
  "${OMPI_MCA_btl_vader_single_copy_mechanism:=none}" "${PMIX_MCA_gds:=hash}" \
  "${OMPI_ALLOW_RUN_AS_ROOT:=1}" "${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:=1}"
export OMPI_MCA_plm OMPI_MCA_pml OMPI_MCA_btl OMPI_MCA_btl_vader_single_copy_mechanism \
    PMIX_MCA_gds OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
exec "$B/glibc/ld-linux-x86-64.so.2" --library-path "$B/lib:$B/glibc" --argv0 mpirun \
    "$B/libexec/orterun" "$@"
EOF
chmod 755 "$B/bin/fp4diag" "$B/bin/mpirun"
cp "$root/scripts/bench_mpi.sh" "$root/scripts/make_scale_ckpt.py" "$root/scripts/bench_e2e.py" \
    "$root/scripts/fp4dump.py" "$B/scripts/"
(cd "$root" && git describe --always --dirty 2>/dev/null || echo unknown) >"$B/VERSION"

# --- a check here, then the tarball -----------------------------------------------------------
"$B/bin/fp4diag" --version | grep -q '^mpi: on' || { echo "bundle_mpi: bundled fp4diag fails" >&2; exit 1; }
tar -C "$work" -cf - fp4mpi | xz -T0 -6 >"$out/bundle.tar.xz.tmp"
mv "$out/bundle.tar.xz.tmp" "$out/bundle.tar.xz"
[ "${KEEP:-0}" = 1 ] && { rm -rf "$out/fp4mpi"; cp -a "$B" "$out/fp4mpi"; }
echo "bundle_mpi: $out/bundle.tar.xz ($(du -k "$out/bundle.tar.xz" | cut -f1) KiB;" \
     "unpacked $(du -sk "$B" | cut -f1) KiB; $(ls "$B/lib/openmpi" | wc -l) Open MPI plugins)" >&2
