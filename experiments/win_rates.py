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
Ctrl-C stops early and keeps every finished chunk.

    python -m experiments.win_rates --agents random greedy mc --players 3 4 5 \\
        --rule-sets smoorverliefd hearts --deals 48 --workers 2

writes ``results/<run name>/``: ``results.csv`` (one row per game, seat and
round), ``summary.json`` (command, versions, seed, the tables) and PNG plots.
"""

from __future__ import annotations

import concurrent.futures
import csv
import dataclasses
import functools
import json
import multiprocessing
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tyro


@dataclass
class Args:
    agents: list[str] = field(default_factory=lambda: ["random", "greedy", "mc"])
    """line-up of agent specs, seat by seat (repeated to fill the table); options as
    name:key=value,key=value (e.g. mc:worlds=16,rollout=greedy)"""
    players: list[int] = field(default_factory=lambda: [3, 4, 5])
    """player counts to play"""
    rule_sets: list[str] = field(default_factory=lambda: ["smoorverliefd", "hearts"])
    """rule sets to play (names of RULE_SETS)"""
    deals: int = 160
    """deals per rule set and player count (each played once per rotation of the line-up)"""
    matches: bool = False
    """play whole matches to the rule set's target score instead of single rounds"""
    seed: int = 0
    """seed of the deals and of the agents' random streams"""
    workers: int = 1
    """worker processes (results are identical for any number)"""
    chunk: int = 8
    """deals per unit of work (fixed, so that results do not depend on the workers)"""
    run_name: str = ""
    """name of the results folder (default: win_rates__seed<seed>)"""
    out_dir: str = "results"
    """parent folder of the run's folder"""
    plots: bool = True
    """write PNG plots"""
    progress: bool = True
    """show a progress bar with the time left"""


# Named rule sets: Rules options (num_players is added per run).
RULE_SETS: dict[str, dict[str, Any]] = {
    "smoorverliefd": {},
    "troef": {"trump_hearts": True},
    "bidding": {"bidding": True},
    "partners": {"partners": True},
    "pip": {"pip_scoring": True},
    "cupid": {"cupids_arrow": True},
    "hearts": {"game": "hearts"},
    "hearts-no-pass": {"game": "hearts", "passing": False},
}
CSV_COLUMNS = ("rule_set", "players", "deal", "rotation", "seat", "agent", "round", "points",
               "round_win", "match_win")


def parse_agent(spec: str) -> tuple[str, dict[str, Any]]:
    """``"mc:worlds=16,rollout=greedy"`` -> ("mc", {"worlds": 16, "rollout": "greedy"})."""
    name, _, rest = spec.partition(":")
    options: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"agent option {item!r} in {spec!r} must be key=value")
        for convert in (int, float):
            try:
                options[key] = convert(value)
                break
            except ValueError:
                continue
        else:
            options[key] = {"true": True, "false": False}.get(value.lower(), value)
    return name, options


def rules_for(rule_set: str, players: int, matches: bool):
    from smoor_env import Rules

    if rule_set not in RULE_SETS:
        raise ValueError(f"unknown rule set {rule_set!r}; known: {', '.join(RULE_SETS)}")
    options = dict(RULE_SETS[rule_set])
    if not matches:
        if options.get("cupids_arrow"):
            raise ValueError("the 'cupid' rule set needs whole matches (--matches)")
        options["target_score"] = None
    return Rules(num_players=players, **options)


def play_chunk(args: Args, rule_set: str, players: int, chunk: int) -> list[dict]:
    """Play deals ``chunk * args.chunk ..`` of one rule set and player count, every rotation."""
    deals = np.arange(chunk * args.chunk, min((chunk + 1) * args.chunk, args.deals))
    lineup = [args.agents[s % len(args.agents)] for s in range(players)]
    return play_deals(rule_set, players, args.matches, deals, [lineup] * len(deals), args.seed,
                      chunk)


