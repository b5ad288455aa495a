"""Gymnasium environments: one learning seat against batched opponent agents.

* ``SmoorEnv`` (``gymnasium.make("smoor_env/Smoorverliefd-v1")`` or
  ``"smoor_env/Hearts-v1"``): one match; the learner plays ``learner_seat`` and
  the other seats are played by opponent agents (objects with the agent
  protocol, played by ``smoor_env.envs.agent_loop.AgentLoop``). ``gymnasium.make`` also takes
  agent names (``opponents="greedy"``, random by default): its entry points,
  ``agents.env_factories``, resolve them with ``agents.make_agent``, so that this
  library does not depend on the baseline agents built on it.
  The rules are keyword arguments (``gymnasium.make(..., num_players=3,
  bidding=True)``). ``action_masks()`` returns the legal mask as sb3-contrib's
  ``MaskablePPO`` expects; ``info["action_mask"]`` holds it too.
* ``SmoorVectorEnv`` (``gymnasium.make_vec(..., vectorization_mode=
  "vector_entry_point")``): ``num_envs`` matches in one batched engine; the
  opponents act for all sub-environments at once. Autoreset mode ``NEXT_STEP``
  (declared in ``metadata["autoreset_mode"]``): the step after a match ends
  resets that sub-environment, ignores its action and returns its first
  observation with reward 0. The legal masks are ``infos["action_mask"]`` (N, 70).
  A mask is never empty: where a sub-environment has just ended (terminated, the
  next step restarts it and ignores its action) it allows exactly one action,
  ``RESTART_ACTION`` (0), so a sampler can draw from it and a policy has a single
  choice there (log-probability 0, no gradient). ``restart(games)`` restarts
  chosen sub-environments at once instead (the same-step autoreset of
  ``smoor_env.envs.sb3``, the Stable-Baselines3 adapter).
  ``num_workers=k`` splits the sub-environments over k processes (this one and
  k-1 workers) writing into shared memory (``smoor_env.envs.workers``), with the same
  results for every k;
  ``obs_dtype="int8"`` gives compact observations (``smoor_env.observation``).

Observations are the learner's ``observation`` vector (see
``smoor_env.observation``); rewards are the learner's rewards (see
``smoor_env.envs.reward``); an episode is a whole match.

Illegal actions follow PettingZoo's convention for classic games: the episode
ends (``terminated``) with ``illegal_reward`` (default -1) for the learner,
``info["illegal_action"]`` is True and the game is left as it was;
``illegal_action="raise"`` raises ``ValueError`` instead.

Errors: ``step`` before ``reset`` (or, in ``SmoorEnv``, after the episode ended)
raises ``RuntimeError``; an action that is not an int 0..69 raises ``TypeError``
(float, string, bool, None) or ``ValueError`` (out of range; in the vector env a
wrong shape or dtype); ``reset`` takes a seed in 0..2**64 - 1 and only the
documented options. A call that raises changes nothing: the games, the
environment's generators and the opponents' generator are as before.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from smoor_env.core.checks import (
    ChangeGuard,
    check_action,
    check_batch_size,
    check_count,
    check_seed,
    int_array,
    is_int,
    reset_options,
)
from smoor_env.core.engine import Engine
from smoor_env.core.rules import Rules
from smoor_env.core.state import NUM_ACTIONS
from smoor_env.core.streams import GameStreams
from smoor_env.envs.agent_loop import AgentLoop, Randomness
from smoor_env.envs.reward import Rewards
from smoor_env.envs.workers import WorkerError, WorkerPool, shared_space
from smoor_env.observation import (
    OBSERVATION_SIZE,
    ObservationTracker,
    observation_bounds,
    observation_dtype,
)
from smoor_env.render import render_rgb, render_text

#: The one action a finished episode's mask allows (a placeholder: it is never played).
RESTART_ACTION = 0


def observation_space(rules: Rules, dtype: str | np.dtype | type = "float32") -> spaces.Box:
    """The (OBSERVATION_SIZE,) space of one seat's observations under ``rules`` in
    ``dtype`` (float32, or int8 compact steps): every block's real bounds
    (``smoor_env.observation.observation_bounds``)."""
    low, high = observation_bounds(rules, dtype)
    return spaces.Box(low, high, (OBSERVATION_SIZE,), low.dtype)


ACTION_SPACE = spaces.Discrete(NUM_ACTIONS)


def _never_empty(mask: np.ndarray, ended: np.ndarray) -> np.ndarray:
    """(B, 70) ``mask`` with the rows of ``ended`` ((B,) bool) set to allow only
    ``RESTART_ACTION``: a finished game has no legal action, and an empty mask would
    make a sampler fail. Edits ``mask`` in place (a fresh array) and returns it."""
    if ended.any():
        mask[ended] = False
        mask[ended, RESTART_ACTION] = True
    return mask


def _rules(rules: Rules | None, options: dict[str, Any]) -> Rules:
    if rules is not None and not isinstance(rules, Rules):
        raise TypeError(f"rules must be a smoor_env.Rules or None (rule options go as keyword "
                        f"arguments, e.g. game='hearts'), got {type(rules).__name__} {rules!r}")
    if rules is None:
        return Rules(**options)
    return rules.replace(**options) if options else rules


def _seating(opponents: Any, rules: Rules, learner_seat: int) -> tuple[list, np.ndarray]:
    """The distinct opponent agents and the (P,) seating of an ``AgentLoop`` (-1: the learner),
    from one agent for every other seat or a sequence of one per other seat."""
    if not is_int(learner_seat) or not 0 <= learner_seat < rules.num_players:
        raise ValueError(f"learner_seat must be a seat 0..{rules.num_players - 1}, "
                         f"got {learner_seat}")
    seats = [s for s in range(rules.num_players) if s != learner_seat]
    if opponents is None:
        raise TypeError("opponents are required: an agent for every other seat, or one per "
                        "other seat (agents.make_agent('random'), ...); gymnasium.make takes "
                        "names and defaults to random opponents")
    if isinstance(opponents, str) or (isinstance(opponents, Sequence)
                                      and any(isinstance(a, str) for a in opponents)):
        raise TypeError(f"opponents must be agent objects, got {opponents!r}: make them with "
                        f"agents.make_agent(name), or give names to gymnasium.make, whose "
                        f"entry points (agents.env_factories) resolve them")
    if not isinstance(opponents, Sequence):
        opponents = [opponents] * len(seats)
    if len(opponents) != len(seats):
        raise ValueError(f"opponents must name one agent for each of the {len(seats)} other "
                         f"seats {seats}, got {len(opponents)}")
    agents = list({id(agent): agent for agent in opponents}.values())  # distinct, seat order
    seating = np.full(rules.num_players, -1)
    for seat, agent in zip(seats, opponents, strict=True):
        seating[seat] = next(i for i, a in enumerate(agents) if a is agent)
    return agents, seating


class _Match:
    """The loop both environments share: the learner acts, then the opponents until its turn."""

    def __init__(self, engine: Engine, learner_seat: int, opponents: Any,
                 reward_mode: str, illegal_action: str, illegal_reward: float,
                 obs_dtype: str = "float32", obs_out: np.ndarray | None = None) -> None:
        if illegal_action not in ("end", "raise"):
            raise ValueError(f"illegal_action must be 'end' or 'raise', got {illegal_action!r}")
        self.illegal_action = illegal_action
        self.illegal_reward = float(illegal_reward)
        self.engine = engine
        self.agent_loop = AgentLoop(engine, *_seating(opponents, engine.rules, learner_seat))
        self.seat = int(learner_seat)
        # The learner's observation in every game, updated as the engine steps.
        self.tracker = ObservationTracker(engine, np.full(engine.batch_size, learner_seat),
                                          dtype=obs_dtype, out=obs_out)
        self.rewards = Rewards(engine, reward_mode)
        self.rng: Randomness = np.random.default_rng()

    def advance(self, actions: np.ndarray | None,
                active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Learner's actions in the ``active`` games, then opponents until the learner is to act.

        Returns:
            (B,) float32 learner's rewards over all these steps, and (B,) bool games
            whose learner action was illegal (they did not move; see the module docs).
        """
        engine = self.engine
        total = np.zeros(engine.batch_size, np.float32)
        illegal = np.zeros(engine.batch_size, bool)

        def step(moves: np.ndarray, acting: np.ndarray) -> None:
            tricks = self.rewards.tricks()
            self.tracker.step(moves, active=acting)
            total[:] += self.rewards.after_step(tricks)[:, self.seat]

        if actions is not None:
            illegal = active & ~engine.is_legal(actions)  # (B,)  (``check``: "raise")
            if illegal.any() and self.illegal_action == "raise":
                engine.step(actions, active=active)  # raises, naming game, seat and action
            if (active & ~illegal).any():
                step(np.where(illegal, 0, actions), active & ~illegal)
            total[illegal] = self.illegal_reward
        # The opponents play until the learner is to act (a game whose learner action was
        # illegal did not move: the learner is still to act there).
        self.agent_loop.play(self.rng, step)
        return total, illegal

    def check(self, actions: np.ndarray, active: np.ndarray) -> None:
        """With ``illegal_action="raise"``, raise (naming game, seat and action) if an
        ``active`` game's action is illegal, before anything changes."""
        if self.illegal_action == "raise" and (active & ~self.engine.is_legal(actions)).any():
            self.engine.step(actions, active=active)  # raises, changing nothing

    def reset(self, seed: int, **kwargs: Any) -> None:
        """Start matches (``Engine.reset`` arguments) and forget their rewards."""
        self.tracker.reset(seed, **kwargs)
        self.rewards.reset(kwargs.get("games", slice(None)))

    def observation(self, copy: bool = True) -> np.ndarray:
        """(B, OBSERVATION_SIZE) the learner's observations; if not copy, a read-only view
        of the tracker's array (the tracker patches it in place, so it must not be edited)."""
        if copy:
            return self.tracker.out.copy()
        view = self.tracker.out.view()
        view.flags.writeable = False
        return view


