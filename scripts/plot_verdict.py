#!/usr/bin/env python3
"""plot_verdict.py — the answer of a report's `verdict` section in one figure, from an sqnr,
bias, buckets or rht report. Left: the pooled SQNR of each format and RHT setting over the
selection as bars from 0 dB, with α and B15 on each bar and the winner marked with its margin over
the runner-up (the best format giving other values); configurations giving the same pooled
numbers (e1m2 and int4) are one bar, named together ("e1m2 = int4 fp32/16").
Right: the tensors in the verdict's ranking order (the top 20 unless --top says otherwise), each
drawn from its worst to its best format's SQNR, so the length of the line is the gap between
them and its colours say which format wins and which loses there (open markers: with RHT), e.g.
`fp4diag sqnr ckpt.h5 --rht both -o r.json && scripts/plot_verdict.py r.json`. A gemm
report's verdict is drawn likewise: the pooled output SQNR and η of each path, and the layers
ranked, each from its worst to its best path."""
import sys

import fp4report as fr


def cfg_label(c):
    """'e2m1 nvfp4/16, RHT' from a verdict config (or a best/worst entry)."""
    s = c["format"]
    if c.get("scale") is not None:
        s += f" {c['scale']}" + (f"/{c['block']}" if c.get("block") is not None else "")
    if c.get("rounding") not in (None, "rtne"):
        s += f" {c['rounding']}"
    return s + (", RHT" if c.get("rht") else "")


def same_cfg(a, b):
    return all(a.get(k) == b.get(k) for k in ("format", "scale", "rht", "rounding", "block")
               if a.get(k) is not None and b.get(k) is not None)


def verdict_of(doc):
    """The verdict section, checked for the fields this plot draws. Raises ReportError."""
    v = doc.get("verdict")
    name = doc["_path"]
    if v is None:
        raise fr.ReportError(f"{name}: no `verdict` section (a report of an older fp4diag, or a "
                             "command without one: re-run the analysis with this fp4diag)")
    key = "paths" if doc.get("command") == "gemm" else "configs"
    if key not in v:
        raise fr.ReportError(f"{name}: a {doc.get('command')!r} verdict without `{key}`; this "
                             "plot draws the verdict of sqnr, bias, buckets, rht and gemm reports")
    if not v.get(key):
        raise fr.ReportError(f"{name}: the verdict has no {key} (nothing was analysed)")
    return v


def draw_gemm(plt, doc, v, args):
    """A gemm verdict: the pooled output SQNR and η of each path; the layers ranked, each drawn
    from its worst to its best path's SQNR."""
    paths = v["paths"]
    ranking = v.get("ranking") or []
    shown = ranking if args.top == 0 else ranking[:args.top]
    short = fr.short_names([r["layer"] for r in shown]) if len(shown) > 1 else \
        [r["layer"] for r in shown]
    rows = max(len(paths), len(shown), 3)
    fig_h = min(14, 3.0 + 0.32 * rows)
    fig, (ax, ar) = plt.subplots(1, 2, figsize=(12, fig_h), gridspec_kw={"width_ratios": [1, 1.25]})
    pcol = {"fprop": "C0", "dgrad": "C1", "wgrad": "C2"}
    ys = list(range(len(paths)))[::-1]
    vals = [fr.num(p.get("sqnr_db")) for p in paths]
    fin = [x for x in vals if x == x] or [0.0, 1.0]
    hi = max(max(fin), 0.0)
    left = min(0.0, min(fin))  # bars from 0 dB: their lengths compare
    worst = v.get("worst_path")
    for y, p, val in zip(ys, paths, vals):
        w = p["path"] == worst
        ax.barh(y, (val - left) if val == val else 0, left=left, height=0.7,
                color=pcol.get(p["path"], "C4"), edgecolor="black" if w else "white",
                linewidth=2 if w else 0.5)
        ax.text(max(val, left) if val == val else left, y,
                "  " + (f"{val:.2f} dB" if val == val else "no SQNR") +
                f"   η {fr.num(p.get('eta')):.4f}", va="center", fontsize=8,
                fontweight="bold" if w else None)
    ax.set_yticks(ys)
    ax.set_yticklabels([p["path"].upper() + (" (worst)" if p["path"] == worst else "")
                        for p in paths], fontsize=9)
    ax.set_xlim(left, hi + 0.6 * (hi - left))
    ax.set_xlabel("pooled GEMM output SQNR (dB)")
    ax.grid(True, axis="x", alpha=0.3)
    nl = max((p.get("layers") or 0) for p in paths)
    fr.set_title(ax, f"Recipe {v.get('recipe', '?')}, pooled over {nl} layer"
                 f"{'s' if nl != 1 else ''}" + (f"\nworst path: {worst.upper()}" if worst else ""),
                 10, legend=fig.get_figwidth() / 2)
    if shown:
        ry = list(range(len(shown)))[::-1]
        seen = set()
        for y, r in zip(ry, shown):
            wx, bx = fr.num(r.get("sqnr_db")), fr.num(r.get("best_sqnr_db"))
            ar.plot([wx, bx], [y, y], color="0.6", linewidth=2, zorder=1)
            for pth, x, role in ((r.get("worst_path"), wx, "worst"), (r.get("best_path"), bx, "best")):
                lab = f"{role}: {str(pth).upper()}"
                ar.scatter([x], [y], s=40, zorder=2, marker="o" if role == "best" else "X",
                           color=pcol.get(pth, "C4"), label=None if lab in seen else lab)
                seen.add(lab)
            ar.annotate(f"{fr.num(r.get('gap_db')):.2f} dB, η {fr.num(r.get('eta')):.3f}",
                        (max(bx, wx), y), xytext=(5, 0), textcoords="offset points",
                        va="center", fontsize=8)
        ar.set_yticks(ry)
        ar.set_yticklabels(short, fontsize=8 if len(shown) <= 40 else 6)
        xs = [fr.num(r.get(k)) for r in shown for k in ("sqnr_db", "best_sqnr_db")]
        xs = [x for x in xs if x == x] or [0.0, 1.0]
        span = max(xs) - min(xs) or 1.0
        ar.set_xlim(min(xs) - 0.05 * span, max(xs) + 0.45 * span)
        ar.set_xlabel("output SQNR (dB): × worst path (η shown), ● best path")
        ar.grid(True, axis="x", alpha=0.3)
        ar.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.7 / (fig_h - 1.6)),
                  ncol=3, borderaxespad=0)
        more = f" (top {len(shown)} of {len(ranking)})" if len(shown) < len(ranking) else ""
        fr.set_title(ar, f"Layers ranked by {v.get('rank_by', 'gap')}{more}", 10,
                     legend=fig.get_figwidth() / 2)
    else:
        ar.axis("off")
    return fig


