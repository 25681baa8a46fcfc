#!/usr/bin/env python3
"""plot_sqnr.py — SQNR per tensor and format, with and without RHT, from sqnr/bias/buckets/rht
reports: `fp4diag rht ckpt.h5 | scripts/plot_sqnr.py --out sqnr.png`. Filled markers: no RHT;
open markers on dashed lines: RHT. Several reports are drawn side by side, one panel each.
Where e1m2 and int4 coincide they share one line, "e1m2 = int4". Past 30 tensors the figure
stays at most 16 in wide and the tick labels shrink."""
import math
import sys

import fp4report as fr


def main():
    ap = fr.arg_parser(__doc__.split("\n")[0])
    args = ap.parse_args()
    docs = fr.load_all(args.reports, {"sqnr", "bias", "buckets", "rht"})
    plt = fr.pyplot()
    nmax = max(len(d["tensors"]) for d in docs)
    width, font, rot = fr.tick_layout(nmax, per=0.5)
    fig, axes = plt.subplots(len(docs), 1, squeeze=False, figsize=(width, 3.6 * len(docs)))
    for ax, doc in zip(axes[:, 0], docs):
        names = [t["name"] for t in doc["tensors"]]
        if not names:
            raise fr.ReportError(f"{doc['_path']}: no tensors")
        series = {}
        for i, (t, r) in enumerate((t, r) for t in doc["tensors"] for r in t["results"]):
            key = (r["format"], r["scale"], r["block"], r["rounding"], fr.rht_on(r))
            series.setdefault(key, ([], [], r))
            series[key][0].append(names.index(t["name"]))
            series[key][1].append(fr.num(r.get("sqnr_db")))
        multi_cfg = len({k[1:4] for k in series}) > 1
        # e1m2 and int4 give the same numbers under some scales (the grids differ by a factor
        # that the block scale absorbs): draw one line, named "e1m2 = int4"
        merged = set()
        for key in list(series):
            twin = ("int4",) + key[1:]
            if key[0] == "e1m2" and twin in series and \
                    series[key][0] == series[twin][0] and fr.coincide(series[key][1], series[twin][1]):
                merged.add(key)
                del series[twin]
        for key, (xs, ys, r) in series.items():
            fmt = "e1m2 = int4" if key in merged else r["format"]
            label = (fmt + " " + fr.variant(r, with_rht=False).split(" ", 1)[1] if multi_cfg else fmt) + \
                (f", {fr.rht_label(r)}" if key[4] else "")
            ax.plot(xs, ys, marker="o", linestyle="--" if key[4] else "-", color=fr.color(key[0]),
                    markerfacecolor="white" if key[4] else fr.color(key[0]), label=label)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(fr.short_names(names), rotation=rot,
                           ha="right" if rot == 45 else "center", fontsize=font)
        ax.set_ylabel("SQNR (dB)")
        ax.set_xlabel("tensor")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
        ax.set_title(args.title or fr.title(doc, "SQNR per tensor"), fontsize=10)
        nulls = sum(1 for _, r in fr.results(doc) if r.get("sqnr_db") is None)
        if nulls:
            ax.text(0.01, 0.02, f"{nulls} result(s) without a finite SQNR (zero_signal/exact) "
                    "not drawn", transform=ax.transAxes, fontsize=7)
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
