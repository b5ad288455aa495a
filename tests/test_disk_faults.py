"""A disk that fills up or turns read-only in the middle of a run loses nothing.

The fault is injected by making ``os.fsync`` or ``os.replace`` raise for one file of the
run's folder (after some chunks are done, or while the outputs are written). The command
ends in one line, ``prog: error: cannot write <file>: <problem>; <summary> lists the N
finished chunks, --resume continues ...``, with exit status 2: no traceback, no worker
left, no temporary file, a summary that lists only chunks whose files are in place, and
``--resume`` (once the fault is gone) writes the same results as an uninterrupted run.
"""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import re
from pathlib import Path

import pytest
from test_resume_checks import league_args
from test_win_rates import check_truthful, small_args

from agents.evaluation import runs
from experiments import league, win_rates

PROBLEMS = {errno.ENOSPC: ("No space left on device", "there is room"),
            errno.EROFS: ("Read-only file system", "the folder can be written"),
            errno.EACCES: ("Permission denied", "the folder can be written")}


def argv(args) -> list[str]:
    """The command line of ``args`` (a win_rates or league ``Args``)."""
    line = ["--agents", *args.agents, "--players", *map(str, args.players), "--rule-sets",
            *args.rule_sets, "--deals", str(args.deals), "--chunk", str(args.chunk),
            "--workers", str(args.workers), "--out-dir", args.out_dir, "--run-name",
            args.run_name, "--no-progress", "--plots" if args.plots else "--no-plots"]
    return line + (["--resume"] if args.resume else [])


def fail_writes(monkeypatch, function: str, number: int, matches, after: int = 0) -> list:
    """``os.<function>`` (``fsync`` or ``replace``) raises ``OSError(number)`` for the files
    whose name ``matches`` (a regular expression on the final file name), once ``after``
    such files were written; returns the list of failed names."""
    real = getattr(os, function)
    seen, failed = [], []

    def final_name(argument) -> str:
        if function == "fsync":  # the temporary file: .<name>.<random>.tmp
            name = os.path.basename(os.readlink(f"/proc/self/fd/{argument}"))
            return name[1:].rsplit(".", 2)[0] if name.endswith(".tmp") else name
        return os.path.basename(argument)

    def faulty(*arguments, **options):
        name = final_name(arguments[1] if function == "replace" else arguments[0])
        if re.fullmatch(matches, name):
            if len(seen) >= after:
                failed.append(name)
                raise OSError(number, os.strerror(number))
            seen.append(name)
        return real(*arguments, **options)

    monkeypatch.setattr(os, function, faulty)
    return failed


def no_leftovers(folder: Path) -> None:
    """No temporary file or drafts' folder anywhere in the run's folder (the lock stays)."""
    hidden = [p.name for p in folder.rglob(".*") if p.name != runs.LOCK]
    assert hidden == [], hidden
    assert multiprocessing.active_children() == []


def check_error(err: str, prog: str, path: Path, number: int, summary: dict,
                summary_file: str = "summary.json") -> None:
    problem, remedy = PROBLEMS[number]
    n = summary["chunks_done"]
    chunks = {0: "no finished chunk", 1: "the 1 finished chunk"}.get(n, f"the {n} finished chunks")
    assert err == (f"{prog}: error: cannot write {path}: {problem}; {summary_file} lists "
                   f"{chunks}, --resume continues once {remedy}\n")


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> bytes:
    """results.csv of the uninterrupted run."""
    folder = win_rates.run(small_args(tmp_path_factory.mktemp("whole")))
    return (folder / "results.csv").read_bytes()


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(("function", "number", "matches"), [
    ("fsync", errno.ENOSPC, r".*_\d+p_\d+\.csv"),  # a chunk's file
    ("replace", errno.EROFS, r".*_\d+p_\d+\.csv"),
    ("fsync", errno.ENOSPC, r"summary\.json"),  # the summary after a chunk's file
    ("replace", errno.EACCES, r"summary\.json"),
], ids=["chunk-ENOSPC", "chunk-EROFS", "summary-ENOSPC", "summary-EACCES"])
def test_a_failed_write_while_playing(tmp_path, monkeypatch, capsys, whole, workers, function,
                                      number, matches):
    args = small_args(tmp_path, workers=workers)
    # The summary is written once when the folder is claimed, then after every chunk.
    failed = fail_writes(monkeypatch, function, number, matches,
                         after=3 if matches.startswith("summary") else 2)
    assert win_rates.main(argv(args)) == 2
    out, err = capsys.readouterr()
    monkeypatch.undo()
    folder = tmp_path / "run"
    assert len(failed) == 1
    summary = check_truthful(folder)
    assert summary["chunks_done"] == 2 and not summary["complete"]
    assert summary["files"] == []
    path = folder / ("chunks/" + failed[0] if matches.endswith("csv") else failed[0])
    check_error(err, "smoor-bench", path, number, summary)
    no_leftovers(folder)
    assert win_rates.main(argv(small_args(tmp_path, workers=workers, resume=True))) == 0
    assert check_truthful(folder)["complete"]
    assert (folder / "results.csv").read_bytes() == whole