def play_deals(rule_set: str, players: int, matches: bool, deals: np.ndarray,
               lineups: list[list[str]], seed: int, chunk: int) -> list[dict]:
    """Play every deal once per rotation of its own line-up through the seats.

    Args:
        deals: (D,) deal numbers; deal d has the same cards in every rotation and run.
        lineups: D line-ups of P agent specs, seat by seat in rotation 0; rotation r
            seats ``lineup[(seat + r) % P]`` at ``seat``.
        seed: seed of the deals; the agents' random stream is keyed by (seed, rule set,
            players, chunk), so a chunk plays the same wherever it runs.

    Returns:
        One row (``CSV_COLUMNS``) per game, seat and finished round, in play order.
    """
    from agents import make_agent
    from smoor_env import Engine
    from smoor_env.table import play_tables

    rules = rules_for(rule_set, players, matches)
    specs = sorted({spec for lineup in lineups for spec in lineup})
    agents = [make_agent(name, **options) for name, options in map(parse_agent, specs)]
    # (D, P) index into `agents` of each deal's line-up
    lineup_index = np.array([[specs.index(spec) for spec in lineup] for lineup in lineups])
    games = len(deals) * players
    deal_row = np.repeat(np.arange(len(deals)), players)  # (G,) game -> row of `deals`
    deal_of = np.asarray(deals)[deal_row]  # (G,) the same cards for every rotation
    rotation = np.tile(np.arange(players), len(deals))  # (G,)
    seats = np.arange(players)
    # (G, P) index into `agents` of the agent at each seat of each game.
    seat_agent = lineup_index[deal_row[:, None], (seats[None, :] + rotation[:, None]) % players]
    engine = Engine(rules, games)
    stream = zlib_seed(rule_set, players)
    engine.reset(seed + stream, game_ids=deal_of)
    rng = np.random.default_rng([seed, stream, chunk])
    st = engine.state
    rows: list[dict] = []

    def step(moves: np.ndarray, acting: np.ndarray) -> None:
        """Step, then add a row per seat of every round that ended."""
        engine.step(moves, active=acting)
        for g in np.flatnonzero(st.round_over):
            fin_round = int(st.finished["round_number"][g])
            for seat in seats:
                rows.append({
                    "rule_set": rule_set, "players": players, "deal": int(deal_of[g]),
                    "rotation": int(rotation[g]), "seat": int(seat),
                    "agent": specs[seat_agent[g, seat]], "round": fin_round,
                    "points": int(st.round_points[g, seat]),
                    "round_win": int(st.round_winners[g, seat]),
                    "match_win": int(st.winners[g, seat]) if st.match_over[g] else "",
                })

    play_tables(engine, agents, seat_agent, rng, step)
    return rows


def play_units(units: list[tuple], play: Callable[..., list[dict]], workers: int,
               progress: bool, desc: str,
               on_done: Callable[[tuple, list[dict]], None] | None = None,
               ) -> tuple[dict[tuple, list[dict]], bool]:
    """Run ``play(*unit)`` for every unit, in ``workers`` processes (forked) or in this one.

    ``on_done(unit, rows)`` is called in this process as each unit finishes (in any
    order). Ctrl-C stops early and keeps the finished units.

    Returns:
        (rows of each finished unit, whether the run was interrupted).
    """
    results: dict[tuple, list[dict]] = {}
    interrupted = False
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(units), unit="chunk", desc=desc, file=sys.stderr)

    def finished(unit: tuple, rows: list[dict]) -> None:
        results[unit] = rows
        if on_done:
            on_done(unit, rows)
        if bar:
            bar.update()

    try:
        if workers <= 1:
            for unit in units:
                finished(unit, play(*unit))
        else:
            context = multiprocessing.get_context("fork")
            with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
                futures = {pool.submit(play, *unit): unit for unit in units}
                try:
                    for future in concurrent.futures.as_completed(futures):
                        finished(futures[future], future.result())
                except KeyboardInterrupt:
                    for future in futures:
                        future.cancel()
                    raise
    except KeyboardInterrupt:
        interrupted = True
        print(f"\ninterrupted: keeping the {len(results)} of {len(units)} finished chunks",
              file=sys.stderr)
    finally:
        if bar:
            bar.close()
    return results, interrupted


