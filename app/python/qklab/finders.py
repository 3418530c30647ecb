"""Find each attention layer's queries and keys as the model's own softmax sees them.

qklab's probes (logit max/p99/mean, q/k norms, entropy, histograms) must describe the logits a
model really computes, so a finder captures q and k *after* projection, RoPE and any QK-norm,
together with the model's own scale and softcap, during one no-grad forward of a probe batch.

Three sources are recognised:

* Hugging Face ``transformers`` models whose attention modules dispatch through
  ``ALL_ATTENTION_FUNCTIONS.get_interface(...)`` (GPT-2, Llama, Qwen3, Gemma2 and most decoder
  LMs of transformers 5). The probe routes the model's current implementation (eager, sdpa,
  flash, ...) through a recorder for the duration of one forward, so the captured tensors are
  exactly the arguments the model hands to its attention kernel.
* nanoGPT's ``CausalSelfAttention`` (recognised by structure, because users import their own
  copy of ``model.py``): a forward pre-hook takes the block input and recomputes q and k with
  the module's own ``c_attn``.
* Anything else through ``attention_fn``, a callable ``(model, batch) -> [layer, ...]``, one
  :class:`AttentionLayer` (or a dict with its fields, or a ``(q, k, scale, softcap)`` tuple) per
  layer. An AttentionLayer can also hand over the raw q and k and declare the QK-norm, as the
  built-in finders do for Qwen3 and OLMo 2, and the block's output for max_activation.

The built-in finders also keep each block's output (the residual stream after the layer, for
the max_activation probe) with a forward hook on the block: the attention module's nearest
ancestor held in an ``nn.ModuleList`` (HF's decoder layers, nanoGPT's ``Block``). Where there is
none, the probe stores NaN.

A capture never changes the model: it runs in ``eval()`` under ``torch.no_grad()`` on the
original (uncompiled, unwrapped) module, and restores train/eval flags, hooks and the attention
function mapping in ``finally`` blocks, also when the forward raises.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any, NamedTuple, Optional

import torch
from torch import nn

from . import _qklab

__all__ = ["AttentionFn", "AttentionFinder", "AttentionLayer", "LayerCapture", "QK_NORM_KINDS",
           "find_attention", "unwrap_model"]


QK_NORM_KINDS: tuple[str, ...] = tuple(_qklab.QK_NORM_KINDS)  # qklab/util/choices.h's names
"""What ``AttentionLayer.qk_norm`` may say: "none", "rms" (per head, no gain), "rms_affine" (per
head, learnable gain; Qwen3), "layernorm", "l2_scale" (L2 with a learnable scale), "whole_rms"
(RMS over the whole projection; OLMo 2): the names of qklab's config (``attention.qk_norm``)."""


@dataclasses.dataclass(frozen=True)
class AttentionLayer:
    """One attention layer as ``attention_fn`` hands it to qklab.

    q, k: (B, H, T, D) tensors as the softmax logits use them, after projection, RoPE and any
    QK-norm (``logits = scale * q @ k^T``, then ``softcap * tanh(logits / softcap)`` when softcap
    is not None). k may have fewer heads than q (GQA/MQA); it is repeated to H.

    q_raw, k_raw: the same queries and keys straight out of the projections, before QK-norm and
    RoPE ((B, H, T, D_raw) and (B, H_k, T, D_raw)), for the probes' raw q/k norms, the lengths
    the spike diagnosis watches grow. Both or neither; without them the raw norms are q's and
    k's, which is right only for a model without QK-norm.

    hidden: the output of the layer's whole block (B, T, C), the residual stream after it, for
    the ``max_activation`` probe (its largest |value|); None stores that probe as NaN.

    qk_norm: the model's QK-norm, one of :data:`QK_NORM_KINDS` ("rms", "rms_affine", ...), or
    "none"; None (not said) lets qklab infer it as for the built-in finders: "rms" when q_raw's
    lengths differ from q's, else "none". A QK-norm other than "none" needs q_raw and k_raw. It
    is stored as the run's ``attention.qk_norm``, and with QK-norm on, the diagnosis prescribes
    from tier 4 and the alarms read the normalised q/k lengths.

    ``attention_fn`` may return, per layer, an AttentionLayer, a dict with these field names,
    or the tuple ``(q, k, scale, softcap)`` (raw q/k equal to q/k, QK-norm not said).
    """

    q: torch.Tensor
    k: torch.Tensor
    scale: float
    softcap: Optional[float] = None
    q_raw: Optional[torch.Tensor] = None
    k_raw: Optional[torch.Tensor] = None
    qk_norm: Optional[str] = None
    hidden: Optional[torch.Tensor] = None


