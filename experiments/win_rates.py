"""Win-rate tournament: agent line-ups on duplicate deals, with 95% confidence intervals.

For every rule set and player count, the line-up fills the seats in order
(``agents[s % len(agents)]`` at seat ``s``). Each deal is played once for every
rotation of the line-up through the seats, so every agent plays every hand
from every seat: the luck of the deal cancels out of the comparisons. Deals
are single rounds, or whole matches to the target score with ``--matches``.

Reported per rule set, player count and agent: mean points per round (the
game's own units: Smoorverliefd points gained, higher is better; Hearts
penalty points, lower is better) with a t interval over deals (a deal's
rotations are averaged first, so the samples are independent), the round-win
rate (ties share: a shared win counts as a win) and in matches the match-win
rate, with Wilson intervals; and paired comparisons of agents on the same deals.

Work is cut into chunks of a fixed number of deals, each with its own random
streams, so the results are identical whatever the number of worker processes.
Each finished chunk is saved at once (``chunks/``, atomic writes); Ctrl-C stops
early and keeps every finished chunk, ``--resume`` continues such a run to the
same results, and an existing run is replaced only with ``--overwrite``. Every
agent spec is built before the folder is touched, so a typo in one (a name, an
option, a value, a checkpoint file) is a one-line error that neither blocks nor
replaces a run. Exit status: 0 done, 2 refused (one line: ``smoor-bench: error: ...``),
130 stopped by Ctrl-C (the finished chunks kept for ``--resume``).
``--backend ray [--address ADDR]`` plays the chunks as Ray tasks (the ray extra),
locally or on a cluster, to the same ``results.csv``.

    python -m experiments.win_rates --agents random greedy mc --players 3 4 5 \\
        --rule-sets smoorverliefd hearts --deals 48 --workers 2

writes ``results/<run name>/``: ``results.csv`` (one row per game, seat and
round), ``summary.json`` (command, versions, seed, the tables, which chunks and
files the folder holds), PNG plots and ``chunks/`` (one CSV per finished chunk).

``--rule-options`` sets rule flags on every rule set beyond its preset, e.g. Cupid's
Arrow with met Troef (``--rule-sets cupids_arrow --matches --rule-options
trump_hearts=true``); the deals are the preset's, the rows keep its name and the summary's
``args`` the options. A flag the preset sets or already has, one that makes another
preset, or an impossible combination is refused before anything is played.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import tyro

from agents import agent_names
from agents.base import build_agents
from agents.evaluation.duplicate import play_deals
from agents.evaluation.rule_options import check_rule_tables, parse_rule_options
from agents.evaluation.runs import (
    RunFolder,
    Unit,
    check_run_settings,
    command_line,
    play_run,
    wrote,
)
from agents.evaluation.tournament import format_table
from smoor_env import PRESETS

#: The named rule sets (``smoor_env.PRESETS``), as the command line's choices.
RuleSetName = Literal[tuple(PRESETS)]  # type: ignore[valid-type]
#: The command's name in its usage and error lines.
PROG = "smoor-bench"


@dataclass
class Args:
    agents: Annotated[list[str], tyro.conf.arg(help=(
        "line-up of agent specs, seat by seat (repeated to fill the table): "
        f"{', '.join(agent_names())}, with options as name:key=value,key=value "
        "(e.g. mc:worlds=16,rollout=greedy)"))] = field(
            default_factory=lambda: ["random", "greedy", "mc"])
    players: list[int] = field(default_factory=lambda: [3, 4, 5])
    """player counts to play"""
    rule_sets: list[RuleSetName] = field(default_factory=lambda: ["smoorverliefd", "hearts"])
    """rule sets to play (smoor_env.PRESETS; partners: 4 players; cupids_arrow: --matches)"""
    rule_options: list[str] = field(default_factory=list)
    """rule flags set on every rule set, as field=true or field=false (flags the agents see
    in the observation, not set by the preset), e.g. cupids_arrow with trump_hearts=true"""
    deals: int = 160
    """deals per rule set and player count (each played once per rotation of the line-up)"""
    matches: bool = False
    """play whole matches to the rule set's target score instead of single rounds"""
    seed: int = 0
    """seed of the deals and of the agents' random streams"""
    workers: int = 1
    """worker processes, or with --backend ray chunks in flight at once (results are
    identical for any number)"""
    chunk: int = 8
    """deals per unit of work (fixed, so that results do not depend on the workers)"""
    run_name: Annotated[str, tyro.conf.arg(
        help_behavior_hint="(default: win_rates__seed<seed>)")] = ""
    """name of the run's folder, in --out-dir"""
    out_dir: str = "results"
    """parent folder of the run's folder (made if missing, but not the folders above it)"""
    plots: bool = True
    """write PNG plots"""
    progress: bool = True
    """show a progress bar with the time left"""
    backend: Literal["local", "ray"] = "local"
    """where the chunks are played: this machine's processes, or Ray tasks (the ray extra)"""
    address: Annotated[str, tyro.conf.arg(
        help_behavior_hint="(default: start a local Ray with this machine's cores)")] = ""
    """with --backend ray: the cluster to join ("auto" or host:port)"""
    resume: bool = False
    """continue the interrupted run in the folder from its finished chunks (same settings)"""
    overwrite: bool = False
    """replace a run already in the folder (without it, an existing run is an error)"""


