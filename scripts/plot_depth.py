#!/usr/bin/env python3
"""plot_depth.py — compounded shrinkage against depth, from sqnr, bias, buckets or rht reports:
the stages of the residual stream in model order (blocks by their numeric index; in a block the
attention's q/k/v, its output projection, the MLP's gate/up, its down projection) and, for each
format and RHT setting, the running product Π(1 − δ_k) of the shrinkage δ = 1 − α, with
exp(−Σδ_k) dotted. Parallel tensors (q, k, v; gate, up; the experts of a block) are one stage
whose factor is the mean of their 1 − δ, never multiplied together; what recipes keep in high
precision (embeddings, lm_head, norms, routers: SPEC §9, fp4report.recipe_keeps) is left out
even when the report has it (--all-weights). Configurations with the same δ at every stage
(e1m2 and int4) are drawn once and named together, "e1m2 = int4"."""
import math
import sys

import fp4report as fr


def main():
    ap = fr.arg_parser(__doc__, multi=False)
    args = ap.parse_args()
    fr.out_path(args, "depth")
    doc = fr.load(args.reports, {"sqnr", "bias", "buckets", "rht"})
    stages = fr.model_stages([t["name"] for t in doc["tensors"]])
    if not stages:
        raise fr.ReportError(f"{doc['_path']}: no tensors recipes quantize")
    names = [label for label, _ in stages]
    by = {}
    for t, r in fr.results(doc):
        d = r.get("delta")
        if d is None and r.get("alpha") is not None:
            d = 1 - r["alpha"]
        k = (r["format"], r["scale"], r["block"], r["rounding"], fr.rht_on(r))
        by.setdefault(k, [{}, r])[0][t["name"]] = d
    for k in by:  # one factor per stage: the mean 1 - delta of its parallel members
        per = by[k][0]
        st = {}
        for label, members in stages:
            ds = [per[m] for m in members if per.get(m) is not None]
            if ds:
                st[label] = 1 - sum(1 - d for d in ds) / len(ds)
        by[k][0] = st
    plt = fr.pyplot()
    short = ["input"] + [fr.elide(n, fr.TICK_CHARS) for n in names]
    width, font, rot, step = fr.tick_layout(len(names) + 1)
    fig, ax = plt.subplots(figsize=(width, 3.8 + fr.label_height(short, font, rot) + 0.4))
    multi_cfg = len({k[1:4] for k in by}) > 1
    def label(k, fmt):
        r = by[k][1]
        return (fmt + " " + fr.variant(r, False).split(" ", 1)[1] if multi_cfg else fmt) + \
            (f", {fr.rht_label(r)}" if k[4] else "")
    for g in fr.identical_groups({k: {n: fr.num(v) for n, v in per.items()}
                                  for k, (per, _) in by.items()}):
        k = g[0]
        per = by[k][0]
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
        ls = "--" if k[4] else "-"
        ax.plot(xs, ys, ls, marker=".", color=fr.color(k[0]),
                label=f"{fr.group_label(g, label)}: Π(1−δ) = {ys[-1]:.4f}")
        ax.plot(xs, es, ":", color=fr.color(k[0]), linewidth=0.8)
    ax.axhline(1, color="black", linewidth=0.8)
    fr.label_ticks(ax, short, font, rot, step)
    ax.set_xlim(-0.5, len(names) + 0.5)
    ax.set_xlabel("stage in model order (block: q/k/v, o, gate/up, down; parallel tensors "
                  "one stage)" +
                  (f", every {fr.ordinal(step)} labelled" if step > 1 else ""))
    ax.set_ylabel("compounded gain Π(1 − δ_k)")
    ax.plot([], [], ":", color="0.3", linewidth=0.8, label="dotted: exp(−Σδ_k)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0)
    fr.set_title(ax, args.title or fr.title(doc, "Shrinkage compounded over depth"))
    fr.note_skipped(ax, doc)
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
