"""A tiny GPT with nanoGPT's public structure, written for qklab's tests.

This is a structural stand-in written from scratch for the tests; it is not nanoGPT's code.
Users import their own copy of karpathy/nanoGPT's ``model.py``, so qklab recognises its
attention by structure: a class named ``CausalSelfAttention`` with ``c_attn`` (one Linear to
3 * n_embd whose output splits into q, k, v), ``c_proj``, ``n_head``, ``n_embd`` and ``flash``,
with heads laid out as (B, n_head, T, n_embd // n_head) and logits scaled by 1/sqrt(head size).
This module has the same class names (GPT, Block, CausalSelfAttention), attributes and layout,
so the finder can be tested offline. With ``flash = False`` the attention probabilities pass
through ``attn_dropout``, where a test can read the model's own softmax output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class GPTConfig:
    """Sizes of the test model; defaults are tiny so tests stay fast on two cores."""

    block_size: int = 32
    vocab_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = True


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with one fused q/k/v projection."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if config.n_embd % config.n_head:
            raise ValueError("n_embd must be a multiple of n_head")
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.flash = hasattr(F, "scaled_dot_product_attention")
        allowed = torch.ones(config.block_size, config.block_size, dtype=torch.bool).tril()
        self.register_buffer("allowed", allowed, persistent=False)

    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:
        batch, steps, width = t.shape
        return t.view(batch, steps, self.n_head, width // self.n_head).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, steps, width = x.shape
        q, k, v = (self._split_heads(t) for t in self.c_attn(x).split(self.n_embd, dim=2))
        if self.flash:
            p = self.dropout if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        else:
            logits = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(k.shape[-1]))
            logits = logits.masked_fill(~self.allowed[:steps, :steps], float("-inf"))
            y = self.attn_dropout(logits.softmax(dim=-1)) @ v
        y = y.transpose(1, 2).reshape(batch, steps, width)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """Position-wise feed-forward, 4x wide, GELU."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-norm residual block: attention, then MLP."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Token + learned position embeddings, n_layer blocks, tied LM head."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList(Block(config) for _ in range(config.n_layer)),
            ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits for every position with targets (and the loss), else for the last one only."""
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(positions))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is None:
            return self.lm_head(x[:, -1:, :]), None
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss
