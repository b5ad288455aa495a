"""Card ids, their text form and the bitmask helpers shared by every layer.

A card id is ``13 * suit + (rank - 2)`` with suits in the order clubs,
diamonds, hearts, spades (``C D H S``) and ranks 2..14 (``T`` = ten, ``A`` = 14),
so ``2C`` = 0, ``AC`` = 12, ``2H`` = 26, ``AH`` = 38, ``QS`` = 49, ``AS`` = 51.
Two text forms, rank then suit: the compact one of records and action texts, two
ASCII characters with ``T`` for the ten (``"QS"``, ``"TH"``), and the display form
of every view people read (terminal, pictures, the replay page), with suit symbols
and ``10`` for the ten (``"Q♠"``, ``"10♥"``). ``parse_card`` reads either, in any
case (``10h``, ``th``, ``TH``, ``10♥``).

Sets of cards are kept as ``uint64`` bitmasks (bit ``c`` set = card ``c`` in the
set), which lets the engine follow suit with one ``&`` and count with
``np.bitwise_count``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

NUM_CARDS = 52
NUM_SUITS = 4
CARDS_PER_SUIT = 13
SUITS = "CDHS"
SUIT_SYMBOLS = "♣♦♥♠"
RANKS = "23456789TJQKA"
CLUBS, DIAMONDS, HEARTS, SPADES = range(4)
#: (52,) int64 suit (0..3 = C D H S) and rank (0 = two .. 12 = ace) of each card id.
SUIT_OF = np.arange(NUM_CARDS) // CARDS_PER_SUIT
RANK_OF = np.arange(NUM_CARDS) % CARDS_PER_SUIT
#: Card ids the rules name.
TWO_OF_CLUBS, ACE_OF_HEARTS = 0, 38
QUEEN_OF_SPADES, KING_OF_SPADES, ACE_OF_SPADES = 49, 50, 51

#: (4,) uint64: the 13 cards of each suit.
SUIT_MASKS = np.array([((1 << 13) - 1) << (13 * s) for s in range(4)], dtype=np.uint64)
HEART_MASK = int(SUIT_MASKS[HEARTS])
#: uint64: every card (bits 0..51).
DECK_MASK = np.uint64((1 << NUM_CARDS) - 1)
#: (52,) uint64: ``1 << card``.
CARD_BITS = np.left_shift(np.uint64(1), np.arange(NUM_CARDS, dtype=np.uint64))


def card_suit(card: int) -> int:
    """Suit index (0..3) of a card id."""
    return card // CARDS_PER_SUIT


def card_rank(card: int) -> int:
    """Rank 2..14 of a card id (14 = ace)."""
    return card % CARDS_PER_SUIT + 2


def rank_str(card: int) -> str:
    """Display form of a card's rank: ``"2"`` .. ``"10"``, ``"J"``, ``"Q"``, ``"K"``, ``"A"``."""
    rank = RANKS[int(card) % CARDS_PER_SUIT]
    return "10" if rank == "T" else rank


def card_str(card: int, symbols: bool = False) -> str:
    """Text form of a card id: compact ``card_str(49) == "QS"``, ``card_str(34) == "TH"``;
    with symbols the display form, ``"Q♠"``, ``"10♥"``."""
    card = int(card)
    if not 0 <= card < NUM_CARDS:
        raise ValueError(f"card id {card} is out of range 0..51")
    if symbols:
        return rank_str(card) + SUIT_SYMBOLS[card // CARDS_PER_SUIT]
    return RANKS[card % CARDS_PER_SUIT] + SUITS[card // CARDS_PER_SUIT]


def parse_card(text: str) -> int:
    """Card id of one card text such as ``"TD"``, ``"td"``, ``"10D"`` or ``"Q♠"``."""
    t = text.strip().upper()
    if t.startswith("10"):
        t = "T" + t[2:]
    if len(t) != 2:
        raise ValueError(f"cannot read card {text!r}: expected rank then suit, like 'QS' or 'TD'")
    rank, suit = t[0], t[1]
    if suit in SUIT_SYMBOLS:
        suit = SUITS[SUIT_SYMBOLS.index(suit)]
    if rank not in RANKS or suit not in SUITS:
        raise ValueError(
            f"cannot read card {text!r}: rank must be one of {RANKS}, suit one of {SUITS}"
        )
    return CARDS_PER_SUIT * SUITS.index(suit) + RANKS.index(rank)


def parse_cards(text: str | Iterable[str]) -> list[int]:
    """Card ids of a whitespace- or comma-separated string (``"AH TD 2C"``) or a list of texts."""
    parts = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    return [parse_card(p) for p in parts]


def cards_str(cards: Iterable[int], symbols: bool = False) -> str:
    """Space-separated text of card ids."""
    return " ".join(card_str(c, symbols) for c in cards)


def mask_of(cards: Iterable[int]) -> int:
    """Bitmask (Python int) of a collection of card ids."""
    m = 0
    for c in cards:
        m |= 1 << int(c)
    return m


def cards_of(mask: int | np.integer) -> list[int]:
    """Card ids in a bitmask, ascending."""
    m = int(mask)
    return [c for c in range(NUM_CARDS) if m >> c & 1]


def mask_to_bool(masks: np.ndarray, width: int = NUM_CARDS) -> np.ndarray:
    """Expand uint64 bitmasks of any shape S to a bool array of shape S + (width,).

    Bit i of each mask is element i. The masks are read as 8 little-endian bytes
    and unpacked bytewise (`np.unpackbits`), a few times faster than shifting by
    every bit position from a batch of about a hundred masks up.
    """
    m = np.asarray(masks, dtype="<u8")
    # (size * 8,); contiguous first: reshape keeps a 1-D strided input a strided view
    octets = np.ascontiguousarray(m.reshape(-1)).view(np.uint8)
    bits = np.unpackbits(
        octets.reshape(m.shape + (8,)), axis=-1, count=width, bitorder="little"
    )  # S + (width,) uint8
    return bits.view(bool)


def bool_to_mask(flags: np.ndarray) -> np.ndarray:
    """Pack a bool array of shape S + (n,), n <= 64, into uint64 bitmasks of shape S.

    Element i becomes bit i (the inverse of `mask_to_bool`), packed bytewise.
    """
    f = np.asarray(flags, dtype=bool)
    if f.ndim == 0 or f.shape[-1] > 64:
        raise ValueError(f"bool_to_mask packs a last axis of at most 64 flags, got shape {f.shape}")
    packed = np.packbits(f, axis=-1, bitorder="little")  # S + (ceil(n / 8),) uint8
    octets = np.zeros(f.shape[:-1] + (8,), np.uint8)  # S + (8,)
    octets[..., : packed.shape[-1]] = packed
    return octets.view("<u8").reshape(f.shape[:-1]).astype(np.uint64, copy=False)


def highest_card(sets: np.ndarray) -> np.ndarray:
    """(...) int64 highest card id in each uint64 card set (-1 where empty).

    Card sets use bits 0..51, so the conversion to float64 is exact and the float's
    binary exponent is the highest set bit (no loop over bits).
    """
    sets = np.asarray(sets, np.uint64).view(np.int64)  # below 2**52: the same numbers
    exponent = sets.astype(np.float64).view(np.int64)  # int64 to float64 converts faster
    exponent >>= 52
    exponent -= 1023
    return np.maximum(exponent, -1, out=exponent)


def lowest_card(sets: np.ndarray) -> np.ndarray:
    """(...) int64 lowest card id in each uint64 card set (-1 where empty)."""
    sets = np.asarray(sets, np.uint64)
    return highest_card(sets & np.negative(sets))  # x & -x keeps the lowest bit
