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

    python -m experiments.league --agents random greedy mc ppo --players 3 4 5 \\
        --rule-sets smoorverliefd hearts --deals 120 --workers 2

writes ``results/<run name>/``: ``ratings.csv`` (one row per rule set, player
count and agent), ``games.csv`` (one row per game, seat and round, as
``results.csv`` of the win-rate tournament), ``league.json`` (command, versions,
arguments, ratings), ``ratings.png`` / ``ratings.svg``, and ``chunks/`` (every
finished chunk, so that ``--resume`` plays only what is missing). The results do
not depend on ``--workers``.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tyro

from agents.evaluation.backends import play_units
from agents.evaluation.duplicate import CSV_COLUMNS, play_deals, zlib_seed
from agents.evaluation.plots import save_figure
from smoor_env import preset


@dataclass
class Args:
    agents: list[str] = field(default_factory=lambda: ["random", "greedy", "mc"])
    """the league's agent specs (at least as many as the largest table), options as
    name:key=value,key=value (e.g. mc:worlds=16)"""
    players: list[int] = field(default_factory=lambda: [3, 4, 5])
    """player counts (table sizes) to play"""
    rule_sets: list[str] = field(default_factory=lambda: ["smoorverliefd", "hearts"])
    """rule sets to play (names of smoor_env.PRESETS)"""
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
    run_name: str = ""
    """name of the results folder (default: league__seed<seed>)"""
    out_dir: str = "results"
    """parent folder of the run's folder"""
    resume: bool = False
    """continue the run in an existing folder: play only the chunks it lacks"""
    plots: bool = True
    """write the rating plot (PNG and SVG)"""
    progress: bool = True
    """show a progress bar with the time left"""


#: Args fields that define what a run plays: --resume refuses a folder made with others.
RUN_FIELDS = ("agents", "players", "rule_sets", "deals", "matches", "seed", "chunk")
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
    """Refuse a league that cannot be played, before playing anything."""
    from agents import make_agent, parse_agent

    if len(set(args.agents)) != len(args.agents):
        raise ValueError(f"the league lists an agent twice: {args.agents}")
    if args.deals < 1 or args.chunk < 1:
        raise ValueError(f"--deals and --chunk must be at least 1, got {args.deals}, "
                         f"{args.chunk}")
    too_big = [p for p in args.players if p > len(args.agents)]
    if too_big:
        raise ValueError(f"a table of {max(too_big)} players needs at least {max(too_big)} "
                         f"different agents; the league has {len(args.agents)}")
    for rule_set in args.rule_sets:
        for players in args.players:
            preset(rule_set, players, args.matches)
    for spec in args.agents:  # unknown names, bad options, missing extras
        name, options = parse_agent(spec)
        try:
            make_agent(name, **options)
        except TypeError as error:
            raise ValueError(f"agent {spec!r}: {error}") from error


def chunk_path(folder: Path, unit: tuple) -> Path:
    rule_set, players, chunk = unit
    return folder / "chunks" / f"{rule_set}_{players}p_{chunk:05d}.json"


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and rename, so a stopped run leaves no half file."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def run(args: Args) -> Path:
    """Play (or finish, with ``resume``) the league; returns its folder."""
    check_args(args)
    folder = Path(args.out_dir) / (args.run_name or f"league__seed{args.seed}")
    played = {name: getattr(args, name) for name in RUN_FIELDS}
    args_file = folder / "args.json"
    if args_file.exists():
        if not args.resume:
            raise FileExistsError(f"{folder} holds a league already: add --resume to finish "
                                  f"it, or choose another --run-name")
        before = json.loads(args_file.read_text())
        if before != played:
            changed = sorted(k for k in played if before.get(k) != played[k])
            raise ValueError(f"--resume: {folder} was played with other {', '.join(changed)}: "
                             f"{ {k: before.get(k) for k in changed} }")
    (folder / "chunks").mkdir(parents=True, exist_ok=True)
    write_atomic(args_file, json.dumps(played, indent=1))

    units = [(rule_set, players, chunk) for rule_set in args.rule_sets
             for players in args.players for chunk in range(-(-args.deals // args.chunk))]
    results = {unit: json.loads(chunk_path(folder, unit).read_text()) for unit in units
               if chunk_path(folder, unit).exists()}
    todo = [unit for unit in units if unit not in results]
    if results:
        print(f"resuming: {len(results)} of {len(units)} chunks already played",
              file=sys.stderr)
    started = time.time()
    new, interrupted = play_units(
        todo, functools.partial(play_league_chunk, args), args.workers, args.progress,
        "league", on_done=lambda unit, rows: write_atomic(chunk_path(folder, unit),
                                                          json.dumps(rows)))
    results.update(new)
    rows = [row for unit in units if unit in results for row in results[unit]]
    with open(folder / "games.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    table = league_table(rows, args)
    with open(folder / "ratings.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=RATING_COLUMNS)
        writer.writeheader()
        writer.writerows(table)

    import matplotlib
    import openskill

    import smoor_env

    summary = {
        "command": " ".join([Path(sys.executable).name, "-m", "experiments.league",
                             *sys.argv[1:]]),
        "args": dataclasses.asdict(args), "complete": not interrupted,
        "chunks_done": len(results), "chunks": len(units), "seconds": time.time() - started,
        "rating": "openskill PlackettLuce, one game per deal (points averaged over rotations)",
        "versions": {"smoor_env": smoor_env.__version__, "python": platform.python_version(),
                     "numpy": np.__version__, "openskill": openskill.__version__,
                     "matplotlib": matplotlib.__version__},
        "ratings": table,
    }
    (folder / "league.json").write_text(json.dumps(summary, indent=1))
    print(format_ratings(table))
    written = [folder / "ratings.csv", folder / "games.csv", folder / "league.json"]
    if args.plots and table:
        written += plot_ratings(table, args, folder)
    print("\nwrote " + ", ".join(str(p) for p in written))
    return folder


def load_league(folder: str | Path) -> tuple[list[dict], dict]:
    """The ratings table and the summary of a league folder (for notebooks)."""
    summary = json.loads((Path(folder) / "league.json").read_text())
    return summary["ratings"], summary


def main(argv: list[str] | None = None) -> None:
    run(tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0]))


if __name__ == "__main__":
    main()
