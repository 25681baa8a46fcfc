#!/usr/bin/env python3
"""plot_rht.py — ΔSQNR = SQNR(RHT) − SQNR(no RHT) per format across tensors, the reversal at a
glance: a bar above zero means the RHT helps that format on that tensor, below zero that it
hurts. Reads an `rht` report, or any sqnr, bias or buckets report holding results with and
without the RHT (`--rht both`), e.g. `fp4diag rht ckpt.h5 | scripts/plot_rht.py --out rht.png`.
A dashed line per format is its pooled (summary) ΔSQNR. Tensors go in model order, as in every
plot (fp4report.model_order). Configurations with the same ΔSQNR on every tensor (e1m2 and int4:
the same grid up to a factor of 2) are drawn once and named together, "e1m2 = int4"."""
import sys

import fp4report as fr


def deltas(doc):
    """{(format, scale, block, rounding): {tensor: ΔSQNR}} from each tensor's rht_delta, or
    from its results paired with and without RHT."""
    out = {}
    for t in doc["tensors"]:
        ds = t.get("rht_delta")
        if ds is None:  # pair the results ourselves
            plain = {(r["format"], r["scale"], r["block"], r["rounding"]): r
                     for r in t["results"] if not fr.rht_on(r)}
            ds = []
            for r in t["results"]:
                p = plain.get((r["format"], r["scale"], r["block"], r["rounding"]))
                if fr.rht_on(r) and p and r.get("sqnr_db") is not None and p.get("sqnr_db") is not None:
                    ds.append(dict(format=r["format"], scale=r["scale"], block=r["block"],
                                   rounding=r["rounding"],
                                   delta_sqnr_db=r["sqnr_db"] - p["sqnr_db"]))
        for d in ds:
            k = (d["format"], d["scale"], d["block"], d["rounding"])
            out.setdefault(k, {})[t["name"]] = fr.num(d.get("delta_sqnr_db"))
    return out


def pooled_deltas(doc):
    """{key: pooled ΔSQNR} from summary.rht_delta, else from paired summary results."""
    s = doc.get("summary", {})
    if s.get("rht_delta"):
        return {(p["format"], p["scale"], p["block"], p["rounding"]): fr.num(p.get("delta_sqnr_db"))
                for p in s["rht_delta"]}
    res = {(r["format"], r["scale"], r["block"], r["rounding"], fr.rht_on(r)): r.get("sqnr_db")
           for r in s.get("results", [])}
    return {k[:4]: v - res[k[:4] + (False,)] for k, v in res.items()
            if k[4] and v is not None and res.get(k[:4] + (False,)) is not None}


def main():
    ap = fr.arg_parser(__doc__, multi=False)
    args = ap.parse_args()
    fr.out_path(args, "rht")
    doc = fr.load(args.reports, {"rht", "sqnr", "bias", "buckets"})
    d = deltas(doc)
    if not d:
        raise fr.ReportError(f"{doc['_path']}: no results with and without RHT to pair "
                             f"(make the report with `fp4diag rht` or `--rht both`)")
    names = fr.model_order([t["name"] for t in doc["tensors"]])
    pooled = pooled_deltas(doc)
    groups = fr.identical_groups(d)  # drawn once, named together
    plt = fr.pyplot()
    short = fr.tick_labels(names)
    width, font, rot, step = fr.tick_layout(len(names), per=0.25 * max(2, len(groups)))
    fig, ax = plt.subplots(figsize=(width, 3.6 + fr.label_height(short, font, rot) + 0.4))
    bw = 0.8 / len(groups)
    multi_cfg = len({k[1:] for k in d}) > 1

    def label(k, fmt):
        return " ".join([fmt] + [str(v) for v in k[1:]]) if multi_cfg else fmt
    for j, g in enumerate(groups):
        k, per = g[0], d[g[0]]
        xs = [i + (j - (len(groups) - 1) / 2) * bw for i in range(len(names))]
        ys = [per.get(n, float("nan")) for n in names]
        lab = fr.group_label(g, label)
        c = fr.color(k[0])
        if k in pooled:
            lab += f" (pooled {pooled[k]:+.2f} dB)"
            ax.axhline(pooled[k], color=c, linestyle=(0, (5, 5)), linewidth=1.2)
        ax.bar(xs, ys, width=bw, color=c, label=lab)
    ax.axhline(0, color="black", linewidth=0.8)
    fr.label_ticks(ax, short, font, rot, step)
    ax.set_xlim(-0.6, len(names) - 0.4)
    c = doc.get("config", {})
    ax.set_ylabel(f"ΔSQNR (dB): RHT{c.get('rht_size', '')} − no RHT")
    ax.set_xlabel(("tensor (model order)" if fr.by_depth(names) else "tensor") +
                  (f", every {fr.ordinal(step)} labelled" if step > 1 else ""))
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0,
              title="format, dashed: pooled", title_fontsize=8)
    fr.set_title(ax, args.title or fr.title(doc, "What the RHT does to SQNR, per format"))
    fr.note_skipped(ax, doc)
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
