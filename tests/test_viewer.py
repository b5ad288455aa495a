"""smoor-view: the replay page, opened in a real headless Chromium (Playwright) and stepped
through with the keys and buttons; the cards shown must match the record."""

from __future__ import annotations

import json

import numpy as np
import pytest

from smoor_env import Rules, card_str, raw_env
from smoor_env.record import write_records
from smoor_env.render.viewer import main, round_frames, viewer_html

NAMES = ["0:you", "1:greedy", "2:mc", "3:random"]


@pytest.fixture(scope="module")
def records() -> list[dict]:
    """A two-round Smoorverliefd match with bids, random play, seats named as smoor-play does."""
    env = raw_env(rules=Rules(target_score=30, max_rounds=2, bidding=True))
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    for _ in env.agent_iter():
        obs, _, termination, truncation, _ = env.last()
        env.step(None if termination or truncation
                 else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    result = [{**record, "agents": NAMES} for record in env.game_record()]
    assert len(result) == 2
    return result


def _shown(page) -> dict:
    """What the page shows: hands per seat, the trick, the last trick and its winner."""
    def cards(selector: str) -> list[str]:
        return page.eval_on_selector_all(selector, "els => els.map(e => e.dataset.card)")

    seats = page.eval_on_selector_all("#seats .seat", "els => els.length")
    winner = page.get_attribute("#last-title", "data-winner")
    return {
        "hands": [sorted(cards(f'#seats .seat[data-seat="{s}"] .hand .card'))
                  for s in range(seats)],
        "trick": page.eval_on_selector_all(
            "#trick .card", "els => els.map(e => [Number(e.dataset.seat), e.dataset.card])"),
        "last": cards("#last .card"),
        "winner": int(winner) if winner else None,
        "points": [int(p) for p in page.eval_on_selector_all(
            "#seats .nums", "els => els.map(e => e.dataset.points)")],
        "totals": [int(p) for p in page.eval_on_selector_all(
            "#seats .nums", "els => els.map(e => e.dataset.total)")],
        "step": int(page.get_attribute("#status", "data-step")),
        "round": int(page.get_attribute("#status", "data-round")),
    }


def _expected_hands(record: dict, steps: int) -> list[list[str]]:
    """Each seat's hand after the record's first ``steps`` actions (no passing here)."""
    played = {card_str(a) for _, a in record["actions"][:steps] if a < 52}
    return [sorted(c for c in hand if c not in played) for hand in record["hands"]]


def test_the_page_steps_through_the_record(records, browser, tmp_path):
    path = tmp_path / "match.jsonl"
    write_records(path, records)
    out = tmp_path / "game.html"
    assert main([str(path), "-o", str(out)]) == 0
    page_text = out.read_text()
    assert "http:" not in page_text and "https:" not in page_text  # nothing from the network
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(out.as_uri())
    first, second = records
    bids = 4  # the first four actions are the bids
    shown = _shown(page)
    assert shown["hands"] == _expected_hands(first, 0) and shown["trick"] == []
    assert page.eval_on_selector_all("#seats .name", "els => els.map(e => e.textContent)") \
        == NAMES
    for _ in range(bids + 6):  # the bids, a whole trick and two cards of the next
        page.keyboard.press("ArrowRight")
    shown = _shown(page)
    assert shown["step"] == bids + 6 and shown["hands"] == _expected_hands(first, bids + 6)
    plays = first["actions"][bids:]
    assert shown["trick"] == [[seat, card_str(a)] for seat, a in plays[4:6]]
    assert shown["last"] == [card_str(a) for _, a in plays[:4]]
    assert shown["winner"] == first["trick_winners"][0]
    page.keyboard.press("t")  # to the end of the second trick
    shown = _shown(page)
    assert shown["step"] == bids + 8 and shown["trick"] == []
    assert shown["last"] == [card_str(a) for _, a in plays[4:8]]
    assert shown["winner"] == first["trick_winners"][1]
    page.click("#prev-card")
    assert [c for _, c in _shown(page)["trick"]] == [card_str(a) for _, a in plays[4:7]]
    page.keyboard.press("T")  # back to the end of the first trick
    assert _shown(page)["step"] == bids + 4
    for _ in range(13):
        page.keyboard.press("t")
    shown = _shown(page)
    assert shown["step"] == len(first["actions"]) and shown["hands"] == [[]] * 4
    assert shown["points"] == first["round_points"] and shown["totals"] == first["totals"]
    assert shown["winner"] == first["trick_winners"][-1]
    page.keyboard.press("r")
    shown = _shown(page)
    assert shown["round"] == 1 and shown["step"] == 0
    assert shown["hands"] == _expected_hands(second, 0)
    assert shown["totals"] == first["totals"]
    page.click("#prev-round")
    assert _shown(page)["round"] == 0
    assert errors == []


def test_frames_follow_the_engine(records):
    frames = round_frames(records[0])["frames"]
    assert len(frames) == len(records[0]["actions"]) + 1
    assert sum(f["trick_done"] for f in frames) == 13
    assert [f["winner"] for f in frames if f["trick_done"]] == records[0]["trick_winners"]


def test_bad_input_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"rules": {}}\n')
    assert main([str(bad), "-o", str(tmp_path / "x.html")]) == 2
    assert "not a game record" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main([str(empty), "-o", str(tmp_path / "x.html")]) == 2
    assert "no game records" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a malformed command line: tyro's usage error
        main([])
    assert not (tmp_path / "x.html").exists()


