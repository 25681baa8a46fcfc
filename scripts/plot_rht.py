#!/usr/bin/env python3
"""plot_rht.py — ΔSQNR = SQNR(RHT) − SQNR(no RHT) per format across tensors, from an `rht`
report (the reversal at a glance: bars above zero, RHT helps that format on that tensor; below,
it hurts). `fp4diag rht ckpt.h5 | scripts/plot_rht.py --out rht.png`. A dashed line per format
is the pooled (summary) ΔSQNR."""
import sys

import fp4report as fr


def deltas(doc):
    """{format-variant: {tensor: ΔSQNR}} from each tensor's rht_delta, or paired results."""
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


def main():
    ap = fr.arg_parser(__doc__.split("\n")[0], multi=False)
    args = ap.parse_args()
    doc = fr.load(args.reports, {"rht"})
    d = deltas(doc)
    if not d:
        raise fr.ReportError(f"{doc['_path']}: no results with and without RHT to pair")
    names = fr.depth_order([t["name"] for t in doc["tensors"]])
    pooled = {(p["format"], p["scale"], p["block"], p["rounding"]): fr.num(p.get("delta_sqnr_db"))
              for p in doc.get("summary", {}).get("rht_delta", [])}
    plt = fr.pyplot()
    width, font, rot = fr.tick_layout(len(names), per=0.45 * max(1, len(d) / 2))
    fig, ax = plt.subplots(figsize=(width, 4.2))
    width = 0.8 / len(d)
    multi_cfg = len({k[1:] for k in d}) > 1
    for j, (k, per) in enumerate(d.items()):
        xs = [i + (j - (len(d) - 1) / 2) * width for i in range(len(names))]
        ys = [per.get(n, float("nan")) for n in names]
        label = " ".join(str(v) for v in k) if multi_cfg else k[0]
        if k in pooled:
            label += f" (pooled {pooled[k]:+.2f} dB)"
            ax.axhline(pooled[k], color=fr.color(k[0]), linestyle="--", linewidth=1)
        ax.bar(xs, ys, width=width, color=fr.color(k[0]), label=label)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(fr.short_names(names), rotation=rot,
                       ha="right" if rot == 45 else "center", fontsize=font)
    c = doc.get("config", {})
    ax.set_ylabel(f"ΔSQNR (dB): RHT{c.get('rht_size', '')} − no RHT")
    ax.set_xlabel("tensor (by depth)" if fr.by_depth(names) else "tensor")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(args.title or fr.title(doc, "What the RHT does to SQNR, per format"), fontsize=10)
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
