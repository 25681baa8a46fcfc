#!/usr/bin/env python3
"""plot_buckets.py — code histograms pooled over a report's tensors, one panel per format,
bars over the 15 signed values (±0 merged), with and without RHT side by side, and the
effective bucket ratio B15 (pooled, from the summary when present) in the legend.
Configurations with the same histograms (e1m2 and int4: their grids differ by a factor of 2
that the block scale absorbs) are drawn once, in one panel named "e1m2 = int4"."""
import math
import sys

import fp4report as fr


def b15(hist):
    merged = [hist[0] + hist[8]] + hist[1:8] + hist[9:16]
    tot = sum(merged)
    if not tot:
        return float("nan")
    return math.exp(-sum(c / tot * math.log(c / tot) for c in merged if c)) / 15


def main():
    ap = fr.arg_parser(__doc__, multi=False)
    args = ap.parse_args()
    fr.out_path(args, "buckets")
    doc = fr.load(args.reports, {"sqnr", "bias", "buckets", "rht"})
    groups = {}
    for _, r in fr.results(doc):
        h = r.get("histogram")
        if not h or len(h) != 16:
            continue
        k = (r["format"], r["scale"], r["block"], r["rounding"])
        acc = groups.setdefault(k, {}).setdefault(fr.rht_on(r), [[0] * 16, r])
        acc[0] = [a + b for a, b in zip(acc[0], h)]
    if not groups:
        raise fr.ReportError(f"{doc['_path']}: no results with a 16-code histogram")
    pooled = {}
    for s in doc.get("summary", {}).get("results", []):
        pooled[(s["format"], s["scale"], s["block"], s["rounding"], fr.rht_on(s))] = \
            s.get("bucket_ratio_15")
    # one panel per group of configurations with identical histograms, both RHT sides alike
    # (decided by the numbers, fp4report.identical_groups)
    same = fr.identical_groups({k: [c for on in sorted(sides) for c in [on] + sides[on][0]]
                                for k, sides in groups.items()})
    panels = [(g, groups[g[0]]) for g in same]
    plt = fr.pyplot()
    fig, axes = plt.subplots(1, len(panels), squeeze=False, figsize=(5 * len(panels), 4))

    def mags_of(sides):
        levels = next(iter(sides.values()))[1].get("levels")
        return [lv["q"] for lv in levels] if levels else list(range(8))
    for ax, (g, sides) in zip(axes[0], panels):
        k = g[0]
        mags = mags_of(sides)
        labels = [f"−{m:g}" for m in mags[:0:-1]] + ["±0"] + [f"{m:g}" for m in mags[1:]]
        width = 0.8 / len(sides)
        for j, (on, (h, r)) in enumerate(sorted(sides.items())):
            vals = h[15:8:-1] + [h[0] + h[8]] + h[1:8]  # -q7..-q1, ±0, q1..q7
            tot = sum(vals) or 1
            b = pooled.get(k + (on,))
            b = b if b is not None else b15(h)
            xs = [i + (j - (len(sides) - 1) / 2) * width for i in range(15)]
            ax.bar(xs, [v / tot for v in vals], width=width, color=fr.color(k[0]),
                   alpha=1.0 if not on else 0.45, hatch="//" if on else None,
                   label=f"{fr.rht_label(r)}: B15 = {b:.3f}")
        ax.set_xticks(range(15))
        ax.set_xticklabels(labels, rotation=90, fontsize=7)
        others = []  # the other formats of the panel: their values at the same codes
        for o in g[1:]:
            om = mags_of(groups[o])
            r = [b / a for a, b in zip(mags[1:], om[1:]) if a]
            same_r = r and all(abs(x - r[0]) <= 1e-9 * abs(r[0]) for x in r)
            others.append(f"{o[0]} ×{r[0]:g}" if same_r and r[0] != 1 else o[0])
        ax.set_xlabel(f"{k[0]} value (code, ±0 merged)" +
                      (f"; {', '.join(others)} at the same codes" if others else ""))
        ax.set_ylabel("fraction of elements")
        ax.set_title(fr.group_label(g, lambda key, fmt: f"{fmt} {key[1]}/{key[2]} {key[3]}"),
                     fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(fr.wrap(args.title or fr.title(doc, "Code histograms and bucket utilization"),
                         fig.get_figwidth() * 0.95, 10), fontsize=10)
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
