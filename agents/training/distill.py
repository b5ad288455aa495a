"""Fitting a ``PolicyNet`` to labelled decisions (PyTorch, the ``rl`` extra): the policy
head to target distributions by cross-entropy, the value head, where targets are
given, to the seat's outcome by mean squared error. Used by ``train_ppo --imitate`` and
``experiments/expert_iteration.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn, optim

from agents.policy_net import PolicyNet
from smoor_env.observation import compact_scale


@dataclass(frozen=True)
class Fit:
    """What ``fit`` measured: the last minibatch's losses and, on the held-out decisions,
    the argmax policy's choices and the value head's error."""

    loss: float  # last minibatch: policy cross-entropy (+ value_coef x value MSE)
    held: np.ndarray  # (H,) indices of the held-out decisions
    choice: np.ndarray  # (H,) the fitted policy's argmax there
    held_value_mse: float  # the value head's mean squared error there (NaN: no targets)
    held_cross_entropy: float  # the policy's cross-entropy against the targets there


def fit(net: PolicyNet, observations: np.ndarray, masks: np.ndarray, targets: np.ndarray,
        *, epochs: int, learning_rate: float, seed: int, values: np.ndarray | None = None,
        value_coef: float = 0.5, max_grad_norm: float = 0.5, hold_one_in: int = 20,
        minibatch: int = 1024) -> Fit:
    """Train ``net`` in place for ``epochs`` over the decisions, less one in ``hold_one_in``
    held out.

    Args:
        observations: (D, obs) int8 compact observations (``compact_scale``).
        masks: (D, 70) bool legal actions.
        targets: (D, 70) float32 target distributions of the policy.
        values: (D,) float32 targets of the value head (NaN: none for that decision), or
            None: the value head is not trained.
        Adam at ``learning_rate``, annealed linearly to 0; the held-out decisions and the
        minibatches are drawn from ``seed``.
    """
    generator = torch.Generator().manual_seed(seed)
    size = len(targets)
    order = torch.randperm(size, generator=generator).numpy()
    cut = size // hold_one_in
    held, train = order[:cut], order[cut:]  # (H,), (F,)
    obs_t = torch.as_tensor(observations)  # (D, obs) int8
    scale = torch.as_tensor(compact_scale()[:net.obs_size])  # (obs,)
    mask_t = torch.as_tensor(masks)  # (D, 70)
    target_t = torch.as_tensor(targets)  # (D, 70)
    value_t = None if values is None else torch.as_tensor(values)  # (D,)
    optimizer = optim.Adam(net.parameters(), lr=learning_rate, eps=1e-5)
    minibatch = max(1, min(minibatch, len(train) // 4))
    per_epoch = -(-len(train) // minibatch)
    total = epochs * per_epoch
    loss = torch.tensor(0.0)
    for update in range(total):
        if update % per_epoch == 0:
            train = train[torch.randperm(len(train), generator=generator).numpy()]
        begin = (update % per_epoch) * minibatch
        idx = torch.as_tensor(train[begin:begin + minibatch])
        optimizer.param_groups[0]["lr"] = learning_rate * (1 - update / total)
        logits, predicted = net(obs_t[idx].float() * scale, mask_t[idx])
        loss = nn.functional.cross_entropy(logits, target_t[idx])
        if value_t is not None:
            wanted = value_t[idx]
            known = ~torch.isnan(wanted)
            if known.any():
                loss = loss + value_coef * ((predicted[known] - wanted[known]) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), max_grad_norm)
        optimizer.step()
    with torch.no_grad():
        logits, predicted = net(obs_t[held].float() * scale, mask_t[held])
        cross_entropy = float(nn.functional.cross_entropy(logits, target_t[held])) \
            if len(held) else float("nan")
        mse = float("nan")
        if value_t is not None and len(held):
            known = ~torch.isnan(value_t[held])
            if known.any():
                mse = float(((predicted[known] - value_t[held][known]) ** 2).mean())
    return Fit(float(loss.detach()), held, logits.argmax(dim=1).numpy(), mse, cross_entropy)
