"""The second anchor of issue 43: one of our agents against xinxin, Nathan Sturtevant's
Hearts program (PIMC over UCT), in 4-player Hearts with passing, head to head on
duplicate deals.

xinxin is C++ (https://github.com/nathansttt/hearts, GPL-3.0, not on PyPI): ``make
xinxin-source`` checks it out at the protocol's commit into ``~/.cache/smoor-env/xinxin/
hearts``, where the harness looks for it (or give a checkout with ``--source``, or
``XINXIN_SOURCE``); ``experiments/xinxin/driver.cpp``, ours, is compiled against it with
g++ (once, into ``~/.cache/smoor-env/xinxin``) and plays it over a line protocol. Its
player is the one its ``main.cpp`` builds: iiMonteCarlo over UCT, ``--simulations``
(10,000) a decision split over ``--worlds`` (30) sampled worlds, UCT C = 0.4, playouts
with epsilon 0.1, on one core (the worlds one after another, as its threaded path runs
them at that commit: ``numCPU = 1``), its search seeded from ``--seed`` so that a game is
reproducible.

Every deal (from ``--seed``, the protocol's 3200) is played four times, ours in seat r in
rotation r and xinxin in the other three. Deal d passes as round d % 4 + 1 of a match
does: left, right, across, none. Both programs see the same game: every pass and card is
applied to our engine and to xinxin's state at once, and at every decision the two must
agree on the seat to act and on its legal cards (a disagreement stops the run: the rule
books would differ); at the end, each seat's points. The rules: our ``hearts`` preset at 4
players, a single round, and xinxin's rules 2C leads, no hearts and no QS on the first
trick, hearts broken before they are led, QS does not break them, shooting the moon,
passing (``--no-passing``: our ``hearts_no_passing``, as the OpenSpiel anchor plays).

The run, its record and its report are those of every anchor (``experiments/anchor.py``):
the sample of a deal is the mean over its rotations of (xinxin's mean penalty points less
ours), with its t interval over deals and both programs' time a decision; a stopped run
goes on with the same command; ``--report`` summarises a folder's games without playing.

    make xinxin-source                                 # once (GitHub and g++)
    python -m experiments.xinxin_anchor                # the protocol: 500 deals
    python -m experiments.xinxin_anchor --deals 2 --simulations 300 --worlds 10 --out-dir /tmp/x
    python -m experiments.xinxin_anchor --report --out-dir docs/results/xinxin-anchor/run1
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agents import build_agent
from agents.evaluation.runs import read_jsonl as read_games  # noqa: F401 (the tests' reader)
from experiments import anchor as common
from experiments.anchor import PLAYERS
from smoor_env import Engine, preset
from smoor_env.core import cards as C

PROG = "python -m experiments.xinxin_anchor"
DRIVER = Path(__file__).parent / "xinxin" / "driver.cpp"
#: The commit of https://github.com/nathansttt/hearts the protocol names (2020-08-14).
COMMIT = "6ba11548af49d3953f989f50b318ee4f4c1b91f7"
#: The optimisation flag of the program's Makefile (run 1 of the protocol was built with
#: -O2: the same moves, 1% slower; docs/results/2026-12-06-xinxin-anchor.md).
OPTIMISE = "-O3"
#: Where the program's source and the built driver live (``make xinxin-source``).
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "smoor-env" / "xinxin"

#: xinxin's suit number of each of ours (ours: C D H S; its: S D C H).
_XINXIN_SUIT = np.array([2, 1, 3, 0])
#: (52,) xinxin's card id of each of ours: (suit << 4) + rank, its ranks A K ... 2 = 0..12.
TO_XINXIN = (_XINXIN_SUIT[C.SUIT_OF] << 4) + 12 - C.RANK_OF
#: (64,) our card of each xinxin id (-1: no card).
FROM_XINXIN = np.full(64, -1)
FROM_XINXIN[TO_XINXIN] = np.arange(C.NUM_CARDS)
#: xinxin's pass direction of each of our seat offsets (receiver = passer + offset).
PASS_DIRECTION = {0: 0, 1: 1, 2: 2, 3: -1}  # none, left, across, right

# xinxin's rule flags (its Hearts.h).
_QUEEN_PENALTY, _LEAD_2C, _NO_HEARTS_FIRST, _NO_QUEEN_FIRST = 0x1, 0x20, 0x80, 0x100
_PASS, _MUST_BREAK_HEARTS = 0x400, 0x800
#: Our Hearts rules as xinxin's flags (without its pass flag).
RULES = _QUEEN_PENALTY | _LEAD_2C | _NO_HEARTS_FIRST | _NO_QUEEN_FIRST | _MUST_BREAK_HEARTS


@dataclass
class Args:
    deals: int = 500
    """duplicate deals (each played once with ours in every seat)"""
    seed: int = 3200
    """seed of the deals and of both programs' random numbers"""
    ours: str = "ismcts"
    """our agent's spec (name:key=value,...)"""
    source: str = os.environ.get("XINXIN_SOURCE") or str(CACHE / "hearts")
    """a checkout of github.com/nathansttt/hearts ($XINXIN_SOURCE if set)"""
    simulations: int = 10000
    """xinxin's UCT simulations a decision, over all its worlds"""
    worlds: int = 30
    """xinxin's sampled worlds a decision"""
    uct_c: float = 0.4
    """xinxin's UCT exploration constant"""
    epsilon: float = 0.1
    """xinxin's playout exploration rate"""
    passing: bool = True
    """Hearts with passing (the deal's direction); --no-passing: hearts_no_passing"""
    workers: int = 1
    """worker processes, each playing whole games (results do not depend on it)"""
    out_dir: str = "runs/xinxin_anchor"
    """the run's folder: args.json, games.jsonl, summary.json"""
    progress: bool = True
    """a progress bar"""
    report: bool = False
    """play nothing: summarise the games in --out-dir under its args.json's settings"""

    def check(self) -> None:
        """Refuse settings that cannot run (a ValueError naming them), before any file
        (``--report`` needs no source). The driver is built later, once the settings are
        claimed (``ANCHOR.prepare``)."""
        if self.report:
            return
        common.check_settings(self, ("deals", "simulations", "worlds", "workers"))
        if self.worlds > self.simulations:
            raise ValueError("--worlds must be <= --simulations (each world gets "
                             "simulations / worlds)")
        source_files(self.source)


