"""PPO with action masking against an opponent pool, on the native vector env (CleanRL style).

One learning seat plays ``SmoorVectorEnv`` games. Its opponents come from an opponent pool:
at the start of every episode each other seat of each game draws an agent from the
pool ``--opponents`` (``random``, ``greedy``, ``mc``, options as ``mc:worlds=16``, and
``self``: earlier snapshots of the policy being trained; repeat a name to draw it more
often). With ``--self-play`` the policy plays every seat of ``SelfPlayVectorEnv`` games
instead, each (game, seat) its own trajectory for PPO. One policy can learn 3, 4 and 5
players at once (``--num-players 3 4 5``: one vector environment of ``--num-envs`` games
per player count, one batch for PPO; the observation has one size for all).
``--imitate mc`` first clones a search agent's decisions (behaviour cloning on
``--imitate-decisions`` of its decisions in the learner's seat against the pool), then
PPO goes on from there; with ``--imitate-temperature T`` it distils the teacher's action
values (``mc.evaluate``: softmax(value / T) over the cards searched) instead of its
argmax, ``--imitate-data`` keeps the labels in a file for later runs (several files: read
and concatenated), and ``--total-timesteps 0`` stops after the imitation. Illegal actions
get a large negative logit, so the policy only ever plays legal moves.

Every ``eval_interval`` updates the argmax policy plays ``eval_episodes`` fixed deals
per player count against ``--eval-opponents``; the mean return per round goes to a
learning curve (CSV + PNG), and the checkpoint is written. ``--seeds 0 1 2`` trains one
run per seed and plots the mean over seeds with a 95% t-interval; ``--track`` logs to
TensorBoard in each run folder. Needs the ``rl`` extra (PyTorch; TensorBoard for
``--track``).

    python -m experiments.train_ppo --total-timesteps 2000000 --opponents greedy random self
    python -m experiments.train_ppo --num-players 3 4 5 --imitate mc --seeds 0 1 2 --track
    python -m experiments.train_ppo --self-play --num-players 3 4 5 --num-steps 64
    python -m experiments.train_ppo --imitate mc --imitate-temperature 0.3 \
        --imitate-data labels.npz --imitate-decisions 100000 --total-timesteps 0
    python -m experiments.train_ppo --help

A checkpoint plays as the ``ppo`` agent: ``make_agent("ppo", checkpoint=...)``,
or ``--agents ppo:checkpoint=...`` in ``experiments.win_rates``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import tyro
from torch import nn, optim
from torch.distributions import Categorical

from agents import make_agent, parse_agent
from agents.env_factories import resolve_opponents
from agents.evaluation.runs import write_csv
from agents.evaluation.stats import t_half_width
from agents.policy_net import PolicyNet, load_checkpoint, save_checkpoint
from agents.ppo import training_rules
from agents.training.distill import fit
from agents.training.labels import label_decisions, soft_targets
from agents.training.opponents import PoolEnv, opponent_list, pool_members
from agents.training.selfplay import SelfPlay, SelfPlayRollout
from smoor_env import Rules
from smoor_env.core.state import NUM_ACTIONS
from smoor_env.envs.gym_env import SmoorVectorEnv
from smoor_env.observation import OBSERVATION_SIZE


@dataclass
class Args:
    exp_name: str = "ppo"
    """name of this experiment (a run is <exp_name>__<game>_<players>p__seed<seed>)"""
    seeds: list[int] = field(default_factory=lambda: [0])
    """one run per seed (torch, numpy, the deals, the opponent pool); several: curve over seeds"""
    torch_deterministic: bool = True
    """torch.backends.cudnn.deterministic and deterministic algorithms where cheap"""
    threads: int = 1
    """torch threads (1 leaves the other cores to the environment and other jobs)"""

    # Rules
    game: str = "smoorverliefd"
    """game: smoorverliefd or hearts"""
    num_players: list[int] = field(default_factory=lambda: [4])
    """player counts trained at once (3, 4 and/or 5), one vector environment each"""
    single_round: bool = True
    """episodes are single rounds (target_score None); False plays whole matches"""
    trump_hearts: bool = False
    """Smoorverliefd variant met Troef: hearts are trump"""
    bidding: bool = False
    """Smoorverliefd variant Blinde Liefde: bids of 0..13 heart cards"""
    partners: bool = False
    """Smoorverliefd variant Partner (4 players)"""
    pip_scoring: bool = False
    """Smoorverliefd variant Kleine Liefde: hearts score their pip value"""
    learner_seat: int = 0
    """the seat the learner plays (the dealer is drawn per deal)"""

    # Opponent pool and rewards
    opponents: list[str] = field(default_factory=lambda: ["greedy"])
    """the opponent pool: every episode, each other seat draws one uniformly (repeat a
    name to draw it more often); agent options as in win_rates (mc:worlds=16); 'self' is a
    snapshot of the policy being trained"""
    snapshot_interval: int = 20
    """updates between refreshes of the 'self' opponents"""
    snapshot_pool: int = 5
    """number of most recent snapshots the 'self' opponents are drawn from"""
    self_play: bool = False
    """true self-play: the policy being trained plays every seat of SelfPlayVectorEnv games
    (one table of num_envs games per player count), so every decision is a learner's. Each
    (game, seat) is its own trajectory (agents.training.selfplay.seat_advantages): a seat's
    rewards up to its next decision go to its decision, GAE runs along its own decisions.
    A decision whose next one of the same seat falls after the rollout is left out of that
    update (at most P - 1 per game and rollout: raise num_steps to lose fewer). The
    opponent pool then serves only --imitate; the training return is every seat's (so
    constant where a round hands out fixed points, as Smoorverliefd's)"""
    reward_mode: str = "trick"
    """reward_mode of the environment: trick (shaped, after every trick) or round"""
    reward_scale: float = 0.1
    """rewards are multiplied by this for learning (the curve reports the game's points)"""

    # Imitation before PPO
    imitate: str = ""
    """agent whose decisions the policy clones before PPO (mc, mc:worlds=16, greedy);
    empty: start from scratch"""
    imitate_decisions: int = 20_000
    """decisions of that agent in the learner's seat to clone (against the opponent pool; the
    player counts take turns, one step of all their games each, until there are this many)"""
    imitate_epochs: int = 10
    """epochs of cross-entropy training over them"""
    imitate_temperature: float = 0.0
    """soft targets: with a teacher that values its actions (mc), clone softmax(value / T)
    over the actions it searched (T in points of the game); 0: its argmax only"""
    imitate_learning_rate: float = 3e-4
    """Adam learning rate of the imitation (annealed linearly to 0)"""
    imitate_data: list[str] = field(default_factory=list)
    """.npz file of the teacher's labelled decisions: read if it exists, else written after
    labelling (several runs then share one labelling); several files (all existing, e.g.
    labellings with different seeds) are read and concatenated"""
    imitate_play: str = ""
    """agent that plays the learner's seat while ``imitate`` labels every decision
    (DAgger: e.g. ``ppo:checkpoint=<the policy to improve>``, so that the labels fall on
    the states that policy reaches); empty: the teacher plays its own choices"""
    imitate_save_every: int = 5000
    """with imitate_data: write the labels so far every this many decisions, to
    <stem>.labelling.npz (rename it to imitate_data to use an interrupted labelling: it
    holds what --imitate-decisions <its size> labels)"""

    # PPO
    total_timesteps: int = 1_000_000
    """learner steps to train for (all environments; restart steps count too)"""
    num_envs: int = 128
    """parallel games per player count"""
    num_steps: int = 32
    """steps per environment per rollout"""
    learning_rate: float = 3e-4
    """Adam learning rate"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0"""
    gamma: float = 1.0
    """discount factor (an episode is a round of a few decisions: no discount needed)"""
    gae_lambda: float = 0.95
    """lambda of generalised advantage estimation"""
    num_minibatches: int = 4
    """minibatches per epoch"""
    update_epochs: int = 4
    """epochs over each rollout"""
    norm_adv: bool = True
    """normalise advantages per minibatch"""
    clip_coef: float = 0.2
    """PPO clipping coefficient"""
    clip_vloss: bool = True
    """clip the value loss as in the PPO paper"""
    ent_coef: float = 0.01
    """entropy bonus coefficient"""
    vf_coef: float = 0.5
    """value loss coefficient"""
    max_grad_norm: float = 0.5
    """gradient clipping norm"""
    target_kl: float | None = None
    """stop an update's epochs early above this approximate KL (None: never)"""
    hidden: list[int] = field(default_factory=lambda: [256, 256])
    """hidden layer sizes of the shared MLP trunk"""
    card_head: int = 0
    """width of a policy head shared by the 52 cards (0: none; ``agents.policy_net.PolicyNet``):
    each card's own features and a summary of the trunk give that card's logit"""
    obs_size: int = 0
    """features the network reads, a prefix of the observation layout (0: all of today's
    layout; e.g. 1076 for labels made before the card_trick block was added)"""
    init: str = ""
    """start from this checkpoint's network (a shipped name or a path, e.g. an
    imitation-only run's model.pt; its layer sizes replace ``hidden``), not a fresh one"""
    value_warmup: int = 0
    """first PPO updates that fit only the value head (after imitation the critic knows
    nothing yet, and its advantages would spoil the cloned policy)"""

    # Evaluation, logging, checkpoints
    eval_interval: int = 10
    """updates between evaluations (and checkpoint writes)"""
    eval_episodes: int = 1000
    """deals per evaluation and player count (the same deals every time)"""
    eval_opponents: list[str] = field(default_factory=lambda: ["greedy"])
    """fixed opponents of the learning curve (one name for all seats, or one per seat)"""
    eval_baselines: list[str] = field(default_factory=lambda: ["random", "greedy"])
    """agents evaluated once in the learner's seat, drawn as reference lines on the curve"""
    track: bool = False
    """log losses, returns and evaluations to TensorBoard in the run folder"""
    out_dir: str = "runs"
    """parent folder of the run folders (model.pt, args.json, curve.csv, curve.png)"""
    checkpoint: str = ""
    """also copy the final checkpoint here (of the seed with the best final evaluation);
    the curve over seeds goes next to it as <stem>_curve.csv/png"""
    progress: bool = True
    """print a line per evaluation"""


