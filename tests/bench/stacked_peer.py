#!/usr/bin/env python3
"""What training K sweep points as one stacked model can gain, measured on the Python peer
(tests/bench/peer_model.py's model and optimizer) before qklab's engine stacks them (issue 27,
part 1).

The stacked model is the peer model with a leading K dimension on every weight: projections
are batched matmuls (K, B*T, C) x (K, C, C'), attention folds K into its batch (K*B, H, T, d)
and runs the same fused scaled_dot_product_attention, the loss is each point's mean, the clip
is per point, and one AdamW steps the stacked tensors. (torch.func.vmap over the peer module
was tried first: SDPA has no batching rule on the CPU, so vmap loops over the points.) The
points are K seeds of one shape; LR and the other per-point settings cost nothing here.

Against it: the same points one at a time, in P processes of T threads each, which is how
`qklab-cli sweep` runs them today (2 processes x 1 thread on a 2-core machine).

usage: stacked_peer.py [--config tiny] [--k 1,4,8,16] [--steps 20] [--warmup 3]
                       [--processes 2] [--device cpu|cuda]
prints one JSON line per row: mode, K, processes, threads, seconds per step, runs/hour for a
400-step run (the Wortsman sweep's length), and the speed-up against one point at a time.
"""
import argparse
import json
import math
import multiprocessing as mp
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_model  # noqa: E402

RUN_STEPS = 400


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def batches(cfg, k, device, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, (k, cfg["batch_size"], cfg["seq_len"] + 1), generator=g)
    return x[..., :-1].to(device), x[..., 1:].to(device)


class StackedPeer(torch.nn.Module):
    """K peer models of one shape as one: every weight has a leading K dimension."""

    def __init__(self, cfg, k):
        super().__init__()
        d, L, self.h = cfg["d_model"], cfg["n_layers"], cfg["n_heads"]
        self.k, self.dh = k, d // self.h
        std, out_std = 0.02, 0.02 / math.sqrt(2 * L)
        P = torch.nn.Parameter
        self.tokens = P(torch.randn(k, 256, d) * std)
        self.blocks = torch.nn.ModuleList()
        for _ in range(L):
            b = torch.nn.Module()
            b.norm1, b.norm2 = P(torch.ones(k, 1, d)), P(torch.ones(k, 1, d))
            b.qkv = P(torch.randn(k, d, 3 * d) * std)
            b.proj = P(torch.randn(k, d, d) * out_std)
            b.fc = P(torch.randn(k, d, 4 * d) * std)
            b.out = P(torch.randn(k, 4 * d, d) * out_std)
            self.blocks.append(b)
        self.final_norm = P(torch.ones(k, 1, d))
        self.head = P(torch.randn(k, d, 256) * std)
        T = cfg["seq_len"]
        inv = 10000.0 ** (-torch.arange(0, self.dh, 2, dtype=torch.float64) / self.dh)
        emb = torch.outer(torch.arange(T, dtype=torch.float64), inv)
        emb = torch.cat((emb, emb), -1)
        self.register_buffer("cos", emb.cos().float())
        self.register_buffer("sin", emb.sin().float())

    def attention(self, b, x, B, T):
        K, H, D = self.k, self.h, self.dh
        qkv = torch.bmm(peer_model.rms_norm(x, b.norm1), b.qkv)  # (K, B*T, 3C)
        q, k, v = qkv.view(K * B, T, 3, H, D).permute(2, 0, 3, 1, 4)  # (K*B, H, T, D)
        q, k = peer_model.rope(q, self.cos, self.sin), peer_model.rope(k, self.cos, self.sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0 / math.sqrt(D))
        return torch.bmm(y.transpose(1, 2).reshape(K, B * T, H * D), b.proj)

    def forward(self, x, y):  # x, y: (K, B, T) -> (K,) losses
        K, B, T = x.shape
        offsets = (torch.arange(K, device=x.device) * 256).view(K, 1, 1)
        h = self.tokens.view(K * 256, -1)[x + offsets].view(K, B * T, -1)
        for b in self.blocks:
            h = h + self.attention(b, h, B, T)
            h = h + torch.bmm(F.gelu(torch.bmm(peer_model.rms_norm(h, b.norm2), b.fc)), b.out)
        logits = torch.bmm(peer_model.rms_norm(h, self.final_norm), self.head)
        ce = F.cross_entropy(logits.reshape(-1, 256), y.reshape(-1), reduction="none")
        return ce.view(K, -1).mean(1)


def stacked_seconds_per_step(cfg, k, steps, warmup, device):
    """Seconds per step of K stacked models (forward, backward, clip per point, AdamW)."""
    torch.manual_seed(1000 + k)
    model = StackedPeer(cfg, k).to(device)
    params = list(model.parameters())
    decay = [p for p in params if p.dim() >= 3 and p.shape[1] > 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": [p for p in params if not any(p is q for q in decay)],
                              "weight_decay": 0.0}], lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    x, y = batches(cfg, k, device, 1)

    def step():
        losses = model(x, y)
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()  # the points share no weights: each gets its own gradient
        # The clip is per point: the norm over each point's slice of every tensor.
        sq = sum(p.grad.pow(2).flatten(1).sum(1) for p in params)
        scale = (1.0 / (sq.sqrt() + 1e-6)).clamp(max=1.0)
        for p in params:
            p.grad.mul_(scale.view(-1, *([1] * (p.dim() - 1))))
        opt.step()

    for _ in range(warmup):
        step()
    sync(device)
    t = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    return (time.perf_counter() - t) / steps


def single_worker(args, threads, queue):
    torch.set_num_threads(threads)
    queue.put(stacked_seconds_per_step(args["cfg"], 1, args["steps"], args["warmup"],
                                       args["device"]))


def one_at_a_time(cfg, steps, warmup, device, processes, threads):
    """Seconds per step of one point, with `processes` such workers running side by side."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    args = dict(cfg=cfg, steps=steps, warmup=warmup, device=device)
    workers = [ctx.Process(target=single_worker, args=(args, threads, queue))
               for _ in range(processes)]
    for w in workers:
        w.start()
    times = [queue.get() for _ in workers]
    for w in workers:
        w.join()
    return sum(times) / len(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny")
    ap.add_argument("--k", default="1,4,8,16")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = ap.parse_args()
    cfg = peer_model.CONFIGS[args.config]
    cores = os.cpu_count() or 1
    row = dict(config=args.config, device=args.device, torch=torch.__version__)

    per_step = one_at_a_time(cfg, args.steps, args.warmup, args.device, args.processes,
                             max(1, cores // args.processes) if args.device == "cpu" else 1)
    baseline = args.processes * 3600 / (RUN_STEPS * per_step)
    print(json.dumps(dict(row, mode="one point at a time", k=1, processes=args.processes,
                          threads=max(1, cores // args.processes), s_per_step=per_step,
                          runs_per_hour=baseline, speedup=1.0)), flush=True)
    torch.set_num_threads(cores)
    for k in [int(v) for v in args.k.split(",")]:
        s = stacked_seconds_per_step(cfg, k, args.steps, args.warmup, args.device)
        rate = k * 3600 / (RUN_STEPS * s)
        print(json.dumps(dict(row, mode="stacked", k=k, processes=1, threads=cores, s_per_step=s,
                              runs_per_hour=rate, speedup=rate / baseline)), flush=True)


if __name__ == "__main__":
    main()
