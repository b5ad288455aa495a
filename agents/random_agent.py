"""The uniformly random agent."""

from __future__ import annotations

import numpy as np

from agents.base import check_mask, register


@register("random")
class RandomAgent:
    """Uniform over the legal actions of each game (reads only the action mask)."""

    name = "random"
    uses_observation = False

    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        mask = check_mask(observations)  # (B, 70)
        keys = np.where(mask, rng.random(mask.shape), -1.0)  # the largest key is uniform
        return np.argmax(keys, axis=1)
