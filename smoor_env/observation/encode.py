"""``observe``: the definition of an observation, built from the whole state; the
inferences it shares with the tracker (voids shown by play); ``full_state``.

The layout is in ``smoor_env.observation.layout``.
"""

from collections.abc import Sequence

import numpy as np

from smoor_env.core import cards as C
from smoor_env.core import deal
from smoor_env.core.engine import Engine
from smoor_env.core.rules import Rules, turn_order
from smoor_env.core.scoring import provisional_points, score_scale
from smoor_env.core.state import Phase, State
from smoor_env.core.tricks import breaks_hearts, hearts_breakers
from smoor_env.observation.layout import (
    COMPACT_UNITS,
    MAX_SEATS,
    OBSERVATION_SIZE,
    RULE_FLAGS,
    _encode,
    observation_dtype,
    split_observation,
)


def _card_sets(cards: np.ndarray) -> np.ndarray:
    """Card-id arrays (..., K) with -1 = none -> uint64 sets (...)."""
    bits = np.where(cards >= 0, C.CARD_BITS.take(np.maximum(cards, 0)), np.uint64(0))
    return np.bitwise_or.reduce(bits, axis=-1)


def _bits(masks: np.ndarray) -> np.ndarray:
    """uint64 bitmasks of shape S -> uint8 0/1 array S + (52,) (bit c = card id c)."""
    m = np.ascontiguousarray(masks, dtype=np.uint64)
    return np.unpackbits(m.view(np.uint8).reshape(*m.shape, 8), axis=-1, count=C.NUM_CARDS,
                         bitorder="little")


def _put_bits(block: np.ndarray, masks: np.ndarray) -> None:
    """Write ``_bits(masks)`` into a zeroed ``block`` (masks.shape + (52,)): only the rows
    with a card, if they are few (the others stay zeros: no pass over them)."""
    held = masks if masks.ndim == 1 else np.bitwise_or.reduce(masks, axis=1)  # (n,)
    rows = np.flatnonzero(held)
    if 2 * len(rows) > len(masks):
        block[...] = _bits(masks)
    elif len(rows):
        block[rows] = _bits(masks[rows])


