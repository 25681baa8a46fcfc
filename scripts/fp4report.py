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
AUDIT_SCHEMA = "fp4diag.audit/1"  # `fp4diag audit` (SPEC §11): plot_audit.py draws it
# '/' and '.' both separate components: "/blocks/3/fc1/weight", "model.layers.3.mlp.up_proj.weight"
_BLOCK_RE = re.compile(r"(?:^|[/.])(?:blocks|block|blk|layers|h|layer)[/.](\d+)(?:[/.]|$)")


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
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema == AUDIT_SCHEMA and (not commands or "audit" not in commands):
        raise ReportError(f"{name}: an audit report ({AUDIT_SCHEMA!r}); this plot reads the "
                          f"analyses' reports ({SCHEMA!r}): scripts/plot_audit.py draws an "
                          "audit report")
    if schema not in (SCHEMA, AUDIT_SCHEMA):
        raise ReportError(f"{name}: not an fp4diag report (schema is not {SCHEMA!r} or "
                          f"{AUDIT_SCHEMA!r})")
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
    """The N of /blocks/N/ (or /block/N/, /layers/N/, /h/N/, GGUF's blk.N., and with '.':
    model.layers.N., T5's encoder.block.N.layer.M.: the leftmost) in a tensor name; None when
    there is none."""
    m = _BLOCK_RE.search(name)
    return int(m.group(1)) if m else None


_EMBED_RE = re.compile(r"(^|[/.])(tok|pos|wte|wpe|embed|embedding|embeddings|emb)[^/.]*([/.]|$)", re.I)
_HEAD_RE = re.compile(r"(^|[/.])(head|lm_head|lnf|ln_f|final|norm_f|final_norm|out|norm)[^/.]*([/.]|$)",
                      re.I)


def depth_group(name):
    """0: embeddings (tok, pos, wte, wpe), 1: /blocks/N/ tensors, 2: others, 3: the head and the
    final norm (head, lm_head, lnf, ln_f)."""
    if block_index(name) is not None:
        return 1
    if _EMBED_RE.search(name):
        return 0
    if _HEAD_RE.search(name):
        return 3
    return 2


# What 4-bit recipes keep in high precision: a copy of the table of src/run/recipe.c (SPEC §9
# "Default selection"; cli/plots_depth_model.sh checks that both agree on testdata/select).
# (kind, glob, on) with on "leaf" (the last component) or "module" (the name without it);
# names lower-cased, '/' read as '.', fnmatch with '*' crossing dots; first match wins.
RECIPE_RULES = [
    ("bias", "*bias", "leaf"),
    ("output head", "*lm_head*", "module"), ("output head", "*embed_out", "module"),
    ("output head", "*unembedding*", "module"), ("output head", "*proj_out", "module"),
    ("output head", "*output_layer*", "module"), ("output head", "output", "module"),
    ("embedding", "*embed*", "module"), ("embedding", "wte", "module"),
    ("embedding", "*.wte", "module"), ("embedding", "wpe", "module"),
    ("embedding", "*.wpe", "module"), ("embedding", "shared", "module"),
    ("embedding", "*relative_attention_bias", "module"),
    ("norm", "*norm*", "module"), ("norm", "ln[_f0-9]*", "module"),
    ("norm", "*.ln[_f0-9]*", "module"),
    ("MoE router", "*router*", "module"), ("MoE router", "*block_sparse_moe.gate", "module"),
    ("MoE router", "*mlp.gate", "module"), ("MoE router", "*shared_expert_gate", "module"),
    ("conv1d", "*mixer.conv1d", "module"), ("conv1d", "*linear_attn.conv1d", "module"),
]


def recipe_keeps(name):
    """The kind of the recipe rule that keeps tensor `name` in high precision, or None."""
    import fnmatch
    full = name.lstrip("/").replace("/", ".").lower()
    mod, _, leaf = full.rpartition(".")
    if not mod:
        mod, leaf = full, full
    for kind, glob, on in RECIPE_RULES:
        if fnmatch.fnmatchcase(leaf if on == "leaf" else mod, glob):
            return kind
    return None


