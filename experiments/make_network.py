"""Make a shipped network trained on every rule set from scratch, and compare it with the
shipped file.

``one_network`` (``--network one_network``, the default: ``prior="auto"``'s network in
every rule set) is made in five steps, each the command
``agents/checkpoints/one_network.json`` records (``command_today``):

1. ``experiments.expert_iteration``, one generation: today's ``ismcts`` with the
   specialist priors (``prior=specialists``) labels 100,000 decisions of self-play in
   all 19 tables, and a fresh network with a 64-wide card head learns them (the warm
   start; about 20 minutes on one core, then about 12 of the generation's own
   measurement);
2. ``experiments.dmc``, 200 iterations of Deep Monte Carlo self-play from it (26
   million decisions, about 55 minutes on one core): ``dmc_all``;
3. DMC run 3 from the second step's network, its 2,000-iteration schedule stopped after
   iteration 1,000 (``--stop-at``; 130 million decisions, 3.5 to 5.5 hours on one
   core): ``dmc3_it1000``;
4. DMC run 4 from the third step's network grown two layers (``--deepen 2``), 1,000
   iterations at half run 3's rate, a second process playing each round ahead
   (``--actor``; 130 million decisions, about 3.6 hours of both cores): ``dmc4_it1000``;
5. ``experiments.distill_table --teacher mc`` from it: in every table the specialist
   ``ppo_smoorverliefd`` (plain Smoorverliefd) or ``mc`` (elsewhere) plays about 100,000
   decisions of self-play, and the fourth step's network learns their choices (about 40
   minutes of both cores; the fit, PyTorch on two threads, does not repeat its bits).

The three earlier networks (``agents.ppo.EARLIER_NETWORKS``) ship too; ``--network
dmc_all`` makes the first two steps only, ``--network dmc3_it1000`` the first three,
``--network dmc4_it1000`` the first four.

Then the network of the last step is compared, weight by weight, with the shipped file:
the same weights (exit status 0), or the largest difference (1). Given again after a
stop, each step goes on from its files (expert iteration from its labels and checkpoint,
DMC from its last saved state; the distillation is made again whole); a finished step
says so.

    python -m experiments.make_network                          # into runs/one_network
    python -m experiments.make_network --network dmc3_it1000    # into runs/dmc3_it1000
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agents.evaluation.runs import checked_command
from agents.ppo import CHECKPOINT_DIR, SHIPPED_NETWORK, SHIPPED_NETWORKS, read_checkpoint

#: The command's name in its usage and error lines.
PROG = "python -m experiments.make_network"
#: How many of the steps (``steps``) make each shipped network: each is the last step's
#: network of its own steps.
STEPS = {"dmc_all": 2, "dmc3_it1000": 3, "dmc4_it1000": 4, SHIPPED_NETWORK: 5}


@dataclass
class Args:
    network: str = SHIPPED_NETWORK
    """the shipped network to make: 'one_network' (five steps), 'dmc_all' (the first
    two), 'dmc3_it1000' (the first three) or 'dmc4_it1000' (the first four)"""
    out_dir: str = ""
    """the folder of the steps (ei/, dmc/, dmc3/, dmc4/ and table/ in it; '':
    runs/<network>);
    made if missing"""
    progress: bool = True
    """progress bars"""

    def check(self) -> None:
        if self.network not in SHIPPED_NETWORKS:
            raise ValueError(f"--network must be one of {', '.join(SHIPPED_NETWORKS)}, got "
                             f"{self.network!r}")
        if self.folder().is_file():
            raise ValueError(f"--out-dir {self.folder()} is a file")

    def folder(self) -> Path:
        """The folder of the steps."""
        return Path(self.out_dir or f"runs/{self.network}")


def steps(args: Args) -> list[tuple[str, list[str]]]:
    """The steps that make ``args.network``: (module, argv) each."""
    folder = args.folder()
    progress = [] if args.progress else ["--no-progress"]
    made = [("expert_iteration", ["--out-dir", str(folder / "ei"), "--generations", "1",
                                  "--decisions", "100000", "--init", "", "--card-head", "64",
                                  "--teacher", "ismcts:prior=specialists", *progress]),
            ("dmc", ["--init", str(folder / "ei" / "gen1.pt"), "--iterations", "200",
                     "--targets", "rest", "--out-dir", str(folder / "dmc"), *progress]),
            ("dmc", ["--init", str(folder / "dmc" / "it200.pt"), "--targets", "rest",
                     "--learning-rate", "1e-4", "--iterations", "2000", "--seed", "920",
                     "--save-every", "50", "--stop-at", "1000", "--out-dir",
                     str(folder / "dmc3"), *progress]),
            ("dmc", ["--init", str(folder / "dmc3" / "it1000.pt"), "--deepen", "2",
                     "--targets", "rest", "--learning-rate", "5e-5", "--iterations", "1000",
                     "--seed", "940", "--save-every", "50", "--actor", "--out-dir",
                     str(folder / "dmc4"), *progress]),
            ("distill_table", ["--init", str(folder / "dmc4" / "it1000.pt"), "--teacher", "mc",
                               "--epochs", "4", "--learning-rate", "3e-4", "--out-dir",
                               str(folder / "table"), *progress])]
    return made[:STEPS[args.network]]


def made_file(args: Args) -> Path:
    """The checkpoint the last step writes (a DMC run's last, or the distilled network):
    the network ``steps`` make."""
    module, argv = steps(args)[-1]
    if module == "distill_table":
        return Path(argv[argv.index("--out-dir") + 1]) / "network.pt"
    last = "--stop-at" if "--stop-at" in argv else "--iterations"
    return Path(argv[argv.index("--out-dir") + 1]) / f"it{argv[argv.index(last) + 1]}.pt"


def compare(made: Path, shipped: Path) -> float:
    """The largest absolute difference between the two checkpoints' weights (0.0: the
    same); a ValueError if their layers differ."""
    a, b = read_checkpoint(made)["model"], read_checkpoint(shipped)["model"]
    if sorted(a) != sorted(b) or any(a[k].shape != b[k].shape for k in a):
        raise ValueError(f"{made} and {shipped} have different layers")
    return max(float(np.max(np.abs(a[k].astype(np.float64) - b[k].astype(np.float64))))
               for k in a)


def run(args: Args) -> float:
    import importlib

    for module, argv in steps(args):
        print(f"==> python -m experiments.{module} {' '.join(argv)}", flush=True)
        saved, sys.argv = sys.argv, [f"experiments/{module}.py", *argv]  # as if typed:
        try:  # a step's summary records its own command line
            status = importlib.import_module(f"experiments.{module}").main(argv)
        finally:
            sys.argv = saved
        if status == 130:
            raise KeyboardInterrupt
        if status:
            raise ValueError(f"experiments.{module} stopped with exit status {status}")
    made = made_file(args)
    shipped = CHECKPOINT_DIR / f"{args.network}.pt"
    difference = compare(made, shipped)
    print(f"{made}: " + ("the same weights as the shipped " if difference == 0.0 else
                         f"differs from the shipped (largest difference {difference:.3g}): ")
          + str(shipped))
    return difference


def main(argv: list[str] | None = None) -> int:
    """The command; its exit status: 0 when the weights are the shipped ones, 1 when they
    differ, 2 and one line for settings it refuses, 130 when stopped."""
    found: list[float] = []
    status = checked_command(PROG, Args, lambda args: found.append(run(args)),
                             __doc__.split("\n\n")[0], argv,
                             kept="each step goes on from its files when given again")
    return 1 if status == 0 and found[0] != 0.0 else status


if __name__ == "__main__":
    sys.exit(main())
