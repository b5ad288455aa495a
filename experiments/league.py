"""League: rate any number of agents on duplicate deals (openskill, Plackett-Luce).

For every rule set and player count P, each deal seats a line-up of P different
agents drawn from the league, and is played once for every rotation of that
line-up through the seats (the duplicate-deal machinery of
``experiments.win_rates``: same chunks, seeds and workers). Line-ups are balanced:
the deals come in rounds of N (the number of agents); each round shuffles the N
agents into a random circle and seats, on its N deals, the N windows of P
neighbours around it. Over every whole round each agent plays exactly P of the N
deals, with random neighbours and in every seat.

Each deal is one rated game: the agents are ranked by their points per round on
that deal averaged over its rotations (Hearts' penalty points: fewer is better;
equal points tie), and the ratings are updated with the Plackett-Luce model of
``openskill``, deal by deal in deal order, separately per rule set and player
count. A rating is ``mu`` with its uncertainty ``sigma``; the table ranks by the
conservative ``ordinal = mu - 3 sigma`` (openskill's default skill estimate).

    python -m experiments.league --agents random greedy mc mc:worlds=32 ppo \\
        --players 3 4 5 --rule-sets smoorverliefd hearts --deals 120 --workers 2

(the defaults) writes ``results/<run name>/``: ``ratings.csv`` (one row per rule
set, player count and agent), ``games.csv`` (one row per game, seat and round, as
``results.csv`` of the win-rate tournament), ``league.json`` (command, versions,
arguments, ratings, and which chunks and files the folder holds), ``ratings.png``
/ ``ratings.svg``, and ``chunks/`` (every finished chunk). The folder is the
tournament's run folder (``agents.evaluation.runs.RunFolder``): Ctrl-C keeps the
finished chunks, ``--resume`` plays only what is missing, and an existing league
is replaced only with ``--overwrite``. The results do not depend on ``--workers``.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import numpy as np
import tyro

from agents import agent_names
from agents.base import build_agents
from agents.evaluation.duplicate import play_deals, zlib_seed
from agents.evaluation.plots import save_figure
from agents.evaluation.runs import RunFolder, check_run_settings, command_line, play_run, wrote
from experiments.win_rates import RuleSetName
from smoor_env import preset

#: The command's name in its usage and error lines.
PROG = "smoor-league"


@dataclass
class Args:
    agents: Annotated[list[str], tyro.conf.arg(help=(
        "the league's agent specs, at least as many as the largest table: "
        f"{', '.join(agent_names())}, with options as name:key=value,key=value "
        "(e.g. mc:worlds=16)"))] = field(
            default_factory=lambda: ["random", "greedy", "mc", "mc:worlds=32", "ppo"])
    players: list[int] = field(default_factory=lambda: [3, 4, 5])
    """player counts (table sizes) to play"""
    rule_sets: list[RuleSetName] = field(default_factory=lambda: ["smoorverliefd", "hearts"])
    """rule sets to play (smoor_env.PRESETS; partners: 4 players; cupids_arrow: --matches)"""
    deals: int = 120
    """deals per rule set and player count (each played once per rotation of its line-up);
    a multiple of the number of agents balances the line-ups exactly"""
    matches: bool = False
    """play whole matches to the rule set's target score instead of single rounds"""
    seed: int = 0
    """seed of the line-ups, the deals and the agents' random streams"""
    workers: int = 1
    """worker processes (results are identical for any number)"""
    chunk: int = 8
    """deals per unit of work (fixed, so that results do not depend on the workers)"""
    run_name: Annotated[str, tyro.conf.arg(
        help_behavior_hint="(default: league__seed<seed>)")] = ""
    """name of the run's folder, in --out-dir"""
    out_dir: str = "results"
    """parent folder of the run's folder (made if missing, but not the folders above it)"""
    resume: bool = False
    """continue the stopped league in the folder from its finished chunks (same settings)"""
    overwrite: bool = False
    """replace a league already in the folder (without it, an existing league is an error)"""
    plots: bool = True
    """write the rating plot (PNG and SVG)"""
    progress: bool = True
    """show a progress bar with the time left"""


#: Random stream of the line-ups (the deals' and agents' streams are win_rates').
LINEUP_STREAM = 7
RATING_COLUMNS = ("rule_set", "players", "rank", "agent", "mu", "sigma", "ordinal", "deals",
                  "mean_points")