def make_rules(args: Args, players: int, single_round: bool | None = None) -> Rules:
    """The training rules for ``players`` (single rounds if ``single_round``, default
    ``args.single_round``): ``agents.ppo.training_rules``."""
    return training_rules(dataclasses.asdict(args), players, single_round)










def evaluate(policy, rules: Rules, args: Args, episodes: int,
             seed: int) -> tuple[float, float]:
    """(mean, standard error) of the return per round of ``policy`` in the learner's seat
    against ``args.eval_opponents`` (points; in Hearts minus the penalty points).

    ``policy`` is a ``PolicyNet`` (argmax of its masked logits) or a batched agent.
    Every call plays the same deals (``seed``).
    """
    env = SmoorVectorEnv(episodes, rules=rules, learner_seat=args.learner_seat,
                         opponents=resolve_opponents(opponent_list(args.eval_opponents,
                                                                   rules.num_players)),
                         reward_mode="round")
    obs, info = env.reset(seed=seed)
    returns = np.zeros(episodes)
    done = np.zeros(episodes, bool)
    rng = np.random.default_rng(seed)
    while not done.all():
        mask = info["action_mask"]  # never empty: finished games allow the ignored restart
        if isinstance(policy, nn.Module):
            with torch.no_grad():
                logits, _ = policy(torch.as_tensor(obs), torch.as_tensor(mask))
            actions = logits.argmax(dim=1).numpy()
        else:
            actions = policy.act({"observation": obs, "action_mask": mask}, rng)
        obs, reward, term, trunc, info = env.step(actions)
        returns += np.where(done, 0.0, reward)
        done |= term | trunc
    return float(returns.mean()), float(returns.std(ddof=1) / np.sqrt(episodes))








