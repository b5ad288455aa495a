"""The console scripts as a user meets them: smoor-bench, smoor-league and smoor-throughput
run on their defaults (at a tiny size) from a fresh folder, refuse a bad agent spec or
folder in one line naming the command before touching any folder, list the agent and
rule-set names in --help, stop on Ctrl-C without a traceback, and write result files
with the umask's permissions."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import start_interruptible

from agents import agent_names
from smoor_env import PRESETS

MODULES = {"smoor-bench": "experiments.win_rates", "smoor-league": "experiments.league",
           "smoor-throughput": "experiments.throughput"}
#: Wide help (tyro wraps to the terminal) and no colours, as a pipe gets.
ENV = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}


def command(name: str, *args: str) -> list[str]:
    return [sys.executable, "-m", MODULES[name], *args]


def run_script(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command(name, *args), cwd=cwd, capture_output=True, text=True,
                          timeout=240, env=ENV)


def assert_one_line_error(done: subprocess.CompletedProcess, name: str, *words: str) -> None:
    """Exit status 2 and one stderr line ``<name>: error: ...`` holding ``words``."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{name}: error: "), done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def tree(folder: Path) -> set[str]:
    """Every path below ``folder``, relative to it."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


# ----------------------------------------------------------------- the defaults
def test_smoor_bench_plays_its_defaults_into_results_only(tmp_path):
    done = run_script("smoor-bench", "--deals", "2", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "results" / "win_rates__seed0"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["complete"] and summary["args"]["agents"] == ["random", "greedy", "mc"]
    assert {p.split("/")[0] for p in tree(tmp_path)} == {"results"}
    assert {p.split("/")[1] for p in tree(tmp_path) if "/" in p} == {"win_rates__seed0"}


def test_smoor_league_plays_its_defaults(tmp_path):
    """The default line-up fills the default tables (5 agents, up to 5 players)."""
    done = run_script("smoor-league", "--deals", "2", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "results" / "league__seed0"
    summary = json.loads((folder / "league.json").read_text())
    assert summary["complete"] and summary["chunks"] == 2 * 3
    assert {(r["rule_set"], r["players"]) for r in summary["ratings"]} == {
        (rule_set, players) for rule_set in ("smoorverliefd", "hearts") for players in (3, 4, 5)}
    for name in ("games.csv", "ratings.csv", "ratings.png", "ratings.svg"):
        assert (folder / name).stat().st_size > 0
    assert {p.split("/")[0] for p in tree(tmp_path)} == {"results"}


def test_smoor_throughput_plays_its_defaults_into_results_only(tmp_path):
    done = run_script("smoor-throughput", "--seconds", "0", "--batch-sizes", "1", "8",
                      "--variant-batch", "8", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert tree(tmp_path) == {"results", "results/throughput.json"}
    rows = json.loads((tmp_path / "results" / "throughput.json").read_text())["rows"]
    assert {r["players"] for r in rows if r["rules"] == "Smoorverliefd"} == {3, 4, 5}


# ------------------------------------------------------------ bad specs, bad folders
BAD_SPECS = [
    ("nobody", ["unknown agent 'nobody'", "greedy", "random"]),
    ("mc:wrlds=8", ["agent 'mc' has no option 'wrlds'", "worlds", "rollouts"]),
    ("mc:worlds=abc", ["agent 'mc'", "worlds must be an int", "'abc'"]),
    ("ppo:checkpoint=nope", ["ppo:checkpoint=nope", "'nope'", "ppo_hearts"]),
]


@pytest.mark.parametrize("name", ["smoor-bench", "smoor-league"])
@pytest.mark.parametrize(("spec", "words"), BAD_SPECS, ids=[s for s, _ in BAD_SPECS])
def test_a_bad_agent_spec_is_one_line_before_any_folder(tmp_path, name, spec, words):
    done = run_script(name, "--agents", "random", "greedy", spec, "--players", "3",
                      "--deals", "1", "--out-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert_one_line_error(done, name, *words)
    assert tree(tmp_path) == set()  # neither --out-dir nor a run folder


@pytest.mark.parametrize("name", ["smoor-bench", "smoor-league"])
def test_a_typo_never_replaces_the_previous_results(tmp_path, name):
    settings = ["--players", "3", "--rule-sets", "hearts", "--deals", "1", "--no-plots",
                "--no-progress", "--out-dir", str(tmp_path), "--run-name", "run"]
    done = run_script(name, "--agents", "random", "greedy", "mc:worlds=2", *settings,
                      cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    before = {path: (tmp_path / path).read_bytes() for path in tree(tmp_path)
              if (tmp_path / path).is_file()}
    done = run_script(name, "--agents", "random", "greedy", "mc:worlds=abc", *settings,
                      "--overwrite", cwd=tmp_path)
    assert_one_line_error(done, name, "worlds must be an int")
    assert {path: (tmp_path / path).read_bytes() for path in before} == before
    assert set(before) == {p for p in tree(tmp_path) if (tmp_path / p).is_file()}


def test_league_line_up_smaller_than_its_tables_is_one_line(tmp_path):
    done = run_script("smoor-league", "--agents", "random", "greedy", "mc", "--players",
                      "3", "5", "--out-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert_one_line_error(done, "smoor-league", "5 players needs at least 5", "--players 5")
    assert tree(tmp_path) == set()


@pytest.mark.parametrize("name", ["smoor-bench", "smoor-league"])
def test_out_dir_is_made_but_not_the_folders_above_it(tmp_path, name):
    done = run_script(name, "--agents", "random", "greedy", "mc", "--players", "3",
                      "--out-dir", str(tmp_path / "missing" / "out"), cwd=tmp_path)
    assert_one_line_error(done, name, "cannot write the results folder", "missing")
    assert tree(tmp_path) == set()


def test_throughput_refuses_a_missing_folder_or_a_bad_value_before_measuring(tmp_path):
    done = run_script("smoor-throughput", "--out", str(tmp_path / "a" / "b" / "x.json"),
                      cwd=tmp_path)
    assert_one_line_error(done, "smoor-throughput", "does not exist")
    done = run_script("smoor-throughput", "--players", "9", cwd=tmp_path)
    assert_one_line_error(done, "smoor-throughput", "num_players")
    assert tree(tmp_path) == set()


# ------------------------------------------------------------------------ --help
@pytest.mark.parametrize("name", ["smoor-bench", "smoor-league"])
def test_help_lists_the_agent_and_rule_set_names(tmp_path, name):
    done = run_script(name, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {name} ")
    for word in [*agent_names(), *PRESETS]:
        assert re.search(rf"\b{word}\b", done.stdout), word
    assert "(default: '')" not in done.stdout  # --run-name says its real default only
    assert tree(tmp_path) == set()


def test_throughput_usage_and_errors_carry_its_name(tmp_path):
    done = run_script("smoor-throughput", "--help", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("usage: smoor-throughput ")
    done = run_script("smoor-throughput", "--seconds", "lots", cwd=tmp_path)
    assert done.returncode == 2 and "smoor-throughput --help" in done.stderr
    assert "Traceback" not in done.stderr


# ------------------------------------------------------------------------ Ctrl-C
@pytest.mark.parametrize("name", ["smoor-league", "smoor-throughput"])
def test_ctrl_c_is_one_line_and_exit_130(tmp_path, name):
    """(smoor-bench's Ctrl-C: tests/test_win_rates.py.) The league keeps its finished
    chunks for --resume; the throughput table writes nothing."""
    args = {"smoor-league": ["--agents", "random", "greedy", "mc:worlds=2", "--players", "3",
                             "--rule-sets", "hearts", "--deals", "100000", "--chunk", "1",
                             "--no-progress", "--out-dir", str(tmp_path), "--run-name", "run"],
            "smoor-throughput": ["--seconds", "30",
                                 "--out", str(tmp_path / "throughput.json")]}[name]
    process = start_interruptible(command(name, *args), cwd=tmp_path, env=ENV)
    try:
        # Past start-up: the league has finished a chunk; the table has printed its header.
        # (A SIGINT during Python's imports can be lost in importlib's module-lock weakref
        # callback, "Exception ignored in ... cb": CPython's, seen here 2 times in 50.)
        deadline = time.monotonic() + 120
        if name == "smoor-league":
            while not list(tmp_path.glob("run/chunks/*.csv")):
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        else:
            assert select.select([process.stdout], [], [], 120)[0], "no header in 120 s"
            assert process.stdout.readline().startswith("rules ")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:  # a run that missed the signal is stopped, not left to the next test
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert len([line for line in err.splitlines() if "interrupted" in line]) == 1, err
    if name == "smoor-league":
        summary = json.loads((tmp_path / "run" / "league.json").read_text())
        assert not summary["complete"] and summary["interrupted"]
        assert 0 < summary["chunks_done"] == len(list((tmp_path / "run" / "chunks").iterdir()))
    else:
        assert tree(tmp_path) == set()


# ------------------------------------------------------------------ permissions
@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077], ids=oct)
def test_result_files_honour_the_umask(tmp_path, umask):
    from experiments.win_rates import Args, run

    old = os.umask(umask)
    try:
        folder = run(Args(agents=["random", "greedy"], players=[3], rule_sets=["hearts"],
                          deals=2, chunk=1, out_dir=str(tmp_path), plots=False,
                          progress=False))
    finally:
        os.umask(old)
    files = [folder / "results.csv", folder / "summary.json",
             *sorted((folder / "chunks").glob("*.csv"))]
    assert len(files) == 4
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path
