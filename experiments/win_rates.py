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
same results, and an existing run is replaced only with ``--overwrite``.
``--backend ray [--address ADDR]`` plays the chunks as Ray tasks (the ray extra),
locally or on a cluster, to the same ``results.csv``.

    python -m experiments.win_rates --agents random greedy mc --players 3 4 5 \\
        --rule-sets smoorverliefd hearts --deals 48 --workers 2

writes ``results/<run name>/``: ``results.csv`` (one row per game, seat and
round), ``summary.json`` (command, versions, seed, the tables, which chunks and
files the folder holds), PNG plots and ``chunks/`` (one CSV per finished chunk).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import functools
import io
import json
import multiprocessing
import os
import platform
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

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
    """worker processes, or with --backend ray chunks in flight at once (results are
    identical for any number)"""
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
    backend: Literal["local", "ray"] = "local"
    """where the chunks are played: this machine's processes, or Ray tasks (the ray extra)"""
    address: str = ""
    """with --backend ray: the cluster to join ("auto" or host:port); default: start a local
    Ray with this machine's cores"""
    resume: bool = False
    """continue the interrupted run in the folder from its finished chunks (same settings)"""
    overwrite: bool = False
    """replace a run already in the folder (without it, an existing run is an error)"""


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


def play_chunk(args: Args, rule_set: str, players: int, chunk: int,
               made: dict[str, Any] | None = None) -> list[dict]:
    """Play deals ``chunk * args.chunk ..`` of one rule set and player count, every rotation
    (``made``: see ``play_deals``)."""
    deals = np.arange(chunk * args.chunk, min((chunk + 1) * args.chunk, args.deals))
    lineup = [args.agents[s % len(args.agents)] for s in range(players)]
    return play_deals(rule_set, players, args.matches, deals, [lineup] * len(deals), args.seed,
                      chunk, made)


def play_deals(rule_set: str, players: int, matches: bool, deals: np.ndarray,
               lineups: list[list[str]], seed: int, chunk: int,
               made: dict[str, Any] | None = None) -> list[dict]:
    """Play every deal once per rotation of its own line-up through the seats.

    Args:
        deals: (D,) deal numbers; deal d has the same cards in every rotation and run.
        lineups: D line-ups of P agent specs, seat by seat in rotation 0; rotation r
            seats ``lineup[(seat + r) % P]`` at ``seat``.
        seed: seed of the deals; the agents' random stream is keyed by (seed, rule set,
            players, chunk), so a chunk plays the same wherever it runs.
        made: agents already built, by spec (the Ray backend builds them once and puts
            them in the object store); the others are made here from their specs.

    Returns:
        One row (``CSV_COLUMNS``) per game, seat and finished round, in play order.
    """
    from agents import build_agent
    from smoor_env import Engine
    from smoor_env.envs.agent_loop import play_agents

    rules = rules_for(rule_set, players, matches)
    specs = sorted({spec for lineup in lineups for spec in lineup})
    made = made or {}
    agents = [made[spec] if spec in made else build_agent(spec) for spec in specs]
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

    play_agents(engine, agents, seat_agent, rng, step)
    return rows


class WorkerInterrupted(Exception):
    """A KeyboardInterrupt in a worker process, carried back to the main process (a pool
    worker passes on only ``Exception``s: a bare KeyboardInterrupt would kill it and
    leave its task unanswered forever)."""


#: ``play`` of the forked worker processes: set before they fork, so it need not pickle.
_worker_play: Callable[..., list[dict]] | None = None


def _play_in_worker(unit: tuple) -> tuple[tuple, list[dict]]:
    try:
        return unit, _worker_play(*unit)
    except KeyboardInterrupt:
        raise WorkerInterrupted(f"unit {unit} interrupted") from None