def imitate(net: PolicyNet, args: Args, members: list, seed: int) -> dict[str, float]:
    """Behaviour cloning of ``args.imitate`` (``label_decisions``): ``imitate_epochs`` of
    cross-entropy against ``soft_targets`` (Adam at ``imitate_learning_rate``, annealed
    linearly to 0), 5% of the decisions held out. Returns the size, the final loss and,
    on the held-out decisions, the share where the argmax policy agrees with the teacher
    and its mean regret by the teacher's own values (best value less the value of the
    policy's choice, where the teacher searched)."""
    data = label_decisions(args, members, seed, net.obs_size)
    size = len(data["actions"])
    fitted = fit(net, data["observations"], data["masks"],
                 soft_targets(data["values"], data["actions"], args.imitate_temperature),
                 epochs=args.imitate_epochs, learning_rate=args.imitate_learning_rate,
                 seed=seed, max_grad_norm=args.max_grad_norm)
    held, choice = fitted.held, fitted.choice
    values = data["values"][held]  # (H, 70)
    searched = ~np.isnan(values).all(axis=1)  # (H,)
    best = np.nanmax(values[searched], axis=1)
    regret = best - values[searched][np.arange(searched.sum()), choice[searched]]
    return {"decisions": size, "loss": fitted.loss,
            "held_out_agreement": float(np.mean(choice == data["actions"][held])),
            "held_out_regret": float(np.mean(regret)) if len(regret) else float("nan")}


