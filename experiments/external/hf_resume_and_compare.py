#!/usr/bin/env python3
"""Two tiny Hugging Face models (Llama, and Qwen3: the same with QK-norm) at two learning rates
with two seeds each, trained in a plain PyTorch loop and recorded with qklab's Python package.
One run is killed with SIGKILL halfway and its script is run again: qklab continues the run
(same id) after its last stored step. The end is `qklab-cli compare --group-by user.lr`: the
user's own lr groups the runs, and only runs that differ in nothing but the seed are called
seed replicates.

    python experiments/external/hf_resume_and_compare.py --data tinyshakespeare.txt \\
        --db resume_compare.db --cli build/app/cli/qklab-cli

The models are built from configs (no download). Each run trains in its own process, so that
the kill is a real one; the script keeps its own torch checkpoint (model, optimizer) every
--checkpoint-every steps and, resumed, recomputes the steps between that checkpoint and
qklab's last stored step without logging them (run.step says which step that is).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen3Config

import qklab

SHAPE = dict(vocab_size=256, hidden_size=64, intermediate_size=192, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=4, head_dim=16,
             max_position_embeddings=64, tie_word_embeddings=False)
MODELS = {"llama": LlamaConfig, "qwen3": Qwen3Config}
LRS = (3e-3, 3e-2)
SEEDS = (1, 2)
KILLED = ("llama", 3e-2, 1)  # the run whose process is killed halfway, then resumed


def run_name(kind: str, lr: float, seed: int) -> str:
    return f"{kind}-lr{lr:g}-s{seed}"


def batch_at(data: torch.Tensor, step: int, seed: int, batch: int, tokens: int) -> torch.Tensor:
    """The batch of `step`, a function of the step alone: a resumed run sees the same data."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    at = torch.randint(0, data.numel() - tokens, (batch,), generator=g)
    return torch.stack([data[i:i + tokens] for i in at.tolist()])


def train(args: argparse.Namespace, kind: str, lr: float, seed: int) -> None:
    """One run in this process; resumes it (and its own checkpoint) when qklab has it."""
    data = torch.tensor(list(Path(args.data).read_bytes()), dtype=torch.long)
    name = run_name(kind, lr, seed)
    config = dict(model=kind, lr=lr, seed=seed, batch=args.batch, tokens=args.tokens, **SHAPE)
    run = qklab.init(id=name, db=args.db, config=config, steps=args.steps, seed=seed,
                     resume="allow", tags=["resume-and-compare"])
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(MODELS[kind](**SHAPE), attn_implementation="sdpa")
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    checkpoint = Path(args.db).with_name(f"{name}.pt")
    start = 0
    if run.resumed and checkpoint.exists():
        state = torch.load(checkpoint)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"] + 1
    probe = batch_at(data, -1, 12345, 4, args.tokens)
    run.watch(model, every=args.every, probe_batch=probe)
    stored = run.step  # qklab's last stored step: recomputed below, not logged again
    for step in range(start, args.steps):
        window = batch_at(data, step, seed, args.batch, args.tokens)
        loss = model(input_ids=window, labels=window).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step > stored:
            run.log({"loss": loss.item(), "grad_norm": norm.item(), "lr": lr}, step=step)
        if (step + 1) % args.checkpoint_every == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step},
                       checkpoint)
        if step == args.kill_at and (kind, lr, seed) == KILLED and not run.resumed:
            print(f"{name}: killed at step {step}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)  # as a preempted job or the OOM killer would
    run.finish()
    said = "resumed after step %d" % stored if stored >= 0 else "new"
    print(f"{name}: {args.steps} steps ({said}), {len(run.spikes)} spikes, "
          f"{len(run.alarms)} alarms", flush=True)


def worker_command(args: argparse.Namespace, kind: str, lr: float, seed: int) -> list[str]:
    return [sys.executable, __file__, "--data", args.data, "--db", args.db, "--steps",
            str(args.steps), "--every", str(args.every), "--batch", str(args.batch),
            "--tokens", str(args.tokens), "--kill-at", str(args.kill_at),
            "--checkpoint-every", str(args.checkpoint_every),
            "--worker", kind, repr(lr), str(seed)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="a text file (tinyshakespeare.txt)")
    p.add_argument("--db", default="resume_compare.db")
    p.add_argument("--cli", default="qklab-cli", help="the qklab-cli to compare with")
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--every", type=int, default=10, help="probe every N steps")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--kill-at", type=int, default=65)
    p.add_argument("--checkpoint-every", type=int, default=20)
    p.add_argument("--worker", nargs=3, metavar=("MODEL", "LR", "SEED"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        kind, lr, seed = args.worker
        train(args, kind, float(lr), int(seed))
        return
    if Path(args.db).exists():
        sys.exit(f"{args.db} exists: give a new --db (the runs' names are fixed)")
    for kind in MODELS:
        for lr in LRS:
            for seed in SEEDS:
                done = subprocess.run(worker_command(args, kind, lr, seed))
                if done.returncode == -signal.SIGKILL:  # the killed run: its script again
                    done = subprocess.run(worker_command(args, kind, lr, seed))
                if done.returncode != 0:
                    sys.exit(f"{run_name(kind, lr, seed)} failed ({done.returncode})")
    names = [run_name(k, lr, s) for k in MODELS for lr in LRS for s in SEEDS]
    subprocess.run([args.cli, "compare", *names, "--db", args.db, "--group-by", "user.lr"],
                   check=True)


if __name__ == "__main__":
    main()
