"""The run object: qklab.init / watch / log / finish, as experiment trackers spell them.

A run is one row in qklab's database (the app's by default) whose steps, probes, spikes and
alarms are written by qklab's C++ store as the loop goes. Rows are committed at every probe and
at least every half second, so a process killed mid-way leaves every committed row and a run
that readers show as interrupted.
"""
from __future__ import annotations

import atexit
import json
import logging
import math
import numbers
import operator
import os
import reprlib
import sys
from typing import Any, Callable, Mapping, Optional

import torch

from . import _qklab
from .finders import AttentionFinder, find_attention

_log = logging.getLogger("qklab")
_MAX_CONFIG_BYTES = 1 << 20  # the store reads configs within 1 MiB (core/src/store)

_current: Optional["Run"] = None
_open_runs: list["Run"] = []


def _is_writer_rank() -> bool:
    """Under torch.distributed only rank 0 writes; the other ranks' runs do nothing."""
    dist = torch.distributed
    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0


def _config_json(config: Optional[Mapping[str, Any]]) -> str:
    if config is None:
        return ""
    if not isinstance(config, Mapping):
        config = vars(config)  # argparse.Namespace and plain objects, as trackers accept
    # allow_nan: an `inf` default (init(config=vars(args))) is common; the core stores NaN and
    # Infinity as the strings "nan" and "inf", which every reader of the database reads.
    text = json.dumps(dict(config), default=str, allow_nan=True, sort_keys=True)
    if len(text.encode()) > _MAX_CONFIG_BYTES:
        raise ValueError(f"qklab.init: config is {len(text.encode())} bytes as JSON; "
                         f"at most {_MAX_CONFIG_BYTES} are stored")
    return _qklab.stored_user_config(text)


def _step(step: Any) -> int:
    """A logged step as an int: Python and NumPy integers, one-element integer tensors. A
    float (1.5 was read as step 1), a string or a bool is refused, never rounded or parsed."""
    if not isinstance(step, bool):
        try:
            return operator.index(step)
        except TypeError:
            pass
    raise TypeError(f"qklab.log: step must be an integer, got {reprlib.repr(step)} "
                    f"({type(step).__name__})")