def trained_against(args: Args) -> str:
    """How the run was trained, for the curves' titles."""
    return "in self-play" if args.self_play else f"vs opponents {'+'.join(args.opponents)}"


def plot_curves(curves: list[list[dict]], players: list[int], baselines: dict[str, float],
                path: Path, title: str, episodes: int) -> None:
    """The learning curve per player count: the mean over seeds, with a 95% t-interval
    over seeds when there are several (one seed: its own 95% t-interval over its
    ``episodes`` evaluation deals)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy import stats

    length = min(len(c) for c in curves)
    steps = np.mean([[r["global_step"] for r in c[:length]] for c in curves], axis=0)  # (T,)
    fig, ax = plt.subplots(figsize=(7, 4))
    for p in players:
        values = np.array([[r[f"eval_{p}p"] for r in c[:length]] for c in curves])  # (S, T)
        mean = values.mean(axis=0)
        if len(curves) > 1:
            half = t_half_width(stats.sem(values, axis=0), len(curves))
            label = f"PPO {p}p, mean of {len(curves)} seeds, 95% t-interval"
        else:
            half = t_half_width(np.array([r[f"eval_sem_{p}p"] for r in curves[0][:length]]),
                                episodes)
            label = f"PPO {p}p (argmax)"
        ax.plot(steps, mean, marker=".", label=label)
        ax.fill_between(steps, mean - half, mean + half, alpha=0.25)
    styles = ["--", ":", "-."] * 6
    for (name, value), style in zip(baselines.items(), styles, strict=False):
        ax.axhline(value, linestyle=style, color="grey", label=f"{name} in the same seat")
    ax.set_xlabel("learner decisions (environment steps)")
    ax.set_ylabel("mean return per round")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def train_seed(args: Args, seed: int, baselines: dict[str, float]) -> tuple[Path, list[dict]]:
    """One run; returns its folder and learning curve (one row per evaluation)."""
    players_tag = "".join(str(p) for p in args.num_players)
    run_name = f"{args.exp_name}__{args.game}_{players_tag}p__seed{seed}"
    folder = Path(args.out_dir) / run_name
    folder.mkdir(parents=True, exist_ok=True)
    run_args = {**dataclasses.asdict(args), "seed": seed}
    (folder / "args.json").write_text(json.dumps(run_args, indent=2))
    writer = None
    if args.track:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(str(folder))
        writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + "\n".join(
            f"|{k}|{v}|" for k, v in run_args.items()))

    random.seed(seed)
    torch.manual_seed(seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    rng = np.random.default_rng(seed)

    net = load_checkpoint(args.init)[0].train() if args.init else PolicyNet(
        tuple(args.hidden), obs_size=args.obs_size or OBSERVATION_SIZE,
        card_head=args.card_head)
    optimizer = optim.Adam(net.parameters(), lr=args.learning_rate, eps=1e-5)
    selfplay = SelfPlay(net, args.snapshot_pool, rng) if "self" in args.opponents else None
    members = pool_members(args.opponents, selfplay and selfplay.agent)
    start = time.time()
    cpu_start = time.process_time()
    if args.imitate:
        cloned = imitate(net, args, members, seed)
        if selfplay is not None:
            selfplay.refresh(net)
        if args.progress:
            print(f"imitation of {args.imitate}: {cloned}", flush=True)
        if writer:
            for key, value in cloned.items():
                writer.add_scalar(f"imitation/{key}", value, 0)
    rollout, tables = None, []
    if args.self_play:  # the policy in every seat; a rollout keeps each seat's rows
        rollout = SelfPlayRollout([make_rules(args, p) for p in args.num_players],
                                  args.num_envs, args.num_steps, seed, args.reward_mode)
    else:
        tables = [PoolEnv(make_rules(args, p), args.num_envs, args.learner_seat, members,
                          seed + 7919 * i, rng, args.reward_mode)
                  for i, p in enumerate(args.num_players)]

    n, t_steps = args.num_envs * len(args.num_players), args.num_steps
    batch_size = n * t_steps
    num_iterations = args.total_timesteps // batch_size  # 0: imitation only
    obs_buf = torch.zeros((t_steps, n, OBSERVATION_SIZE))
    mask_buf = torch.zeros((t_steps, n, NUM_ACTIONS), dtype=torch.bool)
    act_buf = torch.zeros((t_steps, n), dtype=torch.long)
    logp_buf = torch.zeros((t_steps, n))
    rew_buf = torch.zeros((t_steps, n))
    term_buf = torch.zeros((t_steps, n))
    valid_buf = torch.zeros((t_steps, n), dtype=torch.bool)
    val_buf = torch.zeros((t_steps, n))

    eval_seed = 10_000 + args.seeds[0]  # every seed is evaluated on the same deals
    eval_rules = {p: make_rules(args, p, single_round=True) for p in args.num_players}
    curve: list[dict] = []
    if args.progress:
        print(f"run {run_name}: {num_iterations} updates of {batch_size} steps", flush=True)

    ep_return = np.zeros((n, rollout.width)) if rollout else np.zeros(n)  # self-play: (n, P)
    recent: list[float] = []
    global_step = 0

    def current() -> tuple[torch.Tensor, torch.Tensor]:
        """(n, OBSERVATION_SIZE) observations and (n, 70) masks of all tables, in one batch."""
        if rollout:
            return torch.as_tensor(rollout.obs), torch.as_tensor(rollout.mask)
        return (torch.as_tensor(np.concatenate([t.obs for t in tables])),
                torch.as_tensor(np.concatenate([t.info["action_mask"] for t in tables])))

    def log_eval(iteration: int) -> None:
        net.eval()
        row: dict[str, Any] = {"seed": seed, "iteration": iteration, "global_step": global_step,
                               "seconds": round(time.time() - start, 1),
                               "cpu_seconds": round(time.process_time() - cpu_start, 1)}
        for p, rules in eval_rules.items():
            mean, sem = evaluate(net, rules, args, args.eval_episodes, eval_seed)
            row[f"eval_{p}p"], row[f"eval_sem_{p}p"] = round(mean, 4), round(sem, 4)
            if writer:
                writer.add_scalar(f"eval/return_{p}p", mean, global_step)
        net.train()
        row["train_mean_return"] = round(float(np.mean(recent)) if recent else float("nan"), 4)
        row.update({f"baseline_{k}": round(v, 4) for k, v in baselines.items()})
        curve.append(row)
        write_csv(curve, folder / "curve.csv")
        save_checkpoint(folder / "model.pt", net, run_args)
        if args.progress:
            evals = "  ".join(f"{p}p {row[f'eval_{p}p']:6.3f}" for p in args.num_players)
            print(f"update {iteration:5d} step {global_step:9d} {row['seconds']:7.0f}s  "
                  f"eval {evals}  train return {row['train_mean_return']}", flush=True)

    log_eval(0)
    bounds = np.cumsum([0] + [args.num_envs] * len(tables))  # table t: rows bounds[t]:[t+1]
    for iteration in range(1, num_iterations + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (
                1.0 - (iteration - 1.0) / num_iterations)
        for step in range(t_steps):
            obs_t, mask_t = current()
            with torch.no_grad():
                logits, value = net(obs_t, mask_t)
                dist = Categorical(logits=logits)
                action = dist.sample()
            obs_buf[step], mask_buf[step], act_buf[step] = obs_t, mask_t, action
            logp_buf[step], val_buf[step] = dist.log_prob(action), value
            actions = action.numpy()
            if rollout:  # (n, P) rewards of every seat; the rollout keeps them per seat
                reward, ended, valid = rollout.step(step, actions, value.numpy())
            else:
                reward, ended, valid = (np.concatenate(parts) for parts in zip(
                    *(t.step(actions[lo:hi]) for t, lo, hi in zip(
                        tables, bounds[:-1], bounds[1:], strict=True)), strict=True))
                rew_buf[step] = torch.as_tensor(reward * args.reward_scale)
                term_buf[step] = torch.as_tensor(ended.astype(np.float32))
            valid_buf[step] = torch.as_tensor(valid)
            global_step += int(valid.sum())
            ep_return += reward
            finished = ep_return[ended][rollout.seated[ended]] if rollout else ep_return[ended]
            recent = (recent + finished.tolist())[-1000:]
            ep_return[ended] = 0.0

        # Generalised advantage estimation. A restart step follows every terminal step;
        # (1 - term) cuts the recursion there, and restart steps are left out of the loss.
        # Self-play: the same along each (game, seat)'s own decisions (seat_advantages).
        with torch.no_grad():
            _, next_value = net(*current())
        if rollout:  # per seat: along each (game, seat)'s own decisions
            seat_adv, seat_ret, complete = rollout.advantages(
                next_value.numpy(), args.gamma, args.gae_lambda, args.reward_scale)
            advantages, returns = torch.as_tensor(seat_adv), torch.as_tensor(seat_ret)
            valid = torch.as_tensor(complete).reshape(-1)  # decisions whose outcome is seen
        else:
            advantages = torch.zeros_like(rew_buf)
            last = torch.zeros(n)
            for t in reversed(range(t_steps)):
                nxt = next_value if t == t_steps - 1 else val_buf[t + 1]
                nonterminal = 1.0 - term_buf[t]
                delta = rew_buf[t] + args.gamma * nxt * nonterminal - val_buf[t]
                last = delta + args.gamma * args.gae_lambda * nonterminal * last
                advantages[t] = last
            returns = advantages + val_buf
            valid = valid_buf.reshape(-1)

        b_obs = obs_buf.reshape(-1, OBSERVATION_SIZE)[valid]
        b_mask = mask_buf.reshape(-1, NUM_ACTIONS)[valid]
        b_act, b_logp = act_buf.reshape(-1)[valid], logp_buf.reshape(-1)[valid]
        b_adv, b_ret = advantages.reshape(-1)[valid], returns.reshape(-1)[valid]
        b_val = val_buf.reshape(-1)[valid]
        size = len(b_act)
        minibatch = max(1, size // args.num_minibatches)
        for _ in range(args.update_epochs):
            order = torch.randperm(size)
            approx_kl = torch.tensor(0.0)
            for begin in range(0, size, minibatch):
                idx = order[begin:begin + minibatch]
                logits, value = net(b_obs[idx], b_mask[idx])
                dist = Categorical(logits=logits)
                logp = dist.log_prob(b_act[idx])
                log_ratio = logp - b_logp[idx]
                ratio = log_ratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - log_ratio).mean()
                adv = b_adv[idx]
                if args.norm_adv and len(idx) > 1:
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * torch.clamp(
                    ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
                if args.clip_vloss:
                    v_clipped = b_val[idx] + torch.clamp(value - b_val[idx], -args.clip_coef,
                                                         args.clip_coef)
                    v_loss = 0.5 * torch.max((value - b_ret[idx]) ** 2,
                                             (v_clipped - b_ret[idx]) ** 2).mean()
                else:
                    v_loss = 0.5 * ((value - b_ret[idx]) ** 2).mean()
                entropy = dist.entropy().mean()
                warmup = iteration <= args.value_warmup
                loss = args.vf_coef * v_loss if warmup else \
                    pg_loss - args.ent_coef * entropy + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                if warmup:  # only the value head learns; the trunk and policy stay as they are
                    for param in (*net.trunk.parameters(), *net.policy.parameters()):
                        param.grad = None
                nn.utils.clip_grad_norm_(net.parameters(), args.max_grad_norm)
                optimizer.step()
            if args.target_kl is not None and approx_kl > args.target_kl:
                break
        if writer:
            for key, value in (("losses/policy", pg_loss), ("losses/value", v_loss),
                               ("losses/entropy", entropy), ("losses/approx_kl", approx_kl)):
                writer.add_scalar(key, float(value.detach()), global_step)
            writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"],
                              global_step)
            writer.add_scalar("charts/steps_per_second", global_step / (time.time() - start),
                              global_step)
            if recent:
                writer.add_scalar("charts/train_return", float(np.mean(recent)), global_step)

        if selfplay is not None and iteration % args.snapshot_interval == 0:
            selfplay.refresh(net)
        if iteration % args.eval_interval == 0 or iteration == num_iterations:
            log_eval(iteration)

    wall, cpu = time.time() - start, time.process_time() - cpu_start
    summary = {"run_name": run_name, "global_step": global_step, "wall_seconds": round(wall, 1),
               "cpu_seconds": round(cpu, 1), "final_eval": curve[-1], "baselines": baselines}
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))
    plot_curves([curve], args.num_players, baselines, folder / "curve.png",
                f"{run_name} {trained_against(args)}", args.eval_episodes)
    if writer:
        writer.close()
    if args.progress:
        print(f"done: {global_step} steps in {wall:.0f} s wall, {cpu:.0f} s CPU; "
              f"run folder {folder}", flush=True)
    return folder, curve


def train(args: Args) -> list[Path]:
    """Train one run per seed; with ``checkpoint``, copy the best seed's final policy
    there and plot the curve over seeds next to it. Returns the run folders."""
    if args.threads:
        torch.set_num_threads(args.threads)
    baselines = {}  # "<agent> <P>p" -> its mean return in the learner's seat (eval deals)
    for name in args.eval_baselines:
        agent, options = parse_agent(name)
        for p in args.num_players:
            baselines[f"{name} {p}p"] = evaluate(
                make_agent(agent, **options), make_rules(args, p, single_round=True), args,
                args.eval_episodes, 10_000 + args.seeds[0])[0]
    runs = [train_seed(args, seed, baselines) for seed in args.seeds]
    if args.checkpoint:
        stem = Path(args.checkpoint)
        finals = [np.mean([curve[-1][f"eval_{p}p"] for p in args.num_players])
                  for _, curve in runs]
        best_folder, best_curve = runs[int(np.argmax(finals))]
        stem.parent.mkdir(parents=True, exist_ok=True)
        stem.write_bytes((best_folder / "model.pt").read_bytes())
        curves = [curve for _, curve in runs]
        write_csv([row for curve in curves for row in curve],
                  stem.with_name(stem.stem + "_curve.csv"))
        plot_curves(curves, args.num_players, baselines,
                    stem.with_name(stem.stem + "_curve.png"),
                    f"PPO, {args.game} {args.num_players} players {trained_against(args)}; "
                    f"eval vs {'+'.join(args.eval_opponents)}",
                    args.eval_episodes)
        stem.with_suffix(".json").write_text(json.dumps(
            {"args": dataclasses.asdict(args), "best_seed": best_curve[-1]["seed"],
             "final_evals": [curve[-1] for curve in curves],
             "summaries": [json.loads((folder / "summary.json").read_text())
                           for folder, _ in runs]}, indent=2))
    return [folder for folder, _ in runs]


def main(argv: list[str] | None = None) -> None:
    args = tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0])
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads or 1))
    train(args)


if __name__ == "__main__":
    main()
