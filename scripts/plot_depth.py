#!/usr/bin/env python3
"""plot_depth.py — compounded shrinkage against depth: tensors ordered by their /blocks/N/
index (then name), and for each format (and RHT setting) the running product Π(1 − δ_k) of
the per-tensor shrinkage δ = 1 − α, with exp(−Σδ_k) dotted; from sqnr/bias/buckets/rht reports."""
import math
import sys

import fp4report as fr


def main():
    ap = fr.arg_parser(__doc__.split("\n")[0], multi=False)
    args = ap.parse_args()
    doc = fr.load(args.reports, {"sqnr", "bias", "buckets", "rht"})
    names = fr.depth_order([t["name"] for t in doc["tensors"]])
    if not names:
        raise fr.ReportError(f"{doc['_path']}: no tensors")
    by = {}
    for t, r in fr.results(doc):
        d = r.get("delta")
        if d is None and r.get("alpha") is not None:
            d = 1 - r["alpha"]
        k = (r["format"], r["scale"], r["block"], r["rounding"], fr.rht_on(r))
        by.setdefault(k, [{}, r])[0][t["name"]] = d
    plt = fr.pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(names) + 3), 4.2))
    multi_cfg = len({k[1:4] for k in by}) > 1
    for k, (per, r) in by.items():
        prod, s, ys, es, xs = 1.0, 0.0, [1.0], [1.0], [0]
        for i, n in enumerate(names, 1):
            d = per.get(n)
            if d is None:
                continue
            prod *= 1 - d
            s += d
            xs.append(i)
            ys.append(prod)
            es.append(math.exp(-s))
        label = (fr.variant(r, False) if multi_cfg else k[0]) + (f", {fr.rht_label(r)}" if k[4] else "")
        ls = "--" if k[4] else "-"
        ax.plot(xs, ys, ls, marker=".", color=fr.color(k[0]),
                label=f"{label}: Π(1−δ) = {ys[-1]:.4f}")
        ax.plot(xs, es, ":", color=fr.color(k[0]), linewidth=0.8)
    ax.axhline(1, color="black", linewidth=0.8)
    ticks = list(range(0, len(names) + 1))
    ax.set_xticks(ticks)
    ax.set_xticklabels(["input"] + fr.short_names(names), rotation=45 if len(names) > 4 else 0,
                       ha="right" if len(names) > 4 else "center", fontsize=7)
    ax.set_xlabel("depth (tensors by /blocks/N/ index)")
    ax.set_ylabel("compounded gain Π(1 − δ_k)  (dotted: exp(−Σδ_k))")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(args.title or fr.title(doc, "Shrinkage compounded over depth"), fontsize=10)
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
