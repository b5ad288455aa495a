"""The OpenSpiel anchor (experiments/openspiel_anchor.py): both programs play the same
Hearts game card for card, the run resumes and refuses other settings, and the fact that
made it Hearts without passing still holds."""

from __future__ import annotations

import json

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from experiments import openspiel_anchor as anchor  # noqa: E402
from smoor_env import Engine, preset  # noqa: E402
from smoor_env.core import cards as C  # noqa: E402


def test_card_ids_map_both_ways_as_openspiel_names_them():
    game = pyspiel.load_game("hearts")
    state = game.new_initial_state()
    state.apply_action(0)
    for card in range(C.NUM_CARDS):
        assert state.action_to_string(int(anchor.TO_OPENSPIEL[card])) == C.card_str(card)
    assert (anchor.FROM_OPENSPIEL[anchor.TO_OPENSPIEL] == np.arange(C.NUM_CARDS)).all()


def test_openspiel_deals_our_hands_to_the_mapped_players():
    engine = Engine(preset("hearts_no_passing", 4), 1)
    engine.reset(3000, game_ids=[5])
    seat_of = np.array([2, 3, 0, 1])
    state = anchor.openspiel_state(pyspiel.load_game("hearts"), engine, seat_of)
    leader = int(np.flatnonzero(seat_of == engine.state.current_player[0])[0])
    assert state.current_player() == leader  # the holder of 2C leads in both
    assert state.legal_actions() == [int(anchor.TO_OPENSPIEL[C.TWO_OF_CLUBS])]


def test_a_short_run_plays_every_rotation_scores_alike_and_resumes(tmp_path):
    argv = ["--deals", "1", "--simulations", "10", "--ours", "greedy", "--out-dir",
            str(tmp_path), "--no-progress"]
    summary = anchor.main(argv)
    games = anchor.read_games(tmp_path / "games.jsonl")
    assert sorted(g["ours_seat"] for g in games) == [0, 1, 2, 3]
    assert all(sum(g["points"]) in (26, 78) for g in games)  # 78: a moon
    assert summary["deals_complete"] == 1 and summary["games_scored_differently"] == 0
    margins = []
    for g in games:
        points = np.array(g["points"], float)
        margins.append((points.sum() - points[g["ours_seat"]]) / 3 - points[g["ours_seat"]])
    assert summary["advantage"]["mean"] == pytest.approx(np.mean(margins))
    assert summary["ours_time"]["decisions"] > 0 and summary["openspiel_time"]["decisions"] > 0
    again = anchor.main(argv + ["--deals", "1"])  # nothing left to play: the same games
    assert anchor.read_games(tmp_path / "games.jsonl") == games
    assert again["advantage"] == summary["advantage"]
    with pytest.raises(ValueError, match="--simulations 10"):
        anchor.main(["--deals", "1", "--simulations", "11", "--ours", "greedy",
                     "--out-dir", str(tmp_path), "--no-progress"])
    assert json.loads((tmp_path / "args.json").read_text())["simulations"] == 10


def test_report_summarises_a_copied_run_without_playing(tmp_path):
    run = tmp_path / "run"
    summary = anchor.main(["--deals", "1", "--simulations", "10", "--ours", "greedy",
                           "--out-dir", str(run), "--no-progress"])
    copy = tmp_path / "copy"  # a run's files as committed: args.json and games.jsonl only
    copy.mkdir()
    (copy / "args.json").write_bytes((run / "args.json").read_bytes())
    (copy / "games.jsonl").write_text((run / "games.jsonl").read_text() + '{"deal": 0, "ou')
    reported = anchor.main(["--report", "--out-dir", str(copy)])
    assert reported["advantage"] == summary["advantage"]
    assert reported["games"] == 4 and reported["settings"]["simulations"] == 10
    assert sorted(p.name for p in copy.iterdir()) == ["args.json", "games.jsonl"]
    with pytest.raises(ValueError, match="no args.json"):
        anchor.main(["--report", "--out-dir", str(tmp_path / "nothing")])


def test_a_cut_last_line_is_left_out(tmp_path):
    path = tmp_path / "games.jsonl"
    path.write_text(json.dumps({"deal": 0}) + "\n" + '{"deal": 1, "poi')
    assert anchor.read_games(path) == [{"deal": 0}]


def test_openspiel_ismcts_still_cannot_pass_in_hearts():
    """Why the anchor plays without passing: if this fails, OpenSpiel's bot can pass now
    and the anchor should play Hearts with passing (the protocol's first choice)."""
    from open_spiel.python.algorithms import ismcts, mcts

    game = pyspiel.load_game("hearts", {"qs_breaks_hearts": False})
    rs = np.random.RandomState(0)
    bot = ismcts.ISMCTSBot(game, mcts.RandomRolloutEvaluator(1, rs), 2.0, 20, random_state=rs)
    state = game.new_initial_state()
    state.apply_action(1)  # pass left
    for _ in range(52):
        state.apply_action(state.legal_actions()[0])
    for _ in range(3):  # the first player's passes: its search works
        state.apply_action(bot.step(state))
    with pytest.raises(ValueError, match="cannot be empty"):
        bot.step(state)  # the second player's first pass


def test_sigterm_stops_the_workers_keeps_the_games_and_the_run_goes_on(tmp_path):
    """A run in the background is stopped with ``kill`` (SIGTERM): one line, exit 130, no
    worker left playing, every finished game kept whole; the same command then plays the
    rest, and a second run into the folder meanwhile is refused."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from helpers import processes_mentioning

    root = Path(__file__).parent.parent
    argv = ["--simulations", "10", "--ours", "greedy", "--out-dir", str(tmp_path),
            "--no-progress", "--workers", "2"]
    process = subprocess.Popen([sys.executable, "-m", "experiments.openspiel_anchor",
                                "--deals", "1000", *argv],  # far from its end when stopped
                               cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    games = tmp_path / "games.jsonl"
    deadline = time.monotonic() + 120
    while not (games.exists() and games.read_text().count("\n") >= 2):
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.2)
    with pytest.raises(ValueError, match="another run is writing to"):
        anchor.run(anchor.Args(deals=1000, simulations=10, ours="greedy",
                               out_dir=str(tmp_path), progress=False, workers=2))
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and err.strip().endswith("the same command goes on)")
    assert processes_mentioning(str(tmp_path)) == []
    kept = anchor.read_games(games)
    assert 2 <= len(kept) < 4000
    assert len(games.read_text().splitlines()) == len(kept)  # every line a whole game

    summary = anchor.main(["--deals", "12", *argv])  # goes on (fewer deals): each game once
    played = anchor.read_games(games)
    assert sorted((g["deal"], g["ours_seat"]) for g in played if g["deal"] < 12) == \
        [(d, s) for d in range(12) for s in range(4)]
    assert len(played) == len({(g["deal"], g["ours_seat"]) for g in played})
    assert all(g in played for g in kept) and summary["deals_complete"] == 12


def test_the_command_refuses_bad_settings_in_one_line(tmp_path, capsys):
    assert anchor.command(["--deals", "0", "--out-dir", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"{anchor.PROG}: error: --deals, --simulations and --workers must be >= 1")
    assert anchor.command(["--ours", "mc:wrlds=8", "--out-dir", str(tmp_path / "run")]) == 2
    assert "wrlds" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
