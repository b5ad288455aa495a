"""The uniformly random agent."""

from __future__ import annotations

import numpy as np

from agents.base import check_mask, check_packed, pack_mask, register
from smoor_env.core.bits import byte_prefix_counts, kth_set_bit


@register("random")
class RandomAgent:
    """Uniform over the legal actions of each game (reads only the action mask)."""

    name = "random"
    uses_observation = False

    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        return self.act_packed(pack_mask(check_mask(observations)), rng)

    def act_packed(self, words: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(B,) int64 actions from the legal mask packed into (B, 2) uint64 (``pack_mask``)."""
        # The k-th legal action, k uniform below each game's count (one draw per game),
        # found in the packed mask with the engine's whole-batch bit selection: no (B, 70)
        # random numbers or sums (numpy is slow along a short axis).
        words = check_packed(words)  # (B, 2): actions 0..63, 64..127
        b = len(words)
        low, high = words[:, 0], words[:, 1]  # (B,) each
        in_low = np.bitwise_count(low).astype(np.uint64)  # (B,)
        k = (rng.random(b) * (in_low + np.bitwise_count(high))).astype(np.uint64)  # (B,)
        upper = k >= in_low  # (B,) the k-th legal action is 64 or more
        word = np.where(upper, high, low)  # (B,) uint64 the word that holds it
        k -= np.where(upper, in_low, np.uint64(0))  # (B,) its rank within that word
        place = kth_set_bit(word, k, byte_prefix_counts(word), np.empty(b, np.uint64))
        return 64 * upper + place
