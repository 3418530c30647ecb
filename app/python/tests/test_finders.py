"""Tests for qklab.finders: captured q/k must reproduce each model's own attention.

Every model is built from a tiny config with fixed seeds (no network, no weights). The central
check recomputes softmax(cap(scale * q k^T) + causal mask) in fp64 from the captured q/k and
compares it with the probabilities the model itself returns, so a wrong scale, a missed RoPE or
QK-norm, a wrong head pairing or a missing softcap all fail it.
"""

from __future__ import annotations

import copy
import math
import os
import sys
from types import SimpleNamespace

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch
from torch import nn

transformers = pytest.importorskip("transformers")

from nanogpt_like import GPT, GPTConfig  # noqa: E402
from qklab.finders import LayerCapture, find_attention, unwrap_model  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForCausalLM, Gemma2Config, GPT2Config, LlamaConfig, Qwen3Config)
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS, AttentionInterface  # noqa: E402

B, T, V, H, D = 2, 16, 64, 4, 8
SOFTCAP = 5.0


def _config(name: str) -> transformers.PretrainedConfig:
    """Tiny configs; initializer_range 0.2 makes attention peaked, so comparisons have teeth."""
    common = dict(vocab_size=V, initializer_range=0.2)
    decoder = dict(common, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                   num_attention_heads=H, num_key_value_heads=2, head_dim=D,
                   max_position_embeddings=32)
    gpt2 = dict(common, n_layer=2, n_head=H, n_embd=32, n_positions=32)
    return {
        "gpt2": lambda: GPT2Config(**gpt2),
        "gpt2-inverse-layer": lambda: GPT2Config(**gpt2, scale_attn_by_inverse_layer_idx=True),
        "gpt2-upcast": lambda: GPT2Config(**gpt2, reorder_and_upcast_attn=True),
        "llama": lambda: LlamaConfig(**decoder),
        "qwen3": lambda: Qwen3Config(**decoder),
        "gemma2": lambda: Gemma2Config(**decoder, attn_logit_softcapping=SOFTCAP,
                                       query_pre_attn_scalar=16, sliding_window=32),
    }[name]()


def build(name: str, impl: str = "eager", seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(_config(name), attn_implementation=impl)
    return model.eval()


def nanogpt(seed: int = 0, **over) -> GPT:
    torch.manual_seed(seed)
    return GPT(GPTConfig(block_size=32, vocab_size=V, n_layer=2, n_head=H, n_embd=32, **over))


def token_batch(seed: int = 1) -> torch.Tensor:
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed))


def fp64_logits(cap: LayerCapture) -> torch.Tensor:
    """scale * q k^T in fp64, uncapped."""
    return cap.scale * cap.q.double() @ cap.k.double().transpose(-1, -2)


def fp64_probs(cap: LayerCapture) -> torch.Tensor:
    logits = fp64_logits(cap)
    if cap.softcap is not None:
        logits = cap.softcap * torch.tanh(logits / cap.softcap)
    causal = torch.ones(logits.shape[-1], logits.shape[-1], dtype=torch.bool).tril()
    return logits.masked_fill(~causal, float("-inf")).softmax(dim=-1)


def causal_mask(t: int) -> torch.Tensor:
    return torch.ones(t, t, dtype=torch.bool).tril()


def assert_matches_model(caps: list[LayerCapture], probs: list[torch.Tensor]) -> None:
    assert len(caps) == len(probs)
    uniform = causal_mask(T).double() / torch.arange(1, T + 1, dtype=torch.float64)[:, None]
    for cap, p in zip(caps, probs):
        assert cap.q.shape == cap.k.shape == cap.q_raw.shape == cap.k_raw.shape == (B, H, T, D)
        torch.testing.assert_close(fp64_probs(cap), p.double(), atol=1e-5, rtol=0)
        assert (p.double() - uniform).abs().max() > 0.1  # attention is not near-uniform


def mapping_state(model: nn.Module) -> tuple:
    """The attention mapping and the eager functions of the model's modeling modules."""
    modeling = {sys.modules[type(m).__module__] for m in model.modules()}
    eager = {mod.__name__: mod.eager_attention_forward for mod in modeling
             if hasattr(mod, "eager_attention_forward")}
    return (dict(ALL_ATTENTION_FUNCTIONS._local_mapping), dict(AttentionInterface._global_mapping),
            eager)


def hook_counts(model: nn.Module) -> list[int]:
    return [len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules()]


# --------------------------------------------------------------------------------------------
# The captured q/k reproduce every model's own attention probabilities

