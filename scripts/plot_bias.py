#!/usr/bin/env python3
"""plot_bias.py — per-level shrinkage bias: the analytic conditional error (ℓ_i − r_i)/2 of
each level against the measured mean error of the elements that rounded to it (pooled over the
report's tensors, weighted by occupancy), one panel per format, in normalized units t = |x|/s.
Reads sqnr/bias/buckets/rht reports with `levels`. Results with and without the RHT (a report
made with `--rht both`) get a panel each; `--rht off` or `on` picks one side, and the figure
says which side it leaves out."""
import sys

import fp4report as fr


def main():
    ap = fr.arg_parser(__doc__, multi=False)
    ap.add_argument("--rht", choices=["all", "off", "on"], default="all",
                    help="results without the RHT, with it, or all the report has (default)")
    args = ap.parse_args()
    fr.out_path(args, "bias")
    doc = fr.load(args.reports, {"sqnr", "bias", "buckets", "rht"})
    panels, left_out = {}, set()
    for _, r in fr.results(doc):
        if not r.get("levels"):
            continue
        if args.rht != "all" and fr.rht_on(r) != (args.rht == "on"):
            left_out.add(fr.rht_on(r))
            continue
        k = (r["format"], r["scale"], r["block"], r["rounding"], fr.rht_on(r))
        p = panels.setdefault(k, {"levels": r["levels"], "sum": [0.0] * len(r["levels"]),
                                  "n": [0] * len(r["levels"]), "alpha": [], "r": r})
        for i, lv in enumerate(r["levels"]):
            if lv.get("mean_error") is not None and lv.get("count"):
                p["sum"][i] += lv["mean_error"] * lv["count"]
                p["n"][i] += lv["count"]
    if not panels:
        raise fr.ReportError(f"{doc['_path']}: no results with per-level data (rht {args.rht})")
    plt = fr.pyplot()
    ncol = min(4, len(panels))
    nrow = (len(panels) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, squeeze=False, figsize=(4.2 * ncol, 4 * nrow))
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, (k, p) in zip(axes.flat, panels.items()):
        q = [lv["q"] for lv in p["levels"]]
        analytic = [lv["analytic_bias"] for lv in p["levels"]]
        measured = [s / n if n else float("nan") for s, n in zip(p["sum"], p["n"])]
        xs = range(len(q))
        ax.bar([x - 0.2 for x in xs], analytic, width=0.4, color="0.7", label="analytic (ℓ−r)/2")
        ax.bar([x + 0.2 for x in xs], measured, width=0.4, color=fr.color(k[0]),
               label="measured mean error")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"{v:g}" for v in q], fontsize=8)
        ax.set_xlabel(f"level q_i ({k[0]}, normalized t = |x|/s)")
        ax.set_ylabel("conditional error ρ(t) − t")
        ax.set_title(f"{fr.variant(p['r'])}", fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    head = args.title or fr.title(doc, "Per-level bias, analytic vs measured")
    if left_out:  # never drop a side without saying so
        head += "\n" + " and ".join("RHT" if o else "no-RHT" for o in sorted(left_out)) + \
            f" results not drawn (--rht {args.rht}; --rht all draws them)"
    fig.suptitle(fr.wrap(head, fig.get_figwidth() * 0.95, 10), fontsize=10)
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