# A tensor's place in its block, in model order: the attention's input projections (parallel:
# q, k, v), its output projection, the MLP's input projections (parallel: gate, up; every
# expert's), its output projection; anything else after them.
_ROLES = [  # in each role its members in the order they are drawn (q before k before v)
    ("qkv", ("q_proj", "k_proj", "v_proj", "qkv_proj", "c_attn", "query", "key", "value", "q",
             "k", "v", "qkv", "wqkv", "query_key_value", "in_proj", "attn_q", "attn_k", "attn_v",
             "attn_qkv")),
    ("o", ("o_proj", "out_proj", "o", "proj", "dense", "c_proj@attn", "wo@attn", "attn_output")),
    ("gate|up", ("gate_proj", "up_proj", "w1", "w3", "fc1", "c_fc", "gate_up_proj", "wi", "wi_0",
                 "wi_1", "dense_h_to_4h", "mlp1", "ffn_gate", "ffn_up", "ffn_gate_exps",
                 "ffn_up_exps")),
    ("down", ("down_proj", "w2", "fc2", "c_proj", "wo", "dense_4h_to_h", "mlp2", "ffn_down",
              "ffn_down_exps")),
]


def _leaf_module(name):
    """(module path, last module name) of a tensor name, '.'-separated, lower case, the
    trailing weight/scale dropped."""
    parts = name.lstrip("/").replace("/", ".").lower().split(".")
    if parts and parts[-1] in ("weight", "scale"):
        parts = parts[:-1]
    last = parts[-1].replace("_weight", "") if parts else ""  # gpt-oss: mlp1_weight
    return ".".join(parts[:-1]), last


def branch_role(name):
    """(index, label) of a tensor's role in its block (see _ROLES); (4, its module) otherwise."""
    path, last = _leaf_module(name)
    attn = any(("attn" in p or "attention" in p) for p in path.split("."))
    if attn:  # names that mean the attention's output there (GPT-2 c_proj, T5 wo)
        for i, (label, names) in enumerate(_ROLES):
            if last + "@attn" in names:
                return i, label
    for i, (label, names) in enumerate(_ROLES):
        if last in names:
            return i, label
    return 4, last


