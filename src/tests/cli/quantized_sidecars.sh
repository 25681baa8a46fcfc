#!/bin/sh
# quantized_sidecars.sh — a quantized checkpoint's hf_quant_config.json / config.json that is
# not a plain file inside the checkpoint (SPEC §10 "Declarations"): a FIFO is refused before any
# open (never waited on), a symlink out of the checkpoint's directory is not read without
# --allow-external (read with it), a symlink inside is read, a directory or a file over 64 MiB
# is refused; each is an errors entry on every quantized tensor naming the file and the reason,
# never a hang and never a silent fallback to "no declaration".
set -u
Q=testdata/quantized
[ -d "$Q/modelopt_nvfp4" ] || { echo "no $Q"; exit 77; }
command -v mkfifo >/dev/null 2>&1 || { echo "no mkfifo"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# $1 checkpoint dir, $2 sidecar name, $3 reason expected in the note; ls and audit both
check() {
    out=$(timeout 60 "$FP4DIAG" ls "$1") || fail "ls $1 ($2): exit $?"
    echo "$out" | grep -q "q_proj.weight .*$2: $3" || { echo "$out"; fail "ls $1: no '$2: $3' note"; }
    timeout 60 "$FP4DIAG" audit "$Q/source" "$1" -q -o "$tmp/a.json" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 3 ] || { cat "$tmp/err"; fail "audit $1 ($2): exit $rc, expected 3"; }
    grep -q "$2: $3" "$tmp/a.json" || fail "audit $1: the errors entry does not name '$2: $3'"
}

# hf_quant_config.json a FIFO (ModelOpt)
mkdir "$tmp/fifo" && cp "$Q/modelopt_nvfp4/model.safetensors" "$tmp/fifo/" || exit 1
mkfifo "$tmp/fifo/hf_quant_config.json" || exit 1
check "$tmp/fifo" hf_quant_config.json "a FIFO, not a regular file"

# config.json a FIFO (compressed-tensors)
mkdir "$tmp/cfifo" && cp "$Q/ct_nvfp4/model.safetensors" "$tmp/cfifo/" || exit 1
mkfifo "$tmp/cfifo/config.json" || exit 1
check "$tmp/cfifo" config.json "a FIFO, not a regular file"

# a directory named config.json
mkdir "$tmp/cdir" "$tmp/cdir/config.json" && cp "$Q/ct_nvfp4/model.safetensors" "$tmp/cdir/" || exit 1
check "$tmp/cdir" config.json "a directory, not a regular file"

# over 64 MiB (sparse)
mkdir "$tmp/big" && cp "$Q/modelopt_nvfp4/model.safetensors" "$tmp/big/" || exit 1
truncate -s 67108865 "$tmp/big/hf_quant_config.json" || exit 1
check "$tmp/big" hf_quant_config.json "67108865 bytes, over the 64 MiB"

# an exclude list of more patterns than are read (each is matched against every name)
mkdir "$tmp/many" && cp "$Q/ct_nvfp4/model.safetensors" "$tmp/many/" || exit 1
python3 - "$Q/ct_nvfp4/config.json" "$tmp/many/config.json" <<'PY' || fail "cannot write config.json"
import json, sys
c = json.load(open(sys.argv[1]))
c["quantization_config"]["ignore"] = ["re:x[0-9]+y%d" % i for i in range(65537)]
json.dump(c, open(sys.argv[2], "w"))
PY
check "$tmp/many" config.json "ignore holds 65537 patterns, over the 65536 read"

# "re:" patterns (SPEC §10): one outside the subset the matcher takes is refused naming the
# file, the key and the construct (before: glibc regcomp, or nothing matched); one matches as
# Python's re.match, from the start of the module name and not to its end ("...\.q" names
# q_proj); 65536 of them within the bound are matched at once (glibc: ~10 s per tensor)
mkdir "$tmp/re" && cp "$Q/ct_nvfp4/model.safetensors" "$tmp/re/" || exit 1
python3 - "$Q/ct_nvfp4/config.json" "$tmp/re/config.json" <<'PY' || fail "cannot write config.json"
import json, sys
c = json.load(open(sys.argv[1]))
c["quantization_config"]["ignore"] = ["lm_head", "re:.*(?=q_proj)"]
json.dump(c, open(sys.argv[2], "w"))
PY
check "$tmp/re" config.json "ignore\[1\]: the expression is refused: lookahead (?=...) is not supported"
python3 - "$Q/ct_nvfp4/config.json" "$tmp/re/config.json" <<'PY' || fail "cannot write config.json"
import json, sys
c = json.load(open(sys.argv[1]))
c["quantization_config"]["ignore"] = ["re:([a-z]+[0-9]*)*x%d$" % i for i in range(65535)] + \
    ["re:model\\.layers\\.0\\.self_attn\\.q"]
