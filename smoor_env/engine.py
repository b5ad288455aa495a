"""The vectorised rules core: B games of one ``Rules`` stepped in lockstep.

``Engine(rules, batch_size)`` owns a ``State`` (see ``state.py``) and offers
``reset``, ``step``, the exact ``legal_mask`` (B, 70) and ``sample_legal``.
Every rule of ``docs/rules.md`` lives here, once; the environments, agents and
experiments only read the state.

Design notes:

* Hands, won cards and legal sets are ``uint64`` bitmasks, so following suit is
  one ``&`` with a suit mask and counting hearts is one ``np.bitwise_count``.
  The (B, 70) bool mask is only built when asked for.
* A step touches every game that is still playing at once; the rarer events (a
  trick completes, a round ends, a phase changes) run on the subset of games
  they concern, still vectorised. No Python loop runs over games; the deal
  alone loops over the deck's cards (a card's seat depends on the cards dealt
  before it), with whole-batch operations per card.
* Games that started together stay in lockstep (same phase, same place in the
  same trick). The engine remembers that (``_lockstep``), and the hot path
  (``_play_lockstep``) then writes whole arrays and decides the lead, the trick's
  end and the next legal sets once for all games; it also keeps the place and
  hand of the player to act and the led suit's cards for the next step
  (``_play_cache``). The other paths handle any mix of games: when only some
  games act (``step(actions, active)``, as in a vector environment whose games
  wait for different seats) and all of them play a card, a quarter of the batch
  or more plays with masked whole-batch operations (``_play_masked``), fewer
  are gathered (``_play``), as are all in batches under 64 games.
* Randomness is counter-based: the deal of round ``r`` of game ``i`` is a hash of
  (seed, game id ``i``, ``r``), so a game is the same alone or in any batch.
* A step first checks every action and raises ``ValueError`` (naming game,
  seat, action and the legal actions) before it changes anything.
* Speed: at large B the cost is whole-array passes over memory, so the hot path
  avoids temporaries (``out=``), short inner axes (column loops instead of
  (B, P) reductions and (B, 1) broadcasts), mixed-dtype operations (numpy casts
  them through a buffer), fresh (B, P) temporaries (their pages fault in again)
  and gathers from big tables (``sample_legal`` selects bits with byte-wise SWAR
  arithmetic and a 16 KB table); ``take`` uses ``mode="clip"`` where the indices
  are known to be in range (it skips the bounds check). A whole-batch reset
  refills the engine's own State instead of allocating one. At B = 1 the cost is
  the number of numpy calls, so the hot path makes few of them (below 64 games
  it keeps the forms with fewer calls, ``_few``) and skips whole-batch checks the
  cached lockstep makes unnecessary.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from smoor_env import cards as C
from smoor_env.checks import SEED_LIMIT, check_count, check_seed, int_array
from smoor_env.rules import TOTALS_BOUND, Rules
from smoor_env.state import (
    BID_OFFSET,
    CURSE_OFFSET,
    NUM_ACTIONS,
    PHASE_ACTION_OFFSET,
    ROUND_RECORD_FIELDS,
    Phase,
    State,
)

_U1 = np.uint64(1)
_HEARTS = np.uint64(C.HEART_MASK)
_QS = np.uint64(1 << 49)
_AH_BIT = np.uint64(1 << 38)  # the ace of hearts
_PENALTY_CARDS = np.uint64(C.HEART_MASK | (1 << 49))
# Kleine Liefde: heart of rank r (2..14) scores r. Bit j of the pip value of each heart,
# as masks: pip points = sum_j 2**j * popcount(hearts won & _PIP_BITS[j]).
_PIP_BITS = [np.uint64(sum(1 << (26 + r - 2) for r in range(2, 15) if r >> j & 1))
             for j in range(4)]
_U7, _U8, _U27, _U30, _U31, _U32, _U56 = (np.uint64(s) for s in (7, 8, 27, 30, 31, 32, 56))
_LOW32 = np.uint64(0xFFFFFFFF)
_BYTE = np.uint64(0xFF)
_MIX1, _MIX2, _GOLDEN = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), \
    np.uint64(0x9E3779B97F4A7C15)


# The value of every element of each State.finished array in an empty State.
_EMPTY_FILL = {name: array.flat[0] for name, array in State.empty(1, 1, 1).finished.items()}
_SUIT_OF = (np.arange(C.NUM_CARDS) // 13).astype(np.int8)  # (52,) suit of each card id
_SUIT_MASK_OF_CARD = C.SUIT_MASKS.take(_SUIT_OF)  # (52,) uint64 cards of each card's suit
_NONE = np.int8(-1)
# Phase.PLAY as a numpy scalar: comparing an array with the IntEnum member itself costs
# numpy a slow lookup of array protocols on the enum (about 9 us a call).
_PLAY = np.int8(Phase.PLAY)
_ZERO = np.uint64(0)
# legal_mask: per phase, how far the legal bits move to land on their action ids, as
# left shifts into word 0 (actions 0..63) and right/left shifts into word 1 (64..127);
# 64 stands for "nothing" (numpy gives 0 for shifts of 64 or more).
_MASK_LOW_SHIFT = PHASE_ACTION_OFFSET.astype(np.uint64)
_MASK_HIGH_RSHIFT = np.array([64 - o if 0 < o < 64 else 64 for o in PHASE_ACTION_OFFSET],
                             np.uint64)
_MASK_HIGH_LSHIFT = np.array([o - 64 if o >= 64 else 64 for o in PHASE_ACTION_OFFSET],
                             np.uint64)
# (5,) uint64 cards of the led suit, indexed by ``led_suit``: -1 (nobody has led yet) takes
# the last entry, the empty set, so "follow suit if you can" leaves a leader's hand whole.
_LED_MASKS = np.append(C.SUIT_MASKS, np.uint64(0))
# The general play step works on whole-batch arrays, masked, once at least one game in
# this many plays (measured: it then beats gathering the playing games' rows), in
# batches of 64 games or more (below, numpy calls cost more than the data: it gathers).
_MASKED_PLAY_SHARE = 4
# Deals of at most this many games draw every card's slot up front (see _deal_seats).
_DEAL_AHEAD_GAMES = 512
# Byte-wise (SWAR) constants: eight 8-bit lanes in one uint64 (or four in a uint32).
_LANES_1 = np.uint64(0x0101010101010101)  # 1 in every byte: x * _LANES_1 = prefix sums of bytes
_LANES_HIGH = np.uint64(0x8080808080808080)  # the high bit of every byte
_LANES_8 = np.uint64(0x0808080808080808)  # 8 in every byte


def trick_strength_table(trump_hearts: bool) -> np.ndarray:
    """(5 * 52,) int16: 8 * strength of card c in a trick whose led suit is s, at ``s * 52 + c``.

    The highest card of the led suit wins (card ids rise with rank within a suit);
    with trump_hearts any heart beats every card of another suit; strength -1 never
    wins. Row 4 (all -1) is padding so that every index is valid. The factor 8 leaves
    the low three bits free for the seat (see ``_finish_trick``). Public so that agents
    judge a trick by the engine's own rule instead of writing it again.
    """
    table = np.full((5, C.NUM_CARDS), -1, np.int16)
    cards = np.arange(C.NUM_CARDS)
    for led in range(4):
        table[led] = np.where(np.equal(_SUIT_OF, led), cards % 13, -1)
        if trump_hearts:
            table[led] = np.where(_SUIT_OF == C.HEARTS, 13 + cards % 13, table[led])
    return (table * 8).reshape(-1)


def _select8_table() -> np.ndarray:
    """(8 * 256,) int64: position of the k-th set bit of a byte w, at ``k << 8 | w``."""
    words = np.arange(256)
    bits = (words[:, None] >> np.arange(8)) & 1  # (256, 8)
    rank = np.cumsum(bits, axis=1) - 1  # rank of each set bit within its byte
    word, pos = np.nonzero(bits)
    table = np.zeros((8, 256), np.int64)
    table[rank[word, pos], word] = pos
    return table.reshape(-1)


_SELECT8 = _select8_table()  # 16 KB: stays in L1 cache


def byte_prefix_counts(words: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """(n,) uint64 whose byte j is the number of set bits in bytes 0..j of each word.

    The popcounts of the eight bytes, as the bytes of a uint64, summed by one
    multiplication (SWAR); byte 7 is the popcount of the whole word.
    """
    out = np.empty_like(words) if out is None else out
    count = np.bitwise_count(words.view(np.uint8), out=out.view(np.uint8))  # (8n,)
    return np.multiply(count.view(np.uint64), _LANES_1, out=out)


def kth_set_bit(words: np.ndarray, k: np.ndarray, upto: np.ndarray,
                scratch: np.ndarray) -> np.ndarray:
    """(n,) int64 position (0..63) of the k-th set bit (from 0) of each uint64 word.

    ``k`` (n,) uint64 must be below each word's popcount; ``upto`` is
    ``byte_prefix_counts(words)``. Comparing k with the eight prefix sums at once
    locates the byte; a 16 KB table of "k-th set bit of a byte" gives the place.
    Works in place: ``k``, ``upto`` and ``scratch`` ((n,) uint64) are overwritten.
    """
    # Byte j of `ge` has its high bit set iff k >= upto_j (values <= 64, no borrow
    # across bytes): their number is the byte that holds the k-th bit.
    ge = np.multiply(k, _LANES_1, out=scratch)
    ge = np.bitwise_or(ge, _LANES_HIGH, out=ge)
    ge = np.subtract(ge, upto, out=ge)
    ge = np.bitwise_and(ge, _LANES_HIGH, out=ge)
    # 8 * their number (the byte's bit offset): the top byte of the sum of 8 per byte
    # (all in uint64: cheaper than a uint8 popcount cast up).
    shift = np.right_shift(ge, _U7, out=ge)
    shift = np.multiply(shift, _LANES_8, out=shift)
    shift = np.right_shift(shift, _U56, out=shift)  # (n,) uint64 0, 8, .., 56
    # Bits before that byte: byte `byte - 1` of upto, i.e. byte `byte` of upto << 8.
    before = np.left_shift(upto, _U8, out=upto)
    before = np.right_shift(before, shift, out=before)
    before = np.bitwise_and(before, _BYTE, out=before)
    at = np.subtract(k, before, out=k)  # (n,) rank of the bit within its byte
    chunk = np.right_shift(words, shift, out=upto)  # (n,) that byte of the word
    chunk = np.bitwise_and(chunk, _BYTE, out=chunk)
    at = np.left_shift(at, _U8, out=at)
    at = np.bitwise_or(at, chunk, out=at)  # (n,) table index k << 8 | byte
    position = _SELECT8.take(at.view(np.int64), mode="clip")  # (n,) int64 place in byte
    position += shift.view(np.int64)
    return position


def _mix(x: np.ndarray, tmp: np.ndarray | None = None) -> np.ndarray:
    """splitmix64 finaliser: a bijective hash of uint64 arrays (wrapping arithmetic).

    With ``tmp`` (an array like x) it works in place in x, using tmp as scratch.
    """
    out = None if tmp is None else x
    with np.errstate(over="ignore"):
        for shift, factor in ((_U30, _MIX1), (_U27, _MIX2), (_U31, None)):
            x = np.bitwise_xor(x, np.right_shift(x, shift, out=tmp), out=out)
            if factor is not None:
                x = np.multiply(x, factor, out=out)
    return x


def _byte_rows(a: np.ndarray) -> np.ndarray:
    """View of an int8 array whose last axis (contiguous) is one opaque item: shape a.shape[:-1]."""
    return a.view(np.dtype((np.void, a.shape[-1])))[..., 0]


def _max_over_seats(x: np.ndarray) -> np.ndarray:
    """(n,) maximum of each row of x (n, P): column by column (faster than a short-axis max)."""
    best = x[:, 0].copy()
    for seat in range(1, x.shape[1]):
        np.maximum(best, x[:, seat], out=best)
    return best


def _any_over_seats(x: np.ndarray) -> np.ndarray:
    """(n,) bool: any of each row of x (n, P) bool, column by column."""
    found = x[:, 0].copy()
    for seat in range(1, x.shape[1]):
        found |= x[:, seat]
    return found


def _equal_per_seat(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n, P) bool: x (n, P) == v (n,) in each column (faster than broadcasting v[:, None])."""
    out = np.empty(x.shape, bool)
    for seat in range(x.shape[1]):
        np.equal(x[:, seat], v, out=out[:, seat])
    return out


