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

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from smoor_env.core import checks


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


#: The largest count an agent option takes (``worlds``, ``iterations``, ``rollouts``, ...):
#: past it one decision would take hours and its arrays would not fit in memory.
MAX_COUNT = 1_000_000


def check_count(key: str, value: Any, low: int = 1) -> int:
    """``value`` as an int in ``low..MAX_COUNT``, else a ValueError naming option ``key``
    (the engine's ``check_count``, with an agent option's error type)."""
    try:
        return checks.check_count(value, key, low, MAX_COUNT)
    except TypeError as error:
        raise ValueError(str(error)) from None


def check_number(key: str, value: Any, positive: bool = False) -> float:
    """``value`` as a finite float, >= 0 (> 0 if ``positive``), else a ValueError naming
    option ``key``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not np.isfinite(number) or number < 0 \
            or (positive and number == 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{key} must be a finite number {bound}, got {value!r}")
    return number


class AgentSpecError(ValueError):
    """An agent name, option or spec this module refuses; its message names the agent."""


def register(name: str) -> Callable[[Callable[..., Agent]], Callable[..., Agent]]:
    """Class decorator: make an agent available to ``make_agent(name, **options)``."""
    def add(factory: Callable[..., Agent]) -> Callable[..., Agent]:
        _REGISTRY[name] = factory
        return factory
    return add


def agent_names() -> list[str]:
    """Names ``make_agent`` accepts."""
    return sorted(_REGISTRY)


def agent_options(name: str) -> dict[str, inspect.Parameter] | None:
    """The keyword options ``make_agent(name, ...)`` accepts, by name (the registered
    factory's signature); None if the factory takes any keyword (``**options``)."""
    if name not in _REGISTRY:
        raise AgentSpecError(f"unknown agent {name!r}; known agents: "
                             f"{', '.join(agent_names())}")
    try:
        parameters = inspect.signature(_REGISTRY[name]).parameters
    except (TypeError, ValueError):  # no signature to read: let the factory judge
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return None
    return {key: p for key, p in parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _check_option_names(name: str, options: dict[str, Any]) -> None:
    """A ValueError naming the agent, the unknown options and the valid ones."""
    known = agent_options(name)
    if known is None:
        return
    unknown = [key for key in options if key not in known]
    if unknown:
        valid = f"its options: {', '.join(known)}" if known else "it takes no options"
        raise AgentSpecError(f"agent {name!r} has no option {', '.join(map(repr, unknown))}; "
                         f"{valid}")


def make_agent(name: str | Agent, **options: Any) -> Agent:
    """An agent by name with keyword options (``make_agent("random")``), or by spec
    (``make_agent("greedy:0.2")``, ``build_agent``); agents pass through.

    Raises:
        ValueError: an unknown name or option (the message lists the valid ones), or a
            bad option value (the agent's own check).
    """
    if not isinstance(name, str):
        if options or not callable(getattr(name, "act", None)):
            raise TypeError(f"make_agent takes an agent's name (one of {', '.join(agent_names())})"
                            f", a spec or an agent (with act); got {type(name).__name__}"
                            + (" with options" if options else ""))
        return name
    if ":" in name:  # a spec, as the command lines and gymnasium.make's opponents write it
        if options:
            raise AgentSpecError(f"agent spec {name!r} is given options too: give them in "
                                 f"the spec or as keywords of the name, not both")
        return build_agent(name)
    if name not in _REGISTRY:
        raise AgentSpecError(f"unknown agent {name!r}; known agents: {', '.join(agent_names())}")
    _check_option_names(name, options)
    return _REGISTRY[name](**options)


def bare_option(name: str) -> str | None:
    """The option a bare value sets in a spec of agent ``name`` (its class attribute
    ``bare_option``: ``"greedy:0.2"`` is ``"greedy:eps=0.2"``); None if it has none."""
    return getattr(_REGISTRY.get(name), "bare_option", None)


def _split_spec(spec: str) -> tuple[str, list[tuple[str, str]]]:
    """``"mc:worlds=16,rollout=greedy"`` -> ``("mc", [("worlds", "16"), ("rollout",
    "greedy")])``; a first item without ``=`` is the value of the agent's ``bare_option``
    (``"greedy:0.2"`` -> ``("greedy", [("eps", "0.2")])``)."""
    if not isinstance(spec, str):
        raise TypeError(f"an agent spec must be a str, got {type(spec).__name__}")
    name, _, rest = spec.partition(":")
    bare = bare_option(name)
    items = []
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep and bare and not items:
            key, sep, value = bare, "=", item
        if not sep or not key:
            raise AgentSpecError(f"agent option {item!r} in {spec!r} must be key=value")
        if key in dict(items):
            raise AgentSpecError(f"agent option {key} is given twice in {spec!r}")
        items.append((key, value))
    return name, items


def _read_value(text: str) -> Any:
    """int, float, bool or None (``none``) where ``text`` reads as one, else ``text``."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            continue
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def parse_agent(spec: str) -> tuple[str, dict[str, Any]]:
    """An agent spec as the command lines write it, split into ``make_agent``'s arguments.

    ``"mc:worlds=16,rollout=greedy"`` -> ``("mc", {"worlds": 16, "rollout": "greedy"})``:
    values become int, float, bool or None (``none``) where they read as one, else stay
    strings. (``build_agent`` reads each value as its option's type instead.) An agent
    whose class names a ``bare_option`` takes its value bare, first: ``"greedy:0.2"`` ->
    ``("greedy", {"eps": 0.2})``, as the rollout spec ``"greedy:EPS"`` writes it.
    """
    name, items = _split_spec(spec)
    return name, {key: _read_value(value) for key, value in items}


#: The option types a spec's text is read as, and how they are named in errors.
_SPEC_TYPES = {type(None): "none", bool: "true or false", int: "an int", float: "a number",
               str: "a string"}


def _option_types(factory: Callable[..., Agent], key: str) -> tuple[type, ...] | None:
    """The types of ``_SPEC_TYPES`` option ``key`` of ``factory`` is annotated with (a
    union's members, in that table's order); None if it is annotated with anything else
    (a ``Rules``, ``Any``) or cannot be read."""
    target = factory.__init__ if isinstance(factory, type) else factory
    try:
        hint = typing.get_type_hints(target).get(key)
    except Exception:  # an annotation that does not resolve: no types to check
        return None
    members = typing.get_args(hint) if isinstance(hint, types.UnionType) or \
        typing.get_origin(hint) is typing.Union else (hint,)
    if hint is None or not all(m in _SPEC_TYPES for m in members):
        return None
    return tuple(t for t in _SPEC_TYPES if t in members)


def _read_option(name: str, key: str, text: str) -> Any:
    """The value of option ``key=text`` of agent ``name``, read as the option's type."""
    known = agent_options(name)
    kinds = _option_types(_REGISTRY[name], key) if known and key in known else None
    if kinds is None:  # unknown (make_agent says so) or not a plain type: read generally
        return _read_value(text)
    lower = text.strip().lower()
    for kind in kinds:
        if kind is type(None) and lower == "none":
            return None
        if kind is bool and lower in ("true", "false"):
            return lower == "true"
        if kind in (int, float):
            try:
                value = kind(text)
            except ValueError:
                continue
            if not np.isfinite(value):
                raise AgentSpecError(f"agent {name!r}: option {key} must be finite, "
                                     f"got {text!r}")
            return value
        if kind is str:
            return text
    wanted = " or ".join(_SPEC_TYPES[kind] for kind in kinds)
    raise AgentSpecError(f"agent {name!r}: option {key} must be {wanted}, got {text!r}")


def build_agent(spec: str) -> Agent:
    """The agent an agent spec names (``"mc:worlds=16,rollout=greedy"``), each option's
    value read as the type the agent's signature gives it (``ppo:checkpoint=2`` is the
    file ``"2"``, ``mc:worlds=abc`` an error).

    Raises:
        ValueError: a malformed spec, an unknown agent or option (the message lists the
            valid ones; an ``AgentSpecError``), a value of the wrong type, or the agent's
            own refusal.
    """
    name, items = _split_spec(spec)
    agent_options(name)  # an unknown name, before its options are read
    return make_agent(name, **{key: _read_option(name, key, text) for key, text in items})


def build_agents(specs: list[str]) -> dict[str, Agent]:
    """Every spec built once, by spec: what a command line checks before it writes anything.

    Raises:
        ValueError: the first spec that cannot be built, named with its problem on one
            line (an unknown option, a missing checkpoint file, a missing extra, ...).
    """
    made = {}
    for spec in dict.fromkeys(specs):
        try:
            made[spec] = build_agent(spec)
        except AgentSpecError:  # names the agent and the option already
            raise
        except Exception as error:  # whatever the factory raises: one line naming the spec
            text = " ".join(str(error).split()) or type(error).__name__
            raise ValueError(f"agent {spec!r}: {text}") from error
    return made


def check_observation(observations: dict[str, np.ndarray], mask: np.ndarray) -> np.ndarray:
    """(B, D) float32 observations of a batch whose checked mask is ``mask`` (B, 70): the
    layout's width D (``smoor_env.observation.OBSERVATION_SIZE``), finite values; an int8
    (compact) observation is scaled back to the float one (``compact_scale``).

    Raises:
        ValueError: a missing observation, a wrong shape (width or rows), NaN or inf.
        TypeError: a dtype that is neither a float nor int8.
    """
    from smoor_env.observation import OBSERVATION_SIZE, compact_scale

    if "observation" not in observations:
        raise ValueError("observations must be a dict with an 'observation' entry")
    obs = np.asarray(observations["observation"])
    if obs.shape != (len(mask), OBSERVATION_SIZE):
        raise ValueError(f"observation must have shape (B, {OBSERVATION_SIZE}) with B = "
                         f"{len(mask)} (the action mask's rows), got {obs.shape}")
    if obs.dtype == np.int8:
        return obs * compact_scale()  # (B, D) float32
    if not np.issubdtype(obs.dtype, np.floating):
        raise TypeError(f"observation must be float or int8 (compact), got {obs.dtype}")
    obs = obs.astype(np.float32, copy=False)
    bad = ~np.isfinite(obs).all(axis=1)  # (B,)
    if bad.any():
        raise ValueError(f"observation holds NaN or inf in rows "
                         f"{np.flatnonzero(bad)[:10].tolist()}")
    return obs


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
    for key in ("observation", "games", "seats"):
        # (None: not built, for an agent that reads only the mask)
        value = observations.get(key)
        shape = (len(mask),) if value is None else np.shape(value)
        if not shape or shape[0] != len(mask):
            rows = shape[0] if shape else "no"
            raise ValueError(f"{key} holds {rows} rows and action_mask {len(mask)}: one row "
                             f"per game in each")
    if not mask.any(axis=1).all():
        games = np.flatnonzero(~mask.any(axis=1))[:10].tolist()
        raise ValueError(f"no legal action in games {games} (is the match over?)")
    return mask
