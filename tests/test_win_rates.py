"""The win-rate tournament script: a smoke run, the statistics, and worker-independence."""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import processes_mentioning, start_interruptible

from agents import parse_agent
from agents.evaluation import runs
from agents.evaluation.duplicate import CSV_COLUMNS
from agents.evaluation.stats import mean_interval, rate_interval
from experiments.win_rates import Args, run

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
    assert parse_agent("ismcts:prior=none,noise=False") == (
        "ismcts", {"prior": None, "noise": False})
    with pytest.raises(ValueError, match="key=value"):
        parse_agent("mc:worlds")
    with pytest.raises(ValueError, match="unknown agent 'nobody'"):
        run(Args(agents=["nobody"], out_dir=str(tmp_path), progress=False))
    with pytest.raises(ValueError, match="partners.*played by 4 players, got 3"):
        run(Args(agents=["random"], rule_sets=["partners"], players=[3], out_dir=str(tmp_path),
                 progress=False))
    with pytest.raises(ValueError, match="needs whole matches"):
        run(Args(agents=["random"], rule_sets=["cupids_arrow"], out_dir=str(tmp_path),
                 progress=False))


@pytest.mark.parametrize("workers,stop", [(1, "SIGINT"), (2, "SIGINT"), (2, "SIGTERM")])
def test_ctrl_c_keeps_the_finished_chunks(tmp_path, workers, stop):
    """Ctrl-C, or SIGTERM (``kill``: a run in the background), stops the run and its
    workers and keeps the finished chunks."""
    import signal
    import time

    command = [sys.executable, "-m", "experiments.win_rates", "--agents", "random",
               "--players", "4", "--rule-sets", "smoorverliefd", "--deals", "100000",
               "--chunk", "1", "--out-dir", str(tmp_path), "--run-name", "stopped",
               "--no-plots", "--no-progress", "--workers", str(workers)]
    process = start_interruptible(command, cwd=ROOT)
    deadline = time.monotonic() + 120  # some chunks of one deal each are finished
    while not list((tmp_path / "stopped").glob("chunks/*.csv")):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    process.send_signal(getattr(signal, stop))
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err  # stopped early: the shell's status for Ctrl-C
    assert "interrupted" in err and "Traceback" not in err
    assert processes_mentioning(str(tmp_path)) == [], err  # no worker left playing
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


# ------------------------------------------------------- runs that never lose results
def small_args(tmp_path: Path, **changes) -> Args:
    """A four-chunk tournament (2 player counts x 2 chunks of one deal), no bar."""
    settings = dict(agents=["random", "greedy"], players=[3, 4], rule_sets=["smoorverliefd"],
                    deals=2, chunk=1, out_dir=str(tmp_path), run_name="run", plots=False,
                    progress=False)
    return Args(**{**settings, **changes})


def interrupt_after(monkeypatch, stop_at: int) -> None:
    """Ctrl-C in the chunk function: units with chunk index ``stop_at`` raise
    KeyboardInterrupt (in the worker that plays them, with worker processes)."""
    from experiments import win_rates

    real = win_rates.play_chunk

    def chunk_or_ctrl_c(args, rule_set, players, chunk):
        if chunk == stop_at:
            raise KeyboardInterrupt
        return real(args, rule_set, players, chunk)

    monkeypatch.setattr(win_rates, "play_chunk", chunk_or_ctrl_c)


def check_truthful(folder: Path) -> dict:
    """The summary lists exactly what the folder holds: its chunk files hold the rows of
    results.csv (if listed), and every file it lists exists."""
    summary = json.loads((folder / "summary.json").read_text())
    for name in summary["files"]:
        assert (folder / name).is_file(), name
    texts = []
    for rule_set, players, chunk in summary["finished_chunks"]:
        chunk_file = folder / "chunks" / f"{rule_set}_{players}p_{chunk:06d}.csv"
        texts.append(chunk_file.read_bytes().decode())
    assert summary["chunks_done"] == len(summary["finished_chunks"])
    assert summary["complete"] == (summary["chunks_done"] == summary["chunks"])
    if "results.csv" in summary["files"]:
        header, body = (folder / "results.csv").read_bytes().decode().split("\r\n", 1)
        assert header == ",".join(CSV_COLUMNS) and body == "".join(texts)
    return summary


