# producer.sh — sourced by the cases that build variants of the producer fixtures
# (testdata/quantized/producer/) byte for byte and audit them (quantized_twice.sh,
# quantized_scale_names.sh, audit_gate_up.sh, audit_gptoss_original.sh): $P the fixtures, a
# temp dir $tmp removed on exit, fail (its message, then the first lines of $tmp/err when a
# command left one), lib/ on PYTHONPATH for st_raw.py (`from st_raw import read, write,
# write_export`: safetensors files as stored bytes), and
#   need PATH...      skip (77) unless each PATH (relative to $P) exists
#   need_py MODULE... skip (77) unless python3 imports each MODULE
set -u
P=testdata/quantized/producer
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL: $*"
    [ -s "$tmp/err" ] && head -5 "$tmp/err"
    exit 1
}
need() {
    for p in "$@"; do
        [ -e "$P/$p" ] || { echo "no $P/$p"; exit 77; }
    done
}
need_py() {
    for m in "$@"; do
        python3 -c "import $m" 2>/dev/null || { echo "python3 $m not installed"; exit 77; }
    done
}
PYTHONPATH=$PWD/src/tests/cli/lib${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH
