"""Dealing: the random keys of games, the first dealer, the shuffle, given deals, the pass.

Randomness is counter-based: game ``i`` of a batch gets a key from (seed, game
id ``i``) (``game_keys``), and round ``r`` of it is dealt from a splitmix64
stream keyed by (game key, ``r``), so a game is the same alone or in any batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from smoor_env.core import cards as C
from smoor_env.core.bits import LANES_1, LANES_HIGH, LOW32, U7, U32, or_over_seats
from smoor_env.core.rules import Rules

_U27, _U30, _U31 = np.uint64(27), np.uint64(30), np.uint64(31)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: Deals of at most this many games draw every card's slot up front (see ``Dealer``).
DEAL_AHEAD_GAMES = 512


def mix(x: np.ndarray, tmp: np.ndarray | None = None) -> np.ndarray:
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


def game_keys(seed: int, game_ids: np.ndarray) -> np.ndarray:
    """(n,) uint64 random key of each game: a hash of (seed, game id)."""
    seed_key = mix(np.array([int(seed) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]
    return mix(mix(game_ids.astype(np.uint64) * _GOLDEN) ^ seed_key)


def first_dealers(game_key: np.ndarray, num_players: int) -> np.ndarray:
    """(n,) int8 first dealer of each game, uniform from its key (the cut for the highest card)."""
    return (mix(game_key ^ _GOLDEN) % np.uint64(num_players)).astype(np.int8)


def pass_givers(offset: np.ndarray, num_players: int) -> np.ndarray:
    """(n, P) int64 the seat that passes to each seat, for pass offsets ``offset`` (n,)
    (receiver = passer + offset)."""
    return (np.arange(num_players)[None, :] - offset[:, None].astype(np.int64)) % num_players


def received(chosen: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """(n, P) uint64 the cards each seat receives: the ``chosen`` (n, P) cards of its giver."""
    return np.take_along_axis(chosen, pass_givers(offset, chosen.shape[1]), axis=1)


def check_hands(rules: Rules, hands: Sequence | np.ndarray, n: int) -> np.ndarray:
    """Validate a given deal for n games (card ids or text per seat); (n, P) uint64 hands."""
    p, size = rules.num_players, rules.hand_size
    if len(hands) != n:
        raise ValueError(f"hands must hold a deal for each of the {n} games, got {len(hands)}")
    out = np.zeros((n, p), np.uint64)
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
            if len(ids) != size:
                raise ValueError(f"game {g}, seat {seat}: a hand has {size} cards, got {len(ids)}")
            for c in ids:
                if not (0 <= c < C.NUM_CARDS and rules.deck_mask >> c & 1):
                    text = C.card_str(c) if 0 <= c < C.NUM_CARDS else str(c)
                    raise ValueError(f"game {g}, seat {seat}: card {text} is not in the "
                                     f"deck of these rules")
                if c in seen:
                    raise ValueError(f"game {g}: card {C.card_str(c)} is dealt twice")
                seen.add(c)
            out[g, seat] = np.uint64(C.mask_of(ids))
    return out


class Dealer:
    """Uniformly random deals of one rule set's deck, for many games at once.

    Card by card, each card of the deck goes to a free slot chosen uniformly among
    all free slots (the P hands and the dead pile): every split of the deck into
    hands and dead pile is equally likely, as with a shuffle dealt out (and the seat
    the dealing starts from does not matter).

    Args:
        rules: the rules (deck, hand size, dead pile).
    """

    def __init__(self, rules: Rules) -> None:
        p = rules.num_players
        self._players = p
        self._has_dead_pile = rules.dead_count > 0
        self.deck = np.uint64(rules.deck_mask)
        self.deck_cards = np.array(C.cards_of(rules.deck_mask))  # (N,) card ids in play
        # Draw counters, and the free slots of each seat (the dead pile is seat P) as
        # prefix sums, one byte each: byte j = 0x80 | (free slots in seats 0..j) - 1
        # (bytes past P: all), see _deal_seats.
        deck_size = len(self.deck_cards)
        self._draw_counters = np.arange(1, (deck_size + 1) // 2 + 1, dtype=np.uint64) * _GOLDEN
        self._slots_left = [np.uint64(deck_size - i) for i in range(deck_size)]
        self._slots_left_column = np.array(self._slots_left, np.uint64)[:, None]  # (N, 1)
        slots = [rules.hand_size] * p + [rules.dead_count]
        free = sum(sum(slots[: j + 1]) << (8 * j) for j in range(8))  # byte j: seats 0..j
        self._free_slots_swar = np.uint64(free - int(LANES_1) + int(LANES_HIGH))

    def deal(self, game_key: np.ndarray, round_number: np.ndarray) -> np.ndarray:
        """(n, P) uint64 random hands of round ``round_number`` (n,) of games ``game_key`` (n,)."""
        games, p = len(game_key), self._players
        with np.errstate(over="ignore"):
            # Round r of game g draws from a splitmix64 stream keyed by hash(game key, r).
            key = mix(game_key + round_number.astype(np.uint64) * _MIX2)
        # 8 - seat of each card id (0: not in the deck), game by game so that the packing
        # below reads whole rows.
        seat_code = np.zeros((games, 64), np.uint8)
        self._deal_seats(key, seat_code)
        # Bit c of seat s's hand = (seat_code[c] == 8 - s): packbits turns 64 flags into 8 bytes.
        hands = np.empty((games, p), np.uint64)
        packed_seats = p if self._has_dead_pile else p - 1
        for s in range(packed_seats):
            packed = np.packbits(seat_code == 8 - s, axis=1, bitorder="little")  # (games, 8)
            hands[:, s] = packed.view(np.uint64)[:, 0]
        if packed_seats < p:  # no dead pile: the last hand is the rest of the deck
            rest = np.full(games, self.deck)
            for s in range(packed_seats):
                rest ^= hands[:, s]
            hands[:, p - 1] = rest
        return hands

    def dead_pile(self, hands: np.ndarray) -> np.ndarray:
        """(n,) uint64 the cards of the deck dealt to no seat of ``hands`` (n, P)."""
        return self.deck & ~or_over_seats(hands)

    def _deal_seats(self, key: np.ndarray, seat_code: np.ndarray) -> None:
        """Deal n games of keys ``key`` (n,): 8 - seat of each card into ``seat_code`` (n, 64).

        Each 64-bit output of a game's stream gives two 32-bit draws, for two cards; a
        draw times the number of free slots left, >> 32, is the card's slot. Its seat is
        found by comparing the slot with the prefix sums of free slots, one byte per seat
        (the dead pile is seat P), all at once ("SWAR" byte-wise arithmetic in a uint64):
        about a dozen whole-batch operations per card, no gather or scatter.

        The slots do not depend on the deal so far, only the seats do: up to
        ``DEAL_AHEAD_GAMES`` games, every card's slot is drawn up front in a few
        operations on (cards, n) arrays, which halves the numpy calls per card (their
        cost at a few games); more games draw card by card, in cache.
        """
        n = len(key)
        cards = self.deck_cards.tolist()
        ahead = n <= DEAL_AHEAD_GAMES
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
                words = mix(key[None, :] + self._draw_counters[:, None])  # (W, n)
                spread = np.empty((2 * len(words), n), np.uint64)  # (2W, n): two per word
                np.right_shift(words, U32, out=spread[0::2])
                np.bitwise_and(words, LOW32, out=spread[1::2])
                spread = spread[:len(cards)]  # (N, n) one draw per card (N may be odd)
                spread *= self._slots_left_column
                spread >>= U32
                spread *= LANES_1  # (N, n) the slot in every byte
                codes = np.empty((len(cards), n), np.uint8)  # (N, n) 8 - seat
            for i, card in enumerate(cards):
                if ahead:
                    lt = spread[i]
                else:
                    if i % 2 == 0:  # a fresh 64-bit word, made and used while in cache
                        word = mix(np.add(key, self._draw_counters[i // 2], out=word), tmp)
                        draw = np.right_shift(word, U32, out=slot)
                    else:
                        draw = np.bitwise_and(word, LOW32, out=slot)
                    # `left` free slots remain in every game: a uniform slot 0..left-1.
                    draw = np.multiply(draw, self._slots_left[i], out=slot)
                    draw = np.right_shift(draw, U32, out=slot)
                    lt = np.multiply(draw, LANES_1, out=slot)  # the slot in every byte
                # Byte j of `lt` becomes 0x80 iff slot < free slots in seats 0..j, i.e.
                # iff seat <= j (all values < 128, so no borrow crosses bytes): 8 - seat
                # such bytes.
                lt = np.subtract(upto, lt, out=slot)
                lt = np.bitwise_and(lt, LANES_HIGH, out=slot)
                np.bitwise_count(lt, out=codes[i] if ahead else seat_code[:, card])
                # One slot fewer in that seat and after: 1 off every byte j >= seat.
                lt = np.right_shift(lt, U7, out=slot)
                upto = np.subtract(upto, lt, out=upto if big else None)
        if ahead:
            seat_code[:, self.deck_cards] = codes.T
