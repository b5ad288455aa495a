"""One network from ``prior="auto"``'s table: every table's prior distilled into one network.

``prior="auto"`` (``agents.mc.table_prior``) played a shipped network, ``dmc4_it1000``,
in most rule sets and a specialist, ``ppo_smoorverliefd``, in plain Smoorverliefd. This
command teaches one network (``--init``, by default ``dmc4_it1000``) to play as that
table's prior did in every ladder table, by policy distillation (Rusu et al. 2016). A
table's teacher is the specialist of ``--specialists`` that plays its rule set
(``agents.ppo.shipped_policy_for``), else ``--init`` itself, or with ``--teacher`` a
search agent (``--teacher mc``: the network learns ``mc``'s choices, as the specialist
``ppo_smoorverliefd`` did in plain Smoorverliefd; ``--teacher ismcts:prior=none``:
``ismcts`` without the prior whose bonus picks its move but is not in its values):

1. **Label.** In each table (rule set and player count of ``--rule-sets`` x
   ``--players``) the table's teacher plays every seat of batched self-play, sampling its
   moves from its policy, or a search agent its best move
   (``agents.training.expert.label_self_play``), until ``--decisions`` decisions; each
   keeps the teacher's log-probability of every legal move (times ``--temperature``; a
   search: the value it found for each, in points) and the round's outcome for the seat.
   Table k deals from seed ``--seed + k``; ``--workers`` processes label tables at once.
2. **Fit** (``agents.training.distill.fit``): the network's policy head learns the
   teacher's distribution (cross-entropy to the policy, so where the teacher is the
   network itself the fit starts at its optimum; a search's: softmax(values /
   ``--temperature``)), its value head the seat's round points over the rule set's value
   scale, on all tables' labels at once, one in 20 held out.
3. **Report**: on the held-out decisions of each table, the KL divergence from the
   teacher's policy to the network's and how often their most likely moves agree, before
   and after the fit (``summary.json``). The held-out decisions are fit's, one in 20 at
   random: they share rounds with the fitted ones, so after the fit they read a little
   better than fresh positions would.

Written to ``--out-dir``: ``network.pt`` (``ppo:checkpoint=...`` plays it),
``summary.json`` and ``args.json``. Labels are made afresh from the seeds, never kept.

    python -m experiments.distill_table                      # into runs/distill_table
    python -m experiments.distill_table --teacher mc --out-dir runs/distill_mc  # mc teaches
    python -m experiments.distill_table --decisions 300 --epochs 1 --rule-sets \\
        smoorverliefd hearts --players 4 --out-dir /tmp/distill  # a smoke run
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.base import build_agent, parse_agent
from agents.evaluation.backends import finished_units
from agents.evaluation.runs import (
    checked_command,
    claim_settings,
    code_fingerprint,
    log,
    write_atomic,
)
from agents.policy_net import PolicyNet, load_checkpoint, save_checkpoint
from agents.ppo import SHIPPED_POLICIES, PPOAgent, shipped_policy_for
from agents.training.distill import fit
from agents.training.expert import label_self_play
from agents.training.labels import soft_targets
from smoor_env import PRESETS, preset_tables
from smoor_env.core.rules import Rules
from smoor_env.observation import compact_scale

PROG = "python -m experiments.distill_table"
#: Options of a search teacher whose labels would not be its play or its seeds' alone: why,
#: and the value (as a spec writes it) under which they are.
UNLABELLED_OPTIONS = {
    "time_budget": ("the worlds searched would depend on the machine's speed", "none"),
    "prior": ("its bonus chooses the move but is not in the values it returns", "none"),
    "greedy_margin": ("its margin chooses the move but is not in the values it returns", "0"),
}


def unlabelled_settings(teacher: Any) -> list[str]:
    """The options of UNLABELLED_OPTIONS that ``teacher`` plays with, given or by default
    (``ismcts`` plays ``prior="auto"`` unless told ``prior=none``)."""
    return [name for name in UNLABELLED_OPTIONS
            if getattr(teacher, name, None) not in (None, 0.0)]


@dataclass
class Args:
    decisions: int = 100_000
    """decisions labelled per table (the rounds in progress then run to their end)"""
    num_envs: int = 64
    """games per table played at once"""
    rule_sets: list[str] = field(default_factory=lambda: [
        "smoorverliefd", "trump_hearts", "bidding", "partners", "pip_scoring", "hearts",
        "hearts_no_passing"])
    """rule sets labelled (names of smoor_env.PRESETS; partners: 4 players only)"""
    players: list[int] = field(default_factory=lambda: [3, 4, 5])
    """player counts labelled"""
    init: str = "dmc4_it1000"
    """the network taught, and (without --teacher) the teacher of the tables no specialist
    teaches: a shipped checkpoint's name or a path"""
    specialists: list[str] = field(default_factory=lambda: ["ppo_smoorverliefd"])
    """shipped specialists (agents.ppo.SHIPPED_POLICIES) that teach the rule sets they
    play (agents.ppo.shipped_policy_for)"""
    teacher: str = ""
    """a search agent's spec (mc, or ismcts:prior=none) that teaches the tables no
    specialist teaches, from the values it searched (softmax at --temperature); refused
    with a setting of UNLABELLED_OPTIONS in play; default: --init, from its policy"""
    temperature: float = 0.3
    """points of a searched value per unit of log-probability in the labels: the targets
    are softmax(values / temperature), in points in every rule set (so nearer the search's
    best move where points are larger, as Kleine Liefde's); a policy's labels are its
    distribution whatever this is (up to float rounding: the first distilled network,
    2026-12-07, was made at 0.5)"""
    epochs: int = 3
    """epochs over the labels"""
    learning_rate: float = 1e-4
    """Adam learning rate (annealed linearly to 0)"""
    value_coef: float = 0.5
    """weight of the value head's squared error beside the policy's cross-entropy"""
    seed: int = 960
    """training seed: table k deals from seed + k (below 1,000: the training seeds);
    torch and the fit from it"""
    out_dir: str = "runs/distill_table"
    """where network.pt, summary.json and args.json go"""
    workers: int = 2
    """processes that label tables at once (the labels do not depend on it)"""
    progress: bool = True
    """print what happens"""

    def check(self) -> None:
        """Refuse settings that cannot run (a ValueError naming the option)."""
        for name in ("decisions", "num_envs", "epochs", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got "
                                 f"{getattr(self, name)}")
        for name in ("learning_rate", "temperature"):
            if not getattr(self, name) > 0:
                raise ValueError(f"--{name.replace('_', '-')} must be > 0, got "
                                 f"{getattr(self, name)}")
        tables = preset_tables(self.rule_sets, self.players)  # names and counts checked
        unknown = [name for name in self.specialists if name not in SHIPPED_POLICIES]
        if unknown:
            raise ValueError(f"--specialists must be among {', '.join(SHIPPED_POLICIES)}, "
                             f"got {', '.join(unknown)}")
        if self.seed < 0 or self.seed + len(tables) - 1 > 999:
            raise ValueError(f"--seed {self.seed} with {len(tables)} tables leaves the "
                             "training seeds 0-999")
        if self.teacher:
            teacher = build_agent(self.teacher)
            if not hasattr(teacher, "evaluate"):
                raise ValueError(f"--teacher must be a search agent that values moves (mc, "
                                 f"ismcts), got {self.teacher!r}")
            unlabelled = unlabelled_settings(teacher)
            if unlabelled:
                name = unlabelled[0]
                why, off = UNLABELLED_OPTIONS[name]
                raise ValueError(f"--teacher {self.teacher!r}: {', '.join(unlabelled)} "
                                 f"cannot teach ({why}; {parse_agent(self.teacher)[0]} plays "
                                 f"{name}={getattr(teacher, name)!r}: give {name}={off})")

    def fallback(self) -> str:
        """The teacher of the tables no specialist teaches: --teacher, else --init."""
        return self.teacher or self.init


