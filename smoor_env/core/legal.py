"""Legal sets: which actions the player to act may choose, phase by phase.

Every function returns uint64 sets relative to the phase's first action (see
``state.PHASE_ACTION_OFFSET``): cards for play and pass, bids 0..13, suits. The
play rules are a cascade of short blocks, each one rule of ``docs/rules.md``.
"""

from __future__ import annotations

import numpy as np

from smoor_env.core import cards as C
from smoor_env.core.bits import ZERO
from smoor_env.core.rules import Rules

_HEARTS = np.uint64(C.HEART_MASK)
_QUEEN = np.uint64(1 << C.QUEEN_OF_SPADES)
_PENALTY_CARDS = np.uint64(C.HEART_MASK | 1 << C.QUEEN_OF_SPADES)
#: (5,) uint64 cards of the led suit, indexed by ``led_suit``: -1 (nobody has led yet)
#: takes the last entry, the empty set, so "follow suit if you can" leaves a leader's
#: hand whole.
LED_MASKS = np.append(C.SUIT_MASKS, np.uint64(0))
#: Blinde Liefde: every bid 0..13 is legal.
BID_LEGAL = np.uint64((1 << 14) - 1)


def curse_legal(rules: Rules) -> np.uint64:
    """Cupid's Arrow: the suits the dealer may curse (hearts by option)."""
    return np.uint64(0b1111 if rules.cursed_suit_may_be_hearts else 0b1011)


def pass_legal(hand: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """(n,) uint64 Hearts passing: any card in ``hand`` (n,) not ``chosen`` (n,) already."""
    return hand & ~chosen


def opening_card(rules: Rules) -> int:
    """Hearts: the card that leads the first trick, the lowest club in play (2C; 3C with
    5 players, whose deck has no 2C)."""
    return (rules.deck_mask & -rules.deck_mask).bit_length() - 1  # the lowest card id


def play_legal(rules: Rules, hand: np.ndarray, led_mask: np.ndarray | None,
               leading: np.ndarray | bool | None, first: np.ndarray | bool | None,
               hearts_broken: np.ndarray | None, few: bool,
               out: np.ndarray | None = None) -> np.ndarray:
    """(n,) uint64 the cards of ``hand`` (n,) the player to act may play.

    Args:
        rules: the rules.
        hand: (n,) uint64 the hand of the player to act.
        led_mask: (n,) uint64 cards of the led suit (``LED_MASKS[led_suit]``, empty
            while leading); unused if ``leading is True``.
        leading, first: (n,) bool nobody has played to the trick yet / it is the
            round's first trick, or Python bools when the same for every game (which
            skips the work they make pointless). Read only in Hearts.
        hearts_broken: (n,) bool, read only in Hearts.
        few: a few games (the form with fewer numpy calls) rather than many (fewer
            passes over memory).
        out: an (n,) uint64 array the result may be written to (it is returned
            either way).
    """
    if leading is True:
        follow, legal = ZERO, hand
    else:
        follow = hand & led_mask  # (n,) cards of the led suit in hand
        # Follow suit if you can: the hand where no card follows, else those cards.
        if few:
            legal = np.where(follow, follow, hand)
        else:  # the same in fewer passes over memory (cheaper than np.where)
            legal = np.multiply(hand, follow == 0, out=out)
            legal |= follow
    if not rules.is_hearts:
        return legal
    if isinstance(leading, bool):
        leading = np.bool_(leading)
    if isinstance(first, bool):
        first = np.bool_(first)
    if np.any(first):
        # Hearts. First trick: the opening card is led; a player who cannot follow
        # may not play a heart or QS unless nothing else is left (QS never, by option).
        opening = np.uint64(1 << opening_card(rules))
        clean = hand & ~_PENALTY_CARDS
        if rules.queen_never_first_trick:
            fallback = np.where(hand & ~_QUEEN != 0, hand & ~_QUEEN, hand)
        else:
            fallback = hand
        void_first = np.where(clean != 0, clean, fallback)
        legal = np.where(first & ~leading & (follow == 0), void_first, legal)
        legal = np.where(first & leading, opening, legal)
    if np.any(leading & ~first):
        # Hearts may not be led until broken, unless the leader holds only hearts.
        no_hearts = hand & ~_HEARTS
        unbroken_lead = leading & ~first & ~hearts_broken & (no_hearts != 0)
        legal = np.where(unbroken_lead, no_hearts, legal)
    return legal
