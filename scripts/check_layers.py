#!/usr/bin/env python3
"""check_layers.py — the layer rule of src/ (README, "Layout"), checked on every #include.

Every file of src/ sits in a wing (its first folder; src/main.c is the program's entry). A wing
may include its own files and those of the wings below it:

    main.c > cmd/ > api/ > report/ > run/ > backend/ > io/ > engine/ > num/ > base/

with two exceptions across the line: io/ includes nothing of engine/ (how tensors are read is
none of the CPU engine's business; the backend joins the two), and the headers outside src/
are reached only by those that need them: kernels/kernels.h (CUDA launchers) by backend/ and
run/, include/fp4diag.h (the public face) by api/ and cmd/. Quoted includes name their wing
("io/source.h"); a bare name is taken from the including file's folder.

It fails (exit 1, one line per finding) on
  - an include that goes up, or across where forbidden;
  - a file of src/ outside a wing, or in a folder the rule does not name;
  - a quoted include that resolves to no file;
  - a cycle of includes between files of different wings (x.c and x.h count as one unit);
  - an entry of KNOWN that no longer happens (so that the table stays true).
KNOWN lists violations that cannot be removed yet, each with its reason; it is empty now.

src/tests/ (suites may include anything), kernels/bench/ (a benchmark program, as scripts/ has)
and files outside src/ and kernels/ are not checked; kernels/ include base/ only.

Usage: check_layers.py [--root DIR] [-v]     check the tree at DIR (default: the checkout)
       check_layers.py --self-test           show on made-up trees that each rule can fail
"""
import os
import re
import sys
import tempfile

# bottom to top
WINGS = ["base", "num", "engine", "io", "backend", "run", "report", "api", "cmd", "main"]
LEVEL = {w: i for i, w in enumerate(WINGS)}

# (from wing, to wing) pairs that the order would allow but the rule forbids
ACROSS = {
    ("io", "engine"): "readers know nothing of the CPU engine (the backend joins them)",
}

# headers outside src/: the wings that may include them
OUTSIDE = {
    "kernels": {"backend", "run"},      # kernels/kernels.h: CUDA launchers
    "include": {"api", "cmd", "main"},  # include/fp4diag.h: the public face
}

# Violations that cannot be removed yet: (file, included path as written) -> why. The check
# fails when one of them no longer happens: delete its entry then.
KNOWN = {
}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SKIP_DIRS = {"tests"}


def wing_of(rel):
    """The wing of a path relative to the root (src/x/..., kernels/..., include/...)."""
    parts = rel.split("/")
    if parts[0] == "src":
        if len(parts) == 2:
            return "main" if parts[1] == "main.c" else None
        return parts[1]
    return parts[0]


def resolve(root, rel, inc):
    """The file an include names, relative to root, or None."""
    here = os.path.dirname(rel)
    cands = [os.path.join(here, inc), os.path.join("src", inc), os.path.join("kernels", inc),
             os.path.join("include", inc)]
    if "/" in inc:  # a wing-qualified name is never taken from the folder
        cands = cands[1:]
    for c in cands:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def sources(root):
    out = []
    for top in ("src", "kernels"):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            rd = os.path.relpath(d, root)
            sub = rd.split(os.sep)[1:2]
            if sub and (top == "src" and sub[0] in SKIP_DIRS or top == "kernels" and
                        sub[0] == "bench"):
                dirs[:] = []
                continue
            for f in sorted(files):
                if f.endswith((".c", ".h", ".cu", ".cuh")):
                    out.append(os.path.join(rd, f).replace(os.sep, "/"))
            dirs.sort()
    return sorted(out)


def allowed(src_wing, dst_wing):
    """None when src_wing may include dst_wing, else why not."""
    if src_wing == dst_wing:
        return None
    if src_wing == "kernels":
        return None if dst_wing == "base" else "kernels/ include base/ only"
    if dst_wing in OUTSIDE:
        if src_wing in OUTSIDE[dst_wing]:
            return None
        return "%s/ is for %s only" % (dst_wing, ", ".join(sorted(OUTSIDE[dst_wing])))
    if src_wing not in LEVEL or dst_wing not in LEVEL:
        return "not in the layer rule"
    if (src_wing, dst_wing) in ACROSS:
        return "across: " + ACROSS[(src_wing, dst_wing)]
    if LEVEL[dst_wing] > LEVEL[src_wing]:
        return "up: %s/ is above %s/" % (dst_wing, src_wing)
    return None


def unit(path):
    return os.path.splitext(path)[0]


