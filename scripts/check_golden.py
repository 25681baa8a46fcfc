#!/usr/bin/env python3
"""check_golden.py — compare a new fp4diag report with a golden one.

usage: check_golden.py GOLDEN NEW [--rtol 1e-9] [--schema schema/report.schema.json]

Numbers must agree within --rtol relative (|a - b| <= rtol * max(|a|, |b|)); integers, strings,
booleans, nulls and the shape of every object and array must match exactly. Ignored: timing,
argv, tool, provenance, and config.device / config.threads (they change no number). With --schema the new
report is also validated (JSON Schema draft 2020-12, needs python3-jsonschema).
Exit 0 when they match, 1 with one line per difference (at most 40) otherwise, 2 on bad input.
"""
import argparse
import json
import sys

IGNORE_TOP = {"timing", "argv", "tool", "provenance"}
IGNORE_CONFIG = {"device", "threads"}


def compare(a, b, path, rtol, out):
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        if a is not b and a != b or type(a) is not type(b):
            out.append(f"{path}: {a!r} != {b!r}")
        return
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            if a != b:
                out.append(f"{path}: {a} != {b}")
        elif abs(a - b) > rtol * max(abs(a), abs(b)):
            out.append(f"{path}: {a!r} != {b!r} (rel {abs(a - b) / max(abs(a), abs(b)):.3g})")
        return
    if type(a) is not type(b):
        out.append(f"{path}: type {type(a).__name__} != {type(b).__name__}")
        return
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if path == "" and k in IGNORE_TOP:
                continue
            if path == "/config" and k in IGNORE_CONFIG:
                continue
            if k not in a:
                out.append(f"{path}/{k}: only in the new report")
            elif k not in b:
                out.append(f"{path}/{k}: missing from the new report")
            else:
                compare(a[k], b[k], f"{path}/{k}", rtol, out)
        return
    if isinstance(a, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items != {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            compare(x, y, f"{path}/{i}", rtol, out)
        return
    if a != b:
        out.append(f"{path}: {a!r} != {b!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("golden")
    ap.add_argument("new")
    ap.add_argument("--rtol", type=float, default=1e-9)
    ap.add_argument("--schema")
    args = ap.parse_args()
    try:
        with open(args.golden) as f:
            golden = json.load(f)
        with open(args.new) as f:
            new = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_golden: {e}", file=sys.stderr)
        return 2
    diffs = []
    if args.schema:
        import jsonschema
        with open(args.schema) as f:
            schema = json.load(f)
        for e in jsonschema.Draft202012Validator(schema).iter_errors(new):
            loc = "/" + "/".join(str(p) for p in e.absolute_path)
            diffs.append(f"schema: {loc}: {e.message[:200]}")
    compare(golden, new, "", args.rtol, diffs)
    for d in diffs[:40]:
        print(d)
    if len(diffs) > 40:
        print(f"... {len(diffs) - 40} more")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
