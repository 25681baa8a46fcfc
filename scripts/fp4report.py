"""fp4report.py — loading fp4diag JSON reports (SPEC §9, schema fp4diag.report/1) for the
plotting scripts: reading a path or stdin, checking the schema and command, naming results,
ordering tensors by depth, titles from a report's config, and the headless matplotlib set-up."""
import argparse
import json
import math
import os
import re
import sys

SCHEMA = "fp4diag.report/1"
_BLOCK_RE = re.compile(r"/(?:blocks|layers|h|layer)/(\d+)(?:/|$)")


class ReportError(Exception):
    """A report that cannot be read, is not JSON, or is not an fp4diag report."""


def load(path, commands=None):
    """Read one report from `path` ('-' is stdin). `commands`: the commands accepted (None: any).
    Raises ReportError with the file named."""
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except OSError as e:
        raise ReportError(f"{name}: {e.strerror}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ReportError(f"{name}: not JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ReportError(f"{name}: not an fp4diag report (schema is not {SCHEMA!r})")
    if commands and doc.get("command") not in commands:
        raise ReportError(f"{name}: a {doc.get('command')!r} report; this plot reads "
                          + " or ".join(repr(c) for c in commands))
    doc["_path"] = name
    return doc


def load_all(paths, commands=None):
    """Load several reports; stdin may be named once."""
    if sum(p == "-" for p in paths) > 1:
        raise ReportError("only one report can come from stdin")
    return [load(p, commands) for p in paths]


def num(v):
    """A report number, or NaN for null/absent (the sibling status says why)."""
    return float("nan") if v is None else float(v)


def rht_on(result):
    return bool(result.get("rht"))


def rht_label(result):
    r = result.get("rht")
    return f"RHT{r.get('size', '')}" + (f" {r['signs']}" if r.get("signs") not in (None, "te") else "") if r else "no RHT"


def variant(result, with_rht=True):
    """A short name for a result's configuration: 'e2m1 fp32/16 rtne [RHT16]'."""
    s = f"{result['format']} {result['scale']}/{result['block']} {result['rounding']}"
    return s + (f", {rht_label(result)}" if with_rht else "")


def block_index(name):
    """The N of /blocks/N/ (or /layers/N/, /h/N/) in a tensor name; None when there is none."""
    m = _BLOCK_RE.search(name)
    return int(m.group(1)) if m else None


def depth_order(names):
    """Tensor names ordered by depth: /blocks/N/ index first (numerically), then by name;
    names without an index come last."""
    return sorted(names, key=lambda n: (block_index(n) is None, block_index(n) or 0, n))


def short_names(names):
    """Names with their common leading path and common trailing component stripped."""
    if len(names) < 2:
        return list(names)
    parts = [n.strip("/").split("/") for n in names]
    pre = os.path.commonprefix(parts)
    suf = os.path.commonprefix([p[::-1] for p in parts])
    out = []
    for p in parts:
        q = p[len(pre):len(p) - len(suf)] if len(suf) < len(p) - len(pre) else p[len(pre):]
        out.append("/".join(q) or "/".join(p))
    return out


def results(doc):
    """(tensor, result) pairs of a tensors report, in report order."""
    for t in doc.get("tensors", []):
        for r in t.get("results", []):
            yield t, r


def formats(doc):
    """Formats in the order the config lists them (then any others the results hold)."""
    seen = list(doc.get("config", {}).get("formats", []))
    for _, r in results(doc):
        if r["format"] not in seen:
            seen.append(r["format"])
    return seen


def title(doc, what):
    """'WHAT — FILE (command; scale fp32, block 16, rtne, rht both)' from a report's config."""
    c = doc.get("config", {})
    rnd, rht = c.get("rounding"), c.get("rht")
    if isinstance(rnd, dict):  # gemm: per operand tensor
        rnd = "rounding " + " ".join(f"{k} {v}" for k, v in rnd.items())
    if isinstance(rht, dict):  # gemm: per path
        on = [p for p, v in rht.items() if v == "on"]
        rht = ",".join(on) if on else "off"
    bits = [f"recipe {c['recipe']}" if "recipe" in c else None,
            f"scale {c['scale']}" if "scale" in c else None,
            f"block {c['block']}" if "block" in c else None, rnd,
            f"rht {rht}" if rht not in (None, "off") else None,
            f"mx_rule {c['mx_rule']}" if c.get("scale") == "mxfp4" and "mx_rule" in c else None,
            "2D weight scales" if c.get("weight_2d") else None]
    src = doc.get("input", {}).get("file", doc.get("_path", ""))
    return f"{what} — {os.path.basename(src)}\n({doc.get('command', '?')}; " + \
        ", ".join(b for b in bits if b) + ")"


def finite(x):
    return x is not None and math.isfinite(x)


def arg_parser(description, multi=True):
    """The shared command line: REPORT... ('-' for stdin, the default) and --out FILE."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("reports", nargs="*" if multi else "?", default=["-"] if multi else "-",
                   metavar="REPORT", help="report JSON file, or - for stdin (default)")
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="output image; the extension picks the format (.png, .svg, .pdf)")
    p.add_argument("--title", help="replace the title made from the report's config")
    p.add_argument("--dpi", type=int, default=120, help="resolution for raster output (120)")
    return p


def pyplot():
    """matplotlib.pyplot on the headless Agg backend."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, args):
    fig.tight_layout()
    fig.savefig(args.out, dpi=args.dpi)


def main_guard(fn):
    """Run a plot's main: a ReportError or a missing matplotlib is one line on stderr, exit 3;
    bad usage stays argparse's exit 2."""
    try:
        return fn() or 0
    except ReportError as e:
        print(f"{os.path.basename(sys.argv[0])}: {e}", file=sys.stderr)
        return 3
    except ImportError as e:
        print(f"{os.path.basename(sys.argv[0])}: {e} (pip install -r scripts/requirements.txt)",
              file=sys.stderr)
        return 3


_FORMAT_COLORS = {"e2m1": "C0", "e1m2": "C1", "int4": "C2", "e3m0": "C3"}


def color(fmt):
    """A stable color per format (e2m1:max=M shares e2m1's family)."""
    if fmt in _FORMAT_COLORS:
        return _FORMAT_COLORS[fmt]
    return "C4" if fmt.startswith("e2m1") else f"C{5 + hash(fmt) % 5}"
