"""The DMC learning curve (experiments/dmc_curve.py): each screen where the network's
training put it, runs continued from another run's checkpoint drawn on from there."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from pathlib import Path

import pytest

from experiments import dmc_curve
from experiments.dmc_curve import Run, curve_points

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "docs/results/rl"


def ladder_row(rule_set: str, mean: float, checkpoint: str) -> dict:
    return {"rule_set": rule_set, "players": 4, "deals": 10, "weaker": "mc",
            "stronger": f"ppo:checkpoint={checkpoint}",
            "advantage": {"mean": mean, "low": mean - 0.5, "high": mean + 0.5}}


def make_run(folder: Path, init: str, decisions: list[int], screens: dict[int, float],
             out_dir: str = "", seed: int = 1000) -> Path:
    """A run folder as experiments.dmc and agent_strength write it (the fields read)."""
    folder.mkdir()
    out_dir = out_dir or f"runs/{folder.name}"
    (folder / "args.json").write_text(json.dumps({"init": init, "out_dir": out_dir}))
    (folder / "log.jsonl").write_text("".join(
        json.dumps({"iteration": i, "decisions": d}) + "\n" for i, d in enumerate(decisions, 1)))
    for i, mean in screens.items():
        write_screen(folder / f"screen_policy_it{i}.json", f"{out_dir}/it{i}.pt", mean, seed)
    return folder


def write_screen(path: Path, checkpoint: str, mean: float, seed: int = 1000) -> None:
    """agent_strength's JSON of mc against ``checkpoint`` (the fields read)."""
    rows = [ladder_row("smoorverliefd", mean, checkpoint),
            ladder_row("hearts", 2 * mean, checkpoint)]
    path.write_text(json.dumps({"args": {"seed": seed}, "ladder": rows}))


def by_key(points) -> dict:
    return {(p.run, p.iteration, p.rule_set): p for p in points}


def test_a_run_from_another_runs_checkpoint_goes_on_from_its_decisions_and_screen(tmp_path):
    a = make_run(tmp_path / "a", "gen1.pt", [10, 10, 10], {0: -3.0, 2: -2.0})
    b = make_run(tmp_path / "b", "runs/a/it2.pt", [5, 5], {1: -1.0})
    c = make_run(tmp_path / "c", "runs/b/it1.pt", [1], {1: -0.5})
    points = by_key(curve_points([Run.load(a), Run.load(b), Run.load(c)]))
    assert points["a", 2, "smoorverliefd"].decisions == 20
    start = points["b", 0, "hearts"]
    assert (start.decisions, start.mean) == (20, -4.0)  # a's screen of it2
    assert points["b", 1, "smoorverliefd"].decisions == 25
    assert points["b", 1, "hearts"].mean == -2.0
    assert points["c", 0, "smoorverliefd"].mean == -1.0  # b's screen of it1
    assert points["c", 1, "smoorverliefd"].decisions == 26  # a's 20, b's 5, its own 1


def test_a_run_from_a_shipped_checkpoint_goes_on_from_the_run_that_wrote_it(tmp_path):
    """dmc3_it1000 ships with its training args (run 3's folder, iteration 1,000): a run
    from it goes on from run 3's decisions and screen there."""
    three = make_run(tmp_path / "three", "", [2] * 1000, {1000: -1.0}, out_dir="runs/dmc3")
    four = make_run(tmp_path / "four", "dmc3_it1000", [3], {1: -0.5})
    points = by_key(curve_points([Run.load(three), Run.load(four)]))
    start = points["four", 0, "smoorverliefd"]
    assert (start.decisions, start.mean) == (2000, -1.0)
    assert points["four", 1, "smoorverliefd"].decisions == 2003


def test_a_run_trained_into_an_absolute_folder_is_found_by_its_folders_name(tmp_path):
    a = make_run(tmp_path / "a", "gen1.pt", [10, 10], {2: -2.0}, out_dir="/work/x/runs/dmcA")
    b = make_run(tmp_path / "b", "runs/dmcA/it2.pt", [5], {1: -1.0})
    assert by_key(curve_points([Run.load(a), Run.load(b)]))["b", 1, "hearts"].decisions == 25


def test_runs_from_the_same_file_share_its_screen_at_iteration_0_fresh_ones_do_not(tmp_path):
    a = make_run(tmp_path / "a", "gen1.pt", [10], {0: -3.0, 1: -2.5})
    c = make_run(tmp_path / "c", "gen1.pt", [7], {1: -2.0})
    d = make_run(tmp_path / "d", "other.pt", [7], {1: -2.0})
    points = by_key(curve_points([Run.load(a), Run.load(c), Run.load(d)]))
    assert (points["c", 0, "smoorverliefd"].decisions, points["c", 0, "smoorverliefd"].mean) \
        == (0, -3.0)
    assert points["c", 1, "smoorverliefd"].decisions == 7
    assert ("d", 0, "smoorverliefd") not in points
    fresh = [make_run(tmp_path / name, "", [7], {0: -4.0} if name == "e" else {1: -2.0})
             for name in ("e", "f")]
    points = by_key(curve_points([Run.load(run) for run in fresh]))
    assert ("f", 0, "smoorverliefd") not in points  # another fresh network's screen


