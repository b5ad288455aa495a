"""Self-play in training: snapshots of the learner as opponents (``SelfPlay``, needs torch),
and the learner in every seat (``SelfPlayRollout`` and ``seat_advantages``, numpy only).

In true self-play each (game, seat) is its own trajectory: a seat's decisions are the
steps where it acted, and its reward for a decision is the sum of its rewards from that
step up to its next decision (or the end of the episode). ``seat_advantages`` runs
generalised advantage estimation along every seat's own decisions at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from smoor_env import Rules
from smoor_env.envs.selfplay import SelfPlayVectorEnv

if TYPE_CHECKING:
    from agents.policy_net import PolicyNet


class SelfPlay:
    """Opponents that are snapshots of the learner, drawn from a pool of recent ones."""

    def __init__(self, net: PolicyNet, pool: int, rng: np.random.Generator) -> None:
        from agents.policy_net import PolicyNet, PPOAgent

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


def seat_advantages(rewards: np.ndarray, seats: np.ndarray, values: np.ndarray,
                    decisions: np.ndarray, ends: np.ndarray, gamma: float,
                    gae_lambda: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-seat GAE of a self-play rollout of T steps in N games of up to P seats.

    Step t is one seat's decision (or a restart); its rewards go to every seat. Seat p's
    reward for its decision at t is the sum of ``rewards[t:u, g, p]``, u its next decision
    in the same episode (the end of the episode: up to and with its last step); its
    advantage chains only along seat p's own decisions (``gamma`` and ``gae_lambda`` per
    decision of that seat). An episode end closes every seat's trajectory. Row T is the
    state after the rollout: the seat to act there bootstraps its last decision with that
    value. A decision whose continuation lies after the rollout (its seat acts again, or
    the episode ends, only later) is not ``complete``: its advantage is unknown (0 here),
    and its value bootstraps the seat's decision before it.

    Args:
        rewards: (T, N, P) float every seat's reward from step t (0 on restarts and for
            seats a game does not have).
        seats: (T + 1, N) int the seat that acted at step t (row T: the seat to act next).
        values: (T + 1, N) float the value estimate of that decision (row T: bootstrap).
        decisions: (T + 1, N) bool step t was a decision, not a restart (row T: the next
            step is one).
        ends: (T, N) bool an episode ended with step t.
        gamma, gae_lambda: discount and GAE lambda, per decision of a seat.

    Returns:
        (T, N) float32 advantages, (T, N) float32 returns (advantages + values) and
        (T, N) bool complete: the decisions to train on.
    """
    steps, games, players = rewards.shape
    rows = np.arange(games)
    next_value = np.zeros((games, players))  # (N, P) value of each seat's next decision
    next_advantage = np.zeros((games, players))  # (N, P) its advantage (0: none or unknown)
    reward = np.zeros((games, players))  # (N, P) rewards from the steps after a decision
    known = np.zeros((games, players), bool)  # (N, P) the next decision or end is seen
    last = decisions[steps]
    next_value[rows[last], seats[steps, last]] = values[steps, last]
    known[rows[last], seats[steps, last]] = True
    advantages = np.zeros((steps, games), np.float32)
    complete = np.zeros((steps, games), bool)
    for t in reversed(range(steps)):
        end = ends[t]  # the trajectories after this step belong to the next episode
        next_value[end], next_advantage[end], reward[end], known[end] = 0.0, 0.0, 0.0, True
        reward += rewards[t]
        g = rows[decisions[t]]  # (K,) games where a seat decided
        s = seats[t, g]  # (K,) that seat
        delta = reward[g, s] + gamma * next_value[g, s] - values[t, g]
        advantage = np.where(known[g, s], delta + gamma * gae_lambda * next_advantage[g, s],
                             0.0)
        advantages[t, g], complete[t, g] = advantage, known[g, s]
        next_value[g, s], next_advantage[g, s] = values[t, g], advantage
        reward[g, s], known[g, s] = 0.0, True
    return advantages, advantages + values[:steps], complete