def observe(engine: Engine, seats: np.ndarray | int,
            games: np.ndarray | None = None, out: np.ndarray | None = None,
            dtype: str = "float32") -> np.ndarray:
    """(n, OBSERVATION_SIZE) float32 (or ``dtype``): what each game's observer seat knows.

    Every block is written in place into one zeroed array (the views of
    ``split_observation``), seat-relative blocks through one (n, P) index of the
    absolute seat behind each relative seat. This is the definition of the
    observation; ``ObservationTracker`` keeps the same values up to date step by
    step, for the environments.

    Args:
        engine: the engine whose ``state`` is observed.
        seats: (n,) absolute seat of the observer in each game (or one seat for all).
        games: (n,) indices of the games to observe (repeats allowed); default all B.
        out: an (n, OBSERVATION_SIZE) array of ``dtype`` to write into (and return)
            instead of a new one; reusing memory saves the cost of touching fresh pages.
        dtype: ``"float32"`` or ``"int8"`` (compact: see the module docstring).
    """
    dtype = observation_dtype(dtype)
    st, rules, p = engine.state, engine.rules, engine.rules.num_players
    if games is None:
        sub = st  # every game: read the arrays themselves
    else:
        games = _indices("games", games, engine.batch_size)
        sub = _Rows(st, games)
    b = len(sub.phase)
    seat = np.asarray(seats)
    if seat.ndim > 1 or seat.shape not in ((), (b,)):
        raise ValueError(f"seats must be one seat or one per observed game ({b}), got shape "
                         f"{seat.shape}")
    seat = np.broadcast_to(_indices("seats", seat.reshape(-1), p), (b,))
    rows = np.arange(b)
    by_rel = (rows[:, None], turn_order(seat, p))  # (n, P) index: relative seat k
    ks = np.arange(p)[None, :]  # (1, P) relative seat numbers
    if out is None:
        out = np.zeros((b, OBSERVATION_SIZE), dtype)
    elif out.shape != (b, OBSERVATION_SIZE) or out.dtype != dtype:
        raise ValueError(f"out must be a ({b}, {OBSERVATION_SIZE}) {dtype} array, got "
                         f"{out.shape} {out.dtype}")
    else:
        out.fill(0)
    v = split_observation(out)  # writable views into out

    # (Card blocks are written only in the rows that have a card in them, if they are
    # few: ``out`` is zeros, and at the start of a round most of them are empty.)
    v["phase"][rows, sub.phase] = 1
    _put_bits(v["hand"], sub.hands[rows, seat])
    trick = sub.current_trick[by_rel]  # (n, P) card of each relative seat, -1 = none
    v["current_trick"][rows[:, None], ks, trick] = trick >= 0
    current = np.minimum(sub.trick_index, rules.num_tricks - 1)
    leader = sub.trick_leader[rows, current]  # (n,) absolute seat, -1 before the lead
    v["trick_leader"][rows, (leader - seat) % p] = (sub.trick_size > 0) & (leader >= 0)
    # Cards played: what each seat held when play began, less what it holds now.
    offset = rules.pass_offset(sub.round_number)  # (n,) 0 = no pass this round
    passes = _card_sets(sub.passes)  # (n, P) cards each seat chose to pass
    exchanged = (offset > 0) & (sub.phase != Phase.PASS)  # (n,) the cards changed hands
    received = deal.received(passes, offset)  # (n, P)
    at_start = np.where(exchanged[:, None], (sub.dealt & ~passes) | received, sub.dealt)
    _put_bits(v["played"][:, :p], (at_start & ~sub.hands)[by_rel])
    _put_bits(v["won"][:, :p], sub.won[by_rel])
    shown = np.flatnonzero((sub.trick_index > 0) | (sub.trick_size > 1))  # others: no void yet
    if 2 * len(shown) > b:
        v["voids"][:, :p] = _voids(sub, rules)[by_rel]
    elif len(shown):
        v["voids"][shown, :p] = _voids(_Rows(sub, shown), rules)[np.arange(len(shown))[:, None],
                                                         by_rel[1][shown]]
    scale = score_scale(rules)
    v["round_points"][:, :p] = _encode(provisional_points(rules, sub)[by_rel] / scale, dtype)
    target = float(rules.target_score) if rules.target_score is not None else scale
    v["totals"][:, :p] = _encode(sub.totals[by_rel] / target, dtype)
    bids = sub.bids[by_rel]  # (n, P)
    v["bids"][rows[:, None], ks, bids] = bids >= 0
    v["cursed_suit"][rows, sub.cursed_suit] = sub.cursed_suit >= 0
    v["dealer"][rows, (sub.dealer - seat) % p] = 1
    v["pass_direction"][rows, offset] = offset > 0
    _put_bits(v["passed"], passes[rows, seat])
    _put_bits(v["received"], np.where(exchanged, received[rows, seat], np.uint64(0)))
    v["hearts_broken"][:, 0] = sub.hearts_broken
    v["trick_number"][:, 0] = _encode(sub.trick_index / rules.num_tricks, dtype)
    v["num_players"][:, p - 3] = 1
    v["rules"][:] = [rules.is_hearts] + [bool(getattr(rules, name)) for name in RULE_FLAGS]
    # Each played card's trick: the completed tricks' cards, then the trick in progress's.
    tricks = np.concatenate([np.where((sub.trick_winner >= 0)[:, :, None], sub.trick_cards, -1),
                             sub.current_trick[:, None, :]], axis=1)  # (n, T+1, P) card ids
    number = np.concatenate([np.arange(1, rules.num_tricks + 1)[None, :].repeat(b, 0),
                             sub.trick_index[:, None] + 1], axis=1)  # (n, T+1) trick t + 1
    game, trick, _ = np.nonzero(tricks >= 0)  # every card played, in (n, T+1, P) order
    v["card_trick"][game, tricks[tricks >= 0]] = _encode(number[game, trick] / COMPACT_UNITS,
                                                          dtype)
    return out