HF_CASES = {  # name: (kind, expected scale per layer, softcap)
    "gpt2": ("hf-gpt2", [D ** -0.5, D ** -0.5], None),
    "gpt2-inverse-layer": ("hf-gpt2", [D ** -0.5, D ** -0.5 / 2], None),
    "gpt2-upcast": ("hf-gpt2", [D ** -0.5, D ** -0.5], None),
    "llama": ("hf-llama", [D ** -0.5] * 2, None),
    "qwen3": ("hf-qwen3", [D ** -0.5] * 2, None),
    "gemma2": ("hf-gemma2", [16 ** -0.5] * 2, SOFTCAP),
}


@pytest.mark.parametrize("name", list(HF_CASES))
def test_hf_capture_reproduces_model_attention(name: str) -> None:
    kind, scales, softcap = HF_CASES[name]
    model, ids = build(name), token_batch()
    finder = find_attention(model)
    assert (finder.kind, finder.n_layers, finder.n_heads) == (kind, 2, H)
    caps = finder.capture(ids)
    with torch.no_grad():
        probs = model(ids, output_attentions=True).attentions
    assert_matches_model(caps, list(probs))
    assert [c.scale for c in caps] == pytest.approx(scales, rel=1e-12)
    assert all(c.softcap == softcap for c in caps)


def test_nanogpt_capture_reproduces_model_attention() -> None:
    model, ids = nanogpt(), token_batch()
    finder = find_attention(model)
    assert (finder.kind, finder.n_layers, finder.n_heads) == ("nanogpt", 2, H)
    flash_caps = finder.capture(ids)
    probs: list[torch.Tensor] = []
    for block in model.transformer.h:
        block.attn.flash = False  # the softmax output then passes through attn_dropout
        block.attn.attn_dropout.register_forward_hook(lambda m, a, out: probs.append(out))
    caps = finder.capture(ids)
    assert_matches_model(caps, probs)
    for flash, plain in zip(flash_caps, caps):
        # layer 0 sees the same input; later layers differ by the kernels' rounding only
        torch.testing.assert_close(flash.q, plain.q, atol=1e-5, rtol=0)
        torch.testing.assert_close(flash.k, plain.k, atol=1e-5, rtol=0)
        assert flash.scale == pytest.approx(D ** -0.5, rel=1e-12) and flash.softcap is None
        assert flash.q_raw is flash.q and flash.k_raw is flash.k


def test_llama_capture_under_sdpa_equals_eager() -> None:
    eager, ids = build("llama", "eager"), token_batch()
    sdpa = build("llama", "sdpa", seed=7)
    sdpa.load_state_dict(eager.state_dict())
    assert sdpa.config._attn_implementation == "sdpa"
    a, b = find_attention(eager).capture(ids), find_attention(sdpa).capture(ids)
    assert len(a) == len(b) == 2
    assert torch.equal(a[0].q, b[0].q) and torch.equal(a[0].k, b[0].k)  # same input to layer 0
    for x, y in zip(a, b):  # later layers differ by the kernels' rounding only
        torch.testing.assert_close(x.q, y.q, atol=1e-5, rtol=0)
        torch.testing.assert_close(x.k, y.k, atol=1e-5, rtol=0)
        assert (x.scale, x.softcap) == (y.scale, y.softcap)
    assert sdpa.config._attn_implementation == "sdpa"


def test_gqa_key_heads_are_repeated_like_repeat_kv() -> None:
    model, ids = build("llama"), token_batch()
    cap = find_attention(model).capture(ids)[0]
    # 4 query heads share 2 key heads: heads (0, 1) use key head 0, heads (2, 3) key head 1.
    assert torch.equal(cap.k[:, 0], cap.k[:, 1]) and torch.equal(cap.k[:, 2], cap.k[:, 3])
    assert not torch.equal(cap.k[:, 0], cap.k[:, 2])


# A transformers-4.x-style attention. This test module doubles as its "modeling module" (it has
# ALL_ATTENTION_FUNCTIONS and eager_attention_forward): late 4.x looked eager up by its global
# name and other implementations as ALL_ATTENTION_FUNCTIONS[...], without get_interface().


def eager_attention_forward(module: nn.Module, query: torch.Tensor, key: torch.Tensor,
                            value: torch.Tensor, attention_mask: torch.Tensor,
                            scaling: float = 1.0, **_: object) -> tuple:
    module.last_probs = (scaling * query @ key.transpose(-1, -2) + attention_mask).softmax(-1)
    return (module.last_probs @ value).transpose(1, 2), module.last_probs


