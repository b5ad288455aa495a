"""The batched self-play interface: exactly the AEC env's game seen from the seat to act,
batch-independent, NEXT_STEP autoreset, no hidden card in any seat's observation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_agents import _swap_hidden

from smoor_env import PRESETS, Rules, preset, raw_env
from smoor_env.core.checks import BrokenStateError
from smoor_env.core.engine import Engine
from smoor_env.envs.selfplay import RESTART_ACTION, SelfPlayVectorEnv
from smoor_env.observation import observe

CASES = [(name, 4 if name == "partners" else 3 + i % 3) for i, name in enumerate(PRESETS)]


def _policy(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(N,) a random legal action per row of an (N, 70) mask."""
    return np.argmax(rng.random(mask.shape) * mask, axis=1)


@pytest.mark.parametrize("name, players", CASES, ids=[f"{n}-{p}p" for n, p in CASES])
def test_one_game_is_the_aec_envs_match_step_by_step(name, players):
    rules = dataclasses.replace(preset(name, players, matches=True), max_rounds=4)
    rng = np.random.default_rng(players)
    for seed in (0, 1):
        env, aec = SelfPlayVectorEnv(1, rules), raw_env(rules)
        obs, info = env.reset(seed=seed)
        aec.reset(seed=seed)
        for _ in range(2000):
            agent = aec.agent_selection
            seen = aec.observe(agent)
            assert info["seat"][0] == aec.possible_agents.index(agent)
            assert np.array_equal(obs[0], seen["observation"])
            assert np.array_equal(info["action_mask"][0], seen["action_mask"].astype(bool))
            action = _policy(info["action_mask"], rng)
            obs, rewards, terminated, truncated, info = env.step(action)
            aec.step(int(action[0]))
            assert list(rewards[0]) == [aec.rewards[a] for a in aec.possible_agents]
            assert not truncated[0]
            if terminated[0]:
                assert all(aec.terminations.values())
                break
            assert not any(aec.terminations.values())
        else:
            pytest.fail("the match did not end")
        # NEXT_STEP: the ended game offers only the restart action, and the next step
        # starts its next match (game id 1) with zero rewards.
        assert info["action_mask"][0].tolist() == [a == RESTART_ACTION for a in range(70)]
        obs, rewards, terminated, _, info = env.step(np.array([RESTART_ACTION]))
        assert not terminated[0] and not rewards.any()
        fresh = Engine(rules, 1)
        fresh.reset(seed, game_ids=[1])
        assert np.array_equal(obs[0], observe(fresh, fresh.state.current_player)[0])


@pytest.mark.parametrize("name", ["hearts", "bidding", "cupids_arrow"])
def test_each_game_of_a_batch_plays_as_it_would_alone(name):
    rules = preset(name, 4, matches=True)
    env = SelfPlayVectorEnv(6, rules, obs_dtype="int8")
    alone = [Engine(rules, 1) for _ in range(6)]
    for i, engine in enumerate(alone):
        engine.reset(5, game_ids=[i])
    obs, info = env.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(300):
        live = ~env._ended
        for i in np.flatnonzero(live):
            expected = observe(alone[i], alone[i].state.current_player, dtype="int8")[0]
            assert np.array_equal(obs[i], expected)
            assert info["seat"][i] == alone[i].state.current_player[0]
        actions = _policy(info["action_mask"], rng)
        for i in np.flatnonzero(live):
            alone[i].step(actions[i:i + 1])
        obs, rewards, terminated, _, info = env.step(actions)
        for i in np.flatnonzero(terminated):  # the alone copy starts game id i + 6 next
            alone[i].reset(5, game_ids=[i + 6])


@pytest.mark.parametrize("copy", [True, False])
@pytest.mark.parametrize("name, players", [("hearts", 4), ("bidding", 3), ("partners", 4),
                                           ("pip_scoring", 5)])
def test_all_seats_hands_out_every_seats_own_observation(name, players, copy):
    """``all_seats=True``: (N, P, D), row [g, s] seat s's own observation of game g (as
    ``observe`` builds it), row [g, seat to act] what the gathered env hands out."""
    rules = preset(name, players, matches=True)
    every, acting = (SelfPlayVectorEnv(5, rules, obs_dtype="int8", copy=copy, all_seats=a)
                     for a in (True, False))
    out, info = every.reset(seed=9)
    one, _ = acting.reset(seed=9)
    rng = np.random.default_rng(0)
    for _ in range(120):
        assert out.shape == (5, players, 1128) and out.dtype == np.int8
        for seat in range(players):
            expected = observe(every.engine, np.full(5, seat), dtype="int8")
            assert np.array_equal(out[:, seat], expected)
        assert np.array_equal(out[np.arange(5), info["seat"]], one)
        assert out.flags.writeable == copy
        actions = _policy(info["action_mask"], rng)
        out, rewards, terminated, _, info = every.step(actions)
        one, rewards_one, terminated_one, _, _ = acting.step(actions)
        assert np.array_equal(rewards, rewards_one)
        assert np.array_equal(terminated, terminated_one)


