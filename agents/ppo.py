"""``ppo``: a policy trained by ``experiments/train_ppo.py``, played from a checkpoint.

Needs PyTorch (the ``rl`` extra: ``pip install -e '.[rl]'``). ``agents`` registers
the name without importing this module, so importing ``agents`` never needs torch.

    make_agent("ppo")                                    # checkpoints/ppo_smoorverliefd.pt
    make_agent("ppo", checkpoint="ppo_hearts")           # a shipped checkpoint by name
    make_agent("ppo", checkpoint="runs/x/model.pt", sample=True)   # or any file
    python -m experiments.win_rates --agents ppo:checkpoint=ppo_hearts \\
        random greedy mc --players 4 --rule-sets hearts

Shipped checkpoints (``checkpoints/<name>.pt``, see README "Reinforcement learning"):
``ppo_smoorverliefd`` (Smoorverliefd, 3, 4 and 5 players) and ``ppo_hearts`` (Hearts with
passing, 4 players).

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

from agents.base import check_mask
from smoor_env.observation import MAX_SEATS, OBSERVATION_SIZE, SLICES
from smoor_env.state import NUM_ACTIONS

#: Folder of the shipped checkpoints; ``checkpoint="<name>"`` loads ``<name>.pt`` from it.
CHECKPOINT_DIR = Path(__file__).resolve().parent.parent / "checkpoints"
#: The checkpoint played by default (Smoorverliefd, 3, 4 and 5 players).
DEFAULT_CHECKPOINT = "ppo_smoorverliefd"
#: Logit of illegal actions (large negative, finite: no NaN when a row has no legal action).
MASKED_LOGIT = -1e8


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
        if self.card_head:
            feats = self.cards(obs)  # (B, 52, F)
            ctx = torch.relu(self.context(h))[:, None, :].expand(-1, 52, -1)  # (B, 52, C)
            card = self.per_card(torch.cat([feats, ctx], dim=2)).squeeze(-1)  # (B, 52)
            logits = torch.cat([logits[:, :52] + card, logits[:, 52:]], dim=1)
        logits = logits.masked_fill(~mask, MASKED_LOGIT)
        return logits, self.value(h).squeeze(-1)


class CardFeatures(nn.Module):
    """(B, 52, F) what the observation says about each card, the same features for every
    card: its place (in the hand, in the trick by seat, played by seat, won by seat,
    passed, received, the trick it was played in), its suit and rank, and how it stands in
    its suit: the cards of the suit still out (not held, not played) above and below it,
    the suit's cards in the hand, and whether a higher card of its suit is in the trick."""

    def __init__(self) -> None:
        super().__init__()
        cols = [SLICES["hand"].start + np.arange(52)]
        for block in ("current_trick", "played", "won"):
            cols += [SLICES[block].start + seat * 52 + np.arange(52) for seat in range(MAX_SEATS)]
        cols += [SLICES[block].start + np.arange(52) for block in ("passed", "received",
                                                                   "card_trick")]
        self.register_buffer("columns", torch.as_tensor(np.stack(cols, 1)), persistent=False)
        suit, rank = np.arange(52) // 13, np.arange(52) % 13
        same = suit[:, None] == suit[None, :]  # (52, 52) [j, c]: same suit
        self.register_buffer("above", torch.as_tensor(
            (same & (rank[:, None] > rank[None, :])).astype(np.float32)), persistent=False)
        self.register_buffer("below", torch.as_tensor(
            (same & (rank[:, None] < rank[None, :])).astype(np.float32)), persistent=False)
        self.register_buffer("suit", torch.as_tensor(same.astype(np.float32)), persistent=False)
        constant = np.concatenate([np.eye(4)[suit], rank[:, None] / 12.0], 1)  # (52, 5)
        self.register_buffer("constant", torch.as_tensor(constant, dtype=torch.float32),
                             persistent=False)
        self.size = len(cols) + 5 + 4

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        own = obs[:, self.columns]  # (B, 52, 19)
        hand = own[:, :, 0]  # (B, 52)
        trick = own[:, :, 1:1 + MAX_SEATS].sum(2)  # (B, 52)
        played = own[:, :, 1 + MAX_SEATS:1 + 2 * MAX_SEATS].sum(2)
        out = (1 - hand - played).clamp(min=0)  # (B, 52) not held, not played
        derived = torch.stack([out @ self.above / 12, out @ self.below / 12,
                               hand @ self.suit / 13, (trick @ self.above > 0).float()], 2)
        return torch.cat([own, self.constant.expand(len(obs), -1, -1), derived], 2)


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
    path = _resolve(path)
    data = torch.load(path, map_location="cpu", weights_only=True)
    first = "trunk.0.weight" if data["hidden"] else "policy.weight"  # (width, obs_size)
    net = PolicyNet(tuple(data["hidden"]), obs_size=data["model"][first].shape[1],
                    card_head=int(data.get("card_head", 0)))
    net.load_state_dict(data["model"])
    net.eval()
    return net, dict(data.get("args", {}))