class LegacyAttention(nn.Module):
    def __init__(self, config: object) -> None:
        super().__init__()
        self.config, self.is_causal = config, True
        self.qkv = nn.Linear(H * D, 3 * H * D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = (y.view(b, t, H, D).transpose(1, 2) for y in self.qkv(x).chunk(3, dim=-1))
        mask = torch.full((t, t), float("-inf")).triu(1)
        attention_interface = eager_attention_forward
        if self.config._attn_implementation != "eager":
            attention_interface = ALL_ATTENTION_FUNCTIONS[self.config._attn_implementation]
        out, _ = attention_interface(self, q, k, v, mask, scaling=0.3)
        return x + out.reshape(b, t, H * D)


class LegacyLM(nn.Module):
    def __init__(self, impl: str) -> None:
        super().__init__()
        config = SimpleNamespace(_attn_implementation=impl, model_type="legacy",
                                 num_attention_heads=H)
        self.embed = nn.Embedding(V, H * D)
        self.layers = nn.ModuleList(LegacyAttention(config) for _ in range(2))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return x


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_transformers4_style_dispatch_is_captured(impl: str) -> None:
    torch.manual_seed(0)
    model, reference, ids = LegacyLM(impl), LegacyLM("eager"), token_batch()
    reference.load_state_dict(model.state_dict())
    eager_before, mapping = eager_attention_forward, mapping_state(model)
    finder = find_attention(model)
    assert (finder.kind, finder.n_layers, finder.n_heads) == ("hf-legacy", 2, H)  # its model_type
    caps = finder.capture(ids)
    assert eager_attention_forward is eager_before and mapping_state(model) == mapping
    with torch.no_grad():
        reference(ids)
    assert_matches_model(caps, [layer.last_probs for layer in reference.layers])
    assert [c.scale for c in caps] == [0.3, 0.3]


# --------------------------------------------------------------------------------------------
# QK-norm and softcap


def test_qwen3_logits_respect_the_qk_norm_bound() -> None:
    model, ids = build("qwen3"), token_batch()
    layers = [layer.self_attn for layer in model.model.layers]
    with torch.no_grad():
        for attn in layers:  # non-trivial norm gains, and projections far beyond them
            attn.q_norm.weight.uniform_(0.5, 3.0)
            attn.k_norm.weight.uniform_(0.5, 3.0)
            attn.q_proj.weight.mul_(20.0)
    caps = find_attention(model).capture(ids)
    assert len(caps) == len(layers) == 2
    for cap, attn in zip(caps, layers):
        q_bound = math.sqrt(D) * attn.q_norm.weight.abs().max().item()
        k_bound = math.sqrt(D) * attn.k_norm.weight.abs().max().item()
        assert cap.q.double().norm(dim=-1).max() <= q_bound * (1 + 1e-6)
        assert cap.k.double().norm(dim=-1).max() <= k_bound * (1 + 1e-6)
        logits = fp64_logits(cap)
        assert logits.abs().max() <= cap.scale * q_bound * k_bound * (1 + 1e-6)
        assert cap.q_raw.double().norm(dim=-1).max() > q_bound  # the norm does the bounding
        assert not torch.allclose(cap.q_raw, cap.q)
        assert_raw_is_the_norm_input(cap.q_raw, cap.q, attn.q_norm)
        assert_raw_is_the_norm_input(cap.k_raw, cap.k, attn.k_norm)


def assert_raw_is_the_norm_input(raw: torch.Tensor, final: torch.Tensor, norm: nn.Module) -> None:
    """RoPE keeps norms, so |RMSNorm(raw)| must equal |q| per head and position."""
    x = raw.double()
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)
    normed = normed * norm.weight.double()
    torch.testing.assert_close(normed.norm(dim=-1), final.double().norm(dim=-1),
                               atol=1e-4, rtol=1e-5)


def test_models_without_qk_norm_have_raw_equal_final() -> None:
    ids = token_batch()
    for model in (build("llama"), build("gpt2"), build("gemma2")):
        for cap in find_attention(model).capture(ids):
            assert torch.equal(cap.q_raw, cap.q) and torch.equal(cap.k_raw, cap.k)