@pytest.mark.parametrize(("function", "number"), [("fsync", errno.ENOSPC),
                                                  ("replace", errno.EROFS)])
def test_a_failed_write_of_the_results(tmp_path, monkeypatch, capsys, whole, function, number):
    args = small_args(tmp_path)
    fail_writes(monkeypatch, function, number, r"results\.csv")
    assert win_rates.main(argv(args)) == 2
    err = capsys.readouterr().err
    monkeypatch.undo()
    folder = tmp_path / "run"
    summary = check_truthful(folder)
    assert summary["chunks_done"] == 4 and summary["files"] == []
    assert not (folder / "results.csv").exists()
    check_error(err, "smoor-bench", folder / "results.csv", number, summary)
    no_leftovers(folder)
    assert win_rates.main(argv(small_args(tmp_path, resume=True))) == 0
    assert (folder / "results.csv").read_bytes() == whole


def test_a_full_disk_while_drawing_the_plots(tmp_path, monkeypatch, capsys, whole):
    def half_a_plot(summary, folder):
        with open(folder / "win_rates.png", "w") as f:
            f.write("half a picture")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runs, "plot_summary", half_a_plot)
    assert win_rates.main(argv(small_args(tmp_path, plots=True))) == 2
    err = capsys.readouterr().err
    monkeypatch.undo()
    folder = tmp_path / "run"
    summary = check_truthful(folder)
    assert summary["chunks_done"] == 4 and summary["files"] == ["results.csv"]
    assert not (folder / "win_rates.png").exists()
    check_error(err, "smoor-bench", folder / "win_rates.png", errno.ENOSPC, summary)
    no_leftovers(folder)
    assert win_rates.main(argv(small_args(tmp_path, plots=True, resume=True))) == 0
    summary = check_truthful(folder)
    assert "win_rates.png" in summary["files"]
    assert (folder / "results.csv").read_bytes() == whole


def test_a_read_only_folder_while_moving_the_plots(tmp_path, monkeypatch, capsys):
    fail_writes(monkeypatch, "replace", errno.EROFS, r"points\.png")
    assert win_rates.main(argv(small_args(tmp_path, plots=True))) == 2
    err = capsys.readouterr().err
    monkeypatch.undo()
    folder = tmp_path / "run"
    summary = check_truthful(folder)  # the plots moved before the fault are listed
    assert "points.png" not in summary["files"] and "win_rates.png" in summary["files"]
    check_error(err, "smoor-bench", folder / "points.png", errno.EROFS, summary)
    no_leftovers(folder)


def test_no_room_for_the_first_summary(tmp_path, monkeypatch, capsys):
    fail_writes(monkeypatch, "fsync", errno.ENOSPC, r"summary\.json")
    assert win_rates.main(argv(small_args(tmp_path))) == 2
    err = capsys.readouterr().err
    monkeypatch.undo()
    folder = tmp_path / "run"
    assert err == (f"smoor-bench: error: cannot write {folder / 'summary.json'}: No space left "
                   f"on device; no run was begun (no summary.json); run again once there is "
                   f"room\n")
    assert list((folder / "chunks").iterdir()) == []
    no_leftovers(folder)
    assert win_rates.main(argv(small_args(tmp_path))) == 0  # a new run, no --resume needed


@pytest.mark.parametrize(("workers", "matches"), [(2, r".*_\d+p_\d+\.csv"),
                                                  (1, r"games\.csv")])
def test_the_league_keeps_its_chunks_too(tmp_path, monkeypatch, capsys, workers, matches):
    whole = league.run(league_args(tmp_path, run_name="whole"))
    args = league_args(tmp_path, workers=workers)
    fail_writes(monkeypatch, "fsync", errno.ENOSPC, matches, after=1 if workers == 2 else 0)
    assert league.main(argv(args)) == 2
    err = capsys.readouterr().err
    monkeypatch.undo()
    folder = tmp_path / "run"
    summary = json.loads((folder / "league.json").read_text())
    for name in summary["finished_chunks"]:
        assert (folder / "chunks" / f"{name[0]}_{name[1]}p_{name[2]:06d}.csv").is_file()
    assert re.fullmatch(r"smoor-league: error: cannot write \S+: No space left on device; "
                        r"league\.json lists (the \d+ finished chunks?|no finished chunk), "
                        r"--resume continues once there is room\n", err), err
    no_leftovers(folder)
    assert league.main(argv(league_args(tmp_path, workers=workers, resume=True))) == 0
    assert (folder / "games.csv").read_bytes() == (whole / "games.csv").read_bytes()


def test_smoor_throughput_on_a_full_disk_keeps_the_earlier_file(tmp_path, monkeypatch, capsys):
    from experiments import throughput

    out = tmp_path / "throughput.json"
    out.write_text("earlier")
    fail_writes(monkeypatch, "fsync", errno.ENOSPC, r"throughput\.json")
    code = throughput.main(["--out", str(out), "--seconds", "0", "--batch-sizes", "1",
                            "--players", "3", "--variant-batch", "1"])
    assert code == 2 and out.read_text() == "earlier"
    err = capsys.readouterr().err.strip()
    assert err == f"smoor-throughput: error: cannot write {out}: No space left on device"
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left
