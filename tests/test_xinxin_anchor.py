"""The xinxin anchor (experiments/xinxin_anchor.py): card ids and pass directions map as
xinxin names them, its driver refuses what it cannot play, both programs play the same
Hearts game card for card and score it alike, a game is reproducible from its seed, and
the run goes on where it stopped.

xinxin is C++ from GitHub (not on PyPI): the tests that play it need its checkout (``make
xinxin-source``, or ``XINXIN_SOURCE``) and g++; without them they are skipped (the
mapping and settings tests run everywhere)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from experiments import xinxin_anchor as anchor
from smoor_env import Engine, preset
from smoor_env.core import cards as C

SOURCE = anchor.Args().source  # $XINXIN_SOURCE, else where `make xinxin-source` puts it
needs_xinxin = pytest.mark.skipif(
    not (Path(SOURCE) / "Hearts.h").is_file() or shutil.which("g++") is None
    or shutil.which("git") is None,
    reason=f"xinxin's source (`make xinxin-source`; none in {SOURCE}), g++ and git are "
           "needed to play it")


def test_card_ids_map_both_ways_as_xinxin_numbers_them():
    """xinxin's card is (suit << 4) + rank, suits spades, diamonds, clubs, hearts and ranks
    ace down to two (its Hearts.h)."""
    spades, diamonds, clubs, hearts = 0, 1, 2, 3
    ace, queen, two = 0, 2, 12
    assert anchor.TO_XINXIN[C.TWO_OF_CLUBS] == (clubs << 4) + two
    assert anchor.TO_XINXIN[C.parse_card("QS")] == (spades << 4) + queen
    assert anchor.TO_XINXIN[C.parse_card("AH")] == (hearts << 4) + ace
    assert anchor.TO_XINXIN[C.parse_card("TD")] == (diamonds << 4) + 4
    assert (anchor.FROM_XINXIN[anchor.TO_XINXIN] == np.arange(C.NUM_CARDS)).all()
    assert (anchor.FROM_XINXIN >= 0).sum() == C.NUM_CARDS


def test_the_pass_direction_table_follows_our_pass_cycle():
    """xinxin gives seat x's passes to (x + direction) mod 4, ours to seat + offset: the
    table gives each offset its direction, in our cycle's order (that the cards then
    reach the same seat is checked by the games below, at every decision after the
    passes)."""
    rules = preset("hearts", 4)
    for round_number in range(1, 5):
        offset = rules.pass_offset(round_number)
        assert (anchor.PASS_DIRECTION[offset] - offset) % 4 == 0
    assert [anchor.PASS_DIRECTION[rules.pass_offset(r)] for r in range(1, 5)] == [1, -1, 2, 0]


def test_settings_that_cannot_run_are_refused_before_any_file(tmp_path):
    with pytest.raises(ValueError, match="--worlds must be <= --simulations"):
        anchor.Args(simulations=10, worlds=20, source=SOURCE).check()
    with pytest.raises(ValueError, match="--deals, --simulations, --worlds and --workers"):
        anchor.Args(deals=0).check()
    with pytest.raises(ValueError, match="not a checkout"):
        anchor.Args(source=str(tmp_path)).check()
    with pytest.raises(ValueError, match="make xinxin-source"):
        anchor.Args(source=str(tmp_path / "none")).check()
    assert anchor.command(["--source", str(tmp_path), "--out-dir",
                           str(tmp_path / "run")]) == 2
    assert not (tmp_path / "run").exists()


def test_the_committed_run_reports_the_documented_result(capsys):
    """docs/results/xinxin-anchor/run1 (its args.json from before the run recorded the
    program's build) gives the figures docs/results/2026-12-06-xinxin-anchor.md states."""
    run = Path(__file__).parent.parent / "docs" / "results" / "xinxin-anchor" / "run1"
    summary = anchor.main(["--report", "--out-dir", str(run)])
    assert summary["deals_complete"] == 500 and summary["games"] == 2000
    assert summary["games_scored_differently"] == 0
    advantage = summary["advantage"]
    assert [round(advantage[k], 2) for k in ("mean", "low", "high")] == [0.87, 0.51, 1.23]
    assert round(summary["ours_time"]["median_ms"], 1) == 31.1
    assert round(summary["xinxin_time"]["median_ms"], 1) == 51.2
    assert "+0.87 [+0.51, +1.23]" in capsys.readouterr().out


def test_report_summarises_a_folder_without_xinxin(tmp_path, capsys):
    """``--report`` reads a run's committed files only: no source, no build, no game."""
    settings = {**dataclasses.asdict(anchor.Args(deals=1)), "code": "c", "program": "p"}
    (tmp_path / "args.json").write_text(json.dumps(settings))
    games = [{"deal": 0, "ours_seat": s, "points": points, "xinxin_points": points,
              "actions": [], "ours_seconds": [0.01], "xinxin_seconds": [0.02, 0.04]}
             for s, points in enumerate([[0, 13, 13, 0], [26, 0, 0, 0], [5, 5, 8, 8],
                                         [0, 26, 26, 26]])]
    (tmp_path / "games.jsonl").write_text("".join(json.dumps(g) + "\n" for g in games))
    argv = ["--report", "--source", str(tmp_path / "none"), "--out-dir", str(tmp_path)]
    assert anchor.command(argv) == 0
    # ours took 0, 0, 8 and 26 against the others' means 26/3, 26/3, 6 and 52/3
    margin = np.mean([26 / 3, 26 / 3, 6 - 8, 52 / 3 - 26])
    assert f"{margin:+.2f}" in capsys.readouterr().out
    summary = anchor.main(argv)
    assert summary["games_scored_differently"] == 0 and summary["settings"]["program"] == "p"
    assert summary["xinxin_time"]["median_ms"] == pytest.approx(30.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["args.json", "games.jsonl"]


@needs_xinxin
def test_the_driver_refuses_bad_requests_and_keeps_its_state():
    engine = Engine(preset("hearts_no_passing", 4), 1)
    engine.reset(7, game_ids=[0])
    args = anchor.Args(source=SOURCE, simulations=100, worlds=5, passing=False)
    seat_of = (int(engine.state.dealer[0]) + 1 + np.arange(4)) % 4
    with anchor.Xinxin(SOURCE) as xinxin:
        with pytest.raises(RuntimeError, match="no game yet"):
            xinxin.ask("legal")
        with pytest.raises(RuntimeError, match="52 cards"):
            xinxin.ask("game 0 0 1 100 5 0.1 0.4 1 2 3")
        anchor.new_round(xinxin, args, engine, seat_of, seed=1)
        before = xinxin.ask("legal")
        assert before[2:] == [str(anchor.TO_XINXIN[C.TWO_OF_CLUBS])]  # 2C leads
        with pytest.raises(RuntimeError, match="not legal"):
            xinxin.ask(f"play {anchor.TO_XINXIN[C.parse_card('AS')]}")
        assert xinxin.ask("legal") == before
        with pytest.raises(RuntimeError, match="unknown request"):
            xinxin.ask("deal")


@needs_xinxin
@pytest.mark.parametrize("passing", [True, False])
def test_a_game_is_the_same_game_in_both_programs_and_reproducible(passing):
    """play_game checks at every decision that both programs name the same seat and the
    same legal cards, and compares their points at the end; a game replays exactly."""
    args = anchor.Args(source=SOURCE, simulations=200, worlds=10, ours="greedy",
                       passing=passing)
    games = [anchor.play_game(args, deal, seat)  # every pass direction: left, right,
             for deal, seat in [(0, 0), (1, 3), (2, 1), (3, 2)]]  # across, none
    for game in games:
        assert anchor.scored_alike(game) and sum(game["points"]) in (26, 78)
        assert len(game["actions"]) == 52 + 12 * passing * (game["deal"] % 4 != 3)
        assert game["ours_seconds"] and game["xinxin_seconds"]
    time.sleep(1.1)  # xinxin seeds its search from the clock (seconds) unless reseeded
    again = anchor.play_game(args, 1, 3)
    assert again["actions"] == games[1]["actions"] and again["points"] == games[1]["points"]


@needs_xinxin
def test_a_short_run_plays_every_rotation_and_goes_on(tmp_path):
    argv = ["--deals", "1", "--simulations", "100", "--worlds", "5", "--ours", "greedy",
            "--source", SOURCE, "--out-dir", str(tmp_path), "--no-progress"]
    summary = anchor.main(argv)
    games = anchor.read_games(tmp_path / "games.jsonl")
    assert sorted(g["ours_seat"] for g in games) == [0, 1, 2, 3]
    assert summary["deals_complete"] == 1 and summary["games_scored_differently"] == 0
    assert summary["xinxin_time"]["decisions"] > 0
    recorded = json.loads((tmp_path / "args.json").read_text())
    assert recorded["program"].startswith(anchor.COMMIT + ", build ")  # the source's commit
    assert summary["settings"]["program"] == recorded["program"]
    copy = tmp_path.parent / f"{tmp_path.name}-copy"  # the same checkout elsewhere
    shutil.copytree(SOURCE, copy)
    moved = [*argv[:8], "--source", str(copy), *argv[10:]]
    summary = anchor.main([*moved, "--deals", "2"])  # goes on: deal 1 only
    assert summary["deals_complete"] == 2 and len(anchor.read_games(tmp_path / "games.jsonl")) == 8
    assert json.loads((tmp_path / "args.json").read_text())["program"] == recorded["program"]
    with (copy / "UCT.cpp").open("a") as changed:
        changed.write("// another program\n")
    with pytest.raises(ValueError, match=r"played by another program \('6ba1154"):
        anchor.main([*moved, "--deals", "3"])  # a changed program: refused, nothing played
    assert len(anchor.read_games(tmp_path / "games.jsonl")) == 8
    with pytest.raises(ValueError, match="--worlds 5"):
        anchor.main([*argv[:4], "--worlds", "6", *argv[6:]])
