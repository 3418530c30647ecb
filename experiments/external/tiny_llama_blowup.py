#!/usr/bin/env python3
"""A tiny Llama blows up at a high learning rate without QK-norm; Qwen3 (the same model with
QK-norm) at the same learning rate does not. Both are Hugging Face models built from configs
(no download), trained in a plain PyTorch loop on a byte-level corpus and recorded with
qklab's Python package: the probes, the logit alarms and the spike diagnosis are qklab's.

    python experiments/external/tiny_llama_blowup.py --data tinyshakespeare.txt --db runs.db

Then open runs.db in the qklab app, or `qklab-cli list --db runs.db`. The result over seeds is
in docs/EXPERIMENTS.md ("Your own model: a tiny Llama blows up").
"""
from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen3Config

import qklab

SHAPE = dict(vocab_size=256, hidden_size=128, intermediate_size=384, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=4, head_dim=32,
             max_position_embeddings=128, tie_word_embeddings=False)


def model_of(kind: str, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    config = (LlamaConfig if kind == "llama" else Qwen3Config)(**SHAPE)
    return AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")


def batches(data: torch.Tensor, batch: int, tokens: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    while True:
        at = torch.randint(0, data.numel() - tokens - 1, (batch,), generator=g)
        yield torch.stack([data[i:i + tokens + 1] for i in at.tolist()])  # (batch, tokens + 1)


def train(kind: str, lr: float, seed: int, args: argparse.Namespace, data: torch.Tensor) -> dict:
    model = model_of(kind, seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    config = dict(model=kind, lr=lr, seed=seed, steps=args.steps, batch=args.batch,
                  tokens=args.tokens, **SHAPE)
    run = qklab.init(name=f"{kind}-lr{lr:g}-s{seed}", db=args.db, config=config,
                     steps=args.steps, seed=seed)
    probe_batch = next(batches(data, 4, args.tokens, seed=12345))[:, :-1]
    run.watch(model, every=args.every, probe_batch=probe_batch)
    stream = batches(data, args.batch, args.tokens, seed)
    started = time.perf_counter()
    for step in range(args.steps):
        chunk = next(stream)
        warm = min(1.0, (step + 1) / 10)  # 10 warm-up steps, then constant
        for group in opt.param_groups:
            group["lr"] = lr * warm
        window = chunk[:, :-1]
        loss = model(input_ids=window, labels=window).loss  # HF shifts the labels itself
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        run.log({"loss": loss.item(), "grad_norm": norm.item(), "lr": lr * warm}, step=step)
    run.finish()
    return {"run": f"{kind}-lr{lr:g}-s{seed}", "seconds": round(time.perf_counter() - started, 1),
            "spikes": [(s["step"], s["kind"]) for s in run.spikes],
            "alarms": [(a["step"], a["layer"], a["kind"]) for a in run.alarms]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="a text file (tinyshakespeare.txt)")
    p.add_argument("--db", default="external_blowup.db")
    p.add_argument("--lr", type=float, default=3e-2)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--every", type=int, default=10, help="probe every N steps")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--models", nargs="+", default=["llama", "qwen3"])
    args = p.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    with open(args.data, "rb") as f:
        data = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).long()
    results = [train(kind, args.lr, seed, args, data) for seed in args.seeds
               for kind in args.models]
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