def _natural(name):
    """A sort key reading digit runs as numbers: experts.2 before experts.10."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", name)]


def model_key(name):
    """The sort key of a tensor in model order: embeddings, then blocks by numeric index, in a
    block by role (q/k/v, o, gate/up, down, others by module name) and in a role by module path
    (experts.2 before experts.10) and member (q, k, v; gate, up), then other tensors, the head
    and final norm last."""
    ri, rl = branch_role(name)
    path, last = _leaf_module(name)
    member = _ROLES[ri][1].index(last) if ri < 4 and last in _ROLES[ri][1] else 0
    return (depth_group(name), block_index(name) or 0, ri, rl if ri == 4 else "",
            _natural(path), member, _natural(name))


def model_order(names):
    """Tensor names in model order (model_key): the one order every plot draws tensors in."""
    return sorted(names, key=model_key)


def depth_order(names):
    """model_order (its former name)."""
    return model_order(names)


def model_stages(names):
    """The tensors in model order, grouped into stages along the residual stream: what recipes
    keep in high precision left out (recipe_keeps); per block (numeric index) the parallel
    members of a role (q/k/v; gate/up; the experts) one stage; others one stage each.
    Returns [(label, [names])]."""
    kept = [n for n in names if recipe_keeps(n) is None]
    stages = []
    for n in model_order(kept):
        b, (ri, rl) = block_index(n), branch_role(n)
        gid = (depth_group(n), b, ri, rl) if b is not None else ("t", n)
        label = f"{b} {rl}" if b is not None else n.lstrip("/")
        if stages and stages[-1][2] == gid:
            stages[-1][1].append(n)
        else:
            stages.append((label, [n], gid))
    return [(label, members) for label, members, _ in stages]


def by_depth(names):
    """Whether depth_order means anything for these names (some carry a /blocks/N/ index)."""
    return any(block_index(n) is not None for n in names)


LEGEND_IN = 2.8  # inches kept right of the axes for a legend placed outside them


def tick_layout(n, per=0.35, base=3.0, max_width=16.0, min_font=6.0, legend=LEGEND_IN):
    """(figure width in inches, tick font size in pt, rotation, label step) for n tensors along
    x, with `legend` inches beside the axes. The width grows with n up to max_width; the font is
    what the space per tick holds, at most 8 pt and never under min_font: where even min_font
    does not fit, only every step-th tick is labelled (step > 1), so no label is ever too small
    to read."""
    width = min(max_width, max(6.0, per * n + base) + legend)
    slot = (width - 1.4 - legend) * 72.0 / max(n, 1)  # points of axis per tick
    font, step = min(8.0, slot * 0.8), 1
    if font < min_font:
        step = int(math.ceil(min_font / (slot * 0.8)))
        font = min_font
    rot = 0 if n <= 4 else 45 if n <= 30 else 90
    return width, font, rot, step


def ordinal(n):
    """'2nd', '3rd', '4th', '11th', '21st': for 'every 3rd labelled'."""
    suf = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suf}"


def label_ticks(ax, labels, font, rot, step=1):
    """x ticks at 0..n-1 with these labels (every step-th one when step > 1)."""
    idx = list(range(0, len(labels), step))
    ax.set_xticks(idx)
    ax.set_xticklabels([labels[i] for i in idx], rotation=rot, fontsize=font,
                       ha="right" if rot == 45 else "center",
                       rotation_mode="anchor" if rot == 45 else "default")


def label_height(labels, font, rot):
    """Inches the x tick labels take below the axis at this font and rotation."""
    longest = max((len(x) for x in labels), default=0) * font * 0.6 / 72.0
    return {0: font / 72.0 * 1.5, 45: longest * 0.72 + 0.1}.get(rot, longest + 0.1)


def coincide(a, b, tol=1e-9):
    """Whether two equal-length sequences of numbers agree (NaN matches NaN)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x != x and y != y:
            continue
        if x != x or y != y or abs(x - y) > tol * max(1.0, abs(x), abs(y)):
            return False
    return True


def identical_groups(series):
    """Configurations that give the same numbers, grouped: `series` maps a key to its values
    (a sequence, or a dict tensor -> value); keys whose values coincide everywhere (the same
    tensors, the same numbers, NaN matching NaN) form one group. Identity is decided by the
    numbers alone, never by name (e1m2 and int4 coincide with block scales: their grids differ
    by a factor of 2 that the scale absorbs). Returns [[key, ...], ...], each group and the
    groups in the order of `series`."""
    def vals(v):
        return (sorted(v), [v[n] for n in sorted(v)]) if isinstance(v, dict) else (None, list(v))
    groups = []
    for k, v in series.items():
        kn, kv = vals(v)
        for g in groups:
            gn, gv = vals(series[g[0]])
            if gn == kn and coincide(gv, kv):
                g.append(k)
                break
        else:
            groups.append([k])
    return groups


def group_label(keys, label):
    """One name for a group of identical configurations: 'e1m2 = int4' + the rest when they
    differ in the format (key[0]) only, else their labels joined by ' = '. `label(key, fmt)` is
    the label of a key with its format written as fmt."""
    if len(keys) > 1 and all(k[1:] == keys[0][1:] for k in keys):
        return label(keys[0], " = ".join(k[0] for k in keys))
    return " = ".join(label(k, k[0]) for k in keys)


ELIDE = "…"


