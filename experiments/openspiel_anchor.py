"""The anchor of issue 43: one of our agents against OpenSpiel's ISMCTS bot in 4-player
Hearts without passing, head to head on duplicate deals.

Every deal (from ``--seed``, the protocol's 3000) is played four times, ours in seat r in
rotation r and OpenSpiel's bot (``open_spiel.python.algorithms.ismcts``, 1,000 simulations,
one random rollout per leaf, UCT c = 2, its defaults) in the other three. Both programs
see the same game: the deal, the passes and every card are applied to our engine and to
OpenSpiel's ``hearts`` state at once, and at every decision the two must agree on the
seat to act and on its legal cards (a disagreement stops the run: the two rule books
would differ). The rules: our ``hearts_no_passing`` preset at 4 players, a single round,
and OpenSpiel's ``hearts`` with the pass direction "No Pass" and ``qs_breaks_hearts=False``
(our default; its other defaults are our rules: 2C leads, no points on the first trick,
hearts broken before they are led, shooting the moon).

Without passing because OpenSpiel's bot cannot pass: in a round with passing its search
fails on the second player's first pass (``resample_from_infostate`` of OpenSpiel 2.0.2's
Hearts deals worlds in which the rollout finds no legal action:
``ValueError: 'a' cannot be empty``), in every direction; once the passes are made it
plays. ``tests/test_openspiel_anchor.py`` keeps that fact checked.

The sample of a deal is the mean over its rotations of (the bots' mean penalty points
less ours): positive means ours took fewer. The report: its mean and t interval over
deals, and both programs' time a decision (median, 95th percentile) over the decisions
with a choice, measured in the same games.

Every game is appended to ``games.jsonl`` in ``--out-dir`` as it ends, so a stopped run
(Ctrl-C, or SIGTERM for one in the background: both stop the workers and keep the games
played) goes on where it stopped (same command; the settings and the code must be the
same). While it plays, the run holds ``.lock`` in its folder: a second run into the same
folder is refused.
``--report`` plays nothing: it summarises the games a folder holds (a run's committed
games, say), under the settings of its ``args.json``, with any version of the code.

    python -m experiments.openspiel_anchor                     # the protocol: 1,000 deals
    python -m experiments.openspiel_anchor --deals 4 --simulations 50 --out-dir /tmp/a
    python -m experiments.openspiel_anchor --report --out-dir docs/results/openspiel-anchor/run2
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
import time
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
from smoor_env import Engine, preset
from smoor_env.core import cards as C
from smoor_env.observation import observe

PROG = "python -m experiments.openspiel_anchor"
PLAYERS = 4

#: (52,) OpenSpiel's card id of each of ours (its ids are 4 * rank + suit, suits C D H S).
TO_OPENSPIEL = C.RANK_OF * 4 + C.SUIT_OF
#: (52,) the inverse.
FROM_OPENSPIEL = np.argsort(TO_OPENSPIEL)


@dataclass
class Args:
    deals: int = 1000
    """duplicate deals (each played once with ours in every seat)"""
    seed: int = 3000
    """seed of the deals and of both programs' random numbers"""
    ours: str = "ismcts"
    """our agent's spec (name:key=value,...)"""
    simulations: int = 1000
    """OpenSpiel ISMCTS simulations a decision"""
    uct_c: float = 2.0
    """OpenSpiel ISMCTS exploration constant"""
    workers: int = 1
    """worker processes, each playing whole games (results do not depend on it)"""
    out_dir: str = "runs/openspiel_anchor"
    """the run's folder: args.json, games.jsonl, summary.json"""
    progress: bool = True
    """a progress bar"""
    report: bool = False
    """play nothing: summarise the games in --out-dir under its args.json's settings"""

    def check(self) -> None:
        """Refuse settings that cannot run (a ValueError naming them), before any file."""
        if self.deals < 1 or self.simulations < 1 or self.workers < 1:
            raise ValueError("--deals, --simulations and --workers must be >= 1")
        build_agent(self.ours)  # a bad spec fails here, before any game


#: Settings a run may go on with other values of: they do not change any game.
_FREE = ("deals", "workers", "out_dir", "progress", "report")


