"""The attention-sink probes of a run recorded through the package, as the engine defines them
(core/engine/src/probes.cpp, issue 41 item 3):

* first_token_share, per layer and head: the mean softmax weight on key 0 over the query rows
  1..T-1 of every sequence (row 0 can attend nowhere else); the layer row is the mean over heads.
* max_activation, per layer only: the largest |value| of the block's output, the residual
  stream after the layer; NaN (NULL in the file) in head rows and where the block is not found.

The expected values are computed here from forward passes of our own: the shares from a float64
copy of the model's own attention probabilities, the block outputs read where they enter the
next block (or the final norm), not from the finder's hooks on the blocks themselves.
"""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from torch import nn

import qklab
from test_attention_fn import TinyAttentionLM, declared, watched
from test_finders import H, T, build, nanogpt, token_batch
from test_run import rows


def probed(tmp_path: Path, model: nn.Module, name: str) -> Path:
    db = tmp_path / "runs.db"
    run = qklab.init(name=name, db=str(db))
    run.watch(model, every=1, probe_batch=token_batch())
    run.log({"loss": 2.5}, step=0)
    run.finish()
    return db


def stored(db: Path, column: str) -> dict[tuple[int, int], float | None]:
    """{(layer, head): value} of the step-0 probe; head -1 is the layer row, None is NaN."""
    return {(layer, head): value for layer, head, value in rows(
        db, f"SELECT layer, head, {column} FROM probe_stats WHERE step = 0")}


