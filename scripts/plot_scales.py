#!/usr/bin/env python3
"""plot_scales.py — block scales and underflow, from an sqnr, bias, buckets or rht report
(SPEC §5.1), e.g. `fp4diag sqnr ckpt.safetensors --scale nvfp4 -o r.json &&
scripts/plot_scales.py r.json`. Top: the histogram of the stored block-scale bytes (E4M3 for
nvfp4, E8M0 for mxfp4) pooled over the tensors, as the share of non-zero blocks at each scale
value on a log2 axis, the scale's floor (E4M3 bytes 0x00–0x07: zero or subnormal; E8M0 0x00)
shaded and the blocks at the floor and at the largest scale counted in the legend. Bottom: per
tensor in model order (fp4report.model_order), the share of non-zero values flushed to zero
(`underflow_share`, %). Configurations with the same numbers are drawn once and named together
("e1m2 = int4"), decided once for both panels from all their numbers (per tensor SQNR, underflow
and scale bytes): two grids that merely flush nothing (every underflow 0, as under RHT) stay
apart. Scale modes without scale bytes (fp32, ue8m0...) have no histogram: the top
panel says so, the underflow is still drawn."""
import math
import sys

import fp4report as fr


def scale_value(byte, scale):
    """The value of a stored scale byte: E4M3 (nvfp4; bias 7, subnormals below 2^-6) or E8M0
    (mxfp4: 2^(byte − 127)). Raises ValueError for other scale modes or a NaN byte."""
    if scale == "mxfp4":
        if not 0 <= byte <= 0xFE:
            raise ValueError(f"E8M0 byte {byte:#x} is not a finite scale")
        return 2.0 ** (byte - 127)
    if scale == "nvfp4":
        if byte & 0x80 or (byte & 0x7F) == 0x7F:
            raise ValueError(f"E4M3 byte {byte:#x} is not a positive finite scale")
        e, m = (byte >> 3) & 0xF, byte & 7
        return m / 8.0 * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7)
    raise ValueError(f"scale {scale!r} stores no scale bytes")


def floor_byte(byte, scale):
    """Whether a scale byte is at the scale's floor (SPEC §5.1: E4M3 0x00–0x07, E8M0 0x00)."""
    return byte <= 0x07 if scale == "nvfp4" else byte == 0


def pooled_histograms(doc):
    """{config key: {byte: blocks}} summed over the report's tensors (the summary's histogram
    where it has one), for results with a scale_histogram."""
    out = {}
    for _, r in fr.results(doc):
        h = r.get("scale_histogram")
        if not h:
            continue
        acc = out.setdefault(key_of(r), {})
        for b, n in h:
            acc[b] = acc.get(b, 0) + n
    return out


def key_of(r):
    return (r["format"], r["scale"], r["block"], r["rounding"], fr.rht_on(r))


def underflow_series(doc, names):
    """{config key: {tensor: underflow share in %}} for results whose statistics were computed."""
    out = {}
    for t, r in fr.results(doc):
        u = r.get("underflow_share")
        out.setdefault(key_of(r), {})[t["name"]] = float("nan") if u is None else 100.0 * u
    return {k: v for k, v in out.items() if any(x == x for x in v.values())}


def config_groups(doc):
    """[[config key, ...], ...]: the configurations whose every number agrees (per tensor SQNR,
    underflow share and scale-byte histogram), in report order; one grouping for both panels."""
    series = {}
    for t, r in fr.results(doc):
        v = series.setdefault(key_of(r), {})
        n = t["name"]
        v[n + "\0sqnr"] = float("nan") if r.get("sqnr_db") is None else r["sqnr_db"]
        u = r.get("underflow_share")
        v[n + "\0under"] = float("nan") if u is None else u
        for b, c in r.get("scale_histogram") or []:
            v[f"{n}\0byte{b}"] = c
    return fr.identical_groups(series)


def restrict(groups, keys):
    """The groups cut to the keys present in a panel (empty groups dropped)."""
    out = [[k for k in g if k in keys] for g in groups]
    return [g for g in out if g]


