"""Distilling prior="auto"'s table into one network (issue 43, point 3): each table's
teacher is the prior the table played, its labels are exactly that prior's distribution,
and the fit moves the network towards the specialist where it differs from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.training.labels import soft_targets
from smoor_env import preset
from smoor_env.envs.selfplay import SelfPlayVectorEnv

REPO = Path(__file__).resolve().parent.parent


def positions(rules, n=6, steps=9, seed=5):
    """A batch of self-play positions of ``rules`` (random legal moves before it)."""
    env = SelfPlayVectorEnv(n, rules)
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        legal = info["action_mask"]  # (n, 70)
        obs, _, _, _, info = env.step(np.argmax(legal * rng.random(legal.shape), axis=1))
    return {"observation": obs, "action_mask": info["action_mask"]}


@pytest.mark.parametrize("name, players, teacher", [
    ("smoorverliefd", 3, "ppo_smoorverliefd"), ("smoorverliefd", 5, "ppo_smoorverliefd"),
    ("hearts", 4, "dmc4_it1000"), ("hearts_no_passing", 5, "dmc4_it1000"),
    ("bidding", 4, "dmc4_it1000"), ("partners", 4, "dmc4_it1000"),
])
def test_each_table_is_taught_by_the_prior_it_played(name, players, teacher):
    """The defaults teach each table with the prior ``prior="auto"`` played there before
    the distilled network (the specialist in plain Smoorverliefd, ``dmc4_it1000``
    elsewhere, Hearts included, though Hearts has specialists too)."""
    pytest.importorskip("torch")
    from experiments.distill_table import Args, teacher_of

    args = Args()
    assert teacher_of(preset(name, players), args.specialists, args.fallback()) == teacher
    searched = Args(teacher="mc")  # a search teaches what no specialist does
    assert teacher_of(preset(name, players), searched.specialists, searched.fallback()) \
        == (teacher if teacher == "ppo_smoorverliefd" else "mc")


@pytest.mark.parametrize("temperature", [0.3, 2.0])
def test_the_labels_are_the_priors_own_distribution(temperature):
    """softmax(values / temperature) over the legal moves is the prior's policy, whatever
    the temperature, and the moves it plays are drawn from it (each legal, reproducible
    from the rng)."""
    pytest.importorskip("torch")
    from experiments.distill_table import PriorTeacher

    view = positions(preset("smoorverliefd", 4))
    teacher = PriorTeacher("ppo_smoorverliefd", temperature)
    actions, values = teacher.evaluate(view, np.random.default_rng(1))
    mask = view["action_mask"]
    assert np.array_equal(~np.isnan(values), mask)
    wanted = np.exp(make_agent("ppo").log_policy(view))  # (B, 70)
    np.testing.assert_allclose(soft_targets(values, actions, temperature), wanted,
                               atol=1e-5)
    assert mask[np.arange(len(actions)), actions].all()
    again, _ = teacher.evaluate(view, np.random.default_rng(1))
    assert np.array_equal(actions, again)


def run_command(tmp_path, *options, folder="distill"):
    cmd = [sys.executable, "-m", "experiments.distill_table", "--decisions", "400",
           "--num-envs", "8", "--rule-sets", "smoorverliefd", "hearts", "--players", "4",
           "--epochs", "2", "--learning-rate", "3e-4", "--no-progress",
           "--out-dir", str(tmp_path / folder), *options]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_command_teaches_the_specialist_and_keeps_the_network(tmp_path):
    """Before the fit the network is its own teacher in Hearts (KL 0, every most likely
    move the same) and far from the specialist in Smoorverliefd; after it, nearer the
    specialist, and the checkpoint plays."""
    pytest.importorskip("torch")
    done = run_command(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    folder = tmp_path / "distill"
    summary = json.loads((folder / "summary.json").read_text())
    smoor, hearts = summary["tables"]
    assert (smoor["rule_set"], smoor["teacher"]) == ("smoorverliefd", "ppo_smoorverliefd")
    assert (hearts["rule_set"], hearts["teacher"]) == ("hearts", "dmc4_it1000")
    assert hearts["before"]["kl"] < 1e-4 and hearts["before"]["argmax_agreement"] == 1.0
    assert smoor["before"]["kl"] > 0.05
    assert smoor["after"]["kl"] < smoor["before"]["kl"]
    assert smoor["after"]["held_out"] + hearts["after"]["held_out"] == \
        summary["decisions"] // 20
    import hashlib

    from agents.evaluation.runs import code_fingerprint
    from agents.ppo import read_checkpoint
    assert summary["sha256"] == hashlib.sha256(
        (folder / "network.pt").read_bytes()).hexdigest()
    assert summary["code"] == code_fingerprint()
    args = read_checkpoint(folder / "network.pt")["args"]
    assert args["game"] == "all" and args["teachers"] == ["ppo_smoorverliefd", "dmc4_it1000"]
    view = positions(preset("smoorverliefd", 4), n=2)
    actions = make_agent("ppo", checkpoint=str(folder / "network.pt")).act(
        view, np.random.default_rng(0))
    assert view["action_mask"][np.arange(2), actions].all()
    other = run_command(tmp_path, "--epochs", "3")
    assert other.returncode == 2 and "--epochs 2" in other.stderr, other.stderr


def test_a_search_teaches_the_other_tables_whatever_the_workers(tmp_path):
    """With --teacher mc, mc labels the tables no specialist teaches (far from the network
    before the fit); one worker or two, the labels are the same (each table has its own
    seeds), so is every statistic of them, and on one thread the fit and the network."""
    pytest.importorskip("torch")
    summaries = []
    for workers in ("1", "2"):
        done = run_command(tmp_path, "--teacher", "mc:worlds=8", "--workers", workers,
                           folder=f"workers{workers}")
        assert done.returncode == 0, done.stderr[-3000:]
        summaries.append(json.loads((tmp_path / f"workers{workers}" / "summary.json")
                                    .read_text()))
    one, two = summaries
    assert [row["teacher"] for row in one["tables"]] == ["ppo_smoorverliefd", "mc:worlds=8"]
    assert one["decisions"] == two["decisions"]
    assert [row["before"] for row in one["tables"]] == [row["before"] for row in two["tables"]]
    for key in ("loss", "held_out_value_mse"):  # OMP_NUM_THREADS=1: bit for bit
        assert one[key] == two[key], key
    import torch

    weights = [torch.load(tmp_path / f"workers{n}" / "network.pt", weights_only=False)["model"]
               for n in (1, 2)]  # the files differ in their args' workers only
    assert all(torch.equal(weights[0][name], weights[1][name]) for name in weights[0])
    hearts = one["tables"][1]
    assert hearts["before"]["kl"] > 0.1 and hearts["before"]["argmax_agreement"] < 0.9


@pytest.mark.parametrize("options, message", [
    (["--seed", "999"], "training seeds 0-999"),
    (["--decisions", "0"], "--decisions must be at least 1"),
    (["--learning-rate", "0"], "--learning-rate must be > 0"),
    (["--temperature", "-1"], "--temperature must be > 0"),
    (["--workers", "0"], "--workers must be at least 1"),
    (["--teacher", "greedy"], "--teacher must be a search agent that values moves"),
    (["--teacher", "mc:worlds=abc"], "worlds"),
    (["--teacher", "mc:time_budget=0.01"], "time_budget cannot teach"),
    (["--teacher", "mc:prior=auto"], "prior cannot teach"),
    (["--teacher", "ismcts"], "ismcts plays prior='auto': give prior=none"),
    (["--teacher", "ismcts:prior=none,time_budget=0.01"], "time_budget cannot teach"),
    (["--teacher", "mc:greedy_margin=0.5"], "greedy_margin cannot teach"),
    (["--rule-sets", "whist"], "unknown rule set 'whist'"),
    (["--specialists", "dmc_all"], "--specialists must be among"),
])
def test_the_command_refuses_bad_settings(tmp_path, options, message):
    pytest.importorskip("torch")
    done = run_command(tmp_path, *options)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "distill").exists()


@pytest.mark.parametrize("teacher", ["mc", "mc:greedy_margin=0", "ismcts:prior=none",
                                     "ismcts:prior=none,iterations=64"])
def test_a_search_with_no_bonus_margin_or_budget_may_teach(teacher):
    """A teacher is accepted when no setting of UNLABELLED_OPTIONS is in play, given or by
    default (the refusals are above): ``ismcts`` teaches once told ``prior=none``."""
    pytest.importorskip("torch")
    from experiments.distill_table import Args
    Args(teacher=teacher).check()
