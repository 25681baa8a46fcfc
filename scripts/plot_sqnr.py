#!/usr/bin/env python3
"""plot_sqnr.py — SQNR per tensor and format, with and without RHT, from sqnr, bias, buckets
or rht reports, e.g. `fp4diag rht ckpt.h5 -o r.json && scripts/plot_sqnr.py r.json`. Filled
markers on solid lines are results without RHT; open markers on dashed lines are results with
it. Several reports are drawn one panel each, one above the other, on a shared SQNR axis and
with one colour per format throughout. Tensors go in model order (fp4report.model_order: blocks
by index, in a block q/k/v, o, gate/up, down), the order of every plot. Configurations that give
the same numbers on every tensor (e1m2 and int4: their grids differ by a factor of 2 that the
block scale absorbs) are drawn once and named together, "e1m2 = int4". Long tensor names are
elided in the middle; with many tensors the figure stays at most 16 in wide and labels only
every k-th tensor rather than shrinking the text."""
import sys

import fp4report as fr


def series_of(doc):
    """{(format, scale, block, rounding, rht): (xs, ys, result)} with xs tensor indices."""
    names = fr.model_order([t["name"] for t in doc["tensors"]])
    pos = {n: i for i, n in enumerate(names)}
    series = {}
    for t, r in sorted(fr.results(doc), key=lambda tr: pos[tr[0]["name"]]):
        key = (r["format"], r["scale"], r["block"], r["rounding"], fr.rht_on(r))
        s = series.setdefault(key, ([], [], r))
        s[0].append(pos[t["name"]])
        s[1].append(fr.num(r.get("sqnr_db")))
    return names, series


def main():
    ap = fr.arg_parser(__doc__)
    args = ap.parse_args()
    fr.out_path(args, "sqnr")
    docs = fr.load_all(args.reports, {"sqnr", "bias", "buckets", "rht"})
    for doc in docs:
        if not doc.get("tensors"):
            raise fr.ReportError(f"{doc['_path']}: no tensors")
    plt = fr.pyplot()
    data = [series_of(doc) for doc in docs]
    nmax = max(len(n) for n, _ in data)
    width, font, rot, step = fr.tick_layout(nmax, per=0.3)
    allnames = [fr.tick_labels(n) for n, _ in data]
    lab_h = max(fr.label_height(n, font, rot) for n in allnames)
    panel_h = 3.4 + lab_h + 0.35
    fig, axes = plt.subplots(len(docs), 1, squeeze=False, sharey=True,
                             figsize=(width, panel_h * len(docs)))
    for ax, doc, (names, series), short in zip(axes[:, 0], docs, data, allnames):
        multi_cfg = len({k[1:4] for k in series}) > 1

        def label(key, fmt):
            r = series[key][2]
            cfg = " " + fr.variant(r, with_rht=False).split(" ", 1)[1] if multi_cfg else ""
            return f"{fmt}{cfg}" + (f", {fr.rht_label(r)}" if key[4] else "")
        groups = fr.identical_groups({k: dict(zip(v[0], v[1])) for k, v in series.items()})
        for g in groups:  # one line per group of identical configurations
            key = g[0]
            xs, ys, r = series[key]
            c = fr.color(key[0])
            ax.plot(xs, ys, marker="o", markersize=5 if len(names) <= 40 else 3.5,
                    linestyle="--" if key[4] else "-", color=c,
                    markerfacecolor="white" if key[4] else c, label=fr.group_label(g, label))
        fr.label_ticks(ax, short, font, rot, step)
        ax.set_xlim(-0.7, len(names) - 0.3)
        ax.set_ylabel("SQNR (dB)")
        ax.set_xlabel("tensor" + (f" (every {fr.ordinal(step)} labelled)" if step > 1 else ""))
        ax.tick_params(axis="y", labelleft=True)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0)
        fr.set_title(ax, args.title or fr.title(doc, "SQNR per tensor"))
        fr.note_skipped(ax, doc)
        nulls = sum(1 for _, r in fr.results(doc) if r.get("sqnr_db") is None)
        if nulls:
            ax.text(0.01, 0.02, f"{nulls} result(s) without a finite SQNR (zero_signal/exact) "
                    "not drawn", transform=ax.transAxes, fontsize=8)
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
