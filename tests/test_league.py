"""The league: balanced line-ups, ratings, worker-independence, --resume, bad arguments."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from experiments.league import RATING_COLUMNS, Args, lineups, rate, run

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(agents=["random", "greedy", "mc:worlds=2"], players=[3], rule_sets=["hearts"],
             deals=6, chunk=2, plots=False, progress=False)


def test_line_ups_are_balanced_random_and_reproducible():
    agents = ["a", "b", "c", "d", "e"]
    tables = lineups(agents, 3, 20, seed=0, rule_set="smoorverliefd")
    assert len(tables) == 20 and all(len(set(t)) == 3 for t in tables)
    # 4 whole rounds of 5 deals: every agent at exactly 3 tables a round
    assert Counter(a for t in tables for a in t) == {a: 12 for a in agents}
    assert tables == lineups(agents, 3, 20, seed=0, rule_set="smoorverliefd")
    assert tables != lineups(agents, 3, 20, seed=1, rule_set="smoorverliefd")
    # random neighbours: more than the 5 fixed triples of one circle
    assert len({frozenset(t) for t in tables}) > 5


def test_ratings_rank_by_points_in_the_game_s_direction():
    rows = [{"deal": d, "agent": agent, "points": points}
            for d in range(30) for agent, points in (("strong", 9), ("middle", 5), ("weak", 1))]
    gained = rate(rows, ["weak", "middle", "strong"], lower_is_better=False)
    assert [r["agent"] for r in gained] == ["strong", "middle", "weak"]
    assert all(r["deals"] == 30 and r["sigma"] < 25 / 3 for r in gained)
    penalty = rate(rows, ["weak", "middle", "strong"], lower_is_better=True)
    assert [r["agent"] for r in penalty] == ["weak", "middle", "strong"]


def test_results_do_not_depend_on_the_number_of_workers(tmp_path):
    one = run(Args(**SMALL, workers=1, out_dir=str(tmp_path / "one")))
    two = run(Args(**SMALL, workers=2, out_dir=str(tmp_path / "two")))
    for name in ("games.csv", "ratings.csv"):
        assert (one / name).read_text() == (two / name).read_text()


def test_resume_plays_only_the_missing_chunks_and_refuses_other_arguments(tmp_path):
    from agents.evaluation.runs import write_atomic

    folder = run(Args(**SMALL, out_dir=str(tmp_path)))
    ratings = (folder / "ratings.csv").read_text()
    summary = json.loads((folder / "league.json").read_text())
    assert summary["complete"] and summary["chunks_done"] == 3
    assert summary["files"] == ["games.csv", "ratings.csv"]
    # Take the middle chunk out of the run, as if it had not finished.
    summary["finished_chunks"].pop(1)
    summary.update(complete=False, chunks_done=2)
    (folder / "chunks" / "hearts_3p_000001.csv").unlink()
    write_atomic(folder / "league.json", json.dumps(summary))
    with pytest.raises(ValueError, match="unfinished run .*--resume.*--overwrite"):
        run(Args(**SMALL, out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="--deals 6 .now 8."):
        run(Args(**{**SMALL, "deals": 8}, resume=True, out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="one of them"):
        run(Args(**SMALL, resume=True, overwrite=True, out_dir=str(tmp_path)))
    run(Args(**SMALL, resume=True, out_dir=str(tmp_path)))
    assert (folder / "ratings.csv").read_text() == ratings
    assert json.loads((folder / "league.json").read_text())["complete"]


def test_a_league_is_replaced_only_with_overwrite(tmp_path):
    folder = run(Args(**SMALL, out_dir=str(tmp_path)))
    games = (folder / "games.csv").read_text()
    with pytest.raises(ValueError, match="finished run .*--overwrite"):
        run(Args(**{**SMALL, "seed": 1}, run_name="league__seed0", out_dir=str(tmp_path)))
    assert (folder / "games.csv").read_text() == games
    again = run(Args(**{**SMALL, "seed": 1}, overwrite=True, run_name="league__seed0",
                     out_dir=str(tmp_path)))
    assert again == folder and (folder / "games.csv").read_text() != games
    summary = json.loads((folder / "league.json").read_text())
    assert summary["complete"] and summary["args"]["seed"] == 1
    assert len(list((folder / "chunks").iterdir())) == 3  # the old run's chunks went


def test_bad_leagues_are_refused_before_playing(tmp_path):
    def league(**changes):
        return run(Args(**{**SMALL, **changes}, out_dir=str(tmp_path)))

    with pytest.raises(ValueError, match="needs at least 4 different agents"):
        league(players=[4])
    with pytest.raises(ValueError, match="twice"):
        league(agents=["random", "greedy", "random"])
    with pytest.raises(ValueError, match="unknown agent 'nobody'"):
        league(agents=["random", "greedy", "nobody"])
    with pytest.raises(ValueError, match="agent 'greedy' has no option 'depth'"):
        league(agents=["random", "greedy:depth=2", "mc"])
    with pytest.raises(ValueError, match="agent 'mc' has no option 'wrlds'; its options: worlds"):
        league(agents=["random", "greedy", "mc:wrlds=2"])
    assert not list(tmp_path.iterdir())


def test_command_line_writes_ratings_and_plots(tmp_path):
    command = [sys.executable, "-m", "experiments.league", "--agents", "random", "greedy",
               "mc:worlds=2", "--players", "3", "--rule-sets", "smoorverliefd", "--deals", "3",
               "--out-dir", str(tmp_path), "--run-name", "cli", "--no-progress"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "cli"
    for name in ("ratings.png", "ratings.svg", "games.csv", "league.json"):
        assert (folder / name).stat().st_size > 0
    with open(folder / "ratings.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert tuple(table[0]) == RATING_COLUMNS
    assert sorted(r["agent"] for r in table) == ["greedy", "mc:worlds=2", "random"]
    assert sorted(int(r["rank"]) for r in table) == [1, 2, 3]
    # 3 deals, 3 agents at every table: each agent plays every deal
    assert all(int(r["deals"]) == 3 for r in table)