@pytest.mark.parametrize("workers", [1, 2])
def test_interrupted_run_resumes_to_the_same_results(tmp_path, monkeypatch, workers):
    whole = run(small_args(tmp_path, run_name="whole", plots=True))
    assert check_truthful(whole)["complete"]
    interrupt_after(monkeypatch, stop_at=1)
    folder = run(small_args(tmp_path, workers=workers, plots=True))
    summary = check_truthful(folder)
    assert not summary["complete"] and summary["interrupted"]
    # In this process chunk 0 of each player count finishes first; workers may be stopped
    # before any chunk is done.
    assert (1 if workers == 1 else 0) <= summary["chunks_done"] <= 2
    assert all(chunk == 0 for _, _, chunk in summary["finished_chunks"])
    plots = {"win_rates.png"} if summary["chunks_done"] else set()  # none without rows
    assert {"results.csv", *plots} <= set(summary["files"])
    monkeypatch.undo()
    with pytest.raises(ValueError, match="unfinished run .*--resume"):
        run(small_args(tmp_path, workers=workers))
    resumed = run(small_args(tmp_path, workers=workers, plots=True, resume=True))
    summary = check_truthful(resumed)
    assert summary["complete"] and not summary["interrupted"]
    assert (resumed / "results.csv").read_bytes() == (whole / "results.csv").read_bytes()
    assert summary["table"] == json.loads((whole / "summary.json").read_text())["table"]


def test_ctrl_c_before_the_first_chunk_claims_nothing(tmp_path, monkeypatch):
    interrupt_after(monkeypatch, stop_at=0)
    summary = check_truthful(run(small_args(tmp_path, plots=True)))
    assert summary["chunks_done"] == 0 and not summary["complete"]
    assert summary["files"] == ["results.csv"] and summary["table"] == []  # header only


def test_ctrl_c_while_writing_the_plots(tmp_path, monkeypatch):
    def draw_then_ctrl_c(summary, folder):
        (folder / "win_rates.png").write_text("half a picture")
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "plot_summary", draw_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        run(small_args(tmp_path, plots=True))
    folder = tmp_path / "run"
    summary = check_truthful(folder)
    assert summary["complete"] and summary["files"] == ["results.csv"]
    assert not (folder / "win_rates.png").exists()
    # no drafts left (the lock file stays: removing it could let two runs lock two files)
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == [runs.LOCK]


def test_a_finished_run_is_replaced_only_with_overwrite(tmp_path):
    first = run(small_args(tmp_path, plots=True))
    before = (first / "results.csv").read_bytes()
    with pytest.raises(ValueError, match="finished run .*--overwrite"):
        run(small_args(tmp_path, seed=1))
    assert (first / "results.csv").read_bytes() == before
    with pytest.raises(ValueError, match="one of them"):
        run(small_args(tmp_path, resume=True, overwrite=True))
    with pytest.raises(ValueError, match="--seed 0 .now 1."):
        run(small_args(tmp_path, seed=1, resume=True))
    again = run(small_args(tmp_path, seed=1, overwrite=True))
    summary = check_truthful(again)
    assert summary["complete"] and summary["seed"] == 1
    assert summary["files"] == ["results.csv"]  # the old plots went with the old run
    assert not (again / "win_rates.png").exists()
    assert (again / "results.csv").read_bytes() != before
    with pytest.raises(ValueError, match="nothing to resume"):
        run(small_args(tmp_path, run_name="new", resume=True))


def test_an_unwritable_folder_fails_before_any_game(tmp_path, monkeypatch):
    from experiments import win_rates

    def no_games(*args):
        raise AssertionError("a game was played")

    monkeypatch.setattr(win_rates, "play_chunk", no_games)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for out_dir in (blocker, blocker / "below"):  # a folder path through a regular file
        with pytest.raises(ValueError, match="cannot write the results folder"):
            run(small_args(tmp_path, out_dir=str(out_dir)))


