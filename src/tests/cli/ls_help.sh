#!/bin/sh
# ls_help.sh — help and version exit 0 and print usage; an unknown option exits 2 (SPEC §9).
set -u
"$FP4DIAG" --help | grep -q '^  ls ' || { echo "--help lacks ls"; exit 1; }
"$FP4DIAG" help ls | grep -q '^usage: fp4diag ls' || { echo "help ls"; exit 1; }
"$FP4DIAG" ls --help | grep -q '^usage: fp4diag ls' || { echo "ls --help"; exit 1; }
"$FP4DIAG" --version | grep -Eq '^fp4diag [0-9]+\.[0-9]+' || { echo "--version"; exit 1; }
"$FP4DIAG" --version | grep -Eq "^mpi: (on|off) " || { echo "--version: no mpi line"; exit 1; }
"$FP4DIAG" ls --no-such-option testdata/gpt_ckpt_small.h5 >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || { echo "unknown option exited $rc, want 2"; exit 1; }
"$FP4DIAG" ls >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || { echo "ls without FILE exited $rc, want 2"; exit 1; }
exit 0
