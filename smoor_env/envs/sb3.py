"""Stable-Baselines3 adapter: one batched engine as an SB3 ``VecEnv``.

``make_sb3_vec_env("smoor_env/Smoorverliefd-v1", 256, opponents="greedy")`` builds one
``SmoorVectorEnv`` (one engine for all ``num_envs`` games, not one object or process
per game) and presents it with SB3's conventions, so that SB3's algorithms and
sb3-contrib's ``MaskablePPO`` train on it unchanged:

* ``reset()`` returns the (N, 1128) observations; ``step(actions)`` returns
  observations, (N,) float32 rewards, (N,) bool dones and a list of N info dicts.
* Same-step autoreset: where an episode ends, the observation returned is the first
  one of the next episode, and that environment's info holds
  ``"terminal_observation"`` (the last observation of the ended episode),
  ``"TimeLimit.truncated"`` (always False: episodes end only by the rules or by an
  illegal action) and ``"illegal_action"``. The underlying env's ``restart`` starts
  the new episodes at once, in one batch.
* ``env_method("action_masks")`` returns the N legal masks (one (70,) bool row per
  environment), which is what sb3-contrib's ``get_action_masks`` reads;
  ``action_masks()`` returns them as one (N, 70) array.
* Seeding: ``seed(s)`` (as ``MaskablePPO(seed=s)`` calls it) seeds the whole batch with
  ``s`` at the next ``reset()``: the deals of every environment come from the stream of
  ``(rules, s)``, so one seed reproduces the run (the per-environment seeds ``s + i``
  SB3 returns are not used separately: the environments share one engine).
* ``get_attr`` reads attributes of the shared ``SmoorVectorEnv`` (``rules``,
  ``num_envs``, ...): the same value for every index; ``set_attr`` only adds new
  attributes, for all environments at once (the env's own are fixed at construction).
  ``env_method`` calls a method of the shared env once and hands each environment its
  row of the result (the method must return one row per environment; ``reset``,
  ``step``, ``restart`` and ``close`` are refused). ``step_async`` takes integer
  actions only. ``env_is_wrapped`` is False everywhere (there are no per-environment
  Gymnasium wrappers); ``monitor=True`` (the default) wraps the adapter in SB3's
  ``VecMonitor`` for episode returns and lengths in the logs.

Needs Stable-Baselines3 (the ``rl`` extra); ``import smoor_env`` never imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecMonitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvStepReturn

import smoor_env  # noqa: F401  (registers the environment ids)
from smoor_env.core.checks import ChangeGuard
from smoor_env.core.state import NUM_ACTIONS
from smoor_env.envs.gym_env import SmoorVectorEnv


def make_sb3_vec_env(env_id: str, num_envs: int, monitor: bool = True,
                     **kwargs: Any) -> VecEnv:
    """An SB3 ``VecEnv`` of ``num_envs`` games in one batched engine.

    Args:
        env_id: ``"smoor_env/Smoorverliefd-v1"`` or ``"smoor_env/Hearts-v1"``.
        num_envs: the number of environments (games in the engine's batch).
        monitor: wrap the adapter in SB3's ``VecMonitor`` (episode returns in the logs).
        kwargs: ``SmoorVectorEnv`` arguments: rules fields (``num_players=3``),
            ``opponents``, ``learner_seat``, ``reward_mode``, ``illegal_action``,
            ``num_workers`` (the games over k processes, the same results for every k),
            ``obs_dtype``, ...

    Returns:
        ``SB3VecEnv`` (in a ``VecMonitor`` if ``monitor``).
    """
    if "copy" in kwargs:
        raise ValueError("make_sb3_vec_env always copies the observations (SB3 keeps the "
                         "previous step's array until after the next step); drop 'copy'")
    vector_env = gym.make_vec(env_id, num_envs=num_envs,
                              vectorization_mode="vector_entry_point", **kwargs)
    if not isinstance(vector_env, SmoorVectorEnv):
        raise ValueError(f"{env_id!r} is not a smoor_env environment id")
    adapter = SB3VecEnv(vector_env)
    return VecMonitor(adapter) if monitor else adapter


#: ``SmoorVectorEnv`` methods that ``env_method`` refuses: they change the shared env.
_CHANGING_METHODS = frozenset({"reset", "step", "restart", "close", "close_extras"})


class SB3VecEnv(VecEnv):
    """A ``SmoorVectorEnv`` with Stable-Baselines3's ``VecEnv`` interface (module docs)."""

    def __init__(self, vector_env: SmoorVectorEnv) -> None:
        if not vector_env.copy:
            raise ValueError("the SmoorVectorEnv must return copies (copy=True): SB3 keeps "
                             "the previous observations until after the next step")
        self.vector_env = vector_env
        super().__init__(vector_env.num_envs, vector_env.single_observation_space,
                         vector_env.single_action_space)
        self._actions: np.ndarray | None = None
        # A step cut short between the vector env's step and its restarts: reset() first.
        self._guard = ChangeGuard(type(self).__name__)

    def reset(self) -> np.ndarray:
        """(N, 1128) first observations; seeded by ``seed()`` if it was called since."""
        if any(self._options):
            raise ValueError(f"SmoorVectorEnv takes no reset options, got {self._options}")
        seed = self._seeds[0]
        with self._guard.changing("reset()"):
            observations, info = self.vector_env.reset(seed=seed)
            self.reset_infos = [{} for _ in range(self.num_envs)]
            self._reset_seeds()
            self._reset_options()
            return observations

    def step_async(self, actions: np.ndarray) -> None:
        """Take the (N,) integer actions (an (N, 1) array too, as some policies give);
        anything else (floats, bools, strings, another count) is refused here."""
        actions = np.asarray(actions)
        if actions.dtype.kind not in "iu" or actions.dtype == np.bool_:
            raise ValueError(f"actions must be integers (action ids 0..{NUM_ACTIONS - 1}), "
                             f"got dtype {actions.dtype}")
        if actions.shape not in ((self.num_envs,), (self.num_envs, 1)):
            raise ValueError(f"actions must have shape ({self.num_envs},), got "
                             f"{actions.shape}")
        self._actions = actions.reshape(self.num_envs).astype(np.int64)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise ValueError("step_wait() without step_async(actions)")
        actions, self._actions = self._actions, None
        self._guard.check("step_wait()")
        with self._guard.changing("step_wait()", unchanged=(ValueError,)):
            # (a ValueError: the vector env refused the actions before any change)
            return self._step(actions)

    def _step(self, actions: np.ndarray) -> VecEnvStepReturn:
        observations, rewards, terminated, truncated, info = self.vector_env.step(actions)
        dones = terminated | truncated  # (N,) bool
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        ended = np.flatnonzero(dones)  # (K,)
        if len(ended):
            final = observations[ended]  # (K, 1128) copies, before the restart
            observations[ended] = self.vector_env.restart(ended)
            for row, game in enumerate(ended.tolist()):
                infos[game] = {"terminal_observation": final[row],
                               "TimeLimit.truncated": bool(truncated[game]
                                                           and not terminated[game]),
                               "illegal_action": bool(info["illegal_action"][game])}
        return observations, rewards.astype(np.float32, copy=False), dones, infos

    def action_masks(self) -> np.ndarray:
        """(N, 70) bool legal actions of the learner in every environment."""
        return self.vector_env.action_masks()

    def close(self) -> None:
        self.vector_env.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The shared env's attribute, once per index (``render_mode`` is None if absent)."""
        value = getattr(self.vector_env, attr_name)
        return [value] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the shared env; only for all environments at once, and only
        one the env does not define itself (its rules, sizes, spaces and state are fixed
        at construction: make a new environment to change them)."""
        if hasattr(self.vector_env, attr_name):
            raise ValueError(f"set_attr({attr_name!r}): the SmoorVectorEnv's {attr_name} is "
                             f"fixed at construction; make a new environment to change it")
        if len(self._indices(indices)) != self.num_envs:
            raise ValueError(f"the {self.num_envs} environments share one SmoorVectorEnv: "
                             f"set_attr({attr_name!r}) can only set it for all of them")
        setattr(self.vector_env, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        """Call a method of the shared env that returns one row per environment (such as
        ``action_masks``) once; each environment gets its row. Methods that change the
        env (``reset``, ``step``, ``restart``, ``close``) are refused before they act:
        call the VecEnv's own ``reset()``, ``step()`` and ``close()``."""
        if method_name in _CHANGING_METHODS:
            raise ValueError(f"env_method({method_name!r}) would change the shared env; use "
                             f"the VecEnv's own reset(), step() or close()")
        self._indices(indices)
        result = getattr(self.vector_env, method_name)(*method_args, **method_kwargs)
        if not (isinstance(result, np.ndarray) and result.ndim >= 1
                and len(result) == self.num_envs):
            raise ValueError(f"env_method({method_name!r}) needs a method that returns one row "
                             f"per environment ({self.num_envs}); it returned "
                             f"{type(result).__name__}")
        return list(result[self._indices(indices)])

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper],
                       indices: VecEnvIndices = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def _indices(self, indices: VecEnvIndices) -> np.ndarray:
        """(K,) environment indices from SB3's ``None`` / int / sequence convention."""
        if indices is None:
            return np.arange(self.num_envs)
        if isinstance(indices, int | np.integer):
            indices = [int(indices)]
        rows = np.asarray(list(indices) if isinstance(indices, Sequence | range) else indices,
                          np.int64)
        if rows.ndim != 1 or ((rows < 0) | (rows >= self.num_envs)).any():
            raise ValueError(f"indices must be 0..{self.num_envs - 1}, got {indices}")
        return rows
