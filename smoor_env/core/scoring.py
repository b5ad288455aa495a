"""Round scoring, round and match winners, and the next dealer: free functions of the rules.

Every caller scores with these: the engine at the end of a round, the rewards
and the text rendering (``provisional_points``), the observation (its
``round_points`` block) and agents that score imagined rounds. Card sets are
uint64 bitmasks (see ``cards.py``); arrays are (n, P) per game and seat.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from smoor_env.core import cards as C
from smoor_env.core.bits import equal_per_seat, is_row_max, or_over_seats, popcount
from smoor_env.core.rules import PARTNER_OF, Rules, turn_order

_HEARTS = np.uint64(C.HEART_MASK)
_QUEEN = np.uint64(1 << C.QUEEN_OF_SPADES)
_ACE_OF_HEARTS = np.uint64(1 << C.ACE_OF_HEARTS)
#: Hearts: penalty points of the queen of spades (each heart scores 1).
QUEEN_PENALTY = 13
#: Hearts: the penalty points of a whole round (13 hearts and the queen); shooting
#: the moon gives them to every other player.
HEARTS_ROUND_TOTAL = 26
#: Kleine Liefde: the pip values of the 13 hearts, 2..14, summed.
PIP_ROUND_TOTAL = sum(range(2, 15))
# Kleine Liefde: heart of rank r (2..14) scores r. Bit j of the pip value of each heart,
# as masks: pip points = sum_j 2**j * popcount(hearts won & _PIP_BITS[j]).
_PIP_BITS = [np.uint64(sum(1 << (C.ACE_OF_HEARTS - 14 + r) for r in range(2, 15) if r >> j & 1))
             for j in range(4)]


def _team(points: np.ndarray) -> np.ndarray:
    """(n, 4): each seat's value plus its partner's (Partner Smoorverliefd)."""
    return points + points[:, PARTNER_OF]


def round_score(rules: Rules, won: np.ndarray, dead: np.ndarray, bids: np.ndarray,
                cursed_suit: np.ndarray) -> np.ndarray:
    """(n, P) int32 round points of every seat.

    Args:
        rules: the rules scored by.
        won: (n, P) uint64 cards each seat won in tricks.
        dead: (n,) uint64 the dead pile (its hearts cannot be won: a sweep is every
            heart in play).
        bids: (n, P) bids (Blinde Liefde; -1 none).
        cursed_suit: (n,) the cursed suit (Cupid's Arrow; -1 none).

    Returns:
        Smoorverliefd: points gained (partners: the team's on both seats), heart
        points doubled by a sweep, then bid bonus or penalty and cursed-suit penalty.
        Hearts: penalty points after shooting the moon.
    """
    # (Few and small temporaries, (n, P) arrays compared column by column: fresh
    # (n, P) uint64 temporaries cost page faults as well as passes at large n.)
    hearts_won = won & _HEARTS  # (n, P) uint64
    heart_cards = popcount(hearts_won)  # (n, P) int32
    if rules.is_hearts:
        penalty = heart_cards + np.int32(QUEEN_PENALTY) * ((won & _QUEEN) != 0)  # (n, P) int32
        moon = penalty == HEARTS_ROUND_TOTAL  # (n, P) the seat that shot the moon, if any
        shot = np.flatnonzero(or_over_seats(moon))
        penalty[shot] = HEARTS_ROUND_TOTAL * ~moon[shot]
        return penalty
    if rules.pip_scoring:
        points = sum((1 << j) * popcount(hearts_won & m) for j, m in enumerate(_PIP_BITS))
    else:
        ace = (won & _ACE_OF_HEARTS) != 0  # (n, P) bool
        points = heart_cards + np.int32(rules.ace_of_hearts_points - 1) * ace
    if rules.partners:
        hearts_won = hearts_won | hearts_won[:, PARTNER_OF]
        points = _team(points)
    in_play = _HEARTS & ~dead  # (n,)
    swept = equal_per_seat(hearts_won, in_play)  # (n, P) bool
    if rules.sweep_needs_all_thirteen:
        swept &= (in_play == _HEARTS)[:, None]
    points = points << swept  # doubled by a sweep
    if rules.bidding or rules.cupids_arrow:
        extra = np.zeros_like(points)  # per player, then added to the team
        if rules.bidding:
            extra += np.where(heart_cards == bids, rules.bid_bonus, -rules.bid_penalty)
        if rules.cupids_arrow:
            named = cursed_suit >= 0  # (n,)
            suit_mask = C.SUIT_MASKS[np.maximum(cursed_suit, 0)]
            cursed = popcount(won & suit_mask[:, None])
            most = cursed == cursed.max(axis=1, keepdims=True)
            extra -= rules.cursed_penalty * (most & named[:, None])
        if rules.partners:
            extra = _team(extra)
        points = points + extra
    return points.astype(np.int32, copy=False)


def provisional_points(rules: Rules, state: Any) -> np.ndarray:
    """(n, P) int32 round points as if the round ended now (Hearts: minus penalty points).

    ``state``: a ``State`` or anything with its ``won``, ``dead``, ``bids`` and
    ``cursed_suit`` arrays. The dead pile is taken as empty, so a sweep (or the moon)
    only counts once all 13 hearts are won: the value never depends on hidden cards.
    At the end of a round, use ``state.round_points`` instead (the real score).
    """
    points = round_score(rules, state.won, np.zeros_like(state.dead), state.bids,
                         state.cursed_suit)
    return -points if rules.is_hearts else points


def known_points(rules: Rules, state: Any) -> np.ndarray:
    """(n, P) int32 round points as every player at the table knows them mid-round: the
    points the views show (terminal, pictures, the replay page), in the records' sign.

    Hearts: penalty points taken so far, positive (more is worse; the moon once all 26
    are taken). Smoorverliefd: the points won so far (a sweep once all 13 hearts are
    won, as in ``provisional_points``), plus a Blinde Liefde bid's bonus or penalty once
    its outcome is certain: missed once the seat holds more heart cards than it bid or
    can no longer reach its bid (fewer hearts left unwon than it lacks), made once it
    holds its bid with all 13 hearts won. The cursed-suit penalty goes to the most
    cursed cards at the round's end, so it is never known before (``round_points``
    then holds the real score).
    """
    if rules.is_hearts:
        return round_score(rules, state.won, np.zeros_like(state.dead), state.bids,
                           state.cursed_suit)
    base = dataclasses.replace(rules, bidding=False, cupids_arrow=False)
    points = round_score(base, state.won, np.zeros_like(state.dead), state.bids,
                         state.cursed_suit)  # (n, P) int32
    if rules.bidding:
        heart_cards = popcount(state.won & _HEARTS)  # (n, P)
        unwon = C.CARDS_PER_SUIT - heart_cards.sum(axis=1, keepdims=True)  # (n, 1)
        bids = state.bids  # (n, P), -1 before a seat bids
        bid = bids >= 0
        missed = bid & ((heart_cards > bids) | (heart_cards + unwon < bids))
        made = bid & (heart_cards == bids) & (unwon == 0)
        extra = np.where(missed, -rules.bid_penalty, np.where(made, rules.bid_bonus, 0))
        points = points + (_team(extra) if rules.partners else extra)
    return points.astype(np.int32, copy=False)


def score_scale(rules: Rules) -> float:
    """The full round total that scales points: 17/34 base, 104/208 pips, 26 Hearts."""
    if rules.is_hearts:
        return float(HEARTS_ROUND_TOTAL)
    hearts = PIP_ROUND_TOTAL if rules.pip_scoring else 12 + rules.ace_of_hearts_points
    return float(2 * hearts)


def best(rules: Rules, points: np.ndarray) -> np.ndarray:
    """(n, P) bool: the seats with the best of points (n, P): the most in Smoorverliefd,
    the fewest (penalty points) in Hearts. Round winners from the round points, match
    leaders from the totals."""
    return is_row_max(-points if rules.is_hearts else points)


def match_over(rules: Rules, totals: np.ndarray, leaders: np.ndarray,
               rounds: np.ndarray) -> np.ndarray:
    """(n,) bool: the match ends after round ``rounds`` (n,) with ``totals`` (n, P) and
    their ``leaders`` (n, P) bool (``best``).

    A single round (no target) always ends. Hearts ends once a total reaches the
    target; Smoorverliefd only if then exactly one player (team) leads. Both end at
    ``max_rounds``.
    """
    if rules.target_score is None:
        over = np.ones(len(rounds), bool)
    else:
        reached = (totals >= rules.target_score).any(axis=1)
        unique = leaders.sum(axis=1) == (2 if rules.partners else 1)
        over = reached if rules.is_hearts else reached & unique
    return over | (rounds >= rules.max_rounds)


def next_dealer(rules: Rules, dealer: np.ndarray, won: np.ndarray) -> np.ndarray:
    """(n,) int64 dealer of the next round after ``dealer`` (n,) with ``won`` (n, P).

    Clockwise; with Cupid's Arrow the player who won the fewest heart cards (ties:
    the first such clockwise from the left of the previous dealer).
    """
    p = rules.num_players
    dealer = dealer.astype(np.int64)
    if not rules.cupids_arrow:
        return (dealer + 1) % p
    hearts = popcount(won & _HEARTS)  # (n, P)
    fewest = hearts == hearts.min(axis=1, keepdims=True)
    order = turn_order(dealer + 1, p)  # (n, P) clockwise from left of the dealer
    first = np.argmax(np.take_along_axis(fewest, order, axis=1), axis=1)
    return order[np.arange(len(dealer)), first]
