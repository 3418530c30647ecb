"""qklab.init / watch / log / finish against qklab's own store, probes and diagnosis.

The stored numbers are checked against values computed here, in fp64, from the same captured
queries and keys; the database is read with Python's sqlite3 (as any reader may) and, where
the build's qklab-cli is known ($QKLAB_CLI), through `qklab-cli show` and `export`.
"""
from __future__ import annotations

import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import qklab
from test_finders import B, H, SOFTCAP, T, build, fp64_logits, nanogpt, token_batch

HERE = Path(__file__).resolve().parent
CLI = os.environ.get("QKLAB_CLI")


def rows(db: Path, sql: str, *args) -> list[tuple]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute(sql, args).fetchall()


def nearest_rank(values: torch.Tensor, percent: int) -> float:
    """qklab's percentile: the k-th smallest value, k = ceil(percent * N / 100)."""
    v = values.flatten().sort().values
    return float(v[math.ceil(percent * v.numel() / 100) - 1])


def probed_run(tmp_path: Path, model: torch.nn.Module, name: str) -> tuple[Path, list]:
    db = tmp_path / "runs.db"
    batch = token_batch()
    run = qklab.init(name=name, db=str(db), config={"model": name, "lr": 3e-4})
    finder = run.watch(model, every=1, probe_batch=batch)
    run.log({"loss": 2.5, "grad_norm": 1.0, "lr": 3e-4}, step=0)
    run.finish()
    return db, finder.capture(batch)


@pytest.mark.parametrize("kind", ["gpt2", "llama", "qwen3", "gemma2", "nanogpt"])
def test_stored_probes_equal_an_fp64_recomputation(tmp_path: Path, kind: str) -> None:
    model = nanogpt() if kind == "nanogpt" else build(kind)
    db, captures = probed_run(tmp_path, model, kind)
    config = json.loads(rows(db, "SELECT config_json FROM runs")[0][0])
    edges = torch.linspace(config["probes"]["hist_min"], config["probes"]["hist_max"],
                           config["probes"]["hist_bins"] + 1, dtype=torch.float64)
    assert config["model"]["n_layers"] == len(captures)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for layer, cap in enumerate(captures):
        heads = cap.q.shape[1]
        raw = fp64_logits(cap)[..., causal]  # (B, H, T(T+1)/2): what softmax sees
        (mx, p99, mean, cmax), = rows(
            db, "SELECT logit_max_raw, logit_p99_raw, logit_mean_raw, logit_max_capped "
                "FROM probe_stats WHERE layer = ? AND head = -1 AND step = 0", layer)
        assert mx == pytest.approx(float(raw.max()), rel=1e-5, abs=1e-5)
        assert mean == pytest.approx(float(raw.mean()), rel=1e-4, abs=1e-5)
        assert p99 == pytest.approx(nearest_rank(raw, 99), rel=1e-5, abs=1e-5)
        if cap.softcap:
            assert cmax == pytest.approx(float((cap.softcap * torch.tanh(raw / cap.softcap)).max()),
                                         rel=1e-5)
        head_max = [r[0] for r in rows(db, "SELECT logit_max_raw FROM probe_stats WHERE "
                                           "layer = ? AND head >= 0 ORDER BY head", layer)]
        torch.testing.assert_close(torch.tensor(head_max, dtype=torch.float64),
                                   raw.transpose(0, 1).reshape(heads, -1).amax(1),
                                   rtol=1e-5, atol=1e-5)
        (blob, under, over, nan), = rows(
            db, "SELECT counts, underflow, overflow, nan FROM histograms WHERE layer = ? AND "
                "head = -1 AND step = 0", layer)
        counts = torch.frombuffer(bytearray(blob), dtype=torch.int64)
        assert int(counts.sum()) + under + over + nan == B * heads * T * (T + 1) // 2
        expected = torch.histogram(raw.flatten().clamp(edges[0], edges[-1]), edges).hist
        assert counts.tolist() == expected.long().tolist()


