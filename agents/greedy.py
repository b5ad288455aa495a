"""A rule-aware one-trick heuristic for both games and every variant, batched.

The play rules live in one function, ``greedy_play``, on card sets (uint64 bitmasks):
the ``greedy`` agent calls it on what it decodes from its observations
(``smoor_env.observation.decode``), and the greedy rollout policy of the search
agents (``agents.rollout``) calls it on the engine's arrays, without building an
observation. It scores nothing card by card: every rule is a few operations on
(N,) arrays of card sets (suits compared as rows of a (k, N) array, never along a
short inner axis, and one ``highest_card`` per decision), so a greedy rollout ply
costs under twice a random one (README, "rollout ply"; ``tests/test_greedy_snapshot.py``
pins the moves).

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
* Bidding (Blinde Liefde): 1 with the ace of hearts, else 0. Once I have won
  exactly as many hearts as I bid, one more would cost me the bid (10 points become
  -5), so I play to take none: lead the lowest card of my shortest plain suit;
  follow with the highest heart that loses, else the highest-ranked card that
  loses, else the lowest card. Played that way, a bid of 0 (or 1, with the ace,
  which is hard to shed) is made far more often than a guess of the hearts I
  would collect: over the bids 0-8 played out on the same deals, this rule beat
  every rule of the form a x (hearts from rank k up) + b x (other aces) + c
  (README, "Greedy play knows its bid").
* Partner Smoorverliefd: when my partner's card is winning the trick and I play
  last, the trick is ours already: I play my lowest card that does not overtake
  it (else my lowest card), keeping high cards and hearts for later tricks.
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

``greedy:eps=EPS`` (or ``greedy:EPS``, as the rollout spec writes it): epsilon-greedy,
each decision a uniformly random legal action with probability EPS, else the greedy
one (``epsilon_greedy``, the draw the rollout policy ``"greedy:EPS"`` makes too).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from agents.base import check_mask, check_number, check_observation, pack_mask, register
from agents.random_agent import RandomAgent
from smoor_env.core import cards as C
from smoor_env.core.state import Phase
from smoor_env.core.tricks import trick_strength_table
from smoor_env.observation import decode

_SUIT = C.SUIT_MASKS  # (4,) uint64
_HEARTS = np.uint64(C.HEART_MASK)
_QS = C.QUEEN_OF_SPADES
_QS_BIT = np.uint64(1 << _QS)
_TOP_SPADES = np.uint64(C.mask_of(C.parse_cards("KS AS")))
_POINTS = _HEARTS | _QS_BIT  # Hearts' penalty cards
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


# The play rules pick a suit by its length (the longest or shortest non-empty one, ties
# to the lowest suit) without any (N, 4) array: numpy is slow along a short inner axis,
# so the suits are rows of a (k, N) array. Each suit gets a uint8 key per set, the
# smallest key wins, and the key's low two bits are its suit: `(length - 1) * 4 + suit`
# for the shortest (an empty suit wraps round to 252 + suit), `(13 - length) * 4 + suit`
# for the longest (an empty suit scores 52 + suit). Hearts' lead adds a class in bits
# 6-7 (64: spades kept back, 128: hearts), which an empty suit's key (252..255) has.
_U8_4 = np.uint8(4)
_PLAIN_SUITS, _ALL_SUITS = np.array([C.CLUBS, C.DIAMONDS, C.SPADES]), np.arange(4)
_PLAIN_CARDS, _ALL_CARDS = _SUIT[_PLAIN_SUITS, None], _SUIT[:, None]  # (3, 1), (4, 1) uint64
_PLAIN_SHORTEST = (252 + _PLAIN_SUITS[:, None]).astype(np.uint8)  # (3, 1) wraps round
_ALL_SHORTEST = (252 + _ALL_SUITS[:, None]).astype(np.uint8)  # (4, 1)
_PLAIN_LONGEST = (52 + _PLAIN_SUITS[:, None]).astype(np.uint8)  # (3, 1)
_HEARTS_LAST = np.where(_ALL_SUITS == C.HEARTS, 128, 0).astype(np.uint8)[:, None]  # (4, 1)


def _suit_keys(cards: np.ndarray, suit_cards: np.ndarray, offsets: np.ndarray,
               longest: bool = False) -> np.ndarray:
    """(k, N) uint8 the key of each of k suits (``suit_cards`` (k, 1) uint64 their cards,
    ``offsets`` (k, 1) uint8 252 + suit for the shortest, 52 + suit for the longest) in
    each of the (N,) uint64 sets."""
    four_lengths = np.bitwise_count(cards & suit_cards)  # (k, N) uint8
    four_lengths *= _U8_4
    if longest:
        return np.subtract(offsets, four_lengths, out=four_lengths)
    return np.add(four_lengths, offsets, out=four_lengths)


def _key_table(first_empty: int) -> np.ndarray:
    """(256,) uint64 the suit of each key (``SUIT_MASKS[key & 3]``); from ``first_empty``
    on (every candidate suit empty) the whole deck, so that the caller's set is kept."""
    table = _SUIT[np.arange(256) & 3]
    table[first_empty:] = C.DECK_MASK
    return table


