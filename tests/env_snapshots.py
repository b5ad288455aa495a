"""Snapshots of everything an environment or engine holds, to assert a call changed nothing.

``snapshot(x)`` turns an ``Engine``, ``raw_env`` (wrapped or not), ``SmoorEnv`` or
``SmoorVectorEnv`` into plain comparable values: every state array, the environment's
own fields (agent to act, rewards, records, flags) and the state of every random
generator it draws from (its own and the opponents').
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from smoor_env import Engine
from smoor_env.envs.aec_env import raw_env
from smoor_env.envs.gym_env import SmoorEnv, SmoorVectorEnv


def _plain(value: Any) -> Any:
    """A comparable copy: arrays become (dtype, shape, bytes); containers recursively."""
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.random.Generator):
        return _plain(value.bit_generator.state)
    return value


def state_of(engine: Engine) -> dict:
    state = engine.state
    arrays = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
    return _plain(arrays)


def snapshot(target: Any) -> dict:
    """Everything a failed call must leave as it was (see the module docstring)."""
    target = getattr(target, "unwrapped", target)
    if isinstance(target, Engine):
        return state_of(target)
    fields: dict[str, Any] = {"engine": state_of(target.engine)}
    if isinstance(target, raw_env):
        names = ("_rng", "_seed", "_started", "_records", "agents", "agent_selection",
                 "rewards", "_cumulative_rewards", "terminations", "truncations", "infos")
    elif isinstance(target, SmoorEnv):
        names = ("_np_random", "_np_random_seed", "_ended")
    else:
        assert isinstance(target, SmoorVectorEnv) and target.num_workers == 1
        names = ("_ended", "_started")
        block = target._block  # its games, with their ids, autoreset flags, streams
        streams = block.match.rng
        fields["block"] = _plain({"seed": block.seed, "episodes": block._episodes,
                                  "needs_reset": block.needs_reset, "drawn": streams.drawn,
                                  "keys": streams.keys, "fallback": streams.fallback.state})
    for name in names:
        fields[name] = _plain(target.__dict__.get(name))
    if isinstance(target, raw_env):
        fields["observation"] = _plain(target._tracker.out)
    elif isinstance(target, SmoorEnv):
        fields["opponents_rng"] = _plain(target._match.rng)
        fields["observation"] = _plain(target._match.tracker.out)
    else:
        fields["observation"] = _plain(target._block.match.tracker.out)
    return fields