def source_files(source: str) -> list[Path]:
    """The program's C++ files in ``source`` (its ``main.cpp`` left out: the driver is
    the program's main); a ValueError if ``source`` is not a checkout of it."""
    folder = Path(source).expanduser()
    if not folder.exists():
        raise ValueError(f"xinxin's source is needed (no {source}): `make xinxin-source` "
                         "checks it out there, or give a checkout of "
                         f"https://github.com/nathansttt/hearts at {COMMIT[:7]} with --source")
    if not (folder / "Hearts.h").is_file() or not (folder / "iiMonteCarlo.cpp").is_file():
        raise ValueError(f"--source {source}: no Hearts.h and iiMonteCarlo.cpp there (not a "
                         "checkout of https://github.com/nathansttt/hearts)")
    return sorted(p for p in folder.glob("*.cpp") if p.name != "main.cpp")


def compile_command(source: str, output: Path) -> list[str]:
    """The g++ command that builds the driver against ``source`` into ``output``."""
    return ["g++", "-std=c++11", OPTIMISE, "-w", f"-I{Path(source).expanduser()}", "-o",
            str(output), str(DRIVER), *map(str, source_files(source)), "-lpthread"]


@functools.cache
def compiler_version() -> str:
    """``g++ --version``'s first line ("" without g++)."""
    if shutil.which("g++") is None:
        return ""
    return subprocess.run(["g++", "--version"], capture_output=True,
                          text=True).stdout.split("\n")[0]