def main():
    ap = fr.arg_parser(__doc__, multi=False)
    args = ap.parse_args()
    fr.out_path(args, "scales")
    doc = fr.load(args.reports, {"sqnr", "bias", "buckets", "rht"})
    names = fr.model_order([t["name"] for t in doc["tensors"]])
    hists = pooled_histograms(doc)
    under = underflow_series(doc, names)
    if not hists and not under:
        raise fr.ReportError(f"{doc['_path']}: no block-scale histogram and no underflow "
                             "statistics (not computed by this backend, or a report of an older "
                             "fp4diag)")
    res = {key_of(r): r for _, r in fr.results(doc)}
    multi_cfg = len({k[1:4] for k in res}) > 1

    def label(k, fmt):
        r = res[k]
        cfg = " " + fr.variant(r, with_rht=False).split(" ", 1)[1] if multi_cfg else ""
        return f"{fmt}{cfg}" + (f", {fr.rht_label(r)}" if k[4] else "")
    plt = fr.pyplot()
    short = fr.tick_labels(names)
    width, font, rot, step = fr.tick_layout(len(names), per=0.3)
    lab_h = fr.label_height(short, font, rot)
    fig, (ah, au) = plt.subplots(2, 1, figsize=(width, 3.4 + 3.2 + lab_h + 0.6),
                                 gridspec_kw={"height_ratios": [3.2, 3.2 + lab_h]})
    # top: the pooled scale-byte histograms
    if hists:
        scales = sorted({k[1] for k in hists})
        for g in restrict(config_groups(doc), hists):
            k = g[0]
            h = hists[k]
            tot = sum(h.values()) or 1
            bs = sorted(h)
            xs = [math.log2(scale_value(b, k[1])) if scale_value(b, k[1]) > 0 else None for b in bs]
            zero = sum(h[b] for b, x in zip(bs, xs) if x is None)  # E4M3 0x00: scale 0
            pts = [(x, h[b] / tot * 100) for b, x in zip(bs, xs) if x is not None]
            fl = sum(r.get("counts", {}).get("scale_floor_blocks") or 0
                     for _, r in fr.results(doc) if key_of(r) == k)
            mx = sum(r.get("counts", {}).get("scale_max_blocks") or 0
                     for _, r in fr.results(doc) if key_of(r) == k)
            lab = f"{fr.group_label(g, label)}: {tot} blocks, {fl} at floor, {mx} at max" + \
                (f", {zero} scale 0" if zero else "")
            ah.plot([p[0] for p in pts], [p[1] for p in pts], drawstyle="steps-mid",
                    linestyle="--" if k[4] else "-", marker=".", color=fr.color(k[0]), label=lab)
        for sc in scales:  # the floor: E4M3 subnormals (below 2^-6), E8M0 2^-127
            lo = -9.5 if sc == "nvfp4" else -127.5
            hi = -6.0 if sc == "nvfp4" else -126.5
            ah.axvspan(lo, hi, color="0.85", zorder=0,
                       label=f"{'E4M3' if sc == 'nvfp4' else 'E8M0'} scale floor")
        ah.set_xlabel(fr.wrap("stored block scale, log2 (E4M3 for nvfp4, E8M0 for mxfp4; nvfp4 "
                              "scales are relative to the tensor's amax)",
                              (fig.get_figwidth() - fr.LEGEND_IN) * 0.9, 10))
        ah.set_ylabel("share of non-zero blocks (%)")
        ah.set_ylim(bottom=0)
        ah.grid(True, alpha=0.3)
        ah.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0)
    else:
        ah.axis("off")
        ah.text(0.5, 0.5, f"no block-scale histogram: scale {doc.get('config', {}).get('scale')} "
                "stores no scale bytes (run with --scale nvfp4 or mxfp4)",
                ha="center", va="center", transform=ah.transAxes)
    fr.set_title(ah, args.title or fr.title(doc, "Block scales and underflow"))
    # bottom: underflow share per tensor, model order
    pos = {n: i for i, n in enumerate(names)}
    for g in restrict(config_groups(doc), under):
        k = g[0]
        per = under[k]
        xs = sorted(pos[n] for n in per)
        ys = [per[names[i]] for i in xs]
        au.plot(xs, ys, marker="o", markersize=4 if len(names) <= 40 else 2.5,
                linestyle="--" if k[4] else "-", color=fr.color(k[0]),
                markerfacecolor="white" if k[4] else fr.color(k[0]), label=fr.group_label(g, label))
    if not under:
        au.text(0.5, 0.5, "no underflow statistics (stats_status not_computed)",
                ha="center", va="center", transform=au.transAxes)
    fr.label_ticks(au, short, font, rot, step)
    au.set_xlim(-0.7, len(names) - 0.3)
    au.set_ylim(bottom=0)
    au.set_ylabel("non-zero values flushed to 0 (%)")
    au.set_xlabel("tensor (model order)" + (f", every {fr.ordinal(step)} labelled" if step > 1 else ""))
    au.grid(True, alpha=0.3)
    if under:
        au.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0)
    fr.note_skipped(au, doc)
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
