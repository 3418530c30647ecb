#!/usr/bin/env python3
"""How fast each SDPA backend is on the bench configs' attention shapes (bf16, causal, on a GPU),
forward + backward of one layer's attention, against the explicit matmul-softmax path and
against the default choice. Written for the GPU lease of 2026-12-04 (docs/BENCHMARKS.md), which
asked whether the backend LibTorch picks explains the explicit path's speed.

usage: sdpa_backends.py   (one JSON line per config)
"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_model import CONFIGS  # noqa: E402  (the one table of bench shapes)

shapes = {name: (c["batch_size"], c["n_heads"], c["seq_len"], c["d_model"] // c["n_heads"])
          for name, c in CONFIGS.items()}

def explicit(q, k, v):
    T = q.shape[-2]
    s = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
    m = torch.ones(T, T, device=q.device, dtype=torch.bool).tril()
    return torch.softmax(s.masked_fill(~m, float("-inf")).float(), -1).to(q.dtype) @ v
def timeit(fn, q, k, v, n):
    for _ in range(3):
        fn(q, k, v).sum().backward()
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(n):
        fn(q, k, v).sum().backward()
    torch.cuda.synchronize(); return (time.perf_counter() - t) / n * 1e3
for name, (B, H, T, D) in shapes.items():
    q, k, v = (torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    row = {"config": name, "shape": [B, H, T, D]}
    n = 50 if name != "300m" else 20
    row["default_ms"] = timeit(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), q, k, v, n)
    for be in ["FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH"]:
        try:
            with sdpa_kernel(getattr(SDPBackend, be)):
                row[be.lower() + "_ms"] = timeit(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), q, k, v, n)
        except Exception as e:
            row[be.lower() + "_ms"] = "unavailable: " + str(e)[:80]
    # An explicit additive mask (what a path passing attn_mask instead of is_causal gets).
    mask = torch.ones(T, T, device="cuda", dtype=torch.bool).tril()
    row["default_with_bool_mask_ms"] = timeit(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask), q, k, v, n)
    row["explicit_ms"] = timeit(explicit, q, k, v, n)
    print(json.dumps(row), flush=True)
