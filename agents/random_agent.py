"""The uniformly random agent."""

from __future__ import annotations

import numpy as np

from agents.base import check_mask, register

_LANES_1 = np.uint64(0x0101010101010101)  # 1 in every byte of a uint64
_LANES_HIGH = np.uint64(0x8080808080808080)  # the high bit of every byte
_U3, _U8, _BYTE = np.uint64(3), np.uint64(8), np.uint64(0xFF)
# (8, 256) uint8: position of the j-th set bit (row j) of the byte v (column v).
_SELECT8 = np.zeros((8, 256), np.uint8)
for _v in range(256):
    for _j, _bit in enumerate(b for b in range(8) if _v >> b & 1):
        _SELECT8[_j, _v] = _bit


@register("random")
class RandomAgent:
    """Uniform over the legal actions of each game (reads only the action mask)."""

    name = "random"
    uses_observation = False

    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        mask = check_mask(observations)  # (B, 70)
        # The k-th legal action, k uniform below each game's count (one draw per game),
        # found in the packed mask with whole-batch operations on (B,) words: no (B, 70)
        # random numbers or sums (numpy is slow along a short axis).
        b = len(mask)
        words = np.zeros((b, 2), np.uint64)  # (B, 2): actions 0..63, 64..69
        words.view(np.uint8)[:, :9] = np.packbits(mask, axis=1, bitorder="little")
        low, high = words[:, 0], words[:, 1]  # (B,) each
        in_low = np.bitwise_count(low)  # (B,) uint8
        k = (rng.random(b) * (in_low + np.bitwise_count(high))).astype(np.uint8)  # (B,)
        upper = k >= in_low  # (B,) the k-th legal action is 64 or more
        word = np.where(upper, high, low)  # (B,) uint64 the word that holds it
        k = np.where(upper, k - in_low, k)  # (B,) its rank within that word
        # Bytes of the word: prefix sums of their bit counts, one per byte (SWAR); the
        # byte holding rank k is the number of bytes whose prefix sum is <= k.
        upto = np.bitwise_count(word.view(np.uint8)).view(np.uint64) * _LANES_1  # (B,)
        ge = ((k.astype(np.uint64) * _LANES_1) | _LANES_HIGH) - upto
        byte = np.bitwise_count(ge & _LANES_HIGH).astype(np.uint64)  # (B,) 0..7
        before = ((upto << _U8) >> (byte << _U3)) & _BYTE  # (B,) set bits in earlier bytes
        chunk = (word >> (byte << _U3)) & _BYTE  # (B,) the byte itself
        at = (k - before.astype(np.uint8)) * np.int64(256) + chunk.astype(np.int64)
        return (64 * upper + 8 * byte.astype(np.int64) + _SELECT8.reshape(-1).take(at))