def _number(key: str, value: Any) -> float:
    """A logged value as a float: Python and NumPy numbers and one-element tensors."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise TypeError(f"qklab.log: '{key}' is a tensor of {value.numel()} elements; "
                            "log one number per name")
        return float(value.detach().cpu().item())
    if isinstance(value, (numbers.Real, bool)) or hasattr(value, "__float__"):
        return float(value)
    raise TypeError(f"qklab.log: '{key}' is a {type(value).__name__}, not a number")


def _normalises(q: torch.Tensor, q_raw: torch.Tensor) -> bool:
    """Whether a layer changes its queries' lengths between projection and softmax: QK-norm
    does, RoPE (a rotation) does not."""
    a, b = q.float().norm(dim=-1), q_raw.float().norm(dim=-1)
    return not torch.allclose(a, b, rtol=1e-3, atol=1e-6)


class Run:
    """One run. Create it with qklab.init()."""

    def __init__(self, name: Optional[str] = None, db: Optional[str] = None,
                 config: Optional[Mapping[str, Any]] = None, steps: Optional[int] = None,
                 seed: Optional[int] = None) -> None:
        self.db = os.fspath(db) if db is not None else _qklab.default_db_path()
        if name:  # "" and None: named run-<id> by the store
            _qklab.check_run_name(name)  # the store's rule, here rather than at the first log
        self.name = name
        self._user_config = _config_json(config)
        self._steps = int(steps) if steps else 0
        self._seed = int(seed) if seed is not None else 0
        self._active = _is_writer_rank()
        self._core: Optional[_qklab.Run] = None
        self._finder: Optional[AttentionFinder] = None
        self._probe_batch: Optional[torch.Tensor] = None
        self._spec = _qklab.RunSpec()
        self._every = 0
        self._step = -1
        self._last_probe = -1
        self.spikes: list[dict] = []  # what the diagnosis said, as it said it
        self.alarms: list[dict] = []

    # ---- the tracker API --------------------------------------------------------------

    @property
    def id(self) -> Optional[int]:
        """The run's id in the database (None before the first log)."""
        return self._core.id if self._core is not None else None

    def watch(self, model: torch.nn.Module, every: int = 100,
              probe_batch: Optional[torch.Tensor] = None, maps_every: Optional[int] = None,
              attention_fn: Optional[Callable] = None) -> AttentionFinder:
        """Probes the model's attention every `every` logged steps on `probe_batch`.

        probe_batch: (B, T) token ids, the same batch at every probe so that probes compare.
        maps_every: steps between stored attention maps (default 10 x every); 0 = none.
        attention_fn: for models qklab does not recognise, a callable(model, batch) returning
        [(q, k, scale, softcap or None)] per layer (see docs/PYTHON.md).
        """
        if not self._active:
            return None  # type: ignore[return-value]
        if self._core is not None:
            raise RuntimeError("qklab: call run.watch() before the first run.log()")
        if int(every) < 1:
            raise ValueError(f"qklab.watch: every must be >= 1, got {every}")
        if not isinstance(probe_batch, torch.Tensor) or probe_batch.dim() != 2:
            raise ValueError("qklab.watch: probe_batch must be a (B, T) tensor of token ids")
        finder = find_attention(model, attention_fn)
        self._probe_batch = probe_batch.detach().to(self._model_device(finder, model))
        first = finder.capture(self._probe_batch)  # learns the shapes; fails now, not later
        batch, heads, tokens, width = first[0].q.shape
        softcaps = {c.softcap for c in first}
        spec = self._spec
        spec.n_layers, spec.n_heads, spec.head_dim, spec.seq_len = (
            len(first), heads, width, tokens)
        spec.qk_norm = any(_normalises(c.q, c.q_raw) for c in first)
        spec.softcap = float(max((c for c in softcaps if c), default=0.0))
        spec.source = f"python: {finder.kind}"
        spec.device = str(self._probe_batch.device)
        self._every = int(every)
        spec.probe_every = self._every
        spec.map_every = self._every * 10 if maps_every is None else int(maps_every)
        self._finder = finder
        return finder

    def log(self, data: Mapping[str, Any], step: Optional[int] = None) -> None:
        """Logs one step's scalars. qklab's step metrics (loss, grad_norm, lr, val_loss, ...)
        fill the step's row; any other name is kept as a custom scalar. step defaults to the
        last step + 1. On a step that is a multiple of watch's `every`, the model is probed."""
        if not self._active:
            return
        values = {str(k): _number(str(k), v) for k, v in data.items()}
        step = self._step + 1 if step is None else _step(step)
        core = self._ensure_core()
        self._announce(core.log(step, values))
        self._step = max(self._step, step)
        if self._finder is not None and step % self._every == 0 and step > self._last_probe:
            self._probe(step)

    def finish(self, status: Optional[str] = None, message: str = "") -> None:
        """Ends the run (also called at exit): finished, or diverged when the last loss was
        not finite, or the status given ("stopped", "failed")."""
        if not self._active or (self._core is not None and self._core.finished):
            return
        core = self._ensure_core()
        core.finish(status or "", message)
        if self in _open_runs:
            _open_runs.remove(self)

    # ---- inside -------------------------------------------------------------------------

    @staticmethod
    def _model_device(finder: AttentionFinder, model: torch.nn.Module) -> torch.device:
        for p in model.parameters():
            return p.device
        return torch.device("cpu")

    def _ensure_core(self) -> _qklab.Run:
        if self._core is None:
            spec = self._spec
            spec.db_path = self.db
            spec.name = self.name or ""
            spec.user_config_json = self._user_config
            spec.seed = self._seed
            spec.steps = self._steps
            spec.torch_version = torch.__version__
            if not spec.source.startswith("python"):
                spec.source = "python"
            self._core = _qklab.Run(spec)
        return self._core

    def _probe(self, step: int) -> None:
        assert self._finder is not None and self._probe_batch is not None
        captures = self._finder.capture(self._probe_batch)
        layers = [(c.q, c.k, c.q_raw, c.k_raw, float(c.scale), c.softcap) for c in captures]
        self._announce(self._core.probe(step, layers))
        self._last_probe = step

    def _announce(self, report: dict) -> None:
        for s in report["spikes"]:
            self.spikes.append(s)
            _log.warning("qklab: %s spike at step %d (z %.1f): %s", s["metric"], s["step"],
                         s["z_score"], s["diagnosis"])
        for a in report["alarms"]:
            self.alarms.append(a)
            _log.warning("qklab: layer %d %s %.1f > %.0f at step %d: %s", a["layer"],
                         a["metric"], a["value"], a["threshold"], a["step"], a["text"])


def init(name: Optional[str] = None, db: Optional[str] = None,
         config: Optional[Mapping[str, Any]] = None, steps: Optional[int] = None,
         seed: Optional[int] = None) -> Run:
    """Starts a run in `db` (default: the database the qklab app opens). `config` is kept with
    the run as JSON; `steps` (the planned step count) lets the app show progress."""
    global _current
    run = Run(name=name, db=db, config=config, steps=steps, seed=seed)
    _current = run
    _open_runs.append(run)
    return run


def _require_run() -> Run:
    if _current is None:
        raise RuntimeError("qklab: call qklab.init() first")
    return _current


def watch(model: torch.nn.Module, **kwargs: Any) -> AttentionFinder:
    return _require_run().watch(model, **kwargs)


def log(data: Mapping[str, Any], step: Optional[int] = None) -> None:
    _require_run().log(data, step=step)


def finish(status: Optional[str] = None, message: str = "") -> None:
    _require_run().finish(status, message)


# A script that ends without finish() finishes its runs; one that dies of an exception
# leaves them failed, with the exception, as the last thing they record.
_failure: list[str] = []
_previous_hook = sys.excepthook


def _remember_failure(kind, value, tb):  # type: ignore[no-untyped-def]
    _failure.append(f"{kind.__name__}: {value}")
    _previous_hook(kind, value, tb)


def _finish_open_runs() -> None:
    for run in list(_open_runs):
        try:
            if _failure:
                run.finish("failed", "the script raised " + _failure[-1][:500])
            else:
                run.finish()
        except Exception as e:  # at exit nothing can be raised to; say it
            print(f"qklab: could not finish run {run.name or run.id}: {e}", file=sys.stderr)


sys.excepthook = _remember_failure
atexit.register(_finish_open_runs)
