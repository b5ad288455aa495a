"""The Gymnasium entry points of ``smoor_env/Smoorverliefd-v1`` and ``smoor_env/Hearts-v1``.

``smoor_env.envs.gym_env`` takes opponents as agent objects; ``gymnasium.make`` and
``gymnasium.make_vec`` come here, where opponent names (``opponents="greedy"``,
``["random", "greedy", "mc"]``) become agents (``agents.make_agent``), random by
default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.base import Agent, make_agent
from smoor_env.envs.gym_env import SmoorEnv, SmoorVectorEnv


def resolve_opponents(opponents: Any) -> Agent | list[Agent]:
    """Agents from a name or an agent (one for every other seat), or a sequence of names
    and agents (one per other seat: each name makes its own agent)."""
    if isinstance(opponents, str) or not isinstance(opponents, Sequence):
        return make_agent(opponents)
    return [make_agent(a) for a in opponents]


def make_env(opponents: Any = "random", **kwargs: Any) -> SmoorEnv:
    """``SmoorEnv`` with opponents by name or as agents (entry point of ``gymnasium.make``)."""
    return SmoorEnv(opponents=resolve_opponents(opponents), **kwargs)


def make_vector_env(num_envs: int = 1, opponents: Any = "random",
                    **kwargs: Any) -> SmoorVectorEnv:
    """``SmoorVectorEnv`` with opponents by name or as agents (entry point of ``make_vec``)."""
    return SmoorVectorEnv(num_envs, opponents=resolve_opponents(opponents), **kwargs)