def build_digest(source: str) -> str:
    """16 hex digits of what the build is made of: the driver's and the program's text,
    the compile command's flags and the compiler's version."""
    folder = Path(source).expanduser()
    texts = [DRIVER] + source_files(source) + sorted(folder.glob("*.h"))
    flags = [a for a in compile_command(source, Path("driver"))  # not the paths (-I, -o)
             if a.startswith("-") and a[:2] not in ("-I", "-o")]
    made_of = " ".join([compiler_version(), *flags]).encode()
    return hashlib.sha256(made_of + b"".join(p.name.encode() + p.read_bytes()
                                             for p in texts)).hexdigest()[:16]


def program(args: Args) -> str:
    """The build a run plays: the source's commit (``+changes`` if its files differ from
    it) and the build's digest, recorded with the run's settings."""
    folder = Path(args.source).expanduser().resolve()
    git = ["git", "-C", str(folder)]
    commit, changes = "not a git checkout", ""
    try:
        top = subprocess.run([*git, "rev-parse", "--show-toplevel", "HEAD"],
                             capture_output=True, text=True).stdout.split()
        if top and Path(top[0]).resolve() == folder:  # its own checkout, not a folder in one
            commit = top[1]
            changes = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                                     capture_output=True, text=True).stdout.strip()
    except FileNotFoundError:  # no git
        pass
    return f"{commit}{'+changes' if changes else ''}, build {build_digest(args.source)}"


@functools.cache
def driver(source: str) -> Path:
    """The driver built against ``source`` (built once per source and driver text, into
    ``~/.cache/smoor-env/xinxin/<digest>``) with the flags of the program's Makefile."""
    binary = CACHE / build_digest(source) / "driver"
    if binary.exists():
        return binary
    if not compiler_version():
        raise ValueError("g++ is needed to build xinxin's driver (apt-get install g++)")
    binary.parent.mkdir(parents=True, exist_ok=True)
    partial = binary.with_suffix(f".{os.getpid()}")
    built = subprocess.run(compile_command(source, partial), capture_output=True, text=True)
    if built.returncode:
        raise ValueError(f"building xinxin's driver failed: {built.stderr[-2000:]}")
    partial.replace(binary)
    return binary


class Xinxin:
    """xinxin's driver process (see ``experiments/xinxin/driver.cpp``): one round at a
    time, in its card ids and seats. What the program prints goes to a temporary file,
    quoted if the driver dies."""

    def __init__(self, source: str):
        binary = driver(source)
        self.prints = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by close())
        try:
            self.process = subprocess.Popen([str(binary)], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=self.prints,
                                            text=True)
        except OSError:
            self.prints.close()
            raise

    def ask(self, request: str) -> list[str]:
        """Send one request; its reply's words (a RuntimeError for an ``error`` reply, or
        a driver that died: its exit status and last output)."""
        try:
            self.process.stdin.write(request + "\n")
            self.process.stdin.flush()
            reply = self.process.stdout.readline().split()
        except BrokenPipeError:
            reply = []
        if not reply:
            self.process.wait()
            self.prints.seek(0)
            raise RuntimeError(f"xinxin's driver died on {request.split()[0]!r} (exit "
                               f"{self.process.returncode}): {self.prints.read()[-1000:]}")
        if reply[0] == "error":
            raise RuntimeError(f"xinxin refused {request.split()[0]!r}: {' '.join(reply)}")
        return reply

    def close(self) -> None:
        """End the driver (it stops at the end of its input) and close its pipes."""
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        self.process.wait()
        self.process.stdout.close()
        self.prints.close()

    def __enter__(self) -> Xinxin:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            self.process.kill()
        self.close()


