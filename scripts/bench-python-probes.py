#!/usr/bin/env python3
"""What qklab's probes cost a training loop that is not qklab's: Hugging Face GPT-2 at a tiny
width, trained on the CPU in a plain PyTorch loop, with `run.watch(every=N)` and without.

Two measures, side by side in one process (docs/BENCHMARKS.md, "The Python package"):
  - A/B: the same steps with and without watch, interleaved over rounds (wall and CPU time);
  - direct: the time spent inside the probes (capture forward + qklab's statistics and store)
    over the time of the whole loop, which is steadier than a difference of two totals.

    python scripts/bench-python-probes.py --steps 400 --every 100 --rounds 3
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import AutoModelForCausalLM, GPT2Config

import qklab


def make(args: argparse.Namespace) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=256, n_positions=args.tokens, n_embd=args.width,
                        n_layer=args.layers, n_head=args.heads)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    model = model.to(args.device)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)


def loop(args: argparse.Namespace, watch: bool, db: str) -> dict:
    model, opt = make(args)
    g = torch.Generator().manual_seed(1)
    data = torch.randint(0, 256, (args.steps, args.batch, args.tokens), generator=g)
    data = data.to(args.device)
    run = qklab.init(db=db, config=vars(args))
    probe_seconds = 0.0
    if watch:
        run.watch(model, every=args.every, probe_batch=data[0, :4])
        probe = run._probe  # time what the probes cost, inside the loop

        def timed(step: int) -> None:
            nonlocal probe_seconds
            t = time.perf_counter()
            probe(step)
            probe_seconds += time.perf_counter() - t

        run._probe = timed
    wall, cpu = time.perf_counter(), time.process_time()
    for step in range(args.steps):
        loss = model(input_ids=data[step], labels=data[step]).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        run.log({"loss": loss.item()}, step=step)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    run.finish()
    return {"wall": wall, "cpu": cpu, "probe": probe_seconds}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--every", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--device", default="cpu", help="cpu, or cuda on a machine with a GPU")
    args = p.parse_args()
    db = os.path.join(tempfile.mkdtemp(), "bench.db")
    loop(args, True, db)  # warm-up: allocator, first-call costs
    rows = []
    for _ in range(args.rounds):
        rows.append(("without", loop(args, False, db)))
        rows.append(("with", loop(args, True, db)))
    mean = lambda kind, key: sum(r[key] for k, r in rows if k == kind) / args.rounds
    out = {
        "model": f"GPT-2 d{args.width} L{args.layers} H{args.heads} T{args.tokens} B{args.batch}",
        "steps": args.steps, "every": args.every, "threads": torch.get_num_threads(),
        "device": args.device,
        "steps_per_s_without": args.steps / mean("without", "wall"),
        "steps_per_s_with": args.steps / mean("with", "wall"),
        "ab_wall_overhead_pct": 100 * (mean("with", "wall") / mean("without", "wall") - 1),
        "ab_cpu_overhead_pct": 100 * (mean("with", "cpu") / mean("without", "cpu") - 1),
        "probe_ms": 1000 * mean("with", "probe") / (1 + (args.steps - 1) // args.every),
        "probe_share_pct": 100 * mean("with", "probe") / mean("with", "wall"),
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
