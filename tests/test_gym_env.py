"""Gymnasium environments: the checker, masks, rewards, illegal actions, the vector autoreset."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import smoor_env  # noqa: F401 - registers the ids
from smoor_env import Phase, Rules
from smoor_env.gym_env import SmoorEnv, SmoorVectorEnv
from smoor_env.observation import split_observation

IDS = ["smoor_env/Smoorverliefd-v0", "smoor_env/Hearts-v0"]


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("options", [{}, {"num_players": 3}, {"num_players": 5}])
def test_gymnasium_check_env(env_id, options):
    env = gym.make(env_id, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checker finds an unbounded Box "probably" odd
        check_env(env.unwrapped, skip_render_check=True)


def test_rules_are_keyword_arguments():
    env = gym.make("smoor_env/Smoorverliefd-v0", num_players=5, bidding=True, trump_hearts=True)
    assert env.unwrapped.rules == Rules(num_players=5, bidding=True, trump_hearts=True)
    hearts = gym.make("smoor_env/Hearts-v0", num_players=3)
    assert hearts.unwrapped.rules.is_hearts and hearts.unwrapped.rules.num_players == 3


def _play_match(env: SmoorEnv, seed: int, rng: np.random.Generator) -> float:
    obs, info = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        mask = env.action_masks()
        assert np.array_equal(mask, info["action_mask"]) and mask.any()
        assert env.engine.state.current_player[0] == 0  # the learner's turn
        obs, reward, done, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        total += reward
        assert not truncated and not info["illegal_action"]
    return total


@pytest.mark.parametrize("game", ["smoorverliefd", "hearts"])
@pytest.mark.parametrize("mode", ["round", "trick"])
def test_learner_return_is_its_match_total(game, mode):
    env = SmoorEnv(game=game, target_score=30, max_rounds=3, reward_mode=mode,
                   opponents="greedy")
    total = _play_match(env, seed=5, rng=np.random.default_rng(0))
    sign = -1 if game == "hearts" else 1
    assert total == sign * env.engine.state.totals[0, 0]


def test_opponents_one_agent_per_seat():
    env = SmoorEnv(num_players=3, opponents=["random", "greedy"], target_score=None)
    _play_match(env, seed=1, rng=np.random.default_rng(1))
    with pytest.raises(ValueError, match="one agent for each of the 2 other seats"):
        SmoorEnv(num_players=3, opponents=["random"])
    with pytest.raises(ValueError, match="unknown agent 'nobody'"):
        SmoorEnv(opponents="nobody")


def test_illegal_action_ends_the_episode_or_raises():
    env = SmoorEnv(target_score=None)
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    before = env.engine.state.copy()
    obs, reward, terminated, _, info = env.step(illegal)
    assert terminated and reward == -1.0 and info["illegal_action"]
    assert np.array_equal(before.hands, env.engine.state.hands)
    with pytest.raises(ValueError, match="call reset"):
        env.step(0)
    strict = SmoorEnv(target_score=None, illegal_action="raise")
    strict.reset(seed=0)
    with pytest.raises(ValueError, match="illegal action in game 0"):
        strict.step(illegal)


def test_same_seed_same_episode():
    def trajectory(seed):
        env = SmoorEnv(game="hearts", target_score=None, opponents="random")
        obs, _ = env.reset(seed=seed)
        out = [obs]
        rng = np.random.default_rng(0)
        done = False
        while not done:
            obs, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            out.append(obs)
        return np.stack(out)

    assert np.array_equal(trajectory(3), trajectory(3))
    assert not np.array_equal(trajectory(3)[0], trajectory(4)[0])


def test_vector_env_from_make_vec():
    envs = gym.make_vec("smoor_env/Hearts-v0", num_envs=16,
                        vectorization_mode="vector_entry_point", num_players=5)
    assert isinstance(envs, SmoorVectorEnv)
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    obs, info = envs.reset(seed=0)
    assert obs.shape == (16, envs.single_observation_space.shape[0])
    assert info["action_mask"].shape == (16, 70) and info["action_mask"].any(axis=1).all()


def _random_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)


@pytest.mark.parametrize("game", ["smoorverliefd", "hearts"])
def test_vector_env_next_step_autoreset_step_by_step(game):
    envs = SmoorVectorEnv(num_envs=12, game=game, target_score=None, opponents="greedy")
    rng = np.random.default_rng(7)
    obs, info = envs.reset(seed=11)
    ended = np.zeros(12, bool)
    returns = np.zeros(12)
    checked = 0
    for _ in range(200):
        mask = info["action_mask"]
        actions = _random_actions(mask, rng)
        actions[ended] = 69  # ignored: these games restart on this step
        obs, rewards, terminated, truncated, info = envs.step(actions)
        st = envs.engine.state
        assert not truncated.any()
        if ended.any():  # the games that had ended restart: reward 0, not terminated
            assert (rewards[ended] == 0).all() and not terminated[ended].any()
            first = split_observation(obs[ended])
            assert (first["totals"] == 0).all() and (first["won"] == 0).all()
            assert (st.round_number[ended] == 1).all()
            checked += int(ended.sum())
        returns += rewards
        live = ~terminated
        # Everywhere the episode goes on, it is the learner's (seat 0) turn, with its mask.
        assert (st.current_player[live] == 0).all()
        assert info["action_mask"][live].any(axis=1).all()
        assert np.array_equal(info["action_mask"], envs.engine.legal_mask)
        if terminated.any():
            sign = -1 if game == "hearts" else 1
            assert np.array_equal(returns[terminated], sign * st.round_points[terminated, 0])
            returns[terminated] = 0
        ended = terminated
    assert checked >= 12


def test_vector_env_illegal_action_ends_only_that_game():
    envs = SmoorVectorEnv(num_envs=4, target_score=None)
    _, info = envs.reset(seed=0)
    actions = np.argmax(info["action_mask"], axis=1)
    actions[2] = int(np.flatnonzero(~info["action_mask"][2])[0])
    _, rewards, terminated, _, info = envs.step(actions)
    assert terminated.tolist() == [False, False, True, False]
    assert rewards[2] == -1.0 and info["illegal_action"][2]
    assert envs.engine.state.phase.tolist().count(Phase.PLAY) == 4


def test_vector_env_without_copy_returns_read_only_views_of_the_same_observations():
    copied, viewed = SmoorVectorEnv(num_envs=8, copy=True), SmoorVectorEnv(num_envs=8, copy=False)
    obs_a, info = copied.reset(seed=4)
    obs_b, _ = viewed.reset(seed=4)
    rng = np.random.default_rng(4)
    for _ in range(30):
        assert np.array_equal(obs_a, obs_b)
        assert not obs_b.flags.writeable  # the environment patches it in place
        with pytest.raises(ValueError, match="read-only"):
            obs_b[0, 0] = 1.0
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
        obs_a, _, _, _, info = copied.step(actions)
        kept = obs_b
        obs_b, *_ = viewed.step(actions)
        assert np.shares_memory(kept, obs_b)  # a view: copy it to keep it
