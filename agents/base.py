"""The batched agent protocol shared by every agent, and creation by name.

An agent takes a batch of observations as the environments give them, a dict
with ``"observation"`` (B, D) float32 and ``"action_mask"`` (B, 70) bool or int8,
and a ``numpy.random.Generator``, and returns (B,) legal action ids. The same
object plays in the PettingZoo environment (B = 1), the Gymnasium environments
and the experiments. Agents see only the observation: never the engine state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Agent(Protocol):
    """A batched policy: observations in, one legal action per game out."""

    #: Name the agent is created by (``make_agent(name)``).
    name: str
    #: False if the agent only reads ``action_mask`` (the environment may then skip
    #: building observations for it, which is most of the cost of a step).
    uses_observation: bool

    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        """(B,) int64 legal actions for a batch of observations."""
        ...


_REGISTRY: dict[str, Callable[..., Agent]] = {}


def register(name: str) -> Callable[[Callable[..., Agent]], Callable[..., Agent]]:
    """Class decorator: make an agent available to ``make_agent(name, **options)``."""
    def add(factory: Callable[..., Agent]) -> Callable[..., Agent]:
        _REGISTRY[name] = factory
        return factory
    return add


def agent_names() -> list[str]:
    """Names ``make_agent`` accepts."""
    return sorted(_REGISTRY)


def make_agent(name: str | Agent, **options: Any) -> Agent:
    """An agent by name with keyword options (``make_agent("random")``); agents pass through."""
    if not isinstance(name, str):
        return name
    if name not in _REGISTRY:
        raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(agent_names())}")
    return _REGISTRY[name](**options)


def check_mask(observations: dict[str, np.ndarray]) -> np.ndarray:
    """(B, 70) bool legal mask from a batch of observations, with a clear error if malformed."""
    if "action_mask" not in observations:
        raise ValueError("observations must be a dict with an 'action_mask' entry")
    mask = np.asarray(observations["action_mask"]).astype(bool, copy=False)
    if mask.ndim != 2 or mask.shape[1] != 70:
        raise ValueError(f"action_mask must have shape (B, 70), got {mask.shape}")
    if not mask.any(axis=1).all():
        games = np.flatnonzero(~mask.any(axis=1))[:10].tolist()
        raise ValueError(f"no legal action in games {games} (is the match over?)")
    return mask
