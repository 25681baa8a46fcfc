#!/usr/bin/env python3
"""plot_gemm.py — GEMM output SQNR of the FPROP, DGRAD and WGRAD paths by recipe, one group of
bars per layer and path, from one or more `gemm` reports (one per recipe, drawn side by side),
e.g. `scripts/plot_gemm.py ufp4.json e2m1.json --out g.png`. The measured gain η of each path
is written inside the top of its bar. Two reports of the same recipe are told apart by their
file names and hatching. Layers go in model order; long (Hugging Face) names are elided in the
middle and turned."""
import os
import sys

import fp4report as fr

PATHS = ["fprop", "dgrad", "wgrad"]
RECIPE_COLORS = {"ufp4": "C1", "e2m1": "C0", "custom": "C3"}


def main():
    ap = fr.arg_parser(__doc__)
    args = ap.parse_args()
    fr.out_path(args, "gemm")
    docs = fr.load_all(args.reports, {"gemm"})
    for doc in docs:
        if not doc.get("layers"):
            raise fr.ReportError(f"{doc['_path']}: no layers")
    # a series per (report, recipe); named by the recipe, plus the file when a recipe repeats
    series = []
    for i, doc in enumerate(docs):
        for l in doc["layers"]:
            if (i, l["recipe"]) not in series:
                series.append((i, l["recipe"]))
    counts = {}
    for _, rec in series:
        counts[rec] = counts.get(rec, 0) + 1
    label = {s: s[1] if counts[s[1]] == 1 else
             f"{s[1]} ({os.path.basename(docs[s[0]]['_path'])})" for s in series}
    groups = []
    for doc in docs:
        for l in doc["layers"]:
            for p in l["paths"]:
                g = (l["name"], p["path"])
                if g not in groups:
                    groups.append(g)
    recipes = series
    groups.sort(key=lambda g: (fr.model_key(g[0]), PATHS.index(g[1]) if g[1] in PATHS else 9))
    val = {(l["name"], p["path"], (i, l["recipe"])): p
           for i, doc in enumerate(docs) for l in doc["layers"] for p in l["paths"]}
    plt = fr.pyplot()
    multi_layer = len({g[0] for g in groups}) > 1
    nbars = len(groups) * len(recipes)
    fig, ax = plt.subplots(figsize=(min(16, max(6, 0.42 * nbars + 0.3 * len(groups) + 1.5) +
                                    fr.LEGEND_IN), 4.6))
    width = 0.8 / len(recipes)
    top = max([fr.num(p.get("sqnr_db")) for p in val.values()
               if p.get("sqnr_db") is not None] or [1.0])
    for j, rec in enumerate(recipes):
        xs, ys, etas = [], [], []
        for i, g in enumerate(groups):
            p = val.get(g + (rec,))
            if p is None:
                continue
            xs.append(i + (j - (len(recipes) - 1) / 2) * width)
            ys.append(fr.num(p.get("sqnr_db")))
            etas.append(p.get("eta"))
        seen = sum(1 for r in recipes[:j] if r[1] == rec[1])  # same recipe again: hatch it
        bars = ax.bar(xs, ys, width=width, color=RECIPE_COLORS.get(rec[1], f"C{4 + j}"),
                      hatch="//" if seen else None, edgecolor="white" if seen else None,
                      label=label[rec])
        for b, e in zip(bars, etas):
            h = b.get_height()
            if e is None or h != h:
                continue
            inside = h > 0.3 * top  # room for the label inside the bar; else above it
            ax.annotate(f"η {e:.3f}", (b.get_x() + b.get_width() / 2, max(h, 0)),
                        xytext=(0, -4 if inside else 3), textcoords="offset points",
                        ha="center", va="top" if inside else "bottom", fontsize=8, rotation=90,
                        color="white" if inside and not seen else "black",
                        bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none",
                                  alpha=0.8) if seen and inside else None)
    layers = list(dict.fromkeys(g[0] for g in groups))
    short = dict(zip(layers, fr.tick_labels(layers)))  # HF names elided, kept distinct
    labels = [(f"{short[g[0]]} " if multi_layer else "") + g[1].upper() for g in groups]
    _, font, rot, step = fr.tick_layout(len(groups), per=0.42 * len(recipes) + 0.3)
    if multi_layer and max(len(x) for x in labels) > 10:
        rot = max(rot, 45)  # long names side by side overlap: turn them
    fr.label_ticks(ax, labels, font, rot, step)
    ax.set_ylabel("GEMM output SQNR (dB)")
    ax.set_xlabel("layer / path")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(title="recipe", fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0),
              borderaxespad=0)
    ax.margins(y=0.05)
    what = "GEMM output SQNR by path and recipe"
    if len(docs) == 1:
        fr.set_title(ax, args.title or fr.title(docs[0], what))
    else:
        files = {os.path.basename(d.get("input", {}).get("file", "")) for d in docs}
        src = f"{files.pop()}: " if len(files) == 1 and "" not in files else ""
        fr.set_title(ax, args.title or f"{what} — {src}" + ", ".join(label[s] for s in series))
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
