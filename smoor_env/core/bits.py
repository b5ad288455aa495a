"""Whole-batch helpers on uint64 bit sets and (n, P) seat arrays, shared by every module.

Card sets are uint64 bitmasks (see ``cards.py``). ``kth_set_bit`` and
``byte_prefix_counts`` pick the k-th element of many sets at once with byte-wise
(SWAR: eight 8-bit lanes in one uint64) arithmetic and a 16 KB table, with no
(B, 64) array; the seat helpers reduce short (n, P) rows column by column, which
numpy does faster than along a short inner axis.
"""

from __future__ import annotations

import numpy as np

ONE = np.uint64(1)
ZERO = np.uint64(0)
U7, U8, U32, U56 = (np.uint64(s) for s in (7, 8, 32, 56))
LOW32 = np.uint64(0xFFFFFFFF)
BYTE = np.uint64(0xFF)
LANES_1 = np.uint64(0x0101010101010101)  # 1 in every byte: x * LANES_1 = prefix sums of bytes
LANES_HIGH = np.uint64(0x8080808080808080)  # the high bit of every byte
LANES_8 = np.uint64(0x0808080808080808)  # 8 in every byte


def popcount(masks: np.ndarray) -> np.ndarray:
    """Number of set bits of uint64 sets of any shape, as int32."""
    return np.bitwise_count(masks).astype(np.int32)


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
    return np.multiply(count.view(np.uint64), LANES_1, out=out)


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
    ge = np.multiply(k, LANES_1, out=scratch)
    ge = np.bitwise_or(ge, LANES_HIGH, out=ge)
    ge = np.subtract(ge, upto, out=ge)
    ge = np.bitwise_and(ge, LANES_HIGH, out=ge)
    # 8 * their number (the byte's bit offset): the top byte of the sum of 8 per byte
    # (all in uint64: cheaper than a uint8 popcount cast up).
    shift = np.right_shift(ge, U7, out=ge)
    shift = np.multiply(shift, LANES_8, out=shift)
    shift = np.right_shift(shift, U56, out=shift)  # (n,) uint64 0, 8, .., 56
    # Bits before that byte: byte `byte - 1` of upto, i.e. byte `byte` of upto << 8.
    before = np.left_shift(upto, U8, out=upto)
    before = np.right_shift(before, shift, out=before)
    before = np.bitwise_and(before, BYTE, out=before)
    at = np.subtract(k, before, out=k)  # (n,) rank of the bit within its byte
    chunk = np.right_shift(words, shift, out=upto)  # (n,) that byte of the word
    chunk = np.bitwise_and(chunk, BYTE, out=chunk)
    at = np.left_shift(at, U8, out=at)
    at = np.bitwise_or(at, chunk, out=at)  # (n,) table index k << 8 | byte
    position = _SELECT8.take(at.view(np.int64), mode="clip")  # (n,) int64 place in byte
    position += shift.view(np.int64)
    return position


def byte_rows(a: np.ndarray) -> np.ndarray:
    """View of an int8 array whose last axis (contiguous) is one opaque item: shape a.shape[:-1]."""
    return a.view(np.dtype((np.void, a.shape[-1])))[..., 0]


def max_over_seats(x: np.ndarray) -> np.ndarray:
    """(n,) maximum of each row of x (n, P): column by column (faster than a short-axis max)."""
    best = x[:, 0].copy()
    for seat in range(1, x.shape[1]):
        np.maximum(best, x[:, seat], out=best)
    return best


def or_over_seats(x: np.ndarray) -> np.ndarray:
    """(n,) bitwise OR of each row of x (n, P), column by column: "any" of bool rows,
    the union of uint64 card-set rows."""
    found = x[:, 0].copy()
    for seat in range(1, x.shape[1]):
        found |= x[:, seat]
    return found


def equal_per_seat(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n, P) bool: x (n, P) == v (n,) in each column (faster than broadcasting v[:, None])."""
    out = np.empty(x.shape, bool)
    for seat in range(x.shape[1]):
        np.equal(x[:, seat], v, out=out[:, seat])
    return out


def is_row_max(x: np.ndarray) -> np.ndarray:
    """(n, P) bool: the entries of x (n, P) equal to the maximum of their row."""
    return equal_per_seat(x, max_over_seats(x))