def test_qwen3_stays_within_its_norm_bound_and_is_stored_as_qk_normed(tmp_path: Path) -> None:
    model = build("qwen3")
    db, captures = probed_run(tmp_path, model, "qwen3")
    source, config = rows(db, "SELECT source, config_json FROM runs")[0]
    assert source == "python: hf-qwen3"
    assert json.loads(config)["attention"]["qk_norm"] == "rms_affine"  # a gain per head dim
    for layer, cap in enumerate(captures):
        attn = model.model.layers[layer].self_attn.requires_grad_(False)
        d = cap.q.shape[-1]
        bound = cap.scale * d * float(attn.q_norm.weight.abs().max() * attn.k_norm.weight.abs().max())
        (mx,), = rows(db, "SELECT max(abs(logit_max_raw)) FROM probe_stats WHERE layer = ?", layer)
        assert mx <= bound * (1 + 1e-5)


def test_gemma2_capped_logits_stay_under_the_cap_the_raw_ones_pass(tmp_path: Path) -> None:
    model = build("gemma2")
    with torch.no_grad():  # push the raw logits past the cap
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(2.5)
            layer.self_attn.k_proj.weight.mul_(2.5)
    db, _ = probed_run(tmp_path, model, "gemma2")
    raw, capped, at_cap = rows(db, "SELECT max(logit_max_raw), max(logit_max_capped), "
                                   "max(frac_at_cap) FROM probe_stats")[0]
    assert raw > SOFTCAP > capped  # fp32 tanh reaches C itself only past about 9 C
    assert at_cap > 0
    assert json.loads(rows(db, "SELECT config_json FROM runs")[0][0])["attention"]["softcap"]["c"] == SOFTCAP