class PriorTeacher:
    """A table's teacher (a shipped policy or network) for ``label_self_play``: it samples
    its move from its policy and values every legal move at ``temperature`` times its
    log-probability (NaN where illegal), so that softmax(values / temperature) is its
    policy."""

    def __init__(self, checkpoint: str, temperature: float) -> None:
        self.agent = PPOAgent(checkpoint, sample=True)
        self.temperature = temperature

    def evaluate(self, observations: dict[str, np.ndarray], rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
        log_pi = self.agent.log_policy(observations)  # (B, 70) -inf where illegal
        values = np.where(np.isfinite(log_pi), self.temperature * log_pi, np.nan)  # (B, 70)
        return self.agent.act(observations, rng), values  # (B,) drawn from the policy


def teacher_agent(name: str, args: Args) -> Any:
    """The agent that labels a table whose teacher is ``name``: ``--teacher``'s search
    agent, or a policy (a specialist, or --init) as a ``PriorTeacher``."""
    if args.teacher and name == args.teacher:
        return build_agent(name)
    return PriorTeacher(name, args.temperature)


def teacher_of(rules: Rules, specialists: list[str], fallback: str) -> str:
    """The teacher of ``rules``' table: the specialist of ``specialists`` that plays it
    (``shipped_policy_for``), else ``fallback``."""
    name = shipped_policy_for(rules)
    return name if name in specialists else fallback


def agreement(net: PolicyNet, data: dict[str, np.ndarray], targets: np.ndarray,
              rows: np.ndarray, tables: int) -> list[dict[str, float]]:
    """Per table: the mean KL divergence from the targets (D, 70) to ``net``'s policy and
    the share of decisions whose most likely moves agree, over ``rows`` (H,)."""
    scale = torch.as_tensor(compact_scale()[:net.obs_size])  # (obs,)
    kls, agree = [], []
    with torch.no_grad():
        for begin in range(0, len(rows), 8192):
            idx = rows[begin:begin + 8192]  # (h,)
            obs = torch.as_tensor(data["observations"][idx]).float() * scale  # (h, obs)
            logits, _ = net(obs, torch.as_tensor(data["masks"][idx]))  # (h, 70)
            log_q = torch.log_softmax(logits, dim=1).numpy()  # (h, 70)
            p = targets[idx]  # (h, 70)
            terms = np.where(p > 0, p * (np.log(np.maximum(p, 1e-30)) - log_q), 0.0)
            kls.append(terms.sum(axis=1))
            agree.append(p.argmax(axis=1) == log_q.argmax(axis=1))
    kl, same = np.concatenate(kls), np.concatenate(agree)  # (H,), (H,)
    table = data["table"][rows]  # (H,)
    return [{"kl": float(kl[table == k].mean()), "argmax_agreement":
             float(same[table == k].mean()), "held_out": int((table == k).sum())}
            for k in range(tables)]


def run(args: Args) -> dict[str, Any]:
    folder = Path(args.out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    code = code_fingerprint()  # the packages that label and fit
    claim_settings(args, folder, free=("progress", "workers"))
    torch.manual_seed(args.seed)
    tables = preset_tables(args.rule_sets, args.players)
    names = [(name, players) for name in args.rule_sets for players in args.players
             if players in PRESETS[name].players]  # preset_tables' order
    teachers = [teacher_of(rules, args.specialists, args.fallback()) for rules in tables]

    def label(k: int) -> dict[str, np.ndarray]:
        """Table k's labels (its own seeds: the same in any worker)."""
        part = label_self_play(teacher_agent(teachers[k], args), [tables[k]],
                               args.decisions, args.num_envs, args.seed + k,
                               np.random.default_rng([args.seed, k]))
        part["table"][:] = k
        return part

    started = time.monotonic()
    parts: dict[int, dict[str, np.ndarray]] = {}
    with contextlib.closing(finished_units([(k,) for k in range(len(tables))], label,
                                           args.workers)) as finished:
        for (k,), part in finished:
            parts[k] = part
            (rule_set, players), name = names[k], teachers[k]
            log(args.progress, f"table {k} ({rule_set}, {players} players, teacher "
                               f"{name}): {len(part['actions'])} decisions")
    data = {key: np.concatenate([parts[k][key] for k in range(len(tables))])
            for key in parts[0]}
    labelled = time.monotonic() - started
    targets = soft_targets(data["values"], data["actions"], args.temperature)  # (D, 70)
    net, _ = load_checkpoint(args.init)
    net.train()
    order = torch.randperm(len(targets), generator=torch.Generator().manual_seed(
        args.seed)).numpy()
    held = order[:len(order) // 20]  # (H,) the decisions fit holds out, drawn as it draws
    before = agreement(net.eval(), data, targets, held, len(tables))
    net.train()
    started = time.monotonic()
    fitted = fit(net, data["observations"], data["masks"], targets, epochs=args.epochs,
                 learning_rate=args.learning_rate, seed=args.seed,
                 values=data["returns"] / data["value_scale"], value_coef=args.value_coef)
    fitting = time.monotonic() - started
    net.eval()
    assert np.array_equal(held, fitted.held)  # fit holds out the same decisions
    after = agreement(net, data, targets, held, len(tables))
    path = folder / "network.pt"
    save_checkpoint(path, net, {**dataclasses.asdict(args), "game": "all",
                                "teachers": teachers, "code": code})
    summary = {
        "command": " ".join([PROG, *sys.argv[1:]]),
        "args": dataclasses.asdict(args), "code": code,
        "decisions": len(targets), "label_seconds": labelled, "fit_seconds": fitting,
        "loss": fitted.loss, "held_out_cross_entropy": fitted.held_cross_entropy,
        "held_out_value_mse": fitted.held_value_mse,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "tables": [{"rule_set": name, "players": players, "teacher": teacher,
                    "before": b, "after": a}
                   for (name, players), teacher, b, a in zip(names, teachers, before, after,
                                                             strict=True)],
    }
    write_atomic(folder / "summary.json", json.dumps(summary, indent=1) + "\n")
    for row in summary["tables"]:
        log(args.progress, f"{row['rule_set']} {row['players']}p ({row['teacher']}): KL "
                           f"{row['before']['kl']:.4f} -> {row['after']['kl']:.4f}, argmax "
                           f"agreement {row['before']['argmax_agreement']:.3f} -> "
                           f"{row['after']['argmax_agreement']:.3f}")
    return summary


def main(argv: list[str] | None = None) -> int:
    """The command; its exit status (2 and one line for settings it refuses)."""
    return checked_command(PROG, Args, run, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    sys.exit(main())
