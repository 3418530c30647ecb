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

from . import _qklab, checks
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


class Config(dict):
    """run.config: the user's config, a dict (with attribute access, as wandb.config) stored as
    the run's user config with its row at the first log(). Changes after that are refused:
    the row holds what the run trained with."""

    def __init__(self, run: "Run", data: Mapping[str, Any]) -> None:
        super().__init__(data)
        object.__setattr__(self, "_run", run)

    def _changing(self) -> None:
        if self._run._core is not None:
            raise RuntimeError("qklab: run.config is stored with the run at its first log(); "
                               "set it before that")

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __setitem__(self, key: Any, value: Any) -> None:
        self._changing()
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        self._changing()
        super().__delitem__(key)

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        self._changing()
        super().update(*args, **kwargs)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self._changing()
        return super().setdefault(key, default)


def _as_dict(config: Any) -> dict:
    if config is None:
        return {}
    # argparse.Namespace and plain objects, as trackers accept
    return dict(config) if isinstance(config, Mapping) else dict(vars(config))


class Run:
    """One run. Create it with qklab.init(); `with qklab.init(...) as run:` finishes it at the
    end of the block (stopped on Ctrl-C, failed on an exception)."""

    def __init__(self, name: Optional[str] = None, db: Optional[str] = None,
                 config: Optional[Mapping[str, Any]] = None, steps: Optional[int] = None,
                 seed: Optional[int] = None, *, project: Optional[str] = None,
                 dir: Any = None, mode: str = "online", id: Any = None,
                 resume: Any = None, tags: Any = None, notes: Optional[str] = None) -> None:
        checks.one_of("qklab.init", "mode", mode, checks.MODES)
        self.db = checks.database(db, dir)
        self.mode = mode
        if name:  # "" and None: named run-<id> by the store
            _qklab.check_run_name(name)  # the store's rule, here rather than at the first log
        self.name = name
        self.config = Config(self, _as_dict(config))
        _config_json(self.config)  # refused now (size, keys), not at the first log
        self.summary: dict[str, float] = {}  # the last value logged per name (wandb's summary)
        self._tags = checks.tags_text(tags, project)
        self._notes = "" if notes is None else str(notes)
        self._steps = int(steps) if steps else 0
        self._seed = int(seed) if seed is not None else 0
        self._seed_known = seed is not None
        self._active = mode != "disabled" and _is_writer_rank()
        self._core: Optional[_qklab.Run] = None
        self._finder: Optional[AttentionFinder] = None
        self._probe_batch: Optional[torch.Tensor] = None
        self._spec = _qklab.RunSpec()
        self._every = 0
        self._step = -1
        self._last_probe = -1
        self._pending: list[tuple[str, float, str]] = []  # log(commit=False), for the next log
        self._pending_step: Optional[int] = None
        self._acc_step = -1  # the step whose repeated names are being reduced
        self._acc: dict[str, tuple[float, int]] = {}  # name: (sum, count)
        self.spikes: list[dict] = []  # what the diagnosis said, as it said it
        self.alarms: list[dict] = []
        self.forecasts: list[dict] = []  # warnings before an onset (qklab/analysis/forecast.h)
        if self._active:
            self._find_stored(id, checks.resume_mode(resume))

    def _find_stored(self, id: Any, resume: Optional[str]) -> None:
        """Whether this init continues a stored run (resume), decided now, not at the first log."""
        ref = None
        if id is not None:
            if isinstance(id, str):
                _qklab.check_run_name(id)
                if self.name and self.name != id:
                    raise ValueError(f"qklab.init: id = {id!r} and name = {self.name!r} differ; "
                                     "a run's id is its name (or its number in the database)")
                self.name, ref = id, "name:" + id
            elif not isinstance(id, bool) and isinstance(id, int):
                ref = f"id:{id}"
            else:
                raise TypeError(f"qklab.init: id must be a run name (str) or number (int), got "
                                f"{type(id).__name__}")
        elif self.name:
            ref = "name:" + self.name
        if ref is None:
            if resume == "must":
                raise ValueError("qklab.init: resume = 'must' needs the run's id= or name=")
            return
        stored = _qklab.stored_run(self.db, ref)
        if stored is None:
            if resume == "must" or isinstance(id, int):
                raise ValueError(f"qklab.init: resume = 'must' but {self.db} has no run "
                                 f"{ref.split(':', 1)[1]!r}" if resume == "must" else
                                 f"qklab.init: {self.db} has no run with id {id}")
            return
        said = (f"{self.db} has a run named {stored['name']!r} already (id {stored['id']}, "
                f"{stored['status']}, last stored step {stored['steps_done'] - 1})")
        if resume == "never":
            raise ValueError(f"qklab.init: resume = 'never' but {said}")
        if resume is None and id is None:
            raise ValueError(f"qklab.init: {said}: pass resume='allow' (or id=) to continue it, "
                             "or choose another name")
        if stored["source"] in ("", "qklab"):
            raise ValueError(f"qklab.init: {said} that qklab trained itself: continue it with "
                             "qklab-cli resume, or choose another name")
        if stored["status"] == "finished":
            raise ValueError(f"qklab.init: cannot continue: {said} and finished; qklab appends "
                             "to runs that were stopped, killed or failed")
        self.name = stored["name"]
        self._spec.resume_run_id = stored["id"]
        self._step = stored["steps_done"] - 1

    # ---- the tracker API --------------------------------------------------------------

    @property
    def id(self) -> Optional[int]:
        """The run's id in the database (None before the first log)."""
        return self._core.id if self._core is not None else None

    @property
    def resumed(self) -> bool:
        """Whether this init continues a stored run (wandb's run.resumed)."""
        return bool(self._spec.resume_run_id)

    @property
    def step(self) -> int:
        """The last step logged or, right after a resume, the last step stored (-1: none). A
        script that resumes from a checkpoint older than it recomputes the steps up to it
        without logging them: they are stored already."""
        return self._step

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, kind, value, tb) -> bool:  # type: ignore[no-untyped-def]
        if kind is None:
            self.finish()
        else:
            self.finish(*_ending(kind, value))
        return False

    def watch(self, model: torch.nn.Module, every: Optional[int] = None,
              probe_batch: Optional[torch.Tensor] = None, maps_every: Optional[int] = None,
              attention_fn: Optional[Callable] = None, *, log_freq: Optional[int] = None,
              **unknown: Any) -> AttentionFinder:
        """Probes the model's attention on `probe_batch` at the first logged step at or after
        each multiple of `every` (default 100; wandb's name `log_freq` is the same).

        probe_batch: (B, T) token ids, the same batch at every probe so that probes compare.
        maps_every: steps between stored attention maps (default 10 x every); 0 = none.
        attention_fn: for models qklab does not recognise, a callable(model, batch) returning
        one qklab.AttentionLayer(q, k, scale, softcap, q_raw=, k_raw=, qk_norm=) per layer, or
        a (q, k, scale, softcap) tuple (see docs/PYTHON.md).
        """
        checks.refuse_unknown("qklab.watch", unknown, (
            "model", "every", "log_freq", "probe_batch", "maps_every", "attention_fn"))
        if every is not None and log_freq is not None and every != log_freq:
            raise ValueError(f"qklab.watch: every = {every} and log_freq = {log_freq}; "
                             "log_freq is another name for every: give one")
        every = every if every is not None else log_freq if log_freq is not None else 100
        if not self._active:
            return None  # type: ignore[return-value]
        if self._core is not None:
            raise RuntimeError("qklab: call run.watch() before the first run.log()")
        if int(every) < 1:
            raise ValueError(f"qklab.watch: every must be >= 1, got {every}")
        checks.probe_batch(probe_batch, model)
        finder = find_attention(model, attention_fn)
        self._probe_batch = probe_batch.detach().to(self._model_device(finder, model))
        first = finder.capture(self._probe_batch)  # learns the shapes; fails now, not later
        self._describe(finder, first, int(every), maps_every)
        self._finder = finder
        return finder

    def log(self, data: Mapping[str, Any], step: Optional[int] = None, commit: bool = True,
            reduce: str = "last") -> None:
        """Logs one step's scalars. qklab's step metrics (loss, grad_norm, lr, val_loss, ...)
        fill the step's row; any other name is kept as a custom scalar. step defaults to the
        last step + 1. A name logged again for the same step keeps the last value, or the
        mean or sum of them all with reduce="mean" / "sum" (gradient accumulation).
        commit=False keeps the values for the next committed log (wandb's rule). The model is
        probed at the first logged step at or after each multiple of watch's `every`."""
        checks.one_of("qklab.log", "reduce", reduce, checks.REDUCE)
        if not self._active:
            return
        values = [(str(k), _number(str(k), v), reduce) for k, v in data.items()]
        step = None if step is None else _step(step)
        if not commit:
            if (step is not None and self._pending_step is not None
                    and step != self._pending_step):
                self._commit(self._pending_step)
            self._pending += values
            self._pending_step = step if step is not None else self._pending_step
            return
        if (step is not None and self._pending_step is not None
                and step != self._pending_step):
            self._commit(self._pending_step)
        self._pending += values
        self._commit(step if step is not None else self._pending_step)

    def finish(self, status: Optional[str] = None, message: str = "") -> None:
        """Ends the run (also called at exit): finished, or diverged when the last loss was
        not finite, or the status given ("stopped", "failed")."""
        if not self._active or (self._core is not None and self._core.finished):
            return
        if self._pending:
            self._commit(self._pending_step)
        core = self._ensure_core()
        core.finish(status or "", message)
        if self in _open_runs:
            _open_runs.remove(self)

    # ---- inside -------------------------------------------------------------------------

    def _describe(self, finder: AttentionFinder, first: list, every: int,
                  maps_every: Optional[int]) -> None:
        """What the first capture showed of the model, for the run's config."""
        batch, heads, tokens, width = first[0].q.shape
        softcaps = {c.softcap for c in first}
        spec = self._spec
        spec.n_layers, spec.n_heads, spec.head_dim, spec.seq_len = (
            len(first), heads, width, tokens)
        # What attention_fn declared, else what the lengths show (the built-in finders).
        spec.qk_norm = finder.qk_norm or (
            "rms" if any(_normalises(c.q, c.q_raw) for c in first) else "none")
        spec.softcap = float(max((c for c in softcaps if c), default=0.0))
        if finder.mla is not None:
            spec.mla_d_c, spec.mla_d_rope, spec.mla_q_lora = finder.mla
        spec.source = f"python: {finder.kind}"
        spec.device = str(self._probe_batch.device)
        self._every = every
        spec.probe_every = self._every
        spec.map_every = self._every * 10 if maps_every is None else int(maps_every)

    def _commit(self, step: Optional[int]) -> None:
        """The pending values, reduced per name, into `step` (default: the last step + 1)."""
        values, self._pending, self._pending_step = self._pending, [], None
        core = self._ensure_core()
        step = self._step + 1 if step is None else step
        if step != self._acc_step:
            self._acc_step, self._acc = step, {}
        reduced: dict[str, float] = {}
        for name, value, reduce in values:
            total, count = self._acc.get(name, (0.0, 0))
            if reduce == "last":
                total, count = value, 1
            else:
                total, count = total + value, count + 1
            reduced[name] = total / count if reduce == "mean" else total
            self._acc[name] = (total, count)
        self._announce(core.log(step, reduced))
        self.summary.update(reduced)
        self._step = max(self._step, step)
        if self._finder is not None and step > self._last_probe and (
                self._last_probe < 0 or step // self._every > self._last_probe // self._every):
            self._probe(step)

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
            spec.user_config_json = _config_json(self.config) if self.config else ""
            spec.seed = self._seed
            spec.seed_known = self._seed_known
            spec.steps = self._steps
            spec.torch_version = torch.__version__
            if not spec.source.startswith("python"):
                spec.source = "python"
            folder = os.path.dirname(self.db)
            if folder:
                os.makedirs(folder, exist_ok=True)
            self._core = _qklab.Run(spec)
            if spec.resume_run_id:
                self._step = max(self._step, self._core.resumed_after)
                self._last_probe = self._core.last_probe_step
            if self._tags or self._notes:
                _qklab.annotate_run(self.db, self._core.id, self._tags, self._notes)
        return self._core

    def _probe(self, step: int) -> None:
        assert self._finder is not None and self._probe_batch is not None
        captures = self._finder.capture(self._probe_batch)
        layers = [(c.q, c.k, c.q_raw, c.k_raw, float(c.scale), c.softcap, c.hidden)
                  for c in captures]
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
        for f in report["forecasts"]:
            self.forecasts.append(f)
            _log.warning("qklab: forecast at step %d: %s", f["step"], f["text"])


def init(name: Optional[str] = None, db: Optional[str] = None,
         config: Optional[Mapping[str, Any]] = None, steps: Optional[int] = None,
         seed: Optional[int] = None, **kwargs: Any) -> Run:
    """Starts a run in `db` (default: the database the qklab app opens), or continues a stored
    one (resume). `config` is kept with the run as JSON; `steps` (the planned step count) lets
    the app show progress. Also takes wandb's and Trackio's project=, dir=, mode=, id=,
    resume=, tags= and notes= (docs/PYTHON.md); any other keyword is refused."""
    global _current
    checks.refuse_unknown("qklab.init", {k: v for k, v in kwargs.items()
                                         if k not in checks.INIT_ARGS}, checks.INIT_ARGS)
    run = Run(name=name, db=db, config=config, steps=steps, seed=seed, **kwargs)
    _current = run
    _open_runs.append(run)
    return run


def _require_run() -> Run:
    if _current is None:
        raise RuntimeError("qklab: call qklab.init() first")
    return _current


def watch(model: torch.nn.Module, **kwargs: Any) -> AttentionFinder:
    return _require_run().watch(model, **kwargs)


def log(data: Mapping[str, Any], step: Optional[int] = None, commit: bool = True,
        reduce: str = "last") -> None:
    _require_run().log(data, step=step, commit=commit, reduce=reduce)


def finish(status: Optional[str] = None, message: str = "") -> None:
    """Finishes the latest run; nothing to do without one (as wandb.finish())."""
    if _current is not None:
        _current.finish(status, message)


# A script that ends without finish() finishes its runs; one that dies of an exception
# leaves them failed, with the exception, as the last thing they record; Ctrl-C leaves them
# stopped, as a user's stop is.
_failure: list[tuple[str, str]] = []
_previous_hook = sys.excepthook


def _ending(kind, value) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    if issubclass(kind, KeyboardInterrupt):
        return "stopped", "stopped by Ctrl-C (KeyboardInterrupt)"
    return "failed", f"the script raised {kind.__name__}: {value}"[:500]


def _remember_failure(kind, value, tb):  # type: ignore[no-untyped-def]
    _failure.append(_ending(kind, value))
    _previous_hook(kind, value, tb)


def _finish_open_runs() -> None:
    for run in list(_open_runs):
        try:
            if _failure:
                run.finish(*_failure[-1])
            else:
                run.finish()
        except Exception as e:  # at exit nothing can be raised to; say it
            print(f"qklab: could not finish run {run.name or run.id}: {e}", file=sys.stderr)


sys.excepthook = _remember_failure
atexit.register(_finish_open_runs)
