"""Opponents on the engine's state: an agent's ``act_state`` (greedy's, and epsilon-greedy's,
``greedy:0.2``) gives exactly the moves of its ``act`` on observations for the same random
state, and the environments that use it step exactly as before, step by step, in both games
and every rule set."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import smoor_env  # noqa: F401 - registers the ids
from agents import make_agent
from smoor_env import PRESETS, Engine, preset
from smoor_env.envs import agent_loop
from smoor_env.envs.gym_env import SmoorEnv, SmoorVectorEnv
from smoor_env.observation import observe

CASES = [(name, p) for name, spec in PRESETS.items() for p in spec.players]
IDS = [f"{n}-{p}p" for n, p in CASES]
#: The opponents with a state-level policy: greedy, and epsilon-greedy by its spec.
STATE_OPPONENTS = ["greedy", "greedy:0.2"]
ENV_IDS = ["smoor_env/Smoorverliefd-v1", "smoor_env/Hearts-v1"]


@pytest.mark.parametrize("spec", STATE_OPPONENTS)
@pytest.mark.parametrize("name, players", CASES, ids=IDS)
def test_greedy_on_the_state_moves_as_on_observations(name, players, spec):
    rules = preset(name, players, matches=True)
    engine = Engine(rules, 64)
    engine.reset(players)
    agent, pure = make_agent(spec), make_agent("greedy")
    # The moves' randomness, twice from one seed: each path must draw the same numbers.
    play, on_state, on_observations = (np.random.default_rng(seed) for seed in (0, 1, 1))
    phases, explored = set(), 0
    for _ in range(150):
        live = np.flatnonzero(~engine.state.match_over)
        if not len(live):
            break
        seen = {"observation": observe(engine, engine.state.current_player[live], live),
                "action_mask": engine.legal_mask[live]}
        moves = agent.act_state(engine, live, on_state)
        assert np.array_equal(moves, agent.act(seen, on_observations))
        assert seen["action_mask"][np.arange(len(live)), moves].all()
        explored += int((moves != pure.act_state(engine, live, play)).sum())
        phases |= set(engine.state.phase[live].tolist())
        engine.step(engine.sample_legal(play), active=~engine.state.match_over)
    assert on_state.bit_generator.state == on_observations.bit_generator.state
    # Every phase the rules have was met (pass, curse, bid, play).
    assert len(phases) == 1 + rules.passing + rules.bidding + rules.cupids_arrow
    assert (explored > 0) == (spec != "greedy")  # eps 0.2 does leave the greedy move


def _without_state_policies(monkeypatch):
    monkeypatch.setattr(agent_loop, "offers_state", lambda agent: False)


@pytest.mark.parametrize("spec", STATE_OPPONENTS)
@pytest.mark.parametrize("name, players", CASES[::2], ids=IDS[::2])
def test_the_vector_env_steps_as_with_observations(name, players, spec, monkeypatch):
    rules = preset(name, players, matches=True)

    def run() -> list:
        env = SmoorVectorEnv(16, rules, opponents=make_agent(spec))
        out = [env.reset(seed=3)]
        for _ in range(60):
            out.append(env.step(np.argmax(env.action_masks(), 1)))
        env.close()
        return out

    fast = run()
    _without_state_policies(monkeypatch)
    slow = run()
    for a, b in zip(fast, slow, strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a[:-1], b[:-1], strict=True))
        assert np.array_equal(a[-1]["action_mask"], b[-1]["action_mask"])


def test_the_single_env_steps_as_with_observations(monkeypatch):
    def run() -> list:
        env = SmoorEnv(preset("hearts", 4, matches=True), opponents=make_agent("greedy"))
        out = [env.reset(seed=1)[0]]
        for _ in range(40):
            obs, reward, terminated, *_ = env.step(int(np.argmax(env.action_masks())))
            out.append((obs, reward, terminated))
            if terminated:
                break
        return out

    fast = run()
    _without_state_policies(monkeypatch)
    assert all(np.array_equal(np.asarray(a[0] if isinstance(a, tuple) else a),
                              np.asarray(b[0] if isinstance(b, tuple) else b))
               for a, b in zip(fast, run(), strict=True))


def _steps(env, steps: int, rng: np.random.Generator) -> list:
    """Every array a vector env's reset and ``steps`` steps return, for random learner
    actions from ``rng`` (a fixed stream: the same actions whatever the opponents)."""
    obs, info = env.reset(seed=7)
    out = [(obs.copy(), info["action_mask"].copy())]
    for _ in range(steps):
        mask = info["action_mask"]
        actions = np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)
        obs, rewards, terminated, truncated, info = env.step(actions)
        out.append((obs.copy(), rewards, terminated, truncated, info["action_mask"].copy()))
    env.close()
    return out


def _assert_same(fast: list, slow: list) -> None:
    for t, (a, b) in enumerate(zip(fast, slow, strict=True)):
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)), f"step {t}"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_epsilon_greedy_opponents_by_spec_in_make_vec(env_id, monkeypatch):
    """``opponents="greedy:0.2"`` through ``gymnasium.make_vec``: played on the state, step
    by step what the same agent gives on observations, and not what pure greedy gives."""
    def run(opponents: str) -> list:
        env = gym.make_vec(env_id, num_envs=12, vectorization_mode="vector_entry_point",
                           num_players=4, opponents=opponents)
        return _steps(env, 80, np.random.default_rng(0))

    env = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point",
                       opponents="greedy:0.2")
    (opponent,) = env._block.match.agent_loop.agents
    assert opponent.eps == 0.2 and agent_loop.offers_state(opponent)
    env.close()
    fast = run("greedy:0.2")
    assert any(not np.array_equal(a[0], b[0]) for a, b in zip(fast, run("greedy"),
                                                                  strict=True))
    _without_state_policies(monkeypatch)
    _assert_same(fast, run("greedy:0.2"))


def test_epsilon_greedy_opponents_in_workers_equal_one_process():
    """Its draws are one uniform row per game (``smoor_env.core.streams``): the games do
    not depend on how they are split over processes."""
    def run(workers: int) -> list:
        env = gym.make_vec("smoor_env/Hearts-v1", num_envs=10,
                           vectorization_mode="vector_entry_point", num_players=3,
                           opponents="greedy:0.3", num_workers=workers)
        return _steps(env, 60, np.random.default_rng(0))

    _assert_same(run(1), run(2))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_epsilon_greedy_opponents_by_spec_in_the_single_env(env_id, monkeypatch):
    def run() -> list:
        env = gym.make(env_id, opponents="greedy:0.2", target_score=None)
        obs, info = env.reset(seed=4)
        out, rng = [(obs, info["action_mask"])], np.random.default_rng(0)
        for _ in range(3):  # three single rounds: the opponents' draws go on between them
            terminated = False
            while not terminated:
                mask = env.unwrapped.action_masks()
                action = int(np.argmax(np.where(mask, rng.random(70), -1.0)))
                obs, reward, terminated, truncated, info = env.step(action)
                out.append((obs, np.float32(reward), info["action_mask"]))
            obs, info = env.reset()
            out.append((obs, info["action_mask"]))
        return out

    fast = run()
    _without_state_policies(monkeypatch)
    _assert_same(fast, run())


def test_epsilon_greedy_opponents_by_spec_in_the_sb3_adapter(monkeypatch):
    pytest.importorskip("stable_baselines3")
    from smoor_env.envs.sb3 import make_sb3_vec_env

    def run() -> list:
        adapter = make_sb3_vec_env("smoor_env/Hearts-v1", 8, monitor=False, num_players=4,
                                   target_score=None, opponents="greedy:0.2")
        adapter.seed(3)
        out, rng = [(adapter.reset(),)], np.random.default_rng(0)
        for _ in range(40):
            mask = adapter.action_masks()
            actions = np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)
            obs, rewards, dones, infos = adapter.step(actions)
            out.append((obs, rewards, dones, mask))
        adapter.close()
        return out

    fast = run()
    assert sum(int(step[2].sum()) for step in fast[1:]) >= 8  # every round ended once
    _without_state_policies(monkeypatch)
    _assert_same(fast, run())


def test_an_agent_that_overrides_act_is_asked_through_act():
    class Contrary(type(make_agent("greedy"))):
        def act(self, observations, rng):
            return super().act(observations, rng)

    assert agent_loop.offers_state(make_agent("greedy"))
    assert agent_loop.offers_state(make_agent("greedy:0.2"))
    assert not agent_loop.offers_state(Contrary())
    assert not agent_loop.offers_state(make_agent("mc"))
