"""Expert iteration: one policy-value network for every rule set and player count, trained
on its own search's decisions, generation after generation.

Generation g (1, 2, ...):

1. **Label.** The teacher, ``ismcts`` with generation g-1's network as its prior
   (generation 1: ``--teacher``, by default today's ``ismcts``, ``prior="auto"``, the
   shipped policies and networks; ``ismcts:prior=specialists`` was the default teacher
   of the run that made ``dmc_all``'s warm start, before the networks shipped), plays every
   seat of batched self-play (``SelfPlayVectorEnv``, ``agents.training.expert``) in every
   rule set and player count of ``--rule-sets`` x ``--players``, the tables taking turns
   one step each, until ``--decisions`` decisions are labelled: each with the search's
   value of every root move, and with the round's outcome for the seat.
2. **Fit.** The network (generation g-1's, generation 0 being ``--init``) learns
   softmax(value / ``--temperature``) over the searched moves (policy head,
   cross-entropy) and the seat's round points over the rule set's value scale (value
   head, squared error; ``agents.training.distill.fit``) on the labels of the last
   ``--replay`` generations, one in 20 decisions held out.
3. **Measure.** ``ismcts`` with the new network against ``ismcts`` with the one before
   (generation 1: against today's), head to head on fixed deals
   (``experiments.agent_strength``: ``--eval-deals`` deals from ``--eval-seed``, every
   rotation, paired 95% intervals), in ``--eval-rule-sets`` at ``--eval-players``; run in
   a second process while the next generation labels.

Seeds (docs/results/2026-12-03-learned-strength-protocol.md): the labels of generation g
deal from seed ``--seed + 100 g + k`` for table k (all below 1,000, the training seeds),
the measurements from 1,000. Everything is written to ``--out-dir``: ``gen<g>.pt``
(checkpoints ``ppo:checkpoint=...`` plays), ``labels/gen<g>.npz`` (not for the
repository: the command makes them again), ``eval_gen<g>.json``, ``summary.json`` and
``curve.png``, and ``args.json``, the settings. A generation whose files exist is read,
not made again, so a stopped run goes on where it stopped (or on to more
``--generations``); other settings for the same folder are refused, naming them.

    python -m experiments.expert_iteration                          # the shipped budget
    python -m experiments.expert_iteration --generations 1 --decisions 200 \\
        --teacher ismcts:iterations=64,walks=32 --eval-deals 2 --out-dir /tmp/ei  # a smoke run
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents import build_agent, parse_agent
from agents.evaluation.runs import checked_command, claim_settings, log, write_atomic
from agents.policy_net import PolicyNet, load_checkpoint, save_checkpoint
from agents.training.distill import fit
from agents.training.expert import FIELDS, label_self_play
from agents.training.labels import soft_targets
from smoor_env import preset, preset_tables
from smoor_env.observation import OBSERVATION_SIZE

PROG = "python -m experiments.expert_iteration"


@dataclass
class Args:
    generations: int = 3
    """generations of expert iteration"""
    decisions: int = 40_000
    """decisions labelled per generation (all tables together; the rounds in progress then
    run to their end, so a few thousand more)"""
    num_envs: int = 16
    """games per table (rule set and player count) played at once"""
    teacher: str = "ismcts"
    """the search that labels, as an agent spec; from generation 2 on, its prior is set to
    the previous generation's network (prior=ppo:checkpoint=<gen>.pt)"""
    rule_sets: list[str] = field(default_factory=lambda: [
        "smoorverliefd", "trump_hearts", "bidding", "partners", "pip_scoring", "hearts",
        "hearts_no_passing"])
    """rule sets labelled (names of smoor_env.PRESETS; partners: 4 players only)"""
    players: list[int] = field(default_factory=lambda: [3, 4, 5])
    """player counts labelled"""
    init: str = "ppo_smoorverliefd"
    """generation 0's network: a shipped checkpoint's name or a path ('' : a fresh
    network of --hidden)"""
    hidden: list[int] = field(default_factory=lambda: [512, 512])
    """layer sizes of a fresh network (with --init '')"""
    card_head: int = 0
    """width of a fresh network's policy head shared by the 52 cards (0: none;
    ``agents.policy_net.PolicyNet``), with --init ''"""
    temperature: float = 0.5
    """policy targets: softmax(value / T) over the searched moves, T in points"""
    epochs: int = 10
    """epochs over each generation's training labels"""
    learning_rate: float = 1e-3
    """Adam learning rate of a fit (annealed linearly to 0)"""
    value_coef: float = 0.5
    """weight of the value head's squared error beside the policy's cross-entropy"""
    replay: int = 3
    """generations of labels a fit reads: this one and the replay - 1 before it"""
    seed: int = 0
    """training seed (labels from seed + 100 g + table; torch and the fits from it)"""
    eval_deals: int = 200
    """deals of each generation's measurement against the one before"""
    eval_seed: int = 1000
    """seed of the measurement's deals"""
    eval_rule_sets: list[str] = field(default_factory=lambda: ["smoorverliefd", "hearts"])
    """rule sets of the measurement"""
    eval_players: list[int] = field(default_factory=lambda: [4])
    """player counts of the measurement"""
    out_dir: str = "runs/expert_iteration"
    """where the run's files go (see above)"""
    progress: bool = True
    """print what happens"""

    def check(self) -> None:
        """Refuse settings that cannot run (a ValueError naming the option), before
        anything is written."""
        for name in ("generations", "decisions", "num_envs", "epochs", "replay",
                     "eval_deals"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got "
                                 f"{getattr(self, name)}")
        if self.seed < 0 or self.seed + 100 * self.generations + 99 > 999:
            raise ValueError(f"--seed {self.seed} with {self.generations} generations "
                             "leaves the training seeds 0-999")
        if not self.temperature > 0:
            raise ValueError(f"--temperature must be > 0, got {self.temperature}")
        if parse_agent(self.teacher)[0] != "ismcts":
            raise ValueError(f"--teacher must be an ismcts spec, got {self.teacher!r}")
        build_agent(self.teacher)
        for name in self.rule_sets + self.eval_rule_sets:
            preset(name, 4)
        if self.init:
            load_checkpoint(self.init)
        if self.card_head < 0 or (self.card_head and self.init):
            raise ValueError("--card-head is for a fresh network (--init ''), >= 0, got "
                             f"{self.card_head} with --init {self.init!r}")