class SmoorEnv(gym.Env):
    """Single-agent Smoorverliefd or Hearts: the learner's seat against opponent agents.

    Args:
        rules: the rules (default ``Rules()``); keyword ``rule_options`` override fields.
        learner_seat: the seat the learner plays.
        opponents: an agent (an object with the agent protocol, ``agents.base.Agent``)
            for every other seat, or a sequence of one per other seat in seat order.
            Names (``"greedy"``) are resolved by ``agents.make_agent``; the gymnasium ids'
            entry points (``agents.env_factories``) do that and default to ``"random"``.
        reward_mode: ``"round"`` or ``"trick"`` (see ``smoor_env.envs.reward``).
        render_mode: ``None``, ``"ansi"`` (text), ``"rgb_array"`` ((500, 800, 3) uint8
            picture, for ``gymnasium.wrappers.RecordVideo``) or ``"human"`` (prints text);
            all show the learner's hand.
        illegal_action: ``"end"`` (end the episode with ``illegal_reward``) or ``"raise"``.
        illegal_reward: the learner's reward for an illegal action.
    """

    metadata = {"render_modes": ["human", "ansi", "rgb_array"], "render_fps": 1}

    def __init__(self, rules: Rules | None = None, learner_seat: int = 0,
                 opponents: Any = None, reward_mode: str = "round",
                 render_mode: str | None = None, illegal_action: str = "end",
                 illegal_reward: float = -1.0, **rule_options: Any) -> None:
        self.rules = _rules(rules, rule_options)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.observation_space = observation_space(self.rules)
        self.action_space = ACTION_SPACE
        self.engine = Engine(self.rules, 1)
        self._match = _Match(self.engine, learner_seat, opponents, reward_mode,
                             illegal_action, illegal_reward)
        self._all = np.ones(1, bool)
        self._ended = True  # reset() first
        self._guard = ChangeGuard(type(self).__name__)  # a step cut short: reset() first

    def reset(self, *, seed: int | None = None,
              options: dict | None = None) -> tuple[np.ndarray, dict]:
        """Start a match. ``options``: ``{"deal": [[card texts] per seat], "dealer": int}``
        (both optional) fix the first round's deal and dealer."""
        options = reset_options(options, ("deal", "dealer"))
        # Gymnasium's Env.reset(seed) reseeds at once; here the new generators are made
        # aside and kept only once the engine has accepted the deal and dealer.
        if seed is None:
            np_random, np_random_seed = copy.deepcopy(self.np_random), self._np_random_seed
        else:
            np_random, np_random_seed = seeding.np_random(check_seed(seed))
        opponents_rng = np.random.default_rng(np_random.integers(2**63))
        deal, dealer = options.get("deal"), options.get("dealer")
        start = {"hands": None if deal is None else [deal],
                 "dealers": None if dealer is None else [dealer]}
        engine_seed = int(np_random.integers(2**63))
        self.engine.check_reset(engine_seed, **start)  # a bad deal or dealer: no change
        with self._guard.changing("reset()"):
            self._match.reset(engine_seed, **start)
            self._np_random, self._np_random_seed = np_random, np_random_seed
            self._match.rng = opponents_rng
            self._match.advance(None, self._all)  # opponents before the learner's first turn
            self._ended = False
            return self._match.observation()[0], self._info(False)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._guard.check("step()")
        if self._ended:
            raise RuntimeError("the episode is over (or not started); call reset()")
        actions = np.array([check_action(action, "step")])
        self._match.check(actions, self._all)
        with self._guard.changing("step()"):
            reward, illegal = self._match.advance(actions, self._all)
            self._ended = terminated = bool(self.engine.state.match_over[0] or illegal[0])
            if self.render_mode == "human":
                self._render()
            return (self._match.observation()[0], float(reward[0]), terminated, False,
                    self._info(bool(illegal[0])))

    def action_masks(self) -> np.ndarray:
        """(70,) bool legal actions of the learner; once the episode is over, only
        ``RESTART_ACTION`` (never empty; ``step`` then asks for ``reset()``)."""
        self._guard.check("action_masks()")
        return self._masks()

    def _masks(self) -> np.ndarray:
        return _never_empty(self.engine.legal_mask, np.array([self._ended]))[0]

    def _info(self, illegal: bool) -> dict:
        return {"action_mask": self._masks(), "illegal_action": illegal}

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            return None
        self._guard.check("render()")
        return self._render()

    def _render(self) -> str | np.ndarray | None:
        if self.render_mode == "rgb_array":
            return render_rgb(self.engine, 0, observer=self._match.seat)
        text = render_text(self.engine, 0, observer=self._match.seat)
        if self.render_mode == "human":
            print(text + "\n")
            return None
        return text