def openspiel_state(game, engine: Engine, seat_of: np.ndarray):
    """OpenSpiel's state after the deal of ``engine``'s game 0, without passing, the cards
    dealt so that OpenSpiel's player i holds the hand of our seat ``seat_of[i]``."""
    state = game.new_initial_state()
    state.apply_action(0)  # pass direction "No Pass"
    hands = [C.cards_of(engine.state.dealt[0, seat]) for seat in seat_of]  # (4, 13)
    for k in range(13 * PLAYERS):  # OpenSpiel deals card k to player k % 4
        state.apply_action(int(TO_OPENSPIEL[hands[k % PLAYERS][k // PLAYERS]]))
    return state


def play_game(args: Args, deal: int, ours_seat: int) -> dict:
    """One game: deal ``deal`` with ours in ``ours_seat``, OpenSpiel's bot elsewhere."""
    import pyspiel
    from open_spiel.python.algorithms import ismcts, mcts

    engine = Engine(preset("hearts_no_passing", PLAYERS), 1)
    engine.reset(args.seed, game_ids=[deal])
    # OpenSpiel's player i is the i-th seat from the dealer's left.
    first = (int(engine.state.dealer[0]) + 1) % PLAYERS
    seat_of = (first + np.arange(PLAYERS)) % PLAYERS  # (4,) our seat of OpenSpiel's player
    game = pyspiel.load_game("hearts", {"qs_breaks_hearts": False})
    state = openspiel_state(game, engine, seat_of)
    random_state = np.random.RandomState([args.seed, deal, ours_seat])
    bot = ismcts.ISMCTSBot(game, mcts.RandomRolloutEvaluator(1, random_state), args.uct_c,
                           args.simulations, random_state=random_state)
    agent = build_agent(args.ours)
    rng = np.random.default_rng([args.seed, deal, ours_seat])
    times: dict[str, list[float]] = {"ours": [], "openspiel": []}
    while not engine.state.match_over[0]:
        seat = int(engine.state.current_player[0])
        mask = engine.legal_mask  # (1, 70)
        legal = sorted(int(TO_OPENSPIEL[c]) for c in np.flatnonzero(mask[0, :C.NUM_CARDS]))
        if seat_of[state.current_player()] != seat or state.legal_actions() != legal:
            raise AssertionError(
                f"deal {deal}: the engines disagree (our seat {seat} may play {legal}, "
                f"OpenSpiel's player {state.current_player()} {state.legal_actions()})")
        start = time.perf_counter()
        if seat == ours_seat:
            card = int(agent.act({"observation": observe(engine, engine.state.current_player),
                                  "action_mask": mask}, rng)[0])
            spent = "ours"
        else:
            card = int(FROM_OPENSPIEL[bot.step(state)])
            spent = "openspiel"
        if len(legal) > 1:
            times[spent].append(time.perf_counter() - start)
        engine.step(np.array([card]))
        state.apply_action(int(TO_OPENSPIEL[card]))
    if not state.is_terminal():
        raise AssertionError(f"deal {deal}: our round ended, OpenSpiel's did not")
    points = engine.state.round_points[0].tolist()  # (4,) penalty points by our seat
    returns = state.returns()  # by OpenSpiel player: 26 less the penalty points (moon: 0/26)
    return {"deal": deal, "ours_seat": ours_seat, "points": points,
            "openspiel_returns": [returns[int(np.flatnonzero(seat_of == s)[0])]
                                  for s in range(PLAYERS)],
            "ours_seconds": times["ours"], "openspiel_seconds": times["openspiel"]}


def summarise(args: Args, games: list[dict]) -> dict:
    """The report of the deals whose four games are all played."""
    by_deal: dict[int, list[dict]] = {}
    for g in games:
        by_deal.setdefault(g["deal"], []).append(g)
    complete = sorted(d for d, gs in by_deal.items() if len(gs) == PLAYERS)
    samples = []
    for d in complete:
        margins = []
        for g in by_deal[d]:
            points = np.array(g["points"], float)
            ours = points[g["ours_seat"]]
            margins.append((points.sum() - ours) / (PLAYERS - 1) - ours)
        samples.append(np.mean(margins))
    mean, low, high = mean_interval(np.array(samples)) if samples else (np.nan,) * 3
    ours = np.concatenate([g["ours_seconds"] for g in games] or [[]]) * 1e3
    theirs = np.concatenate([g["openspiel_seconds"] for g in games] or [[]]) * 1e3

    def times(ms: np.ndarray) -> dict:
        return {"decisions": len(ms),
                "median_ms": float(np.median(ms)) if len(ms) else None,
                "p95_ms": float(np.percentile(ms, 95)) if len(ms) else None}

    # OpenSpiel's return is 26 less the penalty points (a moon: 26 to the shooter, 0 to
    # the rest), which is ours when the two programs scored the round alike.
    differ = sum(g["openspiel_returns"] != [26 - p for p in g["points"]] for g in games)
    return {"settings": dataclasses.asdict(args), "deals_complete": len(complete),
            "games": len(games), "games_scored_differently": differ,
            "advantage": {"mean": mean, "low": low, "high": high,
                          "meaning": "OpenSpiel bots' mean penalty points less ours, a hand"},
            "ours_time": times(ours), "openspiel_time": times(theirs),
            "machine": {"cpus": os.cpu_count(), "load": os.getloadavg()}}


def report(folder: Path) -> dict:
    """The summary of the games ``folder`` holds, under the settings of its ``args.json``
    (nothing is played or written; the code need not be the run's)."""
    path = folder / "args.json"
    if not path.exists():
        raise ValueError(f"{folder} holds no run (no args.json)")
    recorded = json.loads(path.read_text())
    settings = Args(**{f.name: recorded[f.name] for f in dataclasses.fields(Args)
                       if f.name in recorded})
    games = read_games(folder / "games.jsonl")
    summary = summarise(settings, [g for g in games if g["deal"] < settings.deals])
    del summary["machine"]  # the load now says nothing of the games' machine
    return summary


def run(args: Args) -> dict:
    """Play the games the run in ``--out-dir`` still lacks (all, for a new one) and return
    the summary; with ``--report``, summarise only. Ctrl-C or SIGTERM while playing
    raises KeyboardInterrupt after the workers are stopped, every finished game kept."""
    if args.report:
        return report(Path(args.out_dir))
    args.check()
    folder = Path(args.out_dir)
    claim_settings(_Claimed(**dataclasses.asdict(args), code=code_fingerprint()), folder,
                   _FREE)
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
            for _, game in finished_units(todo, functools.partial(play_game, args),
                                          args.workers):
                out.write(json.dumps(game) + "\n")
                out.flush()
                os.fsync(out.fileno())
                games.append(game)
                bar.update()
        summary = summarise(args, [g for g in games if g["deal"] < args.deals])
        write_atomic(folder / "summary.json", json.dumps(summary, indent=1))
        return summary
    finally:
        lock.close()


@dataclass
class _Claimed(Args):
    code: str = ""  # code_fingerprint(): a run goes on only with the code it was started with


def main(argv: list[str] | None = None) -> dict:
    """Run (or report) and print the result line; the summary."""
    return show(tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0]))


def show(args: Args) -> dict:
    """``run(args)``, then print the result line; the summary."""
    summary = run(args)
    a = summary["advantage"]
    if not summary["deals_complete"]:
        print(f"no deal of {args.out_dir} has all its {PLAYERS} games yet")
        return summary
    print(f"{summary['deals_complete']} deals: OpenSpiel ISMCTS - {args.ours} = "
          f"{a['mean']:+.2f} [{a['low']:+.2f}, {a['high']:+.2f}] penalty points a hand; "
          f"time a decision (median / p95 ms): ours {summary['ours_time']['median_ms']:.1f}"
          f" / {summary['ours_time']['p95_ms']:.1f}, OpenSpiel "
          f"{summary['openspiel_time']['median_ms']:.1f} / "
          f"{summary['openspiel_time']['p95_ms']:.1f}")
    return summary


def command(argv: list[str] | None = None) -> int:
    """``main`` as a command: its exit status. Settings it refuses end in one line and 2;
    Ctrl-C or SIGTERM in one line (the games kept) and 130."""
    return checked_command(PROG, Args, show, __doc__.split("\n\n")[0], argv,
                           kept="every finished game is kept: the same command goes on")


if __name__ == "__main__":
    sys.exit(command())
