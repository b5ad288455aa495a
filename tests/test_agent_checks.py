"""Agents refuse what they were not built for: a search agent built with ``rules=`` for
one game refuses observations of another (it would search the wrong rules silently)."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make_agent
from smoor_env import Engine, Rules, preset
from smoor_env.observation import observe

SMALL = {"mc": {"worlds": 4}, "ismcts": {"iterations": 16, "walks": 4}}


def _play_phase_observations(rules: Rules) -> dict:
    engine = Engine(rules, 2)
    engine.reset(0)
    engine.step(engine.sample_legal(np.random.default_rng(0)))  # a lead: the others follow
    return {"observation": observe(engine, engine.state.current_player),
            "action_mask": engine.legal_mask}


@pytest.mark.parametrize("name", list(SMALL))
@pytest.mark.parametrize("built, given, named", [
    (Rules(), preset("hearts_no_passing", 4), "game='hearts'"),
    (Rules(num_players=4), Rules(num_players=3, target_score=None), "num_players=3"),
    (Rules(trump_hearts=True), Rules(target_score=None), "trump_hearts=False"),
])
def test_a_search_agent_built_for_one_game_refuses_another(name, built, given, named):
    agent = make_agent(name, rules=built, **SMALL[name])
    with pytest.raises(ValueError, match=f"built with rules= for another game.*{named}"):
        agent.act(_play_phase_observations(given), np.random.default_rng(0))
    same = make_agent(name, rules=given, **SMALL[name])
    observations = _play_phase_observations(given)
    actions = same.act(observations, np.random.default_rng(0))
    assert observations["action_mask"][np.arange(2), actions].all()
