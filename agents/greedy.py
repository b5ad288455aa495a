"""A rule-aware one-trick heuristic for both games and every variant, batched.

The play rules live in one function, ``greedy_play``, on card sets (uint64 bitmasks):
the ``greedy`` agent calls it on what it decodes from its observations
(``smoor_env.observation.decode``), and the greedy rollout policy of the search
agents (``agents.rollout``) calls it on the engine's arrays, without building an
observation. It scores nothing card by card: every rule is a few operations on
(N,) arrays of card sets, so a greedy rollout ply costs about as much as the
engine step it feeds.

Smoorverliefd (collect hearts):

* Following suit: if the trick holds hearts (or hearts were led), win it as cheaply
  as is safe: the lowest winning card when I play last, the highest winning card
  otherwise; a heart trick I cannot win gets my lowest heart. A heartless trick is
  ducked: the highest card that still loses, else the lowest card.
* Void in the led suit: with hearts as trump, ruff a trick that holds hearts with
  the lowest winning heart; otherwise keep hearts for my own tricks and shed the
  lowest card of my shortest plain suit.
* Leading: the highest heart if no unseen heart beats it (it collects the hearts
  the others must follow with); otherwise low from my longest plain suit, keeping
  my high cards to win heart tricks later.
* Bidding (Blinde Liefde): the hearts I hold from ten up, plus one for every two
  other aces, which is roughly how many hearts they capture.
* Cursed suit (Cupid's Arrow): the suit in which I hold the fewest high cards (so
  I will win few of its tricks), hearts last.

Hearts (avoid penalty points):

* Following suit: the highest card that still loses to the trick's best; if every
  card wins, the highest (but never ``QS``) when I am last and the trick holds no
  points, else the lowest (``QS`` last).
* Void: dump ``QS`` first, then ``AS``/``KS`` while ``QS`` is out, then the highest
  heart, then the highest card.
* Leading: the lowest card of my shortest plain suit, keeping spades while ``QS``
  is out and I hold ``QS``, ``KS`` or ``AS``; hearts only when nothing else is legal.
* Passing: ``QS``, ``AS``, ``KS``, then the highest hearts, then the highest cards.
"""

from __future__ import annotations

import numpy as np

from agents.base import check_mask, pack_mask, register
from smoor_env import cards as C
from smoor_env.observation import decode
from smoor_env.play import trick_strength_table
from smoor_env.state import Phase

_SUIT = C.SUIT_MASKS  # (4,) uint64
_HEARTS = np.uint64(C.HEART_MASK)
_QS = C.QUEEN_OF_SPADES
_QS_BIT = np.uint64(1 << _QS)
_TOP_SPADES = np.uint64(C.mask_of(C.parse_cards("KS AS")))
_POINTS = _HEARTS | _QS_BIT  # Hearts' penalty cards
_ZERO = np.uint64(0)
_FROM_TEN = np.uint64(C.mask_of(C.parse_cards("TH JH QH KH AH")))
_OTHER_ACES = np.uint64(C.mask_of(C.parse_cards("AC AD AS")))
_HIGH = np.uint64(C.mask_of([13 * s + r for s in range(4) for r in range(9, 13)]))  # J..A
_BID, _CURSE = 52, 66  # first action ids of bids and cursed suits
# Pass order of Hearts: QS, AS, KS, then hearts high to low, then the rest high to low.
_RANK = C.RANK_OF
_DANGER = (_RANK + np.where(C.SUIT_OF == C.HEARTS, 10 + _RANK, 0)
           + 25 * np.isin(np.arange(52), C.parse_cards("AS KS")) + 40 * (np.arange(52) == _QS))


def _beats_table(trump_hearts: bool) -> np.ndarray:
    """(5 * 52,) uint64: at ``led * 52 + c`` the cards that beat card c in a trick led with
    suit ``led``, from the engine's own ``trick_strength_table``."""
    strength = trick_strength_table(trump_hearts).reshape(5, 52)
    beats = np.zeros(5 * 52, np.uint64)
    for led in range(4):
        for card in range(52):
            beats[led * 52 + card] = C.mask_of(np.flatnonzero(strength[led] > strength[led, card]))
    return beats


_BEATS = {trump: _beats_table(trump) for trump in (False, True)}


def _suit_lengths(cards: np.ndarray) -> np.ndarray:
    """(N, 4) int64 cards of each suit in each (N,) uint64 set."""
    return np.bitwise_count(cards[:, None] & _SUIT[None, :]).astype(np.int64)


def _lowest_of_suit(cards: np.ndarray, suit: np.ndarray) -> np.ndarray:
    """(N,) lowest card of ``suit`` (N,) in each set."""
    return C.lowest_card(cards & _SUIT[suit])


