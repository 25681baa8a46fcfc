#!/usr/bin/env python3
"""plot_audit.py — an audit report's SQNR per tensor, from `fp4diag audit SOURCE QUANTIZED -o
a.json && scripts/plot_audit.py a.json`: the export as stored (filled markers, solid line)
against fp4diag's round-to-nearest of the source under the producer's scale rule (RTN: open
markers, dashed line), tensors in model order. A tensor whose export is sane only under another
layout (the table's LAYOUT) is marked with a red cross on its export point and named in the
legend; one whose codes are not the nearest grid point for some elements has its gain (export
- RTN) written above it when the gain is at least 0.1 dB down. The pooled SQNRs are in the
title. Long tensor names are elided in the middle."""
import sys

import fp4report as fr


def main():
    ap = fr.arg_parser(__doc__, multi=False)
    args = ap.parse_args()
    fr.out_path(args, "audit")
    doc = fr.load(args.reports, {"audit"})
    tensors = doc.get("tensors") or []
    if not tensors:
        raise fr.ReportError(f"{doc['_path']}: no tensor audited")
    names = fr.model_order([t["name"] for t in tensors])
    by = {t["name"]: t for t in tensors}
    xs = list(range(len(names)))
    ex = [fr.num(by[n]["export"].get("sqnr_db")) for n in names]
    rq = [fr.num(by[n]["requant"].get("sqnr_db")) for n in names]
    bad = [i for i, n in enumerate(names)
           if not (by[n].get("layout_check") or {}).get("as_declared", True)]
    plt = fr.pyplot()
    width, font, rot, step = fr.tick_layout(len(names), per=0.3)
    short = fr.tick_labels(names)
    fig, ax = plt.subplots(figsize=(width, 3.4 + fr.label_height(short, font, rot) + 0.35))
    ms = 5 if len(names) <= 40 else 3.5
    ax.plot(xs, ex, marker="o", markersize=ms, linestyle="-", color="C0",
            label="export (as stored)")
    ax.plot(xs, rq, marker="o", markersize=ms, linestyle="--", color="C1",
            markerfacecolor="white", label="RTN of the source")
    if bad:
        ax.plot([xs[i] for i in bad], [ex[i] for i in bad], linestyle="none", marker="x",
                markersize=10, color="red", label=f"LAYOUT: sane only under another layout "
                f"({len(bad)})")
    for i, n in enumerate(names):
        g = ex[i] - rq[i]
        if fr.finite(g) and g <= -0.1 and i not in bad:
            ax.annotate(f"{g:+.2f}", (xs[i], ex[i]), textcoords="offset points", xytext=(0, 6),
                        ha="center", fontsize=7, color="0.3")
    fr.label_ticks(ax, short, font, rot, step)
    ax.set_xlim(-0.7, len(names) - 0.3)
    ax.set_ylabel("SQNR vs SOURCE (dB)")
    ax.set_xlabel("tensor" + (f" (every {fr.ordinal(step)} labelled)" if step > 1 else ""))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0)
    pooled = doc.get("pooled") or {}
    pe = fr.num((pooled.get("export") or {}).get("sqnr_db"))
    pr = fr.num((pooled.get("requant") or {}).get("sqnr_db"))
    q = (doc.get("input") or {}).get("quantized") or doc["_path"]
    title = args.title or (f"audit — {q}\npooled: export {pe:.3f} dB, RTN {pr:.3f} dB "
                           f"({pooled.get('tensors', len(names))} tensors)")
    fr.set_title(ax, title)
    nulls = sum(1 for v in ex + rq if not fr.finite(v))
    if nulls:
        ax.text(0.01, 0.02, f"{nulls} SQNR(s) not finite (zero_signal/exact) not drawn",
                transform=ax.transAxes, fontsize=8)
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