def main():
    ap = fr.arg_parser(__doc__, multi=False)
    ap.add_argument("--top", type=int, default=20, metavar="N",
                    help="tensors drawn from the ranking (default 20; 0: all)")
    args = ap.parse_args()
    if args.top < 0:
        ap.error("--top must be 0 (all) or more")
    fr.out_path(args, "verdict")
    doc = fr.load(args.reports)
    v = verdict_of(doc)
    if doc.get("command") == "gemm":
        plt = fr.pyplot()
        fig = draw_gemm(plt, doc, v, args)
        fig.suptitle(fr.wrap(args.title or fr.title(doc, "Verdict"), fig.get_figwidth() * 0.95,
                             10), fontsize=10)
        fr.save(fig, args)
        return
    configs = v["configs"]
    ranking = v.get("ranking") or []
    shown = ranking if args.top == 0 else ranking[:args.top]
    win = v.get("winner") or {}
    plt = fr.pyplot()
    short = [r["tensor"] for r in shown]  # whole names: a ranking is read name by name
    name_w = max([len(s) for s in short] + [8]) * 0.075  # inches of tensor names
    rows = max(len(configs), len(shown), 3)
    fig_h = min(14, 3.0 + 0.32 * rows)
    fig, (ax, ar) = plt.subplots(1, 2, figsize=(min(16, 11 + name_w), fig_h),
                                 gridspec_kw={"width_ratios": [1, 1.25]})
    # left: pooled SQNR per config from 0 dB, the winner marked; identical configs one bar
    groups = fr.identical_groups({i: [fr.num(c.get(k)) for k in ("sqnr_db", "alpha",
                                                                  "bucket_ratio_15")]
                                  for i, c in enumerate(configs)})
    ys = list(range(len(groups)))[::-1]
    vals = [fr.num(configs[g[0]].get("sqnr_db")) for g in groups]
    fin = [x for x in vals if x == x]
    hi = max(fin + [1.0])
    left = min(fin + [0.0])  # bars from 0 dB (or below, for a negative SQNR)
    ylabels = []
    for y, g, val in zip(ys, groups, vals):
        gc = [configs[i] for i in g]
        c = gc[0]
        is_win = bool(win) and any(same_cfg(x, win) for x in gc)
        col = fr.color(c["format"])
        ax.barh(y, (val - left) if val == val else 0, left=left, height=0.7, color=col,
                alpha=0.55 if c.get("rht") else 1.0, hatch="//" if c.get("rht") else None,
                edgecolor="black" if is_win else "white", linewidth=2 if is_win else 0.5)
        txt = (f"{val:.2f} dB" if val == val else "no SQNR") + \
            f"   α {fr.num(c.get('alpha')):.4f}   B15 {fr.num(c.get('bucket_ratio_15')):.3f}"
        ax.text(max(val, left) if val == val else left, y, "  " + txt, va="center",
                fontsize=8, fontweight="bold" if is_win else None)
        same_fmt = len(gc) > 1 and all(cfg_label(dict(x, format="")) ==
                                       cfg_label(dict(c, format="")) for x in gc)
        name = (cfg_label(dict(c, format=" = ".join(x["format"] for x in gc))) if same_fmt
                else " = ".join(cfg_label(x) for x in gc))
        ylabels.append(name + (" ★" if is_win else ""))
    ax.set_yticks(ys)
    ax.set_yticklabels(ylabels, fontsize=9)
    ax.set_xlim(left, hi + 0.75 * (hi - left))  # room for the text right of the bars
    ax.set_xlabel("pooled SQNR over the selection (dB), bars from 0")
    ax.grid(True, axis="x", alpha=0.3)
    ntens = max((c.get("tensors") or 0) for c in configs)
    head = f"Pooled over {ntens} tensor{'s' if ntens != 1 else ''}"
    if win:
        m = win.get("margin_db")
        wcfg = next((c for c in configs if same_cfg(c, win)), win)  # with its block
        ru = win.get("runner_up")
        rcfg = next((c for c in configs if same_cfg(c, ru)), ru) if ru else None
        nxt = f"over {cfg_label(rcfg)}" if rcfg else "over the next"
        head += f"\nwinner: {cfg_label(wcfg)}" + \
            ("" if m is None else f", by {m:.2f} dB {nxt}" if m >= 0.005 else
             f", tied with {cfg_label(rcfg) if rcfg else 'the next'} (margin under 0.005 dB)")
        same = win.get("same_values") or []
        if same:  # one grid under two names (int4 and e1m2): the same values, no margin
            head += "; the same values: " + ", ".join(
                cfg_label(next((c for c in configs if same_cfg(c, x)), x)) for x in same)
    fr.set_title(ax, head, 10, legend=fig.get_figwidth() / 2)
    # right: the ranking, worst -> best SQNR per tensor
    if shown:
        ry = list(range(len(shown)))[::-1]
        seen = set()
        for y, r in zip(ry, shown):
            b, w = r["best"], r["worst"]
            bx, wx = fr.num(b.get("sqnr_db")), fr.num(w.get("sqnr_db"))
            ar.plot([wx, bx], [y, y], color="0.6", linewidth=2, zorder=1)
            for e, x, role in ((w, wx, "worst"), (b, bx, "best")):
                c = fr.color(e["format"])
                lab = cfg_label(e)
                ar.scatter([x], [y], s=40, zorder=2, marker="o" if role == "best" else "X",
                           facecolor="white" if e.get("rht") else c, edgecolor=c,
                           linewidth=1.5, label=None if (lab, role) in seen else f"{role}: {lab}")
                seen.add((lab, role))
            extra = f"{fr.num(r.get('gap_db')):.2f} dB"
            if v.get("rank_by") == "delta" and r.get("delta") is not None:
                extra += f", δ {r['delta']:+.4f}"
            ar.annotate(extra, (max(bx, wx), y), xytext=(5, 0), textcoords="offset points",
                        va="center", fontsize=8)
        ar.set_yticks(ry)
        ar.set_yticklabels(short, fontsize=8 if len(shown) <= 40 else 6)
        xs = [fr.num(r[k].get("sqnr_db")) for r in shown for k in ("best", "worst")]
        xs = [x for x in xs if x == x] or [0.0, 1.0]
        span = max(xs) - min(xs) or 1.0
        ar.set_xlim(min(xs) - 0.05 * span, max(xs) + 0.4 * span)
        ar.set_xlabel("SQNR (dB): × worst format, ● best format (open: with RHT)")
        ar.grid(True, axis="x", alpha=0.3)
        ar.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.7 / (fig_h - 1.6)),
                  ncol=3, borderaxespad=0)
        more = f" (top {len(shown)} of {len(ranking)})" if len(shown) < len(ranking) else ""
        fr.set_title(ar, f"Tensors ranked by {v.get('rank_by', 'gap')}{more}", 10,
                     legend=fig.get_figwidth() / 2)
    else:
        ar.axis("off")
        ar.text(0.5, 0.5, "no tensor ranking in this verdict", ha="center", va="center")
    fig.suptitle(fr.wrap(args.title or fr.title(doc, "Verdict"), fig.get_figwidth() * 0.95, 10),
                 fontsize=10)
    fr.save(fig, args)


if __name__ == "__main__":
    sys.exit(fr.main_guard(main))
