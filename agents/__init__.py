"""Baseline agents behind one batched protocol (see ``agents.base``).

``ppo`` (``agents.ppo``, a trained policy) needs PyTorch (the ``rl`` extra) and
``rllib`` (``agents.rllib``, a policy trained with RLlib) needs Ray (the ``ray`` extra);
they are registered here by factories that import them only when the agent is created.
"""

from typing import Any

from agents.base import Agent, agent_names, build_agent, make_agent, parse_agent, register
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


@register("rllib")
def _make_rllib(**options: Any) -> Agent:
    """``agents.rllib.RLlibAgent`` (imported here so that ``agents`` does not need Ray)."""
    try:
        from agents.rllib import RLlibAgent
    except ImportError as error:
        raise ImportError("the rllib agent needs Ray's RLlib: install the ray extra "
                          "(pip install -e '.[ray]')") from error
    return RLlibAgent(**options)


__all__ = ["Agent", "GreedyAgent", "ISMCTSAgent", "MCAgent", "RandomAgent", "agent_names",
           "build_agent", "make_agent", "parse_agent", "register"]