def first_token_shares(probs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Per layer, (H,): the mean over sequences and query rows 1..T-1 of the weight on key 0."""
    return [p.double()[:, :, 1:, 0].mean(dim=(0, 2)) for p in probs]


def nanogpt_reference(model: nn.Module, batch: torch.Tensor
                      ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(block outputs in the model's fp32, attention probabilities of a float64 copy)."""
    with torch.no_grad():
        tr = model.transformer
        x = tr.drop(tr.wte(batch) + tr.wpe(torch.arange(batch.shape[1])))
        outputs = []
        for block in tr.h:
            x = block(x)
            outputs.append(x)
        m64 = copy.deepcopy(model).double()
        probs: list[torch.Tensor] = []
        for block in m64.transformer.h:  # the explicit softmax passes through attn_dropout
            block.attn.flash = False
            block.attn.attn_dropout.register_forward_hook(lambda _m, _a, out: probs.append(out))
        m64(batch)
    return outputs, probs


def hf_reference(model: nn.Module, batch: torch.Tensor
                 ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(block outputs: each decoder layer's output as the next layer, or the final norm,
    receives it; attention probabilities of a float64 copy)."""
    base = model.base_model
    layers = list(base.layers if hasattr(base, "layers") else base.h)
    final_norm = base.norm if hasattr(base, "norm") else base.ln_f
    outputs: list[torch.Tensor] = []

    def record(_m: nn.Module, args: tuple, kwargs: dict) -> None:
        outputs.append(args[0] if args else kwargs["hidden_states"])

    hooks = [m.register_forward_pre_hook(record, with_kwargs=True)
             for m in layers[1:] + [final_norm]]
    try:
        with torch.no_grad():
            model(batch, use_cache=False)
    finally:
        for h in hooks:
            h.remove()
    with torch.no_grad():
        probs = copy.deepcopy(model).double()(batch, output_attentions=True,
                                              use_cache=False).attentions
    return outputs, list(probs)


@pytest.mark.parametrize("kind", ["nanogpt", "llama", "gpt2"])
def test_sink_probes_equal_a_hand_computation(tmp_path: Path, kind: str) -> None:
    model = nanogpt() if kind == "nanogpt" else build(kind)
    batch = token_batch()
    outputs, probs = (nanogpt_reference if kind == "nanogpt" else hf_reference)(model, batch)
    db = probed(tmp_path, model, kind)
    shares, activations = stored(db, "first_token_share"), stored(db, "max_activation")
    expected_shares = first_token_shares(probs)
    assert len(outputs) == len(expected_shares) == 2
    assert len(shares) == len(activations) == 2 * (H + 1)
    for layer, (hidden, share) in enumerate(zip(outputs, expected_shares)):
        assert hidden.shape[:2] == batch.shape
        assert activations[(layer, -1)] == pytest.approx(float(hidden.abs().max()), rel=1e-6)
        assert activations[(layer, -1)] > 1  # not a probe of something near zero
        for head in range(H):
            assert shares[(layer, head)] == pytest.approx(float(share[head]), rel=1e-5, abs=1e-6)
            assert activations[(layer, head)] is None  # a layer statistic: NaN in head rows
        assert shares[(layer, -1)] == pytest.approx(float(share.mean()), rel=1e-5, abs=1e-6)
    every = torch.cat(expected_shares)
    uniform = float(sum(1 / (q + 1) for q in range(1, T)) / (T - 1))
    assert (every - uniform).abs().max() > 0.01  # the shares are not those of flat attention


class TupleBlocks(nn.Module):
    """nanoGPT's blocks returning (output, None), as transformers 4's decoder layers return
    tuples: the output is the tuple's first item."""

    class Block(nn.Module):
        def __init__(self, inner: nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
            return self.inner(x), None

    def __init__(self) -> None:
        super().__init__()
        tr = nanogpt().transformer
        self.embed, self.pos = tr.wte, tr.wpe
        self.layers = nn.ModuleList(self.Block(b) for b in tr.h)  # nowhere else

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx) + self.pos(torch.arange(idx.shape[1]))
        for layer in self.layers:
            x, _ = layer(x)
        return x


def test_a_block_returning_a_tuple_is_read_by_its_first_item(tmp_path: Path) -> None:
    model = TupleBlocks()
    assert qklab.find_attention(model).blocks == list(model.layers)
    with torch.no_grad():
        x = model.embed(token_batch()) + model.pos(torch.arange(T))
        outputs = []
        for layer in model.layers:
            x = layer.inner(x)
            outputs.append(x)
    db = probed(tmp_path, model, "tuples")
    activations = stored(db, "max_activation")
    for layer, hidden in enumerate(outputs):
        assert activations[(layer, -1)] == pytest.approx(float(hidden.abs().max()), rel=1e-6)


class Unlisted(nn.Module):
    """nanoGPT's blocks held as plain attributes, in no ModuleList: the blocks are not found."""

    def __init__(self) -> None:
        super().__init__()
        inner = nanogpt()
        self.embed, self.pos = inner.transformer.wte, inner.transformer.wpe
        self.block0, self.block1 = inner.transformer.h
        self.head = inner.lm_head

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(self.block1(self.block0(x)))


def test_blocks_not_found_store_nan_and_the_shares_still(tmp_path: Path) -> None:
    model = Unlisted()
    assert qklab.find_attention(model).blocks is None
    db = probed(tmp_path, model, "unlisted")
    assert set(stored(db, "max_activation").values()) == {None}  # NaN, not 0
    shares = stored(db, "first_token_share")
    assert len(shares) == 2 * (H + 1) and all(0 < v <= 1 for v in shares.values())


def test_attention_fn_without_hidden_stores_nan(tmp_path: Path) -> None:
    db, _ = watched(tmp_path, TinyAttentionLM(qk_norm=False), declared, "no-hidden")
    activations = stored(db, "max_activation")
    assert activations and set(activations.values()) == {None}
    assert all(v is not None for v in stored(db, "first_token_share").values())


def test_attention_fn_hands_over_the_block_output(tmp_path: Path) -> None:
    model = TinyAttentionLM(qk_norm=False)
    batch = token_batch()
    with torch.no_grad():
        hidden = model.emb(batch) * -4.0  # any (B, T, C); its largest |value| is negative

    def with_hidden(m: nn.Module, ids: torch.Tensor) -> list[qklab.AttentionLayer]:
        layer, = declared(m, ids)
        return [qklab.AttentionLayer(layer.q, layer.k, layer.scale, q_raw=layer.q_raw,
                                     k_raw=layer.k_raw, qk_norm="none", hidden=hidden)]

    db, _ = watched(tmp_path, model, with_hidden, "hidden")
    assert float(hidden.min()) < -float(hidden.max())
    assert stored(db, "max_activation")[(0, -1)] == pytest.approx(float(hidden.abs().max()),
                                                                  rel=1e-6)


def test_a_hidden_of_the_wrong_shape_is_refused_naming_the_layer(tmp_path: Path) -> None:
    model = TinyAttentionLM(qk_norm=False)

    def wrong(m: nn.Module, ids: torch.Tensor) -> list[dict]:
        layer, = declared(m, ids)
        return [{"q": layer.q, "k": layer.k, "scale": layer.scale,
                 "hidden": torch.zeros(ids.shape[0], ids.shape[1] + 1, 4)}]

    run = qklab.init(name="wrong", db=str(tmp_path / "runs.db"))
    with pytest.raises(ValueError, match=r"attention_fn layer 0: hidden .* needs the \(B, T\)"):
        run.watch(model, every=1, probe_batch=token_batch(), attention_fn=wrong)
    run.finish()