AttentionFn = Callable[[nn.Module, torch.Tensor], Sequence[Any]]
"""``attention_fn(model, batch)`` returns one :class:`AttentionLayer` per layer (or a dict with
its fields, or a ``(q, k, scale, softcap)`` tuple)."""

_MODEL_TYPE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,39}")


def _hf_kind(config: Any) -> str:
    """"hf-<model_type>" (hf-llama, hf-olmo2, hf-deepseek_v3, ...): the family as the model's
    own config names it; plain "hf" when it names none a source can show."""
    model_type = getattr(config, "model_type", None)
    if isinstance(model_type, str) and _MODEL_TYPE.fullmatch(model_type):
        return "hf-" + model_type
    return "hf"


class LayerCapture(NamedTuple):
    """One attention layer's logit inputs for the probe batch.

    ``logits = scale * q @ k^T``, capped as ``softcap * tanh(logits / softcap)`` when softcap is
    not None. All tensors are (B, H, T, D), detached, in the model's dtype and device; key heads
    of GQA/MQA models are repeated to H so that head h of q pairs with head h of k.
    """

    q: torch.Tensor
    k: torch.Tensor
    q_raw: torch.Tensor  # straight out of the q projection (before QK-norm); q without QK-norm
    k_raw: torch.Tensor
    scale: float
    softcap: float | None
    # The output of the layer's block (B, T, C), the residual stream after it, for the
    # max_activation probe; None where the block could not be found (stored as NaN).
    hidden: torch.Tensor | None = None


class AttentionFinder:
    """Captures every attention layer of one model; build it with :func:`find_attention`.

    ``kind`` is "nanogpt", "hf-<model_type>" (the Hugging Face config's own ``model_type``:
    "hf-gpt2", "hf-llama", "hf-olmo2", ...), "hf" or "custom". For "custom", ``n_layers`` and ``n_heads`` are 0 until the first ``capture()``,
    because only the user's function knows them.
    """

    kind: str
    n_layers: int
    n_heads: int
    # Multi-head latent attention (DeepSeek-V2/V3) as (d_c, d_rope, q_lora): the latent width,
    # the decoupled RoPE width per head and the query low-rank width (0 = full rank); None when
    # the attention is not MLA.
    mla: tuple[int, int, int] | None = None
    qk_norm: Optional[str]  # declared by attention_fn (after a capture), else None: inferred
    # Each attention layer's block, whose output the max_activation probe reads (None: not
    # found, the probe stores NaN; for "custom", attention_fn hands the output over itself).
    blocks: list[nn.Module] | None = None

    def __init__(self, model: nn.Module, kind: str, n_layers: int, n_heads: int) -> None:
        self.model = model
        self.kind = kind
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.qk_norm = None

    def __repr__(self) -> str:
        return (f"AttentionFinder(kind={self.kind!r}, n_layers={self.n_layers}, "
                f"n_heads={self.n_heads}, model={type(self.model).__name__})")

    def capture(self, batch: torch.Tensor) -> list[LayerCapture]:
        """One forward of ``batch`` (B, T) token ids under ``torch.no_grad()`` in eval mode.

        Returns one LayerCapture per layer in model order. Everything the probe touches (train
        flags, hooks, the attention mapping) is restored, also when the forward raises;
        parameters, grads and optimizer state are never written.
        """
        batch = _to_model_device(self.model, batch)
        with _probe_mode(self.model), ExitStack() as stack:
            collect = self._install(stack)
            self._forward(batch)
            return collect()

    # Subclasses install their recorders on `stack` and return a function that assembles the
    # captures once the forward has run.
    def _install(self, stack: ExitStack) -> Callable[[], list[LayerCapture]]:
        raise NotImplementedError

    def _forward(self, batch: torch.Tensor) -> None:
        self.model(batch)


# --------------------------------------------------------------------------------------------
# Entry point