_SHORTEST_KEY, _LONGEST_KEY = _key_table(252), _key_table(52)


def _pick(cards: np.ndarray, high: np.ndarray) -> np.ndarray:
    """(N,) int64 the highest card of each (N,) uint64 set where ``high`` (N,) bool, else
    its lowest (-1 where empty): every follow rule ends here, with one ``highest_card``."""
    return C.highest_card(np.where(high, cards, cards & np.negative(cards)))  # x & -x: lowest bit


def _top_rank_cards_table() -> np.ndarray:
    """(8192,) uint64: for each set of ranks (bit r = rank r), the cards of its highest rank."""
    top_rank = np.maximum(C.highest_card(np.arange(8192, dtype=np.uint64)), 0)
    return np.array([C.mask_of(range(r, 52, 13)) for r in range(13)], np.uint64)[top_rank]


_TOP_RANK_CARDS = _top_rank_cards_table()  # 64 KB


def _highest_by_rank(cards: np.ndarray) -> np.ndarray:
    """(N,) uint64 for each non-empty set, its cards of the highest rank held (so that its
    highest card is that rank's highest suit)."""
    ranks = cards | cards >> np.uint64(26)  # (N,) rank r of any suit at bit r or 13 + r
    ranks |= ranks >> np.uint64(13)
    ranks &= np.uint64(0x1FFF)
    return cards & _TOP_RANK_CARDS.take(ranks.view(np.int64))


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
    led_suit = led_suit.astype(np.intp)
    return _trick_best(trick, led_suit, _SUIT.take(led_suit), trump_hearts)


def _trick_best(trick, led_suit, led_cards, trump_hearts):
    """``trick_best`` given ``led_suit`` (N,) intp and ``led_cards`` (N,) uint64, the led
    suit's 13 cards, which the caller also uses."""
    if trump_hearts:
        led_cards = np.where((trick & _HEARTS) != 0, _HEARTS, led_cards)
    best = C.highest_card(trick & led_cards)
    return best, _BEATS[bool(trump_hearts)].take(led_suit * 52 + best)


