"""Batched self-play: every seat of every game is a learner, in the manner of Pgx.

``SelfPlayVectorEnv(num_envs, rules)`` steps ``num_envs`` matches in one batched engine.
After ``reset`` and after every ``step`` it gives, for every game, the seat to act
(``info["seat"]``), that seat's observation and its legal mask; ``step(actions)`` plays
one action per game for that seat, and returns the rewards of every seat:

    env = SelfPlayVectorEnv(1024, preset("hearts"))
    obs, info = env.reset(seed=0)                     # (N, 1128), {"seat": (N,), ...}
    while training:
        actions = policy(obs, info["action_mask"])    # one policy for every seat
        obs, rewards, terminated, truncated, info = env.step(actions)  # rewards (N, P)

* Episodes are matches (a single round when ``target_score`` is None); rewards are
  ``reward_mode``'s (``smoor_env.envs.reward``): each seat's round points (Hearts: minus
  its penalty points) at the end of each round, or per trick.
* Autoreset is Gymnasium's ``NEXT_STEP`` (as ``SmoorVectorEnv``): the step after a
  match ends ignores that game's action and starts its next match, whose first
  observation it returns, with zero rewards and ``terminated`` False. Where a match has
  just ended the mask holds only ``RESTART_ACTION`` (0), so that any masked policy
  picks an action the next step ignores.
* Game i's e-th match is game id ``i + e * num_envs`` of the seed: what happens in game
  i does not depend on the batch size.
* The observation of a game is the acting seat's own (``smoor_env.observation``), so no
  seat sees what it cannot know: every seat's is kept up to date step by step
  (``ObservationTracker``, as in the AEC env), and a step hands out the acting seat's.

Not a ``gymnasium.vector.VectorEnv``: its rewards are (N, P), one per seat, where a
VectorEnv's are (N,). A step or reset cut short (Ctrl-C) leaves the env refusing
every call but ``reset()`` (``smoor_env.core.checks.BrokenStateError``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from smoor_env.core.checks import ChangeGuard, check_batch_size, check_seed
from smoor_env.core.engine import Engine
from smoor_env.core.rules import Rules
from smoor_env.envs.gym_env import ACTION_SPACE, RESTART_ACTION, _rules, observation_space
from smoor_env.envs.reward import Rewards
from smoor_env.observation import ObservationTracker
from smoor_env.observation.layout import OBSERVATION_SIZE, observation_dtype


class SelfPlayVectorEnv:
    """``num_envs`` matches of ``rules`` where every seat is played by the caller.

    Args:
        num_envs: games in the engine's batch.
        rules: the rules (default ``Rules()``); keyword ``rule_options`` override fields.
        reward_mode: ``"round"`` or ``"trick"`` (``smoor_env.envs.reward``).
        obs_dtype: ``"float32"`` or ``"int8"`` (compact observations: see
            ``smoor_env.observation``).
        copy: return a new observation array each call (default); if False a read-only
            view of the env's own array, which the next call overwrites.
        all_seats: observations are (N, P, D), every seat's own observation of every game
            (row ``[g, info["seat"][g]]`` is the acting seat's), instead of (N, D) the
            acting seats' alone. With ``copy=False`` this is the tracker's own buffer,
            handed out without the per-step gather of the acting seats' rows (the
            fastest way to read observations: docs/results/speed.md); a learner indexes
            it itself, and must give each seat only its own row.
    """

    metadata = {"autoreset_mode": "NextStep"}

    def __init__(self, num_envs: int, rules: Rules | None = None, reward_mode: str = "round",
                 obs_dtype: str = "float32", copy: bool = True, all_seats: bool = False,
                 **rule_options: Any) -> None:
        self.rules = rules = _rules(rules, rule_options)
        self.num_envs = check_batch_size(num_envs, "num_envs")
        self.num_players = rules.num_players
        self.copy, self.all_seats = bool(copy), bool(all_seats)
        self.dtype = observation_dtype(obs_dtype)
        self.engine = Engine(rules, self.num_envs)
        self._rewards = Rewards(self.engine, reward_mode)
        # Every seat's observation of every game (row g * P + s), kept up to date step by
        # step; a step hands out the acting seat's rows.
        p = self.num_players
        self._tracker = ObservationTracker(self.engine, np.tile(np.arange(p), self.num_envs),
                                           np.repeat(np.arange(self.num_envs), p),
                                           dtype=self.dtype.name)
        self._row0 = np.arange(self.num_envs) * p  # (N,) row of seat 0 of each game
        self._obs = np.zeros((self.num_envs, OBSERVATION_SIZE), self.dtype)  # (N, D)
        self._episodes = np.zeros(self.num_envs, np.int64)  # (N,) matches each has begun
        self._ended = np.zeros(self.num_envs, bool)  # (N,) the next step restarts it
        self._games = np.arange(self.num_envs)
        self._seed = 0
        self._started = False
        self._guard = ChangeGuard(type(self).__name__)
        self.single_observation_space = observation_space(rules, self.dtype)
        self.single_action_space = ACTION_SPACE

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | None = None) -> tuple[np.ndarray, dict]:
        """Start a match in every game (from game id i with ``seed``, else each game's
        next); returns the acting seats' observations and ``info``."""
        if seed is not None:
            seed = check_seed(seed)
        with self._guard.changing("reset()"):
            if seed is not None:
                self._seed = seed
                self._episodes[:] = 0
            self._start(self._games)
            self._ended[:] = False
            self._started = True
            obs, *_, info = self._outputs(np.zeros(self.num_envs, bool))
            return obs, info

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                  np.ndarray, dict]:
        """Play each game's action for its acting seat (games whose match just ended
        ignore theirs and start the next match).

        Args:
            actions: (N,) integer action ids, legal for the acting seat.

        Returns:
            (N, D) observations of the seats to act next (``all_seats``: (N, P, D) every
            seat's), (N, P) float32 rewards of
            every seat, (N,) bool terminated (the match ended), (N,) bool truncated
            (always False) and ``info``: ``"seat"`` (N,) int64 the seats to act,
            ``"action_mask"`` (N, 70) bool their legal actions.

        Raises:
            ValueError: a wrong shape or type, or an illegal action (naming the game,
                seat and action, as the engine does); nothing changes then.
        """
        self._require_started("step()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or actions.dtype.kind not in "iu":
            raise ValueError(f"actions must be ({self.num_envs},) integers, got "
                             f"{actions.dtype} {actions.shape}")
        restarting = self._ended
        acting = ~restarting
        if acting.any() and not self.engine.is_legal(actions)[acting].all():
            self.engine.step(actions, active=acting)  # raises, naming game and action
        with self._guard.changing("step()"):
            rewards = np.zeros((self.num_envs, self.num_players), np.float32)
            if acting.any():
                tricks = self._rewards.tricks()
                self._tracker.step(actions, active=acting)
                rewards = self._rewards.after_step(tricks)
                rewards[restarting] = 0.0
            if restarting.any():
                self._start(np.flatnonzero(restarting))
            terminated = self.engine.state.match_over & acting
            self._ended = terminated.copy()
            return self._outputs(terminated, rewards)

    @property
    def seat(self) -> np.ndarray:
        """(N,) int64 the seat to act in each game."""
        return self.engine.state.current_player.astype(np.int64)

    def action_masks(self) -> np.ndarray:
        """(N, 70) bool legal actions of the acting seats (``RESTART_ACTION`` alone where
        a match has just ended)."""
        self._require_started("action_masks()")
        return self._masks()

    # ------------------------------------------------------------------ inside
    def _require_started(self, call: str) -> None:
        if not self._started:
            raise RuntimeError(f"{call} before the first reset(); call reset() first")
        self._guard.check(call)

    def _start(self, games: np.ndarray) -> None:
        """Begin the next match of ``games`` (indices), each its next game id."""
        ids = games + self._episodes[games] * self.num_envs
        self._episodes[games] += 1
        self._tracker.reset(self._seed, game_ids=ids, games=games)
        self._rewards.reset(games)

    def _masks(self) -> np.ndarray:
        mask = self.engine.legal_mask.copy()  # (N, 70)
        if self._ended.any():
            mask[self._ended] = False
            mask[self._ended, RESTART_ACTION] = True
        return mask

    def _outputs(self, terminated: np.ndarray, rewards: np.ndarray | None = None) -> tuple:
        """(observations, rewards, terminated, truncated, info) of the present state."""
        seat = self.seat
        if self.all_seats:  # the tracker's rows g * P + s, brought up to date by .out
            every = self._tracker.out.reshape(self.num_envs, self.num_players, -1)  # (N, P, D)
            obs = every.copy() if self.copy else every.view()
        else:
            np.take(self._tracker.out, self._row0 + seat, axis=0, out=self._obs)
            obs = self._obs.copy() if self.copy else self._obs.view()
        if not self.copy:
            obs.flags.writeable = False
        if rewards is None:
            rewards = np.zeros((self.num_envs, self.num_players), np.float32)
        info = {"seat": seat, "action_mask": self._masks()}
        return obs, rewards, terminated, np.zeros(self.num_envs, bool), info
