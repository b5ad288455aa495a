"""Baseline agents behind one batched protocol (see ``agents.base``).

``ppo`` (``agents.ppo``, a trained policy) plays in numpy; training it needs PyTorch
(the ``rl`` extra). ``rllib`` (``agents.rllib``, a policy trained with RLlib) needs Ray
(the ``ray`` extra): it is registered here by a factory that imports it only when the
agent is created.
"""

from typing import Any

from agents.base import (
    Agent,
    AgentSpecError,
    agent_names,
    agent_options,
    build_agent,
    build_agents,
    make_agent,
    parse_agent,
    register,
)
from agents.greedy import GreedyAgent
from agents.ismcts import ISMCTSAgent
from agents.mc import MCAgent
from agents.ppo import PPOAgent
from agents.random_agent import RandomAgent


@register("rllib")
def _make_rllib(**options: Any) -> Agent:
    """``agents.rllib.RLlibAgent`` (imported here so that ``agents`` does not need Ray)."""
    try:
        from agents.rllib import RLlibAgent
    except ImportError as error:
        raise ImportError("the rllib agent needs Ray's RLlib: install the ray extra "
                          "(pip install -e '.[ray]')") from error
    return RLlibAgent(**options)


__all__ = ["Agent", "AgentSpecError", "GreedyAgent", "ISMCTSAgent", "MCAgent", "PPOAgent",
           "RandomAgent", "agent_names", "agent_options", "build_agent", "build_agents",
           "make_agent", "parse_agent", "register"]
