"""The DMC learning curve (experiments/dmc_curve.py): each screen where the network's
training put it, runs continued from another run's checkpoint drawn on from there."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from experiments import dmc_curve
from experiments.dmc_curve import Run, curve_points

ROOT = Path(__file__).resolve().parent.parent


def ladder_row(rule_set: str, mean: float) -> dict:
    return {"rule_set": rule_set, "players": 4, "deals": 10,
            "advantage": {"mean": mean, "low": mean - 0.5, "high": mean + 0.5}}


def make_run(folder: Path, init: str, decisions: list[int], screens: dict[int, float]) -> Path:
    """A run folder as experiments.dmc and agent_strength write it (the fields read)."""
    folder.mkdir()
    (folder / "args.json").write_text(json.dumps({"init": init, "out_dir": f"runs/{folder.name}"}))
    (folder / "log.jsonl").write_text("".join(
        json.dumps({"iteration": i, "decisions": d}) + "\n" for i, d in enumerate(decisions, 1)))
    for iteration, mean in screens.items():
        (folder / f"screen_policy_it{iteration}.json").write_text(json.dumps(
            {"ladder": [ladder_row("smoorverliefd", mean), ladder_row("hearts", 2 * mean)]}))
    return folder


def by_key(points: list[dict]) -> dict:
    return {(p["run"], p["iteration"], p["rule_set"]): p for p in points}


def test_a_run_from_another_runs_checkpoint_goes_on_from_its_decisions_and_screen(tmp_path):
    a = make_run(tmp_path / "a", "gen1.pt", [10, 10, 10], {0: -3.0, 2: -2.0})
    b = make_run(tmp_path / "b", "runs/a/it2.pt", [5, 5], {1: -1.0})
    points = by_key(curve_points([Run.load(a), Run.load(b)]))
    assert points["a", 2, "smoorverliefd"]["decisions"] == 20
    start = points["b", 0, "hearts"]
    assert (start["decisions"], start["mean"]) == (20, -4.0)  # a's screen of it2
    assert points["b", 1, "smoorverliefd"]["decisions"] == 25
    assert points["b", 1, "hearts"]["mean"] == -2.0


def test_runs_from_the_same_network_share_its_screen_at_iteration_0(tmp_path):
    a = make_run(tmp_path / "a", "gen1.pt", [10], {0: -3.0, 1: -2.5})
    c = make_run(tmp_path / "c", "gen1.pt", [7], {1: -2.0})
    points = by_key(curve_points([Run.load(a), Run.load(c)]))
    assert points["c", 0, "smoorverliefd"]["decisions"] == 0
    assert points["c", 0, "smoorverliefd"]["mean"] == -3.0
    assert points["c", 1, "smoorverliefd"]["decisions"] == 7
    unscreened = make_run(tmp_path / "d", "other.pt", [7], {1: -2.0})
    assert [p["iteration"] for p in curve_points([Run.load(unscreened)])] == [1, 1]


def test_the_command_writes_the_plot_and_its_points(tmp_path, capsys):
    a = make_run(tmp_path / "a", "gen1.pt", [10, 10], {0: -3.0, 2: -2.0})
    out = tmp_path / "plots" / "curve.png"
    assert dmc_curve.main(["--runs", str(a), "--out", str(out)]) == 0
    assert out.stat().st_size > 0 and out.with_suffix(".svg").stat().st_size > 0
    with out.with_suffix(".csv").open() as table:
        rows = list(csv.DictReader(table))
    assert [(r["iteration"], r["rule_set"], r["decisions"], float(r["mean"])) for r in rows] == [
        ("0", "smoorverliefd", "0", -3.0), ("0", "hearts", "0", -6.0),
        ("2", "smoorverliefd", "20", -2.0), ("2", "hearts", "20", -4.0)]
    assert "curve.png" in capsys.readouterr().out


@pytest.mark.parametrize("breakage, message", [
    ("no log", "not a DMC run's folder: no log.jsonl"),
    ("gap", "has no line for iteration 2"),
    ("late screen", "screen of iteration 5 beyond its log (3 iterations)"),
])
def test_folders_that_do_not_fit_are_refused_in_one_line(tmp_path, capsys, breakage, message):
    a = make_run(tmp_path / "a", "gen1.pt", [10, 10, 10], {1: -2.0})
    if breakage == "no log":
        (a / "log.jsonl").unlink()
    elif breakage == "gap":
        lines = (a / "log.jsonl").read_text().splitlines()
        (a / "log.jsonl").write_text("\n".join([lines[0], lines[2]]) + "\n")
    else:
        (a / "screen_policy_it5.json").write_text((a / "screen_policy_it1.json").read_text())
    assert dmc_curve.main(["--runs", str(a), "--out", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m experiments.dmc_curve: error:") and message in err


def test_the_committed_runs_continue_each_other():
    runs = [Run.load(ROOT / "docs/results/rl" / f"dmc_run{n}") for n in (1, 2, 3)]
    points = by_key(curve_points(runs))
    last_of_run2 = max(i for (run, i, _) in points if run == "dmc_run2")
    for rule_set in ("smoorverliefd", "hearts"):
        assert points["dmc_run3", 0, rule_set] | {"run": "", "iteration": 0} == \
            points["dmc_run2", last_of_run2, rule_set] | {"run": "", "iteration": 0}
        assert points["dmc_run2", 0, rule_set]["mean"] == points["dmc_run1", 0, rule_set]["mean"]
