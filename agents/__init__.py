"""Baseline agents behind one batched protocol (see ``agents.base``).

``ppo`` (``agents.ppo``, a trained policy) needs PyTorch (the ``rl`` extra); it is
registered here by a factory that imports torch only when the agent is created.
"""

from typing import Any

from agents.base import Agent, agent_names, make_agent, register
from agents.greedy import GreedyAgent
from agents.ismcts import ISMCTSAgent
from agents.mc import MCAgent
from agents.random_agent import RandomAgent


@register("ppo")
def _make_ppo(**options: Any) -> Agent:
    """``agents.ppo.PPOAgent`` (imported here so that ``agents`` does not need torch)."""
    try:
        from agents.ppo import PPOAgent
    except ImportError as error:
        raise ImportError("the ppo agent needs PyTorch: install the rl extra "
                          "(pip install -e '.[rl]')") from error
    return PPOAgent(**options)


__all__ = ["Agent", "GreedyAgent", "ISMCTSAgent", "MCAgent", "RandomAgent", "agent_names",
           "make_agent", "register"]