def greedy_play(hand: np.ndarray, legal: np.ndarray, trick: np.ndarray, led_suit: np.ndarray,
                last: np.ndarray, played: np.ndarray, *, hearts: bool,
                trump_hearts: bool, made_bid: np.ndarray | None = None,
                partner: np.ndarray | None = None) -> np.ndarray:
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
        made_bid: (N,) bool, or None (no bids): the seat has won exactly as many hearts
            as it bid (Blinde Liefde), so one more would cost it the bid; it then plays
            to take no heart (the rows ``made`` of ``_lead_smoorverliefd`` and
            ``_follow_smoorverliefd``).
        partner: (N,) int64, or None (no partners): the card the seat's partner played
            to the trick in progress, -1 if none yet (Partner Smoorverliefd).

    Leading and following are computed only for the rows that lead or follow (in a
    rollout every world is at the same place in the trick, so one of them is skipped).
    """
    lead, follow = ((_lead_hearts, _follow_hearts) if hearts
                    else (_lead_smoorverliefd, _follow_smoorverliefd))
    made = None if hearts else made_bid  # (N,) bool, or None
    leading = led_suit < 0  # (N,)
    if leading.all():
        return lead(hand, legal, played, made)
    if not leading.any():
        return follow(hand, legal, trick, led_suit, last, played, trump_hearts, made, partner)
    out = np.empty(len(led_suit), np.int64)
    rows = np.flatnonzero(leading)
    out[rows] = lead(hand[rows], legal[rows], played[rows], None if made is None else made[rows])
    rows = np.flatnonzero(~leading)
    out[rows] = follow(hand[rows], legal[rows], trick[rows], led_suit[rows], last[rows],
                       played[rows], trump_hearts, None if made is None else made[rows],
                       None if partner is None else partner[rows])
    return out


def _lead_smoorverliefd(hand, legal, played, made=None):
    """(N,) the card to lead in Smoorverliefd: the highest heart if no unseen heart beats
    it, else the lowest card of the longest plain suit (of any suit if all are hearts).
    Rows ``made`` (N,) bool (Blinde Liefde, bid made: no more hearts wanted): the lowest
    card of the shortest plain suit (all hearts: the lowest heart)."""
    key = _suit_keys(legal, _PLAIN_CARDS, _PLAIN_LONGEST, longest=True).min(axis=0)  # (N,)
    low_lead = legal & _LONGEST_KEY.take(key)
    low_lead &= np.negative(low_lead)  # its lowest card (x & -x keeps the lowest bit)
    hearts_held = legal & _HEARTS
    # The unseen hearts and mine are disjoint sets, so the larger number holds the top heart.
    safe = hearts_held > (_HEARTS & ~(hand | played))
    card = C.highest_card(np.where(safe, hearts_held, low_lead))
    rows = np.flatnonzero(made) if made is not None else ()
    if len(rows):
        held = legal[rows]
        key = _suit_keys(held, _PLAIN_CARDS, _PLAIN_SHORTEST).min(axis=0)  # (M,) uint8
        card[rows] = C.lowest_card(held & _SHORTEST_KEY.take(key))
    return card


def _lead_hearts(hand, legal, played, made=None):
    """(N,) the card to lead in Hearts: the lowest card of the shortest plain suit, spades
    after the other plain suits while QS is out and I hold QS, KS or AS, hearts last."""
    queen_out = (played & _QS_BIT) == 0
    keep_spades = queen_out & ((hand & (_TOP_SPADES | _QS_BIT)) != 0)  # (N,) bool
    keys = _suit_keys(legal, _ALL_CARDS, _ALL_SHORTEST)  # (4, N) uint8
    keys |= _HEARTS_LAST
    keys[C.SPADES] |= keep_spades.view(np.uint8) * np.uint8(64)
    return C.lowest_card(legal & _SHORTEST_KEY.take(keys.min(axis=0)))


def _follow_smoorverliefd(hand, legal, trick, led_suit, last, played, trump_hearts, made=None,
                          partner=None):
    """(N,) the card to play to a trick that has been led, in Smoorverliefd.

    Rows where ``partner`` (N,) (the partner's card in this trick, -1 none) is winning
    the trick and the seat plays last: the trick is the team's already, so the lowest
    card that does not overtake it (else the lowest card). Rows ``made`` (N,) bool
    (Blinde Liefde, bid made: no more hearts wanted): the highest heart that loses to
    the trick's best, else the highest-ranked card that loses, else (every card wins)
    the lowest card."""
    led_suit = led_suit.astype(np.intp)
    led_cards = _SUIT.take(led_suit)  # (N,) uint64
    best, beaters = _trick_best(trick, led_suit, led_cards, trump_hearts)
    winners = legal & beaters
    losers = legal ^ winners
    heart_trick = (trick & _HEARTS) != 0  # (N,) (a heart lead is in the trick too)
    take = heart_trick & (winners != 0)  # win it: lowest winner when last, else highest
    duck_high = (losers != 0) & (led_suit != C.HEARTS)  # the highest card that loses
    pool = np.where(take, winners, np.where(duck_high, losers, legal))  # else: the lowest
    high = np.where(take, ~last, duck_high)
    void = (legal & led_cards) == 0  # (N,) cannot follow suit
    if void.any():  # shed the lowest card of the shortest plain suit (all hearts: lowest)
        key = _suit_keys(legal, _PLAIN_CARDS, _PLAIN_SHORTEST).min(axis=0)  # (N,) uint8
        shed = legal & _SHORTEST_KEY.take(key)
        if trump_hearts:  # ruff a trick holding hearts with the lowest winning heart
            ruff = legal & beaters & _HEARTS
            shed = np.where(heart_trick & (ruff != 0), ruff, shed)
        pool = np.where(void, shed, pool)
        high &= ~void
    rows = np.flatnonzero(last & (partner == best)) if partner is not None else ()
    if len(rows):  # the partner takes the trick: my lowest card that does not overtake it
        lose = losers[rows]
        pool[rows] = np.where(lose != 0, lose, legal[rows])
        high[rows] = False
    rows = np.flatnonzero(made) if made is not None else ()
    if len(rows):
        lose = losers[rows]
        lose_hearts = lose & _HEARTS
        shed = np.where(lose_hearts != 0, lose_hearts, _highest_by_rank(lose))
        some = lose != 0
        pool[rows] = np.where(some, shed, legal[rows])
        high[rows] = some
    return _pick(pool, high)


def _follow_hearts(hand, legal, trick, led_suit, last, played, trump_hearts, made=None,
                   partner=None):
    """(N,) the card to play to a trick that has been led, in Hearts."""
    led_suit = led_suit.astype(np.intp)
    led_cards = _SUIT.take(led_suit)  # (N,) uint64
    _, beaters = _trick_best(trick, led_suit, led_cards, trump_hearts)
    losers = legal & ~beaters
    ducks = losers != 0  # (N,) the highest card that still loses
    # Else the highest when last in a trick without points, the lowest otherwise; QS last.
    high = ducks | (last & ((trick & _POINTS) == 0))
    pool = np.where(ducks, losers, legal & ~_QS_BIT)
    pool = np.where(pool != 0, pool, legal)  # only QS is legal
    # The void rows' rules are longer than Smoorverliefd's: on those rows only (faster
    # at every batch size, measured), QS; else AS/KS while QS is out; else the highest
    # heart; else the highest rank.
    void = np.flatnonzero((legal & led_cards) == 0)  # (V,) cannot follow suit
    if len(void):
        held = legal[void]  # (V,) uint64
        queen = held & _QS_BIT
        # QS's bit * 6 is AS and KS: dumped while QS is neither played nor mine to dump.
        dump = queen | held & (((played[void] | queen) & _QS_BIT) ^ _QS_BIT) * np.uint64(6)
        dump = np.where(dump != 0, dump, held & _HEARTS)
        rest = np.flatnonzero(dump == 0)
        if len(rest):
            dump[rest] = _highest_by_rank(held[rest])
        pool[void] = dump
        high[void] = True
    return _pick(pool, high)


def made_bid(won: np.ndarray, bids: np.ndarray) -> np.ndarray:
    """(N,) bool: the seat has won exactly as many hearts as it bid (``won`` (N,) uint64 its
    cards won this round, ``bids`` (N,) its bid, -1 for none)."""
    return np.bitwise_count(won & _HEARTS) == bids


def greedy_bid(hand: np.ndarray) -> np.ndarray:
    """(N,) int64 bid: 1 with the ace of hearts, else 0 (the module docstring says why)."""
    return ((hand >> np.uint64(C.ACE_OF_HEARTS)) & np.uint64(1)).astype(np.int64)


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


def epsilon_greedy(moves: np.ndarray, epsilon: float, rng: np.random.Generator,
                   sample: Callable[[np.ndarray], np.ndarray],
                   explorers: np.ndarray | None = None) -> np.ndarray:
    """``moves`` (n,) int64 with each row, with probability ``epsilon``, replaced (in place)
    by a uniformly random legal action: the draw of the rollout policy ``"greedy:EPS"`` and
    of the agent ``greedy:eps=EPS``.

    One ``rng.random(n)`` decides the rows to explore (``explorers`` (n,) bool, if given,
    keeps the other rows greedy); then ``sample(rows)`` gives their (k,) random actions,
    called even when no row explores, so that the draws a game takes do not depend on the
    other games of the batch.
    """
    if epsilon <= 0.0:  # pure greedy: no draw at all
        return moves
    chosen = rng.random(len(moves)) < epsilon  # (n,)
    if explorers is not None:
        chosen &= explorers
    rows = np.flatnonzero(chosen)  # (k,)
    moves[rows] = sample(rows)
    return moves


_RANDOM = RandomAgent()


@register("greedy")
class GreedyAgent:
    """One-trick heuristic; see the module docstring for its rules.

    Args:
        eps: the probability of a uniformly random legal action instead of the greedy one
            at each decision, 0..1 (0: pure greedy, which draws nothing from ``rng``).
    """

    name = "greedy"
    uses_observation = True
    #: The option a bare spec value sets: ``"greedy:0.2"`` is ``"greedy:eps=0.2"``, as the
    #: rollout spec ``"greedy:EPS"`` (``agents.base.parse_agent``).
    bare_option = "eps"

    def __init__(self, eps: float = 0.0) -> None:
        self.eps = check_number("eps", eps)
        if self.eps > 1.0:
            raise ValueError(f"eps must be a probability in [0, 1], got {eps!r}")

    def __repr__(self) -> str:
        return f"GreedyAgent(eps={self.eps})" if self.eps else "GreedyAgent()"

    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        mask = check_mask(observations)  # (B, 70)
        view = decode(check_observation(observations, mask))
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
                        hearts=game, trump_hearts=trump,
                        made_bid=made_bid(view["won"][rows, 0], view["bids"][rows, 0]),
                        partner=np.where(view["flags"]["partners"][rows],
                                         view["trick"][rows, 2], -1))
        rows = np.flatnonzero(phase == Phase.PASS)
        actions[rows] = greedy_pass(legal[rows, 0] & C.DECK_MASK)
        rows = np.flatnonzero(phase == Phase.BID)
        bid = greedy_bid(view["hand"][rows])
        actions[rows] = _BID + bid
        rows = np.flatnonzero(phase == Phase.CURSE)
        suits = C.mask_to_bool(legal[rows, 1] >> np.uint64(_CURSE - 64), 4)
        actions[rows] = _CURSE + greedy_curse(view["hand"][rows], suits, hearts[rows])
        return epsilon_greedy(actions, self.eps, rng,
                              lambda explore: _RANDOM.act_packed(legal, rng).take(explore))

    def act_state(self, engine, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(n,) int64 the same moves as ``act`` for the seats to act in games ``rows`` of
        ``engine``, read straight from its state (no observation built): the state-level
        policy the agent loop prefers (``smoor_env.envs.agent_loop``)."""
        from agents.rollout import greedy_moves  # (rollout builds on this module)

        st = engine.state
        moves = greedy_moves(engine).take(rows)  # play and bid phases
        phase = st.phase.take(rows)  # (n,)
        passing = np.flatnonzero(phase == Phase.PASS)
        if len(passing):  # (in the pass phase the legal set is the cards still to choose)
            moves[passing] = greedy_pass(st.legal.take(rows[passing]))
        cursing = np.flatnonzero(phase == Phase.CURSE)
        if len(cursing):  # the legal set holds the suits, relative to the first curse action
            games = rows[cursing]
            hand = st.hands[games, st.current_player[games]]
            suits = C.mask_to_bool(st.legal.take(games), 4)
            moves[cursing] = _CURSE + greedy_curse(
                hand, suits, np.full(len(games), engine.rules.is_hearts))
        # The random moves as ``act`` draws them: from the rows' packed legal sets.
        return epsilon_greedy(moves, self.eps, rng, lambda explore: _RANDOM.act_packed(
            engine.legal_words.take(rows, axis=0), rng).take(explore))
