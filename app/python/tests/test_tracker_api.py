"""The API a wandb or Trackio user already knows (issue 38, items 4-10): init's arguments,
the context manager, run.config and run.summary, log(commit=False) and log(reduce=), watch's
probe schedule and probe-batch checks, resume, and the status Ctrl-C leaves.

Each test reads the database with Python's sqlite3 (read-only) and checks what was stored.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import qklab
from test_finders import build, nanogpt, token_batch

HERE = Path(__file__).resolve().parent


def rows(db: Path, sql: str, *args) -> list[tuple]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute(sql, args).fetchall()


# Item 4: qklab's default warm-up (30 steps) was validated against the user's step count.
def test_a_run_shorter_than_qklabs_default_warm_up_logs(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = qklab.init(name="short", db=str(db), steps=10)
    for step in range(10):
        run.log({"loss": 1.0}, step=step)
    run.finish()
    config = json.loads(rows(db, "SELECT config_json FROM runs")[0][0])
    assert config["schedule"]["steps"] == 10
    assert "warmup_steps" not in config["schedule"]  # qklab's default, unknown (item 2)
    assert rows(db, "SELECT count(*), max(step) FROM step_metrics") == [(10, 9)]


# Item 5: wandb's and Trackio's arguments.
def test_unknown_arguments_get_one_error_naming_the_supported_ones(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"unknown arguments entity, group; it takes name, db, "
                                        r"config, steps, seed, project, dir, mode, id, resume"):
        qklab.init(name="x", db=str(tmp_path / "runs.db"), entity="me", group="g")
    with pytest.raises(ValueError, match=r"mode = 'online!'; it is one of 'online', "
                                         r"'offline', 'disabled'"):
        qklab.init(db=str(tmp_path / "runs.db"), mode="online!")
    run = qklab.init(db=str(tmp_path / "runs.db"))
    with pytest.raises(TypeError, match="unknown argument log_graph; it takes model, every"):
        run.watch(nanogpt(), log_graph=True, probe_batch=token_batch())
    assert not (tmp_path / "runs.db").exists()  # nothing was stored


def test_disabled_mode_makes_every_call_a_no_op(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with qklab.init(name="off", db=str(db), mode="disabled", config={"lr": 1}) as run:
        assert run.watch(nanogpt(), every=1, probe_batch=token_batch()) is None
        run.log({"loss": 1.0}, step=0)
        qklab.log({"loss": 1.0}, step=1)
        run.config.lr = 2
    qklab.finish()
    assert not db.exists()


def test_context_manager_config_summary_tags_notes_and_dir(tmp_path: Path) -> None:
    with qklab.init(name="api", dir=str(tmp_path / "logs"), project="proj", tags=["a", "b"],
                    notes="first try", config={"lr": 6e-4}, mode="offline") as run:
        run.config.update({"batch": 8})
        run.config.warmup = 5
        run.log({"loss": 2.0, "acc": 0.5}, step=0)
        with pytest.raises(RuntimeError, match="set it before"):
            run.config["lr"] = 1.0
        run.log({"loss": 1.5}, step=1)
        assert run.summary == {"loss": 1.5, "acc": 0.5}
    db = tmp_path / "logs" / os.path.basename(qklab.default_db_path())
    status, user_config, tags, notes = rows(db, "SELECT status, user_config, tags, notes "
                                                "FROM runs")[0]
    assert status == "finished"
    assert json.loads(user_config) == {"lr": 6e-4, "batch": 8, "warmup": 5}
    assert (tags, notes) == ("project:proj,a,b", "first try")


def test_an_exception_in_the_with_block_leaves_the_run_failed(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with pytest.raises(ZeroDivisionError):
        with qklab.init(name="boom", db=str(db)) as run:
            run.log({"loss": 1.0}, step=0)
            1 / 0
    status, message = rows(db, "SELECT status, status_message FROM runs")[0]
    assert status == "failed" and "ZeroDivisionError" in message


def test_commit_false_merges_into_the_next_committed_log(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = qklab.init(name="commit", db=str(db))
    run.log({"loss": 3.0}, commit=False)
    run.log({"grad_norm": 0.5}, commit=False)
    run.log({"lr": 1e-3})  # commits step 0 with all three
    run.log({"loss": 2.0})  # step 1
    run.log({"loss": 1.0}, step=5, commit=False)
    run.log({"lr": 2e-3}, step=6)  # a later step commits the pending step 5 first
    run.finish()
    assert rows(db, "SELECT step, loss, grad_norm, lr FROM step_metrics ORDER BY step") == [
        (0, 3.0, 0.5, 1e-3), (1, 2.0, None, None), (5, 1.0, None, None), (6, None, None, 2e-3)]


# Item 7: the same name logged several times for one step (gradient accumulation).
def test_reduce_says_what_a_name_logged_twice_in_one_step_keeps(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = qklab.init(name="accumulate", db=str(db))
    for micro in (1.0, 2.0, 6.0):
        run.log({"loss": micro, "tokens": micro}, step=0, reduce="mean")
    for micro in (1.0, 2.0, 6.0):
        run.log({"loss": micro, "tokens": micro}, step=1, reduce="sum")
    for micro in (1.0, 2.0, 6.0):
        run.log({"loss": micro, "tokens": micro}, step=2)  # the default: the last
    with pytest.raises(ValueError, match="reduce = 'median'"):
        run.log({"loss": 1.0}, step=3, reduce="median")
    run.finish()
    assert rows(db, "SELECT step, loss FROM step_metrics ORDER BY step") == [
        (0, 3.0), (1, 9.0), (2, 6.0)]
    assert rows(db, "SELECT step, value FROM custom_scalars ORDER BY step") == [
        (0, 3.0), (1, 9.0), (2, 6.0)]


# Item 8: the probe schedule follows the steps the loop logs.
def test_probes_at_the_first_logged_step_at_or_after_each_multiple_of_every(
        tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = qklab.init(name="every3", db=str(db))
    run.watch(nanogpt(), log_freq=10, probe_batch=token_batch())
    for step in range(0, 64, 3):
        run.log({"loss": 1.0}, step=step)
    run.finish()
    probed = [s for (s,) in rows(db, "SELECT DISTINCT step FROM probe_stats ORDER BY step")]
    assert probed == [0, 12, 21, 30, 42, 51, 60]


# Item 10: a probe batch the model cannot run is refused by watch(), naming what is wrong.
@pytest.mark.parametrize("batch, said", [
    (token_batch().float(), "holds torch.float32 values; it must hold integer token ids"),
    (torch.zeros(2, 40, dtype=torch.long), "T = 40 tokens but the model has 32 positions "
                                           "(config.max_position_embeddings)"),
    (torch.full((2, 8), 64), "token id 64; the model's ids are 0..63 (config.vocab_size = 64)"),
    (torch.full((2, 8), -1), "token id -1"),
    (torch.zeros(8, dtype=torch.long), "must be a (B, T) tensor of token ids, got a tensor "
                                       "of shape (8,)"),
])
def test_a_bad_probe_batch_is_named_by_watch(tmp_path: Path, batch, said: str) -> None:
    run = qklab.init(name="bad-batch", db=str(tmp_path / "runs.db"))
    with pytest.raises(ValueError, match=re_escape(said)):
        run.watch(build("gpt2"), every=1, probe_batch=batch)


def test_nanogpts_block_size_bounds_the_probe_batch(tmp_path: Path) -> None:
    run = qklab.init(name="bad-batch", db=str(tmp_path / "runs.db"))
    with pytest.raises(ValueError, match=re_escape("model has 32 positions (config.block_size)")):
        run.watch(nanogpt(), every=1, probe_batch=torch.zeros(1, 33, dtype=torch.long))


def re_escape(text: str) -> str:
    import re
    return re.escape(text)


# Items 5 and 6: resume.
def test_a_reused_name_fails_at_init_and_resume_appends_after_the_last_stored_step(
        tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    first = qklab.init(name="r", db=str(db))
    first.watch(nanogpt(), every=4, probe_batch=token_batch())
    for step in range(6):
        first.log({"loss": 3.0 - 0.1 * step}, step=step)
    first.finish("stopped")
    with pytest.raises(ValueError, match=r"has a run named 'r' already \(id 1, stopped, last "
                                         r"stored step 5\): pass resume='allow'"):
        qklab.init(name="r", db=str(db))
    with pytest.raises(ValueError, match="resume = 'never'"):
        qklab.init(name="r", db=str(db), resume="never")
    with pytest.raises(ValueError, match="resume = 'must' but .* has no run 'other'"):
        qklab.init(name="other", db=str(db), resume="must")
    with pytest.raises(ValueError, match="resume = 'must' needs the run's id= or name="):
        qklab.init(db=str(db), resume="must")
    with pytest.raises(ValueError, match="has no run with id 7"):
        qklab.init(id=7, db=str(db))
    assert not first.resumed and first.step == 5
    again = qklab.init(name="r", db=str(db), resume="allow")
    assert again.resumed and again.step == 5  # wandb's run.resumed; the last stored step
    again.watch(nanogpt(), every=4, probe_batch=token_batch())
    with pytest.raises(ValueError, match="step 5 is stored already: the run was resumed after "
                                         "step 5, its last stored step"):
        again.log({"loss": 1.0}, step=5)
    again.log({"loss": 2.0})  # step 6: after the last stored one
    for step in range(7, 10):
        again.log({"loss": 2.0}, step=step)
    again.finish()
    assert again.id == 1
    assert rows(db, "SELECT count(*) FROM runs") == [(1,)]
    assert [s for (s,) in rows(db, "SELECT step FROM step_metrics ORDER BY step")] == list(
        range(10))
    probed = [s for (s,) in rows(db, "SELECT DISTINCT step FROM probe_stats ORDER BY step")]
    assert probed == [0, 4, 8]
    assert rows(db, "SELECT status FROM runs") == [("finished",)]
    with pytest.raises(ValueError, match="and finished; qklab appends"):
        qklab.init(id="r", db=str(db))


def test_the_same_id_continues_a_killed_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    script = textwrap.dedent(f"""
        import sys, time, qklab
        sys.path.insert(0, {str(HERE)!r})
        from test_finders import nanogpt, token_batch
        run = qklab.init(id="killed", db={str(db)!r})
        run.watch(nanogpt(), every=4, probe_batch=token_batch())
        for step in range(9):
            run.log({{"loss": 3.0}})  # the probe of step 8 commits steps 0..7; 8 stays open
        print("logged", flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "logged"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert rows(db, "SELECT max(step) FROM step_metrics") == [(7,)]
    assert rows(db, "SELECT max(step) FROM probe_stats") == [(8,)]  # its step row was lost
    run = qklab.init(id="killed", db=str(db))  # no resume=: the same id continues
    run.watch(nanogpt(), every=4, probe_batch=token_batch())
    run.log({"loss": 2.0})  # step 8 again, probed again
    run.finish()
    assert rows(db, "SELECT step, loss FROM step_metrics WHERE step >= 7 ORDER BY step") == [
        (7, 3.0), (8, 2.0)]
    probed = [s for (s,) in rows(db, "SELECT DISTINCT step FROM probe_stats ORDER BY step")]
    assert probed == [0, 4, 8]
    assert rows(db, "SELECT count(*), min(status) FROM runs") == [(1, "finished")]


# Item 9: Ctrl-C is the user's stop, not a failure.
def test_ctrl_c_leaves_the_run_stopped(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    script = textwrap.dedent(f"""
        import time, qklab
        run = qklab.init(name="ctrl-c", db={str(db)!r})
        run.log({{"loss": 1.0}}, step=0)
        print("ready", flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    status, message = rows(db, "SELECT status, status_message FROM runs")[0]
    assert status == "stopped"
    assert "Ctrl-C" in message
