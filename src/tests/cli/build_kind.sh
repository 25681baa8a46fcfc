#!/bin/sh
# build_kind.sh — objects of one BUILD made for another setting are recompiled (Makefile
# BUILD_STAMP): an object up to date for "cuda=0 mpi=0" is up to date under the same setting and
# out of date once MPI (or CUDA) changes, instead of being linked with objects made for the
# other one. Asked with make -q (nothing is compiled) on a BUILD in a temp dir.
set -u
command -v make >/dev/null 2>&1 || { echo "no make"; exit 77; }
pkg-config --exists mpi-c 2>/dev/null || { echo "no mpi-c: MPI cannot change here"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
B=$tmp/b
mkdir -p "$B/base"
echo 'cuda=0 mpi=0' >"$B/.build-kind"
touch -d '2000-01-01' "$B/.build-kind"
touch "$B/base/term.o"
q() { make -q --no-print-directory BUILD="$B" CUDA=0 "$@" "$B/base/term.o" >/dev/null 2>&1; }
q MPI=0 || fail "the same setting: term.o out of date"
sleep 1
q MPI=1 && fail "MPI=0 then MPI=1: term.o (made for MPI=0) taken as up to date"
grep -qx 'cuda=0 mpi=1' "$B/.build-kind" || fail "the stamp does not say the new setting"
exit 0
