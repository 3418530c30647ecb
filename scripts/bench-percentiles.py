#!/usr/bin/env python3
"""What exact probe percentiles cost against the strided sample they replaced (issue 25).

    ~/.local/share/qklab/venv/bin/python scripts/bench-percentiles.py [--threads 2] [--reps 15]

Times, on the venv's torch (the LibTorch the engine links: the same kernels), the percentile
calls of one probe step as core/engine/src/probes.cpp makes them, on tensors of the tiny
(default) and 10M configs' shapes: per layer, p99 of the causal logits per head and over the
layer, p90 of the q/k norms (effective and raw) per head and over the layer. "sampled" is the
code before issue 25 (kthvalue on at most 32,768 evenly strided values per row), "exact" the
code now (one topk per row keeps what the row's and the layer's percentile need). Each cell
is the thread's CPU time on one thread (a busy machine does not inflate it), the minimum over
--reps alternating repetitions. The share divides the difference per probe step by the
training time of `every` steps at the given steps/s (defaults: scripts/bench.sh's idle
2-thread numbers in docs/BENCHMARKS.md); one thread's CPU time bounds the wall time two
threads take, so the share is an upper bound. Prints a Markdown table.
"""
import argparse
import math
import time

import torch

LIMIT = 1 << 15  # the old kMaxQuantileSamples

CONFIGS = {  # name: (layers, batch, heads, T, steps/s at probes every 10 from docs/BENCHMARKS.md)
    "tiny": (2, 16, 4, 128, 21.54),
    "10m": (6, 8, 6, 256, 1.19),
}


def sampled(x, q):
    """Before issue 25: kthvalue per row and over the whole, each on a strided sample."""
    def row(v):
        n = v.size(1)
        if n > LIMIT:
            idx = torch.linspace(0, n - 1, LIMIT, dtype=torch.float64).to(torch.int64)
            v = v.index_select(1, idx)
        n = v.size(1)
        return torch.kthvalue(v, max(1, min(n, math.ceil(q * n))), 1).values
    return row(x), row(x.reshape(1, -1))


def exact(x, q):
    """Now (percentiles() in probes.cpp): one unsorted topk per row serves row and whole."""
    percent = round(q * 100)
    rows, n = x.shape
    from_top = lambda count: count - (percent * count + 99) // 100 + 1
    row_top, whole_top = from_top(n), from_top(rows * n)
    keep = min(n, whole_top)
    top = torch.topk(x, keep, 1, largest=True, sorted=False).values
    return (torch.kthvalue(top, keep - row_top + 1, 1).values,
            torch.kthvalue(top.reshape(-1), rows * keep - whole_top + 1).values)


def probe_percentiles(percentiles, logits, norms):
    """One layer's percentile calls: logits (H, N), norms 4 x (H, B*T)."""
    return [percentiles(logits, 0.99)] + [percentiles(n, 0.9) for n in norms]


def time_layer(way, logits, norms):
    # CPU time of this thread: what the work costs, not how long a busy machine made it wait.
    t0 = time.thread_time()
    probe_percentiles(way, logits, norms)
    return time.thread_time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--tiny-steps-per-s", type=float, default=CONFIGS["tiny"][4])
    ap.add_argument("--10m-steps-per-s", dest="m10_steps_per_s", type=float,
                    default=CONFIGS["10m"][4])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    print("| config | values per head (layer) | layers | sampled ms / probe step | exact ms / "
          "probe step | difference | share of training, probes every 10 | every 1 |")
    print("|---|---|---|---|---|---|---|---|")
    rates = {"tiny": a.tiny_steps_per_s, "10m": a.m10_steps_per_s}
    for name, (layers, batch, heads, T, _) in CONFIGS.items():
        steps_per_s = rates[name]
        n = batch * T * (T + 1) // 2
        logits = torch.randn(heads, n) * 4
        norms = [torch.rand(heads, batch * T) * 3 + 1 for _ in range(4)]
        for way in (sampled, exact):  # warm-up
            time_layer(way, logits, norms)
        s, e = [], []
        for _ in range(a.reps):
            s.append(time_layer(sampled, logits, norms))
            e.append(time_layer(exact, logits, norms))
        ms_s, ms_e = 1e3 * layers * min(s), 1e3 * layers * min(e)
        step_ms = 1e3 / steps_per_s
        diff = ms_e - ms_s
        print("| %s | %s (%s) | %d | %.1f | %.1f | %+.1f ms | %+.2f%% | %+.1f%% |" % (
            name, f"{n:,}", f"{n * heads:,}", layers, ms_s, ms_e, diff,
            100 * diff / (10 * step_ms), 100 * diff / step_ms))


if __name__ == "__main__":
    main()
