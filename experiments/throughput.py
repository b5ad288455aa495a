"""Engine throughput: random-play rounds per second by batch size, player count and rule set.

Every game of a batch plays one round (a full deal) with uniformly random legal
actions (``Engine.sample_legal``), on one thread. A row reports the rounds and
actions per second measured on this machine; the table is printed and written
to ``results/throughput.json``. Compare rows of one run with each other: the
machine is shared and absolute figures drift between runs.

    python -m experiments.throughput                 # the full table (about a minute)
    python -m experiments.throughput --seconds 0.2   # a quick look
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tyro

from agents.evaluation.runs import write_atomic
from smoor_env import Engine, Rules


@dataclass
class Args:
    batch_sizes: list[int] = field(default_factory=lambda: [1, 64, 1024, 8192, 16384, 32768, 65536])
    """batch sizes B of the base-game rows (B games stepped in lockstep)"""
    players: list[int] = field(default_factory=lambda: [3, 4, 5])
    """player counts of the base-game rows"""
    variant_batch: int = 8192
    """batch size of the rows for the variants, Hearts and the (B, 70) mask"""
    seconds: float = 1.0
    """minimum measuring time per row (at least one whole batch is always played)"""
    seed: int = 0
    """seed of the deals and of the random players"""
    out: str = "results/throughput.json"
    """where to write the results (JSON); its folder is made if missing, but not the
    folders above it"""


#: The command's name in its usage and error lines.
PROG = "smoor-throughput"


# Rule sets of the variant rows: name -> Rules options (4 players unless given).
VARIANTS: dict[str, dict] = {
    "met Troef (trump_hearts)": {"trump_hearts": True},
    "Blinde Liefde (bidding)": {"bidding": True},
    "Partner (partners)": {"partners": True},
    "Kleine Liefde (pip_scoring)": {"pip_scoring": True},
    "Cupid's Arrow (cupids_arrow)": {"cupids_arrow": True, "target_score": 50},
    "all variants": {"trump_hearts": True, "bidding": True, "partners": True,
                     "pip_scoring": True, "cupids_arrow": True, "target_score": 50},
    "Hearts, 3 players": {"game": "hearts", "num_players": 3},
    "Hearts, 4 players": {"game": "hearts"},
    "Hearts, 5 players": {"game": "hearts", "num_players": 5},
}


def measure(rules: Rules, batch: int, seconds: float, seed: int,
            with_mask: bool = False) -> dict:
    """Play batches of random matches until ``seconds`` have passed; count rounds and actions.

    With a ``target_score`` the games are whole matches and every finished round
    counts; ``with_mask`` also builds the (B, 70) legal mask before every action,
    as an RL environment would.
    """
    engine = Engine(rules, batch)
    rng = np.random.default_rng(seed)
    engine.reset(seed)  # warm-up (tables, allocations)
    engine.sample_legal(rng)
    rounds = actions = batches = 0
    spent = dict.fromkeys(("reset", "sample", "mask", "step"), 0.0)  # where the time goes
    clock = time.perf_counter
    start = clock()
    while True:
        t0 = clock()
        engine.reset(seed, game_ids=np.arange(batches * batch, (batches + 1) * batch))
        spent["reset"] += clock() - t0
        state = engine.state
        while not state.match_over.all():
            t0 = clock()
            if with_mask:
                engine.legal_mask  # noqa: B018 - built for its cost
            t1 = clock()
            action = engine.sample_legal(rng)
            t2 = clock()
            engine.step(action)
            t3 = clock()
            spent["mask"] += t1 - t0
            spent["sample"] += t2 - t1
            spent["step"] += t3 - t2
            actions += batch - int(np.count_nonzero(state.match_over))
            rounds += int(np.count_nonzero(state.round_over))
        batches += 1
        elapsed = clock() - start
        if elapsed >= seconds:
            break
    return {"rounds_per_s": rounds / elapsed, "actions_per_s": actions / elapsed,
            "rounds": rounds, "actions": actions, "seconds": elapsed,
            "share": {k: v / elapsed for k, v in spent.items()}}


def run(args: Args) -> list[dict]:
    rows = []

    def add(name: str, rules: Rules, batch: int, with_mask: bool = False) -> None:
        result = measure(rules, batch, args.seconds, args.seed, with_mask)
        row = {"rules": name, "players": rules.num_players, "batch": batch,
               "mask": with_mask, **result, "options": rules.to_dict()}
        rows.append(row)
        share = " ".join(f"{100 * v:4.0f}" for v in result["share"].values())
        print(f"{name:32s} {rules.num_players:>7d} {batch:>7d} "
              f"{row['rounds_per_s']:>12,.0f} {row['actions_per_s']:>12,.0f}   {share}",
              flush=True)

    print(f"{'rules':32s} {'players':>7s} {'batch':>7s} {'rounds/s':>12s} {'actions/s':>12s}"
          f"   % of time in: reset (deal), sample (random player), mask, step", flush=True)
    for players in args.players:
        for batch in args.batch_sizes:
            add("Smoorverliefd", Rules(num_players=players, target_score=None), batch)
    add("Smoorverliefd + (B, 70) mask", Rules(target_score=None), args.variant_batch, True)
    for name, options in VARIANTS.items():
        options = {"target_score": None, **options}
        add(name, Rules(**options), args.variant_batch)
    return rows


def check_args(args: Args) -> Path:
    """The output file, after a clear ``ValueError`` for any value that cannot make the
    table (before a minute of measuring): sizes below 1, an unplayable player count, a
    negative time, an output path that is a folder or lies below a missing folder."""
    for name in ("batch_sizes", "players"):
        if not getattr(args, name):
            raise ValueError(f"--{name.replace('_', '-')} needs at least one value")
    for batch in [*args.batch_sizes, args.variant_batch]:
        if batch < 1:
            raise ValueError(f"batch sizes must be at least 1, got {batch}")
    for players in args.players:
        Rules(num_players=players, target_score=None)  # a ValueError naming the range
    if not args.seconds >= 0:
        raise ValueError(f"--seconds must be >= 0, got {args.seconds}")
    out = Path(args.out)
    if out.is_dir():
        raise ValueError(f"--out {out} is a folder; name a file in it")
    if not out.parent.is_dir() and not out.parent.parent.is_dir():
        raise ValueError(f"the folder of --out {out} does not exist, nor its parent "
                         f"{out.parent.parent} (only the file's own folder is made)")
    return out


def main(argv: list[str] | None = None) -> int:
    """The ``smoor-throughput`` command; returns its exit status: 2 after a one-line error,
    130 after Ctrl-C (nothing written: an earlier ``--out`` file stays as it was)."""
    args = tyro.cli(Args, args=argv, prog=PROG, description=__doc__.split("\n\n")[0])
    try:
        out = check_args(args)
        rows = run(args)
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted: nothing written", file=sys.stderr)
        return 130
    except (ValueError, TypeError) as error:
        print(f"{PROG}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    base = [r for r in rows if r["rules"] == "Smoorverliefd" and r["players"] == 4]
    best = max(base, key=lambda r: r["rounds_per_s"]) if base else None
    summary = {
        "args": dataclasses.asdict(args),
        "command": " ".join([os.path.basename(sys.executable), "-m", "experiments.throughput",
                             *(sys.argv[1:] if argv is None else argv)]),
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__},
        "best_4_player": best and {k: best[k] for k in ("batch", "rounds_per_s",
                                                        "actions_per_s")},
        "rows": rows,
    }
    try:  # whole or not at all: a full disk keeps an earlier --out file as it was
        out.parent.mkdir(exist_ok=True)
        write_atomic(out, json.dumps(summary, indent=1))
    except OSError as error:
        print(f"{PROG}: error: cannot write {out}: {error.strerror or error}", file=sys.stderr)
        return 2
    if best:
        print(f"\nbest 4-player figure: {best['rounds_per_s']:,.0f} games/s "
              f"at batch {best['batch']}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
