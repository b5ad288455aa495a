"""The DMC runs' learning curve: each screened checkpoint's policy against ``mc``, by the
decisions the network has trained on.

Reads run folders as the DMC runs' logs are committed (``docs/results/rl/dmc_run<n>/``:
``args.json`` and ``log.jsonl`` as ``experiments.dmc`` wrote them, and the screens
``screen_policy_it<i>.json`` as ``experiments.agent_strength`` wrote them: ``mc`` against
the run's ``it<i>.pt``, every screen on one seed) and draws one panel per screened row
(rule set and player count): the policy's points a round less ``mc``'s (Hearts: penalty
points saved) with its 95% interval, one line per run. A run that started from another
run's checkpoint (its ``--init`` is ``.../<run folder>/it<k>.pt``, the folder named as
that run's ``--out-dir`` ends, or a shipped checkpoint a run wrote, as ``dmc3_it1000``)
goes on from that checkpoint's decisions and screen; a run started from another file has
trained on nothing before it, and its iteration 0 is that file, screened in its own folder
or in another given run's that started from the same file. Writes the plot (PNG and SVG)
and its points as CSV.

    python -m experiments.dmc_curve                  # the committed runs, into docs/results/rl/
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

from agents.evaluation.plots import save_figure
from agents.evaluation.runs import checked_command, read_jsonl, write_csv
from agents.ppo import read_checkpoint, resolve_checkpoint

PROG = "python -m experiments.dmc_curve"
RESULTS = Path("docs/results/rl")
SCREEN = re.compile(r"screen_policy_it(\d+)\.json")
CHECKPOINT = re.compile(r"(?:.*/)?([^/]+)/it(\d+)\.pt")  # a DMC run's it<k>.pt: (folder, k)


@dataclass
class Args:
    runs: list[str] = field(default_factory=lambda: [
        str(RESULTS / f"dmc_run{n}") for n in (1, 2, 3, 4)])
    """run folders (args.json, log.jsonl, screen_policy_it<i>.json)"""
    out: str = str(RESULTS / "dmc_curve.png")
    """the plot (PNG; an SVG and the points' CSV are written next to it)"""

    def check(self) -> None:
        """Refuse folders that are not a DMC run's (a ValueError naming the file)."""
        for run in self.runs:
            for name in ("args.json", "log.jsonl"):
                if not (Path(run) / name).is_file():
                    raise ValueError(f"{run} is not a DMC run's folder: no {name}")
        if Path(self.out).suffix != ".png":
            raise ValueError(f"--out must name a .png file, got {self.out!r}")


class Screen(NamedTuple):
    """One checkpoint's screen: the seed it dealt from and ``agent_strength``'s ladder
    rows (``mc`` against the checkpoint, one per rule set and player count)."""

    seed: int
    rows: list[dict]


def _screen(summary: dict, folder: str, iteration: int) -> Screen:
    """A screen's rows, checked to be ``mc`` against the run's own ``it<iteration>``
    (``ppo:checkpoint=.../<folder>/it<iteration>.pt``)."""
    for row in summary["ladder"]:
        m = CHECKPOINT.fullmatch(row["stronger"].removeprefix("ppo:checkpoint="))
        if row["weaker"] != "mc" or m is None or m.groups() != (folder, str(iteration)):
            raise ValueError(f"its row {row['weaker']} < {row['stronger']} is not mc against "
                             f"the run's {folder}/it{iteration}.pt")
    return Screen(int(summary["args"]["seed"]), summary["ladder"])


@dataclass(frozen=True)
class Run:
    """One run's files: its settings, the decisions trained by each iteration's end
    (``trained[i]``, iteration 0 = none) and its screens by iteration."""

    name: str
    init: str  # the network it started from ('': a fresh one)
    folder: str  # the last part of its --out-dir, which its checkpoints are found under
    trained: list[int]
    screens: dict[int, Screen]  # by iteration

    @classmethod
    def load(cls, folder: Path) -> Run:
        """The run in ``folder``; a file that is not what ``experiments.dmc`` or
        ``agent_strength`` writes is a ValueError naming it."""
        path = folder / "args.json"
        try:
            args = json.loads(path.read_text())
            init, out_dir = run_checkpoint(str(args["init"])), Path(args["out_dir"]).name
            path = folder / "log.jsonl"
            decisions: dict[int, int] = {}
            for row in read_jsonl(path):
                i, n = int(row["iteration"]), int(row["decisions"])
                if decisions.setdefault(i, n) != n:
                    raise ValueError(f"two lines of iteration {i} disagree ({decisions[i]} "
                                     f"and {n} decisions)")
            screens = {}
            for path in sorted(folder.iterdir()):
                if m := SCREEN.fullmatch(path.name):
                    screens[int(m.group(1))] = _screen(json.loads(path.read_text()), out_dir,
                                                       int(m.group(1)))
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            raise ValueError(f"{path} is not what a DMC run or its screen writes "
                             f"({type(error).__name__}: {error})") from None
        trained = [0]
        for i in range(1, max(decisions, default=0) + 1):
            if i not in decisions:
                raise ValueError(f"{folder / 'log.jsonl'} has no line for iteration {i}")
            trained.append(trained[-1] + decisions[i])
        late = [i for i in screens if i >= len(trained)]
        if late:
            raise ValueError(f"{folder} has a screen of iteration {min(late)} beyond its log "
                             f"({len(trained) - 1} iterations)")
        return cls(folder.name, init, out_dir, trained, screens)


def run_checkpoint(init: str) -> str:
    """``--init`` as the curve follows it: a shipped checkpoint that a DMC run wrote (its
    training args name the run's ``out_dir`` and ``iteration``, as ``dmc3_it1000``'s do)
    as that run's ``<folder>/it<i>.pt``, so a run from it goes on from there; any other
    as given."""
    if not init or CHECKPOINT.fullmatch(init):
        return init
    try:
        args = read_checkpoint(resolve_checkpoint(init)).get("args", {})
    except (OSError, ValueError):  # not a shipped name: a file trained on nothing here
        return init
    if args.get("method") == "dmc" and "out_dir" in args and "iteration" in args:
        return f"{Path(args['out_dir']).name}/it{int(args['iteration'])}.pt"
    return init


class Origin(NamedTuple):
    """Where a run's curve begins: the decisions its first network had trained on, and
    that network's screen (None: not screened)."""

    decisions: int
    screen: Screen | None


@dataclass(frozen=True)
class Point:
    """One screened row of one checkpoint: its advantage over ``mc`` (mean and 95%
    interval over ``deals``) at ``decisions`` trained in all (along the runs it
    continues)."""

    run: str
    iteration: int
    decisions: int
    rule_set: str
    players: int
    deals: int
    seed: int
    mean: float
    low: float
    high: float


def curve_points(runs: list[Run]) -> list[Point]:
    """Every screened row of every run, its iteration 0 included where it was screened."""
    by_folder: dict[str, Run] = {}
    start_screen: dict[str, Screen] = {}
    names = [run.name for run in runs]
    if len(set(names)) < len(names):
        raise ValueError(f"two runs are named {max(names, key=names.count)} (their folders' "
                         "names label the curve): give folders of different names")
    for run in runs:
        if run.folder in by_folder:
            raise ValueError(f"runs {by_folder[run.folder].name} and {run.name} both trained "
                             f"into a folder named {run.folder}")
        by_folder[run.folder] = run
        if run.init and 0 in run.screens:
            start_screen.setdefault(run.init, run.screens[0])

    def origin(run: Run, seen: tuple[str, ...] = ()) -> Origin:
        if run.name in seen:
            raise ValueError(f"runs {' -> '.join((*seen, run.name))} start from each other")
        m = CHECKPOINT.fullmatch(run.init)
        if m is None:
            return Origin(0, start_screen.get(run.init) if run.init else None)
        parent, k = by_folder.get(m.group(1)), int(m.group(2))
        if parent is None:
            raise ValueError(f"run {run.name} starts from {run.init}, a checkpoint of a run "
                             "not given in --runs")
        if k >= len(parent.trained):
            raise ValueError(f"run {run.name} starts from {run.init}, after "
                             f"{parent.name}'s logged iterations")
        before = origin(parent, (*seen, run.name)).decisions
        return Origin(before + parent.trained[k], parent.screens.get(k))

    points = []
    for run in runs:
        start = origin(run)
        screens = dict(run.screens)
        if 0 not in screens and start.screen is not None:
            screens[0] = start.screen
        for iteration in sorted(screens):
            seed, rows = screens[iteration]
            for row in rows:
                adv = row["advantage"]
                points.append(Point(run.name, iteration, start.decisions + run.trained[iteration],
                                    row["rule_set"], row["players"], row["deals"], seed,
                                    adv["mean"], adv["low"], adv["high"]))
    seeds = sorted({p.seed for p in points})
    if len(seeds) > 1:
        raise ValueError(f"the screens deal from different seeds ({seeds}): their points "
                         "would not compare")
    return points


def plot_curve(points: list[Point], png: Path) -> list[Path]:
    """One panel per (rule set, players), a line per run, each run's points shifted a
    little along the x axis (by at most 0.6% of its span) so that runs sharing a
    checkpoint are seen side by side; returns the files written."""
    from matplotlib.figure import Figure

    panels = list(dict.fromkeys((p.rule_set, p.players) for p in points))
    runs = list(dict.fromkeys(p.run for p in points))
    span = max(p.decisions for p in points) / 1e6 or 1.0
    fig = Figure(figsize=(5.2 * len(panels), 4.0))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (rule_set, players) in zip(axes, panels, strict=True):
        for k, run in enumerate(runs):
            mine = sorted((p for p in points if (p.rule_set, p.players, p.run)
                           == (rule_set, players, run)), key=lambda p: p.decisions)
            shift = (k - (len(runs) - 1) / 2) * 0.006 * span
            x = [p.decisions / 1e6 + shift for p in mine]
            err = [[p.mean - p.low for p in mine], [p.high - p.mean for p in mine]]
            ax.errorbar(x, [p.mean for p in mine], yerr=err, marker="o", ms=4, capsize=3,
                        label=run)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(f"{rule_set}, {players} players")
        ax.set_xlabel("decisions trained by DMC (millions)")
        ax.set_ylabel("policy less mc, points a round\n(Hearts: penalty points saved)")
        ax.legend(fontsize=8)
    deals = "/".join(map(str, sorted({p.deals for p in points})))
    fig.suptitle(f"DMC policies against mc: {deals} duplicate deals a point (seed "
                 f"{points[0].seed}), 95% paired intervals", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, png)


def run(args: Args) -> list[Point]:
    points = curve_points([Run.load(Path(folder)) for folder in args.runs])
    if not points:
        raise ValueError(f"no screen_policy_it<i>.json in {' '.join(args.runs)}: nothing to draw")
    png = Path(args.out)
    png.parent.mkdir(parents=True, exist_ok=True)
    written = plot_curve(points, png)
    write_csv([asdict(p) for p in points], png.with_suffix(".csv"))
    print("wrote " + ", ".join(str(p) for p in [*written, png.with_suffix(".csv")]))
    return points


def main(argv: list[str] | None = None) -> int:
    """The command; its exit status (2 and one line for folders it refuses)."""
    return checked_command(PROG, Args, run, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
