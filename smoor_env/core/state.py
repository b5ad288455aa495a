"""The batched state of B games in lockstep: plain numpy arrays, batch dimension first.

Card sets are ``uint64`` bitmasks (bit ``c`` = card id ``c``, see ``cards.py``);
seats are absolute (0..P-1, clockwise). ``T`` is the number of tricks per round
(the hand size), ``P`` the number of players.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import IntEnum

import numpy as np


class Phase(IntEnum):
    """What the current player is asked to do (order within a round: PASS, CURSE, BID, PLAY)."""

    PLAY = 0  # play a card to the trick: actions 0..51
    PASS = 1  # Hearts: choose one card to pass (three times): actions 0..51
    CURSE = 2  # Cupid's Arrow: the dealer names the cursed suit: actions 66..69
    BID = 3  # Blinde Liefde: bid 0..13 heart cards: actions 52..65
    OVER = 4  # the match is over: no action is legal


#: (5,) int64: first action id of each phase (legal bits are relative to it).
PHASE_ACTION_OFFSET = np.array([0, 0, 66, 52, 0], dtype=np.int64)
NUM_ACTIONS = 70
BID_OFFSET, CURSE_OFFSET = 52, 66

# Fields describing one round as it was played; copied to ``State.finished`` when it ends.
ROUND_RECORD_FIELDS = (
    "round_number", "dealer", "dealt", "dead", "passes", "cursed_suit", "bids",
    "trick_cards", "trick_leader", "trick_winner",
)


@dataclass
class State:
    """Every array the engine needs for B games; mutated in place by ``Engine.step``."""

    # --- match ---------------------------------------------------------------
    game_key: np.ndarray  # (B,) uint64: per-game random key, from (seed, game id)
    round_number: np.ndarray  # (B,) int16: current round, from 1
    dealer: np.ndarray  # (B,) int8: seat that dealt the current round
    totals: np.ndarray  # (B, P) int32: match totals (partners: the team's, on both seats)
    round_points: np.ndarray  # (B, P) int32: score of the last finished round (Hearts: penalty)
    round_winners: np.ndarray  # (B, P) bool: seats sharing the last finished round's win
    round_over: np.ndarray  # (B,) bool: a round ended during the last step
    match_over: np.ndarray  # (B,) bool: the match is over; actions are ignored
    winners: np.ndarray  # (B, P) bool: seats sharing the match win (once match_over)
    # --- round ---------------------------------------------------------------
    phase: np.ndarray  # (B,) int8: a Phase
    current_player: np.ndarray  # (B,) int8: seat to act
    legal: np.ndarray  # (B,) uint64: legal actions, bit k = action PHASE_ACTION_OFFSET[phase] + k
    dealt: np.ndarray  # (B, P) uint64: hands as dealt, before passing
    dead: np.ndarray  # (B,) uint64: dead pile (never played)
    hands: np.ndarray  # (B, P) uint64: cards in hand now
    won: np.ndarray  # (B, P) uint64: cards each seat won in tricks this round
    played: np.ndarray  # (B,) uint64: cards played this round, current trick included
    passes: np.ndarray  # (B, P, 3) int8: cards each seat chose to pass, in order; -1 = not yet
    pass_out: np.ndarray  # (B, P) uint64: the same as a set, until the exchange
    cursed_suit: np.ndarray  # (B,) int8: 0..3, or -1 (none this round)
    bids: np.ndarray  # (B, P) int8: 0..13, or -1 (not bid)
    hearts_broken: np.ndarray  # (B,) bool: Hearts: a heart (or QS, by option) was played
    trick_index: np.ndarray  # (B,) int8: completed tricks this round (= index of current trick)
    trick_size: np.ndarray  # (B,) int8: cards in the current trick
    led_suit: np.ndarray  # (B,) int8: suit led to the current trick (-1 before the lead)
    current_trick: np.ndarray  # (B, P) int8: card each seat played to the trick in progress; -1
    trick_mask: np.ndarray  # (B,) uint64: the same cards as a set
    trick_cards: np.ndarray  # (B, T, P) int8: card each seat played to each completed trick; -1
    trick_leader: np.ndarray  # (B, T) int8: seat that led each trick; -1 = not started
    trick_winner: np.ndarray  # (B, T) int8: seat that won each trick; -1 = not finished
    # The last finished round, as it was played: ROUND_RECORD_FIELDS copied at its end.
    finished: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

    @property
    def batch_size(self) -> int:
        return self.phase.shape[0]

    def copy(self) -> State:
        """A deep copy (the engine mutates states in place)."""
        arrays = {f.name: getattr(self, f.name).copy() for f in dataclasses.fields(self)
                  if f.name != "finished"}
        return State(**arrays, finished={k: v.copy() for k, v in self.finished.items()})

    def take(self, games: np.ndarray | list[int]) -> State:
        """A new state holding only the given games (in that order)."""
        idx = np.asarray(games, dtype=np.int64)
        arrays = {f.name: getattr(self, f.name)[idx].copy() for f in dataclasses.fields(self)
                  if f.name != "finished"}
        return State(**arrays, finished={k: v[idx].copy() for k, v in self.finished.items()})

    @classmethod
    def concat(cls, states: list[State]) -> State:
        """One state of the games of ``states``, in order (``take``'s inverse): states of
        the same rules, any batch sizes."""
        if not states:
            raise ValueError("concat needs at least one state")
        arrays = {f.name: np.concatenate([getattr(s, f.name) for s in states])
                  for f in dataclasses.fields(cls) if f.name != "finished"}
        return cls(**arrays, finished={k: np.concatenate([s.finished[k] for s in states])
                                       for k in states[0].finished})

    @classmethod
    def empty(cls, batch_size: int, num_players: int, num_tricks: int) -> State:
        """A zeroed state of the right shapes (the engine's reset fills it in)."""
        b, p, t = batch_size, num_players, num_tricks
        state = cls(
            game_key=np.zeros(b, np.uint64),
            round_number=np.ones(b, np.int16),
            dealer=np.zeros(b, np.int8),
            totals=np.zeros((b, p), np.int32),
            round_points=np.zeros((b, p), np.int32),
            round_winners=np.zeros((b, p), bool),
            round_over=np.zeros(b, bool),
            match_over=np.zeros(b, bool),
            winners=np.zeros((b, p), bool),
            phase=np.zeros(b, np.int8),
            current_player=np.zeros(b, np.int8),
            legal=np.zeros(b, np.uint64),
            dealt=np.zeros((b, p), np.uint64),
            dead=np.zeros(b, np.uint64),
            hands=np.zeros((b, p), np.uint64),
            won=np.zeros((b, p), np.uint64),
            played=np.zeros(b, np.uint64),
            passes=np.full((b, p, 3), -1, np.int8),
            pass_out=np.zeros((b, p), np.uint64),
            cursed_suit=np.full(b, -1, np.int8),
            bids=np.full((b, p), -1, np.int8),
            hearts_broken=np.zeros(b, bool),
            trick_index=np.zeros(b, np.int8),
            trick_size=np.zeros(b, np.int8),
            led_suit=np.full(b, -1, np.int8),
            current_trick=np.full((b, p), -1, np.int8),
            trick_mask=np.zeros(b, np.uint64),
            trick_cards=np.full((b, t, p), -1, np.int8),
            trick_leader=np.full((b, t), -1, np.int8),
            trick_winner=np.full((b, t), -1, np.int8),
        )
        state.finished = {name: getattr(state, name).copy() for name in ROUND_RECORD_FIELDS}
        return state
