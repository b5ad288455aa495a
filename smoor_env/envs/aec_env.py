"""PettingZoo AEC environment: one Smoorverliefd or Hearts match, one seat acting at a time.

=====================  =====================================================
Import                 ``from smoor_env import env, raw_env``
Agents                 ``player_0`` .. ``player_{n-1}`` (the seats, clockwise)
Actions                ``Discrete(70)``: 0..51 card, 52..65 bid, 66..69 cursed suit
Observations           ``{"observation": float32 (1128,), "action_mask": int8 (70,)}``
Episode                one match (``Rules.target_score=None``: one round)
=====================  =====================================================

Observation space: see ``smoor_env.observation`` for the layout, block by
block (``observation_slices()`` names the slices). Seats in it are relative to
the observer, padded to 5, so one policy plays every seat and player count.

Legal actions mask: ``action_mask[a] == 1`` exactly for the legal actions of the
agent to act (all zeros for the others and once the match is over).

Action space: one id space for every phase — play a card or choose a card to
pass (Hearts, three single-card actions), bid 0..13 heart cards (Blinde
Liefde), name the cursed suit (Cupid's Arrow).

Rewards: at the end of every round each seat receives its round points
(Smoorverliefd; with partners the team's) or minus its penalty points (Hearts).
``reward_mode="trick"`` gives a denser signal: after every trick each seat
receives the change of its provisional round score (see
``scoring.provisional_points``), and the rest at the end of the round, so
a round's rewards add up to the same total.

Illegal actions: ``raw_env`` raises ``ValueError`` naming the action and the
legal ones, and changes nothing; ``env()`` adds PettingZoo's standard wrappers
for classic games (an illegal move ends the game with reward -1 for its player).

Reset options: ``{"deal": [[card texts] per seat], "dealer": int}`` plays the
given deal (and dealer) in the first round, for duplicate deals and replays
(other keys are ignored: PettingZoo's API test passes some).

Errors: a method called before ``reset`` raises ``RuntimeError`` ("call reset()
first"); an action that is not an int 0..69 raises ``TypeError`` (float, string,
bool, None for a live agent) or ``ValueError`` (out of range), in ``raw_env`` and
in ``env()`` alike; an unknown agent name is a ``ValueError``. A call that raises
changes nothing: a ``reset`` with a bad seed or option leaves the current match
and the random generator as they were.

Version history (``metadata["name"]``: ``smoorverliefd_v1`` / ``hearts_v1``):

* v1: the observation gained the ``card_trick`` block (1,128 values, was 1,076) and its
  space real bounds (``observation_bounds``, was -inf..inf); each game its own name.
* v0: the first release.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from smoor_env.core.checks import ChangeGuard, check_action, check_seed, reset_options
from smoor_env.core.engine import Engine
from smoor_env.core.rules import Rules
from smoor_env.core.state import NUM_ACTIONS
from smoor_env.envs.reward import Rewards
from smoor_env.observation import (
    OBSERVATION_SIZE,
    STATE_SIZE,
    ObservationTracker,
    full_state,
    observation_bounds,
)
from smoor_env.record import round_record
from smoor_env.render import render_rgb, render_text

# Attributes that exist only once a match has started (PettingZoo's per-episode state).
_EPISODE_ATTRIBUTES = frozenset({"agent_selection", "rewards", "terminations", "truncations",
                                 "infos", "_cumulative_rewards"})


class NotResetError(RuntimeError, AttributeError):
    """A per-episode attribute or method was used before ``reset()``.

    A ``RuntimeError`` for the caller, and an ``AttributeError`` so that ``hasattr``
    and PettingZoo's wrappers see a missing attribute, as they expect.
    """


def env(**kwargs: Any) -> AECEnv:
    """The AEC environment with PettingZoo's standard wrappers for classic games.

    Before the wrappers see them, calls are checked as ``raw_env`` checks them
    (``RuntimeError`` before ``reset``, ``TypeError``/``ValueError`` for an action
    that is not an int 0..69), instead of PettingZoo's ``AssertionError``s.
    """
    wrapped: AECEnv = raw_env(**kwargs)
    wrapped = wrappers.TerminateIllegalWrapper(wrapped, illegal_reward=-1)
    wrapped = wrappers.AssertOutOfBoundsWrapper(wrapped)
    return _CheckedCalls(wrappers.OrderEnforcingWrapper(wrapped))


class _CheckedCalls(wrappers.BaseWrapper):
    """Outermost wrapper of ``env()``: the raw environment's checks, before PettingZoo's."""

    def step(self, action: Any) -> None:
        self.unwrapped._check_step(action)
        super().step(action)

    def observe(self, agent: str) -> Any:
        self.unwrapped._seat_of(agent, "observe")
        return super().observe(agent)

    def state(self) -> np.ndarray:
        self.unwrapped._require_reset("state")
        return super().state()

    def last(self, observe: bool = True) -> tuple:
        self.unwrapped._require_agents("last")
        return super().last(observe)

    def agent_iter(self, max_iter: int = 2**63) -> Any:
        self.unwrapped._require_reset("agent_iter")
        return super().agent_iter(max_iter)

    def render(self) -> str | None:
        self.unwrapped._require_reset("render")
        return super().render()

    def __getattr__(self, name: str) -> Any:
        if name in _EPISODE_ATTRIBUTES and not self.unwrapped._started:
            raise NotResetError(f"{name} does not exist before the first reset(); call "
                                f"reset() first")
        return super().__getattr__(name)


class raw_env(AECEnv, EzPickle):  # noqa: N801 - PettingZoo's naming convention
    """One match of the given ``Rules``; see the module docstring."""

    metadata = {"render_modes": ["human", "ansi", "rgb_array"], "name": "smoorverliefd_v1",
                "is_parallelizable": False, "render_fps": 1}

    def __init__(self, rules: Rules | None = None, render_mode: str | None = None,
                 reward_mode: str = "round") -> None:
        EzPickle.__init__(self, rules, render_mode, reward_mode)
        super().__init__()
        if rules is not None and not isinstance(rules, Rules):
            raise TypeError(f"rules must be a smoor_env.Rules (e.g. Rules(game='hearts')) or "
                            f"None, got {type(rules).__name__} {rules!r}")
        self.rules = Rules() if rules is None else rules
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} "
                             f"or None, got {render_mode!r}")
        self.render_mode = render_mode
        if self.rules.is_hearts:
            self.metadata = {**self.metadata, "name": "hearts_v1"}
        n = self.rules.num_players
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agents = self.possible_agents[:]
        obs_space = spaces.Dict({
            "observation": spaces.Box(*observation_bounds(self.rules), (OBSERVATION_SIZE,),
                                      np.float32),
            "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
        })
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space)
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        low, high = observation_bounds(self.rules)  # the state: seat 0's view, then 0/1 blocks
        extra = STATE_SIZE - OBSERVATION_SIZE
        self.state_space = spaces.Box(np.concatenate([low, np.zeros(extra, np.float32)]),
                                      np.concatenate([high, np.ones(extra, np.float32)]),
                                      (STATE_SIZE,), np.float32)
        self.engine = Engine(self.rules, 1)
        # Every seat's observation of the one game, updated as the engine steps.
        self._tracker = ObservationTracker(self.engine, np.arange(n), np.zeros(n, np.int64))
        self._rewards = Rewards(self.engine, reward_mode)
        self._rng = np.random.default_rng()
        self._started = False  # reset() has been called
        self._guard = ChangeGuard(type(self).__name__)  # a step cut short: reset() first
        self._seed: int | None = None
        self._records: list[dict] = []

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes that do not exist (no cost on the normal path).
        if name in _EPISODE_ATTRIBUTES:
            raise NotResetError(f"{name} does not exist before the first reset(); call "
                                f"reset() first")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[self.possible_agents[self._seat_of(agent)]]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[self.possible_agents[self._seat_of(agent)]]

    # ------------------------------------------------------------- checks
    def _require_reset(self, method: str) -> None:
        if not self._started:
            raise NotResetError(f"{method}() before the first reset(); call reset() first")
        self._guard.check(f"{method}()")

    def _require_agents(self, method: str) -> None:
        """Raise unless a match is running with agents left to act."""
        self._require_reset(method)
        if not self.agents:
            raise RuntimeError(f"{method}() after the match ended and every agent left; call "
                               f"reset() to start a new match")

    def last(self, observe: bool = True) -> tuple:
        self._require_agents("last")
        return super().last(observe)

    def _seat_of(self, agent: Any, method: str | None = None) -> int:
        """The seat of an agent name (ValueError naming the agents if it is not one)."""
        if method is not None:
            self._require_reset(method)
        if agent not in self.possible_agents:
            raise ValueError(f"unknown agent {agent!r}; the agents are {self.possible_agents}")
        return self.possible_agents.index(agent)

    def _check_step(self, action: Any) -> None:
        """Raise if ``step(action)`` cannot be taken now: before reset, after every agent
        has left the ended match, or an action that is not None for a finished agent nor
        an int 0..69 for the agent to act (legality is the engine's check)."""
        self._require_agents("step")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise ValueError(f"{agent}: the match is over for this agent; its only valid "
                                 f"action is None, got {action!r}")
            return
        check_action(action, agent)

    # ------------------------------------------------------------------ API
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        # The engine plays the seed given here (so records name it); later resets
        # without a seed continue from it.
        # Everything is checked (by the engine's reset, which raises before changing
        # anything) before this env's own generator and fields change.
        options = reset_options(options, ("deal", "dealer"), others=True)
        if seed is not None:
            rng = np.random.default_rng(check_seed(seed))
            engine_seed = int(seed)
        else:
            rng = copy.deepcopy(self._rng)  # advanced only if the reset succeeds
            engine_seed = int(rng.integers(2**63))
        deal, dealer = options.get("deal"), options.get("dealer")
        start = {"hands": None if deal is None else [deal],
                 "dealers": None if dealer is None else [dealer]}
        self.engine.check_reset(engine_seed, **start)  # a bad deal or dealer: no change
        with self._guard.changing("reset()"):
            self._start(engine_seed, start, rng)

    def _start(self, engine_seed: int, start: dict, rng: np.random.Generator) -> None:
        """``reset``'s changes, its arguments checked."""
        self._tracker.reset(engine_seed, **start)
        self._rng = rng
        self._started = True
        self._seed = engine_seed
        self._records = []
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._rewards.reset()
        self.agent_selection = self._agent_to_act()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self._seat_of(agent, "observe")
        obs = self._tracker.out[seat].copy()
        mask = np.zeros(NUM_ACTIONS, np.int8)
        if agent == self.agent_selection and not self.engine.state.match_over[0]:
            mask[:] = self.engine.legal_mask[0]
        return {"observation": obs, "action_mask": mask}

    def state(self) -> np.ndarray:
        """Full information (every hand, the dead pile, every pass), for centralised critics."""
        self._require_reset("state")
        return full_state(self.engine)[0]

    def step(self, action: int | None) -> None:
        self._check_step(action)
        agent = self.agent_selection
        dead = self.terminations[agent] or self.truncations[agent]
        actions = np.array([0 if dead else action])
        if not dead and not self.engine.is_legal(actions)[0]:
            try:  # the engine names the seat, the action and the legal ones; no change
                self.engine.step(actions)
            except ValueError as error:
                raise ValueError(f"{agent}: {error}") from None
        with self._guard.changing("step()"):
            if dead:
                self._was_dead_step(action)
            else:
                self._play(agent, actions)

    def _play(self, agent: str, actions: np.ndarray) -> None:
        """``step``'s changes, for a legal action of the agent to act."""
        st = self.engine.state
        tricks = self._rewards.tricks()
        self._tracker.step(actions)
        rewards = self._rewards.after_step(tricks)[0]
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: float(rewards[seat]) for seat, a in enumerate(self.agents)}
        if st.round_over[0]:
            self._records.append(round_record(self.engine, 0, self._seed))
        if st.match_over[0]:
            self.terminations = dict.fromkeys(self.agents, True)
        self._accumulate_rewards()
        self.agent_selection = self._agent_to_act()
        if self.render_mode == "human":
            self._render()

    def _agent_to_act(self) -> str:
        return self.possible_agents[int(self.engine.state.current_player[0])]

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: the table as text (the hand of the seat to act); ``"rgb_array"``:
        (500, 800, 3) uint8 picture with every hand, seat 0 at the bottom; ``"human"``:
        prints the text."""
        if self.render_mode is None:
            return None
        self._require_reset("render")
        return self._render()

    def _render(self) -> str | np.ndarray | None:
        if self.render_mode == "rgb_array":
            return render_rgb(self.engine, 0, observer=0, show_all_hands=True)
        text = render_text(self.engine, 0)
        if self.render_mode == "human":
            print(text + "\n")
            return None
        return text

    def close(self) -> None:
        pass

    # -------------------------------------------------------------- records
    def game_record(self) -> list[dict]:
        """One record per finished round of the current match (see ``smoor_env.record``)."""
        return list(self._records)