def test_log_keeps_qklab_metrics_in_the_step_row_and_other_names_as_custom_scalars(
        tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = qklab.init(name="scalars", db=str(db), config={"batch_size": 8, "opt": "adamw"})
    for step in range(5):
        run.log({"loss": 3.0 - 0.1 * step, "lr": 1e-3, "tokens_seen": 1024 * (step + 1)},
                step=step)
        run.log({"val_loss": 2.9 - 0.1 * step, "mfu": torch.tensor(0.25)}, step=step)
    run.finish()
    steps = rows(db, "SELECT step, loss, val_loss, lr, grad_norm FROM step_metrics ORDER BY step")
    assert [s[0] for s in steps] == [0, 1, 2, 3, 4]
    assert steps[2][1] == pytest.approx(2.8) and steps[2][2] == pytest.approx(2.7)
    assert steps[2][3] == pytest.approx(1e-3)
    assert steps[2][4] is None  # never logged: no point on the plot, not a zero
    custom = rows(db, "SELECT name, step, value FROM custom_scalars ORDER BY name, step")
    assert [c for c in custom if c[0] == "tokens_seen"][-1] == ("tokens_seen", 4, 5120.0)
    assert [c for c in custom if c[0] == "mfu"][0] == ("mfu", 0, 0.25)
    status, user_config = rows(db, "SELECT status, user_config FROM runs")[0]
    assert status == "finished"
    assert json.loads(user_config) == {"batch_size": 8, "opt": "adamw"}


def test_bad_input_is_refused_with_its_name_and_stores_nothing(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = qklab.init(name="bad", db=str(db))
    run.log({"loss": 1.0}, step=3)
    with pytest.raises(TypeError, match="'note'"):
        run.log({"loss": 1.0, "note": "text"}, step=4)
    with pytest.raises(ValueError, match="control characters"):
        run.log({"loss": 1.0, "bad\x1bname": 1.0}, step=4)
    with pytest.raises(ValueError, match="step 2 comes before step 3"):
        run.log({"loss": 1.0}, step=2)
    with pytest.raises(RuntimeError, match="before the first"):
        run.watch(nanogpt(), every=1, probe_batch=token_batch())
    run.finish()
    assert rows(db, "SELECT step FROM step_metrics") == [(3,)]
    assert rows(db, "SELECT count(*) FROM custom_scalars") == [(0,)]


# Issue 36, item 2: one name rule (the core's, qklab/config/names.h) for the package, the CLI and
# import. A C1 control (U+009B, a one-character CSI) or a bidi override in a scalar name was
# stored, and the database could then never be merged.
@pytest.mark.parametrize("name, named", [
    ("a\u009b2J", "U+009B (a control character) at byte 1"),
    ("\u0080", "U+0080 (a control character) at byte 0"),
    ("txt\u202eexe", "U+202E (a bidi control) at byte 3"),
    ("\u2066x", "U+2066 (a bidi control) at byte 0"),
    ("x" * 201, "at most 200 bytes"),
])
def test_names_follow_the_one_rule_where_they_enter(tmp_path: Path, name: str,
                                                     named: str) -> None:
    db = tmp_path / "runs.db"
    with pytest.raises(ValueError, match=re.escape(named)):
        qklab.init(name=name, db=str(db))
    run = qklab.init(name="ok", db=str(db))
    run.log({"loss": 1.0}, step=0)
    with pytest.raises(ValueError, match=re.escape(named)) as refused:
        run.log({"loss": 2.0, name: 1.0}, step=1)
    assert "\x9b" not in str(refused.value) and "\u202e" not in str(refused.value)
    run.log({"loss": 2.0, "caf\u00e9 \u65e5\u672c \u00a0": 1.0}, step=1)  # other Unicode is fine
    run.finish()
    assert rows(db, "SELECT name FROM custom_scalars") == [("caf\u00e9 \u65e5\u672c \u00a0",)]
    if CLI:  # what log took, import takes
        into = tmp_path / "into.db"
        done = subprocess.run([CLI, "import", str(db), "--db", str(into)], capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("step", [1.5, 2.0, "9", True])
def test_a_step_that_is_not_an_integer_is_refused_not_rounded(tmp_path: Path, step) -> None:
    db = tmp_path / "runs.db"
    run = qklab.init(name="steps", db=str(db))
    with pytest.raises(TypeError, match="step must be an integer"):
        run.log({"loss": 1.0}, step=step)
    run.log({"loss": 1.0}, step=torch.tensor(4))  # integers of any kind are integers
    run.finish()
    assert rows(db, "SELECT step FROM step_metrics") == [(4,)]


# Issue 36, item 8: init(config=vars(args)) with an `inf` default stored Python's bare
# Infinity, which show, export and import refused (exit 2, the whole file).
def test_a_config_with_nan_and_infinity_is_stored_as_every_reader_reads_it(
        tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    config = {"max_grad_norm": math.inf, "floor": -math.inf, "dropout": math.nan, "lr": 3e-4,
              "note": "NaN stays text"}
    run = qklab.init(name="inf", db=str(db), config=config)
    run.log({"loss": 1.0}, step=0)
    run.finish()
    want = {"max_grad_norm": "inf", "floor": "-inf", "dropout": "nan", "lr": 3e-4,
            "note": "NaN stays text"}
    assert json.loads(rows(db, "SELECT user_config FROM runs")[0][0]) == want  # strict JSON
    with pytest.raises(ValueError, match="user_config is not a JSON object"):
        qklab._qklab.stored_user_config("[1]")  # the core's check, which init goes through
    if not CLI:
        return
    with sqlite3.connect(db) as c:  # a row as older packages wrote it
        c.execute("UPDATE runs SET user_config = '{\"clip\": Infinity, \"p\": NaN}'")
    cli = lambda *a: subprocess.run([CLI, *a], capture_output=True, text=True, check=True).stdout
    assert json.loads(cli("show", "inf", "--json", "--db", str(db)))["user_config"] == {
        "clip": "inf", "p": "nan"}
    assert '"clip": "inf"' in cli("show", "inf", "--db", str(db))
    exported = json.loads(cli("export", "inf", "--format", "json", "--db", str(db)))
    assert exported["user_config"] == {"clip": "inf", "p": "nan"}
    cli("import", str(db), "--db", str(tmp_path / "into.db"))


def spiking_losses(steps: int, spike_at: int) -> list[float]:
    g = torch.Generator().manual_seed(0)
    noise = torch.randn(steps, generator=g, dtype=torch.float64) * 0.01
    return [3.0 + float(noise[s]) + (2.0 if s == spike_at else 0.0) for s in range(steps)]


def test_a_loss_spike_is_detected_and_diagnosed_from_the_probe_after_it(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = qklab.init(name="spike", db=str(db))
    run.watch(nanogpt(), every=10, probe_batch=token_batch())
    for step, loss in enumerate(spiking_losses(80, spike_at=55)):
        run.log({"loss": loss, "grad_norm": 1.0}, step=step)
    run.finish()
    (step, metric, kind, probe_step, diagnosis), = rows(
        db, "SELECT step, metric, kind, probe_step, diagnosis FROM spikes")
    assert (step, metric, probe_step) == (55, "loss", 60)  # the probe at or after it
    assert kind in {"data_or_accumulation", "token_spike", "qk_runaway", "high_logits"}
    assert diagnosis and run.spikes[0]["step"] == 55


KILLED_SCRIPT = textwrap.dedent("""
    import sys, time, torch, qklab
    sys.path.insert(0, {here!r})
    from test_finders import nanogpt, token_batch
    run = qklab.init(name="killed", db={db!r})
    run.watch(nanogpt(), every=5, probe_batch=token_batch())
    for step in range(10_000):
        run.log({{"loss": 3.0, "grad_norm": 1.0}}, step=step)
        if step == 20:
            print("probed 20", flush=True)  # a probe step: committed at once
        time.sleep(0.01)
""")


def test_a_killed_process_leaves_an_interrupted_run_with_every_committed_row(
        tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    script = KILLED_SCRIPT.format(here=str(HERE), db=str(db))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "probed 20"
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    status, steps_done = rows(db, "SELECT status, steps_done FROM runs")[0]
    assert status == "running"  # the dead writer could not say more; readers say interrupted
    assert rows(db, "SELECT max(step) FROM probe_stats")[0][0] >= 20
    assert steps_done >= 20
    stored_steps = [s for (s,) in rows(db, "SELECT step FROM step_metrics ORDER BY step")]
    assert stored_steps == list(range(len(stored_steps)))  # no hole in what was committed
    if CLI:
        shown = json.loads(subprocess.run([CLI, "show", "killed", "--json", "--db", str(db)],
                                          capture_output=True, text=True, check=True).stdout)
        assert shown["summary"]["status"] == "interrupted"
        assert shown["summary"]["source"] == "python: nanogpt"
        assert rows(db, "SELECT status FROM runs")[0][0] == "running"  # show did not write


def test_a_script_that_raises_leaves_its_run_failed_with_the_exception(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    script = (f"import qklab\nrun = qklab.init(name='raises', db={str(db)!r})\n"
              "run.log({'loss': 1.0}, step=0)\nraise RuntimeError('out of memory at step 1')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 1
    status, message = rows(db, "SELECT status, status_message FROM runs")[0]
    assert status == "failed"
    assert "out of memory at step 1" in message


@pytest.mark.skipif(not CLI, reason="QKLAB_CLI (the build's qklab-cli) is not set")
# Issue 38, item 2: qklab stores what it observed of a model and nothing else. The learning
# rate, schedule, RoPE and data of a run trained outside qklab are unknown, not qklab's
# defaults (a 6e-4 run was shown as optim.lr 0.003, GPT-2 as model.rope true).
def test_only_what_qklab_observed_is_stored_as_the_runs_config(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = qklab.init(name="gpt2", db=str(db), config={"lr": 6e-4})
    run.watch(build("gpt2"), every=1, probe_batch=token_batch())
    run.log({"loss": 2.5}, step=0)
    run.finish()
    config = json.loads(rows(db, "SELECT config_json FROM runs")[0][0])
    assert set(config) == {"why", "model", "attention", "probes", "spikes", "events"}
    assert config["events"] == []
    assert config["model"] == {"n_layers": 2, "n_heads": H, "d_model": 32}
    assert config["attention"] == {"kind": "mha", "qk_norm": "none",
                                   "softcap": {"kind": "none"}}
    # What the user gave is known: the step count and the seed.
    run = qklab.init(name="told", db=str(db), steps=20, seed=3)
    run.log({"loss": 2.0}, step=0)
    run.finish()
    told = json.loads(rows(db, "SELECT config_json FROM runs WHERE name = 'told'")[0][0])
    assert told["schedule"] == {"steps": 20} and told["run"] == {"seed": 3}
    assert "model" not in told  # not watched: no model at all
    if CLI:
        shown = json.loads(subprocess.run([CLI, "show", "gpt2", "--json", "--db", str(db)],
                                          capture_output=True, text=True, check=True).stdout)
        assert shown["config"] == config


def test_deepseek_v3s_latent_attention_is_stored_as_mla(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.DeepseekV3Config(
        vocab_size=64, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
        num_hidden_layers=2, first_k_dense_replace=2, num_attention_heads=4,
        num_key_value_heads=4, kv_lora_rank=16, q_lora_rank=None, qk_rope_head_dim=4,
        qk_nope_head_dim=8, v_head_dim=8, max_position_embeddings=32)
    model = transformers.AutoModelForCausalLM.from_config(
        config, attn_implementation="eager").eval()
    db = tmp_path / "runs.db"
    run = qklab.init(name="ds", db=str(db))
    run.watch(model, every=1, probe_batch=token_batch())
    run.log({"loss": 2.5}, step=0)
    run.finish()
    stored = json.loads(rows(db, "SELECT config_json FROM runs")[0][0])
    assert stored["attention"]["kind"] == "mla"
    assert stored["attention"]["mla"] == {"d_c": 16, "d_rope": 4, "q_lora": 0}
    assert stored["model"]["d_model"] == 4 * 8  # heads x the content width (nope)


def test_show_compare_and_export_read_an_external_run(tmp_path: Path) -> None:
    db, _ = probed_run(tmp_path, nanogpt(), "external")
    run = qklab.init(name="second", db=str(db))
    run.log({"loss": 2.0}, step=0)
    run.finish()
    cli = lambda *a: subprocess.run([CLI, *a, "--db", str(db)], capture_output=True, text=True,
                                    check=True).stdout
    shown = json.loads(cli("show", "external", "--json"))
    assert shown["summary"]["source"] == "python: nanogpt"
    assert shown["user_config"] == {"model": "external", "lr": 3e-4}
    exported = json.loads(cli("export", "external", "--format", "json"))
    assert exported["user_config"] == {"model": "external", "lr": 3e-4}
    assert len(exported["probes"]) == 2  # two layers at step 0
    compared = cli("compare", "external", "second")
    assert "was trained outside qklab (python: nanogpt)" in compared
    assert re.search(r"user\.lr +0\.0003", compared)  # the user's config, not qklab's lr
    for command in (["resume", "external"], ["generate", "external", "--prompt", "a"]):
        refused = subprocess.run([CLI, *command, "--db", str(db)], capture_output=True, text=True)
        assert refused.returncode == 2
        assert "was trained outside qklab (python: nanogpt)" in refused.stderr


DDP_SCRIPT = textwrap.dedent("""
    import os, sys, torch.distributed as dist, qklab
    rank, port, db = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    run = qklab.init(name="ddp", db=db)
    for step in range(3):
        run.log({"loss": 1.0 + rank}, step=step)
    run.finish()
    dist.barrier()
    dist.destroy_process_group()
""")


def test_under_torch_distributed_only_rank_0_writes(tmp_path: Path) -> None:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    db = tmp_path / "runs.db"
    ranks = [subprocess.Popen([sys.executable, "-c", DDP_SCRIPT, str(r), port, str(db)])
             for r in (0, 1)]
    assert [p.wait(timeout=120) for p in ranks] == [0, 0]
    assert rows(db, "SELECT name, status FROM runs") == [("ddp", "finished")]
    assert rows(db, "SELECT DISTINCT loss FROM step_metrics") == [(1.0,)]  # rank 0's
