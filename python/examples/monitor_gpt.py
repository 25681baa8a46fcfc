#!/usr/bin/env python3
"""A small GPT trained on random tokens with fp4diag.torch.Monitor on its nn.Linear layers:
prints a few of the monitor's JSON-line statistics, and the step time with the monitor at
every=1, 10, 100 against without it (the same model, data and thread count, in one run).

    PYTHONPATH=python FP4DIAG_LIBRARY=build/libfp4diag.so.0 python3 python/examples/monitor_gpt.py
    options: --device cuda, --steps N, --d-model D, --layers L, --out FILE.jsonl
"""
import argparse
import json
import os
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
    torch.manual_seed(0)
    model = GPT(d=args.d_model, layers=args.layers).to(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    mon = None
    if every:
        mon = fp4diag.torch.Monitor(model, layers=["blocks.*"], every=every, path=out,
                                    format="nvfp4", rht="both")
    data = torch.randint(0, 256, (args.steps, 8, 65), device=args.device)
    times = []
    for s in range(args.steps):
        t0 = time.perf_counter()
        logits = model(data[s, :, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), data[s, :, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        if mon:
            mon.step()
        if args.device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    if mon:
        mon.close()
    times = sorted(times[5:])  # the first steps warm up
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=105)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--out")
    args = ap.parse_args()
    out = args.out or os.path.join(tempfile.mkdtemp(), "fp4.jsonl")
    base = train(args, 0)
    rows = [("off", base)]
    for every in (100, 10, 1):
        rows.append(("every=%d" % every, train(args, every, out if every == 100 else None)))
    with open(out) as f:
        lines = [json.loads(l) for l in f]
    print("%d JSON lines in %s; the first layer at step 0:" % (len(lines), out))
    for e in lines[:3]:
        for r in e["results"]:
            print("  %-22s %-2s %-5s %-6s rht %-5s sqnr %6.2f dB  alpha %.4f  saturated %d"
                  % (e["layer"], e["role"], r["format"], r["scale"], bool(r["rht"]),
                     r["sqnr_db"], r["alpha"], r["counts"]["saturated"]))
    print("median step time (%s, d_model %d, %d layers, batch 8x64):"
          % (args.device, args.d_model, args.layers))
    for name, t in rows:
        print("  %-9s %8.2f ms  %5.2fx" % (name, t * 1e3, t / base))


if __name__ == "__main__":
    main()
