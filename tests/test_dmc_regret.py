"""``experiments.dmc_regret``: the one-step improvement of a network by its own rollouts,
measured on decisions of its self-play (tiny settings: the measurement itself is a script)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents import make_agent
from experiments import dmc_regret
from smoor_env import preset
from smoor_env.core.state import Phase
from smoor_env.observation import decode


def test_self_play_keeps_the_network_s_card_choices_with_more_than_one_legal_card():
    network = make_agent("ppo", checkpoint="dmc4_it1000")
    rules = preset("hearts", 4)
    found, per_round = dmc_regret.self_play(network, rules, games=3, seed=7)
    legal = found["action_mask"]  # (N, 70)
    assert (legal.sum(axis=1) > 1).all()
    view = decode(found["observation"])
    assert (view["phase"] == Phase.PLAY).all()  # cards played: no pass (ids 0-51 too)
    # a seat chooses at most once a trick, and its last card is forced
    assert 1 <= per_round <= rules.num_tricks - 1
    # every kept observation is of a seat holding the cards it may play
    hand = view["hand"]  # (N,) uint64
    cards = legal[:, :52] @ (np.uint64(1) << np.arange(52, dtype=np.uint64))
    assert (hand & cards == cards).all()
    again, _ = dmc_regret.self_play(network, rules, games=3, seed=7)
    assert (again["observation"] == found["observation"]).all()


def test_a_row_is_its_seed_s_and_its_figures_lie_in_range(tmp_path):
    argv = ["--rule-sets", "smoorverliefd", "--games", "2", "--decisions", "4", "--worlds",
            "3", "--out", str(tmp_path / "r.json")]
    first = dmc_regret.main(argv)
    row = first["rows"][0]
    assert row["decisions"] == 4 and 0.0 <= row["agreement"] <= 1.0
    assert row["regret"]["low"] <= row["regret"]["mean"] <= row["regret"]["high"]
    assert row["regret_a_round"]["mean"] == pytest.approx(row["regret"]["mean"]
                                                          * row["choices_a_round"])
    assert row["move_value_rms_error"] > 0 and row["estimate_noise_rms"] > 0
    assert json.loads((tmp_path / "r.json").read_text())["rows"][0]["regret"] == row["regret"]
    second = dmc_regret.main(argv)["rows"][0]
    assert {k: v for k, v in second.items() if k != "seconds"} == \
        {k: v for k, v in row.items() if k != "seconds"}


@pytest.mark.parametrize("argv, message", [
    (["--worlds", "0"], "--worlds must be at least 1, got 0"),
    (["--rule-sets", "skat"], "unknown rule set 'skat'"),
])
def test_bad_settings_are_refused_with_their_name(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        dmc_regret.main(argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


NAN = np.nan


def test_the_figures_of_an_exact_lookahead_that_agrees_are_zero_regret_full_agreement():
    net = np.array([[1.0, 0.0, NAN], [NAN, 2.0, 3.0]])  # (D, A) points, NaN: not legal
    ours = np.array([0, 2])
    found = dmc_regret.figures(net, net + 5.0, net - 1.0, ours)  # levels drop out
    assert found["regret"].tolist() == [0.0, 0.0]
    assert found["agreement"] == found["estimates_agreement"] == 1.0
    assert found["move_value_rms_error"] == 0.0
    # the two estimates differ by a decision's constant (3): no noise between the cards
    assert found["estimate_noise_rms"] == 0.0


def test_the_regret_is_what_the_other_estimate_gives_the_better_card():
    net = np.array([[1.0, 0.0, NAN]])  # the network prefers card 0
    ours = np.array([0])
    a = np.array([[0.0, 2.0, NAN]])  # both estimates prefer card 1 ...
    b = np.array([[0.5, 1.5, NAN]])  # ... by 2 and by 1 point
    found = dmc_regret.figures(net, a, b, ours)
    assert found["regret"][0] == pytest.approx((1.0 + 2.0) / 2)  # B's gain, A's gain
    assert found["agreement"] == 0.0 and found["estimates_agreement"] == 1.0
    # centred: net (+0.5, -0.5), the estimates' mean (-0.75, +0.75); noise (A - B) / 2
    assert found["move_value_rms_error"] == pytest.approx(1.25)
    assert found["estimate_noise_rms"] == pytest.approx(0.25)
    # a card one estimate prefers by noise alone: the other's value of it, no max twice
    b = np.array([[0.5, 0.25, NAN]])  # B prefers the network's card
    found = dmc_regret.figures(net, a, b, ours)
    assert found["regret"][0] == pytest.approx(((0.25 - 0.5) + 0.0) / 2)
    assert found["estimates_agreement"] == 0.0
