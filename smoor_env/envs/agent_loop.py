"""Agents at a table: ask each acting game's agent for a move, step the engine, repeat.

The one loop that plays agents against each other, used by the Gymnasium
environments (the opponents of the learner) and by every experiment. An agent
is any object with the batched agent protocol (``agents.base.Agent``): a
``name``, ``uses_observation`` and ``act(observations, rng)`` returning (n,)
legal actions for a batch of ``{"observation": (n, D), "action_mask": (n, 70)}``
(the table adds ``"games"`` and ``"seats"``, (n,) each: where the rows come from);
optionally ``act_packed(words, rng)``, the same actions from the mask packed into
(n, 2) uint64 (``Engine.legal_words``), which spares building the mask, or
``act_state(engine, rows, rng)``, the same actions for games ``rows`` read from the
engine's arrays, which spares building observations (``greedy`` has one). This
module only plays agent objects; turning names into agents is ``agents.make_agent``.

    loop = AgentLoop(engine, [make_agent("greedy"), make_agent("random")], seating=[0, 1, 0, 1])
    engine.reset(seed)
    loop.play(np.random.default_rng(seed))  # every match to its end
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from smoor_env.core.engine import Engine
from smoor_env.core.streams import GameStreams
from smoor_env.observation import observe

#: ``step(moves, acting)``: apply (B,) int64 moves in the (B,) bool ``acting`` games.
StepFunction = Callable[[np.ndarray, np.ndarray], Any]
#: The agents' randomness: one generator, one per agent, or a stream per game.
Randomness = np.random.Generator | Sequence[np.random.Generator] | GameStreams


def _stands_in(agent: Any, method: str) -> bool:
    """Whether ``agent.<method>`` may stand in for ``agent.act``: the agent has it, and its
    ``act`` is not overridden below the class that defines it (a subclass with its own
    ``act`` must be asked through ``act``)."""
    if not hasattr(agent, method):
        return False
    mro = type(agent).__mro__

    def owner(name: str) -> type:
        return next((c for c in mro if name in vars(c)), type(agent))

    return issubclass(owner(method), owner("act"))


def offers_packed(agent: Any) -> bool:
    """Whether ``agent.act_packed`` may stand in for ``agent.act`` (the agent reads only
    the mask; see ``_stands_in``)."""
    return not agent.uses_observation and _stands_in(agent, "act_packed")


def offers_state(agent: Any) -> bool:
    """Whether ``agent.act_state(engine, rows, rng)``, a policy on the engine's arrays,
    may stand in for ``agent.act`` (then no observation is built for the agent)."""
    return _stands_in(agent, "act_state")


class AgentLoop:
    """Which agent plays each seat of each game of an engine.

    Args:
        engine: the engine whose games the agents play.
        agents: the distinct agents (objects with the agent protocol).
        seating: (P,) or (B, P) ints: index in ``agents`` of the agent at each seat
            (of every game, or of each game); -1 marks a seat no agent plays (a
            learner's), where ``play`` stops.
    """

    def __init__(self, engine: Engine, agents: Sequence[Any],
                 seating: Sequence[int] | np.ndarray) -> None:
        p, b = engine.rules.num_players, engine.batch_size
        self.engine = engine
        self.agents = list(agents)
        for agent in self.agents:
            if not (hasattr(agent, "act") and hasattr(agent, "uses_observation")):
                raise TypeError(f"{agent!r} is not an agent: it needs act(observations, rng) "
                                f"and uses_observation (see agents.base.Agent); names are "
                                f"turned into agents by agents.make_agent")
        seating = np.asarray(seating)
        if (seating.shape not in ((p,), (b, p)) or not np.issubdtype(seating.dtype, np.integer)
                or ((seating < -1) | (seating >= len(self.agents))).any()):
            raise ValueError(f"seating must be ({p},) or ({b}, {p}) ints in -1..{len(agents) - 1} "
                             f"(the agent at each seat), got {seating.tolist()}")
        # (B * P,) agent index of each (game, seat), flat; -1 none.
        self._seated = np.broadcast_to(seating, (b, p)).reshape(-1).astype(np.int64)
        self._base = np.arange(b) * p  # (B,) flat index of seat 0 of each game
        self._packed = [offers_packed(agent) for agent in self.agents]
        self._state_level = [offers_state(agent) for agent in self.agents]

    def agent_to_act(self) -> np.ndarray:
        """(B,) int64 index of the agent whose seat is to act in each game (-1: none)."""
        return self._seated.take(self._base + self.engine.state.current_player)

    def moves(self, acting: np.ndarray, rng: Randomness, who: np.ndarray | None = None
              ) -> np.ndarray:
        """(B,) int64 the move of each ``acting`` (B,) bool game's agent (0 elsewhere).

        Each agent is asked once, for all the games where it is to act, in the order of
        ``agents``. ``rng``: one generator for every agent, one per agent, or
        ``GameStreams`` (each game its own stream: the moves of a game do not depend on
        the other games of the batch). ``who``: ``agent_to_act()`` if already known.
        """
        engine = self.engine
        st = engine.state
        who = self.agent_to_act() if who is None else who
        moves = np.zeros(engine.batch_size, np.int64)
        mask = words = None  # (B, 70) bool / (B, 2) uint64: built once, if needed
        for index, agent in enumerate(self.agents):
            rows = np.flatnonzero(acting if len(self.agents) == 1 else acting & (who == index))
            if not len(rows):
                continue
            agent_rng = (rng.for_games(rows) if isinstance(rng, GameStreams)
                         else rng if isinstance(rng, np.random.Generator) else rng[index])
            if self._state_level[index]:  # straight from the engine's arrays
                moves[rows] = agent.act_state(engine, rows, agent_rng)
                continue
            if self._packed[index]:
                words = engine.legal_words if words is None else words
                moves[rows] = agent.act_packed(words.take(rows, axis=0), agent_rng)
                continue
            mask = engine.legal_mask if mask is None else mask
            seen = observe(engine, st.current_player[rows], rows) if agent.uses_observation \
                else None
            # "games" and "seats" say where the rows come from (a league that draws its
            # opponents per game reads them; other agents ignore them).
            moves[rows] = agent.act({"observation": seen, "action_mask": mask[rows],
                                     "games": rows, "seats": st.current_player[rows]},
                                    agent_rng)
        return moves

    def play(self, rng: Randomness, step: StepFunction | None = None) -> None:
        """Play until no game has an agent to act: every match is over or waits for a
        seat marked -1.

        Args:
            rng: one generator for every agent, one per agent, or ``GameStreams``.
            step: applies each round of moves: ``step(moves, acting)``; default
                ``engine.step(moves, active=acting)``. (The environments step through
                their observation tracker and collect rewards.)
        """
        st = self.engine.state
        step = step or (lambda moves, acting: self.engine.step(moves, active=acting))
        while True:
            who = self.agent_to_act()
            acting = (who >= 0) & ~st.match_over  # (B,)
            if not acting.any():
                return
            step(self.moves(acting, rng, who), acting)


def play_agents(engine: Engine, agents: Sequence[Any], seating: Sequence[int] | np.ndarray,
                rng: Randomness,
                step: StepFunction | None = None) -> None:
    """``AgentLoop(engine, agents, seating).play(rng, step)``: play the engine's games to their
    end (or to a seat no agent plays)."""
    AgentLoop(engine, agents, seating).play(rng, step)