def _highest_by_rank(cards: np.ndarray) -> np.ndarray:
    """(N,) the card of the highest rank in each non-empty set (ties: the highest suit)."""
    tops = C.highest_card(cards[:, None] & _SUIT[None, :])  # (N, 4), -1 where none
    ranks = np.where(tops >= 0, tops % 13 * 4 + np.arange(4), -1)
    return tops[np.arange(len(cards)), np.argmax(ranks, axis=1)]


def trick_best(trick: np.ndarray, led_suit: np.ndarray, trump_hearts: bool
               ) -> tuple[np.ndarray, np.ndarray]:
    """The card winning the trick in progress so far, and what would beat it.

    Args:
        trick: (N,) uint64 cards played to the trick in progress (non-empty).
        led_suit: (N,) suit led.
        trump_hearts: hearts are trump.

    Returns:
        best (N,) int64: the highest card of the led suit, or with hearts as trump the
        highest heart once the trick holds one (``tests/test_agents.py`` checks it
        against the engine's trick winners); beaters (N,) uint64: the cards that would
        beat it, from the engine's strength table.
    """
    led_suit = led_suit.astype(np.int64)
    led_cards = _SUIT[led_suit]  # (N,)
    if trump_hearts:
        led_cards = np.where((trick & _HEARTS) != 0, _HEARTS, led_cards)
    best = C.highest_card(trick & led_cards)
    return best, _BEATS[bool(trump_hearts)][led_suit * 52 + best]


def greedy_play(hand: np.ndarray, legal: np.ndarray, trick: np.ndarray, led_suit: np.ndarray,
                last: np.ndarray, played: np.ndarray, *, hearts: bool,
                trump_hearts: bool) -> np.ndarray:
    """(N,) int64 the greedy card of each of N play decisions of one game and trump rule.

    Args:
        hand: (N,) uint64 the acting seat's hand.
        legal: (N,) uint64 its legal cards (non-empty).
        trick: (N,) uint64 the cards played to the trick in progress.
        led_suit: (N,) suit led to it (-1: the seat leads).
        last: (N,) bool the seat plays the trick's last card.
        played: (N,) uint64 every card played this round (the trick's included).
        hearts: the game is Hearts (else Smoorverliefd).
        trump_hearts: hearts are trump (Smoorverliefd's Met Troef).

    Leading and following are computed only for the rows that lead or follow (in a
    rollout every world is at the same place in the trick, so one of them is skipped).
    """
    leading = led_suit < 0  # (N,)
    lead_rows = np.flatnonzero(leading)
    if len(lead_rows) == len(led_suit):
        return _lead(hand, legal, played, hearts)
    if not len(lead_rows):
        return _follow(hand, legal, trick, led_suit, last, played, hearts, trump_hearts)
    out = np.empty(len(led_suit), np.int64)
    out[lead_rows] = _lead(hand[lead_rows], legal[lead_rows], played[lead_rows], hearts)
    rows = np.flatnonzero(~leading)
    out[rows] = _follow(hand[rows], legal[rows], trick[rows], led_suit[rows], last[rows],
                        played[rows], hearts, trump_hearts)
    return out


def _lead(hand, legal, played, hearts):
    """(N,) the card to lead."""
    if hearts:
        lengths = _suit_lengths(legal)  # (N, 4)
        queen_out = (played & _QS_BIT) == 0
        keep_spades = queen_out & ((hand & (_TOP_SPADES | _QS_BIT)) != 0)
        order = lengths + np.where(lengths == 0, 1000, 0)
        order[:, C.HEARTS] += 100
        order[:, 3] += 50 * keep_spades
        return _lowest_of_suit(legal, np.argmin(order, axis=1))
    plain = legal & ~_HEARTS
    lengths = _suit_lengths(plain)  # (N, 4), hearts 0
    low_lead = np.where(plain != 0, _lowest_of_suit(plain, np.argmax(lengths, axis=1)),
                        C.lowest_card(legal))
    top_heart = C.highest_card(legal & _HEARTS)
    safe = (top_heart >= 0) & (top_heart > C.highest_card(_HEARTS & ~hand & ~played))
    return np.where(safe, top_heart, low_lead)


def _follow(hand, legal, trick, led_suit, last, played, hearts, trump_hearts):
    """(N,) the card to play to a trick that has been led."""
    best, beaters = trick_best(trick, led_suit, trump_hearts)
    follows = (legal & _SUIT[led_suit]) != 0  # (N,) following suit (else void)
    losers = legal & ~beaters
    winners = legal & beaters
    # Each rule picks a set and its highest or lowest card: one highest_card for all.
    if hearts:
        high = (losers != 0) | (last & ((trick & _POINTS) == 0))  # a loser, or a clean last
        pool = np.where(losers != 0, losers, legal & ~_QS_BIT)
    else:
        take = (((trick & _HEARTS) != 0) | (led_suit == C.HEARTS)) & (winners != 0)
        duck_high = (losers != 0) & (led_suit != C.HEARTS)  # the highest card that loses
        pool = np.where(take, winners, np.where(duck_high, losers, legal))
        high = np.where(take, ~last, duck_high)  # win cheaply when last, else surely
    pool = np.where(high, pool, pool & (~pool + np.uint64(1)))  # lowest: keep the lowest bit
    out = C.highest_card(pool)
    if hearts:
        out[out < 0] = _QS  # only QS is legal
    void = np.flatnonzero(~follows)
    if len(void):
        out[void] = _discard(hand[void], legal[void], trick[void], led_suit[void],
                             beaters[void], played[void], hearts, trump_hearts)
    return out