def _is_row_max(x: np.ndarray) -> np.ndarray:
    """(n, P) bool: the entries of x (n, P) equal to the maximum of their row."""
    return _equal_per_seat(x, _max_over_seats(x))


def _bits(cards: np.ndarray) -> np.ndarray:
    """uint64 bit of each card id (any shape)."""
    return _U1 << cards.astype(np.uint64)


def _popcount(masks: np.ndarray) -> np.ndarray:
    return np.bitwise_count(masks).astype(np.int32)


class Engine:
    """B games of one rule set, stepped together.

    Args:
        rules: the rules shared by every game of the batch.
        batch_size: B, the number of games.

    Attributes:
        state: the ``State`` of the B games (mutated in place by ``reset`` and ``step``).
    """

    def __init__(self, rules: Rules, batch_size: int = 1) -> None:
        if not isinstance(rules, Rules):
            raise TypeError(f"rules must be a smoor_env.Rules, got {type(rules).__name__}")
        self.rules = rules
        self.batch_size = check_count(batch_size, "batch_size")
        p = rules.num_players
        self._players = p
        self._seats = np.arange(p)  # (P,)
        self._all = np.arange(self.batch_size)  # (B,)
        self._base = self._all * p  # (B,) flat offset of seat 0 of each game in (B, P) arrays
        self._next_seat = np.roll(np.arange(p, dtype=np.int8), -1)  # (P,) seat -> its left
        # Per seat s: 8 * strength + s of each (led suit, card), so one gather gives the
        # packed (strength, seat) key of a seat's card (see _finish_trick).
        strength = trick_strength_table(rules.trump_hearts)  # (5 * 52,) int16
        self._trick_keys = [strength + np.int16(seat) for seat in range(p)]  # P x (5 * 52,)
        # Hearts: which cards break hearts when played.
        queen = np.arange(C.NUM_CARDS) == 49
        self._breaks_hearts = (_SUIT_OF == C.HEARTS) | (queen & rules.queen_breaks_hearts)
        # Seat -> side (team or player) used for sweeps, round wins and match wins.
        self._side = np.array([0, 1, 0, 1]) if rules.partners else self._seats  # (P,)
        self._side_size = 2 if rules.partners else 1
        self._deck = np.uint64(rules.deck_mask)
        self._deck_cards = np.array(C.cards_of(rules.deck_mask))  # (N,) card ids in play
        # Hearts: the lowest club in play leads the first trick (2C, or 3C with 5 players).
        self._opening_card = int(self._deck_cards[0])
        cycle = [rules.pass_offset(r) for r in range(1, 5)] if rules.passing else [0]
        self._pass_cycle = np.array(cycle[: 2 if p == 3 else 4], dtype=np.int8)
        curse = 0b1111 if rules.cursed_suit_may_be_hearts else 0b1011
        self._curse_legal = np.uint64(curse)
        self._bid_legal = np.uint64((1 << 14) - 1)
        self._ones = np.ones(self.batch_size, np.uint64)  # (B,) for 1 << action
        # A few games: the cost is the number of numpy calls, not passes over memory.
        self._few = self.batch_size < 64
        self._sample_buffers: tuple[np.ndarray, ...] | None = None  # sample_legal's scratch
        # Bids (52..65) and cursed suits (66..69) are the only actions past bit 63 of the
        # action space; without them every legal set is already the action mask.
        self._wide_actions = rules.bidding or rules.cupids_arrow
        # Deal: draw counters, and the free slots of each seat (the dead pile is seat P) as
        # prefix sums, one byte each: byte j = 0x80 | (free slots in seats 0..j) - 1
        # (bytes past P: all), see _deal_seats.
        deck_size = len(self._deck_cards)
        self._draw_counters = np.arange(1, (deck_size + 1) // 2 + 1, dtype=np.uint64) * _GOLDEN
        self._slots_left = [np.uint64(deck_size - i) for i in range(deck_size)]
        self._slots_left_column = np.array(self._slots_left, np.uint64)[:, None]  # (N, 1)
        slots = [rules.hand_size] * p + [rules.dead_count]
        free = sum(sum(slots[: j + 1]) << (8 * j) for j in range(8))  # byte j: seats 0..j
        self._free_slots_swar = np.uint64(free - int(_LANES_1) + int(_LANES_HIGH))
        # Counts the changes made to the state through the engine (step, reset, refresh_legal,
        # assigning engine.state), so that observers can tell whether it moved under them.
        self.version = 0
        self.state = State.empty(self.batch_size, p, rules.num_tricks)
        self._own_state: State | None = None  # the last State that reset made (reused)
        self.state.phase[:] = Phase.OVER  # nothing is legal before reset

    # ------------------------------------------------------------ caches
    # Facts about the state are remembered between steps, to spare the hot path a few
    # whole-batch tests and gathers (and numpy calls, which dominate at small batch sizes):
    #   _lockstep: (trick position, trick index) when every game is live, in the play
    #       phase and at that same place; None when unknown or not so.
    #   _round_over_clear: state.round_over is known to be all False.
    #   _play_cache: (lockstep, flat index and hand of the player to act, cards of the
    #       led suit or None), left by a lockstep step; valid while _lockstep is that
    #       very tuple.
    # Only the engine writes the state; assigning ``engine.state`` (or refresh_legal)
    # forgets them.
    @property
    def state(self) -> State:
        """The ``State`` of the B games (mutated in place by ``reset`` and ``step``)."""
        return self._state

    @state.setter
    def state(self, state: State) -> None:
        self.version += 1
        self._state = state
        self._lockstep: tuple[int, int] | None = None
        self._round_over_clear = False
        self._play_cache = None

    def refresh_legal(self) -> None:
        """Recompute every game's legal set from its state (after installing a state built
        by hand, e.g. a sampled world: ``engine.state = world; engine.refresh_legal()``).

        Forgets the cached play facts; the lockstep facts are forgotten by assigning
        ``engine.state`` (edit the arrays of a state in place only before assigning it)."""
        self.version += 1
        self._play_cache = None
        self._update_legal(self._all)

    def _find_lockstep(self) -> tuple[int, int] | None:
        """(trick position, trick index) shared by every game if all are live and playing."""
        st = self.state
        pos, trick = int(st.trick_size[0]), int(st.trick_index[0])
        if ((st.phase == _PLAY).all() and not st.match_over.any()
                and (st.trick_size == pos).all() and (st.trick_index == trick).all()):
            self._lockstep = (pos, trick)
        return self._lockstep

    def _clear_round_over(self) -> None:
        if not self._round_over_clear:
            self.state.round_over[:] = False
            self._round_over_clear = True

    # ------------------------------------------------------------------ reset
    def reset(
        self,
        seed: int,
        *,
        game_ids: Sequence[int] | np.ndarray | None = None,
        dealers: Sequence[int] | np.ndarray | None = None,
        hands: Sequence | np.ndarray | None = None,
        games: Sequence[int] | np.ndarray | None = None,
        round_number: Sequence[int] | np.ndarray | None = None,
        totals: Sequence | np.ndarray | None = None,
    ) -> State:
        """Start new matches: all B games, or only ``games`` (the others go on untouched).

        Args:
            seed: the seed of the batch, an int in 0..2**64 - 1. Game ``i`` is
                determined by (rules, seed, ``game_ids[i]``) alone, whatever the batch size.
            game_ids: (n,) ints in 0..2**64 - 1 naming each started game's random stream; default
                ``0..B-1`` (or ``games``). ``reset(seed, game_ids=[7])`` replays game 7
                of a larger batch alone.
            dealers: (n,) first dealer of each game; default drawn uniformly from the
                seed (the cut for the highest card).
            hands: the first round's deal instead of a shuffle: per game, per seat,
                the cards dealt to that seat, as ids (array (n, P, hand size)) or as
                text (``[["AH", "TD", ...], ...]`` or ``"AH TD ..."`` per seat). The
                dead pile is the rest of the deck.
            games: (n,) indices of the games to start; default every game. Used by
                vector environments to reset finished games while the others play on.
                An empty list starts none and changes nothing.
            round_number: (n,) number of the first round (default 1), to replay a later
                round of a match (Cupid's Arrow and Hearts passing depend on it).
            totals: (n, P) match totals before the first round (default 0), each within
                ``rules.TOTALS_BOUND`` (1_000_000_000) in magnitude.

        Raises:
            TypeError: a seed that is not an int.
            ValueError: any value of the wrong type, shape or range (naming it); nothing
                has changed then.

        Returns:
            The state (also ``self.state``). A reset of every game refills the State
            that the engine's previous whole-batch reset made, in place: keep a
            ``state.copy()``, not the object, to compare matches.
        """
        b, p = self.batch_size, self._players
        seed = check_seed(seed)
        rows = None if games is None else int_array(games, "games", (None,), 0, b - 1, np.int64)
        if rows is not None and rows.shape == (0,):
            return self.state  # no game to start (a vector env with none to reset)
        if rows is not None and len(np.unique(rows)) != len(rows):
            raise ValueError(f"games must be distinct game indices 0..{b - 1}, got {games!r}")
        n = b if rows is None else len(rows)
        ids = (self._all if rows is None else rows).astype(np.uint64) if game_ids is None \
            else int_array(game_ids, "game_ids", (n,), 0, SEED_LIMIT - 1, np.uint64)
        seed_key = _mix(np.array([seed], dtype=np.uint64))[0]
        game_key = _mix(_mix(ids * _GOLDEN) ^ seed_key)  # (n,)
        if dealers is None:
            first_dealer = (_mix(game_key ^ _GOLDEN) % np.uint64(p)).astype(np.int8)
        else:
            first_dealer = int_array(dealers, "dealers", (n,), 0, p - 1, np.int8)
        first_round = np.ones(n, np.int16)
        if round_number is not None:
            first_round = int_array(round_number, "round_number", (n,), 1,
                                    self.rules.max_rounds, np.int16)
        start_totals = np.zeros((n, p), np.int32)
        if totals is not None:
            start_totals = int_array(totals, "totals", (n, p), -TOTALS_BOUND, TOTALS_BOUND,
                                     np.int32)
        given = None if hands is None else self._check_hands(hands, n)
        if rows is None and self._state is self._own_state:
            # Every game restarts: refill the engine's own arrays rather than allocate a
            # new State. _start_round rewrites the round's fields; these are the others.
            state = self._own_state
            for array in (state.round_points, state.round_winners, state.round_over,
                          state.match_over, state.winners):
                array.fill(0)
            for name, array in state.finished.items():
                array.fill(_EMPTY_FILL[name])
        else:
            state = State.empty(n, p, self.rules.num_tricks)
        state.game_key[:] = game_key
        state.dealer[:] = first_dealer
        state.round_number[:] = first_round
        state.totals[:] = start_totals
        if rows is None:
            self.state = self._own_state = state
            rows = self._all
        else:  # write the new games' rows into the running batch
            for name, value in vars(state).items():
                if name == "finished":
                    for key, array in value.items():
                        self._state.finished[key][rows] = array
                else:
                    getattr(self._state, name)[rows] = value
            self.state = self._state  # forget what was known about the whole batch
        self._start_round(rows, given)
        return self.state

    def _check_hands(self, hands: Sequence | np.ndarray, b: int) -> np.ndarray:
        """Validate a given deal for b games; returns (b, P) uint64 hands."""
        p, n = self._players, self.rules.hand_size
        if len(hands) != b:
            raise ValueError(f"hands must hold a deal for each of the {b} games, got {len(hands)}")
        out = np.zeros((b, p), np.uint64)
        for g, deal in enumerate(hands):
            if len(deal) != p:
                raise ValueError(f"game {g}: the deal must have {p} hands, got {len(deal)}")
            seen: set[int] = set()
            for seat, hand in enumerate(deal):
                ids = C.parse_cards(hand) if isinstance(hand, str) else [
                    C.parse_card(c) if isinstance(c, str) else c for c in hand]
                for c in ids:  # int(0.5) would silently be 2C
                    if isinstance(c, bool) or not isinstance(c, int | np.integer):
                        raise ValueError(f"game {g}, seat {seat}: card {c!r} is not a card "
                                         f"id (an int) or card text")
                ids = [int(c) for c in ids]
                if len(ids) != n:
                    raise ValueError(f"game {g}, seat {seat}: a hand has {n} cards, got {len(ids)}")
                for c in ids:
                    if not (0 <= c < C.NUM_CARDS and self.rules.deck_mask >> c & 1):
                        text = C.card_str(c) if 0 <= c < C.NUM_CARDS else str(c)
                        raise ValueError(f"game {g}, seat {seat}: card {text} is not in the "
                                         f"deck of these rules")
                    if c in seen:
                        raise ValueError(f"game {g}: card {C.card_str(c)} is dealt twice")
                    seen.add(c)
                out[g, seat] = np.uint64(C.mask_of(ids))
        return out

    def _deal(self, rows: np.ndarray | slice, games: int) -> np.ndarray:
        """Uniformly random hands (games, P) uint64 for the games ``rows``.

        Card by card, each card of the deck goes to a free slot chosen uniformly among
        all free slots (the P hands and the dead pile): every split of the deck into
        hands and dead pile is equally likely, as with a shuffle dealt out (and the seat
        the dealing starts from does not matter). See ``_deal_seats``.
        """
        st, p = self.state, self._players
        with np.errstate(over="ignore"):
            # Round r of game g draws from a splitmix64 stream keyed by hash(game key, r).
            key = _mix(st.game_key[rows] + st.round_number[rows].astype(np.uint64) * _MIX2)
        # 8 - seat of each card id (0: not in the deck), game by game so that the packing
        # below reads whole rows.
        seat_code = np.zeros((games, 64), np.uint8)
        self._deal_seats(key, seat_code)
        # Bit c of seat s's hand = (seat_code[c] == 8 - s): packbits turns 64 flags into 8 bytes.
        hands = np.empty((games, p), np.uint64)
        packed_seats = p if self.rules.dead_count else p - 1
        for s in range(packed_seats):
            packed = np.packbits(seat_code == 8 - s, axis=1, bitorder="little")  # (games, 8)
            hands[:, s] = packed.view(np.uint64)[:, 0]
        if packed_seats < p:  # no dead pile: the last hand is the rest of the deck
            rest = np.full(games, self._deck)
            for s in range(packed_seats):
                rest ^= hands[:, s]
            hands[:, p - 1] = rest
        return hands

    def _deal_seats(self, key: np.ndarray, seat_code: np.ndarray) -> None:
        """Deal n games of keys ``key`` (n,): 8 - seat of each card into ``seat_code`` (n, 64).

        Each 64-bit output of a game's stream gives two 32-bit draws, for two cards; a
        draw times the number of free slots left, >> 32, is the card's slot. Its seat is
        found by comparing the slot with the prefix sums of free slots, one byte per seat
        (the dead pile is seat P), all at once ("SWAR" byte-wise arithmetic in a uint64):
        about a dozen whole-batch operations per card, no gather or scatter.

        The slots do not depend on the deal so far, only the seats do: up to
        ``_DEAL_AHEAD_GAMES`` games, every card's slot is drawn up front in a few
        operations on (cards, n) arrays, which halves the numpy calls per card (their
        cost at a few games); more games draw card by card, in cache.
        """
        n = len(key)
        cards = self._deck_cards.tolist()
        ahead = n <= _DEAL_AHEAD_GAMES
        # Large batches work in place (out=, no allocation per card); for a few games
        # fresh small arrays are cheaper than numpy's in-place machinery.
        big = n >= 64
        slot = np.empty(n, np.uint64) if big else None  # (n,) scratch
        word, tmp = (np.empty(n, np.uint64) if big and not ahead else None  # (n,) scratch
                     for _ in range(2))
        # Byte j: 0x80 | (free slots in seats 0..j) - 1 (bytes past P: all slots left).
        upto = np.full(n, self._free_slots_swar)  # (n,) uint64
        with np.errstate(over="ignore"):
            if ahead:  # every card's slot, up front: (cards, n) uint64, card-major
                words = _mix(key[None, :] + self._draw_counters[:, None])  # (W, n)
                spread = np.empty((2 * len(words), n), np.uint64)  # (2W, n): two per word
                np.right_shift(words, _U32, out=spread[0::2])
                np.bitwise_and(words, _LOW32, out=spread[1::2])
                spread = spread[:len(cards)]  # (N, n) one draw per card (N may be odd)
                spread *= self._slots_left_column
                spread >>= _U32
                spread *= _LANES_1  # (N, n) the slot in every byte
                codes = np.empty((len(cards), n), np.uint8)  # (N, n) 8 - seat
            for i, card in enumerate(cards):
                if ahead:
                    lt = spread[i]
                else:
                    if i % 2 == 0:  # a fresh 64-bit word, made and used while in cache
                        word = _mix(np.add(key, self._draw_counters[i // 2], out=word), tmp)
                        draw = np.right_shift(word, _U32, out=slot)
                    else:
                        draw = np.bitwise_and(word, _LOW32, out=slot)
                    # `left` free slots remain in every game: a uniform slot 0..left-1.
                    draw = np.multiply(draw, self._slots_left[i], out=slot)
                    draw = np.right_shift(draw, _U32, out=slot)
                    lt = np.multiply(draw, _LANES_1, out=slot)  # the slot in every byte
                # Byte j of `lt` becomes 0x80 iff slot < free slots in seats 0..j, i.e.
                # iff seat <= j (all values < 128, so no borrow crosses bytes): 8 - seat
                # such bytes.
                lt = np.subtract(upto, lt, out=slot)
                lt = np.bitwise_and(lt, _LANES_HIGH, out=slot)
                np.bitwise_count(lt, out=codes[i] if ahead else seat_code[:, card])
                # One slot fewer in that seat and after: 1 off every byte j >= seat.
                lt = np.right_shift(lt, _U7, out=slot)
                upto = np.subtract(upto, lt, out=upto if big else None)
        if ahead:
            seat_code[:, self._deck_cards] = codes.T

    # ------------------------------------------------------------- round flow
    def _start_round(self, idx: np.ndarray, given: np.ndarray | None = None) -> None:
        """Deal round ``round_number`` for games idx and enter its first phase."""
        st, p = self.state, self._players
        rows = slice(None) if idx is self._all else idx  # a slice writes faster
        hands = self._deal(rows, len(idx)) if given is None else given
        st.hands[rows] = hands
        st.dealt[rows] = hands
        dealt = hands[:, 0].copy()  # (n,) every card dealt to a seat, column by column
        for seat in range(1, p):
            dealt |= hands[:, seat]
        st.dead[rows] = self._deck & ~dealt
        st.won[rows] = 0
        st.played[rows] = 0
        st.passes[rows] = -1
        st.pass_out[rows] = 0
        st.cursed_suit[rows] = -1
        st.bids[rows] = -1
        st.hearts_broken[rows] = False
        st.trick_index[rows] = 0
        st.trick_size[rows] = 0
        st.led_suit[rows] = -1
        st.trick_cards[rows] = -1
        st.current_trick[rows] = -1
        st.trick_mask[rows] = 0
        st.trick_leader[rows] = -1
        st.trick_winner[rows] = -1
        left = (st.dealer[rows] + 1) % p
        offset = self._pass_cycle[(st.round_number[rows] - 1) % len(self._pass_cycle)]
        passing = offset != 0
        cursing = np.full(len(idx), self.rules.cupids_arrow) & (st.round_number[rows] >= 2)
        # Phases in RULES.md order: pass, curse, bid, play.
        st.phase[rows] = np.where(passing, Phase.PASS, np.where(
            cursing, Phase.CURSE, Phase.BID if self.rules.bidding else Phase.PLAY))
        st.current_player[rows] = np.where(cursing & ~passing, st.dealer[rows], left)
        self._begin_play(idx[st.phase[rows] == Phase.PLAY])
        self._update_legal(idx)
        self._lockstep = None  # the next step looks again

    def _begin_play(self, idx: np.ndarray) -> None:
        """First lead of the round: left of the dealer; in Hearts the holder of 2C (3C)."""
        st = self.state
        if self.rules.is_hearts:
            holds = (st.hands[idx] >> np.uint64(self._opening_card)) & _U1  # (n, P)
            st.current_player[idx] = np.argmax(holds, axis=1)
        else:
            st.current_player[idx] = (st.dealer[idx] + 1) % self._players
        st.phase[idx] = Phase.PLAY

    def _update_legal(self, idx: np.ndarray) -> None:
        """Recompute ``state.legal`` for games idx from their phase."""
        st = self.state
        phase = st.phase[idx]
        at = idx * self._players + st.current_player[idx]
        hand = st.hands.reshape(-1).take(at)  # (n,) hand of the player to act
        rules_of_phase = {  # computed only for the phases present (usually one)
            Phase.PLAY: lambda: self._play_legal(idx, hand),
            Phase.PASS: lambda: hand & ~st.pass_out.reshape(-1).take(at),
            Phase.BID: lambda: self._bid_legal,
            Phase.CURSE: lambda: self._curse_legal,
        }
        first = int(phase[0])
        if (phase == first).all():
            st.legal[idx] = rules_of_phase[first]() if first in rules_of_phase else 0
            return
        legal = np.zeros(len(idx), np.uint64)  # Phase.OVER: nothing is legal
        for kind, rule in rules_of_phase.items():
            here = phase == kind
            if here.any():
                legal = np.where(here, rule(), legal)
        st.legal[idx] = legal

    def _play_legal(self, rows: np.ndarray | slice, hand: np.ndarray,
                    leading: np.ndarray | bool | None = None,
                    first: np.ndarray | bool | None = None,
                    led_mask: np.ndarray | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
        """(n,) uint64 legal cards of the player to act in games ``rows`` (play phase).

        ``leading`` (nobody has played to the trick yet) and ``first`` (it is the first
        trick) are read from the state, or given as Python bools when they are the same
        for every game (lockstep), which skips the work they make pointless;
        ``led_mask`` (n,) uint64: the cards of the led suit, when already known. ``out``:
        an (n,) array the result may be written to (it is returned either way).
        """
        st = self.state
        if leading is True:
            follow, legal = _ZERO, hand
        else:
            if led_mask is None:
                led_mask = _LED_MASKS.take(st.led_suit[rows])  # (n,) empty while leading
            follow = hand & led_mask  # (n,) cards of the led suit in hand
            # Follow suit if you can: the hand where no card follows, else those cards.
            if self._few:
                legal = np.where(follow, follow, hand)
            else:  # the same in fewer passes over memory (cheaper than np.where)
                legal = np.multiply(hand, follow == 0, out=out)
                legal |= follow
        if not self.rules.is_hearts:
            return legal
        leading = st.trick_size[rows] == 0 if leading is None else np.bool_(leading)
        first = st.trick_index[rows] == 0 if first is None else np.bool_(first)
        if np.any(first):
            # Hearts. First trick: the opening card is led; a player who cannot follow
            # may not play a heart or QS unless nothing else is left (QS never, by option).
            opening = np.uint64(1 << self._opening_card)
            clean = hand & ~_PENALTY_CARDS
            if self.rules.queen_never_first_trick:
                fallback = np.where(hand & ~_QS != 0, hand & ~_QS, hand)
            else:
                fallback = hand
            void_first = np.where(clean != 0, clean, fallback)
            legal = np.where(first & ~leading & (follow == 0), void_first, legal)
            legal = np.where(first & leading, opening, legal)
        if np.any(leading & ~first):
            # Hearts may not be led until broken, unless the leader holds only hearts.
            no_hearts = hand & ~_HEARTS
            unbroken_lead = leading & ~first & ~st.hearts_broken[rows] & (no_hearts != 0)
            legal = np.where(unbroken_lead, no_hearts, legal)
        return legal

    # ------------------------------------------------------------------- step
    @property
    def legal_words(self) -> np.ndarray:
        """(B, 2) uint64: the legal actions as bits, action a at bit a % 64 of word a // 64
        (the ``legal_mask`` packed, for callers that work on bits).

        ``state.legal`` is relative to the phase's first action; shifted by it, it spans
        the two words (numpy shifts by 64 or more give 0, so one of two shifts is used).
        """
        st = self.state
        words = np.zeros((self.batch_size, 2), np.uint64)  # (B, 2): actions 0..63, 64..127
        if self._wide_actions:  # bids and cursed suits: actions 52..69
            phase = st.phase
            words[:, 0] = st.legal << _MASK_LOW_SHIFT.take(phase)
            words[:, 1] = ((st.legal >> _MASK_HIGH_RSHIFT.take(phase))
                           | (st.legal << _MASK_HIGH_LSHIFT.take(phase)))
        else:  # every legal set is a set of cards (actions 0..51)
            words[:, 0] = st.legal
        return words

    @property
    def legal_mask(self) -> np.ndarray:
        """(B, 70) bool: exactly the legal actions of each game (all False once over).

        One ``unpackbits`` of ``legal_words`` (without bids and cursed suits, of the
        legal sets themselves: they are already the action bits).
        """
        words = self.legal_words if self._wide_actions else self.state.legal
        return np.unpackbits(words.view(np.uint8).reshape(self.batch_size, -1), axis=1,
                             count=NUM_ACTIONS, bitorder="little").view(bool)

    @property
    def current_player(self) -> np.ndarray:
        """(B,) int8 seat to act in each game."""
        return self.state.current_player

    def step(self, actions: np.ndarray | Sequence[int],
             active: np.ndarray | Sequence[bool] | None = None) -> State:
        """Apply one action per game. Games whose match is over ignore theirs.

        Args:
            actions: (B,) integer action ids (0..69).
            active: optional (B,) bool: only these games act; the others ignore their
                action and stay as they are (used by environments whose games wait for
                different players).

        Returns:
            The state after the step (also ``self.state``).

        Raises:
            ValueError: on a wrong shape or type, an out-of-range id, an illegal
                action in any live game (naming the game, seat, action and the legal
                actions), or a step when no game can act. The state is then unchanged.
        """
        self.version += 1  # (also when it raises: observers then merely look again)
        st = self.state
        a = self._check_shape(actions)
        if active is not None:
            active = np.asarray(active)
            if active.shape != (self.batch_size,) or active.dtype != bool:
                raise ValueError(f"active must be a ({self.batch_size},) bool array, got "
                                 f"shape {active.shape} dtype {active.dtype}")
            if not active.all():
                return self._step_games(a, active)
        lock = self._lockstep if self._lockstep is not None else self._find_lockstep()
        if lock is not None:
            # The hot path: every game plays a card at the same place in its trick. A
            # play-phase legal set holds only card bits, and 1 << a is 0 for a >= 64 or
            # a < 0 (a huge uint64), so this one test checks range and legality at once.
            bit = np.left_shift(self._ones, a.view(np.uint64))  # (B,) uint64
            if np.count_nonzero(np.bitwise_and(st.legal, bit)) == self.batch_size:
                self._clear_round_over()
                self._play_lockstep(a, bit, lock)
                return st
            self._raise_illegal(a)
        return self._step_games(a, ~st.match_over)

    def _step_games(self, a: np.ndarray, live: np.ndarray) -> State:
        """The general step: the ``live`` games act (all playing a card, the usual
        case: one check, then a masked or gathered play; else grouped by phase)."""
        st = self.state
        live = live & ~st.match_over  # (B,)
        n_live = np.count_nonzero(live)
        if not n_live:
            raise ValueError("no game of the batch can act: every match is over or inactive; "
                             "call reset() first")
        if np.count_nonzero(live & (st.phase == _PLAY)) == n_live:
            # Every acting game plays a card (the usual case). As in the lockstep path,
            # 1 << a & legal checks range and legality at once; what is left is the bit
            # of each card played, 0 in the games that do not act.
            bit = np.left_shift(self._ones, a.view(np.uint64))  # (B,) uint64
            np.bitwise_and(bit, st.legal, out=bit)
            np.multiply(bit, live, out=bit)
            if np.count_nonzero(bit) != n_live:
                self._raise_illegal(a, live)
            self._clear_round_over()
            self._lockstep = None  # games may fall out of step
            if n_live * _MASKED_PLAY_SHARE >= self.batch_size and not self._few:
                self._play_masked(a, live, bit)  # many games: whole-batch arrays, masked
            else:
                idx = np.flatnonzero(live)
                self._play(idx, a[idx])  # a few: gather them, work on them only
            return st
        if len(self._illegal_games(a, live)):
            self._raise_illegal(a, live)
        self._clear_round_over()
        self._lockstep = None  # games may fall out of step
        # Group the games by phase before any handler runs: a game that changes
        # phase during this step must not be handled twice.
        phase = np.where(live, st.phase, Phase.OVER)
        groups = [(handler, np.flatnonzero(phase == ph)) for ph, handler in (
            (Phase.PLAY, self._play), (Phase.PASS, self._pass),
            (Phase.CURSE, self._curse), (Phase.BID, self._bid))]
        for handler, idx in groups:
            if len(idx):
                handler(idx, a[idx])
        return st

    def is_legal(self, actions: np.ndarray | Sequence[int]) -> np.ndarray:
        """(B,) bool: whether each game's action is legal now (False once its match is over).

        Raises:
            ValueError: on a wrong shape or type, as ``step`` does.
        """
        return self._legal_of(self._as_actions(actions))

    def _as_actions(self, actions: np.ndarray | Sequence[int]) -> np.ndarray:
        """The actions as a (B,) int64 array; ValueError on a wrong shape or type."""
        a = np.asarray(actions)
        if a.shape != (self.batch_size,):
            raise ValueError(f"actions must have shape ({self.batch_size},) (one per game), "
                             f"got {a.shape}")
        if a.dtype.kind not in "iu":
            raise ValueError(f"actions must be integers, got dtype {a.dtype}")
        return a.astype(np.int64, copy=False)

    def _check_shape(self, actions: np.ndarray | Sequence[int]) -> np.ndarray:
        """``_as_actions``, and ValueError if every match of the batch is over."""
        a = self._as_actions(actions)
        if self._lockstep is None and self.state.match_over.all():
            raise ValueError("every match in the batch is over; call reset() first")
        return a

    def _legal_of(self, a: np.ndarray) -> np.ndarray:
        """(B,) bool: whether each game's action ``a`` (B,) int64 is legal now."""
        st = self.state
        rel = a - PHASE_ACTION_OFFSET[st.phase]  # (B,) bit of the action in the legal set
        inside = (rel >= 0) & (rel < 64)
        return inside & ((st.legal >> np.where(inside, rel, 0).astype(np.uint64)) & _U1 == 1)

    def _illegal_games(self, a: np.ndarray, live: np.ndarray | None = None) -> np.ndarray:
        """Indices of live games whose action is not legal."""
        live = ~self.state.match_over if live is None else live
        return np.flatnonzero(~self._legal_of(a) & live)

    def _raise_illegal(self, a: np.ndarray, live: np.ndarray | None = None) -> None:
        bad = self._illegal_games(a, live)
        g = int(bad[0])
        raise ValueError(self._illegal_message(g, int(a[g])) + (
            f" ({len(bad)} games got an illegal action: {bad[:10].tolist()}"
            f"{'...' if len(bad) > 10 else ''})" if len(bad) > 1 else ""))

    def _illegal_message(self, g: int, action: int) -> str:
        st = self.state
        phase = Phase(int(st.phase[g]))
        legal = [int(x) for x in np.flatnonzero(self.legal_mask[g])]
        return (f"illegal action in game {g}: seat {int(st.current_player[g])} "
                f"({phase.name.lower()} phase) chose {action_str(action)}; "
                f"legal: {' '.join(action_str(x) for x in legal)}")

    # ---------------------------------------------------------------- phases
    def _play_lockstep(self, card: np.ndarray, bit: np.ndarray, lock: tuple[int, int]) -> None:
        """Play one card in every game, all at place ``lock`` = (trick position, trick index).

        The hot path (a batch that starts together stays in lockstep): the lead, the
        trick's end and the next legal sets are decided once for all, and whole arrays
        are written instead of indexed rows. ``card`` (B,) int64 and ``bit`` (B,) uint64
        are the cards played. The place and hand of the player to act and the led suit's
        cards, found for the legal sets, are kept for the next step (``_play_cache``).
        """
        st, p = self.state, self._players
        pos, trick = lock
        seat = st.current_player  # (B,) int8 (read before it is overwritten below)
        hands = st.hands.reshape(-1)
        cache = self._play_cache
        # Valid only if made by the step that set this very lockstep tuple: any other
        # path that changes the state sets a new tuple (or None), so identity suffices.
        if cache is not None and cache[0] is lock:  # the previous step left the lockstep here
            _, at, hand, led_mask = cache
        else:
            at = np.add(self._base, seat)  # (B,) int64 flat index of (game, seat) in (B, P)
            hand, led_mask = hands.take(at, mode="clip"), None  # (B,) hand to act
        hands[at] = np.bitwise_xor(hand, bit, out=hand)
        np.bitwise_or(st.played, bit, out=st.played)
        np.bitwise_or(st.trick_mask, bit, out=st.trick_mask)
        st.current_trick.reshape(-1)[at] = card.astype(np.int8)  # (cast first: faster)
        if self.rules.is_hearts:
            st.hearts_broken |= self._breaks_hearts.take(card, mode="clip")
        if pos == 0:
            self._lead(self._all, slice(None), seat, card, trick)
            led_mask = _SUIT_MASK_OF_CARD.take(card, mode="clip")  # (B,) cards of the led suit
        if pos + 1 < p:
            st.trick_size.fill(pos + 1)
            if self._few:
                self._next_seat.take(seat, out=st.current_player)
            else:  # the seat to the left: as uint8, min(seat + 1, seat + 1 - P) (the
                # second wraps past 250 unless it is 0); cheaper than a table lookup
                after = st.current_player.view(np.uint8)
                np.add(after, np.uint8(1), out=after)
                np.minimum(after, after - np.uint8(p), out=after)
            self._lockstep = (pos + 1, trick)
        else:
            st.trick_size.fill(0)
            self._finish_trick(self._all, trick)  # the winner leads next
            if trick + 1 == self.rules.num_tricks:
                self._play_cache = None
                return  # the round ended: _end_round set the legal sets
            trick, led_mask = trick + 1, None
        at = np.add(self._base, st.current_player, out=at)
        hand = hands.take(at, mode="clip")  # (B,) hand of the player to act
        legal = self._play_legal(slice(None), hand, pos + 1 == p, trick == 0, led_mask, st.legal)
        if legal is not st.legal:
            st.legal[:] = legal
        self._play_cache = (self._lockstep, at, hand, led_mask)

    def _play(self, idx: np.ndarray, card: np.ndarray) -> None:
        """Play one card in games idx (all in the play phase), at any mix of places."""
        st, p = self.state, self._players
        bit = C.CARD_BITS.take(card)  # (n,) uint64
        seat = st.current_player[idx]  # (n,) int8
        at = idx * p + seat  # (n,) int64 flat index of (game, seat) in (B, P) arrays
        hands = st.hands.reshape(-1)
        hands[at] = hands.take(at) ^ bit
        st.played[idx] |= bit
        st.trick_mask[idx] |= bit
        st.current_trick.reshape(-1)[at] = card.astype(np.int8)  # (cast first: faster)
        if self.rules.is_hearts:
            st.hearts_broken[idx] |= self._breaks_hearts.take(card)
        size = st.trick_size[idx]  # (n,) cards already in the trick
        first = int(size[0])
        if (size == first).all():  # the same position in every game of idx
            if first == 0:
                self._lead(idx, idx, seat, card)
            if first + 1 == p:
                st.trick_size[idx] = 0
                self._finish_trick(idx)  # the winner leads next
            else:
                st.trick_size[idx] = first + 1
                st.current_player[idx] = self._next_seat.take(seat)
        else:
            leading = size == 0
            if leading.any():
                lead = idx[leading]
                self._lead(lead, lead, seat[leading], card[leading])
            done = size + 1 == p
            st.trick_size[idx] = np.where(done, 0, size + 1)
            st.current_player[idx] = self._next_seat.take(seat)
            if done.any():
                self._finish_trick(idx[done])  # the winner leads next
        self._update_legal(idx)

    def _play_masked(self, card: np.ndarray, act: np.ndarray, bit: np.ndarray) -> None:
        """Play one card in the games where ``act`` (B,) bool is set, at any mix of places.

        The same moves as ``_play``, as whole-batch operations that leave the other games
        as they are (their bit is 0, their values are written back unchanged): cheaper
        than gathering and scattering rows once a good share of the batch acts, as in a
        vector environment where the opponents of a learner play up to their next turn.
        Only the leads and the finished tricks (a part of these games) are gathered.
        ``card`` (B,) int64: the cards played (ignored where not ``act``); ``bit`` (B,)
        uint64: 1 << card where ``act``, else 0.
        """
        st, p = self.state, self._players
        seat = st.current_player.copy()  # (B,) int8 seat to act (before it moves on)
        at = self._base + seat  # (B,) int64 flat index of (game, seat) in (B, P) arrays
        hands = st.hands.reshape(-1)
        hands[at] = hands.take(at) ^ bit
        np.bitwise_or(st.played, bit, out=st.played)
        np.bitwise_or(st.trick_mask, bit, out=st.trick_mask)
        in_trick = st.current_trick.reshape(-1)
        in_trick[at] = np.where(act, card.astype(np.int8), in_trick.take(at))
        if self.rules.is_hearts:
            st.hearts_broken |= self._breaks_hearts.take(card, mode="clip") & act
        size = st.trick_size  # (B,) int8 cards already in the trick
        lead = np.flatnonzero(act & (size == 0))  # (n,) games whose card leads
        if len(lead):
            self._lead(lead, lead, seat[lead], card[lead])
        np.add(size, act, out=size, casting="unsafe")
        st.current_player[:] = np.where(act, self._next_seat.take(seat), seat)
        done = np.flatnonzero(size == p)  # (n,) games whose card completed the trick
        if len(done):
            st.trick_size[done] = 0
            self._finish_trick(done)  # the winner leads next (or the round ends)
        # Next legal sets, where the game acted and its round goes on (a round that
        # ended has its next phase's sets already).
        hand = hands.take(self._base + st.current_player)  # (B,) hand of the player to act
        legal = self._play_legal(slice(None), hand)  # (B,) uint64
        st.legal[:] = np.where(act & ~st.round_over, legal, st.legal)

    def _lead(self, idx: np.ndarray, rows: np.ndarray | slice, seat: np.ndarray,
              card: np.ndarray, trick: int | None = None) -> None:
        """The first card of a trick sets the led suit and the trick's leader.

        ``trick``: the trick index when idx is every game and all play the same trick.
        """
        st = self.state
        st.led_suit[rows] = _SUIT_OF.take(card)
        if trick is not None:
            st.trick_leader[:, trick] = seat
        else:
            at = idx * self.rules.num_tricks + st.trick_index[rows]
            st.trick_leader.reshape(-1)[at] = seat

    def _finish_trick(self, idx: np.ndarray, trick: int | None = None) -> None:
        """Games idx have a full trick: find its winner, who takes the cards and leads.

        ``trick``: the trick index when idx is every game and all play the same trick.
        """
        st, p, t = self.state, self._players, self.rules.num_tricks
        everyone = idx is self._all
        rows = slice(None) if everyone else idx
        cards = st.current_trick[rows]  # (n, P) int8 card by seat
        led = st.led_suit[rows] * np.int64(C.NUM_CARDS)  # (n,) row of the strength table
        # Winner = seat of the strongest card: (strength, seat) packed into one int16 key
        # (8 * strength + seat) whose maximum names the winner. One seat (column) at a
        # time: whole (n,) arrays, no short inner axis. (Every index here is in range:
        # mode="clip" spares take its bounds check, a third of its cost.)
        keys = self._trick_keys
        best = keys[0].take(led + cards[:, 0], mode="clip")  # (n,) int16
        for seat in range(1, p):
            np.maximum(best, keys[seat].take(led + cards[:, seat], mode="clip"), out=best)
        winner = best & 7  # (n,) int16 seat
        at = (self._base if everyone else idx * p) + winner
        won = st.won.reshape(-1)
        won[at] = won.take(at, mode="clip") | st.trick_mask[rows]
        if trick is None:
            trick = st.trick_index[rows].copy()  # (n,)
            if (trick == trick[0]).all():  # the same trick everywhere
                trick = int(trick[0])
        # A trick's P cards copied as one opaque P-byte item each: much faster than a
        # (n, P) copy with a short inner axis.
        trick_cards, cards = _byte_rows(st.trick_cards), _byte_rows(cards)  # (B, T), (n,)
        if isinstance(trick, int):
            trick_cards[rows, trick] = cards
            st.trick_winner[rows, trick] = winner
        else:
            slot = idx * t + trick  # (n,) flat index of this trick in (B, T) arrays
            trick_cards.reshape(-1)[slot] = cards
            st.trick_winner.reshape(-1)[slot] = winner
        st.trick_mask[rows] = 0
        st.current_trick[rows] = -1
        st.current_player[rows] = winner
        st.led_suit[rows] = -1
        st.trick_index[rows] = trick + 1
        if everyone and isinstance(trick, int):
            self._lockstep = (0, trick + 1)
            if trick + 1 == t:
                self._end_round(idx)
        else:
            ended = np.asarray(trick + 1 == t)
            if ended.all():
                self._end_round(idx)
            elif ended.any():
                self._end_round(idx[ended])

    def _pass(self, idx: np.ndarray, card: np.ndarray) -> None:
        """Hearts: the current player chooses one card to pass (three each, in turn)."""
        st, p = self.state, self._players
        seat = st.current_player[idx]
        at = idx * p + seat  # (n,) flat index of (game, seat) in (B, P) arrays
        pass_out = st.pass_out.reshape(-1)
        chosen_set = pass_out.take(at) | C.CARD_BITS.take(card)
        pass_out[at] = chosen_set
        chosen = _popcount(chosen_set)  # (n,) 1..3 cards chosen by this seat
        st.passes.reshape(-1)[at * 3 + chosen - 1] = card
        st.current_player[idx] = np.where(chosen == 3, self._next_seat.take(seat), seat)
        # Everyone has chosen once the seat right of the first passer (the dealer) has.
        complete = (chosen == 3) & (seat == st.dealer[idx])
        done = idx[complete]
        if len(done):
            offset = self._pass_cycle[(st.round_number[done] - 1) % len(self._pass_cycle)]
            out = st.pass_out[done]  # (n, P)
            giver = (self._seats[None, :] - offset[:, None].astype(np.int64)) % p  # (n, P)
            received = np.take_along_axis(out, giver, axis=1)
            st.hands[done] = (st.hands[done] & ~out) | received
            self._begin_play(done)
        self._update_legal(idx)

    def _curse(self, idx: np.ndarray, action: np.ndarray) -> None:
        """Cupid's Arrow: the dealer names the cursed suit; then bidding or play."""
        st = self.state
        st.cursed_suit[idx] = action - CURSE_OFFSET
        st.current_player[idx] = (st.dealer[idx] + 1) % self._players
        if self.rules.bidding:
            st.phase[idx] = Phase.BID
        else:
            self._begin_play(idx)
        self._update_legal(idx)

    def _bid(self, idx: np.ndarray, action: np.ndarray) -> None:
        """Blinde Liefde: bids go clockwise from left of the dealer, who bids last."""
        st = self.state
        seat = st.current_player[idx]
        st.bids[idx, seat] = action - BID_OFFSET
        st.current_player[idx] = (seat + 1) % self._players
        last = idx[seat == st.dealer[idx]]
        if len(last):
            self._begin_play(last)
        self._update_legal(idx)

    # --------------------------------------------------------------- scoring
    def _end_round(self, idx: np.ndarray) -> None:
        """Score the round of games idx, decide the match, and deal the next round."""
        st, rules = self.state, self.rules
        rows = slice(None) if idx is self._all else idx  # a slice copies faster
        self._lockstep = None
        self._round_over_clear = False
        for name in ROUND_RECORD_FIELDS:
            st.finished[name][rows] = getattr(st, name)[rows]
        points = self.round_score(st.won[rows], st.dead[rows], st.bids[rows],
                                  st.cursed_suit[rows])
        st.round_points[rows] = points
        totals = st.totals[rows] + points
        st.totals[rows] = totals
        st.round_over[rows] = True
        # Hearts counts penalty points: lowest is best.
        sign = -1 if rules.is_hearts else 1
        st.round_winners[rows] = _is_row_max(points if sign == 1 else -points)
        leaders = _is_row_max(totals if sign == 1 else -totals)  # (n, P) best total
        rounds = st.round_number[rows]
        if rules.target_score is None:
            over = np.ones(len(idx), bool)
        else:
            reached = (totals >= rules.target_score).any(axis=1)
            # Smoorverliefd goes on while the lead is shared; Hearts ends on reaching it.
            unique = leaders.sum(axis=1) == self._side_size
            over = reached if rules.is_hearts else reached & unique
        over |= rounds >= rules.max_rounds
        everyone_over = over.all()
        ended = rows if everyone_over else idx[over]
        st.match_over[ended] = True
        st.winners[ended] = leaders if everyone_over else leaders[over]
        st.phase[ended] = Phase.OVER
        st.legal[ended] = 0
        if everyone_over:
            return
        going = idx[~over]
        if len(going):
            st.dealer[going] = self._next_dealer(going)
            st.round_number[going] += 1
            self._start_round(going)

    def _next_dealer(self, idx: np.ndarray) -> np.ndarray:
        """Dealer of the next round: clockwise, or (Cupid's Arrow) the fewest heart cards."""
        st, p = self.state, self._players
        dealer = st.dealer[idx].astype(np.int64)
        if not self.rules.cupids_arrow:
            return (dealer + 1) % p
        hearts = _popcount(st.won[idx] & _HEARTS)  # (n, P)
        fewest = hearts == hearts.min(axis=1, keepdims=True)
        order = (dealer[:, None] + 1 + self._seats[None, :]) % p  # clockwise from left of dealer
        first = np.argmax(np.take_along_axis(fewest, order, axis=1), axis=1)
        return order[np.arange(len(idx)), first]

    def round_score(self, won: np.ndarray, dead: np.ndarray, bids: np.ndarray,
                    cursed_suit: np.ndarray) -> np.ndarray:
        """Round points (n, P) int32 from the cards won (n, P), dead pile (n,), bids, cursed suit.

        Smoorverliefd: points gained (partners: the team's on both seats). Hearts:
        penalty points after shooting the moon.
        """
        rules = self.rules
        # (Few and small temporaries, (n, P) arrays compared column by column: fresh
        # (n, P) uint64 temporaries cost page faults as well as passes at large n.)
        hearts_won = won & _HEARTS  # (n, P) uint64
        heart_cards = _popcount(hearts_won)  # (n, P) int32
        if rules.is_hearts:
            penalty = heart_cards + np.int32(13) * ((won & _QS) != 0)  # (n, P) int32
            moon = penalty == 26  # (n, P) the seat that shot the moon, if any
            shot = np.flatnonzero(_any_over_seats(moon))
            penalty[shot] = 26 * ~moon[shot]
            return penalty
        if rules.pip_scoring:
            points = sum((1 << j) * _popcount(hearts_won & m) for j, m in enumerate(_PIP_BITS))
        else:
            ace = (won & _AH_BIT) != 0  # (n, P) bool
            points = heart_cards + np.int32(rules.ace_of_hearts_points - 1) * ace
        if rules.partners:
            mate = [2, 3, 0, 1]
            hearts_won = hearts_won | hearts_won[:, mate]
            points = points + points[:, mate]
        in_play = _HEARTS & ~dead  # (n,)
        swept = _equal_per_seat(hearts_won, in_play)  # (n, P) bool
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
                cursed = _popcount(won & suit_mask[:, None])
                most = cursed == cursed.max(axis=1, keepdims=True)
                extra -= rules.cursed_penalty * (most & named[:, None])
            if rules.partners:
                extra = extra + extra[:, [2, 3, 0, 1]]
            points = points + extra
        return points.astype(np.int32, copy=False)

    # ------------------------------------------------------------ sampling
    def sample_legal(self, rng: np.random.Generator) -> np.ndarray:
        """(B,) int64 uniformly random legal action of each game (0 where the match is over).

        Each game takes one 32-bit draw ``r`` from ``rng`` (half a ``random_raw`` word)
        and picks the k-th legal action, k = (r * number legal) >> 32 (uniform up to a
        bias below 2**-26), with ``kth_set_bit``. No (B, 70) array and no nested ``where``.
        """
        st, b = self.state, self.batch_size
        if b == 1:  # the same draw with Python ints: no numpy call overhead
            legal = st.legal.item()
            total = legal.bit_count()
            # The low half of a raw word, as the batch's (little-endian) uint32 view.
            k = (rng.bit_generator.random_raw() & 0xFFFFFFFF) * total >> 32
            for _ in range(k):
                legal &= legal - 1  # drop the lowest set bit
            action = (legal & -legal).bit_length() - 1
            action += int(PHASE_ACTION_OFFSET[st.phase.item()])
            return np.array([action if total else 0], np.int64)
        if self._sample_buffers is None:
            self._sample_buffers = tuple(np.empty(b, np.uint64) for _ in range(3))
        upto, k, scratch = self._sample_buffers  # (B,) uint64 each
        legal = st.legal  # (B,) uint64
        upto = byte_prefix_counts(legal, out=upto)  # byte j: set bits in bytes 0..j
        total = np.right_shift(upto, _U56, out=k)  # (B,) legal actions
        draw = rng.bit_generator.random_raw((b + 1) // 2).view(np.uint32)[:b]  # (B,) uint32
        k = np.multiply(draw, total, out=k)
        k = np.right_shift(k, _U32, out=k)  # (B,) uniform 0..total-1
        actions = kth_set_bit(legal, k, upto, scratch)  # (B,) int64 0..63
        if self._wide_actions:
            actions += PHASE_ACTION_OFFSET.take(st.phase)
        if self._lockstep is None:  # some matches may be over (no legal action): 0
            actions[legal == 0] = 0
        return actions


def action_str(action: int) -> str:
    """Readable text of an action id: a card (``QS``), ``bid 3`` or ``curse H``."""
    action = int(action)
    if 0 <= action < C.NUM_CARDS:
        return C.card_str(action)
    if BID_OFFSET <= action < CURSE_OFFSET:
        return f"bid {action - BID_OFFSET}"
    if CURSE_OFFSET <= action < NUM_ACTIONS:
        return f"curse {C.SUITS[action - CURSE_OFFSET]}"
    return f"action {action} (out of range 0..69)"
