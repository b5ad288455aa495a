"""The DMC runs' learning curve: each screened checkpoint's policy against ``mc``, by the
decisions the network has trained on.

Reads run folders as the DMC runs' logs are committed (``docs/results/rl/dmc_run<n>/``:
``args.json`` and ``log.jsonl`` as ``experiments.dmc`` wrote them, and the screens
``screen_policy_it<i>.json`` as ``experiments.agent_strength`` wrote them) and draws one
panel per screened row (rule set and player count): the policy's points a round less
``mc``'s (Hearts: penalty points saved) with its 95% interval, one line per run. A run
that started from another given run's checkpoint (its ``--init`` is ``<out-dir>/it<k>.pt``
of that run) goes on from that checkpoint's decisions and screen; a run's iteration 0 is
the network it started from, screened in its own folder or in another run's that started
from the same file. Writes the plot (PNG and SVG) and its points as CSV.

    python -m experiments.dmc_curve                  # the committed runs, into docs/results/rl/
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from agents.evaluation.plots import save_figure
from agents.evaluation.runs import checked_command, read_jsonl

PROG = "python -m experiments.dmc_curve"
RESULTS = Path("docs/results/rl")
SCREEN = re.compile(r"screen_policy_it(\d+)\.json")


@dataclass
class Args:
    runs: list[str] = field(default_factory=lambda: [
        str(RESULTS / f"dmc_run{n}") for n in (1, 2, 3)])
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


@dataclass(frozen=True)
class Run:
    """One run's files: its settings, the decisions trained by each iteration's end
    (``trained[i]``, iteration 0 = none) and its screens by iteration."""

    name: str
    args: dict
    trained: list[int]
    screens: dict[int, list[dict]]  # iteration -> agent_strength's ladder rows

    @classmethod
    def load(cls, folder: Path) -> Run:
        args = json.loads((folder / "args.json").read_text())
        decisions = {row["iteration"]: row["decisions"] for row in read_jsonl(folder / "log.jsonl")}
        trained = [0]
        for i in range(1, max(decisions, default=0) + 1):
            if i not in decisions:
                raise ValueError(f"{folder / 'log.jsonl'} has no line for iteration {i}")
            trained.append(trained[-1] + decisions[i])
        screens = {int(m.group(1)): json.loads(path.read_text())["ladder"]
                   for path in sorted(folder.iterdir()) if (m := SCREEN.fullmatch(path.name))}
        return cls(folder.name, args, trained, screens)


def curve_points(runs: list[Run]) -> list[dict]:
    """One row per run, screened checkpoint and ladder row: the run, its iteration, the
    decisions the network has trained on in all (along the runs it continues), the rule
    set, the player count and the advantage's mean and 95% interval."""
    by_out = {run.args.get("out_dir"): run for run in runs}
    start_screen = {run.args.get("init"): run.screens[0] for run in runs if 0 in run.screens}

    def origin(run: Run) -> tuple[int, list[dict] | None]:
        """(decisions before the run's first iteration, the screen of its start)"""
        m = re.fullmatch(r"(.+)/it(\d+)\.pt", run.args.get("init", ""))
        parent = by_out.get(m.group(1)) if m else None
        if parent is not None and parent is not run:
            k = int(m.group(2))
            if k >= len(parent.trained):
                raise ValueError(f"run {run.name} starts from {run.args['init']}, after "
                                 f"{parent.name}'s logged iterations")
            before, screen = origin(parent)
            return before + parent.trained[k], parent.screens.get(k)
        return 0, start_screen.get(run.args.get("init"))

    points = []
    for run in runs:
        before, start = origin(run)
        screens = dict(run.screens)
        if 0 not in screens and start is not None:
            screens[0] = start
        for iteration in sorted(screens):
            if iteration >= len(run.trained):
                raise ValueError(f"run {run.name} has a screen of iteration {iteration} beyond "
                                 f"its log ({len(run.trained) - 1} iterations)")
            for row in screens[iteration]:
                adv = row["advantage"]
                points.append({"run": run.name, "iteration": iteration,
                               "decisions": before + run.trained[iteration],
                               "rule_set": row["rule_set"], "players": row["players"],
                               "deals": row["deals"], "mean": adv["mean"], "low": adv["low"],
                               "high": adv["high"]})
    return points


def plot_curve(points: list[dict], png: Path) -> list[Path]:
    """One panel per (rule set, players), a line per run; returns the files written."""
    from matplotlib.figure import Figure

    panels = list(dict.fromkeys((p["rule_set"], p["players"]) for p in points))
    fig = Figure(figsize=(5.2 * max(len(panels), 1), 4.0))
    axes = fig.subplots(1, max(len(panels), 1), squeeze=False)[0]
    for ax, (rule_set, players) in zip(axes, panels, strict=False):
        rows = [p for p in points if (p["rule_set"], p["players"]) == (rule_set, players)]
        for run in dict.fromkeys(p["run"] for p in rows):
            mine = sorted((p for p in rows if p["run"] == run), key=lambda p: p["decisions"])
            x = [p["decisions"] / 1e6 for p in mine]
            mean = [p["mean"] for p in mine]
            err = [[p["mean"] - p["low"] for p in mine], [p["high"] - p["mean"] for p in mine]]
            ax.errorbar(x, mean, yerr=err, marker="o", ms=4, capsize=3, label=run)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(f"{rule_set}, {players} players")
        ax.set_xlabel("decisions trained by DMC (millions)")
        ax.set_ylabel("policy less mc, points a round\n(Hearts: penalty points saved)")
        ax.legend(fontsize=8)
    deals = sorted({p["deals"] for p in points})
    fig.suptitle(f"DMC policies against mc: {'/'.join(map(str, deals))} duplicate deals a "
                 "point, 95% paired intervals", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, png)


def run(args: Args) -> list[dict]:
    points = curve_points([Run.load(Path(folder)) for folder in args.runs])
    png = Path(args.out)
    png.parent.mkdir(parents=True, exist_ok=True)
    written = plot_curve(points, png)
    table = png.with_suffix(".csv")
    with table.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(points[0]) if points else ["run"])
        writer.writeheader()
        writer.writerows(points)
    print("wrote " + ", ".join(str(p) for p in [*written, table]))
    return points


def main(argv: list[str] | None = None) -> int:
    """The command; its exit status (2 and one line for folders it refuses)."""
    return checked_command(PROG, Args, run, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