def teacher_spec(args: Args, prior: Path | None) -> str:
    """The teacher's spec: ``--teacher``, its prior the network ``prior`` if given."""
    if prior is None:
        return args.teacher
    name, options = parse_agent(args.teacher)
    options["prior"] = f"ppo:checkpoint={prior}"
    return name + ":" + ",".join(f"{k}={v}" for k, v in options.items())


def labels_for(args: Args, generation: int, prior: Path | None, folder: Path
               ) -> dict[str, np.ndarray]:
    path = folder / "labels" / f"gen{generation}.npz"
    if path.exists():
        with np.load(path) as stored:
            return {key: stored[key] for key in FIELDS}
    spec = teacher_spec(args, prior)
    log(args.progress, f"generation {generation}: labelling {args.decisions} decisions by {spec}")
    start = time.perf_counter()
    tables = preset_tables(args.rule_sets, args.players)
    data = label_self_play(build_agent(spec), tables, args.decisions, args.num_envs,
                           args.seed + 100 * generation,
                           np.random.default_rng([args.seed, generation]))
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.stem + ".partial.npz")
    np.savez(partial, **data)
    partial.replace(path)
    log(args.progress, f"generation {generation}: {len(data['actions'])} decisions in "
                       f"{time.perf_counter() - start:.0f} s")
    return data


def _measure(args: Args, generation: int, new: str, old: str, folder: Path) -> Any:
    """A started process (forked) that runs ``evaluate``; its result is its JSON file.
    It ignores Ctrl-C and dies of SIGTERM: the main process stops it (``kill``)."""
    import multiprocessing

    from agents.evaluation.backends import _quiet_worker

    def work() -> None:
        _quiet_worker()  # as the shared pool's workers
        evaluate(args, generation, new, old, folder)

    process = multiprocessing.get_context("fork").Process(target=work, daemon=True)
    process.start()
    return process


def evaluate(args: Args, generation: int, new: str, old: str, folder: Path) -> dict:
    """``experiments.agent_strength`` of ``new`` against ``old`` (run in a worker)."""
    from experiments import agent_strength

    out = folder / f"eval_gen{generation}.json"
    if out.exists():
        return json.loads(out.read_text())
    argv = ["--ladder", old, new, "--deals", str(args.eval_deals), "--seed",
            str(args.eval_seed), "--rule-sets", *args.eval_rule_sets, "--players",
            *map(str, args.eval_players), "--workers", "1", "--timing-decisions", "0",
            "--out", str(out)]
    return agent_strength.main(argv)


#: Settings that do not change what a generation is: a run may go on with other values.
_FREE = ("generations", "progress", "out_dir")