class _Block:
    """Sub-environments ``first .. first + count - 1`` of a vector environment of
    ``num_envs``: one batched engine, its opponents, the learner's observations and the
    ``NEXT_STEP`` autoreset. ``SmoorVectorEnv`` runs one block of every sub-environment,
    or one block in each worker process (``smoor_env.envs.workers``).

    Sub-environment i's e-th match is game id ``i + e * num_envs`` of the seed, and its
    opponents draw from that game's own stream (``smoor_env.core.streams``), so that what
    happens in sub-environment i does not depend on the block it runs in.
    """

    def __init__(self, num_envs: int, first: int, count: int,
                 obs_out: np.ndarray | None = None, *, rules: Rules, learner_seat: int,
                 opponents: Any, reward_mode: str, illegal_action: str, illegal_reward: float,
                 obs_dtype: str) -> None:
        self.num_envs, self.first = num_envs, first
        self.engine = Engine(rules, count)
        self.match = _Match(self.engine, learner_seat, opponents, reward_mode, illegal_action,
                            illegal_reward, obs_dtype, obs_out)
        self.seed = 0
        self._seed_streams()
        self._episodes = np.zeros(count, np.int64)  # (n,) matches each has started
        self.needs_reset = np.zeros(count, bool)  # (n,) ended: the next step restarts it

    def _seed_streams(self) -> None:
        # Draws that are not one per game (see smoor_env.core.streams) come from (seed, first).
        fallback = np.random.PCG64(np.random.SeedSequence([self.seed, self.first]))
        self.match.rng = GameStreams(self.engine, fallback)

    def reset(self, seed: int | None) -> None:
        """Every sub-environment starts a match (from its first game id if ``seed`` is
        given, else the next), and the opponents play up to the learner's first turn."""
        if seed is not None:
            self.seed = int(seed)
            self._episodes[:] = 0
            self._seed_streams()
        self.start(np.arange(self.engine.batch_size))
        self.match.advance(None, np.ones(self.engine.batch_size, bool))

    def start(self, games: np.ndarray) -> None:
        """(Re)start the matches of ``games`` (local indices), each with its next game id."""
        ids = self.first + games + self._episodes[games] * self.num_envs
        self._episodes[games] += 1
        self.match.reset(self.seed, game_ids=ids, games=games)
        self.match.rng.restart(games)
        self.needs_reset[games] = False

    def check(self, actions: np.ndarray) -> None:
        """With ``illegal_action="raise"``, raise before anything changes (and before any
        autoreset) if a game that acts has an illegal action."""
        self.match.check(actions, ~self.needs_reset & ~self.engine.state.match_over)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One learner step (its actions ``check``-ed); returns (n,) float32 rewards,
        (n,) bool terminated and (n,) bool illegal actions."""
        resetting = self.needs_reset.copy()
        if resetting.any():  # NEXT_STEP autoreset: these games ignore their action
            self.start(np.flatnonzero(resetting))
        # The learner acts where it did not just restart; then every game's opponents
        # (restarted ones included) play until the learner is to act again.
        rewards, illegal = self.match.advance(np.where(resetting, 0, actions), ~resetting)
        rewards[resetting] = 0.0
        terminated = self.engine.state.match_over | illegal
        self.needs_reset = terminated.copy()
        return rewards, terminated, illegal

    def restart(self, chosen: np.ndarray) -> None:
        """Restart the matches of the (n,) bool ``chosen`` games now (see
        ``SmoorVectorEnv.restart``); the opponents play up to the learner's turn."""
        self.start(np.flatnonzero(chosen))
        self.match.advance(None, chosen)

    def observations(self) -> np.ndarray:
        """(n, OBSERVATION_SIZE) the tracker's own array, every row up to date."""
        return self.match.tracker.out

    def masks(self) -> np.ndarray:
        """(n, 70) bool legal actions of the learner (never empty: see the module docs)."""
        return _never_empty(self.engine.legal_mask, self.needs_reset)