def test_a_missing_output_folder_is_one_line(records, tmp_path, capsys):
    path = tmp_path / "match.jsonl"
    write_records(path, records)
    assert main([str(path), "-o", str(tmp_path / "missing" / "x.html")]) == 2
    err = capsys.readouterr().err
    assert "smoor-view: error: the folder of --output" in err and "Traceback" not in err
    assert not (tmp_path / "missing").exists()


def test_no_name_can_end_the_script_element(records):
    names = ["<!--<script>", "</script><b>x", "a", "b"]
    page = viewer_html([dict(r, agents=names) for r in records])
    script = page[page.index("<script>") + len("<script>"):page.rindex("</script>")]
    assert "<" not in script.split("const ROUNDS = ", 1)[1].split(";\n", 1)[0]
    assert json.loads(script.split("const ROUNDS = ", 1)[1].split(";\n", 1)[0])[0][
        "names"] == names


@pytest.mark.parametrize("field, change", [
    ("round_points", lambda r: r["round_points"].__setitem__(0, r["round_points"][0] + 1)),
    ("totals", lambda r: r["totals"].__setitem__(1, r["totals"][1] + 2)),
    ("trick_winners", lambda r: r["trick_winners"].__setitem__(
        0, (r["trick_winners"][0] + 1) % 4)),
    ("actions", lambda r: r["actions"][-1].__setitem__(0, (r["actions"][-1][0] + 1) % 4)),
    ("seed", lambda r: r.__setitem__("seed", r["seed"] + 1)),
    ("dealer", lambda r: r.__setitem__("dealer", (r["dealer"] + 1) % 4)),
])
def test_a_record_the_engine_would_not_play_is_refused(records, tmp_path, capsys, field,
                                                       change):
    second = json.loads(json.dumps(records[1]))  # round 2: its seed fixes the deal
    change(second)
    path = tmp_path / "match.jsonl"
    write_records(path, [records[0], second])
    out = tmp_path / "game.html"
    assert main([str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"smoor-view: error: {path}: record 2: ") and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe{}\n", "match.jsonl:1: not UTF-8 text"),
    (b"[" * 100_000 + b"\n", "match.jsonl:1: not "),
])
def test_unreadable_files_name_the_file_and_line(tmp_path, capsys, content, message):
    path = tmp_path / "match.jsonl"
    path.write_bytes(content)
    assert main([str(path), "-o", str(tmp_path / "game.html")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
