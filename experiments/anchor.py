"""What the anchors of issue 43 share: one of our agents head to head against another
program in 4-player Hearts on duplicate deals, its run kept game by game.

Every deal is played four times, ours in seat r in rotation r and the other program in
the other three. The sample of a deal is the mean over its rotations of (the other
program's mean penalty points less ours): positive means ours took fewer. The report: its
mean and t interval over deals, and both programs' time a decision (median, 95th
percentile) over the decisions with a choice, measured in the same games.

Every game is appended to ``games.jsonl`` in ``--out-dir`` as it ends, so a stopped run
(Ctrl-C, or SIGTERM for one in the background: both stop the workers and keep the games
played) goes on where it stopped (same command; the settings and the code must be the
same). While it plays, the run holds ``.lock`` in its folder: a second run into the same
folder is refused. ``--report`` plays nothing: it summarises the games a folder holds (a
run's committed games, say), under the settings of its ``args.json``, with any version of
the code.

The programs: ``experiments/openspiel_anchor.py`` (OpenSpiel's ISMCTS) and
``experiments/xinxin_anchor.py`` (Sturtevant's xinxin).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import inspect
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro

from agents import build_agent
from agents.evaluation.backends import finished_units
from agents.evaluation.runs import (
    checked_command,
    claim_settings,
    code_fingerprint,
    lock_folder,
    write_atomic,
)
from agents.evaluation.runs import read_jsonl as read_games
from agents.evaluation.stats import mean_interval
from smoor_env.observation import observe

PLAYERS = 4

#: Settings a run may go on with other values of: they do not change any game.
FREE = ("deals", "workers", "out_dir", "progress", "report")


@dataclass(frozen=True)
class Anchor:
    """One other program: how a game against it is played and checked."""

    prog: str
    """the command (``python -m experiments.<module>``)"""
    name: str
    """the program's key in a game's record (``<name>_seconds``) and the summary"""
    title: str
    """its name in the result line"""
    args_type: type
    """its settings (a dataclass with ``deals``, ``seed``, ``ours``, ``workers``,
    ``out_dir``, ``progress``, ``report`` and ``check()``)"""
    play_game: Callable[..., dict]
    """``play_game(args, deal, ours_seat)``: one game's record (``deal``, ``ours_seat``,
    ``points`` by our seat, ``ours_seconds``, ``<name>_seconds``, what ``scored_alike``
    reads)"""
    scored_alike: Callable[[dict], bool]
    """whether the other program scored a game's round as our engine did"""
    program: Callable[[object], str] | None = None
    """``program(args)``: what names the other program's build beyond its settings (its
    source's commit, say), recorded with the run's settings: a run goes on only with the
    same"""
    prepare: Callable[[object], object] | None = None
    """``prepare(args)``: made once before the games, after the settings are claimed (the
    other program's build, say)"""
    free: tuple[str, ...] = FREE
    """settings a run may go on with other values of (they change no game)"""


def seat_order(engine) -> np.ndarray:
    """(4,) our seat of the other program's seat (player) i in ``engine``'s game 0: the
    i-th seat from the dealer's left, who passes and plays first in both programs."""
    first = (int(engine.state.dealer[0]) + 1) % PLAYERS
    return (first + np.arange(PLAYERS)) % PLAYERS


def by_our_seat(values: list, seat_of: np.ndarray) -> list:
    """``values`` by the other program's seat (``seat_of``: ``seat_order``), by ours."""
    return [values[i] for i in np.argsort(seat_of)]


def our_move(agent, engine, mask: np.ndarray, rng: np.random.Generator) -> int:
    """Our agent's action for the seat to act in ``engine``'s game 0 (``mask``: its
    ``legal_mask``, (1, 70))."""
    observation = {"observation": observe(engine, engine.state.current_player),
                   "action_mask": mask}
    return int(agent.act(observation, rng)[0])


def check_settings(args, counts: tuple[str, ...]) -> None:
    """Refuse settings that cannot run (a ValueError naming them), before any file: the
    ``counts`` (names of ``args``' fields) must be >= 1 and ``args.ours`` an agent spec."""
    if any(getattr(args, name) < 1 for name in counts):
        flags = [f"--{name.replace('_', '-')}" for name in counts]
        raise ValueError(f"{', '.join(flags[:-1])} and {flags[-1]} must be >= 1")
    build_agent(args.ours)  # a bad spec fails here, before any game


def summarise(anchor: Anchor, args, games: list[dict]) -> dict:
    """The report of the deals whose four games are all played."""
    by_deal: dict[int, list[dict]] = {}
    for g in games:
        by_deal.setdefault(g["deal"], []).append(g)
    complete = sorted(d for d, gs in by_deal.items() if len(gs) == PLAYERS)
    samples = []
    for d in complete:
        margins = []
        for g in by_deal[d]:
            points = np.array(g["points"], float)  # (4,) by our seat
            ours = points[g["ours_seat"]]
            margins.append((points.sum() - ours) / (PLAYERS - 1) - ours)
        samples.append(np.mean(margins))
    mean, low, high = mean_interval(np.array(samples)) if samples else (np.nan,) * 3
    ours = np.concatenate([g["ours_seconds"] for g in games] or [[]]) * 1e3
    theirs = np.concatenate([g[f"{anchor.name}_seconds"] for g in games] or [[]]) * 1e3

    def times(ms: np.ndarray) -> dict:
        return {"decisions": len(ms),
                "median_ms": float(np.median(ms)) if len(ms) else None,
                "p95_ms": float(np.percentile(ms, 95)) if len(ms) else None}

    return {"settings": dataclasses.asdict(args), "deals_complete": len(complete),
            "games": len(games),
            "games_scored_differently": sum(not anchor.scored_alike(g) for g in games),
            "advantage": {"mean": mean, "low": low, "high": high,
                          "meaning": "the other program's mean penalty points less ours, a hand"},
            "ours_time": times(ours), f"{anchor.name}_time": times(theirs),
            "machine": {"cpus": os.cpu_count(), "load": os.getloadavg()}}