def test_the_command_writes_the_plot_and_its_points(tmp_path, capsys):
    a = make_run(tmp_path / "a", "gen1.pt", [10, 10], {0: -3.0, 2: -2.0})
    out = tmp_path / "plots" / "curve.png"
    assert dmc_curve.main(["--runs", str(a), "--out", str(out)]) == 0
    assert out.stat().st_size > 0 and out.with_suffix(".svg").stat().st_size > 0
    with out.with_suffix(".csv").open() as table:
        rows = list(csv.DictReader(table))
    assert [(r["iteration"], r["rule_set"], r["decisions"], r["seed"], float(r["mean"]))
            for r in rows] == [("0", "smoorverliefd", "0", "1000", -3.0),
                               ("0", "hearts", "0", "1000", -6.0),
                               ("2", "smoorverliefd", "20", "1000", -2.0),
                               ("2", "hearts", "20", "1000", -4.0)]
    assert "curve.png" in capsys.readouterr().out
    drawn = {path.name: path.read_bytes() for path in out.parent.iterdir()}
    assert dmc_curve.main(["--runs", str(a), "--out", str(out)]) == 0
    assert {path.name: path.read_bytes() for path in out.parent.iterdir()} == drawn  # same bytes


def break_run(tmp_path: Path, breakage: str) -> list[Path]:
    a = make_run(tmp_path / "a", "gen1.pt", [10, 10, 10], {1: -2.0})
    if breakage == "no log":
        (a / "log.jsonl").unlink()
    elif breakage == "gap":
        lines = (a / "log.jsonl").read_text().splitlines()
        (a / "log.jsonl").write_text("\n".join([lines[0], lines[2]]) + "\n")
    elif breakage == "late screen":
        write_screen(a / "screen_policy_it5.json", "runs/a/it5.pt", -1.0)
    elif breakage == "wrong screen":
        (a / "screen_policy_it3.json").write_text((a / "screen_policy_it1.json").read_text())
    elif breakage == "foreign screen":
        write_screen(a / "screen_policy_it2.json", "runs/b/it2.pt", -1.0)
    elif breakage == "log disagrees":
        with (a / "log.jsonl").open("a") as log:
            log.write(json.dumps({"iteration": 2, "decisions": 11}) + "\n")
    elif breakage == "same name":
        (tmp_path / "other").mkdir()
        return [a, make_run(tmp_path / "other" / "a", "gen1.pt", [5], {1: -1.0},
                            out_dir="runs/a2")]
    elif breakage == "no decisions":
        (a / "log.jsonl").write_text('{"iteration": 1}\n')
    elif breakage == "parent not given":
        return [make_run(tmp_path / "b", "runs/a/it2.pt", [5], {1: -1.0})]
    elif breakage == "other seed":
        return [a, make_run(tmp_path / "b", "gen1.pt", [5], {1: -1.0}, seed=7)]
    elif breakage == "cycle":
        return [make_run(tmp_path / "b", "runs/c/it1.pt", [5], {1: -1.0}),
                make_run(tmp_path / "c", "runs/b/it1.pt", [5], {1: -1.0})]
    elif breakage == "no screens":
        (a / "screen_policy_it1.json").unlink()
    return [a]


@pytest.mark.parametrize("breakage, message", [
    ("no log", "not a DMC run's folder: no log.jsonl"),
    ("gap", "has no line for iteration 2"),
    ("late screen", "screen of iteration 5 beyond its log (3 iterations)"),
    ("wrong screen", "is not mc against the run's a/it3.pt"),
    ("foreign screen", "ppo:checkpoint=runs/b/it2.pt is not mc against the run's a/it2.pt"),
    ("log disagrees", "two lines of iteration 2 disagree (10 and 11 decisions)"),
    ("same name", "two runs are named a"),
    ("no decisions", "log.jsonl is not what a DMC run or its screen writes (KeyError"),
    ("parent not given", "starts from runs/a/it2.pt, a checkpoint of a run not given"),
    ("other seed", "the screens deal from different seeds ([7, 1000])"),
    ("cycle", "runs b -> c -> b start from each other"),
    ("no screens", "nothing to draw"),
])
def test_folders_that_do_not_fit_are_refused_in_one_line(tmp_path, capsys, breakage, message):
    runs = [str(run) for run in break_run(tmp_path, breakage)]
    assert dmc_curve.main(["--runs", *runs, "--out", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m experiments.dmc_curve: error:") and message in err
    assert not (tmp_path / "c.png").exists()


def test_the_committed_curve_is_what_the_committed_runs_draw():
    runs = [Run.load(ROOT / run) for run in dmc_curve.Args().runs]
    assert [run.name for run in runs] == [f"dmc_run{n}" for n in (1, 2, 3, 4)]
    points = curve_points(runs)
    with (COMMITTED / "dmc_curve.csv").open() as table:
        committed = list(csv.DictReader(table))
    assert committed == [{k: str(v) for k, v in asdict(p).items()} for p in points]
    keyed = by_key(points)
    last_of_run2 = max(p.iteration for p in points if p.run == "dmc_run2")
    for rule_set in ("smoorverliefd", "hearts"):  # run 3 began from run 2's last network
        start, end = keyed["dmc_run3", 0, rule_set], keyed["dmc_run2", last_of_run2, rule_set]
        assert (start.decisions, start.mean) == (end.decisions, end.mean)
        assert keyed["dmc_run2", 0, rule_set].mean == keyed["dmc_run1", 0, rule_set].mean
        # run 4 began from the shipped dmc3_it1000: run 3's iteration 1,000
        start, there = keyed["dmc_run4", 0, rule_set], keyed["dmc_run3", 1000, rule_set]
        assert (start.decisions, start.mean) == (there.decisions, there.mean)