def find_attention(model: nn.Module, attention_fn: AttentionFn | None = None) -> AttentionFinder:
    """Locate the attention layers of ``model`` (after unwrapping torch.compile and DDP/DP).

    ``attention_fn`` is the escape hatch for models qklab does not recognise: a callable
    ``(model, batch) -> [layer, ...]``, each layer an :class:`AttentionLayer` (q, k, scale,
    softcap, and optionally q_raw, k_raw and qk_norm), a dict with its fields, or a ``(q, k,
    scale, softcap)`` tuple (softcap None for none), called with the unwrapped model in eval
    mode under no_grad. Raises TypeError, naming the model's class and pointing at
    ``attention_fn``, when no attention is found.
    """
    inner = unwrap_model(model)
    if attention_fn is not None:
        if not callable(attention_fn):
            raise TypeError(f"attention_fn must be callable, got {type(attention_fn).__name__}")
        return _CustomFinder(inner, attention_fn)
    hf = _hf_attention_modules(inner)
    if hf:
        return _HFFinder(inner, hf)
    nano = [m for m in inner.modules() if _is_nanogpt_attention(m)]
    if nano:
        return _NanoGPTFinder(inner, nano)
    raise TypeError(
        f"qklab found no attention it can probe in {type(inner).__module__}."
        f"{type(inner).__qualname__}: it recognises Hugging Face transformers models whose "
        "attention uses ALL_ATTENTION_FUNCTIONS (GPT-2, Llama, Qwen3, Gemma2, ...) and "
        "nanoGPT's CausalSelfAttention. For any other model pass attention_fn=fn, where "
        "fn(model, batch) returns one qklab.AttentionLayer(q, k, scale, softcap) per layer.")


def unwrap_model(model: Any) -> nn.Module:
    """Strip torch.compile (``_orig_mod``) and DDP/DataParallel (``.module``) wrappers.

    Probes must run on the original module: running the compiled graph would record a probe
    forward in the user's graph cache, and DDP's forward would join collectives on one rank.
    """
    seen: set[int] = set()
    while id(model) not in seen:
        seen.add(id(model))
        inner = getattr(model, "_orig_mod", None)
        if inner is not None:
            model = inner
        elif isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
            model = model.module
    if not isinstance(model, nn.Module):
        raise TypeError(f"expected a torch.nn.Module, got {type(model).__qualname__}")
    return model


# --------------------------------------------------------------------------------------------
# Shared helpers


@contextmanager
def _probe_mode(model: nn.Module) -> Iterator[None]:
    """eval() + no_grad for the probe; afterwards every module's own train flag comes back.

    Flags are restored per module because models are often mixed (a frozen submodule kept in
    eval while the rest trains); ``train(root_flag)`` first keeps any train() overrides in step.
    """
    flags = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(flags[0][1])
        for module, flag in flags:
            module.training = flag


def _to_model_device(model: nn.Module, batch: torch.Tensor) -> torch.Tensor:
    """Probe batches are often built on the CPU; move them to where the model lives."""
    param = next(model.parameters(), None)
    if param is None or batch.device == param.device:
        return batch
    return batch.to(param.device)