class SelfPlayRollout:
    """The learner in every seat of one ``SelfPlayVectorEnv`` per rule set (player count),
    and the rows of a rollout of ``num_steps`` steps that ``seat_advantages`` reads.

    The games of all tables are one batch of n rows, table after table (``num_envs``
    each); table i starts from seed ``seed + 7919 * i`` (as ``PoolEnv`` in train_ppo).
    ``obs``, ``mask`` and ``seat`` are the present decision of every game; ``step``
    records that decision and plays the actions; ``advantages`` closes the rollout.

    Args:
        rules: one rule set per table.
        num_envs: games per table.
        num_steps: steps per rollout (T).
        seed: the deals' seed.
        reward_mode: ``"round"`` or ``"trick"`` (``smoor_env.envs.reward``).
    """

    def __init__(self, rules: list[Rules], num_envs: int, num_steps: int, seed: int,
                 reward_mode: str) -> None:
        self.tables = [SelfPlayVectorEnv(num_envs, r, reward_mode) for r in rules]
        self.width = max(r.num_players for r in rules)  # P: rewards are padded to it
        players = np.repeat([r.num_players for r in rules], num_envs)  # (n,)
        self.seated = np.arange(self.width) < players[:, None]  # (n, P) seats of each game
        self.bounds = np.cumsum([0] + [num_envs] * len(rules))  # table i: rows [i]:[i + 1]
        n = len(players)
        self._gather([table.reset(seed=seed + 7919 * i) for i, table in enumerate(self.tables)])
        self.restarting = np.zeros(n, bool)  # (n,) the next step only restarts the game
        self.seats = np.zeros((num_steps + 1, n), np.int64)  # (T + 1, n) seat that acted
        self.decisions = np.zeros((num_steps + 1, n), bool)  # (T + 1, n) not a restart
        self.values = np.zeros((num_steps + 1, n), np.float32)  # (T + 1, n) value estimates
        self.actions = np.zeros((num_steps, n), np.int64)  # (T, n) actions played
        self.rewards = np.zeros((num_steps, n, self.width), np.float32)  # (T, n, P) raw
        self.ends = np.zeros((num_steps, n), bool)  # (T, n) an episode ended with the step

    def _gather(self, outputs: list[tuple]) -> None:
        """The tables' observations, masks and seats to act as one batch."""
        self.obs = np.concatenate([out[0] for out in outputs])  # (n, D) the seats to act
        self.mask = np.concatenate([out[-1]["action_mask"] for out in outputs])  # (n, 70)
        self.seat = np.concatenate([out[-1]["seat"] for out in outputs])  # (n,)

    def step(self, step: int, actions: np.ndarray,
             values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Record row ``step`` (the present seats, ``values`` (n,) of their decisions,
        ``actions`` (n,)) and play the actions.

        Returns:
            (n, P) float32 rewards of every seat, (n,) bool episodes that ended on this
            step, (n,) bool steps that were decisions (not restarts).
        """
        decided = ~self.restarting
        self.seats[step], self.decisions[step], self.values[step] = self.seat, decided, values
        self.actions[step] = actions
        outputs = [table.step(actions[lo:hi]) for table, lo, hi in zip(
            self.tables, self.bounds[:-1], self.bounds[1:], strict=True)]
        self._gather(outputs)
        reward = np.zeros((len(decided), self.width), np.float32)  # (n, P)
        for (_, table_reward, *_), lo, hi in zip(outputs, self.bounds[:-1], self.bounds[1:],
                                                 strict=True):
            reward[lo:hi, :table_reward.shape[1]] = table_reward
        ended = np.concatenate([out[2] for out in outputs])  # (n,) only on decisions
        self.rewards[step], self.ends[step] = reward, ended
        self.restarting = ended
        return reward, ended, decided

    def advantages(self, values: np.ndarray, gamma: float, gae_lambda: float,
                   reward_scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Close the rollout with ``values`` (n,) of the present decisions and return
        ``seat_advantages`` of its rows (rewards times ``reward_scale``)."""
        self.seats[-1], self.decisions[-1], self.values[-1] = (self.seat, ~self.restarting,
                                                                 values)
        return seat_advantages(self.rewards * reward_scale, self.seats, self.values,
                               self.decisions, self.ends, gamma, gae_lambda)
