"""The rules of one game as an immutable value: every variant is a named field.

The rule texts are summarised in ``docs/rules.md``; each field below says which
choice it encodes and its default. ``Rules`` validates itself when built, so an
impossible combination (partners with 3 players, Cupid's Arrow in a single round,
a Smoorverliefd variant in Hearts, ...) is a ``ValueError`` before any game starts.
Each variant's named rule set (``smoor_env.core.presets``) bears the name of the field
that makes it: ``preset("trump_hearts")`` is met Troef.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from smoor_env.core import cards as C

GAMES = ("smoorverliefd", "hearts")

#: Placeholder for options whose default depends on ``game`` (resolved at construction).
GAME_DEFAULT: Any = "game default"

#: Inclusive bounds of the numeric options. With them every score is exact in its dtype:
#: a seat's round points are at most ``Rules.round_points_bound`` <= 60_024 in magnitude
#: (hearts doubled by a sweep, 2 * (12 + 10_000), plus both partners' bid and cursed-suit
#: penalties, 2 * 10_000 each), so over 10_000 rounds a total moves by at most
#: 600_240_000, and from a start within ``TOTALS_BOUND`` it stays below 2**31 (int32).
OPTION_BOUNDS = {
    "num_players": (3, 5),
    "target_score": (1, 1_000_000_000),
    "max_rounds": (1, 10_000),
    "ace_of_hearts_points": (0, 10_000),
    "bid_bonus": (0, 10_000),
    "bid_penalty": (0, 10_000),
    "cursed_penalty": (0, 10_000),
}
#: Match totals given to ``Engine.reset(totals=...)`` lie in -TOTALS_BOUND..TOTALS_BOUND.
TOTALS_BOUND = 1_000_000_000

# Pass directions as seat offsets (receiver = passer + offset); 0 = no pass this round.
_PASS_CYCLES = {3: (1, 2), 4: (1, 3, 2, 0), 5: (1, 4, 2, 0)}
#: Partner Smoorverliefd: the partner of each seat (teams {0, 2} and {1, 3}).
PARTNER_OF = (2, 3, 0, 1)
#: The options that belong to one game only (set in the other, they are a ValueError).
GAME_ONLY_OPTIONS = {
    "smoorverliefd": ("trump_hearts", "bidding", "partners", "pip_scoring", "cupids_arrow",
                      "sweep_needs_all_thirteen"),
    "hearts": ("passing", "queen_never_first_trick", "queen_breaks_hearts"),
}


def turn_order(first: int | np.ndarray, num_players: int) -> np.ndarray:
    """(..., P) seats clockwise from ``first`` (an int or an array of seats): play goes
    to the left, seat s + 1 mod P. Also the absolute seat of each relative seat of an
    observer ``first``."""
    return (np.asarray(first)[..., None] + np.arange(num_players)) % num_players


@dataclass(frozen=True)
class Rules:
    """Immutable configuration of a Smoorverliefd or Hearts match.

    Numeric options lie in ``OPTION_BOUNDS`` (target_score 1..1_000_000_000 or None,
    max_rounds 1..10_000, points 0..10_000; see "Bounds" in ``docs/rules.md``), which
    keeps int32 totals exact; anything else is a ``ValueError`` naming the range.

    Attributes:
        game: ``"smoorverliefd"`` (collect hearts) or ``"hearts"`` (avoid them).
        num_players: 3, 4 or 5 seats, numbered clockwise.
        target_score: the match ends after the round in which a total reaches
            this (Smoorverliefd: 50, and exactly one player must lead; Hearts: 100,
            lowest total wins). ``None`` plays a single round.
        max_rounds: hard cap on the rounds of a match (both games); at the cap the
            best totals share the win.
        ace_of_hearts_points: Smoorverliefd: points for ``AH`` (other hearts 1).
        sweep_needs_all_thirteen: Smoorverliefd: if True, a round with a heart in
            the dead pile cannot be swept; if False a sweep is winning
            every heart in play.
        trump_hearts: *met Troef*: hearts are trump (following suit still compulsory).
        bidding: *Blinde Liefde*: after the deal each player bids 0..13 heart cards.
        bid_bonus: points for a player whose heart-card count equals the bid.
        bid_penalty: points lost by a player who misses the bid.
        partners: *Partner Smoorverliefd*: seats {0, 2} and {1, 3} play as teams
            (4 players only).
        pip_scoring: *Kleine Liefde*: a heart scores its pip value (2..10, J 11,
            Q 12, K 13, A 14; no ace bonus), round total 104.
        cupids_arrow: *Cupid's Arrow*: from round 2 the player with the fewest heart
            cards last round deals and names a cursed suit; whoever won the most
            cards of it loses ``cursed_penalty``. Needs a multi-round match.
        cursed_penalty: points lost by the player(s) with the most cursed cards.
        cursed_suit_may_be_hearts: whether hearts may be named as the cursed suit.
        passing: Hearts: each player passes 3 cards before play (left, right,
            across, none, by round). Defaults to True in Hearts; Smoorverliefd has
            no passing.
        queen_never_first_trick: Hearts: ``QS`` may never be played to the first
            trick, even by a player with nothing else legal.
        queen_breaks_hearts: Hearts: playing ``QS`` also breaks hearts.
    """

    game: str = "smoorverliefd"
    num_players: int = 4
    target_score: int | None = GAME_DEFAULT
    max_rounds: int = 100
    # Smoorverliefd scoring
    ace_of_hearts_points: int = 5
    sweep_needs_all_thirteen: bool = False
    # Smoorverliefd variants
    trump_hearts: bool = False
    bidding: bool = False
    bid_bonus: int = 10
    bid_penalty: int = 5
    partners: bool = False
    pip_scoring: bool = False
    cupids_arrow: bool = False
    cursed_penalty: int = 5
    cursed_suit_may_be_hearts: bool = True
    # Hearts
    passing: bool = GAME_DEFAULT
    queen_never_first_trick: bool = False
    queen_breaks_hearts: bool = False

    # Derived layout, filled in by __post_init__ (not constructor arguments).
    deck_mask: int = field(init=False, repr=False, compare=False)
    hand_size: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.game not in GAMES:
            raise ValueError(f"game must be one of {GAMES}, got {self.game!r}")
        hearts = self.game == "hearts"
        if self.target_score is GAME_DEFAULT:
            object.__setattr__(self, "target_score", 100 if hearts else 50)
        if self.passing is GAME_DEFAULT:
            object.__setattr__(self, "passing", hearts)
        self._validate()
        removed = {3: C.parse_cards("2D"), 4: [], 5: C.parse_cards("2C 2D")}
        deck = (1 << C.NUM_CARDS) - 1
        if hearts:
            deck &= ~C.mask_of(removed[self.num_players])
        object.__setattr__(self, "deck_mask", deck)
        object.__setattr__(self, "hand_size", bin(deck).count("1") // self.num_players)

    def _validate(self) -> None:
        def need(ok: bool, message: str) -> None:
            if not ok:
                raise ValueError(f"impossible rules: {message}")

        for name in ("sweep_needs_all_thirteen", "trump_hearts", "bidding", "partners",
                     "pip_scoring", "cupids_arrow", "cursed_suit_may_be_hearts", "passing",
                     "queen_never_first_trick", "queen_breaks_hearts"):
            need(isinstance(getattr(self, name), bool), f"{name} must be a bool")
        for name, (low, high) in OPTION_BOUNDS.items():
            value = getattr(self, name)
            if name == "target_score" and value is None:
                continue
            need(isinstance(value, int) and not isinstance(value, bool),
                 f"{name} must be an int{' or None' if name == 'target_score' else ''}, "
                 f"got {value!r}")
            need(low <= value <= high, f"{name} must be in {low:_}..{high:_}, got {value}")
        other = GAMES[1 - GAMES.index(self.game)]
        foreign = [n for n in GAME_ONLY_OPTIONS[other] if getattr(self, n)]
        need(not foreign, f"{other.capitalize()} options cannot be used in "
             f"{self.game.capitalize()}: " + ", ".join(foreign))
        need(not self.partners or self.num_players == 4,
             f"partners needs exactly 4 players, got {self.num_players}")
        need(not self.cupids_arrow or (self.target_score is not None and self.max_rounds > 1),
             "cupids_arrow needs a multi-round match (target_score not None, max_rounds > 1)")

    # ----------------------------------------------------------------- derived
    @property
    def num_tricks(self) -> int:
        """Tricks per round (= cards per hand)."""
        return self.hand_size

    @property
    def dead_count(self) -> int:
        """Cards in the dead pile each round (never played)."""
        return bin(self.deck_mask).count("1") - self.hand_size * self.num_players

    @property
    def round_points_bound(self) -> int:
        """The largest magnitude a seat's round points can have under these rules.

        Hearts: 26 penalty points. Smoorverliefd: the heart points doubled by a sweep
        (``2 * 208`` with pip scoring, else ``2 * (12 + max(ace, 1))``), plus the bid bonus
        or penalty and the cursed-suit penalty, twice with partners (both partners' count).
        """
        if self.is_hearts:
            return 26
        hearts = 104 if self.pip_scoring else 12 + max(self.ace_of_hearts_points, 1)
        per_player = (max(self.bid_bonus, self.bid_penalty) if self.bidding else 0) + (
            self.cursed_penalty if self.cupids_arrow else 0)
        return 2 * hearts + (2 if self.partners else 1) * per_player

    @property
    def is_hearts(self) -> bool:
        return self.game == "hearts"

    @property
    def pass_cycle(self) -> tuple[int, ...]:
        """Seat offsets of the Hearts pass, round by round from round 1, repeating
        (receiver = passer + offset; 0 = no pass that round); ``(0,)`` without passing."""
        return _PASS_CYCLES[self.num_players] if self.passing else (0,)

    def pass_offset(self, round_number: int | np.ndarray) -> int | np.ndarray:
        """Seat offset of the Hearts pass in round ``round_number`` (1-based; an int, or
        an array of rounds giving an int64 array of the same shape); 0 = no pass."""
        cycle = self.pass_cycle
        if isinstance(round_number, int | np.integer):
            return cycle[(int(round_number) - 1) % len(cycle)]
        rounds = np.asarray(round_number, np.int64)
        return np.array(cycle, np.int64).take((rounds - 1) % len(cycle))

    def to_dict(self) -> dict[str, Any]:
        """Every option as a plain dict (for game records and JSON summaries)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}

    def replace(self, **changes: Any) -> Rules:
        """A copy with some options changed (validated again)."""
        return dataclasses.replace(self, **changes)
