"""attention_fn hands over raw q/k and declares the QK-norm (issue 38, item 3); the alarms then
read the normalised lengths, and tier 2 starts from the model's own cap (item 13).

The model is written here by hand, as a user's would be: one attention layer whose q and k
projections share their weights (so every token's q equals its k and the diagonal logit is
exactly scale * |q|^2), optionally with per-head RMS QK-norm and a learnable gain, optionally
with a tanh softcap.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch
from torch import nn

import qklab
from test_finders import B, T, V, token_batch
from test_run import nearest_rank, rows

HEADS, DH = 2, 16
GAIN = 3.0  # |q| = GAIN * sqrt(DH) = 12 after the norm: diagonal logits 144 / 4 = 36 > 30


class TinyAttentionLM(nn.Module):
    """Embedding, one causal attention layer (q and k from the same projection), LM head."""

    def __init__(self, qk_norm: bool, softcap: float | None = None, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.qk_norm, self.softcap, self.scale = qk_norm, softcap, DH ** -0.5
        self.emb = nn.Embedding(V, HEADS * DH)
        self.qk = nn.Linear(HEADS * DH, HEADS * DH, bias=False)
        self.v = nn.Linear(HEADS * DH, HEADS * DH, bias=False)
        self.gain = nn.Parameter(torch.full((HEADS, 1, DH), GAIN))  # per head, per dim
        self.head = nn.Linear(HEADS * DH, V)
        if not qk_norm:  # raw lengths large enough to pass the intervention line too
            with torch.no_grad():
                self.qk.weight.mul_(8)

    def attention_inputs(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(q_raw, q): the projection's (B, H, T, DH) output, and what the softmax gets."""
        x = self.emb(ids)
        q_raw = self.qk(x).view(ids.shape[0], ids.shape[1], HEADS, DH).transpose(1, 2)
        if not self.qk_norm:
            return q_raw, q_raw
        rms = q_raw.pow(2).mean(-1, keepdim=True).sqrt()
        return q_raw, q_raw / rms * self.gain

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)
        _, q = self.attention_inputs(ids)
        logits = self.scale * q @ q.transpose(-1, -2)
        if self.softcap:
            logits = self.softcap * torch.tanh(logits / self.softcap)
        t = ids.shape[1]
        logits = logits.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
        v = self.v(x).view(ids.shape[0], t, HEADS, DH).transpose(1, 2)
        out = (logits.softmax(-1) @ v).transpose(1, 2).reshape(ids.shape[0], t, -1)
        return self.head(out)


def declared(model: TinyAttentionLM, batch: torch.Tensor) -> list[qklab.AttentionLayer]:
    q_raw, q = model.attention_inputs(batch)
    return [qklab.AttentionLayer(q, q, model.scale, model.softcap, q_raw=q_raw, k_raw=q_raw,
                                 qk_norm="rms_affine" if model.qk_norm else "none")]


def old_tuple(model: TinyAttentionLM, batch: torch.Tensor) -> list[tuple]:
    _, q = model.attention_inputs(batch)
    return [(q, q, model.scale, model.softcap)]


def watched(tmp_path: Path, model: TinyAttentionLM, attention_fn,
            name: str) -> tuple[Path, qklab.Run]:
    db = tmp_path / "runs.db"
    run = qklab.init(name=name, db=str(db))
    run.watch(model, every=1, probe_batch=token_batch(), attention_fn=attention_fn)
    run.log({"loss": 2.5}, step=0)
    run.finish()
    return db, run


def stored(db: Path, name: str) -> tuple[dict, tuple]:
    (config,), = rows(db, "SELECT config_json FROM runs WHERE name = ?", name)
    probe = rows(db, "SELECT q_norm_p90, k_norm_p90, q_raw_norm_p90, logit_max_raw FROM "
                     "probe_stats JOIN runs ON runs.id = probe_stats.run_id WHERE name = ? "
                     "AND layer = 0 AND head = -1", name)
    return json.loads(config), probe[0]


