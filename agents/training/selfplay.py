"""Self-play opponents: snapshots of the learner's network, drawn from a pool of recent ones
(needs torch, the rl extra)."""

from __future__ import annotations

import numpy as np

from agents.policy_net import PolicyNet, PPOAgent


class SelfPlay:
    """Opponents that are snapshots of the learner, drawn from a pool of recent ones."""

    def __init__(self, net: PolicyNet, pool: int, rng: np.random.Generator) -> None:
        self.pool: list[dict] = []
        self.size = pool
        self.rng = rng
        self.net = PolicyNet(net.hidden, obs_size=net.obs_size, card_head=net.card_head)
        self.agent = PPOAgent(net=self.net, sample=True)
        self.refresh(net)

    def refresh(self, net: PolicyNet) -> None:
        self.pool.append({k: v.detach().clone() for k, v in net.state_dict().items()})
        self.pool = self.pool[-self.size:]
        self.net.load_state_dict(self.pool[int(self.rng.integers(len(self.pool)))])
        self.net.eval()
