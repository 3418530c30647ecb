"""The forecast reaches a user's own training (issue 40, item 2): the same RunMonitor warns
before a staged exponential rise of the raw max logit, logs it through the `qklab` logger, keeps
it in run.forecasts and stores it; a flat run gets none.

The model is test_attention_fn's: under RMS QK-norm with a gain g every token's q has length
g * sqrt(DH), so the max raw logit is the diagonal, exactly g^2 * DH * DH^-0.5 = 4 g^2; the test
sets g before each probe to stage the curve it wants.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path

import torch

import qklab
from test_attention_fn import DH, TinyAttentionLM, declared
from test_finders import token_batch
from test_run import rows


def staged_run(tmp_path: Path, name: str, max_logit) -> qklab.Run:
    """200 steps, probed every 10, whose max raw logit at step s is max_logit(s)."""
    model = TinyAttentionLM(qk_norm=True)
    run = qklab.init(name=name, db=str(tmp_path / "runs.db"))
    run.watch(model, every=10, probe_batch=token_batch(), attention_fn=declared)
    for step in range(200):
        with torch.no_grad():
            model.gain.fill_(math.sqrt(max_logit(step) / (DH * DH ** -0.5)))
        run.log({"loss": 2.5}, step=step)
    run.finish()
    return run


def test_a_forecast_before_a_staged_blow_up(tmp_path: Path, caplog) -> None:
    # 2 e^(0.02 s) passes 30 at s = 135.4. The first probe at or past the floor (8) is step 70
    # (8.11); the fit of steps 20..70 is exact: ln(30 / 8.11) / 0.02 = 65.4 steps, so step 136.
    with caplog.at_level(logging.WARNING, logger="qklab"):
        run = staged_run(tmp_path, "rising", lambda s: 2.0 * math.exp(0.02 * s))
    assert [(f["step"], f["kind"], f["layer"], f["predicted_step"]) for f in run.forecasts] == [
        (70, "max_logit", 0, 136)]
    assert "passes 30 in about 66 steps" in run.forecasts[0]["text"]
    assert any("forecast at step 70" in r.getMessage() for r in caplog.records)
    stored = rows(tmp_path / "runs.db", "SELECT step, predicted_step FROM forecasts")
    assert stored == [(70, 136)]


def test_no_forecast_on_a_flat_run(tmp_path: Path) -> None:
    run = staged_run(tmp_path, "flat", lambda s: 12.0 * (1.1 if s % 20 < 10 else 0.9))
    assert run.forecasts == []