def run(args: Args) -> dict:
    folder = Path(args.out_dir)
    claim_settings(args, folder, _FREE)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # the other core measures the generations
    if args.init:
        net = load_checkpoint(args.init)[0].train()
    else:
        net = PolicyNet(tuple(args.hidden), obs_size=OBSERVATION_SIZE, card_head=args.card_head)
    history: list[dict[str, np.ndarray]] = []
    rows: list[dict] = []
    measures: list[tuple[int, Any]] = []  # (generation, its measuring process)
    previous: Path | None = None  # generation 0: today's ismcts labels
    previous_spec = args.teacher
    try:
        for generation in range(1, args.generations + 1):
            history.append(labels_for(args, generation, previous, folder))
            checkpoint = folder / f"gen{generation}.pt"
            if checkpoint.exists():
                net = load_checkpoint(checkpoint)[0].train()
                row = json.loads((folder / f"gen{generation}.json").read_text())
            else:
                data = {key: np.concatenate([part[key] for part in history[-args.replay:]])
                        for key in FIELDS}
                start = time.perf_counter()
                fitted = fit(net, data["observations"], data["masks"],
                             soft_targets(data["values"], data["actions"], args.temperature),
                             epochs=args.epochs,
                             learning_rate=args.learning_rate, seed=args.seed + generation,
                             values=data["returns"] / data["value_scale"],
                             value_coef=args.value_coef)
                agree = float(np.mean(fitted.choice == data["actions"][fitted.held]))
                row = {"generation": generation, "decisions": int(len(data["actions"])),
                       "new_decisions": int(len(history[-1]["actions"])),
                       "loss": fitted.loss, "held_out_agreement": agree,
                       "held_out_cross_entropy": fitted.held_cross_entropy,
                       "held_out_value_mse": fitted.held_value_mse,
                       "fit_seconds": time.perf_counter() - start,
                       "teacher": teacher_spec(args, previous)}
                save_checkpoint(checkpoint, net, {**dataclasses.asdict(args),
                                                  "generation": generation,
                                                  "game": "all", "num_players": args.players})
                write_atomic(folder / f"gen{generation}.json", json.dumps(row, indent=1))
            log(args.progress, f"generation {generation}: {row}")
            rows.append(row)
            new_spec = teacher_spec(args, checkpoint)
            if measures:  # one measurement at a time, as one core has room for
                measures[-1][1].join()
            measures.append((generation, _measure(args, generation, new_spec, previous_spec,
                                                  folder)))
            previous, previous_spec = checkpoint, new_spec
        for generation, process in measures:
            process.join()
            out = folder / f"eval_gen{generation}.json"
            if process.exitcode != 0 or not out.exists():
                raise RuntimeError(f"the measurement of generation {generation} failed "
                                   f"(exit status {process.exitcode}); see its output above")
            result = json.loads(out.read_text())
            rows[generation - 1]["against_previous"] = [
                {"rule_set": r["rule_set"], "players": r["players"], **r["advantage"]}
                for r in result["ladder"]]
    finally:  # stopped (Ctrl-C, SIGTERM, an error): the measurement stops too, at once
        for _, process in measures:
            if process.is_alive():
                process.kill()
            process.join()
    summary = {"args": dataclasses.asdict(args),
               "command": " ".join([os.path.basename(sys.executable), "-m",
                                    "experiments.expert_iteration", *sys.argv[1:]]),
               "generations": rows}
    write_atomic(folder / "summary.json", json.dumps(summary, indent=1))
    plot(rows, folder / "curve.png")
    return summary


def plot(rows: list[dict], path: Path) -> None:
    """Each generation's advantage over the one before, per measured row, with intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    labels = sorted({(r["rule_set"], r["players"]) for row in rows
                     for r in row.get("against_previous", [])})
    for k, (rule_set, players) in enumerate(labels):
        points = [(row["generation"], r) for row in rows for r in row.get("against_previous", [])
                  if (r["rule_set"], r["players"]) == (rule_set, players)]
        x = np.array([g for g, _ in points]) + (k - (len(labels) - 1) / 2) * 0.08
        mean = np.array([r["mean"] for _, r in points])
        half = np.array([r["half_width"] for _, r in points])
        ax.errorbar(x, mean, yerr=half, marker="o", capsize=3, label=f"{rule_set} {players}p")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("generation")
    ax.set_ylabel("points a round over the previous\n(Hearts: penalty points saved)")
    ax.set_xticks([row["generation"] for row in rows])
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """The command; its exit status (2 and one line for settings it refuses)."""
    return checked_command(PROG, Args, run, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    sys.exit(main())
