"""PPO with action masking on the native vector environment (single file, CleanRL style).

One learning seat plays ``SmoorVectorEnv`` against chosen opponents (``random``,
``greedy``, ``mc`` or ``self``: earlier snapshots of the policy being trained)
for any rule set and player count. Illegal actions get a large negative logit,
so the policy only ever plays legal moves. Every ``eval_interval`` updates the
greedy (argmax) policy plays ``eval_episodes`` fixed deals against a fixed
opponent set and the mean points per round go to a learning curve (CSV + PNG);
the checkpoint is written at every evaluation and at the end. Needs the ``rl``
extra (PyTorch).

    python -m experiments.train_ppo --total-timesteps 2000000 --opponents greedy
    python -m experiments.train_ppo --help

A checkpoint plays as the ``ppo`` agent: ``make_agent("ppo", checkpoint=...)``,
or ``--agents ppo:checkpoint=...`` in ``experiments.win_rates``.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import tyro
from torch import nn, optim
from torch.distributions import Categorical

from agents.environments import resolve_opponents
from agents.ppo import PolicyNet, PPOAgent, save_checkpoint
from smoor_env import Rules
from smoor_env.gym_env import SmoorVectorEnv
from smoor_env.observation import OBSERVATION_SIZE
from smoor_env.state import NUM_ACTIONS


@dataclass
class Args:
    exp_name: str = "ppo"
    """name of this experiment (the run name is <exp_name>__<game>_<P>p__seed<seed>)"""
    seed: int = 0
    """seed of torch, numpy, the deals and the opponents"""
    torch_deterministic: bool = True
    """torch.backends.cudnn.deterministic and deterministic algorithms where cheap"""
    threads: int = 1
    """torch threads (1 leaves the other cores to the environment and other jobs)"""

    # Rules
    game: str = "smoorverliefd"
    """game: smoorverliefd or hearts"""
    num_players: int = 4
    """number of players (3, 4 or 5)"""
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

    # Opponents and rewards
    opponents: list[str] = field(default_factory=lambda: ["greedy"])
    """opponent agents: one name for every other seat, or one per other seat; 'self' is a
    snapshot of the policy being trained (refreshed every snapshot_interval updates from a
    pool of earlier snapshots)"""
    snapshot_interval: int = 20
    """updates between refreshes of the 'self' opponents"""
    snapshot_pool: int = 5
    """number of most recent snapshots the 'self' opponents are drawn from"""
    reward_mode: str = "trick"
    """reward_mode of the environment: trick (shaped, after every trick) or round"""
    reward_scale: float = 0.1
    """rewards are multiplied by this for learning (the curve reports the game's points)"""

    # PPO
    total_timesteps: int = 1_000_000
    """environment steps to train for (all sub-environments; restart steps count too)"""
    num_envs: int = 128
    """parallel games in the vector environment"""
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

    # Evaluation, logging, checkpoints
    eval_interval: int = 10
    """updates between evaluations (and checkpoint writes)"""
    eval_episodes: int = 1000
    """deals per evaluation (the same deals every time)"""
    eval_opponents: list[str] = field(default_factory=lambda: ["greedy"])
    """fixed opponent set of the learning curve (one name for all seats or one per seat)"""
    eval_baselines: list[str] = field(default_factory=lambda: ["random", "greedy"])
    """agents evaluated once in the learner's seat, drawn as reference lines on the curve"""
    out_dir: str = "runs"
    """parent folder of the run folder (model.pt, args.json, curve.csv, curve.png)"""
    checkpoint: str = ""
    """also copy the final checkpoint here; the curve goes next to it as <stem>_curve.csv/png"""
    progress: bool = True
    """print a line per evaluation"""


def make_rules(args: Args) -> Rules:
    options = {"game": args.game, "num_players": args.num_players}
    if args.game == "smoorverliefd":
        options.update(trump_hearts=args.trump_hearts, bidding=args.bidding,
                       partners=args.partners, pip_scoring=args.pip_scoring)
    if args.single_round:
        options["target_score"] = None
    return Rules(**options)


def eval_rules(args: Args) -> Rules:
    """The training rules, as single rounds (the curve reports points per round)."""
    return make_rules(dataclasses.replace(args, single_round=True))


class SelfPlay:
    """Opponents that are snapshots of the learner, drawn from a pool of recent ones."""

    def __init__(self, net: PolicyNet, pool: int, rng: np.random.Generator) -> None:
        self.pool: list[dict] = []
        self.size = pool
        self.rng = rng
        self.net = PolicyNet(net.hidden)
        self.agent = PPOAgent(net=self.net, sample=True, threads=0)
        self.refresh(net)

    def refresh(self, net: PolicyNet) -> None:
        self.pool.append({k: v.detach().clone() for k, v in net.state_dict().items()})
        self.pool = self.pool[-self.size:]
        self.net.load_state_dict(self.pool[int(self.rng.integers(len(self.pool)))])
        self.net.eval()


def opponent_list(names: list[str], players: int, self_agent=None) -> list:
    others = players - 1
    if len(names) == 1:
        names = names * others
    if len(names) != others:
        raise ValueError(f"give one opponent or one per other seat ({others}), got {names}")
    return resolve_opponents([self_agent if n == "self" else n for n in names])


def evaluate(policy, rules: Rules, args: Args, opponents: list[str], episodes: int,
             seed: int) -> tuple[float, float]:
    """(mean, standard error) of the points per round of ``policy`` in the learner's seat.

    ``policy`` is a ``PolicyNet`` (argmax of its masked logits) or a batched agent.
    Every call plays the same deals (``seed``).
    """
    env = SmoorVectorEnv(episodes, rules=rules, learner_seat=args.learner_seat,
                         opponents=opponent_list(opponents, rules.num_players),
                         reward_mode="round")
    obs, info = env.reset(seed=seed)
    returns = np.zeros(episodes)
    done = np.zeros(episodes, bool)
    rng = np.random.default_rng(seed)
    while not done.all():
        mask = info["action_mask"].copy()
        mask[~mask.any(axis=1)] = True  # finished games: the action is ignored
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


def plot_curve(rows: list[dict], baselines: dict[str, float], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array([r["global_step"] for r in rows])
    mean = np.array([r["eval_mean_points"] for r in rows])
    sem = np.array([r["eval_sem"] for r in rows])
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, mean, marker=".", label="PPO (argmax)")
    ax.fill_between(steps, mean - 1.96 * sem, mean + 1.96 * sem, alpha=0.25)
    for (name, value), style in zip(baselines.items(), ["--", ":", "-."] * 3, strict=False):
        ax.axhline(value, linestyle=style, color="grey", label=f"{name} in the same seat")
    ax.set_xlabel("learner decisions (environment steps)")
    ax.set_ylabel("mean points per round")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def train(args: Args) -> Path:
    """Train; returns the run folder."""
    rules = make_rules(args)
    run_name = f"{args.exp_name}__{args.game}_{args.num_players}p__seed{args.seed}"
    folder = Path(args.out_dir) / run_name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "args.json").write_text(json.dumps(dataclasses.asdict(args), indent=2))

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    if args.threads:
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)

    net = PolicyNet(tuple(args.hidden))
    optimizer = optim.Adam(net.parameters(), lr=args.learning_rate, eps=1e-5)
    selfplay = SelfPlay(net, args.snapshot_pool, rng) if "self" in args.opponents else None
    env = SmoorVectorEnv(args.num_envs, rules=rules, learner_seat=args.learner_seat,
                         opponents=opponent_list(args.opponents, rules.num_players,
                                                 selfplay and selfplay.agent),
                         reward_mode=args.reward_mode)

    n, t_steps = args.num_envs, args.num_steps
    batch_size = n * t_steps
    num_iterations = max(1, args.total_timesteps // batch_size)
    obs_buf = torch.zeros((t_steps, n, OBSERVATION_SIZE))
    mask_buf = torch.zeros((t_steps, n, NUM_ACTIONS), dtype=torch.bool)
    act_buf = torch.zeros((t_steps, n), dtype=torch.long)
    logp_buf = torch.zeros((t_steps, n))
    rew_buf = torch.zeros((t_steps, n))
    term_buf = torch.zeros((t_steps, n))
    valid_buf = torch.zeros((t_steps, n), dtype=torch.bool)
    val_buf = torch.zeros((t_steps, n))

    e_rules = eval_rules(args)
    eval_seed = 10_000 + args.seed
    baselines = {}
    for name in args.eval_baselines:
        from agents import make_agent

        baselines[name] = evaluate(make_agent(name), e_rules, args, args.eval_opponents,
                                   args.eval_episodes, eval_seed)[0]
    curve: list[dict] = []
    stem = Path(args.checkpoint) if args.checkpoint else None
    csv_path = (stem.with_name(stem.stem + "_curve.csv") if stem else folder / "curve.csv")
    png_path = csv_path.with_suffix(".png")
    title = (f"PPO, {args.game} {args.num_players}p vs {'+'.join(args.opponents)}; "
             f"eval vs {'+'.join(args.eval_opponents)}")
    if args.progress:
        print(f"run {run_name}: {num_iterations} updates of {batch_size} steps; "
              f"baselines {baselines}", flush=True)

    obs, info = env.reset(seed=args.seed)
    resetting = np.zeros(n, bool)  # NEXT_STEP autoreset: the next step only restarts the game
    ep_return = np.zeros(n)
    recent: list[float] = []
    global_step = 0
    start = time.time()
    cpu_start = time.process_time()

    def log_eval(iteration: int) -> None:
        net.eval()
        mean, sem = evaluate(net, e_rules, args, args.eval_opponents, args.eval_episodes,
                             eval_seed)
        net.train()
        row = {"iteration": iteration, "global_step": global_step,
               "seconds": round(time.time() - start, 1),
               "cpu_seconds": round(time.process_time() - cpu_start, 1),
               "eval_mean_points": round(mean, 4), "eval_sem": round(sem, 4),
               "train_mean_return": round(float(np.mean(recent)) if recent else float("nan"), 4),
               **{f"baseline_{k}": round(v, 4) for k, v in baselines.items()}}
        curve.append(row)
        with open(csv_path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(row))
            writer.writeheader()
            writer.writerows(curve)
        plot_curve(curve, baselines, png_path, title)
        save_checkpoint(folder / "model.pt", net, dataclasses.asdict(args))
        if stem:
            save_checkpoint(stem, net, dataclasses.asdict(args))
        if args.progress:
            print(f"update {iteration:5d} step {global_step:9d} {row['seconds']:7.0f}s  "
                  f"eval {mean:6.3f} +- {sem:.3f}  train return {row['train_mean_return']}",
                  flush=True)

    log_eval(0)
    for iteration in range(1, num_iterations + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (
                1.0 - (iteration - 1.0) / num_iterations)
        for step in range(t_steps):
            mask = info["action_mask"].copy()
            mask[~mask.any(axis=1)] = True  # games being restarted: any action (ignored)
            obs_t, mask_t = torch.as_tensor(obs), torch.as_tensor(mask)
            with torch.no_grad():
                logits, value = net(obs_t, mask_t)
                dist = Categorical(logits=logits)
                action = dist.sample()
            obs_buf[step], mask_buf[step], act_buf[step] = obs_t, mask_t, action
            logp_buf[step], val_buf[step] = dist.log_prob(action), value
            valid_buf[step] = torch.as_tensor(~resetting)
            obs, reward, term, trunc, info = env.step(action.numpy())
            global_step += int((~resetting).sum())
            ended = (term | trunc) & ~resetting
            ep_return += reward
            for g in np.flatnonzero(ended):
                recent.append(float(ep_return[g]))
            recent = recent[-1000:]
            ep_return[ended] = 0.0
            rew_buf[step] = torch.as_tensor(reward * args.reward_scale)
            term_buf[step] = torch.as_tensor(ended.astype(np.float32))
            resetting = term | trunc

        # Generalised advantage estimation. A restart step follows every terminal step;
        # (1 - term) cuts the recursion there, and restart steps are left out of the loss.
        with torch.no_grad():
            mask = info["action_mask"].copy()
            mask[~mask.any(axis=1)] = True
            _, next_value = net(torch.as_tensor(obs), torch.as_tensor(mask))
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
                loss = pg_loss - args.ent_coef * entropy + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(net.parameters(), args.max_grad_norm)
                optimizer.step()
            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        if selfplay is not None and iteration % args.snapshot_interval == 0:
            selfplay.refresh(net)
        if iteration % args.eval_interval == 0 or iteration == num_iterations:
            log_eval(iteration)

    wall, cpu = time.time() - start, time.process_time() - cpu_start
    summary = {"run_name": run_name, "global_step": global_step, "wall_seconds": round(wall, 1),
               "cpu_seconds": round(cpu, 1), "final_eval": curve[-1], "baselines": baselines}
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))
    if stem:
        stem.with_suffix(".json").write_text(json.dumps(
            {"args": dataclasses.asdict(args), **summary}, indent=2))
    if args.progress:
        print(f"done: {global_step} steps in {wall:.0f} s wall, {cpu:.0f} s CPU; "
              f"run folder {folder}", flush=True)
    return folder


def main(argv: list[str] | None = None) -> None:
    args = tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0])
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads or 1))
    train(args)


if __name__ == "__main__":
    main()