class SmoorVectorEnv(VectorEnv):
    """``num_envs`` matches in one batched engine, or split over worker processes; see
    the module docstring.

    Args:
        num_envs: the number of sub-environments (games in the engine's batch).
        rules, learner_seat, opponents, reward_mode, rule_options: as for ``SmoorEnv``.
        copy: as in Gymnasium's ``SyncVectorEnv``: if True (the default), ``reset`` and
            ``step`` return a new observation array; if False, a read-only view of the
            environment's own array (with workers: the shared memory they write), which
            the next step updates in place (saves a copy of N x 1128 values per step when
            the caller copies it into its rollout buffer anyway).
        obs_dtype: ``"float32"`` (default) or ``"int8"``: compact observations, a quarter
            of the bytes, with the scaling of ``smoor_env.observation`` (multiply by
            ``observation.compact_scale()`` to get the float32 values back).
        num_workers: k processes stepping games (``smoor_env.envs.workers``): this one and
            k-1 worker processes, each stepping about N / k of the sub-environments in
            its own engine with its own copy of the opponents, writing observations,
            masks and rewards into shared memory. 1 (the default): everything in this
            process, no shared memory. The results are the same for every k (each
            sub-environment's games and opponents' random draws come from its own
            streams), except for opponents that draw other than one uniform row per game
            (Monte Carlo's worlds: see ``smoor_env.core.streams``). With k > 1, ``engine``
            is None (each block has its own), and every block, this process's too,
            plays a copy of the opponents made at construction: later changes to them
            here do not reach it.
        context: the workers' ``multiprocessing`` start method (default: the platform's).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, rules: Rules | None = None, learner_seat: int = 0,
                 opponents: Any = None, reward_mode: str = "round",
                 illegal_action: str = "end", illegal_reward: float = -1.0,
                 copy: bool = True, obs_dtype: str = "float32", num_workers: int = 1,
                 context: str | None = None, **rule_options: Any) -> None:
        self.rules = _rules(rules, rule_options)
        self.num_envs = check_batch_size(num_envs, "num_envs")
        self.copy = bool(copy)
        self.num_workers = check_count(num_workers, "num_workers")
        if self.num_workers > self.num_envs:
            raise ValueError(f"num_workers must be 1..num_envs ({self.num_envs}), got "
                             f"{num_workers}")
        dtype = observation_dtype(obs_dtype)
        self.single_observation_space = observation_space(self.rules, dtype)
        self.single_action_space = ACTION_SPACE
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(ACTION_SPACE, self.num_envs)
        self.illegal_action = illegal_action
        make_block = functools.partial(
            _Block, self.num_envs, rules=self.rules, learner_seat=learner_seat,
            opponents=opponents, reward_mode=reward_mode, illegal_action=illegal_action,
            illegal_reward=illegal_reward, obs_dtype=dtype.name)
        self._pool: WorkerPool | None = None
        if self.num_workers == 1:
            self._block: _Block | None = make_block(0, self.num_envs)
            self.engine: Engine | None = self._block.engine
        else:
            _Match(Engine(self.rules, 1), learner_seat, opponents, reward_mode,
                   illegal_action, illegal_reward)  # bad arguments raise here, not in a worker
            self._block = self.engine = None
            self._pool = WorkerPool(self.num_envs, self.num_workers,
                                    shared_space(self.single_observation_space, NUM_ACTIONS),
                                    make_block, context)
        self._ended = np.zeros(self.num_envs, bool)  # (N,) the next step restarts it
        self._started = False  # reset() has been called
        self._guard = ChangeGuard(type(self).__name__)  # a step cut short: reset() first

    def reset(self, *, seed: int | None = None,
              options: dict | None = None) -> tuple[np.ndarray, dict]:
        """Start a match in every sub-environment. No options are taken: every match is
        dealt from the seed's stream, each with the next game id."""
        self._require_open("reset()")
        reset_options(options, ())
        if seed is not None:
            seed = check_seed(seed)  # a Python int (Gymnasium's spaces take no numpy ints)
        with self._guard.changing("reset()"):
            if seed is not None:
                self.action_space.seed(seed)
            if self._pool is None:
                self._block.reset(seed)
            else:
                self._pool.run("reset", seed)
            self._ended[:] = False
            self._started = True
            return self._outputs(None)[0], self._info(np.zeros(self.num_envs, bool))

    def _require_open(self, call: str) -> None:
        """Raise unless the environment is open (not closed)."""
        if self.closed:
            raise RuntimeError(f"{call} after close(); make a new environment")
        if self._pool is not None and self._pool.closed:
            raise WorkerError(f"{call}: the workers are closed (after a worker's failure); "
                              f"make a new environment")

    def _require_started(self, call: str) -> None:
        """Raise unless the environment is open, reset, and no change was cut short."""
        self._require_open(call)
        if not self._started:
            raise RuntimeError(f"{call} before the first reset(); call reset() first")
        self._guard.check(call)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                  np.ndarray, dict]:
        self._require_started("step()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {actions.shape}")
        if actions.dtype.kind not in "iu":
            raise ValueError(f"actions must be integers, got dtype {actions.dtype}")
        if ((actions < 0) | (actions >= NUM_ACTIONS)).any():
            raise ValueError(f"actions must be ids 0..{NUM_ACTIONS - 1}, got "
                             f"{actions[(actions < 0) | (actions >= NUM_ACTIONS)][:10].tolist()}")
        if self._pool is None:
            self._block.check(actions)
        else:
            self._check_before_workers(actions)
        with self._guard.changing("step()"):
            if self._pool is None:
                results = self._block.step(actions)
            else:
                self._pool.arrays["action"][:] = actions
                self._pool.run("step")
                results = None
            obs, rewards, terminated, illegal = self._outputs(results)
            self._ended = terminated.copy()
            truncated = np.zeros(self.num_envs, bool)
            return obs, rewards, terminated, truncated, self._info(illegal)

    def _check_before_workers(self, actions: np.ndarray) -> None:
        """With ``illegal_action="raise"``, raise here (naming the games) before any worker
        moves, so that the environment is left unchanged, as with one process."""
        if self.illegal_action != "raise":
            return
        acting = ~self._ended  # (N,) games that play their action (the others restart)
        inside = (actions >= 0) & (actions < NUM_ACTIONS)  # (N,)
        legal = inside & self._pool.arrays["action_mask"][
            np.arange(self.num_envs), np.clip(actions, 0, NUM_ACTIONS - 1)]
        bad = np.flatnonzero(acting & ~legal)
        if len(bad):
            game = int(bad[0])
            raise ValueError(f"illegal actions in games {bad[:10].tolist()}: "
                             f"{actions[bad[:10]].tolist()}; legal in game {game}: "
                             f"{np.flatnonzero(self._pool.arrays['action_mask'][game]).tolist()}")

    def _outputs(self, results: tuple | None) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         np.ndarray]:
        """(N, D) observations (a copy, or a read-only view if not ``copy``), (N,) float32
        rewards, (N,) bool terminated and illegal, from the block or the shared arrays."""
        if self._pool is None:
            obs = self._block.observations()
            if results is None:
                results = (np.zeros(self.num_envs, np.float32),
                           np.zeros(self.num_envs, bool), np.zeros(self.num_envs, bool))
        else:
            shared = self._pool.arrays
            obs = shared["observation"]
            results = tuple(shared[name].copy() for name in
                            ("reward", "terminated", "illegal_action"))
        if self.copy:
            obs = obs.copy()
        else:
            obs = obs.view()
            obs.flags.writeable = False
        return (obs, *results)

    def restart(self, games: np.ndarray) -> np.ndarray:
        """Restart the matches of ``games`` ((K,) int indices) now, not on the next step.

        Fresh deals from the seed's stream; the opponents play up to the learner's first
        turn. This is the same-step autoreset that Stable-Baselines3 expects
        (``smoor_env.envs.sb3``); the other games are left as they are.

        Returns:
            (K, OBSERVATION_SIZE) the learner's first observations in ``games``.
        """
        self._require_started("restart()")
        games = int_array(games, "games", (None,), 0, self.num_envs - 1, np.int64)  # (K,)
        if len(np.unique(games)) != len(games):
            raise ValueError(f"games must be distinct indices 0..{self.num_envs - 1}, got "
                             f"{games.tolist()}")
        chosen = np.zeros(self.num_envs, bool)  # (N,)
        chosen[games] = True
        with self._guard.changing("restart()"):
            self._ended[games] = False
            if self._pool is None:
                self._block.restart(chosen)
                return self._block.observations()[games]
            self._pool.arrays["restart"][:] = chosen
            self._pool.run("restart")
            return self._pool.arrays["observation"][games]

    def _info(self, illegal: np.ndarray) -> dict:
        return {"action_mask": self._masks(), "illegal_action": illegal}

    def action_masks(self) -> np.ndarray:
        """(N, 70) bool legal actions of the learner in each sub-environment; where the
        episode has just ended, only ``RESTART_ACTION`` (the module docstring says why)."""
        self._require_started("action_masks()")
        return self._masks()

    def _masks(self) -> np.ndarray:
        if self._pool is None:
            return self._block.masks()
        return self._pool.arrays["action_mask"].copy()

    def close_extras(self, **kwargs: Any) -> None:
        """Stop the worker processes (if any) and join them."""
        if self._pool is not None:
            self._pool.close()

    def __del__(self) -> None:
        if getattr(self, "_pool", None) is not None:
            self._pool.close()