def _repeat_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Repeat GQA/MQA key heads to ``n_heads`` the way HF's repeat_kv pairs them (h -> h // g)."""
    if x.shape[1] == n_heads:
        return x
    if n_heads % x.shape[1]:
        raise ValueError(f"{x.shape[1]} key heads do not divide {n_heads} query heads")
    return x.repeat_interleave(n_heads // x.shape[1], dim=1)


@contextmanager
def _instance_attr(obj: Any, name: str, value: Any) -> Iterator[None]:
    """Set ``name`` in ``obj``'s own ``__dict__`` and put back exactly what was there: shadows a
    method on one instance only, or swaps a module global (its recorder passes others through)."""
    had = name in obj.__dict__
    old = obj.__dict__.get(name)
    obj.__dict__[name] = value
    try:
        yield
    finally:
        if had:
            obj.__dict__[name] = old
        else:
            del obj.__dict__[name]


def _blocks_of(model: nn.Module, attention: list[nn.Module]) -> list[nn.Module] | None:
    """Each attention module's block, the layer whose output is the residual stream after it:
    its nearest ancestor held in an ``nn.ModuleList`` (HF's ``model.layers`` and
    ``transformer.h``, nanoGPT's ``transformer.h``). None when one has no such ancestor or two
    share one: max_activation is then stored as NaN rather than read off the wrong module."""
    parents: dict[nn.Module, nn.Module] = {}
    for parent in model.modules():
        for child in parent.children():
            parents.setdefault(child, parent)
    blocks = []
    for module in attention:
        block = module
        while block in parents and not isinstance(parents[block], nn.ModuleList):
            block = parents[block]
        if block not in parents or block is module:
            return None
        blocks.append(block)
    return blocks if len(set(map(id, blocks))) == len(blocks) else None


def _hidden_of(output: Any) -> torch.Tensor | None:
    """A block's output as (B, T, C): the tensor itself (transformers 5, nanoGPT) or the first
    item of the tuple transformers 4 returns; None for anything else."""
    if isinstance(output, (tuple, list)) and output:
        output = output[0]
    if isinstance(output, torch.Tensor) and output.dim() == 3 and output.is_floating_point():
        return output.detach()
    return None


def _record_block_outputs(stack: ExitStack, blocks: list[nn.Module] | None
                          ) -> dict[nn.Module, list[torch.Tensor | None]]:
    """Forward hooks that keep every block output of the probe forward, in call order."""
    seen: dict[nn.Module, list[torch.Tensor | None]] = {b: [] for b in blocks or []}

    def hook(block: nn.Module, _args: tuple, output: Any) -> None:
        seen[block].append(_hidden_of(output))

    for block in seen:
        stack.callback(block.register_forward_hook(hook).remove)
    return seen


def _with_hidden(capture: LayerCapture, hidden: torch.Tensor | None) -> LayerCapture:
    """The capture with its block's output, kept only when it has the capture's (B, T)."""
    q = capture.q
    if hidden is None or tuple(hidden.shape[:2]) != (q.shape[0], q.shape[2]):
        return capture
    return capture._replace(hidden=hidden)


# --------------------------------------------------------------------------------------------
# Hugging Face transformers


class _Call(NamedTuple):
    """What one attention module handed to its attention function."""

    query: torch.Tensor
    key: torch.Tensor
    scale: float
    softcap: float | None


@functools.lru_cache(maxsize=None)
def _uses_attention_interface(cls: type) -> bool:
    """The heuristic transformers uses itself: the forward dispatches through the attention
    mapping (``get_interface(...)`` in transformers 5, ``ALL_ATTENTION_FUNCTIONS[...]`` in late
    4.x), and its modeling module has an eager function to fall back on."""
    modeling = sys.modules.get(cls.__module__)
    if modeling is None or not hasattr(modeling, "ALL_ATTENTION_FUNCTIONS"):
        return False
    if not callable(getattr(modeling, "eager_attention_forward", None)):
        return False
    try:
        source = inspect.getsource(cls.forward)
    except (OSError, TypeError):
        return False
    return "ALL_ATTENTION_FUNCTIONS" in source


def _hf_attention_modules(model: nn.Module) -> list[nn.Module]:
    """Self-attention modules in model order (cross-attention is not causal self-attention)."""
    return [m for m in model.modules()
            if _uses_attention_interface(type(m)) and not getattr(m, "is_cross_attention", False)]


def _interface_key(implementation: str | None) -> str | None:
    """The key get_interface() looks up: it drops a legacy ``paged|`` prefix except for eager."""
    if isinstance(implementation, str) and implementation.startswith("paged|") \
            and implementation != "paged|eager":
        return implementation.removeprefix("paged|")
    return implementation


def _scale_of(query: torch.Tensor, scaling: Any) -> float:
    """HF passes ``scaling=`` explicitly; None means the kernels' default 1/sqrt(D)."""
    return float(scaling) if scaling is not None else query.shape[-1] ** -0.5


def _mla_of(config: Any) -> tuple[int, int, int] | None:
    """MLA's widths from a DeepSeek-style config (kv_lora_rank, qk_rope_head_dim, q_lora_rank),
    None for any other attention."""
    d_c = getattr(config, "kv_lora_rank", None)
    if not d_c:
        return None
    return int(d_c), int(getattr(config, "qk_rope_head_dim", 0) or 0), int(
        getattr(config, "q_lora_rank", 0) or 0)


def _hf_qk_norm(module: nn.Module) -> str | None:
    """The QK-norm a Hugging Face attention module declares by its ``q_norm``: a gain as wide
    as one head is per-head RMS with a gain shared by the heads (Qwen3, Gemma 3: "rms_affine"),
    one as wide as all heads is RMS over the whole projection (OLMo 2: "whole_rms"). None:
    no q_norm with a gain, left to what the capture shows."""
    norm = getattr(module, "q_norm", None)
    weight = getattr(norm, "weight", None)
    head_dim = getattr(module, "head_dim", None)
    if not isinstance(weight, torch.Tensor) or not head_dim:
        return None
    if weight.numel() == head_dim:
        return "rms_affine"
    if weight.numel() > head_dim and weight.numel() % head_dim == 0:
        return "whole_rms"
    return None


def _softcap_of(softcap: Any) -> float | None:
    return float(softcap) if softcap else None


def _as_heads(x: torch.Tensor, like: torch.Size) -> torch.Tensor:
    """Bring a QK-norm input to (B, Hx, T, D). HF normalises before the head transpose, either
    per head (B, T, Hx, D) as Qwen3 does or over the whole projection (B, T, Hx*D)."""
    b, h, t, d = like
    if x.dim() == 4 and x.shape[1] != t and x.shape[2] == t:
        return x  # already (B, Hx, T, D)
    return x.reshape(b, t, h, d).transpose(1, 2)


class _HFFinder(AttentionFinder):
    """Routes the model's attention implementation through a recorder during one forward."""

    def __init__(self, model: nn.Module, modules: list[nn.Module]) -> None:
        config = modules[0].config
        kind = _hf_kind(config)
        heads = getattr(modules[0], "num_heads", None) or config.num_attention_heads
        super().__init__(model, kind, len(modules), int(heads))
        self.mla = _mla_of(config)
        self.qk_norm = _hf_qk_norm(modules[0])
        self.attention_modules = modules
        self.blocks = _blocks_of(model, modules)
        # No KV cache for a probe: it would only cost memory. User wrappers may not take it.
        params = inspect.signature(model.forward).parameters
        self._extra = {"use_cache": False} if "use_cache" in params else {}

    def _forward(self, batch: torch.Tensor) -> None:
        self.model(batch, **self._extra)

    def _install(self, stack: ExitStack) -> Callable[[], list[LayerCapture]]:
        calls: dict[nn.Module, list[_Call]] = {m: [] for m in self.attention_modules}
        raw: dict[tuple[nn.Module, str], list[torch.Tensor]] = {}

        def record(module: nn.Module, query: torch.Tensor, key: torch.Tensor,
                   scaling: Any, softcap: Any) -> None:
            if module in calls:
                calls[module].append(_Call(query.detach(), key.detach(),
                                           _scale_of(query, scaling), _softcap_of(softcap)))

        eager = {mod: mod.eager_attention_forward for mod in self._modeling_modules()}
        for interface, key in self._routes():
            stack.enter_context(_routed_interface(interface, key, record, eager))
        for mod, original in eager.items():  # 4.x calls eager by its global name
            stack.enter_context(_instance_attr(mod, "eager_attention_forward",
                                               _recorder(record, lambda _m, f=original: f)))
        for module in self.attention_modules:
            _record_raw_inputs(stack, module, raw)
            if getattr(module, "reorder_and_upcast_attn", False):
                stack.enter_context(_gpt2_upcast_recorder(module, record))
        hidden = _record_block_outputs(stack, self.blocks)
        return lambda: self._assemble(calls, raw, hidden)

    def _modeling_modules(self) -> list[Any]:
        """The Python modules (modeling_llama, ...) that define the attention classes."""
        return list({id(m): m for m in (sys.modules[type(a).__module__]
                                         for a in self.attention_modules)}.values())

    def _routes(self) -> list[tuple[Any, Any]]:
        """(mapping, key) pairs to route, read at capture time so that a later
        set_attn_implementation() is honoured; a model may also keep its own mapping."""
        routes: dict[tuple[int, Any], tuple[Any, Any]] = {}
        for module in self.attention_modules:
            interface = sys.modules[type(module).__module__].ALL_ATTENTION_FUNCTIONS
            key = _interface_key(module.config._attn_implementation)
            routes[(id(interface), key)] = (interface, key)
        return list(routes.values())

    def _assemble(self, calls: dict[nn.Module, list[_Call]],
                  raw: dict[tuple[nn.Module, str], list[torch.Tensor]],
                  hidden: dict[nn.Module, list[torch.Tensor | None]]) -> list[LayerCapture]:
        out: list[LayerCapture] = []
        for index, module in enumerate(self.attention_modules):
            if not calls[module]:
                raise RuntimeError(
                    f"attention layer {index} ({type(module).__name__}) did not call its attention "
                    "function during the probe forward; pass attention_fn to find_attention")
            block = self.blocks[index] if self.blocks else None
            for n, call in enumerate(calls[module]):
                capture = _hf_capture(call, _nth(raw, module, "q", n), _nth(raw, module, "k", n))
                out.append(_with_hidden(capture, _nth(hidden, block, None, n)))
        return out


def _nth(seen: Mapping[Any, list], module: nn.Module | None, which: str | None,
         n: int) -> torch.Tensor | None:
    """The n-th tensor recorded for (module, which), or for module alone when which is None."""
    calls = seen.get(module if which is None else (module, which), [])
    return calls[n] if n < len(calls) else None


def _hf_capture(call: _Call, q_in: torch.Tensor | None, k_in: torch.Tensor | None) -> LayerCapture:
    heads = call.query.shape[1]
    k = _repeat_heads(call.key, heads)
    q_raw = call.query if q_in is None else _as_heads(q_in, call.query.shape)
    k_raw = k if k_in is None else _repeat_heads(_as_heads(k_in, call.key.shape), heads)
    return LayerCapture(call.query, k, q_raw, k_raw, call.scale, call.softcap)


def _recorder(record: Callable[..., None],
              original_for: Callable[[nn.Module], Callable[..., Any]]) -> Callable[..., Any]:
    """An attention function that records its (module, query, key, scaling, softcap) and then
    runs the original, so the model computes exactly what it would have without the probe."""

    def recorder(module: nn.Module, query: torch.Tensor, key: torch.Tensor,
                 value: torch.Tensor, attention_mask: Any, *args: Any, **kwargs: Any) -> Any:
        record(module, query, key, kwargs.get("scaling"), kwargs.get("softcap"))
        fn = original_for(module)
        return fn(module, query, key, value, attention_mask, *args, **kwargs)

    return recorder


@contextmanager
def _routed_interface(interface: Any, key: Any, record: Callable[..., None],
                      eager: dict[Any, Callable[..., Any]]) -> Iterator[None]:
    """Register a recorder under ``key`` in the mapping's local overrides (the mapping itself
    when it is a plain dict, as in early 4.x), then put back exactly what was there.

    The recorder calls the saved entry, or for eager (which is not in the mapping) the calling
    module's own ``eager_attention_forward`` as saved in ``eager`` before any patching.
    """
    local = getattr(interface, "_local_mapping", interface)
    had_local, old_local = key in local, local.get(key)
    original = interface[key] if key in interface else None

    def original_for(module: nn.Module) -> Callable[..., Any]:
        if original is not None:
            return original
        modeling = sys.modules[type(module).__module__]
        return eager.get(modeling) or modeling.eager_attention_forward

    interface[key] = _recorder(record, original_for)
    try:
        yield
    finally:
        if had_local:
            interface[key] = old_local
        else:
            del interface[key]


def _record_raw_inputs(stack: ExitStack, module: nn.Module,
                       raw: dict[tuple[nn.Module, str], list[torch.Tensor]]) -> None:
    """With QK-norm, the norm's input is the projection output: hook it for q_raw/k_raw."""
    for which in ("q", "k"):
        norm = getattr(module, f"{which}_norm", None)
        if not isinstance(norm, nn.Module):
            continue
        seen = raw.setdefault((module, which), [])

        def hook(_norm: nn.Module, args: tuple, seen: list = seen) -> None:
            seen.append(args[0].detach())

        stack.callback(norm.register_forward_pre_hook(hook).remove)


def _gpt2_upcast_recorder(module: nn.Module,
                          record: Callable[..., None]) -> AbstractContextManager[None]:
    """GPT-2 with reorder_and_upcast_attn under eager bypasses the interface; record there."""
    original = module._upcast_and_reordered_attn

    def upcast(query: torch.Tensor, key: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        record(module, query, key, module.scaling, None)
        return original(query, key, *args, **kwargs)

    return _instance_attr(module, "_upcast_and_reordered_attn", upcast)


# --------------------------------------------------------------------------------------------
# nanoGPT


def _is_nanogpt_attention(module: nn.Module) -> bool:
    """nanoGPT's CausalSelfAttention, recognised by name and structure (users copy model.py)."""
    if type(module).__name__ != "CausalSelfAttention":
        return False
    if not all(hasattr(module, a) for a in ("c_attn", "n_head", "n_embd")):
        return False
    out = getattr(module.c_attn, "out_features", 3 * module.n_embd)
    return out == 3 * module.n_embd and module.n_embd % module.n_head == 0


def _nanogpt_qk(module: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """q and k exactly as nanoGPT lays them out: split c_attn(x) in three, (B, nh, T, hs)."""
    b, t, c = x.shape
    q, k, _ = module.c_attn(x).split(module.n_embd, dim=2)
    shape = (b, t, module.n_head, c // module.n_head)
    return q.view(shape).transpose(1, 2), k.view(shape).transpose(1, 2)


class _NanoGPTFinder(AttentionFinder):
    """Pre-hooks on every CausalSelfAttention recompute q, k from the block input."""

    def __init__(self, model: nn.Module, modules: list[nn.Module]) -> None:
        super().__init__(model, "nanogpt", len(modules), int(modules[0].n_head))
        self.attention_modules = modules
        self.blocks = _blocks_of(model, modules)

    def _install(self, stack: ExitStack) -> Callable[[], list[LayerCapture]]:
        seen: dict[nn.Module, list[LayerCapture]] = {m: [] for m in self.attention_modules}

        def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
            x = args[0] if args else next(iter(kwargs.values()))
            q, k = _nanogpt_qk(module, x)
            scale = 1.0 / math.sqrt(q.shape[-1])
            seen[module].append(LayerCapture(q, k, q, k, scale, None))

        for module in self.attention_modules:
            stack.callback(module.register_forward_pre_hook(hook, with_kwargs=True).remove)
        hidden = _record_block_outputs(stack, self.blocks)
        return lambda: _in_module_order(self.attention_modules, seen, self.blocks, hidden)


def _in_module_order(modules: list[nn.Module], seen: dict[nn.Module, list[LayerCapture]],
                     blocks: list[nn.Module] | None,
                     hidden: dict[nn.Module, list[torch.Tensor | None]]) -> list[LayerCapture]:
    missing = [i for i, m in enumerate(modules) if not seen[m]]
    if missing:
        raise RuntimeError(f"attention layers {missing} did not run during the probe forward")
    return [_with_hidden(c, _nth(hidden, blocks[i] if blocks else None, None, n))
            for i, m in enumerate(modules) for n, c in enumerate(seen[m])]


# --------------------------------------------------------------------------------------------
# Escape hatch


class _CustomFinder(AttentionFinder):
    """Calls the user's attention_fn in probe mode and checks what it returns."""

    def __init__(self, model: nn.Module, fn: AttentionFn) -> None:
        super().__init__(model, "custom", 0, 0)
        self.fn = fn

    def capture(self, batch: torch.Tensor) -> list[LayerCapture]:
        batch = _to_model_device(self.model, batch)
        with _probe_mode(self.model):
            items = list(self.fn(self.model, batch))
        layers = [_custom_layer(i, item) for i, item in enumerate(items)]
        declared = {i: layer.qk_norm for i, layer in enumerate(layers)
                    if layer.qk_norm is not None}
        if len(set(declared.values())) > 1:
            said = ", ".join(f"layer {i}: {kind!r}" for i, kind in declared.items())
            raise ValueError(f"attention_fn declares different QK-norms ({said}); a run has one "
                             "attention.qk_norm: declare the same in every layer")
        self.qk_norm = next(iter(declared.values()), None)
        captures = [_custom_capture(i, layer) for i, layer in enumerate(layers)]
        self.n_layers = len(captures)
        self.n_heads = int(captures[0].q.shape[1]) if captures else 0
        return captures


_LAYER_FIELDS = tuple(f.name for f in dataclasses.fields(AttentionLayer))


def _custom_layer(index: int, item: Any) -> AttentionLayer:
    """An AttentionLayer from what attention_fn gave for one layer: itself, a dict of its
    fields, or the tuple (q, k, scale, softcap)."""
    where = f"attention_fn layer {index}"
    if isinstance(item, (AttentionLayer, Mapping)):
        layer = item if isinstance(item, AttentionLayer) else _layer_of_dict(where, item)
        if layer.qk_norm is not None and layer.qk_norm not in QK_NORM_KINDS:
            raise ValueError(f"{where}: qk_norm = {layer.qk_norm!r}: must be None (not said) or "
                             f"one of {', '.join(QK_NORM_KINDS)}")
        return layer
    if isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 4:
        return AttentionLayer(*item)
    got = f"{len(item)} items" if isinstance(item, Sequence) else type(item).__name__
    raise ValueError(f"{where}: expected a qklab.AttentionLayer, a dict with its fields "
                     f"({', '.join(_LAYER_FIELDS)}) or a (q, k, scale, softcap) tuple, got {got}")


def _layer_of_dict(where: str, item: Mapping) -> AttentionLayer:
    unknown = sorted(str(key) for key in item if key not in _LAYER_FIELDS)
    missing = [key for key in ("q", "k", "scale") if key not in item]
    if unknown or missing:
        raise ValueError(f"{where}: " + (f"unknown keys {unknown}" if unknown else
                                         f"missing keys {missing}") +
                         f"; an attention layer has {', '.join(_LAYER_FIELDS)}")
    return AttentionLayer(**item)


def _is_heads(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.dim() == 4 and x.is_floating_point()


def _custom_raw(where: str, q: torch.Tensor, k: torch.Tensor, layer: AttentionLayer
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """q_raw and k_raw checked against q and k, or q and k themselves when not given."""
    q_raw, k_raw, kind = layer.q_raw, layer.k_raw, layer.qk_norm
    if q_raw is None and k_raw is None:
        if kind not in (None, "none"):
            raise ValueError(f"{where}: qk_norm = {kind!r} needs q_raw and k_raw, the queries and "
                             "keys out of the projections before QK-norm: the diagnosis reads "
                             "their lengths")
        return q, k
    if q_raw is None or k_raw is None:
        raise ValueError(f"{where}: give both q_raw and k_raw, or neither")
    for name, raw, like in (("q_raw", q_raw, q), ("k_raw", k_raw, k)):
        if not _is_heads(raw):
            raise ValueError(f"{where}: {name} must be a floating (B, H, T, D) tensor")
        if (raw.shape[0], raw.shape[1], raw.shape[2]) != (like.shape[0], like.shape[1],
                                                          like.shape[2]):
            raise ValueError(f"{where}: {name} {tuple(raw.shape)} needs the (B, H, T) of "
                             f"{name[0]} {tuple(like.shape)}")
    return q_raw.detach(), k_raw.detach()


def _custom_capture(index: int, layer: AttentionLayer) -> LayerCapture:
    """Validate one layer early, with the layer named, rather than failing later inside the
    C++ probe code with a shape error nobody can place."""
    where = f"attention_fn layer {index}"
    q, k, scale, softcap = layer.q, layer.k, layer.scale, layer.softcap
    if not (isinstance(q, torch.Tensor) and isinstance(k, torch.Tensor)
            and q.dim() == 4 and k.dim() == 4):
        raise ValueError(f"{where}: q and k must be (B, H, T, D) tensors")
    if q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3]:
        raise ValueError(f"{where}: q {tuple(q.shape)} and k "
                         f"{tuple(k.shape)} differ in batch or head dim")
    if softcap is not None and not float(softcap) > 0:
        raise ValueError(f"{where}: softcap must be None or > 0")
    q, k = q.detach(), k.detach()
    q_raw, k_raw = _custom_raw(where, q, k, layer)
    heads = q.shape[1]
    return LayerCapture(q, _repeat_heads(k, heads), q_raw, _repeat_heads(k_raw, heads),
                        float(scale), None if softcap is None else float(softcap),
                        _custom_hidden(where, q, layer.hidden))


def _custom_hidden(where: str, q: torch.Tensor, hidden: Any) -> torch.Tensor | None:
    """The block output attention_fn handed over, checked against q's batch and length."""
    if hidden is None:
        return None
    if not (isinstance(hidden, torch.Tensor) and hidden.dim() == 3
            and hidden.is_floating_point()):
        raise ValueError(f"{where}: hidden must be None or the block's floating (B, T, C) output")
    if (hidden.shape[0], hidden.shape[1]) != (q.shape[0], q.shape[2]):
        raise ValueError(f"{where}: hidden {tuple(hidden.shape)} needs the (B, T) of q "
                         f"{tuple(q.shape)}")
    return hidden.detach()
