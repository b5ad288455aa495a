"""smoor-play: whole matches through a pipe, refused moves, hint, undo, records, flags."""

from __future__ import annotations

import dataclasses
import io
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import tyro

from experiments import play
from smoor_env import Rules, parse_card
from smoor_env.record import read_records, replay

ROOT = Path(__file__).parent.parent


def _run(monkeypatch, capsys, argv: list[str], lines: list[str]) -> str:
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(line + "\n" for line in lines)))
    assert play.main(argv) == 0
    return capsys.readouterr().out


def test_console_script_is_declared():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["smoor-play"] == "experiments.play:main"


@pytest.mark.parametrize("plain", [True, False], ids=["plain", "rich"])
def test_a_whole_match_through_a_pipe(tmp_path, plain):
    record = tmp_path / "match.jsonl"
    command = [sys.executable, "-m", "experiments.play", "--agents", "greedy", "random",
               "--seat", "1", "--seed", "5", "--game", "hearts", "--num-players", "3",
               "--target-score", "40", "--record", str(record)] + (["--plain"] if plain else [])
    moves = "1\n" * 3000  # always the first legal move, more than the match needs
    done = subprocess.run(command, input=moves, capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "match over; won by" in done.stdout and "pass: 1:you" not in done.stdout
    assert "your hand (legal moves numbered):" in done.stdout
    records = list(read_records(record))
    assert len(records) >= 2 and max(records[-1]["totals"]) >= 40
    for r in records:
        assert r["agents"] == ["0:greedy", "1:you", "2:random"]
        replay(r)
    assert done.stdout.count("round ") >= len(records)


def test_refused_moves_hint_undo_and_end_of_input(monkeypatch, capsys, tmp_path):
    argv = ["--agents", "greedy", "--seed", "11", "--target-score", "none", "--plain",
            "--record", str(tmp_path / "r.jsonl"), "--hint-worlds", "16"]
    # First decision of seat 0 in this deal, read from a session of the same options.
    session = play.Session(Rules(target_score=None), 11, 0, ["greedy"])
    while session.to_act() != 0:
        session.step(session.agent_action(session.to_act()))
    legal = session.legal_actions()
    illegal = next(c for c in range(52) if c not in legal)
    first = play.move_text(legal[0])
    out = _run(monkeypatch, capsys, argv, ["ZZ", play.move_text(illegal), "99", "undo", "hint",
                                           first, "undo", "quit"])
    assert "cannot read 'ZZ' as a move; legal moves: 1=" + first in out
    assert f"{play.move_text(illegal)} is not a legal move here" in out
    assert f"there is no move number 99 (1..{len(legal)})" in out
    assert "nothing to undo" in out
    hint = out.split("mc would play ")[1].splitlines()
    assert parse_card(hint[0].replace("10", "T")) in legal
    estimated = hint[1].split(": ", 1)[1].split(", ")
    assert sorted(parse_card(e.split()[0].replace("10", "T")) for e in estimated) == sorted(legal)
    assert f"0:you plays {first}" in out and "undone: back to your previous move" in out
    tables = out.split("your move")
    # The table after undo is the table before the move (agents answered as before).
    first_table = tables[0][tables[0].index("Smoorverliefd, 4 players"):]
    after_undo = out.split("undone: back to your previous move")[1]
    assert after_undo[after_undo.index("Smoorverliefd, 4 players"):].startswith(first_table)
    assert "no round finished: no game record written" in out
    assert not (tmp_path / "r.jsonl").exists()
    # The end of the input stops as cleanly as quit.
    out = _run(monkeypatch, capsys, argv, ["1", "1"])
    assert "end of input: stopping" in out


def test_moves_by_card_text_number_and_action():
    assert play.parse_move("10h", [34, 36]) == parse_card("TH")
    assert play.parse_move("q♠", [49]) == 49 and play.parse_move("QS", [49]) == 49
    assert play.parse_move("2", [10, 49]) == 49
    assert play.parse_move("Bid 3", [52, 55]) == 55
    assert play.parse_move("curse h", [66, 68]) == 68
    for text, message in (("bid 4", "cannot read"), ("0", "no move number"),
                          ("AS", "not a legal move")):
        with pytest.raises(ValueError, match=message):
            play.parse_move(text, [52, 55])


def test_bidding_and_cupid_show_bids_and_cursed_suit(monkeypatch, capsys, tmp_path):
    out = _run(monkeypatch, capsys, ["--bidding", "--cupids-arrow", "--target-score", "20",
                                     "--agents", "greedy", "--seed", "2", "--plain",
                                     "--record", str(tmp_path / "r.jsonl")], ["1"] * 60)
    assert "bid 0(1)  bid 1(2)" in out and "seat" in out and " bid" in out.split("seat")[1]
    assert "cursed suit: " in out


def test_hint_values_every_legal_move():
    session = play.Session(Rules(game="hearts", target_score=None, passing=False), 4, 0,
                           ["random"])
    while session.to_act() != 0 or len(session.legal_actions()) < 2:
        action = (session.legal_actions()[0] if session.to_act() == 0
                  else session.agent_action(session.to_act()))
        session.step(action)
    move, values = session.hint(worlds=16)
    assert sorted(values) == sorted(session.legal_actions()) and move in values
    assert values[move] == min(values.values())
    assert all(0 <= v <= 26 for v in values.values())  # Hearts: penalty points, as shown


def _rules(argv: list[str]) -> Rules:
    return tyro.cli(play.Args, args=argv).rules.rules()


def test_rule_options_are_the_rules_fields_with_the_games_defaults():
    options = {f.name for f in dataclasses.fields(play.RuleOptions)}
    assert options == {f.name for f in dataclasses.fields(Rules) if f.init}
    assert _rules([]) == Rules() and _rules(["--game", "hearts"]) == Rules(game="hearts")
    assert _rules(["--game", "hearts"]).passing and _rules([]).target_score == 50
    assert _rules(["--game", "hearts", "--no-passing", "--target-score", "none",
                   "--num-players", "3"]) == Rules(game="hearts", passing=False,
                                                   target_score=None, num_players=3)
    assert _rules(["--target-score", "None", "--max-rounds", "1"]).target_score is None
    for f in dataclasses.fields(Rules):
        if f.init and f.type in (bool, "bool"):
            flag = "--" + f.name.replace("_", "-")
            assert getattr(tyro.cli(play.Args, args=[flag]).rules, f.name) is True
            no_flag = "--no-" + f.name.replace("_", "-")
            assert getattr(tyro.cli(play.Args, args=[no_flag]).rules, f.name) is False


def test_help_lists_every_option_with_its_default_once(capsys):
    with pytest.raises(SystemExit) as exit_info:
        play.main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    # Each option's entry: from its flag to the next one.
    entries = re.split(r"\n[│| ]*(?=--[a-z])", text)[1:]
    names = {entry.split()[0].rstrip(",") for entry in entries}
    assert {"--" + f.name.replace("_", "-") for f in dataclasses.fields(Rules) if f.init} <= names
    assert {"--agents", "--seat", "--seed", "--record", "--hint-worlds", "--plain"} <= names
    for entry in entries:
        assert entry.count("(default:") == 1, entry
    passing = next(entry for entry in entries if entry.startswith("--passing, --no-passing"))
    assert "(default: the game's)" in passing


@pytest.mark.parametrize("argv, message", [
    (["--seat", "7"], "--seat must be a seat 0..3"),
    (["--target-score", "many"], "--target-score"),
    (["--game", "bridge"], "'bridge'"),
    (["--game", "hearts", "--bidding"], "Smoorverliefd options cannot be used in Hearts"),
    (["--agents", "greedy", "mc"], "one for each of the 3 other seats"),
    (["--agents", "nobody"], "unknown agent 'nobody'"),
])
def test_bad_options_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        play.main(argv)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_help_at_a_move_is_plain_text_and_ctrl_c_saves_the_finished_rounds(
        monkeypatch, capsys, tmp_path):
    record = tmp_path / "r.jsonl"
    argv = ["--agents", "random", "--seed", "3", "--plain", "--game", "hearts", "--no-passing",
            "--record", str(record)]
    moves = iter(["help", ""] + ["1"] * 13)

    def read(prompt: str) -> str:
        try:
            return next(moves)
        except StopIteration:
            raise KeyboardInterrupt from None

    monkeypatch.setattr(play, "read_line", read)
    assert play.main(argv) == 130
    out = capsys.readouterr().out
    assert out.count(play.HELP) == 2 and "``" not in play.HELP
    assert "round 1 over (penalty points, fewest wins):" in out
    assert f"game record: {record} (1 round)" in out and "interrupted: stopping" in out
    assert len(list(read_records(record))) == 1


@pytest.mark.parametrize("argv, message", [
    (["--record", "/nonexistent/dir/x.jsonl"], "the folder of --record"),
    (["--hint-worlds", "0"], "--hint-worlds must be at least 1"),
    (["--agents", "ppo:checkpoint=/nonexistent/policy.pt"], "/nonexistent/policy.pt"),
])
def test_bad_paths_and_counts_are_one_line(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        play.main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and "Traceback" not in err
    assert not Path("/nonexistent").exists()


def test_the_record_folder_must_be_named_not_made(tmp_path, capsys):
    with pytest.raises(SystemExit):
        play.main(["--record", str(tmp_path)])
    assert "is a folder" in capsys.readouterr().err


def test_help_names_every_agent_and_rule_set(capsys):
    from agents import agent_names
    from smoor_env import PRESETS

    with pytest.raises(SystemExit):
        play.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert all(name in out for name in agent_names()) and all(f"{n}:" in out for n in PRESETS)
    assert "``" not in out and out.startswith("usage: smoor-play")


def test_the_defaults_play_and_record_under_the_current_folder(tmp_path):
    done = subprocess.run([sys.executable, "-m", "experiments.play", "--seed", "1", "--plain"],
                          input="1\n" * 400, capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "round 1 over (points):" in done.stdout
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.jsonl")] == [
        "results/play/smoorverliefd_4p_seed1.jsonl"]


def test_an_earlier_record_is_never_replaced_silently(tmp_path, capsys, monkeypatch):
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text("an earlier match\n")
    with pytest.raises(SystemExit):
        play.main(["--record", str(earlier)])
    assert "already holds a game record" in capsys.readouterr().err
    assert earlier.read_text() == "an earlier match\n"
    # The default name: the same seed twice gets a second file.
    monkeypatch.chdir(tmp_path)
    rules = Rules()
    first = play._record_path(None, rules, 7, overwrite=False)
    first.write_text("round 1\n")
    second = play._record_path(None, rules, 7, overwrite=False)
    assert second.name == "smoorverliefd_4p_seed7-2.jsonl"
    assert play._record_path(None, rules, 7, overwrite=True) == first
    assert play._record_path(earlier, rules, 7, overwrite=True) == earlier