def zlib_seed(rule_set: str, players: int) -> int:
    """A stable number per (rule set, player count), so their deals differ."""
    import zlib

    return zlib.crc32(f"{rule_set}/{players}".encode()) % 1_000_000


# ----------------------------------------------------------------- statistics
def mean_interval(samples: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t interval of independent samples (scipy.stats)."""
    from scipy import stats

    samples = np.asarray(samples, float)
    mean = float(samples.mean())
    if len(samples) < 2 or samples.std() == 0:
        return mean, mean, mean
    low, high = stats.t.interval(confidence, len(samples) - 1, loc=mean,
                                 scale=stats.sem(samples))
    return mean, float(low), float(high)


def rate_interval(successes: int, trials: int,
                  confidence: float = 0.95) -> tuple[float, float, float]:
    """Rate and Wilson score interval (scipy.stats.binomtest)."""
    from scipy import stats

    if trials == 0:
        return float("nan"), float("nan"), float("nan")
    ci = stats.binomtest(int(successes), int(trials)).proportion_ci(confidence, method="wilson")
    return successes / trials, float(ci.low), float(ci.high)


def summarise(rows: list[dict], matches: bool) -> dict:
    """Per (rule set, players, agent) table and paired comparisons, from the CSV rows."""
    table, pairs = [], []
    keys = sorted({(r["rule_set"], r["players"]) for r in rows})
    for rule_set, players in keys:
        sub = [r for r in rows if r["rule_set"] == rule_set and r["players"] == players]
        agents = sorted({r["agent"] for r in sub})
        deals = sorted({r["deal"] for r in sub})
        per_deal = {}  # agent -> (D,) mean points per round over its seats and rotations
        for agent in agents:
            mine = [r for r in sub if r["agent"] == agent]
            by_deal: dict[int, list[int]] = {}
            for r in mine:
                by_deal.setdefault(r["deal"], []).append(r["points"])
            per_deal[agent] = np.array([np.mean(by_deal[d]) for d in deals])
            mean, low, high = mean_interval(per_deal[agent])
            win, win_low, win_high = rate_interval(sum(r["round_win"] for r in mine), len(mine))
            row = {"rule_set": rule_set, "players": players, "agent": agent,
                   "deals": len(deals), "rounds": len(mine),
                   "mean_points": mean, "mean_points_ci": [low, high],
                   "round_win_rate": win, "round_win_ci": [win_low, win_high]}
            if matches:
                ends = [r for r in mine if r["match_win"] != ""]
                rate, low, high = rate_interval(sum(int(r["match_win"]) for r in ends), len(ends))
                row.update(match_win_rate=rate, match_win_ci=[low, high])
            table.append(row)
        for i, a in enumerate(agents):
            for b in agents[i + 1:]:
                diff = per_deal[a] - per_deal[b]
                mean, low, high = mean_interval(diff)
                pairs.append({"rule_set": rule_set, "players": players, "a": a, "b": b,
                              "mean_points_a_minus_b": mean, "ci": [low, high],
                              "deals_a_ahead": int((diff > 0).sum()),
                              "deals_b_ahead": int((diff < 0).sum())})
    return {"table": table, "pairs": pairs}


def format_table(summary: dict) -> str:
    lines = [f"{'rule set':15s} {'P':>2s} {'agent':24s} {'points/round':>22s} "
             f"{'round wins':>22s}"]
    for r in summary["table"]:
        low, high = r["mean_points_ci"]
        wl, wh = r["round_win_ci"]
        lines.append(f"{r['rule_set']:15s} {r['players']:>2d} {r['agent']:24s} "
                     f"{r['mean_points']:7.2f} [{low:6.2f}, {high:6.2f}] "
                     f"{r['round_win_rate']:7.1%} [{wl:5.1%}, {wh:5.1%}]")
    lines.append("")
    lines.append("paired on the same deals (mean points per round, a - b, 95% CI):")
    for p in summary["pairs"]:
        low, high = p["ci"]
        lines.append(f"{p['rule_set']:15s} {p['players']:>2d} {p['a']} - {p['b']}: "
                     f"{p['mean_points_a_minus_b']:+.2f} [{low:+.2f}, {high:+.2f}]")
    return "\n".join(lines)


# ---------------------------------------------------------------------- plots
#: Resolution of the PNG plots: enough on a screen, small in a repository or notebook.
PNG_DPI = 90


def save_figure(fig, png_path: Path) -> list[Path]:
    """Write the ``matplotlib.figure.Figure`` as PNG (for screens and notebooks) and SVG
    (vector, for papers) next to each other, and return both paths. The plots build
    ``Figure`` objects without pyplot, so they neither need nor change a backend (a
    notebook's inline plots keep working)."""
    svg_path = png_path.with_suffix(".svg")
    fig.savefig(png_path, dpi=PNG_DPI)
    fig.savefig(svg_path)
    return [png_path, svg_path]


def run_caption(summary: dict) -> str:
    """What a tournament's plots show: deals, line-up, seed and game length."""
    args = summary.get("args", {})
    deals = sorted({r["deals"] for r in summary["table"]})
    lineup = ", ".join(args.get("agents", sorted({r["agent"] for r in summary["table"]})))
    return (f"{'/'.join(map(str, deals))} duplicate deals per panel point, each played in every "
            f"seat rotation; line-up by seat (repeated to fill the table): {lineup}; "
            f"seed {args.get('seed', '?')}; "
            f"{'whole matches' if args.get('matches') else 'single rounds'}")


def plot_summary(summary: dict, folder: Path) -> list[Path]:
    """Round-win rate and mean points per round against the player count, one panel per
    rule set, with 95% error bars; the win-rate panels draw the chance rate 1/P. Each
    plot is written as PNG and SVG; returns the paths."""
    from matplotlib.figure import Figure

    written = []
    rule_sets = sorted({r["rule_set"] for r in summary["table"]})
    caption = run_caption(summary)
    for metric, ci, label, name in (
            ("round_win_rate", "round_win_ci", "round-win rate (ties share)", "win_rates.png"),
            ("mean_points", "mean_points_ci", "mean points per round", "points.png")):
        fig = Figure(figsize=(5 * len(rule_sets), 4.4))
        axes = fig.subplots(1, len(rule_sets), squeeze=False)
        for ax, rule_set in zip(axes[0], rule_sets, strict=True):
            rows = [r for r in summary["table"] if r["rule_set"] == rule_set]
            player_counts = sorted({r["players"] for r in rows})
            for agent in sorted({r["agent"] for r in rows}):
                mine = sorted((r for r in rows if r["agent"] == agent),
                              key=lambda r: r["players"])
                x = [r["players"] for r in mine]
                y = np.array([r[metric] for r in mine])
                err = np.abs(np.array([r[ci] for r in mine]).T - y)
                ax.errorbar(x, y, yerr=err, marker="o", capsize=4, label=agent)
            if metric == "round_win_rate":
                ax.plot(player_counts, [1 / p for p in player_counts], color="grey",
                        linestyle="--", label="chance (1/P)")
            units = " (penalty points: lower is better)" if rule_set.startswith("hearts") and \
                metric == "mean_points" else ""
            ax.set_title(f"{rule_set}{units}")
            ax.set_xlabel("players")
            ax.set_ylabel(label)
            ax.set_xticks(player_counts)
            ax.grid(alpha=0.3)
            ax.legend()
        fig.suptitle(f"{label}, 95% confidence intervals, duplicate deals")
        fig.text(0.5, 0.01, caption, ha="center", va="bottom", fontsize=7, wrap=True)
        fig.tight_layout(rect=(0, 0.06, 1, 1))
        written += save_figure(fig, folder / name)
    return written


def plot_throughput(json_path: Path, folder: Path) -> list[Path]:
    """Rounds/s against batch size per player count, from experiments.throughput's JSON
    (PNG and SVG; none without the JSON)."""
    if not json_path.exists():
        return []
    from matplotlib.figure import Figure

    data = json.loads(json_path.read_text())
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    base = [r for r in data["rows"] if r["rules"] == "Smoorverliefd"]
    for players in sorted({r["players"] for r in base}):
        mine = sorted((r for r in base if r["players"] == players), key=lambda r: r["batch"])
        ax.plot([r["batch"] for r in mine], [r["rounds_per_s"] for r in mine], marker="o",
                label=f"{players} players")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("batch size (games stepped together)")
    ax.set_ylabel("random games (rounds) per second")
    ax.set_title("Engine throughput, one thread, random legal play")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    return save_figure(fig, folder / "throughput.png")


def load_results(folder: str | Path) -> tuple[list[dict], dict]:
    """The CSV rows (typed) and the summary of a results folder (for notebooks)."""
    folder = Path(folder)
    with open(folder / "results.csv", newline="") as f:
        rows = [{**r, "players": int(r["players"]), "deal": int(r["deal"]),
                 "rotation": int(r["rotation"]), "seat": int(r["seat"]),
                 "round": int(r["round"]), "points": int(r["points"]),
                 "round_win": int(r["round_win"])} for r in csv.DictReader(f)]
    return rows, json.loads((folder / "summary.json").read_text())


# ----------------------------------------------------------------------- run
def run(args: Args) -> Path:
    for name, _ in map(parse_agent, args.agents):
        from agents import agent_names

        if name not in agent_names():
            raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(agent_names())}")
    for rule_set in args.rule_sets:
        for players in args.players:
            rules_for(rule_set, players, args.matches)  # fail early on a bad combination
    folder = Path(args.out_dir) / (args.run_name or f"win_rates__seed{args.seed}")
    folder.mkdir(parents=True, exist_ok=True)
    units = [(rule_set, players, chunk) for rule_set in args.rule_sets
             for players in args.players for chunk in range(-(-args.deals // args.chunk))]
    started = time.time()
    results, interrupted = play_units(units, functools.partial(play_chunk, args), args.workers,
                                      args.progress, "win rates")
    rows = [row for unit in units if unit in results for row in results[unit]]
    with open(folder / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    summary = summarise(rows, args.matches) if rows else {"table": [], "pairs": []}
    import matplotlib
    import numpy
    import scipy

    import smoor_env

    summary.update({
        "command": " ".join([Path(sys.executable).name, "-m", "experiments.win_rates",
                             *sys.argv[1:]]),
        "args": dataclasses.asdict(args), "seed": args.seed,
        "complete": not interrupted, "chunks_done": len(results), "chunks": len(units),
        "seconds": time.time() - started,
        "versions": {"smoor_env": smoor_env.__version__, "python": platform.python_version(),
                     "numpy": numpy.__version__, "scipy": scipy.__version__,
                     "matplotlib": matplotlib.__version__},
    })
    (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    print(format_table(summary))
    written = [folder / "results.csv", folder / "summary.json"]
    if args.plots and rows:
        written += plot_summary(summary, folder)
        written += plot_throughput(Path(args.out_dir) / "throughput.json", folder)
    print("\nwrote " + ", ".join(str(p) for p in written))
    return folder


def main(argv: list[str] | None = None) -> None:
    run(tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0]))


if __name__ == "__main__":
    main()
