"""The PettingZoo AEC environment: API checkers, rewards, observations, illegal moves."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test
from test_engine_rules import SUIT_PER_SEAT

from smoor_env import Rules, env, parse_cards, raw_env
from smoor_env.observation import OBSERVATION_SIZE, split_observation

RULE_SETS = {
    "smoor-3": Rules(num_players=3, target_score=None),
    "smoor-4-match": Rules(target_score=30, max_rounds=3),
    "smoor-5": Rules(num_players=5, target_score=None),
    "troef-bid-pip-5": Rules(num_players=5, target_score=None, trump_hearts=True, bidding=True,
                             pip_scoring=True),
    "partners-cupid": Rules(partners=True, cupids_arrow=True, target_score=40, max_rounds=3),
    "hearts-3": Rules(game="hearts", num_players=3, target_score=None),
    "hearts-4-match": Rules(game="hearts", target_score=40, max_rounds=3),
    "hearts-5-no-pass": Rules(game="hearts", num_players=5, passing=False, target_score=None),
    "troef-4": Rules(trump_hearts=True, target_score=None),
    "bidding-3": Rules(num_players=3, bidding=True, target_score=None),
    "partners": Rules(partners=True, target_score=None),
    "pip-4": Rules(pip_scoring=True, target_score=None),
    "cupid-5": Rules(num_players=5, cupids_arrow=True, target_score=30, max_rounds=2),
    "sweep-all-13-3": Rules(num_players=3, sweep_needs_all_thirteen=True, target_score=None),
    "hearts-queen-options": Rules(game="hearts", queen_never_first_trick=True,
                                  queen_breaks_hearts=True, target_score=None),
}


@pytest.fixture(autouse=True)
def _quiet_pettingzoo_checker_warnings(recwarn):
    """api_test warns that Dict observations are unusual; PettingZoo's classic games do it too."""


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("rules", RULE_SETS.values(), ids=RULE_SETS.keys())
def test_pettingzoo_api_and_seed_tests(rules):
    api_test(env(rules=rules), num_cycles=60)
    seed_test(lambda: env(rules=rules), num_cycles=60)


def _play(aec, policy=lambda mask, rng: int(rng.choice(np.flatnonzero(mask))), seed=0):
    """Play a whole match; return the summed rewards per agent."""
    rng = np.random.default_rng(seed)
    totals = dict.fromkeys(aec.possible_agents, 0.0)
    for agent in aec.agent_iter():
        obs, reward, termination, truncation, _ = aec.last()
        totals[agent] += reward
        aec.step(None if termination or truncation else policy(obs["action_mask"], rng))
    return totals


@pytest.mark.parametrize("rules", [RULE_SETS["smoor-4-match"], RULE_SETS["hearts-4-match"],
                                   RULE_SETS["partners-cupid"]], ids=["smoor", "hearts",
                                                                      "partners-cupid"])
def test_round_and_trick_rewards_add_up_to_the_match_totals(rules):
    sums = {}
    for mode in ("round", "trick"):
        aec = raw_env(rules=rules, reward_mode=mode)
        aec.reset(seed=3)
        sums[mode] = _play(aec, seed=4)
        sign = -1 if rules.is_hearts else 1
        totals = aec.engine.state.totals[0]
        assert [sums[mode][a] for a in aec.possible_agents] == pytest.approx(
            (sign * totals).tolist())
    assert sums["round"] == sums["trick"]


def test_trick_rewards_come_after_each_trick():
    aec = raw_env(rules=Rules(target_score=None), reward_mode="trick")
    aec.reset(options={"deal": SUIT_PER_SEAT, "dealer": 3})  # seat 0 wins every trick
    paid = []
    for agent in aec.agent_iter():
        obs, reward, termination, truncation, _ = aec.last()
        paid.append((agent, reward))
        aec.step(None if termination or truncation else int(np.argmax(obs["action_mask"])))
    player_0 = [r for a, r in paid if a == "player_0"]
    assert sum(player_0) == 34 and max(player_0) < 34  # paid trick by trick, then the sweep


def test_raw_env_rejects_an_illegal_card_and_changes_nothing():
    aec = raw_env(rules=Rules(target_score=None))
    aec.reset(options={"deal": SUIT_PER_SEAT, "dealer": 3})
    aec.step(parse_cards("2C")[0])  # player_0 leads a club; player_1 has only diamonds
    before = aec.engine.state.copy()
    with pytest.raises(ValueError, match="player_1: illegal action .*chose bid 0"):
        aec.step(52)
    with pytest.raises(ValueError, match="player_1: illegal action .*chose 2C; legal: 2D 3D"):
        aec.step(0)
    with pytest.raises(TypeError, match="player_1: an action must be an int"):
        aec.step("2D")
    after = aec.engine.state
    assert all(np.array_equal(getattr(before, f), getattr(after, f)) for f in
               ("hands", "current_player", "legal", "current_trick"))
    assert aec.agent_selection == "player_1"


