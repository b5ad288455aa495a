"""How much a DMC network's own move values leave on the table (issue 43, target 1's why).

A DMC network (``experiments.dmc``) plays as a policy by its best move value. This
measures, on decisions of its own self-play, what one step of lookahead with its own
play after the move would change: ``mc`` with the network as every seat's rollout player
(``mc:rollout_agent=ppo:checkpoint=<net>``, one-step improvement of the network) values
every legal move over sampled worlds, twice, with independent worlds (estimates A and
B). For each decision:

* **regret**: B's value of A's best move less B's value of the network's move (and the
  same with A and B swapped; their mean): what the improved move gains by the network's
  own continuation, unbiased for the gain of the move one noisy estimate picks (in the
  lookahead's model, below, a lower bound of what an exact one-step lookahead gains: the
  max over noisy values is not taken twice);
* **agreement**: whether A's best move is the network's (beside how often A's best is
  B's: near-ties and cards of equal worth count as disagreements too);
* **move-value error**: the root mean square, over the legal moves, of the network's
  move values less the estimates' mean (each centred on its mean over the legal
  moves, so that the points already won drop out), beside the same measure of the
  estimates' own noise ((A - B) / 2, centred): the network's error beyond noise (both
  pooled over every (decision, legal card)).

Per round: the regret times the decisions with a choice a seat meets in a round (of the
self-play games): the one-step advantage summed over a round's decisions, not what
playing the lookahead at every move would gain. Points a round (Hearts: penalty points
saved). A diagnostic, not a target: all of it is measured in ``mc``'s model, whose worlds
are drawn uniformly (voids aside) and ignore what the network's past plays reveal of its
hands, and whose opponents play on from histories they might not have made; the network
learned on self-play's own deals. Part of a regret can be that model's.

    python -m experiments.dmc_regret --network dmc4_it1000 --rule-sets smoorverliefd hearts
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import tyro

from agents import make_agent
from agents.evaluation.stats import mean_interval
from agents.ppo import SHIPPED_NETWORK
from agents.training.dmc import POINTS_PER_LOGIT
from smoor_env import Engine, preset
from smoor_env.core.state import Phase
from smoor_env.observation import observe


@dataclass
class Args:
    network: str = SHIPPED_NETWORK
    """the network: a shipped checkpoint's name or a path"""
    rule_sets: list[str] = field(default_factory=lambda: ["smoorverliefd", "hearts"])
    """rule sets (names of smoor_env.PRESETS), each a single round"""
    players: int = 4
    """player count"""
    games: int = 64
    """self-play games a rule set (every seat the network), the decisions drawn from"""
    decisions: int = 256
    """decisions measured a rule set, drawn without replacement from the self-play
    decisions of the play phase with more than one legal card"""
    worlds: int = 128
    """sampled worlds of each of the two estimates (each move played out once in each)"""
    seed: int = 2500
    """seed of the self-play deals, the draw of decisions and the worlds"""
    out: str = "results/dmc_regret.json"
    """where to write the results (JSON)"""

    def check(self) -> None:
        for name in ("games", "decisions", "worlds"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be at least 1, got {getattr(self, name)}")
        for name in self.rule_sets:
            preset(name, self.players)


def self_play(network, rules, games: int, seed: int) -> tuple[dict[str, np.ndarray], float]:
    """The play-phase decisions with a choice of ``games`` rounds the network plays in every
    seat ({"observation": (N, OBS), "action_mask": (N, 70)}), and how many a seat meets in
    a round."""
    engine = Engine(rules, games)
    engine.reset(seed)
    st, rng = engine.state, np.random.default_rng(seed)
    kept: list[tuple[np.ndarray, np.ndarray]] = []
    while not st.match_over.all():
        rows = np.flatnonzero(~st.match_over)  # (n,)
        obs = observe(engine, st.current_player[rows].astype(np.int64), games=rows)
        mask = engine.legal_mask[rows]  # (n, 70)
        moves = np.zeros(games, np.int64)
        moves[rows] = network.act({"observation": obs, "action_mask": mask}, rng)
        choice = (st.phase[rows] == Phase.PLAY) & (mask.sum(axis=1) > 1)  # (n,)
        kept.append((obs[choice], mask[choice]))
        engine.step(moves, active=~st.match_over)
    obs, mask = (np.concatenate(part) for part in zip(*kept, strict=True))
    return {"observation": obs, "action_mask": mask}, len(obs) / (games * rules.num_players)


def figures(net: np.ndarray, a: np.ndarray, b: np.ndarray, ours: np.ndarray) -> dict:
    """The figures of D decisions (see the module's docstring) from the network's move
    values ``net`` (D, 70) in points, the lookahead's two independent estimates ``a`` and
    ``b`` (D, 70) (each NaN where a card is not legal) and the network's moves ``ours``
    (D,): ``regret`` (D,), ``agreement`` (A's best card is the network's),
    ``estimates_agreement`` (A's best is B's: the ceiling noise leaves agreement), and the
    root mean squares of the move-value error and of the estimates' noise, pooled over
    every (decision, legal card)."""
    d = np.arange(len(ours))
    best_a, best_b = (np.argmax(np.where(np.isnan(x), -np.inf, x), axis=1) for x in (a, b))
    regret = ((b[d, best_a] - b[d, ours]) + (a[d, best_b] - a[d, ours])) / 2  # (D,)

    def centred(x: np.ndarray) -> np.ndarray:  # each decision less its mean over legal cards
        return x - np.nanmean(x, axis=1, keepdims=True)

    error = centred(net) - centred((a + b) / 2)  # (D, 70)
    noise = centred((a - b) / 2)  # (D, 70)
    return {"regret": regret, "agreement": float(np.mean(best_a == ours)),
            "estimates_agreement": float(np.mean(best_a == best_b)),
            "move_value_rms_error": float(np.sqrt(np.nanmean(error ** 2))),
            "estimate_noise_rms": float(np.sqrt(np.nanmean(noise ** 2)))}


def measure(args: Args, rule_set: str) -> dict:
    """One rule set's row (see the module's docstring)."""
    start = time.perf_counter()
    rules = preset(rule_set, args.players)
    spec = f"ppo:checkpoint={args.network}"
    network = make_agent("ppo", checkpoint=args.network)
    found, per_round = self_play(network, rules, args.games, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    pick = np.sort(rng.choice(len(found["observation"]), min(args.decisions,
                                                              len(found["observation"])),
                              replace=False))
    batch = {key: value[pick] for key, value in found.items()}  # (D, ...)
    legal = batch["action_mask"]  # (D, 70)
    ours = network.act(batch, rng)  # (D,) the network's move
    # Move values in points: a logit is a move value over POINTS_PER_LOGIT points (DMC's
    # regression), and log-softmax keeps the differences within a decision.
    net = np.where(legal, network.log_policy(batch) * POINTS_PER_LOGIT, np.nan)  # (D, 70)
    improved = make_agent("mc", worlds=args.worlds, rollout_agent=spec)
    a, b = (improved.evaluate(batch, np.random.default_rng(args.seed + 2 + k))[1]
            for k in range(2))  # (D, 70) each, NaN where illegal
    found = figures(net, a, b, ours)
    mean, low, high = mean_interval(found.pop("regret"))
    return {
        "rule_set": rule_set, "players": args.players, "decisions": len(pick),
        "choices_a_round": per_round,
        "regret": {"mean": mean, "low": low, "high": high},
        "regret_a_round": {k: v * per_round for k, v in
                           {"mean": mean, "low": low, "high": high}.items()},
        **found,
        "seconds": time.perf_counter() - start,
    }


def main(argv: list[str] | None = None) -> dict:
    args = tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0])
    try:
        args.check()
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    rows = []
    for rule_set in args.rule_sets:
        row = measure(args, rule_set)
        rows.append(row)
        r, rr = row["regret"], row["regret_a_round"]
        print(f"{rule_set:18s} {args.players}p  regret a decision {r['mean']:+.3f} "
              f"[{r['low']:+.3f}, {r['high']:+.3f}], a round {rr['mean']:+.2f} "
              f"[{rr['low']:+.2f}, {rr['high']:+.2f}] ({row['choices_a_round']:.1f} choices); "
              f"agreement {row['agreement']:.2f}; move values off by "
              f"{row['move_value_rms_error']:.2f} (noise {row['estimate_noise_rms']:.2f}) "
              f"({row['seconds']:.0f} s)", flush=True)
    result = {"args": asdict(args), "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
