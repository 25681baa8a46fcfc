#!/usr/bin/env python3
"""plot_gemm.py — GEMM output SQNR of the FPROP/DGRAD/WGRAD paths by recipe, one group of bars
per (layer, path), from a `gemm` report: `fp4diag gemm layer.h5 | scripts/plot_gemm.py --out g.png`.
The measured gain η of each path is printed above its bar."""
import sys

import fp4report as fr

PATHS = ["fprop", "dgrad", "wgrad"]
RECIPE_COLORS = {"ufp4": "C1", "e2m1": "C0", "custom": "C3"}


def main():
    ap = fr.arg_parser(__doc__.split("\n")[0], multi=False)
    args = ap.parse_args()
    doc = fr.load(args.reports, {"gemm"})
    layers = doc.get("layers") or []
    if not layers:
        raise fr.ReportError(f"{doc['_path']}: no layers")
    groups, recipes = [], []
    for l in layers:
        if l["recipe"] not in recipes:
            recipes.append(l["recipe"])
        for p in l["paths"]:
            g = (l["name"], p["path"])
            if g not in groups:
                groups.append(g)
    groups.sort(key=lambda g: (fr.block_index(g[0]) or 0, g[0],
                               PATHS.index(g[1]) if g[1] in PATHS else 9))
    val = {(l["name"], p["path"], l["recipe"]): p for l in layers for p in l["paths"]}
    plt = fr.pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(groups) * len(recipes) / 2 + 3), 4.2))
    width = 0.8 / len(recipes)
    for j, rec in enumerate(recipes):
        xs, ys, etas = [], [], []
        for i, g in enumerate(groups):
            p = val.get(g + (rec,))
            if p is None:
                continue
            xs.append(i + (j - (len(recipes) - 1) / 2) * width)
            ys.append(fr.num(p.get("sqnr_db")))
            etas.append(p.get("eta"))
        bars = ax.bar(xs, ys, width=width, color=RECIPE_COLORS.get(rec, f"C{4 + j}"), label=rec)
        for b, e in zip(bars, etas):
            if e is not None:
                ax.annotate(f"η {e:.3f}", (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=6, rotation=90)
    multi_layer = len({g[0] for g in groups}) > 1
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([(f"{g[0]}\n" if multi_layer else "") + g[1].upper() for g in groups],
                       fontsize=8)
    ax.set_ylabel("GEMM output SQNR (dB)")
    ax.set_xlabel("layer / path")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(title="recipe", fontsize=8, loc="lower right")
    ax.margins(y=0.15)
    ax.set_title(args.title or fr.title(doc, "GEMM output SQNR by path and recipe"), fontsize=10)
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
