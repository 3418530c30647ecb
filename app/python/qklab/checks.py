"""What qklab.init and run.watch check before anything is stored: the arguments a tracker user
passes (wandb's and Trackio's names), and the probe batch against the model it will run on."""
from __future__ import annotations

import os
from typing import Any, Optional

import torch

from . import _qklab
from .finders import unwrap_model

# qklab.init's keyword arguments, in the order the error lists them.
INIT_ARGS = ("name", "db", "config", "steps", "seed", "project", "dir", "mode", "id",
             "resume", "tags", "notes")
MODES = ("online", "offline", "disabled")  # online and offline are the same: all is local
RESUME = ("allow", "must", "never")
REDUCE = ("last", "mean", "sum")


def refuse_unknown(function: str, unknown: dict[str, Any], supported: tuple[str, ...]) -> None:
    if unknown:
        raise TypeError(f"{function}: unknown argument{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(sorted(unknown))}; it takes {', '.join(supported)}")


def one_of(function: str, key: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{function}: {key} = {value!r}; it is one of "
                         f"{', '.join(repr(a) for a in allowed)}")


def resume_mode(resume: Any) -> Optional[str]:
    """wandb's resume values: "allow", "must", "never", True (allow), False/None (not asked)."""
    if resume is True:
        return "allow"
    if resume is None or resume is False:
        return None
    one_of("qklab.init", "resume", resume, RESUME)
    return resume


def database(db: Any, folder: Any) -> str:
    """db= names the file; dir= (wandb's) the folder that holds the default file name."""
    if db is not None and folder is not None:
        raise ValueError("qklab.init: give db= (the database file) or dir= (its folder), not both")
    if folder is not None:
        return os.path.join(os.fspath(folder), os.path.basename(_qklab.default_db_path()))
    return os.fspath(db) if db is not None else _qklab.default_db_path()


def tags_text(tags: Any, project: Any) -> str:
    """The run's tags as the store keeps them (comma separated); project= is the tag
    "project:<name>", so that the app's run list filters by it."""
    out = []
    for tag in ([] if tags is None else [tags] if isinstance(tags, str) else list(tags)):
        if not isinstance(tag, str) or not tag or "," in tag:
            raise ValueError(f"qklab.init: tag {tag!r} must be a non-empty string without ','")
        _qklab.check_run_name(tag)  # the one name rule: no control or bidi characters
        out.append(tag)
    if project is not None:
        if not isinstance(project, str) or "," in project:
            raise ValueError(f"qklab.init: project = {project!r} must be a string without ','")
        _qklab.check_run_name(project)
        out.insert(0, "project:" + project)
    return ",".join(out)


def _positions(config: Any) -> tuple[Optional[int], str]:
    for key in ("max_position_embeddings", "n_positions", "block_size"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value, key
    return None, ""


def probe_batch(batch: Any, model: torch.nn.Module) -> None:
    """A probe batch the model can run: (B, T) integer token ids, T within the model's
    positions and ids within its vocabulary (where its config says them)."""
    if not isinstance(batch, torch.Tensor) or batch.dim() != 2:
        got = (f"a tensor of shape {tuple(batch.shape)}" if isinstance(batch, torch.Tensor)
               else type(batch).__name__)
        raise ValueError(f"qklab.watch: probe_batch must be a (B, T) tensor of token ids, "
                         f"got {got}")
    if batch.dtype.is_floating_point or batch.dtype.is_complex or batch.dtype == torch.bool:
        raise ValueError(f"qklab.watch: probe_batch holds {batch.dtype} values; it must hold "
                         "integer token ids (batch.long())")
    if batch.numel() == 0:
        raise ValueError(f"qklab.watch: probe_batch is empty (shape {tuple(batch.shape)})")
    config = getattr(unwrap_model(model), "config", None)
    positions, key = _positions(config)
    if positions is not None and batch.shape[1] > positions:
        raise ValueError(f"qklab.watch: probe_batch has T = {batch.shape[1]} tokens but the "
                         f"model has {positions} positions (config.{key}); use at most "
                         f"{positions}")
    vocab = getattr(config, "vocab_size", None)
    low, high = int(batch.min()), int(batch.max())
    if low < 0 or (isinstance(vocab, int) and vocab > 0 and high >= vocab):
        bad = low if low < 0 else high
        within = f"0..{vocab - 1} (config.vocab_size = {vocab})" if isinstance(vocab, int) \
            else "0 or more"
        raise ValueError(f"qklab.watch: probe_batch holds token id {bad}; the model's ids are "
                         f"{within}")