def lineups(agents: list[str], players: int, deals: int, seed: int,
            rule_set: str) -> list[list[str]]:
    """Balanced random line-ups: ``deals`` lists of ``players`` different agent specs.

    Deals come in rounds of N = len(agents): a round places the agents on a random
    circle and its deals seat the N windows of ``players`` neighbours, so over each
    whole round every agent sits at exactly ``players`` of the N tables.
    """
    n = len(agents)
    rng = np.random.default_rng([seed, zlib_seed(rule_set, players), LINEUP_STREAM])
    rounds = -(-deals // n)
    circles = np.array([rng.permutation(n) for _ in range(rounds)])  # (R, N) agent indices
    windows = (np.arange(n)[:, None] + np.arange(players)[None, :]) % n  # (N, P) positions
    tables = circles[:, windows].reshape(rounds * n, players)[:deals]  # (D, P) agent indices
    return [[agents[i] for i in table] for table in tables]


def play_league_chunk(args: Args, rule_set: str, players: int, chunk: int) -> list[dict]:
    """Deals ``chunk * args.chunk ..`` of one rule set and player count, each with its
    line-up, in every rotation (rows as ``agents.evaluation.duplicate.CSV_COLUMNS``)."""
    deals = np.arange(chunk * args.chunk, min((chunk + 1) * args.chunk, args.deals))
    table = lineups(args.agents, players, args.deals, args.seed, rule_set)
    return play_deals(rule_set, players, args.matches, deals, [table[d] for d in deals],
                      args.seed, chunk)


# -------------------------------------------------------------------- ratings
def deal_scores(rows: list[dict]) -> dict[int, dict[str, float]]:
    """deal -> {agent: mean points per round over the deal's rotations and rounds}."""
    sums: dict[int, dict[str, list[float]]] = {}
    for r in rows:
        sums.setdefault(r["deal"], {}).setdefault(r["agent"], []).append(r["points"])
    return {deal: {agent: float(np.mean(points)) for agent, points in by_agent.items()}
            for deal, by_agent in sorted(sums.items())}


def rate(rows: list[dict], agents: list[str], lower_is_better: bool) -> list[dict]:
    """Plackett-Luce ratings of one rule set and player count, updated deal by deal.

    Returns one dict per agent (``RATING_COLUMNS`` without rule set and players),
    best first by ``ordinal``.
    """
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = {agent: model.rating(name=agent) for agent in agents}
    points: dict[str, list[float]] = {agent: [] for agent in agents}
    for by_agent in deal_scores(rows).values():
        seated = sorted(by_agent)
        sign = -1.0 if lower_is_better else 1.0
        updated = model.rate([[ratings[a]] for a in seated],
                             scores=[sign * by_agent[a] for a in seated])
        for agent, (rating,) in zip(seated, updated, strict=True):
            ratings[agent] = rating
            points[agent].append(by_agent[agent])
    table = [{"agent": agent, "mu": ratings[agent].mu, "sigma": ratings[agent].sigma,
              "ordinal": ratings[agent].ordinal(), "deals": len(points[agent]),
              "mean_points": float(np.mean(points[agent])) if points[agent] else float("nan")}
             for agent in agents]
    table.sort(key=lambda r: -r["ordinal"])
    for rank, row in enumerate(table, 1):
        row["rank"] = rank
    return table


def league_table(rows: list[dict], args: Args) -> list[dict]:
    """Ratings (``RATING_COLUMNS``) of every rule set and player count played."""
    table = []
    for rule_set in args.rule_sets:
        lower = preset(rule_set, args.players[0], args.matches).game == "hearts"
        for players in args.players:
            mine = [r for r in rows if r["rule_set"] == rule_set and r["players"] == players]
            if mine:
                table += [{"rule_set": rule_set, "players": players, **r}
                          for r in rate(mine, args.agents, lower)]
    return table


def format_ratings(table: list[dict]) -> str:
    lines = [f"{'rule set':15s} {'P':>2s} {'#':>2s} {'agent':24s} {'mu':>6s} {'sigma':>6s} "
             f"{'ordinal':>8s} {'deals':>6s} {'points/round':>12s}"]
    for r in table:
        lines.append(f"{r['rule_set']:15s} {r['players']:>2d} {r['rank']:>2d} {r['agent']:24s} "
                     f"{r['mu']:6.2f} {r['sigma']:6.2f} {r['ordinal']:8.2f} {r['deals']:>6d} "
                     f"{r['mean_points']:12.2f}")
    return "\n".join(lines)


def plot_ratings(table: list[dict], args: Args, folder: Path) -> list[Path]:
    """mu +- 2 sigma of every agent, one panel per rule set, one marker per player count
    (PNG and SVG); returns the paths."""
    from matplotlib.figure import Figure

    rule_sets = [s for s in args.rule_sets if any(r["rule_set"] == s for r in table)]
    fig = Figure(figsize=(5 * len(rule_sets), 1.6 + 0.45 * len(args.agents)))
    axes = fig.subplots(1, len(rule_sets), squeeze=False, sharey=True)
    # agents top to bottom by their mean ordinal over everything played
    order = sorted(args.agents, key=lambda a: -np.mean([r["ordinal"] for r in table
                                                        if r["agent"] == a]))
    y = {agent: len(order) - 1 - i for i, agent in enumerate(order)}
    offsets = np.linspace(-0.25, 0.25, len(args.players)) if len(args.players) > 1 else [0.0]
    for ax, rule_set in zip(axes[0], rule_sets, strict=True):
        for players, offset in zip(args.players, offsets, strict=True):
            mine = [r for r in table if r["rule_set"] == rule_set and r["players"] == players]
            if mine:
                ax.errorbar([r["mu"] for r in mine], [y[r["agent"]] + offset for r in mine],
                            xerr=[2 * r["sigma"] for r in mine], fmt="o", capsize=3,
                            label=f"{players} players")
        ax.set_title(rule_set)
        ax.set_xlabel("rating mu +- 2 sigma (openskill Plackett-Luce)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_yticks(list(y.values()), list(y))
    deals = sorted({r["deals"] for r in table})
    fig.suptitle("League ratings on duplicate deals")
    fig.text(0.5, 0.01, f"{args.deals} deals per rule set and player count, each in every seat "
             f"rotation; balanced random line-ups of {len(args.agents)} agents (each agent "
             f"at {min(deals)}-{max(deals)} deals); seed {args.seed}; "
             f"{'whole matches' if args.matches else 'single rounds'}",
             ha="center", va="bottom", fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return save_figure(fig, folder / "ratings.png")


# ----------------------------------------------------------------------- run
def check_args(args: Args) -> None:
    """A clear ``ValueError`` (``TypeError`` for a wrong type) for any value that cannot
    make a league, before its folder is touched or anything is played."""
    check_run_settings(args)
    too_big = [p for p in args.players if p > len(args.agents)]
    if too_big:
        raise ValueError(f"a table of {max(too_big)} players needs at least {max(too_big)} "
                         f"different agents; --agents lists {len(args.agents)}: add agents "
                         f"or leave out --players {' '.join(map(str, too_big))}")
    build_agents(args.agents)  # unknown names, options or files, missing extras


class LeagueFolder(RunFolder):
    """The league's run folder: the tournament's (chunks, atomic writes, a summary that
    lists them, ``--resume`` / ``--overwrite``) with the league's files and tables."""

    default_name = "league"
    command_module = "experiments.league"
    results_file = "games.csv"
    summary_file = "league.json"

    def empty_tables(self) -> dict:
        return {"ratings": []}

    def tables(self, rows: list[dict]) -> dict:
        return {"rating": "openskill PlackettLuce, one game per deal (points averaged over "
                          "rotations)", "ratings": league_table(rows, self.args)}

    def outputs(self, summary: dict, drafts: Path) -> list[Path]:
        """``ratings.csv``, and the rating plot (PNG and SVG) with ``--plots``."""
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=RATING_COLUMNS)
        writer.writeheader()
        writer.writerows(summary["ratings"])
        (drafts / "ratings.csv").write_text(buffer.getvalue(), newline="")
        drawn = [drafts / "ratings.csv"]
        if self.args.plots and summary["ratings"]:
            drawn += plot_ratings(summary["ratings"], self.args, drafts)
        return drawn

    def versions(self) -> dict[str, str]:
        import openskill

        return {**super().versions(), "openskill": openskill.__version__}


def plan(args: Args) -> list[tuple[str, int, int]]:
    """Every unit of work of the league, in the order of ``games.csv``."""
    return [(rule_set, players, chunk) for rule_set in args.rule_sets
            for players in args.players for chunk in range(-(-args.deals // args.chunk))]


def league(args: Args) -> tuple[Path, dict]:
    """Play the league (or the rest of a stopped one, with ``resume``) into its folder;
    returns the folder and its summary (``summary["interrupted"]``: stopped by Ctrl-C).

    Raises:
        ValueError / TypeError: bad arguments (an agent spec that cannot be built among
            them) or a folder that cannot take the league, before the folder is touched
            or any game is played.
        KeyboardInterrupt: Ctrl-C while the outputs were being written.
    """
    check_args(args)
    run_folder = LeagueFolder(args, plan(args))
    summary = play_run(run_folder, functools.partial(play_league_chunk, args), "league")
    print(format_ratings(summary["ratings"]))
    print(wrote(run_folder, summary))
    return run_folder.folder, summary


def run(args: Args) -> Path:
    """``league(args)``'s folder."""
    return league(args)[0]


def load_league(folder: str | Path) -> tuple[list[dict], dict]:
    """The ratings table and the summary of a league folder (for notebooks)."""
    summary = json.loads((Path(folder) / "league.json").read_text())
    return summary["ratings"], summary


def main(argv: list[str] | None = None) -> int:
    """The ``smoor-league`` command; returns its exit status (see ``command_line``)."""
    return command_line(PROG, Args, league, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    sys.exit(main())