def _discard(hand, legal, trick, led_suit, beaters, played, hearts, trump_hearts):
    """(N,) the card to play when void in the led suit."""
    if hearts:
        queen = (legal & _QS_BIT) != 0
        tops = legal & np.where((played & _QS_BIT) == 0, _TOP_SPADES, _ZERO)  # while QS is out
        hearts_held = legal & _HEARTS
        out = np.where(queen, _QS, C.highest_card(np.where(tops != 0, tops, hearts_held)))
        rest = np.flatnonzero(~queen & (tops == 0) & (hearts_held == 0))  # none of those
        if len(rest):
            out[rest] = _highest_by_rank(legal[rest])
        return out
    plain = legal & ~_HEARTS
    lengths = _suit_lengths(plain)  # (N, 4), hearts 0
    shortest = np.argmin(np.where(lengths == 0, 1000, lengths), axis=1)
    shed = np.where(plain != 0, _lowest_of_suit(plain, shortest), C.lowest_card(legal))
    if trump_hearts:
        ruff = legal & beaters & _HEARTS
        worth = (trick & _HEARTS) != 0
        shed = np.where(worth & (ruff != 0), C.lowest_card(ruff), shed)
    return shed


def greedy_bid(hand: np.ndarray) -> np.ndarray:
    """(N,) int64 bid 0..13: hearts held from ten up, plus one for every two other aces."""
    estimate = np.bitwise_count(hand & _FROM_TEN) + np.bitwise_count(hand & _OTHER_ACES) // 2
    return np.clip(estimate.astype(np.int64), 0, 13)


def greedy_curse(hand: np.ndarray, legal_suits: np.ndarray, hearts: np.ndarray) -> np.ndarray:
    """(N,) int64 cursed suit: the legal suit with the fewest high cards (J..A) in hand,
    then the fewest cards; a heart collector (Smoorverliefd) avoids cursing hearts.

    Args:
        hand: (N,) uint64; legal_suits: (N, 4) bool; hearts: (N,) bool the game is Hearts.
    """
    high = np.bitwise_count(hand[:, None] & _SUIT[None, :] & _HIGH).astype(np.int64)  # (N, 4)
    held = _suit_lengths(hand)
    cost = 10 * high + held
    cost[:, C.HEARTS] += np.where(hearts, 0, 100)
    return np.argmin(np.where(legal_suits, cost, 10**6), axis=1)


def greedy_pass(legal: np.ndarray) -> np.ndarray:
    """(N,) int64 the card to pass: the most dangerous legal card (see ``_DANGER``)."""
    held = C.mask_to_bool(legal)  # (N, 52)
    return np.argmax(np.where(held, _DANGER, -1), axis=1)


@register("greedy")
class GreedyAgent:
    """One-trick heuristic; see the module docstring for its rules."""

    name = "greedy"
    uses_observation = True

    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        mask = check_mask(observations)  # (B, 70)
        view = decode(observations["observation"])
        legal = pack_mask(mask)  # (B, 2) uint64: cards in word 0, bids and suits in word 1
        actions = np.zeros(len(mask), np.int64)
        phase = view["phase"]
        hearts = view["flags"]["hearts"]
        for game in (False, True):
            for trump in (False, True):
                rows = np.flatnonzero((phase == Phase.PLAY) & (hearts == game)
                                      & (view["flags"]["trump_hearts"] == trump))
                if len(rows):
                    actions[rows] = greedy_play(
                        view["hand"][rows], legal[rows, 0] & C.DECK_MASK,
                        view["trick_cards"][rows],
                        view["led_suit"][rows],
                        view["trick_size"][rows] == view["players"][rows] - 1,
                        np.bitwise_or.reduce(view["played"][rows], axis=1),
                        hearts=game, trump_hearts=trump)
        rows = np.flatnonzero(phase == Phase.PASS)
        actions[rows] = greedy_pass(legal[rows, 0] & C.DECK_MASK)
        rows = np.flatnonzero(phase == Phase.BID)
        bid = greedy_bid(view["hand"][rows])
        actions[rows] = _BID + bid
        rows = np.flatnonzero(phase == Phase.CURSE)
        suits = C.mask_to_bool(legal[rows, 1] >> np.uint64(_CURSE - 64), 4)
        actions[rows] = _CURSE + greedy_curse(view["hand"][rows], suits, hearts[rows])
        return actions
