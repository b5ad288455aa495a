"""Duplicate deals: every deal played once per rotation of a line-up through the seats, so
every agent plays every hand from every seat and the luck of the deal cancels out of the
comparisons.

The one seating convention of the project: in rotation r, seat s plays ``lineup[(s + r) % P]``
(``rotation_seating``). The win-rate tournament, the league and the strength ladder all seat
their line-ups through it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.base import build_agent
from agents.evaluation.rule_options import rules_with
from smoor_env import Engine
from smoor_env.envs.agent_loop import play_agents

CSV_COLUMNS = ("rule_set", "players", "deal", "rotation", "seat", "agent", "round", "points",
               "round_win", "match_win")



def rotation_seating(lineup_index: np.ndarray, players: int) -> tuple[np.ndarray, np.ndarray,
                                                                      np.ndarray]:
    """Seat every rotation of every deal's line-up: game ``d * P + r`` is deal ``d`` in
    rotation ``r``, where seat ``s`` plays ``lineup_index[d, (s + r) % P]``.

    Args:
        lineup_index: (D, P) ints: the agent of each position of each deal's line-up.
        players: P.

    Returns:
        (G,) deal row of each game, (G,) its rotation and (G, P) the agent at each seat,
        G = D * P.
    """
    deals = len(lineup_index)
    deal_row = np.repeat(np.arange(deals), players)  # (G,) game -> row of the deals
    rotation = np.tile(np.arange(players), deals)  # (G,)
    seats = np.arange(players)
    seat_agent = lineup_index[deal_row[:, None], (seats[None, :] + rotation[:, None]) % players]
    return deal_row, rotation, seat_agent  # (G,), (G,), (G, P)


def zlib_seed(rule_set: str, players: int) -> int:
    """A stable number per (rule set, player count), so their deals differ."""
    import zlib

    return zlib.crc32(f"{rule_set}/{players}".encode()) % 1_000_000


def play_deals(rule_set: str, players: int, matches: bool, deals: np.ndarray,
               lineups: list[list[str]], seed: int, chunk: int,
               made: dict[str, Any] | None = None,
               rule_options: dict[str, bool] | None = None) -> list[dict]:
    """Play every deal once per rotation of its own line-up through the seats.

    Args:
        deals: (D,) deal numbers; deal d has the same cards in every rotation and run.
        lineups: D line-ups of P agent specs, seat by seat in rotation 0; rotation r
            seats ``lineup[(seat + r) % P]`` at ``seat``.
        seed: seed of the deals; the agents' random stream is keyed by (seed, rule set,
            players, chunk), so a chunk plays the same wherever it runs.
        made: agents already built, by spec (the Ray backend builds them once and puts
            them in the object store); the others are made here from their specs.
        rule_options: rule flags set on the preset ``rule_set`` (``--rule-options``,
            checked by ``agents.evaluation.rule_options``); the deals are those of the
            preset, and the rows keep its name.

    Returns:
        One row (``CSV_COLUMNS``) per game, seat and finished round, in play order.
    """
    rules = rules_with(rule_set, players, matches, rule_options or {})
    specs = sorted({spec for lineup in lineups for spec in lineup})
    made = made or {}
    agents = [made[spec] if spec in made else build_agent(spec) for spec in specs]
    # (D, P) index into `agents` of each deal's line-up
    lineup_index = np.array([[specs.index(spec) for spec in lineup] for lineup in lineups])
    games = len(deals) * players
    # (G,) deal row and rotation of each game, (G, P) index into `agents` at each seat
    deal_row, rotation, seat_agent = rotation_seating(lineup_index, players)
    deal_of = np.asarray(deals)[deal_row]  # (G,) the same cards for every rotation
    seats = np.arange(players)
    engine = Engine(rules, games)
    stream = zlib_seed(rule_set, players)
    engine.reset(seed + stream, game_ids=deal_of)
    rng = np.random.default_rng([seed, stream, chunk])
    st = engine.state
    rows: list[dict] = []

    def step(moves: np.ndarray, acting: np.ndarray) -> None:
        """Step, then add a row per seat of every round that ended."""
        engine.step(moves, active=acting)
        for g in np.flatnonzero(st.round_over):
            fin_round = int(st.finished["round_number"][g])
            for seat in seats:
                rows.append({
                    "rule_set": rule_set, "players": players, "deal": int(deal_of[g]),
                    "rotation": int(rotation[g]), "seat": int(seat),
                    "agent": specs[seat_agent[g, seat]], "round": fin_round,
                    "points": int(st.round_points[g, seat]),
                    "round_win": int(st.round_winners[g, seat]),
                    "match_win": int(st.winners[g, seat]) if st.match_over[g] else "",
                })

    play_agents(engine, agents, seat_agent, rng, step)
    return rows
