"""The trained policy's network in PyTorch (the ``rl`` extra): ``PolicyNet``, and the
checkpoints ``experiments/train_ppo.py`` writes and reads.

Playing a checkpoint needs no torch: the ``ppo`` agent (``agents.ppo.PPOAgent``,
re-exported here) runs the same network in numpy (``agents.ppo.NumpyPolicyNet``).
A checkpoint is a ``torch.save`` dict: ``"model"`` (the ``PolicyNet`` state dict),
``"hidden"`` (layer sizes), ``"card_head"`` (0: none; see ``PolicyNet``) and ``"args"``
(the training ``Args`` as a dict).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from agents.ppo import (
    CARD_FEATURES,
    CHECKPOINT_DIR,
    DEFAULT_CHECKPOINT,
    MASKED_LOGIT,
    PPOAgent,
    card_features,
    check_finite_weights,
    resolve_checkpoint,
    shipped_checkpoints,
)
from smoor_env.core.state import NUM_ACTIONS
from smoor_env.observation import OBSERVATION_SIZE

__all__ = ["CHECKPOINT_DIR", "DEFAULT_CHECKPOINT", "MASKED_LOGIT", "CardFeatures", "PPOAgent",
           "PolicyNet", "load_checkpoint", "save_checkpoint", "shipped_checkpoints"]


class PolicyNet(nn.Module):
    """Shared MLP trunk with a policy head (70 logits) and a value head.

    It reads the first ``obs_size`` features of an observation: blocks added at the end of
    the layout later leave a trained network's input unchanged.

    ``card_head`` > 0 adds a head shared by the 52 cards: for every card, its own
    features (``CardFeatures``: where it is, seat by seat, and how it ranks among the
    cards of its suit still out) and a ``card_head``-wide summary of the trunk go through
    one small MLP to one logit, added to that card's logit of the linear head. What it
    learns about one card then carries over to the others. Needs the whole layout.
    """

    def __init__(self, hidden: tuple[int, ...] = (256, 256),
                 obs_size: int = OBSERVATION_SIZE, num_actions: int = NUM_ACTIONS,
                 card_head: int = 0) -> None:
        super().__init__()
        if card_head and obs_size != OBSERVATION_SIZE:
            raise ValueError(f"card_head needs the whole observation ({OBSERVATION_SIZE} "
                             f"values), got obs_size={obs_size}")
        layers: list[nn.Module] = []
        size = obs_size
        for width in hidden:
            layers += [_init(nn.Linear(size, width)), nn.ReLU()]
            size = width
        self.trunk = nn.Sequential(*layers)
        self.policy = _init(nn.Linear(size, num_actions), std=0.01)
        self.value = _init(nn.Linear(size, 1), std=1.0)
        self.hidden = tuple(hidden)
        self.obs_size = obs_size
        self.card_head = int(card_head)
        if self.card_head:
            self.cards = CardFeatures()
            self.context = _init(nn.Linear(size, card_head))
            self.per_card = nn.Sequential(
                _init(nn.Linear(self.cards.size + card_head, card_head)), nn.ReLU(),
                _init(nn.Linear(card_head, 1), std=0.01))

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, 70) masked logits and (B,) values; ``mask`` is (B, 70) bool legal actions."""
        h = self.trunk(obs[:, :self.obs_size])
        logits = self.policy(h)
        if self.card_head:  # only at the cards ``mask`` allows: the others are masked out
            rows, cards = mask[:, :52].nonzero(as_tuple=True)  # (M,) each
            feats = self.cards(obs, rows, cards)  # (M, F)
            ctx = torch.relu(self.context(h))[rows]  # (M, C)
            card = self.per_card(torch.cat([feats, ctx], dim=1)).squeeze(-1)  # (M,)
            extra = torch.zeros_like(logits[:, :52]).index_put((rows, cards), card)  # (B, 52)
            logits = torch.cat([logits[:, :52] + extra, logits[:, 52:]], dim=1)
        logits = logits.masked_fill(~mask, MASKED_LOGIT)
        return logits, self.value(h).squeeze(-1)

    @torch.no_grad()
    def deepened(self, layers: int) -> PolicyNet:
        """A copy with ``layers`` more trunk layers of the last one's width that compute
        the same function (Net2DeeperNet, Chen et al. 2016): each new layer starts as the
        identity, exact after a ReLU (its inputs are >= 0), so a trained network grows
        without losing what it knows, and the heads read what they read before. With
        ``layers`` = 0, this network itself."""
        if layers < 0 or (layers and not self.hidden):
            raise ValueError(f"a network with a trunk grows by layers >= 0, got {layers} "
                             f"for a trunk of {list(self.hidden)}")
        if not layers:
            return self
        width = self.hidden[-1]
        grown = PolicyNet((*self.hidden, *[width] * layers), obs_size=self.obs_size,
                          num_actions=self.policy.out_features, card_head=self.card_head)
        state = grown.state_dict()
        state.update(self.state_dict())  # the trunk's first layers and every head
        for k in range(len(self.hidden), len(grown.hidden)):
            state[f"trunk.{2 * k}.weight"] = torch.eye(width)
            state[f"trunk.{2 * k}.bias"] = torch.zeros(width)
        grown.load_state_dict(state)
        return grown.train(self.training)

    @torch.no_grad()
    def logits(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(B, 70) numpy masked logits of numpy observations (B, OBS) and bool masks
        (B, 70): what ``agents.ppo.PPOAgent`` plays (``net=``)."""
        return self(torch.as_tensor(obs), torch.as_tensor(mask))[0].numpy()


class CardFeatures(nn.Module):
    """(B, 52, F) what the observation says about each card, or (M, F) about the cards
    ``cards`` of the observations ``rows``: ``agents.ppo.card_features`` (no parameters:
    computed in numpy, the one home of the features)."""

    size = CARD_FEATURES

    def forward(self, obs: torch.Tensor, rows: torch.Tensor | None = None,
                cards: torch.Tensor | None = None) -> torch.Tensor:
        pairs = [None if t is None else t.cpu().numpy() for t in (rows, cards)]
        return torch.from_numpy(card_features(obs.detach().cpu().numpy(), *pairs)).to(obs.device)


def _init(layer: nn.Linear, std: float = 2 ** 0.5) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.zeros_(layer.bias)
    return layer


def save_checkpoint(path: str | Path, net: PolicyNet, args: dict[str, Any]) -> None:
    """Write a checkpoint ``PPOAgent`` can load (state dict, layer sizes, training args)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
    torch.save({"model": state, "hidden": list(net.hidden), "card_head": net.card_head,
                "args": args}, path)


def load_checkpoint(path: str | Path) -> tuple[PolicyNet, dict[str, Any]]:
    """(network in eval mode, training args) from a checkpoint file."""
    path = resolve_checkpoint(path)
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
        first = "trunk.0.weight" if data["hidden"] else "policy.weight"  # (width, obs_size)
        net = PolicyNet(tuple(data["hidden"]), obs_size=data["model"][first].shape[1],
                        card_head=int(data.get("card_head", 0)))
        net.load_state_dict(data["model"])
    except Exception as error:  # not a zip, cut short, missing or misshapen layers, ...
        text = " ".join(str(error).split())[:300] or type(error).__name__
        raise ValueError(f"{path} is not a policy checkpoint ({type(error).__name__}: "
                         f"{text})") from None
    check_finite_weights({k: v.numpy() for k, v in data["model"].items()}, path)
    net.eval()
    return net, dict(data.get("args", {}))