def elide(name, width):
    """`name` cut to at most `width` characters by an ellipsis in the middle, the start and the
    end (where HF names differ: layer index, module) kept: 'layers.3.blo…experts.7.w1'."""
    if len(name) <= width:
        return name
    if width < 3:
        return name[:width]
    tail = (width - 1) // 2 + (width - 1) % 2
    head = width - 1 - tail
    return name[:head] + ELIDE + name[len(name) - tail:]


TICK_CHARS = 32  # tick labels longer than this are elided in the middle


def tick_labels(names, width=TICK_CHARS):
    """Axis labels for tensor names: short_names, elided in the middle to `width` characters.
    Distinct names stay distinct: where eliding would make two labels equal, they keep more."""
    short = short_names(names)
    for w in range(width, max(len(x) for x in short + [""]) + 1):
        out = [elide(x, w) for x in short]
        if len(set(out)) == len(set(short)):
            return out
    return short


def short_names(names):
    """Names with their common leading path and common trailing component stripped."""
    if len(names) < 2:
        return list(names)
    sep = "/" if any("/" in n.strip("/") for n in names) else "."
    parts = [n.strip("/").split(sep) for n in names]
    pre = os.path.commonprefix(parts)
    suf = os.path.commonprefix([p[::-1] for p in parts])
    out = []
    for p in parts:
        q = p[len(pre):len(p) - len(suf)] if len(suf) < len(p) - len(pre) else p[len(pre):]
        out.append(sep.join(q) or sep.join(p))
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


def skipped_note(doc):
    """'N tensors not analysed (rank 1: 11, ...)' from a report's `skipped` list, or ''."""
    sk = doc.get("skipped") or []
    if not sk:
        return ""
    why = {}
    for e in sk:
        r = str(e.get("reason", "?"))
        r = "excluded by --exclude" if r.startswith("excluded") else r
        why[r] = why.get(r, 0) + 1
    return (f"{len(sk)} tensor{'s' if len(sk) != 1 else ''} not analysed (" +
            ", ".join(f"{k}: {v}" for k, v in sorted(why.items(), key=lambda kv: -kv[1])) + ")")


def note_skipped(ax, doc):
    """The skipped note right of the axes' lower corner (below the legend), when there is one."""
    import textwrap
    n = skipped_note(doc)
    if n:
        ax.text(1.01, 0.0, textwrap.fill(n, 44), transform=ax.transAxes, ha="left",
                va="bottom", fontsize=7, color="0.3")


def finite(x):
    return x is not None and math.isfinite(x)


def describe(doc):
    """The --help description from a script's docstring: its text after 'name.py — ', whole
    sentences (the docstring's paragraphs, joined)."""
    text = doc.split(" — ", 1)[1] if " — " in doc.split("\n", 1)[0] else doc
    text = " ".join(text.split())
    return text[0].upper() + text[1:] if text else text


class UsageError(Exception):
    """A bad command line found after argparse (e.g. --out naming an input): exit 2."""


def arg_parser(doc, multi=True):
    """The shared command line: REPORT... ('-' for stdin, the default) and --out FILE. `doc`
    is the script's docstring; its text is the --help description."""
    p = argparse.ArgumentParser(description=describe(doc),
                                epilog="Without --out the image goes beside the (first) report: "
                                "REPORT.json -> REPORT.KIND.png, or KIND.png in the current "
                                "directory for stdin. The path written is said on stderr.")
    p.add_argument("reports", nargs="*" if multi else "?", default=["-"] if multi else "-",
                   metavar="REPORT", help="report JSON file, or - for stdin (default)")
    p.add_argument("--out", "-o", metavar="FILE",
                   help="output image; the extension picks the format (.png, .svg, .pdf); "
                   "default: beside the report")
    p.add_argument("--title", help="replace the title made from the report's config")
    p.add_argument("--dpi", type=int, default=120, help="resolution for raster output (120)")
    return p


_IMAGE_EXTS = {".png": "png", ".svg": "svg", ".pdf": "pdf", ".jpg": "jpg", ".jpeg": "jpg"}


