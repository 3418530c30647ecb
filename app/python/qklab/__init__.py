"""qklab for your own training loop: attention-logit probes, spike diagnosis and qklab's run
store for any PyTorch model, with the API experiment trackers use.

    import qklab
    run = qklab.init(name="gpt2-lr3e-3", config={"lr": 3e-3})
    run.watch(model, every=100, probe_batch=batch)   # attention probes every 100 steps
    for step in range(steps):
        ...
        run.log({"loss": loss.item(), "grad_norm": norm, "lr": lr}, step=step)
    run.finish()

The run appears in the qklab app (live) and in `qklab-cli list/show/compare/export`. The
probes, histograms, spike detection and diagnosis, logit alarms and the store are qklab's C++
engine (qklab._qklab), built against this environment's torch.
"""
from __future__ import annotations

import torch as _torch

try:
    from . import _qklab
except ImportError as _e:  # pragma: no cover - depends on the installation
    raise ImportError(
        "qklab's extension (qklab._qklab) cannot be loaded: " + str(_e) + ". It is built "
        "against the torch of the environment it was installed into; reinstall with "
        "`pip install ./app/python` from a qklab checkout in this environment."
    ) from _e


def _major_minor(version: str) -> tuple[int, int]:
    parts = version.split("+")[0].split(".")
    return int(parts[0]), int(parts[1])


if _major_minor(_torch.__version__) != _major_minor(_qklab.TORCH_VERSION):
    raise ImportError(
        f"qklab was built against torch {_qklab.TORCH_VERSION} but this environment has torch "
        f"{_torch.__version__}; torch's C++ interface changes between versions. Reinstall "
        "qklab here: `pip install --force-reinstall ./app/python`."
    )

from .finders import (AttentionFinder, AttentionLayer, LayerCapture,  # noqa: E402
                      QK_NORM_KINDS, find_attention)
from .run import Run, finish, init, log, watch  # noqa: E402

__version__ = _qklab.__version__
default_db_path = _qklab.default_db_path
QklabError = _qklab.QklabError

__all__ = [
    "AttentionFinder",
    "AttentionLayer",
    "LayerCapture",
    "QK_NORM_KINDS",
    "QklabError",
    "Run",
    "default_db_path",
    "find_attention",
    "finish",
    "init",
    "log",
    "watch",
]
