"""Per-seat rewards of each step, for every game of a batch: the one place they are computed.

``reward_mode="round"``: at the end of every round each seat receives its round
points (Smoorverliefd; partners: the team's) or minus its penalty points (Hearts).
``reward_mode="trick"``: after every trick each seat receives the change of its
provisional round score (``scoring.provisional_points``) and, at the end of
the round, the rest of its real round score: a round's rewards add up to the same.
"""

from __future__ import annotations

import numpy as np

from smoor_env.core.engine import Engine
from smoor_env.core.scoring import provisional_points

REWARD_MODES = ("round", "trick")


class Rewards:
    """Turns engine steps into (B, P) rewards for one engine.

    Args:
        engine: the engine whose steps are rewarded.
        mode: ``"round"`` or ``"trick"``.
    """

    def __init__(self, engine: Engine, mode: str = "round") -> None:
        if mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {mode!r}")
        self.engine = engine
        self.mode = mode
        self._sign = -1 if engine.rules.is_hearts else 1
        shape = (engine.batch_size, engine.rules.num_players)
        self.paid = np.zeros(shape, np.int64)  # (B, P) already paid this round (trick mode)

    def reset(self, games: np.ndarray | slice = slice(None)) -> None:
        """Forget what was paid in the given games (after they are reset)."""
        self.paid[games] = 0

    def tricks(self) -> np.ndarray:
        """(B,) trick counters to pass to ``after_step`` (read them before the step)."""
        return self.engine.state.trick_index.copy()

    def after_step(self, tricks_before: np.ndarray) -> np.ndarray:
        """(B, P) float32 rewards of the step that just ran.

        Args:
            tricks_before: ``tricks()`` read before the step.
        """
        st = self.engine.state
        if self.mode == "round" and not st.round_over.any():  # nothing to pay
            return np.zeros(self.paid.shape, np.float32)
        ended = st.round_over[:, None]  # (B, 1) the round ended: pay the real score
        rewards = np.where(ended, self._sign * st.round_points - self.paid, 0)
        if self.mode == "trick":
            trick_done = (st.trick_index != tricks_before)[:, None] & ~ended
            if trick_done.any():
                now = provisional_points(self.engine.rules, st)
                rewards = np.where(trick_done, now - self.paid, rewards)
                self.paid = np.where(trick_done, now, self.paid)
        self.paid = np.where(ended, 0, self.paid)
        return rewards.astype(np.float32)