def shipped_checkpoints() -> list[str]:
    """Names of the checkpoints shipped in ``checkpoints/`` (what ``checkpoint=`` accepts
    besides a path)."""
    return sorted(path.stem for path in CHECKPOINT_DIR.glob("*.pt"))


def _resolve(checkpoint: str | Path) -> Path:
    """The file of ``checkpoint``: a shipped checkpoint's name (``"ppo_hearts"`` is
    ``checkpoints/ppo_hearts.pt``), else a path as given, else a path relative to the
    repository."""
    path = Path(checkpoint)
    named = CHECKPOINT_DIR / f"{checkpoint}.pt"
    if path.name == str(checkpoint) and not path.suffix and named.exists():
        return named
    if not path.exists() and not path.is_absolute():
        repo = CHECKPOINT_DIR.parent / path
        if repo.exists():
            return repo
    if not path.exists():
        raise FileNotFoundError(f"PPO checkpoint {str(checkpoint)!r} is neither a file nor a "
                                f"shipped checkpoint name ({', '.join(shipped_checkpoints())})")
    return path


_CACHE: dict[str, tuple[PolicyNet, dict[str, Any]]] = {}


class PPOAgent:
    """Plays a ``PolicyNet`` through the batched agent protocol.

    Args:
        checkpoint: a shipped checkpoint's name (``"ppo_smoorverliefd"``, the default, or
            ``"ppo_hearts"``: ``checkpoints/<name>.pt``) or a checkpoint file's path.
        sample: sample from the policy instead of playing its most likely action.
        threads: ``torch.set_num_threads`` (0: leave torch's setting alone).
        net: play this network instead of loading ``checkpoint`` (used for self-play).
    """

    name = "ppo"
    uses_observation = True

    def __init__(self, checkpoint: str = DEFAULT_CHECKPOINT, sample: bool = False,
                 threads: int = 1, net: PolicyNet | None = None) -> None:
        if threads:
            torch.set_num_threads(int(threads))
        if net is None:
            key = str(_resolve(checkpoint).resolve())
            if key not in _CACHE:
                _CACHE[key] = load_checkpoint(key)
            net, self.train_args = _CACHE[key]
        else:
            self.train_args = {}
        self.net = net
        self.sample = bool(sample)
        self.checkpoint = checkpoint

    @torch.no_grad()
    def _logits(self, observations: dict[str, np.ndarray]) -> tuple[np.ndarray, torch.Tensor]:
        """The checked (B, 70) bool mask and the network's (B, 70) masked logits."""
        mask = check_mask(observations)
        obs = torch.as_tensor(np.asarray(observations["observation"], np.float32))
        return mask, self.net(obs, torch.as_tensor(mask))[0]

    def log_policy(self, observations: dict[str, np.ndarray]) -> np.ndarray:
        """(B, 70) float64 log-probabilities of the policy's actions (-inf where illegal)."""
        mask, logits = self._logits(observations)
        logp = torch.log_softmax(logits.double(), dim=1).numpy()
        return np.where(mask, logp, -np.inf)

    def act(self, observations: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        mask, logits = self._logits(observations)
        if not self.sample:
            return logits.argmax(dim=1).numpy().astype(np.int64)
        # Gumbel-max with numpy's generator: reproducible from the caller's rng.
        gumbel = -np.log(-np.log(rng.random(mask.shape)))
        scores = np.where(mask, logits.numpy() + gumbel, -np.inf)
        return np.argmax(scores, axis=1).astype(np.int64)
