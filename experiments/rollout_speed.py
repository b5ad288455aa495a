"""The cost of one rollout ply: greedy (and epsilon-greedy) against random, same run.

A ply is one move of every game of a batch (the rollout policy's choice, then the
engine step), timed over whole rounds from fresh deals. The policies alternate
round by round in one process, so the ratio greedy / random compares them under
the same conditions on a shared, noisy machine; ``--clock cpu`` times this thread's CPU
time instead of the wall clock, which leaves out the time other jobs hold the core.

    python -m experiments.rollout_speed
    python -m experiments.rollout_speed --batch-sizes 1024 --rounds 4 --clock cpu
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import tyro

from agents.rollout import RolloutPolicy
from smoor_env import Engine, preset


@dataclass
class Args:
    rule_sets: list[str] = field(default_factory=lambda: ["smoorverliefd", "hearts_no_passing"])
    """rule sets (names of smoor_env.PRESETS), 4 players"""
    batch_sizes: list[int] = field(default_factory=lambda: [256, 1024, 4096])
    """games stepped at once"""
    policies: list[str] = field(default_factory=lambda: ["random", "greedy", "greedy:0.2"])
    """rollout policies (the first is the baseline of the ratios)"""
    rounds: int = 8
    """whole rounds timed per policy and batch size (alternating policies)"""
    seed: int = 0
    """seed of the deals and the policies' generators"""
    clock: Literal["wall", "cpu"] = "wall"
    """wall: time.perf_counter; cpu: this thread's CPU time (steadier on a loaded machine)"""
    out: str = "results/rollout_speed.json"
    """where to write the results (JSON)"""


def ply_times(args: Args, rule_set: str, batch: int) -> dict[str, float]:
    """Mean seconds per ply of each policy, the policies alternating round by round."""
    rules = preset(rule_set, 4, matches=False)
    engine = Engine(rules, batch)
    policies = {spec: RolloutPolicy(spec) for spec in args.policies}
    spent = dict.fromkeys(policies, 0.0)
    plies = dict.fromkeys(policies, 0)
    rng = np.random.default_rng(args.seed)
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    for r in range(args.rounds):
        for spec, policy in policies.items():
            engine.reset(args.seed + r)  # the same deals for every policy
            st = engine.state
            t0 = clock()
            while not st.match_over.all():
                engine.step(policy(engine, rng))
                plies[spec] += 1
            spent[spec] += clock() - t0
    return {spec: spent[spec] / plies[spec] for spec in policies}


def main(argv: list[str] | None = None) -> list[dict]:
    args = tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0])
    if args.rounds < 1 or min(args.batch_sizes) < 1:
        raise ValueError("--rounds and every batch size must be at least 1")
    rows = []
    base = args.policies[0]
    for rule_set in args.rule_sets:
        for batch in args.batch_sizes:
            times = ply_times(args, rule_set, batch)
            row = {"rule_set": rule_set, "batch": batch,
                   "us_per_ply": {k: v * 1e6 for k, v in times.items()},
                   "ratio": {k: v / times[base] for k, v in times.items()}}
            rows.append(row)
            text = "  ".join(f"{k} {v * 1e6:6.0f} us ({row['ratio'][k]:.2f}x)"
                             for k, v in times.items())
            print(f"{rule_set:15s} B={batch:5d}  {text}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    return rows


if __name__ == "__main__":
    main()
