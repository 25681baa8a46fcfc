#!/usr/bin/env python3
"""A small GPT trained on random tokens with fp4diag.torch.Monitor on its nn.Linear layers:
prints a few of the monitor's JSON-line statistics, and the cost of the monitor: the mean step
time with it at every=1, 10 and 100 against without it (the same model, data and thread count),
each the median over --repeats runs taken in turn (off, 100, 10, 1, off, 100, ...).

One run: a fresh model, --warmup steps untimed, then the monitor is attached and --steps steps
(a multiple of 100) are timed together: their mean step time holds the recorded steps in their
share (every=100: one recorded step in 100), which a median over single steps would leave out.

    PYTHONPATH=python FP4DIAG_LIBRARY=build/libfp4diag.so.0 python3 python/examples/monitor_gpt.py
    options: --device cuda, --steps N, --warmup N, --repeats R, --threads N (torch's),
             --d-model D, --layers L, --out FILE.jsonl
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import fp4diag.torch


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, D // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=256, d=128, layers=2, heads=4, ctx=64):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def train(args, every, out=None):
    """The mean step time, in seconds, of --steps steps with the monitor at `every` (0: none)."""
    torch.manual_seed(0)
    model = GPT(d=args.d_model, layers=args.layers).to(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randint(0, 256, (args.warmup + args.steps, 8, 65), device=args.device)
    mon = None

    def step(s):
        logits = model(data[s, :, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), data[s, :, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        if mon:
            mon.step()

    for s in range(args.warmup):
        step(s)
    if every:  # recorded: the first timed step and every `every`-th after it
        mon = fp4diag.torch.Monitor(model, layers=["blocks.*"], every=every, path=out,
                                    format="nvfp4", rht="both")
    if args.device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for s in range(args.warmup, args.warmup + args.steps):
        step(s)
    if args.device == "cuda":
        torch.cuda.synchronize()
    t = (time.perf_counter() - t0) / args.steps
    if mon:
        mon.close()
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's)")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.steps < 100 or args.steps % 100:
        ap.error("--steps must be a multiple of 100 (every=100 records one step in 100)")
    out = args.out or os.path.join(tempfile.mkdtemp(), "fp4.jsonl")
    configs = (0, 100, 10, 1)
    times = {e: [] for e in configs}
    for r in range(args.repeats):
        for every in configs:
            times[every].append(train(args, every, out if (every, r) == (100, 0) else None))
            print("monitor_gpt: run %d/%d, %s: %.2f ms a step"
                  % (r + 1, args.repeats, "every=%d" % every if every else "off",
                     times[every][-1] * 1e3), file=sys.stderr, flush=True)
    with open(out) as f:
        lines = [json.loads(l) for l in f]
    print("%d JSON lines in %s; the first layer at step 0:" % (len(lines), out))
    for e in lines[:3]:
        for r in e["results"]:
            print("  %-22s %-2s %-5s %-6s rht %-5s sqnr %6.2f dB  alpha %.4f  saturated %d"
                  % (e["layer"], e["role"], r["format"], r["scale"], bool(r["rht"]),
                     r["sqnr_db"], r["alpha"], r["counts"]["saturated"]))
    med = {e: statistics.median(t) for e, t in times.items()}
    print("mean step time, median of %d runs of %d steps (%s, torch %d threads, d_model %d, "
          "%d layers, batch 8x64; range: the fastest and slowest run):"
          % (args.repeats, args.steps, args.device, torch.get_num_threads(), args.d_model,
             args.layers))
    print("  | monitor   | step time | vs off | range |")
    print("  | --- | ---: | ---: | --- |")
    for every in configs:
        name = "every=%d" % every if every else "off"
        print("  | %-9s | %6.2f ms | %5.2fx | %.2f-%.2f ms |"
              % (name, med[every] * 1e3, med[every] / med[0], min(times[every]) * 1e3,
                 max(times[every]) * 1e3))


if __name__ == "__main__":
    main()
