#!/usr/bin/env python3
"""The Python peer of qklab's engine for scripts/bench.sh: the same model, optimizer, schedule
and probes written in PyTorch (the torch 2.15 wheel in scripts/setup.sh's venv, the LibTorch
the engine links), so the C++ engine's speed can be compared side by side in one run.

Model: byte embeddings, pre-RMSNorm blocks with a fused q/k/v projection, optional RMS QK-norm,
RoPE (rotate-half), explicit scale, additive causal mask, softmax (or, like the engine, the fused
F.scaled_dot_product_attention on steps that need no logits: no probe, no softcap), GELU MLP (4x), final RMSNorm,
LM head, cross-entropy. AdamW (0.9, 0.95), decay 0.1 on matrices, grad clip 1.0, warmup+cosine.
Probes every N steps: per layer and head the raw/capped logit max, p99 (kthvalue), mean, q/k
norm p90 (effective and raw), entropy, share at cap, histc histogram with under/overflow.

usage: peer_model.py --config tiny|10m --steps 60 --warmup 10 --probes-every 10 --threads 2
prints one JSON line like bench_train.
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {
    "tiny": dict(d_model=128, n_layers=2, n_heads=4, seq_len=128, batch_size=16),
    "10m": dict(d_model=384, n_layers=6, n_heads=6, seq_len=256, batch_size=8),
    "300m": dict(d_model=768, n_layers=12, n_heads=12, seq_len=1024, batch_size=16, qk_norm=True, softcap=50.0),
}


def matmul_gflops(device, dtype):
    """The machine's matmul rate in this dtype: the MFU denominator."""
    n = 8192 if device == "cuda" else 1024
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    a @ b
    sync(device)
    t, reps = time.perf_counter(), 0
    while time.perf_counter() - t < 1.0:
        a @ b
        sync(device)
        reps += 1
    return 2.0 * n ** 3 * reps / (time.perf_counter() - t) / 1e9


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def rms_norm(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat((-x2, x1), -1) * sin


class Attention(nn.Module):
    def __init__(self, d, h, qk_norm, softcap, fused):
        super().__init__()
        self.h, self.dh, self.qk_norm, self.softcap, self.fused = h, d // h, qk_norm, softcap, fused
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin, mask, capture):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)  # (B,H,T,D)
        q_raw, k_raw = q, k
        if self.qk_norm:
            q = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + 1e-6)
            k = k * torch.rsqrt(k.pow(2).mean(-1, keepdim=True) + 1e-6)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        if self.fused and capture is None and self.softcap <= 0:
            y = F.scaled_dot_product_attention(q * (1.0 / math.sqrt(self.dh)), k, v, is_causal=True, scale=1.0)
            return self.proj(y.transpose(1, 2).reshape(B, T, C))
        raw = (q * (1.0 / math.sqrt(self.dh))) @ k.transpose(-2, -1)  # (B,H,T,T)
        capped = torch.tanh(raw / self.softcap) * self.softcap if self.softcap > 0 else raw
        probs = torch.softmax(capped + mask, dim=-1)
        if capture is not None:
            capture.append(dict(raw=raw.detach(), probs=probs.detach(), q=q.detach(), k=k.detach(),
                                q_raw=q_raw.detach(), k_raw=k_raw.detach()))
        y = (probs @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d, h, qk_norm, softcap, fused):
        super().__init__()
        self.attn = Attention(d, h, qk_norm, softcap, fused)
        self.norm1 = nn.Parameter(torch.ones(d))
        self.norm2 = nn.Parameter(torch.ones(d))
        self.fc = nn.Linear(d, 4 * d, bias=False)
        self.out = nn.Linear(4 * d, d, bias=False)

    def forward(self, x, cos, sin, mask, capture):
        x = x + self.attn(rms_norm(x, self.norm1), cos, sin, mask, capture)
        return x + self.out(F.gelu(self.fc(rms_norm(x, self.norm2))))


class Transformer(nn.Module):
    def __init__(self, d_model, n_layers, n_heads, seq_len, qk_norm=False, softcap=0.0, fused=True, **_):
        super().__init__()
        self.tokens = nn.Embedding(256, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, qk_norm, softcap, fused) for _ in range(n_layers))
        self.final_norm = nn.Parameter(torch.ones(d_model))
        self.head = nn.Linear(d_model, 256, bias=False)
        dh = d_model // n_heads
        inv = 10000.0 ** (-torch.arange(0, dh, 2, dtype=torch.float64) / dh)
        emb = torch.outer(torch.arange(seq_len, dtype=torch.float64), inv)
        emb = torch.cat((emb, emb), -1)
        self.register_buffer("cos", emb.cos().float())
        self.register_buffer("sin", emb.sin().float())
        self.register_buffer("mask", torch.full((seq_len, seq_len), float("-inf")).triu(1))
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * n_layers) if ("proj" in name or ".out." in name) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, x, y, capture=None):
        T = x.shape[1]
        h = self.tokens(x)
        for b in self.blocks:
            h = b(h, self.cos[:T], self.sin[:T], self.mask[:T, :T], capture)
        logits = self.head(rms_norm(h, self.final_norm))
        return F.cross_entropy(logits.reshape(-1, 256), y.reshape(-1))