def finished_units(units: list[tuple], play: Callable[..., list[dict]], workers: int,
                   backend: str = "local", address: str = "",
                   shared: Callable[[], dict[str, Any]] | None = None,
                   ) -> Iterator[tuple[tuple, list[dict]]]:
    """``(unit, play(*unit))`` of every unit, in the order they finish: in this process,
    in ``workers`` forked processes, or as Ray tasks (``backend="ray"``, ``workers`` at a
    time; see ``finished_on_ray``). Closing the iterator (Ctrl-C) stops the workers at once."""
    global _worker_play
    if backend == "ray":
        yield from finished_on_ray(units, play, workers, address, shared)
        return
    if workers == 1 or len(units) <= 1:
        for unit in units:
            yield unit, play(*unit)
        return
    # Workers ignore SIGINT: Ctrl-C reaches this process, which stops them (terminate).
    _worker_play = play
    pool = multiprocessing.get_context("fork").Pool(min(workers, len(units)),
                                                     initializer=signal.signal,
                                                     initargs=(signal.SIGINT, signal.SIG_IGN))
    try:
        yield from pool.imap_unordered(_play_in_worker, units)
    except WorkerInterrupted:
        raise KeyboardInterrupt from None
    finally:
        pool.terminate()
        pool.join()
        _worker_play = None


def finished_on_ray(units: list[tuple], play: Callable[..., list[dict]], workers: int,
                    address: str = "", shared: Callable[[], dict[str, Any]] | None = None,
                    ) -> Iterator[tuple[tuple, list[dict]]]:
    """``(unit, play(*unit, made=shared objects))`` of every unit, as Ray tasks.

    Joins the Ray at ``address``, else the one this process already started, else starts
    a local Ray with this machine's cores (and stops it at the end). ``shared()`` (heavy
    objects, e.g. the agents, by name) is built once here and put in the object store:
    each machine fetches it once, instead of every task carrying it.
    """
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
    objects = shared() if shared else {}
    names = list(objects)
    references = [ray.put(objects[name]) for name in names]
    task = ray.remote(num_cpus=1, max_retries=0)(play_with_shared)
    waiting = iter(units)
    running: dict[Any, tuple] = {}  # task reference -> its unit

    def submit() -> None:
        unit = next(waiting, None)
        if unit is not None:
            running[task.remote(play, unit, names, *references)] = unit

    try:
        for _ in range(workers):
            submit()
        while running:
            [done], _ = ray.wait(list(running), num_returns=1)
            del running[done]
            submit()
            yield ray.get(done)
    finally:
        for reference in running:
            ray.cancel(reference, force=True)
        if started_here:
            ray.shutdown()


def play_with_shared(play: Callable[..., list[dict]], unit: tuple, names: list[str],
                     *objects: Any) -> tuple[tuple, list[dict]]:
    """A Ray task: ``(unit, play(*unit, made={name: object}))`` (Ray hands it the objects
    from the object store); ``play(*unit)`` when nothing is shared."""
    if not names:
        return unit, play(*unit)
    return unit, play(*unit, made=dict(zip(names, objects, strict=True)))