def out_path(args, kind):
    """Decide args.out before any plotting: the given path, or beside the first report
    (REPORT.KIND.png; KIND.png for stdin). Raises UsageError when it names an input report, has
    an unknown extension, or its directory does not exist."""
    reports = args.reports if isinstance(args.reports, list) else [args.reports]
    if not args.out:
        first = reports[0] if reports else "-"
        if first == "-":
            args.out = f"{kind}.png"
        else:
            stem = os.path.splitext(first)[0]
            args.out = f"{stem}.{kind}.png"
        args.out_defaulted = True
    else:
        args.out_defaulted = False
    real = os.path.realpath(args.out)
    for r in reports:
        if r != "-" and os.path.exists(r) and os.path.realpath(r) == real:
            raise UsageError(f"--out {args.out} is the input report {r}; give another --out")
    ext = os.path.splitext(args.out)[1].lower()
    if ext not in _IMAGE_EXTS:
        raise UsageError(f"--out {args.out}: unknown image type {ext or '(none)'!r}; "
                         "use .png, .svg or .pdf")
    d = os.path.dirname(real)
    if not os.path.isdir(d):
        raise UsageError(f"--out {args.out}: directory {os.path.dirname(args.out) or d} "
                         "does not exist")
    if os.path.isdir(real):
        raise UsageError(f"--out {args.out} is a directory; give a file name")
    return args.out


def pyplot():
    """matplotlib.pyplot on the headless Agg backend."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def wrap(text, width_in, fontsize):
    """Text wrapped (per line) to fit width_in inches at fontsize points, so no title is cut."""
    import textwrap
    chars = max(20, int(width_in * 72.0 / (fontsize * 0.56)))
    return "\n".join(textwrap.fill(line, chars) for line in text.split("\n"))


def set_title(ax, text, fontsize=10, legend=LEGEND_IN):
    """An axes title wrapped to the width the axes get (the figure's, less `legend` inches kept
    for a legend outside them)."""
    ax.set_title(wrap(text, (ax.figure.get_figwidth() - legend) * 0.92, fontsize),
                 fontsize=fontsize)


def save(fig, args):
    """Lay out and write the figure to args.out whole: drawn into a temporary file beside it,
    then renamed (an existing file is replaced only by a complete image)."""
    import tempfile
    fig.tight_layout()
    out = args.out
    ext = os.path.splitext(out)[1].lower()
    d = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(prefix=".plot-", suffix=ext, dir=d)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=args.dpi, format=_IMAGE_EXTS.get(ext, "png"))
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise
    print(f"{os.path.basename(sys.argv[0])}: wrote {out}", file=sys.stderr)


def main_guard(fn):
    """Run a plot's main: a ReportError or a missing matplotlib is one line on stderr, exit 3;
    a UsageError (and argparse's own) exit 2."""
    try:
        return fn() or 0
    except UsageError as e:
        print(f"{os.path.basename(sys.argv[0])}: {e}", file=sys.stderr)
        return 2
    except ReportError as e:
        print(f"{os.path.basename(sys.argv[0])}: {e}", file=sys.stderr)
        return 3
    except OSError as e:
        print(f"{os.path.basename(sys.argv[0])}: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        return 3
    except ImportError as e:
        print(f"{os.path.basename(sys.argv[0])}: {e} (pip install -r scripts/requirements.txt)",
              file=sys.stderr)
        return 3


_FORMAT_COLORS = {"e2m1": "C0", "e1m2": "C1", "int4": "C2", "e3m0": "C3"}


def color(fmt):
    """A fixed color per format, the same in every panel and plot (e2m1:max=M shares e2m1's
    family; an unknown format gets one from a stable hash of its name)."""
    if fmt in _FORMAT_COLORS:
        return _FORMAT_COLORS[fmt]
    if fmt.startswith("e2m1"):
        return "C4"
    return f"C{5 + sum(fmt.encode()) % 5}"
