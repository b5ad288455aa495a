"""Deep Monte Carlo self-play (DMC, as DouZero and SkatZero train), numpy play and PyTorch
learning: one ``PolicyNet`` plays every seat of every table (one rule set and player
count each), epsilon-greedy on its own move values, and learns each move it played by
squared error against the round's outcome for the seat that played it.

The move values live in the network's policy logits, in the units of expert iteration's
targets (``experiments/expert_iteration.py`` fits softmax(value / 0.5 points)): a logit
of ``l`` is ``l * POINTS_PER_LOGIT`` points. So the network plays as a policy
(``ppo:checkpoint=...`` takes the largest logit, the best move by its values) and serves
as a search prior (a softmax over the logits) exactly as an expert-iteration network
does, and an expert-iteration network is a warm start. The value head learns the same
outcome for the state, over the rule set's value scale (``agents.ismcts._value_scale``).

``DMCTables(rules_list, num_envs, seed)`` holds one ``SelfPlayVectorEnv`` per table;
``play_round(k, choose)`` plays one round of all of table k's games with ``choose``
deciding for every seat and returns every decision with its outcome; ``update`` is one
pass of minibatch regression over such decisions.

Branching (``DMCTables(..., branch=q)``): plain DMC learns a card's value only from the
rounds that played it, so the cards the network does not choose are learned from
exploring moves alone. With ``branch`` q > 0 each play decision with a choice is, with
probability q, also played out with every other legal card: from the true deal at that
point (no sampled worlds, no belief), the card played, then ``choose`` for every seat to
the round's end (``play_out``). Each such card is one more decision to learn, with its
own outcome; the value head learns only the moves the round played (``"played"``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from agents.ismcts import _value_scale
from agents.policy_net import PolicyNet
from smoor_env.core.engine import Engine
from smoor_env.core.rules import Rules
from smoor_env.core.state import Phase, State
from smoor_env.envs.gym_env import RESTART_ACTION
from smoor_env.envs.selfplay import SelfPlayVectorEnv
from smoor_env.observation import compact_scale, observe

#: Points a logit stands for: expert iteration's default target temperature.
POINTS_PER_LOGIT = 0.5

#: The arrays of a round's decisions (``play_round``).
FIELDS = ("observations", "actions", "returns", "earned", "value_scale", "played")

#: What a move's value is regressed on (``update``): ``"round"``, the round's points for
#: the seat; ``"rest"``, its points from the decision on (the round's less those its
#: tricks already earned, ``reward_mode="trick"``): the same order of the moves, less noise.
TARGETS = ("round", "rest")

#: ``choose(observations, masks) -> actions``: (B, 1128) float32 and (B, 70) bool to (B,).
Chooser = Callable[[np.ndarray, np.ndarray], np.ndarray]


class DMCTables:
    """One ``SelfPlayVectorEnv`` of ``num_envs`` games per rule set (single rounds), table
    k dealing from seed ``seed + k`` (game i's e-th round is game id ``i + e * num_envs``,
    so every round is a new deal). With ``branch`` q > 0, each play decision with a
    choice is also played out with every other legal card with probability q (drawn from
    a generator of ``seed``'s own, kept with the tables)."""

    def __init__(self, rules_list: list[Rules], num_envs: int, seed: int,
                 branch: float = 0.0) -> None:
        if num_envs < 1 or not rules_list:
            raise ValueError(f"need at least one table and one game, got {len(rules_list)} "
                             f"tables of {num_envs}")
        if not 0 <= branch <= 1:
            raise ValueError(f"branch must be a probability in [0, 1], got {branch}")
        for rules in rules_list:
            if rules.target_score is not None:
                raise ValueError("DMC plays single rounds (target_score=None), got a match "
                                 f"to {rules.target_score}")
        self.rules = list(rules_list)
        # Trick rewards: a round's add up to its points, and say what was earned so far.
        self.envs = [SelfPlayVectorEnv(num_envs, r, reward_mode="trick", obs_dtype="int8")
                     for r in self.rules]
        # per table: (N, 1128) int8 observations, info, (N,) bool a round just ended there
        self.state = [(*env.reset(seed=seed + k), np.zeros(num_envs, bool))
                      for k, env in enumerate(self.envs)]
        # per table: (N, P) float32 each seat's rewards so far in the round under way
        self.earned = [np.zeros((num_envs, r.num_players), np.float32) for r in self.rules]
        self.scale = compact_scale()  # (1128,) int8 observation to float
        self.branch = float(branch)
        self.branch_rng = np.random.default_rng([seed, 0xB4A])  # which decisions branch

    def play_round(self, k: int, choose: Chooser) -> dict[str, np.ndarray]:
        """Play table k until each of its games has finished a round; return, for every
        decision of those rounds seen here, ``"observations"`` (L, 1128) int8 (compact),
        ``"actions"`` (L,) int64, ``"returns"`` (L,) float32 the round points of the seat
        that decided (Hearts: minus its penalty points; partners: the team's),
        ``"earned"`` (L,) float32 the part of them its tricks had earned before the
        decision (``reward_mode="trick"``), ``"value_scale"`` (L,) float32 the rule
        set's and ``"played"`` (L,) bool whether the round played the move (False: one
        of a branch's other cards, after the round's decisions). A game that finished
        first waits (its next round's moves are not recorded), so every decision has its
        outcome."""
        env, rules = self.envs[k], self.rules[k]
        obs, info, restarting = self.state[k]  # info: "seat" (N,), "action_mask" (N, 70)
        earned = self.earned[k]  # (N, P) this round's rewards so far, updated in place
        games = len(obs)
        if restarting.any():  # the rounds that ended on the last step begin now
            obs, _, _, _, info = env.step(np.full(games, RESTART_ACTION))
        seen: list[tuple[np.ndarray, ...]] = []  # per step: games, seats, obs, actions, earned
        branches: list[tuple] = []  # per step: obs, state, mask, actions, seats, earned
        points = np.zeros((games, rules.num_players), np.float32)  # (N, P) at the round's end
        done = np.zeros(games, bool)  # (N,) finished its round
        while not done.all():
            actions = choose(obs.astype(np.float32) * self.scale, info["action_mask"])  # (N,)
            live = np.flatnonzero(~done)
            seat = info["seat"][live]
            seen.append((live, seat, obs[live], actions[live], earned[live, seat]))
            if self.branch:
                self._pick_branches(env.engine.state, obs, info, actions, ~done, earned,
                                    branches)
            obs, rewards, terminated, _, info = env.step(actions)
            earned += rewards
            ended = terminated & ~done  # (N,) the recorded rounds that end now
            points[ended] = earned[ended]
            earned[terminated] = 0.0
            done |= terminated
        self.state[k] = (obs, info, terminated)
        game = np.concatenate([s[0] for s in seen])  # (L,)
        seat = np.concatenate([s[1] for s in seen])  # (L,)
        data = {"observations": np.concatenate([s[2] for s in seen]),
                "actions": np.concatenate([s[3] for s in seen]).astype(np.int64),
                "returns": points[game, seat],
                "earned": np.concatenate([s[4] for s in seen]),
                "value_scale": np.full(len(game), _value_scale(rules), np.float32),
                "played": np.ones(len(game), bool)}
        if branches:
            other = self._play_branches(rules, branches, choose)
            data = {key: np.concatenate([data[key], other[key]]) for key in FIELDS}
        return data

    def _pick_branches(self, state: State, obs: np.ndarray, info: dict, actions: np.ndarray,
                       live: np.ndarray, earned: np.ndarray, branches: list[tuple]) -> None:
        """Draw which of this step's play decisions with a choice branch; keep each one's
        observation, state (before the move), legal moves, move, seat and earned points."""
        mask = info["action_mask"]  # (N, 70)
        choice = live & (state.phase == Phase.PLAY) & (mask.sum(axis=1) >= 2)  # (N,)
        rows = np.flatnonzero(choice & (self.branch_rng.random(len(mask)) < self.branch))
        if len(rows):
            seat = info["seat"][rows]
            branches.append((obs[rows], state.take(rows), mask[rows], actions[rows], seat,
                             earned[rows, seat]))

    def _play_branches(self, rules: Rules, branches: list[tuple], choose: Chooser
                       ) -> dict[str, np.ndarray]:
        """Every other legal card of the branched decisions, each played in its true deal
        and the round played out by ``choose``: their ``play_round`` fields."""
        # (n, 1128) obs, (n, 70) mask, (n,) played, seat and earned of the n decisions
        obs, mask, played, seat, earned = (np.concatenate([b[i] for b in branches])
                                           for i in (0, 2, 3, 4, 5))
        state = State.concat([b[1] for b in branches])  # their n games before the move
        other = mask.copy()  # (n, 70)
        other[np.arange(len(played)), played] = False
        row, card = np.nonzero(other)  # (M,) each: the decision, another legal card
        engine = Engine(rules, len(row))
        engine.state = state.take(row)
        engine.refresh_legal()
        engine.step(card)
        play_out(engine, choose, self.scale)
        sign = -1 if rules.is_hearts else 1
        return {"observations": obs[row], "actions": card.astype(np.int64),
                "returns": (sign * engine.state.round_points[np.arange(len(row)), seat[row]]
                            ).astype(np.float32),
                "earned": earned[row],
                "value_scale": np.full(len(row), _value_scale(rules), np.float32),
                "played": np.zeros(len(row), bool)}


def play_out(engine: Engine, choose: Chooser, scale: np.ndarray) -> None:
    """Play every game of ``engine`` (a single round, in its play phase) to the end of
    its round, ``choose`` deciding for every seat on its observation (compact, times
    ``scale``: as the tables' own games observe)."""
    if engine.rules.target_score is not None:
        raise ValueError("play_out plays single rounds (target_score=None), got a match "
                         f"to {engine.rules.target_score}")
    st = engine.state  # stepped in place
    while not st.match_over.all():
        acting = ~st.match_over  # (B,)
        rows = np.flatnonzero(acting)
        seats = st.current_player[rows].astype(np.int64)
        obs = observe(engine, seats, games=rows, dtype="int8")  # (n, 1128)
        moves = np.zeros(engine.batch_size, np.int64)
        moves[rows] = choose(obs.astype(np.float32) * scale, engine.legal_mask[rows])
        engine.step(moves, active=acting)


def epsilon_greedy(net: PolicyNet, epsilon: float, rng: np.random.Generator) -> Chooser:
    """The network's best move by its values, or with probability ``epsilon`` a legal move
    drawn uniformly (from ``rng``)."""
    if not 0 <= epsilon <= 1:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")

    def choose(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        logits = net.logits(obs, mask)  # (B, 70) masked
        best = logits.argmax(axis=1)  # (B,)
        explore = rng.random(len(obs)) < epsilon  # (B,)
        uniform = np.where(mask, rng.random(mask.shape), -1.0).argmax(axis=1)  # (B,)
        return np.where(explore, uniform, best).astype(np.int64)

    return choose


@dataclass(frozen=True)
class Update:
    """One ``update``: mean squared errors (over the rule set's value scale, squared) of
    the move values and of the value head, over the pass's minibatches."""

    move_mse: float
    value_mse: float
    decisions: int


def update(net: PolicyNet, optimizer: torch.optim.Optimizer, data: dict[str, np.ndarray],
           minibatch: int, generator: torch.Generator, value_coef: float = 0.5,
           max_grad_norm: float = 1.0, targets: str = "round") -> Update:
    """One pass over ``data`` (``play_round``'s fields, concatenated) in shuffled
    minibatches: the logit of each played move times ``POINTS_PER_LOGIT`` regresses on the
    seat's round points (``targets="round"``) or on its points from the decision on
    (``"rest"``), and the value head on the round points over the value scale (only the
    moves the round played: ``"played"``), both errors measured over the
    value scale."""
    if targets not in TARGETS:
        raise ValueError(f"targets must be one of {TARGETS}, got {targets!r}")
    size = len(data["actions"])
    order = torch.randperm(size, generator=generator)
    obs_t = torch.as_tensor(data["observations"])  # (L, 1128) int8
    scale = torch.as_tensor(compact_scale()[:net.obs_size])  # (obs,)
    actions = torch.as_tensor(data["actions"])  # (L,)
    points = torch.as_tensor(data["returns"])  # (L,)
    move_points = points - torch.as_tensor(data["earned"]) if targets == "rest" else points
    value_scale = torch.as_tensor(data["value_scale"])  # (L,)
    on_path = torch.as_tensor(data["played"])  # (L,) bool the round played the move
    # (L, 70) only the move played: the card head computes that card's value alone
    played_only = torch.zeros((size, net.policy.out_features), dtype=torch.bool)
    played_only[torch.arange(size), actions] = True
    move_sum = value_sum = 0.0
    value_rows = 0
    for begin in range(0, size, minibatch):
        idx = order[begin:begin + minibatch]
        logits, value = net(obs_t[idx].float() * scale, played_only[idx])
        played = logits.gather(1, actions[idx, None]).squeeze(1)  # (B,)
        move_target = move_points[idx] / value_scale[idx]  # (B,)
        move_loss = ((played * POINTS_PER_LOGIT / value_scale[idx] - move_target) ** 2).mean()
        path = on_path[idx].float()  # (B,) the value head learns the round's own states
        rows = float(path.sum())
        value_loss = ((value - points[idx] / value_scale[idx]) ** 2 * path).sum() / max(rows, 1)
        optimizer.zero_grad()
        (move_loss + value_coef * value_loss).backward()
        nn.utils.clip_grad_norm_(net.parameters(), max_grad_norm)
        optimizer.step()
        move_sum += float(move_loss.detach()) * len(idx)
        value_sum += float(value_loss.detach()) * rows
        value_rows += rows
    return Update(move_sum / max(size, 1), value_sum / max(value_rows, 1), size)
