"""The win-rate tournament script: a smoke run, the statistics, and worker-independence."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from experiments.win_rates import (
    CSV_COLUMNS,
    Args,
    mean_interval,
    parse_agent,
    rate_interval,
    run,
)

ROOT = Path(__file__).resolve().parents[1]


def test_smoke_run_through_the_command_line(tmp_path):
    command = [sys.executable, "-m", "experiments.win_rates", "--agents", "random", "greedy",
               "--players", "3", "4", "--rule-sets", "smoorverliefd", "hearts", "--deals", "4",
               "--chunk", "2", "--out-dir", str(tmp_path), "--run-name", "smoke",
               "--no-progress"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "smoke"
    assert "wrote" in done.stdout and "points/round" in done.stdout
    for name in ("results.csv", "summary.json", "win_rates.png", "points.png"):
        assert (folder / name).stat().st_size > 0
    with open(folder / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == CSV_COLUMNS
    # 2 rule sets x (3 + 4 players) seats x 4 deals x P rotations, one round each
    assert len(rows) == 2 * (3 * 3 + 4 * 4) * 4
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["complete"] and summary["seed"] == 0 and "versions" in summary
    assert "experiments.win_rates" in summary["command"]
    assert {r["agent"] for r in summary["table"]} == {"random", "greedy"}


def test_every_agent_plays_every_seat_of_every_deal(tmp_path):
    folder = run(Args(agents=["random", "greedy"], players=[3], rule_sets=["smoorverliefd"],
                      deals=2, chunk=2, out_dir=str(tmp_path), plots=False, progress=False))
    with open(folder / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for deal in ("0", "1"):
        seats = {(r["agent"], r["seat"]) for r in rows if r["deal"] == deal}
        assert seats == {(a, s) for a in ("random", "greedy") for s in "012"}


def test_results_do_not_depend_on_the_number_of_workers(tmp_path):
    common = dict(agents=["random", "greedy"], players=[3, 4], rule_sets=["smoorverliefd"],
                  deals=6, chunk=2, plots=False, progress=False, matches=True)
    one = run(Args(**common, workers=1, out_dir=str(tmp_path / "one")))
    two = run(Args(**common, workers=2, out_dir=str(tmp_path / "two")))
    assert (one / "results.csv").read_text() == (two / "results.csv").read_text()


def test_confidence_intervals_cover_the_true_value_about_95_percent_of_the_time():
    rng = np.random.default_rng(0)
    trials = 400
    mean_hits = sum(lo <= 2.0 <= hi for _, lo, hi in
                    (mean_interval(rng.normal(2.0, 3.0, 30)) for _ in range(trials)))
    rate_hits = sum(lo <= 0.3 <= hi for _, lo, hi in
                    (rate_interval(rng.binomial(50, 0.3), 50) for _ in range(trials)))
    assert 0.92 * trials <= mean_hits <= 0.98 * trials
    assert 0.92 * trials <= rate_hits <= 0.99 * trials


def test_agent_specs_and_bad_arguments(tmp_path):
    assert parse_agent("mc:worlds=16,rollout=greedy,budget=0.5") == (
        "mc", {"worlds": 16, "rollout": "greedy", "budget": 0.5})
    with pytest.raises(ValueError, match="key=value"):
        parse_agent("mc:worlds")
    with pytest.raises(ValueError, match="unknown agent 'nobody'"):
        run(Args(agents=["nobody"], out_dir=str(tmp_path), progress=False))
    with pytest.raises(ValueError, match="partners needs exactly 4 players"):
        run(Args(agents=["random"], rule_sets=["partners"], players=[3], out_dir=str(tmp_path),
                 progress=False))
    with pytest.raises(ValueError, match="needs whole matches"):
        run(Args(agents=["random"], rule_sets=["cupid"], out_dir=str(tmp_path),
                 progress=False))


def test_ctrl_c_keeps_the_finished_chunks(tmp_path):
    import signal
    import time

    command = [sys.executable, "-m", "experiments.win_rates", "--agents", "random",
               "--players", "4", "--rule-sets", "smoorverliefd", "--deals", "100000",
               "--chunk", "1", "--out-dir", str(tmp_path), "--run-name", "stopped",
               "--no-plots", "--no-progress"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    time.sleep(4)  # long enough to finish some chunks of one deal each
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "interrupted" in err
    summary = json.loads((tmp_path / "stopped" / "summary.json").read_text())
    assert not summary["complete"] and 0 < summary["chunks_done"] < summary["chunks"]
    with open(tmp_path / "stopped" / "results.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == summary["chunks_done"] * 4 * 4


def test_command_line_booleans_are_flags():
    """tyro's command line: --flag/--no-flag booleans, lists as several values."""
    import tyro

    from experiments.win_rates import Args

    args = tyro.cli(Args, args=["--matches", "--no-plots", "--agents", "random", "greedy"])
    assert args.matches and not args.plots and args.progress
    assert args.agents == ["random", "greedy"]
    with pytest.raises(SystemExit):  # a boolean takes no value
        tyro.cli(Args, args=["--matches", "true"])