def play_units(units: list[tuple], play: Callable[..., list[dict]], workers: int,
               progress: bool, desc: str,
               on_done: Callable[[tuple, list[dict]], None] | None = None, *,
               done_before: int = 0, backend: str = "local", address: str = "",
               shared: Callable[[], dict[str, Any]] | None = None,
               ) -> tuple[dict[tuple, list[dict]], bool]:
    """Run ``play(*unit)`` for every unit (see ``finished_units``), with a progress bar.

    ``on_done(unit, rows)`` is called in this process as each unit finishes (in any
    order). Ctrl-C (here or in a worker) stops early and keeps the finished units.
    ``done_before``: units finished by an earlier session (the bar starts there).

    Returns:
        (rows of each finished unit, whether the run was interrupted).
    """
    results: dict[tuple, list[dict]] = {}
    interrupted = False
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=done_before + len(units), initial=done_before, unit="chunk",
                   desc=desc, file=sys.stderr)
    try:
        with contextlib.closing(finished_units(units, play, workers, backend, address,
                                               shared)) as finished:
            for unit, rows in finished:
                results[unit] = rows
                if on_done:
                    on_done(unit, rows)
                if bar:
                    bar.update()
    except KeyboardInterrupt:
        interrupted = True
        print(f"\ninterrupted: keeping the {done_before + len(results)} of "
              f"{done_before + len(units)} finished chunks (--resume continues the run)",
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


def read_rows(lines: Iterable[str]) -> list[dict]:
    """Typed rows (ints where the columns hold ints) of CSV lines with the header."""
    return [{**r, "players": int(r["players"]), "deal": int(r["deal"]),
             "rotation": int(r["rotation"]), "seat": int(r["seat"]),
             "round": int(r["round"]), "points": int(r["points"]),
             "round_win": int(r["round_win"])} for r in csv.DictReader(lines)]


def load_results(folder: str | Path) -> tuple[list[dict], dict]:
    """The CSV rows (typed) and the summary of a results folder (for notebooks)."""
    folder = Path(folder)
    with open(folder / RESULTS, newline="") as f:
        rows = read_rows(f)
    return rows, json.loads((folder / SUMMARY).read_text())


# ------------------------------------------------------------------ run folder
SUMMARY = "summary.json"
RESULTS = "results.csv"
CHUNKS = "chunks"
#: The arguments that decide the results: a run resumes only with the same values.
RESULT_ARGS = ("agents", "players", "rule_sets", "deals", "matches", "seed", "chunk")
#: Largest seed: the deals' seed is ``seed`` plus a number below 10**6 per rule set.
MAX_SEED = 2 ** 32 - 1

#: A unit of work: (rule set, player count, chunk index).
Unit = tuple[str, int, int]


def write_atomic(path: Path, data: str) -> None:
    """Write ``path`` whole or not at all: a temporary file in the same folder, flushed
    to disk, then ``os.replace`` (atomic), so a reader or a Ctrl-C never meets half a file."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", newline="") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def csv_text(rows: list[dict], header: bool = False) -> str:
    """Rows as CSV lines (``csv`` module's dialect), optionally after the header line."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS)
    if header:
        writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def check_args(args: Args) -> None:
    """A clear ``ValueError`` (``TypeError`` for a wrong type) for any value that cannot
    make a run, before anything is played or written."""
    for name in ("deals", "chunk", "workers", "seed"):
        value = getattr(args, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"--{name} must be an int, got {value!r}")
        low = 0 if name == "seed" else 1
        if value < low or (name == "seed" and value > MAX_SEED):
            bounds = f"in 0..{MAX_SEED}" if name == "seed" else "at least 1"
            raise ValueError(f"--{name} must be {bounds}, got {value}")
    for name in ("agents", "players", "rule_sets"):
        values = getattr(args, name)
        flag = "--" + name.replace("_", "-")
        if not values:
            raise ValueError(f"{flag} needs at least one value")
        if name != "agents" and len(set(values)) != len(values):
            raise ValueError(f"{flag} lists a value twice: {values}")
    name = args.run_name
    if name in (".", "..") or "/" in name or os.sep in name:
        raise ValueError(f"--run-name must be a plain folder name, got {name!r}")
    if args.backend not in ("local", "ray"):
        raise ValueError(f"--backend must be local or ray, got {args.backend!r}")
    if args.address and args.backend != "ray":
        raise ValueError("--address names a Ray cluster: it needs --backend ray")
    if args.resume and args.overwrite:
        raise ValueError("--resume continues the run in the folder and --overwrite replaces "
                         "it: pass one of them")
    from agents import agent_names, parse_agent

    for agent_name, _ in map(parse_agent, args.agents):
        if agent_name not in agent_names():
            raise ValueError(f"unknown agent {agent_name!r}; known agents: "
                             f"{', '.join(agent_names())}")
    for rule_set in args.rule_sets:
        for players in args.players:
            rules_for(rule_set, players, args.matches)  # fail early on a bad combination


def plan(args: Args) -> list[Unit]:
    """Every unit of work of the run, in the order of ``results.csv``."""
    return [(rule_set, players, chunk) for rule_set in args.rule_sets
            for players in args.players for chunk in range(-(-args.deals // args.chunk))]


class RunFolder:
    """The files of one run, kept truthful at every moment.

    ``chunks/`` holds one CSV file per finished chunk, written atomically as soon as the
    chunk is played; ``summary.json`` is rewritten (atomically) after every change and
    lists the finished chunks and the output files (``results.csv``, plots) that hold
    them. A file the summary does not list is not part of the run: whenever the run
    stops (done, Ctrl-C, a crash), ``summary.json`` says what the folder holds, and
    ``--resume`` continues from the chunks it lists.
    """

    def __init__(self, args: Args, units: list[Unit]) -> None:
        self.args, self.units = args, units
        self.folder = Path(args.out_dir) / (args.run_name or f"win_rates__seed{args.seed}")
        self.chunk_texts: dict[Unit, str] = {}  # finished unit -> its CSV lines
        self.files: list[str] = []  # output files that hold the finished chunks
        self.seconds_before = 0.0  # playing time of the sessions this one resumes
        self.started = time.time()

    def chunk_path(self, unit: Unit) -> Path:
        rule_set, players, chunk = unit
        return self.folder / CHUNKS / f"{rule_set}_{players}p_{chunk:06d}.csv"

    def open(self) -> None:
        """Check the folder (an existing run, writability) and claim it, before any game.

        Raises:
            ValueError: the folder holds a run and neither ``--resume`` nor
                ``--overwrite`` was given, ``--resume`` finds no run or a run with other
                settings, or the folder cannot be written.
        """
        args, folder = self.args, self.folder
        old = self._read_old_summary()
        if old is None and args.resume:
            raise ValueError(f"nothing to resume: {folder} holds no run ({SUMMARY} missing)")
        if old is not None and not (args.resume or args.overwrite):
            state = "finished" if old.get("complete") else "unfinished"
            raise ValueError(
                f"{folder} already holds a {state} run ({old.get('chunks_done')} of "
                f"{old.get('chunks')} chunks): pass --resume to continue it or --overwrite "
                f"to replace it (or choose another --run-name)")
        if old is not None and args.resume:
            before = old.get("args", {})
            differ = [name for name in RESULT_ARGS if before.get(name) != getattr(args, name)]
            if differ:
                raise ValueError(
                    "--resume needs the run's own settings; these differ: " + ", ".join(
                        f"--{n.replace('_', '-')} {before.get(n)!r} (now {getattr(args, n)!r})"
                        for n in differ))
        try:
            (folder / CHUNKS).mkdir(parents=True, exist_ok=True)
            for place in (folder, folder / CHUNKS):
                with tempfile.TemporaryFile(dir=place):
                    pass
        except OSError as error:
            raise ValueError(f"cannot write the results folder {folder}: "
                             f"{error.strerror or error}") from error
        stale = [] if old is None else list(old.get("files", []))
        if old is not None and args.resume:
            self.seconds_before = float(old.get("seconds", 0.0))
            for unit in map(tuple, old.get("finished_chunks", [])):
                path = self.chunk_path(unit)
                if unit in self.units and path.exists():
                    self.chunk_texts[unit] = path.read_bytes().decode()  # CSV's \r\n kept
        self.write_summary(complete=False, interrupted=False)
        # Only now that the summary no longer claims them: the old run's outputs (and, to
        # replace the run, its chunks) go.
        for name in stale:
            with contextlib.suppress(FileNotFoundError):
                (folder / Path(name).name).unlink()
        if args.overwrite:
            for path in (folder / CHUNKS).glob("*.csv"):
                path.unlink()

    def _read_old_summary(self) -> dict | None:
        path = self.folder / SUMMARY
        if not path.is_file():
            return None
        try:
            old = json.loads(path.read_text())
            if not isinstance(old, dict):
                raise ValueError("not a JSON object")
        except ValueError as error:
            if self.args.overwrite:
                return {}
            raise ValueError(f"{path} is not a run summary ({error}): remove it or pass "
                             f"--overwrite") from error
        return old

    def save_chunk(self, unit: Unit, rows: list[dict]) -> None:
        """Keep a finished chunk: its file first, then the summary that lists it."""
        text = csv_text(rows)
        write_atomic(self.chunk_path(unit), text)
        self.chunk_texts[unit] = text
        self.write_summary(complete=False, interrupted=False)

    @property
    def finished(self) -> list[Unit]:
        """The finished units, in the order of ``results.csv``."""
        return [unit for unit in self.units if unit in self.chunk_texts]

    def write_summary(self, complete: bool, interrupted: bool,
                      tables: dict | None = None) -> dict:
        """Write ``summary.json`` for the folder as it is now; returns the summary."""
        import matplotlib
        import scipy

        import smoor_env

        args = self.args
        summary = dict(tables or {"table": [], "pairs": []})
        summary.update({
            "command": " ".join([Path(sys.executable).name, "-m", "experiments.win_rates",
                                 *sys.argv[1:]]),
            "args": dataclasses.asdict(args), "seed": args.seed,
            "complete": complete, "interrupted": interrupted,
            "chunks_done": len(self.chunk_texts), "chunks": len(self.units),
            "finished_chunks": [list(unit) for unit in self.finished],
            "files": list(self.files),
            "seconds": self.seconds_before + time.time() - self.started,
            "versions": {"smoor_env": smoor_env.__version__,
                         "python": platform.python_version(), "numpy": np.__version__,
                         "scipy": scipy.__version__, "matplotlib": matplotlib.__version__},
        })
        write_atomic(self.folder / SUMMARY, json.dumps(summary, indent=1))
        return summary

    def finish(self, interrupted: bool) -> dict:
        """Write ``results.csv`` from the finished chunks, the summary with its tables, then
        the plots (each listed in the summary once it is in place)."""
        args, folder = self.args, self.folder
        text = csv_text([], header=True) + "".join(self.chunk_texts[u] for u in self.finished)
        write_atomic(folder / RESULTS, text)
        self.files = [RESULTS]
        rows = read_rows(io.StringIO(text))
        tables = summarise(rows, args.matches) if rows else None
        complete = len(self.chunk_texts) == len(self.units)
        summary = self.write_summary(complete, interrupted, tables)
        if args.plots and rows:
            with tempfile.TemporaryDirectory(dir=folder, prefix=".plots-") as drafts:
                drawn = plot_summary(summary, Path(drafts)) + plot_throughput(
                    Path(args.out_dir) / "throughput.json", Path(drafts))
                for path in drawn:
                    os.replace(path, folder / path.name)
                    self.files.append(path.name)
            summary = self.write_summary(complete, interrupted, tables)
        return summary


# ----------------------------------------------------------------------- run
def run(args: Args) -> Path:
    """Play the tournament (or the rest of an interrupted one) into its folder; returns it.

    Raises:
        ValueError / TypeError: bad arguments, or a folder that cannot take the run (see
            ``RunFolder.open``), before any game is played.
        KeyboardInterrupt: Ctrl-C while the outputs were being written (the summary says
            which were; ``--resume`` writes the rest). Ctrl-C while playing is not an
            error: the finished chunks are kept and summarised.
    """
    from agents import build_agent

    check_args(args)
    units = plan(args)
    run_folder = RunFolder(args, units)
    run_folder.open()
    todo = [unit for unit in units if unit not in run_folder.chunk_texts]
    specs = sorted(set(args.agents))
    _, interrupted = play_units(
        todo, functools.partial(play_chunk, args), args.workers, args.progress, "win rates",
        run_folder.save_chunk, done_before=len(units) - len(todo), backend=args.backend,
        address=args.address, shared=lambda: {spec: build_agent(spec) for spec in specs})
    try:
        summary = run_folder.finish(interrupted)
    except KeyboardInterrupt:
        print(f"\ninterrupted while writing: {run_folder.folder / SUMMARY} lists what was "
              f"written; --resume writes the rest", file=sys.stderr)
        raise
    print(format_table(summary))
    print("\nwrote " + ", ".join(str(run_folder.folder / name)
                                 for name in [*summary["files"], SUMMARY]))
    return run_folder.folder


def main(argv: list[str] | None = None) -> None:
    args = tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0])
    try:
        run(args)
    except (ValueError, TypeError) as error:
        raise SystemExit(f"win_rates: error: {error}") from error


if __name__ == "__main__":
    main()