def new_round(xinxin: Xinxin, args: Args, engine: Engine, seat_of: np.ndarray,
              seed: int) -> None:
    """Start xinxin's round on ``engine``'s game 0, its seat i holding the hand of our
    seat ``seat_of[i]``."""
    offset = int(engine.rules.pass_offset(int(engine.state.round_number[0])))
    rules = RULES | (_PASS if args.passing else 0)
    hands = [TO_XINXIN[C.cards_of(engine.state.dealt[0, seat])] for seat in seat_of]
    xinxin.ask(f"game {rules} {PASS_DIRECTION[offset]} {seed} {args.simulations} "
               f"{args.worlds} {args.epsilon!r} {args.uct_c!r} "
               + " ".join(str(c) for hand in hands for c in hand))


def play_game(args: Args, deal: int, ours_seat: int) -> dict:
    """One game: deal ``deal`` with ours in ``ours_seat``, xinxin elsewhere."""
    rules = preset("hearts" if args.passing else "hearts_no_passing", PLAYERS)
    engine = Engine(rules, 1)
    engine.reset(args.seed, game_ids=[deal], round_number=[deal % 4 + 1])
    seat_of = common.seat_order(engine)  # (4,) our seat of xinxin's seat
    sequence = np.random.SeedSequence([args.seed, deal, ours_seat])
    agent = build_agent(args.ours)
    rng = np.random.default_rng(sequence)
    times: dict[str, list[float]] = {"ours": [], "xinxin": []}
    actions = []  # our action ids, in order: the game's record
    with Xinxin(args.source) as xinxin:
        new_round(xinxin, args, engine, seat_of, int(sequence.generate_state(1)[0]))
        while not engine.state.match_over[0]:
            seat = int(engine.state.current_player[0])
            mask = engine.legal_mask  # (1, 70)
            legal = sorted(int(TO_XINXIN[c]) for c in np.flatnonzero(mask[0, :C.NUM_CARDS]))
            reply = xinxin.ask("legal")
            if reply[1] == "-1":
                raise AssertionError(f"deal {deal}: xinxin's round ended, ours did not")
            theirs = sorted(int(c) for c in reply[2:])
            if seat_of[int(reply[1])] != seat or theirs != legal:
                raise AssertionError(
                    f"deal {deal}: the programs disagree (our seat {seat} may play {legal}, "
                    f"xinxin's seat {reply[1]} {theirs}; xinxin's card ids)")
            start = time.perf_counter()
            if seat == ours_seat:
                card = common.our_move(agent, engine, mask, rng)
                spent = time.perf_counter() - start
                who = "ours"
            else:
                _, chosen, spent = xinxin.ask("think")
                if int(chosen) not in legal:
                    raise AssertionError(f"deal {deal}: xinxin chose {chosen}, not one of "
                                         f"its legal cards {legal}")
                card, spent, who = int(FROM_XINXIN[int(chosen)]), float(spent), "xinxin"
            if len(legal) > 1:
                times[who].append(spent)
            engine.step(np.array([card]))
            xinxin.ask(f"play {TO_XINXIN[card]}")
            actions.append(card)
        if xinxin.ask("legal")[1] != "-1":
            raise AssertionError(f"deal {deal}: our round ended, xinxin's did not")
        scores = [float(s) for s in xinxin.ask("score")[1:]]  # by xinxin's seat
    points = engine.state.round_points[0].tolist()  # (4,) penalty points by our seat
    return {"deal": deal, "ours_seat": ours_seat, "points": points,
            "xinxin_points": common.by_our_seat(scores, seat_of),
            "actions": actions, "ours_seconds": times["ours"],
            "xinxin_seconds": times["xinxin"]}


def scored_alike(game: dict) -> bool:
    """xinxin scores a round as we do (a moon: 0 to the shooter, 26 to the rest)."""
    return game["xinxin_points"] == game["points"]


ANCHOR = common.Anchor(PROG, "xinxin", "xinxin", Args, play_game, scored_alike,
                       program=program, prepare=lambda args: driver(args.source),
                       free=(*common.FREE, "source"))
DESCRIPTION = __doc__.split("\n\n")[0]
run, main, command = common.entry_points(ANCHOR, DESCRIPTION)


if __name__ == "__main__":
    sys.exit(command())
