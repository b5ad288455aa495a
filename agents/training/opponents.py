"""The opponents of a learner: a pool of agents drawn per episode and seat
(``OpponentPool``), and a vector environment with such a pool (``PoolEnv``).

"League" in this project means only the openskill ratings of ``experiments/league.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.base import make_agent, parse_agent
from smoor_env import Rules
from smoor_env.envs.gym_env import SmoorVectorEnv


class OpponentPool:
    """Opponents drawn per episode: each (game, seat) plays one member of a pool.

    A batched agent for every opponent seat of a ``SmoorVectorEnv``: it reads the
    ``"games"`` and ``"seats"`` the environment passes with the observations and hands
    each member agent its rows. ``draw(games)`` draws new members for games about to
    restart.

    Args:
        members: the pool (agents; one may appear several times to weigh it).
        num_games, num_players: the environment's batch size and player count.
        rng: the generator of the draws.
    """

    name = "opponent_pool"

    def __init__(self, members: list, num_games: int, num_players: int,
                 rng: np.random.Generator) -> None:
        self.members = members
        self.uses_observation = any(m.uses_observation for m in members)
        self.rng = rng
        self.assignment = np.zeros((num_games, num_players), np.int64)  # (B, P) member
        self.draw(np.arange(num_games))

    def draw(self, games: np.ndarray) -> None:
        """New members for every seat of ``games`` ((K,) int indices)."""
        self.assignment[games] = self.rng.integers(len(self.members),
                                                   size=(len(games), self.assignment.shape[1]))

    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        if "games" not in observations:
            raise ValueError("OpponentPool needs the 'games' and 'seats' of SmoorVectorEnv's "
                             "opponent observations")
        member = self.assignment[observations["games"], observations["seats"]]  # (K,)
        actions = np.zeros(len(member), np.int64)
        for index in np.unique(member):
            rows = np.flatnonzero(member == index)
            part = {key: None if value is None else value[rows]
                    for key, value in observations.items()}
            actions[rows] = self.members[index].act(part, rng)
        return actions


def pool_members(names: list[str], self_agent: Any = None) -> list:
    """One agent per pool entry (the same object for repeated names; 'self' is
    ``self_agent``)."""
    made: dict[str, Any] = {}
    for name in names:
        if name not in made:
            agent, options = parse_agent(name)
            made[name] = self_agent if name == "self" else make_agent(agent, **options)
    return [made[name] for name in names]


def opponent_list(names: list[str], players: int) -> list[str]:
    """One agent name per other seat, from one name for all or one per seat."""
    others = players - 1
    if len(names) == 1:
        names = names * others
    if len(names) != others:
        raise ValueError(f"give one opponent or one per other seat ({others}), got {names}")
    return names


class PoolEnv:
    """One player count's vector environment with its opponent pool, as a training loop
    sees it: the pool draws new opponents for every game that restarts."""

    def __init__(self, rules: Rules, num_envs: int, learner_seat: int, members: list,
                 seed: int, rng: np.random.Generator, reward_mode: str) -> None:
        self.players = rules.num_players
        self.pool = OpponentPool(members, num_envs, self.players, rng)
        self.env = SmoorVectorEnv(num_envs, rules=rules, learner_seat=learner_seat,
                                  opponents=self.pool, reward_mode=reward_mode)
        self.obs, self.info = self.env.reset(seed=seed)  # (N, OBSERVATION_SIZE), infos
        self.resetting = np.zeros(num_envs, bool)  # (N,) the next step only restarts

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Step with (N,) actions. Returns (N,) rewards, (N,) bool episodes that ended on
        this step, (N,) bool steps that were the learner's (not restarts)."""
        valid = ~self.resetting
        self.obs, reward, term, trunc, self.info = self.env.step(actions)
        done = term | trunc
        self.pool.draw(np.flatnonzero(done))  # new opponents for the restart
        self.resetting = done
        return reward, done & valid, valid
