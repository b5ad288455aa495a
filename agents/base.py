"""The batched agent protocol shared by every agent, and creation by name.

An agent takes a batch of observations as the environments give them, a dict
with ``"observation"`` (B, D) float32 and ``"action_mask"`` (B, 70) bool or int8,
and a ``numpy.random.Generator``, and returns (B,) legal action ids. The same
object plays in the PettingZoo environment (B = 1), the Gymnasium environments
and the experiments. The table that plays them (``smoor_env.envs.agent_loop``) adds
``"games"`` (B,) int64, the rows' games in its batch, and ``"seats"`` (B,) the seats
to act (a league that draws its opponents per game reads them; other agents ignore
them). Agents see only the observation: never the engine state.

An agent that reads only the action mask may also offer ``act_packed(words,
rng)``: the same actions (for the same ``rng``) from the mask packed into bits
(``pack_mask``). The vector environment then hands its opponents the packed legal
sets it already has, instead of building and unpacking a (B, 70) mask.
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


def parse_agent(spec: str) -> tuple[str, dict[str, Any]]:
    """An agent spec as the command lines write it, split into ``make_agent``'s arguments.

    ``"mc:worlds=16,rollout=greedy"`` -> ``("mc", {"worlds": 16, "rollout": "greedy"})``:
    values become int, float, bool or None (``none``) where they read as one, else stay
    strings.
    """
    name, _, rest = spec.partition(":")
    options: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"agent option {item!r} in {spec!r} must be key=value")
        for convert in (int, float):
            try:
                options[key] = convert(value)
                break
            except ValueError:
                continue
        else:
            options[key] = {"true": True, "false": False, "none": None}.get(value.lower(), value)
    return name, options


def build_agent(spec: str) -> Agent:
    """The agent an agent spec names: ``make_agent(name, **options)`` of ``parse_agent(spec)``."""
    name, options = parse_agent(spec)
    return make_agent(name, **options)


def pack_mask(mask: np.ndarray) -> np.ndarray:
    """(B, 2) uint64: a (B, 70) legal mask as bits, action a at bit a % 64 of word a // 64."""
    words = np.zeros((len(mask), 2), np.uint64)  # (B, 2): actions 0..63, 64..127
    words.view(np.uint8)[:, :9] = np.packbits(mask, axis=1, bitorder="little")
    return words


def check_packed(words: np.ndarray) -> np.ndarray:
    """(B, 2) uint64 packed legal mask (see ``pack_mask``), with a clear error if malformed."""
    words = np.asarray(words)
    if words.dtype != np.uint64 or words.ndim != 2 or words.shape[1] != 2:
        raise ValueError(f"packed action masks must be uint64 of shape (B, 2), got "
                         f"{words.dtype} {words.shape}")
    none = (words[:, 0] | words[:, 1]) == 0  # (B,) no legal action
    if none.any():
        raise ValueError(f"no legal action in games {np.flatnonzero(none)[:10].tolist()} "
                         f"(is the match over?)")
    return words


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