def row_quantile(x, q):
    n = x.shape[1]
    if n > (1 << 20):
        # float64 positions: float32 rounds n - 1 up to n past 2**24 (an out-of-range index).
        idx = torch.linspace(0, n - 1, 1 << 20, dtype=torch.float64, device=x.device).long()
        x = x[:, idx.clamp_(max=n - 1)]
        n = x.shape[1]
    return torch.kthvalue(x, max(1, min(n, math.ceil(q * n))), dim=1).values


def probes(captures, bins=128, lo=-64.0, hi=64.0):
    """The same statistics as core/engine/src/probes.cpp; one host transfer at the end."""
    with torch.no_grad():
        tables, hists = [], []
        for c in captures:
            B, H, T, _ = c["raw"].shape
            idx = torch.tril_indices(T, T, device=c["raw"].device)
            flat = idx[0] * T + idx[1]
            raw = c["raw"].transpose(0, 1).reshape(H, B, T * T)[:, :, flat].reshape(H, -1)
            capped = raw
            norms = [t.norm(dim=-1).transpose(0, 1).reshape(H, -1) for t in (c["q"], c["k"], c["q_raw"], c["k_raw"])]
            entropy = -torch.xlogy(c["probs"], c["probs"]).sum(-1).mean((0, 2))
            frac = torch.zeros(H, device=raw.device)
            per_head = torch.stack([raw.amax(1), row_quantile(raw, 0.99), raw.mean(1), capped.amax(1),
                                    row_quantile(capped, 0.99), capped.mean(1)] +
                                   [row_quantile(n, 0.9) for n in norms] + [entropy, frac], 1)
            whole = lambda t, q: row_quantile(t.reshape(1, -1), q)[0]
            layer = torch.stack([raw.max(), whole(raw, 0.99), raw.mean(), capped.max(), whole(capped, 0.99),
                                 capped.mean()] + [whole(n, 0.9) for n in norms] + [entropy.mean(), frac.mean()])
            tables.append(torch.cat((layer[None], per_head)))
            v = torch.nan_to_num(raw.float(), 0.0, 3e38, -3e38)  # histc has no bf16 kernel
            hists.append(torch.stack([torch.histc(v[h], bins, lo, hi) for h in range(H)]))
            hists.append(torch.stack(((v < lo).sum(1), (v > hi).sum(1)), 1).float())
        return torch.stack(tables).double().cpu(), [h.cpu() for h in hists]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--probes-every", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--data", default="")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch 2.x)")
    ap.add_argument("--explicit", action="store_true",
                    help="explicit attention on every step (default: fused where no logits are needed)")
    args = ap.parse_args()
    dev = args.device
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    cfg = CONFIGS[args.config]
    torch.manual_seed(1337)
    model = Transformer(**cfg, fused=not args.explicit).to(dev)
    step_model = torch.compile(model) if args.compile else model
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-3, betas=(0.9, 0.95), eps=1e-8)
    if args.data:
        data = torch.frombuffer(bytearray(open(args.data, "rb").read()), dtype=torch.uint8)
    else:  # structure does not matter for speed
        data = torch.randint(0, 256, (2_000_000,), dtype=torch.uint8)
    B, T = cfg["batch_size"], cfg["seq_len"]
    total = args.warmup + args.steps
    ar = torch.arange(T + 1)
    start = None
    for step in range(total):
        if step == args.warmup:
            start = time.perf_counter()
        warm = min(30, args.warmup)
        lr = 3e-3 * (step + 1) / warm if step < warm else \
            3e-4 + 0.5 * (3e-3 - 3e-4) * (1 + math.cos(math.pi * (step - warm) / max(1, total - 1 - warm)))
        for g in opt.param_groups:
            g["lr"] = lr
        offsets = torch.randint(0, data.numel() - T - 1, (B, 1))
        rows = data[offsets + ar].long().to(dev)
        x, y = rows[:, :-1], rows[:, 1:]
        probing = args.probes_every > 0 and step % args.probes_every == 0
        captures = [] if probing else None
        with torch.autocast(device_type=dev, dtype=torch.bfloat16, enabled=args.dtype == "bf16"):
            # torch.compile cannot trace the Python-list capture: probe steps run eagerly.
            loss = (model if probing else step_model)(x, y, captures)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        loss_value = loss.item()
        if probing:
            probes(captures)
        opt.step()
    sync(dev)
    seconds = time.perf_counter() - start
    sps = args.steps / seconds
    d, L = cfg["d_model"], cfg["n_layers"]
    flops_per_token = 6.0 * (12 * L * d * d + 256 * d) + 12.0 * L * T * d
    print(json.dumps(dict(impl="python-compile" if args.compile else "python", config=args.config, params=sum(p.numel() for p in model.parameters()),
                          threads=torch.get_num_threads(), probes_every=args.probes_every, steps_per_s=sps,
                          attention="explicit" if args.explicit else "fused",
                          tokens_per_s=sps * B * T, model_gflops=sps * B * T * flops_per_token / 1e9,
                          torch=torch.__version__, final_loss=loss_value, device=dev, dtype=args.dtype,
                          matmul_gflops=matmul_gflops(dev, torch.bfloat16 if args.dtype == "bf16" else torch.float32),
                          peak_mem_gb=torch.cuda.max_memory_allocated() / 1e9 if dev == "cuda" else None)))


if __name__ == "__main__":
    main()