def report(anchor: Anchor, folder: Path) -> dict:
    """The summary of the games ``folder`` holds, under the settings of its ``args.json``
    (nothing is played or written; the code need not be the run's)."""
    path = folder / "args.json"
    if not path.exists():
        raise ValueError(f"{folder} holds no run (no args.json)")
    recorded = json.loads(path.read_text())
    settings = anchor.args_type(**{f.name: recorded[f.name]
                                   for f in dataclasses.fields(anchor.args_type)
                                   if f.name in recorded})
    games = read_games(folder / "games.jsonl")
    summary = summarise(anchor, settings, [g for g in games if g["deal"] < settings.deals])
    summary["settings"].update({k: recorded[k] for k in ("code", "harness", "program")
                                if k in recorded})
    del summary["machine"]  # the load now says nothing of the games' machine
    return summary


def run_identity(anchor: Anchor, args) -> dict[str, str]:
    """What a run goes on only with, beside its settings: our code (``code_fingerprint``),
    the harness (this module and the anchor's, which make the games), and the other
    program's build where the anchor names one."""
    harness = hashlib.sha256()
    for module in (__file__, inspect.getsourcefile(anchor.play_game)):
        harness.update(Path(module).read_bytes())
    identity = {"code": code_fingerprint(), "harness": harness.hexdigest()[:16]}
    if anchor.program is not None:
        identity["program"] = anchor.program(args)
    return identity


def run(anchor: Anchor, args) -> dict:
    """Play the games the run in ``--out-dir`` still lacks (all, for a new one) and return
    the summary; with ``--report``, summarise only. Ctrl-C or SIGTERM while playing
    raises KeyboardInterrupt after the workers are stopped, every finished game kept."""
    if args.report:
        return report(anchor, Path(args.out_dir))
    args.check()
    folder = Path(args.out_dir)
    identity = run_identity(anchor, args)
    claim_settings(args, folder, anchor.free, identity)
    if anchor.prepare is not None:
        anchor.prepare(args)
    lock = lock_folder(folder, "--out-dir")
    try:
        path = folder / "games.jsonl"
        games = read_games(path)
        done = {(g["deal"], g["ours_seat"]) for g in games}
        todo = [(d, s) for d in range(args.deals) for s in range(PLAYERS)
                if (d, s) not in done]
        from tqdm import tqdm

        with path.open("a") as out, tqdm(total=len(todo), disable=not args.progress,
                                         desc="games") as bar:
            if path.stat().st_size and path.read_bytes()[-1:] != b"\n":
                out.write("\n")  # a line cut short by a kill stays apart from the next
            with contextlib.closing(finished_units(
                    todo, functools.partial(anchor.play_game, args), args.workers)) as finished:
                for _, game in finished:
                    out.write(json.dumps(game) + "\n")
                    out.flush()
                    os.fsync(out.fileno())
                    games.append(game)
                    bar.update()
        summary = summarise(anchor, args, [g for g in games if g["deal"] < args.deals])
        summary["settings"].update(identity)
        write_atomic(folder / "summary.json", json.dumps(summary, indent=1))
        return summary
    finally:
        lock.close()


def show(anchor: Anchor, args) -> dict:
    """``run(anchor, args)``, then print the result line; the summary."""
    summary = run(anchor, args)
    a = summary["advantage"]
    if not summary["deals_complete"]:
        print(f"no deal of {args.out_dir} has all its {PLAYERS} games yet")
        return summary
    ours, theirs = summary["ours_time"], summary[f"{anchor.name}_time"]
    print(f"{summary['deals_complete']} deals: {anchor.title} - {args.ours} = "
          f"{a['mean']:+.2f} [{a['low']:+.2f}, {a['high']:+.2f}] penalty points a hand; "
          f"time a decision (median / p95 ms): ours {ours['median_ms']:.1f} / "
          f"{ours['p95_ms']:.1f}, {anchor.title} {theirs['median_ms']:.1f} / "
          f"{theirs['p95_ms']:.1f}; {ours['decisions']} / {theirs['decisions']} decisions "
          f"with a choice; {summary['games_scored_differently']} of {summary['games']} "
          "games scored differently")
    return summary


def main(anchor: Anchor, description: str, argv: list[str] | None = None) -> dict:
    """Run (or report) and print the result line; the summary."""
    return show(anchor, tyro.cli(anchor.args_type, args=argv, description=description))


def command(anchor: Anchor, description: str, argv: list[str] | None = None) -> int:
    """``main`` as a command: its exit status. Settings it refuses end in one line and 2;
    Ctrl-C or SIGTERM in one line (the games kept) and 130."""
    return checked_command(anchor.prog, anchor.args_type, functools.partial(show, anchor),
                           description, argv,
                           kept="every finished game is kept: the same command goes on")


def entry_points(anchor: Anchor, description: str) -> tuple[Callable, Callable, Callable]:
    """An anchor module's ``run(args)``, ``main(argv)`` and ``command(argv)``."""
    return (functools.partial(run, anchor), functools.partial(main, anchor, description),
            functools.partial(command, anchor, description))
