"""Opponents on the engine's state: an agent's ``act_state`` (greedy's) gives exactly the
moves of its ``act`` on observations, and the environments that use it step exactly as
before, step by step, in both games and every rule set."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make_agent
from smoor_env import PRESETS, Engine, preset
from smoor_env.envs import agent_loop
from smoor_env.envs.gym_env import SmoorEnv, SmoorVectorEnv
from smoor_env.observation import observe

CASES = [(name, p) for name, spec in PRESETS.items() for p in spec.players]
IDS = [f"{n}-{p}p" for n, p in CASES]


@pytest.mark.parametrize("name, players", CASES, ids=IDS)
def test_greedy_on_the_state_moves_as_on_observations(name, players):
    rules = preset(name, players, matches=True)
    engine = Engine(rules, 64)
    engine.reset(players)
    greedy, rng = make_agent("greedy"), np.random.default_rng(0)
    phases = set()
    for _ in range(150):
        live = np.flatnonzero(~engine.state.match_over)
        if not len(live):
            break
        seen = {"observation": observe(engine, engine.state.current_player[live], live),
                "action_mask": engine.legal_mask[live]}
        assert np.array_equal(greedy.act_state(engine, live, rng), greedy.act(seen, rng))
        phases |= set(engine.state.phase[live].tolist())
        engine.step(engine.sample_legal(rng), active=~engine.state.match_over)
    # Every phase the rules have was met (pass, curse, bid, play).
    assert len(phases) == 1 + rules.passing + rules.bidding + rules.cupids_arrow


def _without_state_policies(monkeypatch):
    monkeypatch.setattr(agent_loop, "offers_state", lambda agent: False)


@pytest.mark.parametrize("name, players", CASES[::2], ids=IDS[::2])
def test_the_vector_env_steps_as_with_observations(name, players, monkeypatch):
    rules = preset(name, players, matches=True)

    def run() -> list:
        env = SmoorVectorEnv(16, rules, opponents=make_agent("greedy"))
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


def test_an_agent_that_overrides_act_is_asked_through_act():
    class Contrary(type(make_agent("greedy"))):
        def act(self, observations, rng):
            return super().act(observations, rng)

    assert agent_loop.offers_state(make_agent("greedy"))
    assert not agent_loop.offers_state(Contrary())
    assert not agent_loop.offers_state(make_agent("mc"))