def cycles(edges):
    """Strongly connected components with more than one unit (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    nodes = sorted(set(edges) | {v for vs in edges.values() for v in vs})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def check(root, known=None, verbose=False):
    """The findings (list of one-line strings) for the tree at root."""
    known = KNOWN if known is None else known
    problems, seen_known = [], set()
    edges = {}
    nincl = 0
    for rel in sources(root):
        w = wing_of(rel)
        if w not in LEVEL and w not in OUTSIDE:
            problems.append("%s: in no wing of the layer rule (src/%s/ is not in WINGS of "
                            "scripts/check_layers.py; add it there and to the README's "
                            "Layout)" % (rel, w) if w else
                            "%s: on the top level of src/ (only main.c is; move it into a "
                            "wing)" % rel)
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in INCLUDE_RE.finditer(text):
            inc = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            dst = resolve(root, rel, inc)
            if dst is None:
                problems.append("%s:%d: includes \"%s\", which names no file of the tree "
                                "(name its wing: \"io/source.h\")" % (rel, line, inc))
                continue
            nincl += 1
            if unit(dst) != unit(rel):
                edges.setdefault(unit(rel), set()).add(unit(dst))
            why = allowed(w, wing_of(dst))
            if why is None:
                continue
            if (rel, inc) in known:
                seen_known.add((rel, inc))
                continue
            problems.append("%s:%d: includes \"%s\": %s/ may not include %s/ (%s)"
                            % (rel, line, inc, w, wing_of(dst), why))
    for comp in cycles(edges):
        wings = sorted({wing_of(u) for u in comp})
        if len(wings) > 1:
            problems.append("cycle of includes across wings %s: %s"
                            % ("/".join(wings), " -> ".join(comp)))
    for k in sorted(set(known) - seen_known):
        problems.append("KNOWN %s -> \"%s\" no longer happens: delete its entry in "
                        "scripts/check_layers.py" % k)
    if verbose:
        print("check_layers: %d files, %d includes, %d known" %
              (len(sources(root)), nincl, len(known)))
    return problems


def self_test():
    """Each rule fails on a made-up tree made to break it, and a clean tree passes."""
    def tree(files):
        d = tempfile.mkdtemp(prefix="check_layers.")
        for path, text in files.items():
            p = os.path.join(d, path)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        return d

    base = {"src/base/status.h": "", "src/num/format.h": '#include "base/status.h"\n',
            "src/io/source.h": '#include "base/status.h"\n#include "num/format.h"\n',
            "src/engine/engine.h": '#include "num/format.h"\n',
            "src/cmd/options.h": '#include "io/source.h"\n',
            "src/main.c": '#include "cmd/options.h"\n',
            "src/tests/test_x.c": '#include "cmd/options.h"\n',
            "kernels/kernels.h": '#include "base/status.h"\n',
            "src/backend/cuda.c": '#include "kernels.h"\n#include "engine/engine.h"\n'}
    cases = [
        ("clean", {}, None, None),
        ("up", {"src/run/x.c": '#include "cmd/options.h"\n'}, None, "run/ may not include cmd/"),
        ("across", {"src/io/x.c": '#include "engine/engine.h"\n'}, None, "across"),
        ("outside", {"src/num/m.c": '#include "kernels.h"\n'}, None, "kernels/ is for"),
        ("kernels up", {"kernels/q.cu": '#include "io/source.h"\n'}, None, "kernels/ include"),
        ("no wing", {"src/stray.c": ""}, None, "top level of src/"),
        ("new wing", {"src/zzz/a.c": ""}, None, "in no wing"),
        ("dangling", {"src/io/y.c": '#include "nothere.h"\n'}, None, "names no file"),
        ("cycle", {"src/io/a.h": '#include "io/b.h"\n', "src/io/b.h": '#include "num/c.h"\n',
                   "src/num/c.h": '#include "io/a.h"\n'}, None, "cycle of includes across"),
        ("known holds", {"src/run/x.c": '#include "cmd/options.h"\n'},
         {("src/run/x.c", "cmd/options.h"): "test"}, None),
        ("known stale", {}, {("src/run/x.c", "cmd/options.h"): "test"}, "no longer happens"),
    ]
    bad = 0
    for name, extra, known, want in cases:
        files = dict(base)
        files.update(extra)
        d = tree(files)
        probs = check(d, known=known or {})
        if want is None:
            ok = not probs
        else:
            ok = any(want in p for p in probs)
        if not ok:
            bad += 1
            print("self-test %s: expected %s, got %s" % (name, want or "no finding", probs))
        os.system("rm -rf -- '%s'" % d)
    print("check_layers self-test: %d cases, %d failed" % (len(cases), bad))
    return 1 if bad else 0


def main(argv):
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    verbose = "-v" in argv
    if "--self-test" in argv:
        return self_test()
    if "--root" in argv:
        root = argv[argv.index("--root") + 1]
    problems = check(root, verbose=verbose)
    for p in problems:
        print("check_layers: " + p)
    if problems:
        print("check_layers: %d finding(s); the rule is in the README's Layout section"
              % len(problems))
        return 1
    print("check_layers: ok (%s)" % " > ".join(w + ("" if w == "main" else "/")
                                               for w in reversed(WINGS)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