json.dump(c, open(sys.argv[2], "w"))
PY
out=$(timeout 120 "$FP4DIAG" ls "$tmp/re") || fail "ls, 65536 re: patterns: exit $?"
echo "$out" | grep -q 'q_proj.weight .*stored packed, but config.json ignore names re:model' ||
    { echo "$out"; fail "re: not matched as re.match (a prefix of the module name)"; }
echo "$out" | grep -q 'k_proj.weight .*stored packed' && { echo "$out"; fail "re: matched k_proj"; }

# a key twice (cJSON finds the first, Python's json the last) at any depth; wrong types
mkdir "$tmp/dup" && cp "$Q/modelopt_nvfp4/model.safetensors" "$tmp/dup/" || exit 1
printf '{"quantization": {"quant_algo": "NVFP4"}, "quantization": {"quant_algo": "MXFP4"}}' \
    >"$tmp/dup/hf_quant_config.json"
check "$tmp/dup" hf_quant_config.json "JSON: key quantization appears twice"
mkdir "$tmp/dup2" && cp "$Q/ct_nvfp4/model.safetensors" "$tmp/dup2/" || exit 1
python3 - "$Q/ct_nvfp4/config.json" "$tmp/dup2/config.json" <<'PY' || fail "cannot write config.json"
import json, sys
t = json.dumps(json.load(open(sys.argv[1])))
t = t.replace('"ignore": [', '"ignore": ["x"], "ignore": [', 1)
assert t.count('"ignore"') == 2
open(sys.argv[2], "w").write(t)
PY
check "$tmp/dup2" config.json "JSON: quantization_config: key ignore appears twice"
mkdir "$tmp/str" && cp "$Q/modelopt_nvfp4/model.safetensors" "$tmp/str/" || exit 1
printf '{"quantization": {"quant_algo": "NVFP4", "exclude_modules": "lm_head"}}' \
    >"$tmp/str/hf_quant_config.json"
check "$tmp/str" hf_quant_config.json "exclude_modules is not a list of names"
printf '{"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head", 7]}}' \
    >"$tmp/str/hf_quant_config.json"
check "$tmp/str" hf_quant_config.json "exclude_modules\[1\] is not a name"

# a symlink out of the checkpoint's directory: refused, read with --allow-external
mkdir "$tmp/out" "$tmp/ext" && cp "$Q/modelopt_nvfp4/model.safetensors" "$tmp/out/" || exit 1
cp "$Q/modelopt_nvfp4/hf_quant_config.json" "$tmp/ext/" || exit 1
ln -s ../ext/hf_quant_config.json "$tmp/out/hf_quant_config.json" || exit 1
check "$tmp/out" hf_quant_config.json "outside the checkpoint's directory"
out=$("$FP4DIAG" ls --allow-external "$tmp/out") || fail "ls --allow-external: exit $?"
echo "$out" | grep -Eq '^model\.layers\.0\.self_attn\.q_proj\.weight +32x64 +nvfp4 .*modelopt, nibble low=even' \
    || { echo "$out"; fail "--allow-external: the symlinked declaration not read"; }

# a symlink inside the directory is read
mkdir "$tmp/in" "$tmp/in/meta" && cp "$Q/modelopt_nvfp4/model.safetensors" "$tmp/in/" || exit 1
cp "$Q/modelopt_nvfp4/hf_quant_config.json" "$tmp/in/meta/" || exit 1
ln -s meta/hf_quant_config.json "$tmp/in/hf_quant_config.json" || exit 1
out=$("$FP4DIAG" ls "$tmp/in") || fail "ls inside symlink: exit $?"
echo "$out" | grep -Eq '^model\.layers\.0\.self_attn\.q_proj\.weight +32x64 +nvfp4 .*modelopt, nibble low=even' \
    || { echo "$out"; fail "a symlink inside the checkpoint not read"; }
echo "ok"