def play_chunk(args: Args, rule_set: str, players: int, chunk: int,
               made: dict[str, Any] | None = None) -> list[dict]:
    """Play deals ``chunk * args.chunk ..`` of one rule set and player count, every rotation
    (``made``: see ``play_deals``)."""
    deals = np.arange(chunk * args.chunk, min((chunk + 1) * args.chunk, args.deals))
    lineup = [args.agents[s % len(args.agents)] for s in range(players)]
    return play_deals(rule_set, players, args.matches, deals, [lineup] * len(deals), args.seed,
                      chunk, made, parse_rule_options(args.rule_options))


# ------------------------------------------------------------------ run folder
def check_args(args: Args) -> None:
    """A clear ``ValueError`` (``TypeError`` for a wrong type) for any value that cannot
    make a run, before anything is played or written."""
    check_run_settings(args, repeatable=("agents",))  # a line-up may repeat an agent
    if args.backend not in ("local", "ray"):
        raise ValueError(f"--backend must be local or ray, got {args.backend!r}")
    if args.backend == "ray" and importlib.util.find_spec("ray") is None:
        raise ValueError("--backend ray needs Ray: install the ray extra "
                         "(pip install 'smoor-env[ray]')")
    if args.address and args.backend != "ray":
        raise ValueError("--address names a Ray cluster: it needs --backend ray")
    check_rule_tables(args.rule_sets, args.players, args.matches,
                      parse_rule_options(args.rule_options))
    # Every agent is built once here, so that a typo in a spec (a name, an option, a value,
    # a checkpoint file) is refused before the run's folder is touched.
    build_agents(args.agents)


def plan(args: Args) -> list[Unit]:
    """Every unit of work of the run, in the order of ``results.csv``."""
    return [(rule_set, players, chunk) for rule_set in args.rule_sets
            for players in args.players for chunk in range(-(-args.deals // args.chunk))]


# ----------------------------------------------------------------------- run
def tournament(args: Args) -> tuple[Path, dict]:
    """Play the tournament (or the rest of an interrupted one) into its folder; returns the
    folder and its summary (``summary["interrupted"]``: stopped early by Ctrl-C).

    Raises:
        ValueError / TypeError: bad arguments (an agent spec that cannot be built among
            them), or a folder that cannot take the run (see ``RunFolder.open``), before
            the folder is touched or any game is played.
        KeyboardInterrupt: Ctrl-C while the outputs were being written (see ``play_run``).
    """
    check_args(args)
    run_folder = RunFolder(args, plan(args))
    specs = sorted(set(args.agents))
    summary = play_run(run_folder, functools.partial(play_chunk, args), "win rates",
                       backend=args.backend, address=args.address,
                       shared=lambda: build_agents(specs))
    print(format_table(summary))
    print(wrote(run_folder, summary))
    return run_folder.folder, summary


def run(args: Args) -> Path:
    """``tournament(args)``'s folder."""
    return tournament(args)[0]


def main(argv: list[str] | None = None) -> int:
    """The ``smoor-bench`` command; returns its exit status (see ``command_line``)."""
    return command_line(PROG, Args, tournament, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    sys.exit(main())
