"""``experiments.dmc_regret``: the one-step improvement of a network by its own rollouts,
measured on decisions of its self-play (tiny settings: the measurement itself is a script)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents import make_agent
from experiments import dmc_regret
from smoor_env import preset
from smoor_env.observation import decode


def test_self_play_keeps_the_network_s_card_choices_with_more_than_one_legal_card():
    network = make_agent("ppo", checkpoint="dmc4_it1000")
    rules = preset("hearts", 4)
    found, per_round = dmc_regret.self_play(network, rules, games=3, seed=7)
    legal = found["action_mask"]  # (N, 70)
    assert (legal.sum(axis=1) > 1).all()
    assert not legal[:, 52:].any()  # cards only: no pass, no bid
    # a seat chooses at most once a trick, and the first trick's two of clubs is forced
    assert 1 <= per_round <= rules.num_tricks - 1
    assert len(found["observation"]) == per_round * 3 * 4
    # every kept observation is of a seat holding the cards it may play
    hand = decode(found["observation"])["hand"]  # (N,) uint64
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
