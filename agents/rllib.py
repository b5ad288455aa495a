"""``rllib``: a policy trained by ``experiments/train_rllib.py`` (RLlib's PPO), played
from its checkpoint; and the RLlib side of the agents (fixed agents as RLlib modules).

Needs the ``ray`` extra (``pip install -e '.[ray]'``). ``agents`` registers the name
without importing this module, so importing ``agents`` never needs Ray.

    make_agent("rllib", checkpoint="checkpoints/rllib_smoorverliefd_4p")
    python -m experiments.win_rates --agents rllib:checkpoint=checkpoints/rllib_smoorverliefd_4p \\
        greedy --players 4 --rule-sets smoorverliefd

The policy is an ``RLModule`` with action masking as RLlib's own example builds it
(``ray.rllib.examples.rl_modules.classes.action_masking_rlm``): it reads observations
``{"observations": (B, D) float32, "action_mask": (B, 70) float32}`` and adds
``log(mask)`` (clamped to RLlib's ``FLOAT_MIN``) to its logits, so illegal actions are
never chosen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module import RLModule

from agents.base import build_agent, check_mask

#: Module id of the trained policy in an RLlib checkpoint written by train_rllib.
LEARNER = "learner"


def module_path(checkpoint: str | Path, module: str = LEARNER) -> Path:
    """Folder of one policy's ``RLModule`` inside an RLlib algorithm checkpoint."""
    path = Path(checkpoint) / "learner_group" / "learner" / "rl_module" / module
    if not path.is_dir():
        raise FileNotFoundError(f"no RLlib module {module!r} in checkpoint {str(checkpoint)!r} "
                                f"(expected the folder {path})")
    return path


def masked_batch(observations: dict[str, np.ndarray]) -> dict[str, Any]:
    """RLlib's input batch for the masking module from the agents' observations."""
    mask = check_mask(observations)  # (B, 70) bool
    return {Columns.OBS: {
        "observations": torch.as_tensor(np.asarray(observations["observation"], np.float32)),
        "action_mask": torch.as_tensor(mask, dtype=torch.float32)}}


class RLlibAgent:
    """Plays the trained RLlib module through the batched agent protocol.

    Args:
        checkpoint: folder written by ``experiments/train_rllib.py`` (``algo.save_to_path``).
        module: module id in the checkpoint.
        sample: sample from the policy instead of playing its most likely action.
    """

    name = "rllib"
    uses_observation = True

    def __init__(self, checkpoint: str, module: str = LEARNER, sample: bool = False) -> None:
        self.module = RLModule.from_checkpoint(module_path(checkpoint, module))
        self.module.eval()
        self.checkpoint, self.sample = checkpoint, bool(sample)

    @torch.no_grad()
    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        batch = masked_batch(observations)
        mask = batch[Columns.OBS]["action_mask"].numpy().astype(bool)  # (B, 70)
        logits = self.module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS].numpy()
        if self.sample:  # Gumbel-max with numpy's generator: reproducible from the caller's rng
            logits = logits + -np.log(-np.log(rng.random(logits.shape)))
        return np.argmax(np.where(mask, logits, -np.inf), axis=1).astype(np.int64)


class FixedAgentModule(RLModule):
    """One of this project's agents (``model_config={"agent": spec, "seed": int}``) as an
    RLlib module that is never trained: the learner's fixed opponents, as RLlib's
    ``custom_heuristic_policy`` example seats its heuristic."""

    def setup(self) -> None:
        self.agent = build_agent(self.model_config["agent"])
        self.rng = np.random.default_rng(self.model_config.get("seed", 0))

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        seen = batch[Columns.OBS]
        observations = {"observation": np.asarray(seen["observations"], np.float32),
                        "action_mask": np.asarray(seen["action_mask"]) > 0}
        return {Columns.ACTIONS: torch.as_tensor(self.agent.act(observations, self.rng))}

    def _forward_train(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError("a fixed agent is not trained (policies_to_train excludes it)")