def test_atomic_writes_leave_the_old_file_or_the_new_one(tmp_path, monkeypatch):
    path = tmp_path / "summary.json"
    runs.write_atomic(path, "old")

    def ctrl_c(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(runs.os, "replace", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        runs.write_atomic(path, "new")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize(("changes", "message"), [
    ({"chunk": 0}, "--chunk must be at least 1, got 0"),
    ({"deals": 0}, "--deals must be at least 1"),
    ({"workers": 0}, "--workers must be at least 1"),
    ({"deals": -3}, "--deals must be at least 1, got -3"),
    ({"seed": -1}, "--seed must be in 0.."),
    ({"players": []}, "--players needs at least one value"),
    ({"rule_sets": ["hearts", "hearts"]}, "--rule-sets lists a value twice"),
    ({"run_name": "../elsewhere"}, "--run-name must be a plain folder name"),
])
def test_bad_values_are_refused_before_anything_starts(tmp_path, changes, message):
    with pytest.raises(ValueError, match=message):
        run(small_args(tmp_path, **changes))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TypeError, match="--deals must be an int"):
        run(small_args(tmp_path, deals=2.5))


def test_bad_values_on_the_command_line_are_one_line_errors(tmp_path, capsys):
    from experiments.win_rates import main

    assert main(["--chunk", "0", "--out-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "smoor-bench: error: --chunk must be at least 1, got 0\n"


def test_rule_options_play_cupids_arrow_with_another_variant(tmp_path, monkeypatch):
    """--rule-options sets the flag on the preset's rules (Cupid's Arrow with met Troef, in
    matches), on the preset's deals; the summary records the options and a resume must
    give the same ones."""
    from agents.evaluation import duplicate

    played = []

    class Recording(duplicate.Engine):
        def __init__(self, rules, batch_size):
            played.append(rules)
            super().__init__(rules, batch_size)

    monkeypatch.setattr(duplicate, "Engine", Recording)
    common = dict(agents=["random", "greedy"], players=[3], rule_sets=["cupids_arrow"],
                  matches=True, deals=2, chunk=2, plots=False, progress=False,
                  out_dir=str(tmp_path))
    folder = run(Args(**common, rule_options=["trump_hearts=true"], run_name="troef"))
    assert played and all(r.cupids_arrow and r.trump_hearts and r.num_players == 3
                          and r.target_score is not None for r in played)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["args"]["rule_options"] == ["trump_hearts=true"]
    rows = (folder / "results.csv").read_text()
    assert "cupids_arrow" in rows and summary["complete"]
    plain = run(Args(**common, run_name="plain"))  # same deals, other rules: other games
    assert (plain / "results.csv").read_text() != rows
    assert (json.loads((plain / "summary.json").read_text())["fingerprints"]["settings"]
            != summary["fingerprints"]["settings"])
    with pytest.raises(ValueError, match=r"--rule-options \['trump_hearts=true'\] \(now \[\]\)"):
        run(Args(**common, run_name="troef", resume=True))
    # the same options resume (the finished run is complete: nothing is played again)
    again = run(Args(**common, rule_options=["trump_hearts=true"], run_name="troef",
                     resume=True))
    assert (again / "results.csv").read_text() == rows


def test_rule_options_in_another_order_are_the_same_settings():
    one = Args(agents=["random"], rule_sets=["cupids_arrow"], matches=True,
               rule_options=["trump_hearts=true", "pip_scoring=true"])
    other = Args(agents=["random"], rule_sets=["cupids_arrow"], matches=True,
                 rule_options=["pip_scoring=True", "trump_hearts=true"])
    assert runs.settings_fingerprint(one) == runs.settings_fingerprint(other)


def test_rule_options_without_options_keep_the_settings_fingerprint():
    """Runs made before --rule-options existed keep their fingerprint (and so resume)."""
    args = Args(agents=["random"], players=[3], rule_sets=["hearts"], deals=2)
    before = {name: getattr(args, name) for name in runs.RESULT_ARGS}
    assert runs.settings_fingerprint(args) == hashlib.sha256(
        json.dumps(before, sort_keys=True).encode()).hexdigest()[:16]


@pytest.mark.parametrize(("options", "rule_sets", "message"), [
    (["trump_hearts"], ["cupids_arrow"], "is not field=value"),
    (["cupids_arrow=true"], ["cupids_arrow"], "cupids_arrow sets cupids_arrow itself"),
    (["bidding=false"], ["cupids_arrow"], "changes nothing in cupids_arrow"),
    (["bidding=true"], ["smoorverliefd"], "is the rule set bidding"),
    (["partners=true"], ["cupids_arrow"], "partners needs exactly 4 players"),
    (["cupids_arrow=true"], ["smoorverliefd"], "is the rule set cupids_arrow"),  # a match
    (["queen_breaks_hearts=true"], ["cupids_arrow"], "Hearts options cannot be used"),
])
def test_bad_rule_options_are_refused_before_anything_starts(tmp_path, options, rule_sets,
                                                             message):
    with pytest.raises(ValueError, match=message):
        run(Args(agents=["random"], players=[3], rule_sets=rule_sets, matches=True,
                 rule_options=options, out_dir=str(tmp_path), progress=False))
    assert list(tmp_path.iterdir()) == []