def test_a_declared_qk_norm_is_stored_and_its_raw_lengths_are_the_projections(
        tmp_path: Path) -> None:
    model = TinyAttentionLM(qk_norm=True)
    db, run = watched(tmp_path, model, declared, "declared")
    config, (q_norm, k_norm, q_raw_norm, max_raw) = stored(db, "declared")
    assert config["attention"]["qk_norm"] == "rms_affine"
    # By hand: the normalised lengths are GAIN * sqrt(DH) = 12 for every token; the raw ones are
    # the projection's, whose p90 is far from 12.
    with torch.no_grad():
        q_raw, _ = model.attention_inputs(token_batch())
    expected_raw = nearest_rank(q_raw.norm(dim=-1), 90)
    assert q_norm == pytest.approx(GAIN * math.sqrt(DH), rel=1e-5)
    assert k_norm == pytest.approx(GAIN * math.sqrt(DH), rel=1e-5)
    assert q_raw_norm == pytest.approx(expected_raw, rel=1e-5)
    assert abs(q_raw_norm - q_norm) > 1
    assert max_raw == pytest.approx(GAIN ** 2 * DH * DH ** -0.5, rel=1e-5)  # 36: the diagonal
    # Past both lines (the diagonal is 16 of the 136 causal logits, so p99 is 36 too) with
    # QK-norm on: tier 4, read from the normalised lengths, not tier 3 (or 2).
    assert [(a["metric"], a["tier"]) for a in run.alarms] == [("logit_max_raw", 4),
                                                              ("logit_p99_raw", 4)]
    for alarm in run.alarms:
        assert (f"q/k norm p90 after QK-norm (its gains included) 12, 1x the layer's first probe "
                f"(step 0, 12); out of the projections, before QK-norm: "
                f"{expected_raw:.3g}") in alarm["text"]
        assert "Tier 4: QK-norm is on already" in alarm["text"]
    # The same model through the old (q, k, scale, softcap) tuple: QK-norm not said, and no raw
    # q/k to infer it from, so the run looks unnormalised: what the issue found.
    db, old = watched(tmp_path, model, old_tuple, "tuple")
    config, (q_norm, _, q_raw_norm, _) = stored(db, "tuple")
    assert config["attention"]["qk_norm"] == "none" and q_raw_norm == q_norm
    assert old.alarms[0]["tier"] != 4


def test_qk_norm_is_inferred_from_raw_lengths_when_not_declared(tmp_path: Path) -> None:
    model = TinyAttentionLM(qk_norm=True)

    def as_dict(m: nn.Module, batch: torch.Tensor) -> list[dict]:
        q_raw, q = m.attention_inputs(batch)
        return [{"q": q, "k": q, "scale": m.scale, "q_raw": q_raw, "k_raw": q_raw}]

    db, _ = watched(tmp_path, model, as_dict, "dict")
    assert stored(db, "dict")[0]["attention"]["qk_norm"] == "rms"  # as the built-in finders say


def test_attention_layers_are_checked(tmp_path: Path) -> None:
    model = TinyAttentionLM(qk_norm=True)
    batch = token_batch()
    q_raw, q = model.attention_inputs(batch)
    q_raw, q = q_raw.detach(), q.detach()
    layer = qklab.AttentionLayer(q, q, 0.25, q_raw=q_raw, k_raw=q_raw, qk_norm="rms")
    cases = {  # the message (literal), for what attention_fn returned
        "qk_norm = 'RMS': must be None (not said) or one of none, rms, rms_affine, ":
            [qklab.AttentionLayer(q, q, 0.25, q_raw=q_raw, k_raw=q_raw, qk_norm="RMS")],
        "layer 0: qk_norm = 'rms' needs q_raw and k_raw":
            [qklab.AttentionLayer(q, q, 0.25, qk_norm="rms")],
        "give both q_raw and k_raw, or neither": [qklab.AttentionLayer(q, q, 0.25, q_raw=q_raw)],
        "q_raw (2, 2, 8, 16) needs the (B, H, T) of q (2, 2, 16, 16)":
            [qklab.AttentionLayer(q, q, 0.25, q_raw=q_raw[:, :, :8], k_raw=q_raw)],
        "k_raw must be a floating (B, H, T, D) tensor":
            [qklab.AttentionLayer(q, q, 0.25, q_raw=q_raw, k_raw=q_raw[0])],
        "unknown keys ['qknorm']; an attention layer has q, k, scale, softcap, q_raw, k_raw, "
        "qk_norm": [{"q": q, "k": q, "scale": 0.25, "qknorm": "rms"}],
        "different QK-norms (layer 0: 'rms', layer 1: 'none')":
            [layer, qklab.AttentionLayer(q, q, 0.25, q_raw=q_raw, k_raw=q_raw, qk_norm="none")],
        "expected a qklab.AttentionLayer, a dict with its fields": [(q, q, 0.25, None, q_raw)],
    }
    for message, layers in cases.items():
        finder = qklab.find_attention(model, attention_fn=lambda m, b, layers=layers: layers)
        with pytest.raises(ValueError, match=re.escape(message)):
            finder.capture(batch)
    assert qklab.QK_NORM_KINDS[:3] == ("none", "rms", "rms_affine")


def test_tier_two_starts_from_the_cap_the_model_has(tmp_path: Path) -> None:
    model = TinyAttentionLM(qk_norm=False, softcap=5.0)
    db, run = watched(tmp_path, model, declared, "capped")
    config, (_, _, _, max_raw) = stored(db, "capped")
    assert config["attention"]["qk_norm"] == "none"
    assert (config["attention"]["softcap"]["kind"], config["attention"]["softcap"]["c"]) == (
        "tanh", 5.0)
    assert max_raw > 30
    tiers = {a["tier"] for a in run.alarms}
    assert tiers == {2}, run.alarms
    for alarm in run.alarms:
        assert "add a tanh softcap" not in alarm["text"]
        assert ("Tier 2: the run has an attention softcap already, C = 5, below the ~20 under "
                "which a softcap flattens attention") in alarm["text"]