def test_gemma2_softcap_caps_logits_the_raw_ones_exceed() -> None:
    model, ids = build("gemma2"), token_batch()
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(2.5)  # raw logits past the cap, tanh not
            layer.self_attn.k_proj.weight.mul_(2.5)  # saturated to exactly 5.0 in fp64
    caps = find_attention(model).capture(ids)
    with torch.no_grad():
        probs = model(ids, output_attentions=True).attentions
    causal = causal_mask(T)
    assert len(caps) == len(probs) == 2
    for cap, p in zip(caps, probs):
        torch.testing.assert_close(fp64_probs(cap), p.double(), atol=1e-5, rtol=0)
        raw = fp64_logits(cap)[..., causal]
        capped = SOFTCAP * torch.tanh(raw / SOFTCAP)
        assert capped.abs().max() <= SOFTCAP
    raw = fp64_logits(caps[0])[..., causal]
    assert raw.max() > SOFTCAP > (SOFTCAP * torch.tanh(raw / SOFTCAP)).max()


# --------------------------------------------------------------------------------------------
# capture() leaves the model as it found it


def _trained_state(model: nn.Module, ids: torch.Tensor) -> torch.optim.Optimizer:
    """One real training step, so grads and optimizer state exist to be (not) disturbed."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(ids, labels=ids).loss.backward()
    opt.step()
    return opt


@pytest.mark.parametrize("name,impl", [("qwen3", "eager"), ("qwen3", "sdpa"),
                                       ("gpt2-upcast", "eager")])
def test_capture_leaves_model_unchanged(name: str, impl: str) -> None:
    model, ids = build(name, impl), token_batch()
    model.train()
    model.lm_head.eval()  # a mixed model: per-module flags must come back, not one flag
    opt = _trained_state(model, ids)
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    state = copy.deepcopy(opt.state_dict())
    modes = {n: m.training for n, m in model.named_modules()}
    mapping, hooks = mapping_state(model), hook_counts(model)

    find_attention(model).capture(ids)

    assert all(torch.equal(p, params[n]) for n, p in model.named_parameters())
    assert all(torch.equal(p.grad, grads[n]) for n, p in model.named_parameters())
    assert_same_optimizer_state(opt.state_dict(), state)
    assert {n: m.training for n, m in model.named_modules()} == modes
    assert mapping_state(model) == mapping and hook_counts(model) == hooks
    assert all("_upcast_and_reordered_attn" not in m.__dict__ for m in model.modules())


def assert_same_optimizer_state(now: dict, before: dict) -> None:
    assert now["state"].keys() == before["state"].keys()
    for key, entry in now["state"].items():
        for name, value in entry.items():
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(before["state"][key][name]))


@pytest.mark.parametrize("name", ["qwen3", "gpt2-upcast", "nanogpt"])
def test_capture_restores_everything_when_forward_raises(name: str) -> None:
    model = nanogpt() if name == "nanogpt" else build(name)
    model.train()
    layers = model.transformer.h if name != "qwen3" else model.model.layers
    finder = find_attention(model)
    mapping, hooks = mapping_state(model), hook_counts(model)

    def fail(*_: object) -> None:
        raise RuntimeError("boom in layer 1")

    handle = layers[1].register_forward_pre_hook(fail)  # after layer 0 has been recorded
    try:
        with pytest.raises(RuntimeError, match="boom in layer 1"):
            finder.capture(token_batch())
    finally:
        handle.remove()
    assert mapping_state(model) == mapping and hook_counts(model) == hooks
    assert all(m.training for m in model.modules())
    assert all("_upcast_and_reordered_attn" not in m.__dict__ for m in model.modules())
    assert len(finder.capture(token_batch())) == 2  # and the finder still works


def test_capture_runs_in_eval_without_dropout() -> None:
    torch.manual_seed(0)
    config = _config("gpt2")
    config.attn_pdrop = config.resid_pdrop = config.embd_pdrop = 0.5
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager").train()
    finder, ids = find_attention(model), token_batch()
    first, second = finder.capture(ids), finder.capture(ids)
    model.eval()
    with torch.no_grad():
        probs = model(ids, output_attentions=True).attentions
    model.train()
    assert_matches_model(first, list(probs))
    assert all(torch.equal(a.q, b.q) and torch.equal(a.k, b.k) for a, b in zip(first, second))
    assert model.training


# --------------------------------------------------------------------------------------------
# Wrappers


def test_torch_compile_is_unwrapped_and_never_run() -> None:
    model, compiled_runs = build("llama"), []

    def backend(graph: torch.fx.GraphModule, inputs: list) -> object:
        compiled_runs.append(graph)
        return graph.forward

    compiled = torch.compile(model, backend=backend)
    finder = find_attention(compiled)
    assert finder.model is model and finder.kind == "hf-llama"
    assert len(finder.capture(token_batch())) == 2
    assert compiled_runs == []  # the probe ran on the original module, not the graph


def test_data_parallel_and_stand_in_wrappers_are_unwrapped() -> None:
    model = nanogpt()

    class CompiledStandIn:
        def __init__(self, inner: object) -> None:
            self._orig_mod = inner

    wrapped = CompiledStandIn(nn.DataParallel(model))
    assert unwrap_model(wrapped) is model
    finder = find_attention(wrapped)
    assert finder.model is model and finder.kind == "nanogpt" and finder.n_layers == 2


def test_ddp_is_unwrapped() -> None:
    """A real DDP needs a process group; a bare instance of the class is enough to check that
    find_attention looks through it."""
    model = nanogpt()
    ddp = nn.parallel.DistributedDataParallel.__new__(nn.parallel.DistributedDataParallel)
    nn.Module.__init__(ddp)
    ddp.module = model
    finder = find_attention(ddp)
    assert finder.model is model
    assert len(finder.capture(token_batch())) == 2


# --------------------------------------------------------------------------------------------
# Escape hatch and unsupported models


def test_attention_fn_tuples_become_layer_captures() -> None:
    model, seen = nn.Sequential(nn.Embedding(V, 8)).train(), []
    q = torch.randn(B, H, T, D, generator=torch.Generator().manual_seed(3))
    k = torch.randn(B, 2, T, D, generator=torch.Generator().manual_seed(4))

    def attention_fn(inner: nn.Module, batch: torch.Tensor) -> list[tuple]:
        seen.append((inner, inner.training, torch.is_grad_enabled(), batch.shape))
        return [(q, k, 0.5, None), (q, k, 0.25, 3.0)]

    finder = find_attention(nn.DataParallel(model), attention_fn=attention_fn)
    assert finder.kind == "custom"
    caps = finder.capture(token_batch())
    assert seen == [(model, False, False, (B, T))] and model.training
    assert (finder.n_layers, finder.n_heads) == (2, H)
    assert all(isinstance(c, LayerCapture) for c in caps)
    assert torch.equal(caps[0].q, q) and torch.equal(caps[0].k, k.repeat_interleave(2, dim=1))
    assert torch.equal(caps[0].q_raw, caps[0].q) and torch.equal(caps[0].k_raw, caps[0].k)
    assert [(c.scale, c.softcap) for c in caps] == [(0.5, None), (0.25, 3.0)]


def test_attention_fn_results_are_checked() -> None:
    model = nn.Sequential(nn.Embedding(V, 8))
    q = torch.zeros(B, H, T, D)
    with pytest.raises(ValueError, match="layer 0"):
        find_attention(model, attention_fn=lambda m, b: [(q, q, 1.0)]).capture(token_batch())
    with pytest.raises(ValueError, match="layer 1"):
        bad = [(q, q, 1.0, None), (q, q[0], 1.0, None)]
        find_attention(model, attention_fn=lambda m, b: bad).capture(token_batch())
    with pytest.raises(TypeError, match="callable"):
        find_attention(model, attention_fn=42)


@pytest.mark.parametrize("model", [
    nn.Sequential(nn.Embedding(V, 8), nn.Linear(8, V)),
    nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, batch_first=True), 1,
                          enable_nested_tensor=False),
], ids=["Sequential", "TransformerEncoder"])
def test_unsupported_model_raises_type_error_naming_it(model: nn.Module) -> None:
    with pytest.raises(TypeError, match=type(model).__name__) as info:
        find_attention(model)
    assert "attention_fn" in str(info.value)


# Issue 38, item 11: the source names the model's own family, not "hf", for every family the
# Hugging Face finder handles.
# Issue 38, item 2: the QK-norm is stored as observed: OLMo 2 normalises the whole projection.
@pytest.mark.parametrize("config_class, family, qk_norm", [
    ("MistralConfig", "mistral", None), ("Olmo2Config", "olmo2", "whole_rms"),
    ("Phi3Config", "phi3", None)])
def test_the_finders_kind_is_the_models_own_model_type(config_class: str, family: str,
                                                       qk_norm: str | None) -> None:
    torch.manual_seed(0)
    config = getattr(transformers, config_class)(
        vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=H, num_key_value_heads=2, max_position_embeddings=32,
        pad_token_id=0)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    finder = find_attention(model)
    assert finder.kind == "hf-" + family
    assert finder.qk_norm == qk_norm
    assert len(finder.capture(token_batch())) == 2
