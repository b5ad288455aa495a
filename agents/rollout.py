"""Rollout policies: every seat's move read straight from the engine's arrays.

The search agents (``mc``, ``ismcts``) play sampled worlds to the end of the round
inside one engine batch. A rollout policy picks the move of every game's seat to
act from the engine state itself, without building an observation per ply:

* ``"random"``: a uniformly random legal action (``Engine.sample_legal``);
* ``"greedy"``: the ``greedy`` agent's rules (``agents.greedy.greedy_play`` for cards,
  ``greedy_bid`` for bids), on the acting seat's hand, the trick in progress, the
  led suit, the cards played, (Blinde Liefde) its bid and hearts won and (Partner)
  its partner's card in the trick, which are exactly what the greedy agent decodes
  from its observation;
* ``"greedy:EPS"`` (e.g. ``"greedy:0.3"``): epsilon-greedy for the other seats, a
  random legal action with probability EPS, else the greedy one; seat 0 (the
  searching seat, in the search agents' worlds) keeps playing greedy, since it
  knows its own policy. Opponents that err now and then are a better model of
  unknown players (random seats, learners, people) than perfect greedy ones.

Rollouts play the play phase and Blinde Liefde's bids (rollout rules have no
passing and no cursed-suit phase, see ``agents.search.rollout_rules``).
"""

from __future__ import annotations

import functools

import numpy as np

from agents.greedy import epsilon_greedy, greedy_bid, greedy_play, made_bid
from smoor_env.core.engine import Engine
from smoor_env.core.state import PHASE_ACTION_OFFSET, Phase


class RolloutPolicy:
    """A batched move chooser on the engine state (see the module docstring).

    Args:
        spec: ``"random"``, ``"greedy"`` or ``"greedy:EPS"`` with 0 <= EPS <= 1.
    """

    def __init__(self, spec: str = "greedy") -> None:
        if not isinstance(spec, str):
            raise TypeError(f"rollout must be a str, got {type(spec).__name__}")
        name, _, eps = spec.partition(":")
        if name not in ("random", "greedy") or (eps and name != "greedy"):
            raise ValueError(f"rollout must be 'random', 'greedy' or 'greedy:EPS', got {spec!r}")
        try:
            self.epsilon = float(eps) if eps else (1.0 if name == "random" else 0.0)
        except ValueError:
            raise ValueError(f"rollout epsilon must be a number in [0, 1], got {eps!r}") from None
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError(f"rollout epsilon must be in [0, 1], got {self.epsilon}")
        self.spec = spec

    def __repr__(self) -> str:
        return f"RolloutPolicy({self.spec!r})"

    def __call__(self, engine: Engine, rng: np.random.Generator) -> np.ndarray:
        """(B,) int64 one move per game of ``engine`` (anything for finished games)."""
        if self.epsilon >= 1.0:
            return engine.sample_legal(rng)
        moves = greedy_moves(engine)
        if self.epsilon <= 0.0:
            return moves
        # Seat 0 (the searching seat) keeps playing greedy; sample_legal takes every
        # game's draw, whichever rows explore.
        return epsilon_greedy(moves, self.epsilon, rng,
                              lambda rows: engine.sample_legal(rng, rows),
                              explorers=engine.state.current_player != 0)


def greedy_moves(engine: Engine) -> np.ndarray:
    """(B,) int64 the greedy move of every game's seat to act (0 where the match is over)."""
    st, rules = engine.state, engine.rules
    b, p = engine.batch_size, rules.num_players
    acting = _row_starts(b, p) + st.current_player  # (B,) flat index of the seat to act
    hand = st.hands.reshape(-1).take(acting)  # (B,) uint64
    playing = st.phase == _PLAY  # (B,)
    made = None  # (B,) bool: the seat to act has won exactly the hearts it bid
    if rules.bidding:
        made = made_bid(st.won.reshape(-1).take(acting), st.bids.reshape(-1).take(acting))
    partner = None  # (B,) its partner's card in the trick in progress, -1 none
    if rules.partners:
        partner = st.current_trick.reshape(-1).take(_row_starts(b, p)
                                                    + (st.current_player + 2) % p)
    if playing.all():  # a rollout's play phase: no row to pick
        moves = greedy_play(hand, st.legal, st.trick_mask, st.led_suit,
                            st.trick_size == p - 1, st.played, hearts=rules.is_hearts,
                            trump_hearts=rules.trump_hearts, made_bid=made, partner=partner)
        return np.maximum(moves, 0, out=moves)
    moves = np.zeros(b, np.int64)
    if playing.any():
        rows = np.flatnonzero(playing)
        moves[rows] = greedy_play(hand[rows], st.legal[rows], st.trick_mask[rows],
                                  st.led_suit[rows], st.trick_size[rows] == p - 1,
                                  st.played[rows], hearts=rules.is_hearts,
                                  trump_hearts=rules.trump_hearts,
                                  made_bid=None if made is None else made[rows],
                                  partner=None if partner is None else partner[rows])
    bidding = np.flatnonzero(st.phase == _BID)
    if len(bidding):
        moves[bidding] = PHASE_ACTION_OFFSET[Phase.BID] + greedy_bid(hand[bidding])
    return np.maximum(moves, 0, out=moves)


_PLAY, _BID = int(Phase.PLAY), int(Phase.BID)  # plain ints: an enum costs more per compare


@functools.lru_cache(maxsize=16)
def _row_starts(batch: int, players: int) -> np.ndarray:
    """(batch,) int64 flat index of each game's seat 0 in a (batch, players) array."""
    starts = np.arange(batch) * players
    starts.flags.writeable = False
    return starts
