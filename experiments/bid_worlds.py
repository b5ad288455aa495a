"""How many worlds does a bid chosen by simulation need? Regret against a large search.

Blinde Liefde's bid is chosen by simulation (``mc``, and ``ismcts`` with its
``bid_worlds``): every legal bid is played out in the same sampled worlds by the
greedy rollouts, and the best mean is bid. For each player count, ``--deals`` deals are
dealt and every seat's bid decision is taken in turn (the earlier seats bid by the
greedy rules). Each decision is valued by ``mc`` with ``--reference`` worlds; a search
with W worlds (``--worlds``) then loses, on that decision, the reference's value of its
best bid less its value of the bid the W-world search chose (its regret, in round
points). Reported: the mean regret a bid (with its standard error), the share of bids
without regret, and the mean time a decision.

    python -m experiments.bid_worlds
    python -m experiments.bid_worlds --players 4 --deals 60 --worlds 128 512
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tyro

from agents import make_agent
from smoor_env import Engine, Phase, preset
from smoor_env.observation import observe


@dataclass
class Args:
    players: list[int] = field(default_factory=lambda: [3, 4])
    """player counts"""
    deals: int = 40
    """deals per player count (every seat's bid decision on each)"""
    worlds: list[int] = field(default_factory=lambda: [128, 512, 1024])
    """worlds of the searches compared (mc: 128; ismcts' bid_worlds: 512)"""
    reference: int = 4096
    """worlds of the reference search that values every bid"""
    seed: int = 0
    """seed of the deals and the searches"""
    out: str = "results/bid_worlds.json"
    """where to write the results (JSON)"""


def bid_decisions(players: int, deals: int, seed: int) -> list[dict[str, np.ndarray]]:
    """The bid decisions of ``deals`` deals, one batch (observation, action_mask) per
    seat in bidding order, the earlier seats having bid by the greedy rules."""
    engine = Engine(preset("bidding", players, matches=False), deals)
    engine.reset(seed)
    greedy, rng = make_agent("greedy"), np.random.default_rng(seed)
    batches = []
    for _ in range(players):
        if not (engine.state.phase == Phase.BID).all():
            raise RuntimeError("every game should still be bidding")
        obs = {"observation": observe(engine, engine.state.current_player),
               "action_mask": engine.legal_mask.copy()}
        batches.append(obs)
        engine.step(greedy.act(obs, rng))
    return batches


def regrets(batches: list[dict[str, np.ndarray]], worlds: list[int], reference: int,
            seed: int, search_seed: int | None = None) -> dict[int, dict[str, float]]:
    """Per number of worlds: mean regret a bid (points), its standard error, the share of
    bids without regret, and seconds a decision. The reference searches with generator
    ``seed``, the others with ``search_seed`` (default ``seed + 1``: other worlds)."""
    search_seed = seed + 1 if search_seed is None else search_seed
    values = []  # (decisions, 70) the reference's value of every legal bid, -inf elsewhere
    for obs in batches:
        ref = make_agent("mc", worlds=reference).evaluate(obs, np.random.default_rng(seed))[1]
        values.append(np.where(np.isnan(ref), -np.inf, ref))
    value = np.concatenate(values)
    best = value.max(axis=1)  # (decisions,)
    out = {}
    for w in worlds:
        start, chosen = time.perf_counter(), []
        for obs in batches:
            chosen.append(make_agent("mc", worlds=w).act(obs, np.random.default_rng(search_seed)))
        spent = time.perf_counter() - start
        choice = np.concatenate(chosen)
        regret = best - value[np.arange(len(value)), choice]  # (decisions,) points
        out[w] = {"mean_regret": float(regret.mean()),
                  "stderr": float(regret.std(ddof=1) / np.sqrt(len(regret))),
                  "no_regret": float(np.mean(regret == 0)),
                  "seconds_per_decision": spent / len(regret), "decisions": len(regret)}
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    args = tyro.cli(Args, args=argv)
    rows = []
    for p in args.players:
        batches = bid_decisions(p, args.deals, args.seed)
        for w, r in regrets(batches, args.worlds, args.reference, args.seed).items():
            rows.append({"players": p, "worlds": w, "reference": args.reference, **r})
            print(f"{p}p  {w:5d} worlds: regret {r['mean_regret']:.3f} +- {r['stderr']:.3f}"
                  f" points a bid, {r['no_regret']:.0%} without regret, "
                  f"{r['seconds_per_decision'] * 1e3:.0f} ms a decision", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