@pytest.mark.parametrize("name", ["hearts", "smoorverliefd", "trump_hearts"])
def test_no_seat_sees_a_hidden_card(name):
    """Swapping two hidden cards between two other seats never changes what the seat to
    act is shown (the leak test's method)."""
    rules = preset(name, 4)
    rng = np.random.default_rng(1)
    env = SelfPlayVectorEnv(1, rules)
    obs, info = env.reset(seed=2)
    swapped = 0
    for _ in range(200):
        if env._ended[0]:
            obs, *_, info = env.step(np.array([RESTART_ACTION]))
        state = env.engine.state
        other = _swap_hidden(state, int(info["seat"][0]), rng)
        if other is not None:
            twin = Engine(rules, 1)
            twin.install(other)
            assert np.array_equal(obs[0], observe(twin, info["seat"])[0])
            swapped += 1
        obs, _, _, _, info = env.step(_policy(info["action_mask"], rng))
    assert swapped > 50


def test_bad_actions_change_nothing_and_calls_are_checked():
    env = SelfPlayVectorEnv(3, Rules())
    with pytest.raises(RuntimeError, match="before the first reset"):
        env.step(np.zeros(3, np.int64))
    obs, info = env.reset(seed=0)
    illegal = np.array([np.flatnonzero(~m)[0] for m in info["action_mask"]])
    with pytest.raises(ValueError, match="illegal"):
        env.step(illegal)
    for bad in (np.zeros(2, np.int64), np.zeros(3) + 0.5):
        with pytest.raises(ValueError, match=r"\(3,\) integers"):
            env.step(bad)
    again = SelfPlayVectorEnv(3, Rules())
    assert np.array_equal(again.reset(seed=0)[0], obs)  # the refusals changed nothing
    first = env.step(np.argmax(info["action_mask"], 1))
    second = again.step(np.argmax(again.action_masks(), 1))
    assert all(np.array_equal(a, b) for a, b in zip(first[:4], second[:4], strict=True))
    with pytest.raises(ValueError, match="num_envs"):
        SelfPlayVectorEnv(0)


def test_an_interrupted_step_is_refused_until_reset():
    from test_interrupts import count_lines

    env = SelfPlayVectorEnv(4, preset("hearts"))
    env.reset(seed=0)
    lines = count_lines(lambda: env.step(np.argmax(env.action_masks(), 1)))
    env.reset(seed=0)
    with pytest.raises(KeyboardInterrupt):
        count_lines(lambda: env.step(np.argmax(env.action_masks(), 1)), stop_at=lines // 2)
    with pytest.raises(BrokenStateError, match="call reset"):
        env.action_masks()
    env.reset(seed=0)
    env.step(np.argmax(env.action_masks(), 1))


@pytest.mark.parametrize("name, players", [("smoorverliefd", 4), ("hearts", 4), ("bidding", 5)])
def test_a_pickled_env_plays_on_exactly_as_the_original(name, players):
    """A training run saves its tables' games with ``pickle`` and goes on from the copy
    (``experiments/dmc.py``): the copy's observations, masks, rewards and ends must be the
    original's, step for step, across the rounds that follow."""
    import pickle

    rules = preset(name, players)
    env = SelfPlayVectorEnv(3, rules, reward_mode="trick", obs_dtype="int8")
    obs, info = env.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(23):  # mid-round, part of the way through a trick
        obs, *_, info = env.step(_policy(info["action_mask"], rng))
    copy = pickle.loads(pickle.dumps(env))
    for _ in range(3 * 13 * players):  # into the rounds after this one
        actions = _policy(info["action_mask"], rng)
        got, want = copy.step(actions), env.step(actions)
        for a, b in zip(got[:4], want[:4], strict=True):
            np.testing.assert_array_equal(a, b)
        for key in ("seat", "action_mask"):
            np.testing.assert_array_equal(got[4][key], want[4][key])
        info = want[4]