def _indices(name: str, values: np.ndarray | Sequence[int], upper: int) -> np.ndarray:
    """(n,) int64 indices 0..upper-1 from a 1-D integer array; ValueError naming ``name``."""
    array = np.asarray(values)
    if array.ndim != 1 or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
        raise ValueError(f"{name} must be a 1-D array of ints, got {array.dtype} of shape "
                         f"{array.shape}")
    if ((array < 0) | (array >= upper)).any():
        raise ValueError(f"{name} must be in 0..{upper - 1}, got {array.tolist()[:10]}")
    return array.astype(np.int64, copy=False)


class _Rows:
    """The state's arrays of some games only (copied on first use), read like a State."""

    def __init__(self, state: State, games: np.ndarray) -> None:
        self._state, self._games = state, games

    def __getattr__(self, name: str) -> np.ndarray:
        # (take along axis 0 is several times faster than indexing [games] for 2-D arrays)
        rows = getattr(self._state, name).take(self._games, axis=0)
        setattr(self, name, rows)
        return rows


# Phase.PLAY as a numpy scalar (numpy compares arrays with an IntEnum member slowly).
_PLAY = np.int8(Phase.PLAY)


def shows_void(card: int | np.ndarray, led: int | np.ndarray) -> bool | np.ndarray:
    """Whether playing ``card`` to a trick whose led suit is ``led`` (-1: none yet; card
    -1: none) shows the player lacks the led suit: a card of another suit. Ints or
    arrays (broadcast)."""
    return (card >= 0) & (led >= 0) & (card // C.CARDS_PER_SUIT != led)


# Hearts' inferences, as bits of the suits (C D H S = bits 0..3) a seat is shown to lack.
_LED_UNBROKEN_HEART = 0b1011  # led a heart before hearts broke: it holds only hearts
_POINTS_ON_FIRST_TRICK = 0b0011  # a point card off suit to the first trick: only points left
_SPADES = 0b1000  # ... and if that card was QS, no spade is left either


def _voids(st: State | _Rows, rules: Rules) -> np.ndarray:
    """(B, P, 4) float32: suits each seat is known to lack.

    A seat that did not follow the led suit lacks it. In Hearts the rules reveal
    more: a seat that led a heart before hearts were broken held only hearts
    (void in C, D, S); a seat that played a point card (a heart or ``QS``) off suit
    to the first trick held nothing but point cards (void in C and D, and in S too
    if the card was ``QS``). These are the inferences a player at the table can make.
    """
    completed = st.trick_winner >= 0  # (B, T)
    lead_card = np.take_along_axis(st.trick_cards, np.maximum(st.trick_leader, 0)[:, :, None],
                                   axis=2)[:, :, 0]  # (B, T) card the leader played
    led = np.concatenate([np.where(completed, lead_card // 13, -1), st.led_suit[:, None]],
                         axis=1).astype(np.int8)  # (B, T+1) led suit; the trick in progress last
    cards = np.concatenate([st.trick_cards, st.current_trick[:, None, :]], axis=1)  # (B,T+1,P)
    missed = shows_void(cards, led[:, :, None])  # (B, T+1, P) did not follow
    # Bit s set: a card was played off the led suit s; OR over the tricks, then unpack.
    led_bit = np.where(led >= 0, np.uint8(1) << np.maximum(led, 0).astype(np.uint8),
                       np.uint8(0))  # (B, T+1) uint8
    bits = np.where(missed, led_bit[:, :, None], np.uint8(0))  # (B, T+1, P) uint8
    shown = bits[:, 0].copy()  # (B, P) uint8: OR one trick at a time (a reduce over the
    for trick in range(1, bits.shape[1]):  # middle axis is several times slower)
        shown |= bits[:, trick]
    if rules.is_hearts:
        shown |= _hearts_inferences(st, rules, cards, missed)
    return (shown[:, :, None] >> np.arange(4, dtype=np.uint8) & 1).astype(np.float32)


def _inferred_voids(card: np.ndarray, led: np.ndarray, trick: np.ndarray,
                    broken: np.ndarray) -> np.ndarray:
    """(n,) uint8 void bits that Hearts' rules reveal about the seat that just played
    ``card`` (n,) to a trick led with ``led`` (-1: it led), trick index ``trick``, with
    hearts ``broken`` before the card (see ``_voids``)."""
    heart = card // 13 == C.HEARTS
    queen = card == C.QUEEN_OF_SPADES
    first_off = (trick == 0) & shows_void(card, led) & (heart | queen)
    return (np.where((led < 0) & heart & ~broken, _LED_UNBROKEN_HEART, 0)
            | np.where(first_off, _POINTS_ON_FIRST_TRICK, 0)
            | np.where(first_off & queen, _SPADES, 0)).astype(np.uint8)


def _hearts_inferences(st: State | _Rows, rules: Rules, cards: np.ndarray,
                       missed: np.ndarray) -> np.ndarray:
    """(B, P) uint8 void bits of Hearts' two inferences (see ``_voids``), from the tricks
    ``cards`` (B, T+1, P) (the trick in progress last) and ``missed`` (did not follow)."""
    b, t = cards.shape[0], cards.shape[1] - 1
    breaking = breaks_hearts(hearts_breakers(rules), cards)  # (B, T+1, P); -1 (none): 2C
    broke = breaking.any(axis=2)  # (B, T+1) a card of that trick broke hearts
    # The trick in progress is at index T here, but after trick_index completed tricks.
    index = np.minimum(st.trick_index.astype(np.int64), t)  # (B,)
    order = np.concatenate([np.arange(t)[None, :].repeat(b, 0), index[:, None]], axis=1)
    # broken_before[b, k]: a completed trick before (in play order) trick k broke hearts.
    completed = np.concatenate([st.trick_winner >= 0, np.zeros((b, 1), bool)], axis=1)
    before = (order[:, None, :] < order[:, :, None]) & (broke & completed)[:, None, :]
    broken_before = before.any(axis=2)  # (B, T+1)
    leader = np.concatenate([st.trick_leader, np.where(
        st.trick_size > 0, st.trick_leader[np.arange(b), np.minimum(index, t - 1)], -1)[:, None]],
        axis=1)  # (B, T+1) seat that led each trick, -1 = none
    lead = np.take_along_axis(cards, np.maximum(leader, 0)[:, :, None], axis=2)[:, :, 0]
    hearts_led = (leader >= 0) & (lead // 13 == C.HEARTS) & ~broken_before  # (B, T+1)
    seats = np.arange(cards.shape[2])
    out = np.zeros((b, cards.shape[2]), np.uint8)
    out |= np.where((hearts_led[:, :, None] & (seats == leader[:, :, None])).any(axis=1),
                    np.uint8(_LED_UNBROKEN_HEART), np.uint8(0))
    first = np.where((order == 0)[:, :, None], cards, -1).max(axis=1)  # (B, P) first trick
    off = np.where((order == 0)[:, :, None], missed, False).any(axis=1)  # (B, P)
    point = (first // 13 == C.HEARTS) | (first == C.QUEEN_OF_SPADES)
    out |= np.where(off & point, np.uint8(_POINTS_ON_FIRST_TRICK), np.uint8(0))
    out |= np.where(off & (first == C.QUEEN_OF_SPADES), np.uint8(_SPADES), np.uint8(0))
    return out


STATE_EXTRA = (MAX_SEATS * 52, 52, MAX_SEATS * 52)  # hands, dead pile, passes
STATE_SIZE = OBSERVATION_SIZE + sum(STATE_EXTRA)


def full_state(engine: Engine) -> np.ndarray:
    """(B, STATE_SIZE) float32: seat 0's observation, then every hand (absolute seats,
    padded to 5), the dead pile and every seat's chosen passes."""
    st, p = engine.state, engine.rules.num_players
    b = st.batch_size
    pad = [(0, 0), (0, MAX_SEATS - p), (0, 0)]
    hands = np.pad(_bits(st.hands), pad).reshape(b, -1)
    passes = np.pad(_bits(_card_sets(st.passes)), pad).reshape(b, -1)
    return np.concatenate([observe(engine, 0), hands, _bits(st.dead), passes], axis=1,
                          dtype=np.float32)
