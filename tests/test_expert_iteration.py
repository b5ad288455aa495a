"""Expert iteration (issue 43): what the search reports of itself, the self-play labels
(every round whole, every outcome the seat's real round points), the fit of both heads,
and the command's generations and their files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.training.expert import label_self_play
from smoor_env import preset
from smoor_env.envs.selfplay import SelfPlayVectorEnv

REPO = Path(__file__).resolve().parent.parent
SMALL = {"iterations": 48, "walks": 16, "seed_worlds": 4, "bid_worlds": 16}


def decisions(rules, n=8, steps=12, seed=3):
    """Observation batches of self-play positions (greedy moves in between)."""
    env = SelfPlayVectorEnv(n, rules)
    obs, info = env.reset(seed=seed)
    greedy, rng = make_agent("greedy"), np.random.default_rng(0)
    batches = []
    for _ in range(steps):
        view = {"observation": obs, "action_mask": info["action_mask"]}
        batches.append(view)
        obs, _, _, _, info = env.step(greedy.act(view, rng))
    return batches


@pytest.mark.parametrize("name, players, options", [
    ("smoorverliefd", 4, {"prior": None}),             # halving root, relative values
    ("smoorverliefd", 4, {}),                          # the shipped prior: UCB root
    ("hearts", 4, {}),
    ("bidding", 3, {"prior": None, "root": "paired"}),
    ("partners", 4, {"prior": None, "root": "ucb"}),
])
def test_analyse_plays_act_and_reports_the_root(name, players, options):
    """``analyse`` plays ``act``'s moves with the same draws; values only where the move
    is legal and was searched, the move played among them; UCB plays the most visited
    move, a paired root the best valued one."""
    agent = make_agent("ismcts", **SMALL, **options)
    for view in decisions(preset(name, players)):
        first, second = np.random.default_rng(5), np.random.default_rng(5)
        found = agent.analyse(view, first)
        assert (found.actions == agent.act(view, second)).all()
        assert first.random() == second.random()  # the same draws
        mask = view["action_mask"]
        searched = ~np.isnan(found.values)
        assert not (searched & ~mask).any() and not ((found.visits > 0) & ~mask).any()
        rows = np.flatnonzero(searched.any(axis=1))
        assert searched[rows, found.actions[rows]].all()
        play = rows[mask[rows, 52:].sum(axis=1) == 0]  # card play, not bids
        if options.get("root") == "ucb":
            assert (np.argmax(np.where(mask[play], found.visits[play], -1), axis=1)
                    == found.actions[play]).all()
        if options.get("root") == "paired":
            best = np.argmax(np.where(searched[play], found.values[play], -np.inf), axis=1)
            assert (best == found.actions[play]).all()


def test_ismcts_evaluate_is_analyse():
    agent = make_agent("ismcts", **SMALL)
    view = decisions(preset("hearts", 4))[6]
    actions, values = agent.evaluate(view, np.random.default_rng(1))
    found = agent.analyse(view, np.random.default_rng(1))
    assert (actions == found.actions).all()
    np.testing.assert_array_equal(values, found.values)


def test_self_play_labels_are_whole_rounds_with_their_outcomes():
    """Every labelled round is whole (4-player Smoorverliefd: 52 cards, 13 to a seat);
    a seat's outcome is the same on all its decisions of a round; in Hearts a round's
    penalties add up to 26 (or 78 when a seat shoots the moon)."""
    rules = [preset("smoorverliefd", 4), preset("hearts", 4)]
    data = label_self_play(make_agent("greedy"), rules, 300, 4, seed=11,
                           rng=np.random.default_rng(0))
    assert len(data["actions"]) >= 300 and not np.isnan(data["returns"]).any()
    assert data["masks"][np.arange(len(data["actions"])), data["actions"]].all()
    key = (data["table"].astype(np.int64) * 1000 + data["game"]) * 1000 + data["round"]
    for k in np.unique(key):
        rows = np.flatnonzero(key == k)
        seats = data["seat"][rows]
        table = int(data["table"][rows[0]])
        if table == 0:
            assert len(rows) == 52 and (np.bincount(seats, minlength=4) == 13).all()
        outcome = {}
        for seat, value in zip(seats.tolist(), data["returns"][rows].tolist(), strict=True):
            assert outcome.setdefault(seat, value) == value
        if table == 1:
            assert sorted(outcome) == [0, 1, 2, 3]
            assert -sum(outcome.values()) in (26, 78)
    np.testing.assert_array_equal(data["value_scale"][data["table"] == 1], 26.0)


def test_self_play_labels_are_reproducible_and_refuse_matches():
    rules = [preset("pip_scoring", 3)]
    first, second = (label_self_play(make_agent("ismcts", **SMALL), rules, 60, 2, seed=4,
                                     rng=np.random.default_rng(9)) for _ in range(2))
    for key in first:
        np.testing.assert_array_equal(first[key], second[key])
    with pytest.raises(ValueError, match="single rounds"):
        label_self_play(make_agent("greedy"), [preset("hearts", 4, matches=True)], 10, 2, 0,
                        np.random.default_rng(0))


def test_fit_learns_the_targets_and_the_values():
    """Both heads learn: on labelled decisions the cross-entropy against the targets and
    the value head's squared error fall below the untrained network's."""
    torch = pytest.importorskip("torch")
    from agents.policy_net import PolicyNet
    from agents.training.distill import fit
    from agents.training.labels import soft_targets

    torch.manual_seed(0)
    data = label_self_play(make_agent("greedy"), [preset("hearts", 4)], 600, 8, seed=2,
                           rng=np.random.default_rng(0))
    # greedy values nothing: one-hot on its moves
    targets = soft_targets(data["values"], data["actions"], 0.5)
    values = data["returns"] / data["value_scale"]
    before = fit(PolicyNet((64,)), data["observations"], data["masks"], targets, epochs=0,
                 learning_rate=1e-3, seed=0, values=values, hold_one_in=4)
    net = PolicyNet((64,))
    after = fit(net, data["observations"], data["masks"], targets, epochs=30,
                learning_rate=3e-3, seed=0, values=values, hold_one_in=4)
    assert after.held_cross_entropy < 0.85 * before.held_cross_entropy
    assert after.held_value_mse < before.held_value_mse
    agreement = [np.mean(f.choice == data["actions"][f.held]) for f in (before, after)]
    assert agreement[1] > agreement[0] + 0.15, agreement


def run_command(tmp_path: Path, *options: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "experiments.expert_iteration", "--decisions", "100",
           "--num-envs", "2", "--rule-sets", "smoorverliefd", "hearts", "--players", "4",
           "--teacher", "ismcts:iterations=32,walks=16,seed_worlds=4,bid_worlds=16",
           "--init", "", "--hidden", "32", "--epochs", "2", "--eval-deals", "2",
           "--out-dir", str(tmp_path / "ei"), *options]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_command_runs_generations_and_goes_on_where_it_stopped(tmp_path):
    """Two generations: each a checkpoint the ``ppo`` agent plays, labels, a measurement
    against the one before and a row of the summary; generation 2's teacher searches
    with generation 1's network. Run again, it reads what exists and makes nothing anew."""
    pytest.importorskip("torch")
    done = run_command(tmp_path, "--generations", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    folder = tmp_path / "ei"
    summary = json.loads((folder / "summary.json").read_text())
    rows = summary["generations"]
    assert [row["generation"] for row in rows] == [1, 2]
    assert "prior" not in rows[0]["teacher"]
    assert rows[1]["teacher"].endswith(f"prior=ppo:checkpoint={folder / 'gen1.pt'}")
    for row in rows:
        assert {(r["rule_set"], r["players"]) for r in row["against_previous"]} == {
            ("smoorverliefd", 4), ("hearts", 4)}
        assert row["decisions"] >= 100 and np.isfinite(row["held_out_value_mse"])
    assert (folder / "curve.png").stat().st_size > 0
    view = decisions(preset("partners", 4), n=2, steps=1)[0]
    actions = make_agent("ppo", checkpoint=str(folder / "gen2.pt")).act(
        view, np.random.default_rng(0))
    assert view["action_mask"][np.arange(2), actions].all()
    stamps = {path.name: path.stat().st_mtime_ns for path in folder.rglob("*.npz")}
    stamps.update({path.name: path.stat().st_mtime_ns for path in folder.glob("gen*.pt")})
    again = run_command(tmp_path, "--generations", "2")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "labelling" not in again.stdout
    assert stamps == {path.name: path.stat().st_mtime_ns for path in
                      [*folder.rglob("*.npz"), *folder.glob("gen*.pt")]}
    assert json.loads((folder / "summary.json").read_text())["generations"] == rows
    other = run_command(tmp_path, "--generations", "2", "--temperature", "0.3")
    assert other.returncode == 2 and "--temperature 0.5" in other.stderr, other.stderr
    assert "Traceback" not in other.stderr


def test_sigterm_while_measuring_stops_the_measurement_too(tmp_path):
    """A kill of the command while its generation is measured (a forked process) stops
    both at once, exit 130, instead of waiting for the measurement to end."""
    pytest.importorskip("torch")
    import signal
    import time

    from helpers import processes_mentioning

    folder = tmp_path / "ei"
    cmd = [sys.executable, "-m", "experiments.expert_iteration", "--decisions", "100",
           "--num-envs", "2", "--rule-sets", "smoorverliefd", "--players", "4",
           "--teacher", "ismcts:iterations=32,walks=16,seed_worlds=4,bid_worlds=16",
           "--init", "", "--hidden", "32", "--epochs", "2", "--eval-deals", "100000",
           "--eval-rule-sets", "smoorverliefd", "--generations", "1", "--no-progress",
           "--out-dir", str(folder)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    process = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not ((folder / "gen1.pt").exists() and len(processes_mentioning(str(folder))) > 1):
            assert process.poll() is None and time.monotonic() < deadline, process.poll()
            time.sleep(0.2)
        time.sleep(1)  # the measurement plays
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, err[-2000:]
    assert "interrupted" in err and "Traceback" not in err
    assert processes_mentioning(str(folder)) == []


@pytest.mark.parametrize("options, message", [
    (["--teacher", "mc"], "--teacher must be an ismcts spec"),
    (["--seed", "950"], "training seeds 0-999"),
    (["--decisions", "0"], "--decisions must be at least 1"),
    (["--init", "ppo_hearts", "--card-head", "8"], "--card-head is for a fresh network"),
])
def test_the_command_refuses_bad_settings(tmp_path, options, message):
    """(``run_command`` gives ``--init ''``; a later ``--init`` wins.)"""
    pytest.importorskip("torch")
    done = run_command(tmp_path, *options)
    assert done.returncode != 0 and message in done.stderr
    assert not (tmp_path / "ei").exists()


class _ConstantValue:
    """A leaf network that values every position alike and keeps what it was shown."""

    def __init__(self, estimate: float) -> None:
        self.estimate, self.seen = estimate, []

    def value(self, obs: np.ndarray) -> np.ndarray:
        self.seen.append(obs.copy())
        return np.full(len(obs), self.estimate, np.float32)


def _with_leaf(net, **options):
    agent = make_agent("ismcts", **{**SMALL, "leaf": "ppo", **options})
    agent._leaf = net  # the leaf network under test, instead of a checkpoint's head
    return agent


def test_the_leaf_network_values_the_seat_to_move_in_the_full_rules():
    """At a leaf the searching seat is to move again, later in the same round: its hand
    is the root's less at least the card it played; the observation shows the full rules
    (Hearts with passing: passing and the pass direction, though rollouts play without)."""
    from smoor_env.observation import split_observation

    net = _ConstantValue(-0.2)
    agent = _with_leaf(net)
    view = decisions(preset("hearts", 4), n=4, steps=20)[19]  # past the passes: play
    found = agent.analyse(view, np.random.default_rng(2))
    assert net.seen and (found.actions >= 0).all()
    root = split_observation(view["observation"])
    for obs in net.seen:
        leaf = split_observation(obs)
        assert (leaf["rules"] == root["rules"][0]).all()
        assert (leaf["pass_direction"].argmax(axis=1) == root["pass_direction"][0].argmax()).all()
        held = leaf["hand"].sum(axis=1)  # (n,) cards in the seat's hand at the leaf
        assert (held < root["hand"].sum(axis=1).max()).all() and (held >= 1).all()


def test_leaf_weight_mixes_the_networks_value_with_the_rollouts():
    """Weight 0: the search of ``value="own"`` without a network, to the draw. Weight 1
    with no seeding wave: every walk early in the round is valued by the network alone,
    so every searched root move is worth what it says (-0.2 x 26 penalty points)."""
    rules = preset("hearts", 4)
    view = decisions(rules, n=4, steps=18)[17]
    plain = make_agent("ismcts", **SMALL, value="own").analyse(view, np.random.default_rng(3))
    mixed = _with_leaf(_ConstantValue(-0.2), leaf_weight=0.0).analyse(
        view, np.random.default_rng(3))
    np.testing.assert_array_equal(plain.values, mixed.values)
    assert (plain.actions == mixed.actions).all()
    found = _with_leaf(_ConstantValue(-0.2), leaf_weight=1.0, seed_worlds=0).analyse(
        view, np.random.default_rng(3))
    searched = ~np.isnan(found.values[:, :52])
    assert searched.any()
    np.testing.assert_allclose(found.values[:, :52][searched], -0.2 * 26, atol=1e-9)


@pytest.mark.parametrize("options, match", [
    ({"leaf": "ppo", "value": "relative"}, "own"),
    ({"leaf": "ppo", "opponents_in_tree": True}, "opponents_in_tree"),
    ({"leaf": "greedy"}, "no value head"),
    ({"leaf": "ppo", "leaf_weight": 1.5}, r"\[0, 1\]"),
])
def test_ismcts_refuses_a_leaf_it_cannot_use(options, match):
    with pytest.raises(ValueError, match=match):
        make_agent("ismcts", **options)