def test_wrapped_env_ends_the_game_on_an_illegal_move(caplog):
    aec = env(rules=Rules(target_score=None))
    aec.reset(seed=0)
    mask = aec.observe(aec.agent_selection)["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    aec.step(illegal)
    assert "Illegal move made" in caplog.text
    assert all(aec.terminations.values())
    assert min(aec.rewards.values()) == -1


def test_observation_size_is_the_same_for_every_player_count():
    for players in (3, 4, 5):
        aec = raw_env(rules=Rules(num_players=players))
        aec.reset(seed=0)
        obs = aec.observe("player_0")
        assert obs["observation"].shape == (OBSERVATION_SIZE,)
        assert obs["observation"].dtype == np.float32 and obs["action_mask"].dtype == np.int8
        assert aec.state().shape == aec.state_space.shape


def test_observation_is_relative_to_the_observer():
    aec = raw_env(rules=Rules(target_score=None))
    aec.reset(options={"deal": SUIT_PER_SEAT, "dealer": 3})
    aec.step(parse_cards("2C")[0])
    for seat in range(4):
        blocks = split_observation(aec.observe(f"player_{seat}")["observation"])
        assert blocks["hand"].sum() == (12 if seat == 0 else 13)
        relative_leader = (0 - seat) % 4
        assert blocks["trick_leader"].tolist() == [float(k == relative_leader) for k in range(5)]
        assert blocks["current_trick"][relative_leader, 0] == 1.0  # 2C is card id 0
        assert blocks["current_trick"][4].sum() == 0  # no fifth seat with 4 players


def test_voids_are_revealed_by_not_following_suit():
    aec = raw_env(rules=Rules(target_score=None))
    aec.reset(options={"deal": SUIT_PER_SEAT, "dealer": 3})
    for card in ("2C", "2D"):
        aec.step(parse_cards(card)[0])
    voids = split_observation(aec.observe("player_0")["observation"])["voids"]
    assert voids[1].tolist() == [1.0, 0.0, 0.0, 0.0]  # player_1 is void in clubs


def test_passed_cards_stay_hidden_until_the_exchange():
    rules = Rules(game="hearts", target_score=None)
    aec = raw_env(rules=rules)
    aec.reset(options={"deal": SUIT_PER_SEAT, "dealer": 2})  # player_3 passes first, to 0
    for card in ("QS", "AS", "KS"):
        aec.step(parse_cards(card)[0])
    for seat in range(4):
        blocks = split_observation(aec.observe(f"player_{seat}")["observation"])
        assert blocks["received"].sum() == 0
        assert blocks["passed"].sum() == (3 if seat == 3 else 0)
        assert (blocks["hand"][parse_cards("QS")[0]] == 1) == (seat == 3)
    for card in parse_cards("2C 3C 4C 2D 3D 4D 2H 3H 4H"):
        aec.step(card)
    received = split_observation(aec.observe("player_0")["observation"])["received"]
    assert np.flatnonzero(received).tolist() == sorted(parse_cards("QS AS KS"))
    direction = split_observation(aec.observe("player_0")["observation"])["pass_direction"]
    assert direction.tolist() == [0, 1, 0, 0, 0]  # to the left


def test_reset_with_a_given_deal_and_dealer():
    aec = raw_env(rules=Rules(target_score=None))
    aec.reset(seed=9, options={"deal": SUIT_PER_SEAT, "dealer": 1})
    assert aec.agent_selection == "player_2"
    hand = split_observation(aec.observe("player_2")["observation"])["hand"]
    assert np.flatnonzero(hand).tolist() == list(range(26, 39))


@pytest.mark.parametrize("mode", ["ansi", "human"])
def test_render(mode, capsys):
    aec = raw_env(rules=Rules(target_score=None, bidding=True), render_mode=mode)
    aec.reset(options={"deal": SUIT_PER_SEAT, "dealer": 1})
    text = aec.render()
    if mode == "human":
        aec.step(52)
        text = capsys.readouterr().out
    assert "Smoorverliefd, 4 players" in text and "player_2" in text
    assert "♥ A K Q J 10 9 8 7 6 5 4 3 2" in text  # the observer's hand, with suit symbols
    assert "♣" not in text.split("player_0")[1].splitlines()[0]  # others' hands hidden


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="reward_mode"):
        raw_env(reward_mode="dense")
    with pytest.raises(ValueError, match="render_mode"):
        raw_env(render_mode="svg")
