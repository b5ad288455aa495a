"""Pictures of the table: the SVG drawing, the environments' rgb_array frames, the text table."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import gymnasium
import numpy as np
import pytest
from test_engine_rules import SUIT_PER_SEAT

from agents.env_factories import make_env
from smoor_env import Engine, Rules, parse_cards, raw_env
from smoor_env.render import render_rgb, render_svg, render_text, table_view

GOLD = np.array([0xF2, 0xB7, 0x05])  # the outline of legal cards
RED = np.array([0xC8, 0x10, 0x2E])  # hearts and diamonds


def _texts(svg: str) -> list[str]:
    root = ET.fromstring(svg.encode())
    return [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]


def _scripted(bidding: bool = False) -> Engine:
    """Seat 2 holds every heart and leads (dealer 1); clubs, diamonds, spades elsewhere."""
    engine = Engine(Rules(target_score=None, bidding=bidding), 1)
    engine.reset(0, hands=[SUIT_PER_SEAT], dealers=[1])
    return engine


def _pixels(frame: np.ndarray, colour: np.ndarray) -> int:
    return int((np.abs(frame.astype(int) - colour).sum(axis=2) < 30).sum())


def test_svg_shows_the_observers_hand_the_trick_and_the_last_trick():
    engine = _scripted()
    svg = render_svg(engine, observer=2)
    assert svg._repr_svg_() == svg  # notebooks display it inline
    texts = _texts(svg)
    assert texts.count("♥") == 13 and "♣" not in texts  # the observer's hand only
    assert [t for t in texts if t in "23456789JQKA" or t == "10"] == list("AKQJ") + [
        "10"] + list("98765432")  # high to low
    # Seat 2 leads AH, seats 3, 0, 1 discard: a finished trick taken by seat 2.
    engine.step([38])
    texts = _texts(render_svg(engine, observer=2))
    assert texts.count("♥") == 13  # 12 in hand + AH in the trick
    for card in parse_cards("2S 2C 2D"):
        engine.step([card])
    texts = _texts(render_svg(engine, observer=2, show_all_hands=True))
    assert "last trick, taken by player_2:" in texts
    assert texts.count("♥") == 13 and texts.count("♣") == 13  # 12 + 12 in hand, 1 + 1 last
    assert any("player_2" in t and "round 5" in t for t in texts)  # AH: 5 points


def test_rgb_frames_of_the_aec_env_follow_the_game():
    aec = raw_env(rules=Rules(target_score=None), render_mode="rgb_array")
    aec.reset(seed=0, options={"deal": SUIT_PER_SEAT, "dealer": 1})
    frames = [aec.render()]
    for action in parse_cards("AH 2S 2C 2D"):
        aec.step(int(action))
        frames.append(aec.render())
    for frame in frames:
        assert frame.shape == (500, 800, 3) and frame.dtype == np.uint8
    assert all((a != b).any() for a, b in zip(frames, frames[1:], strict=False))
    assert _pixels(frames[0], GOLD) > 100  # seat 2's 13 legal hearts are outlined
    assert _pixels(frames[0], RED) > _pixels(frames[1], RED) * 0.9  # the AH moved, still red
    np.testing.assert_array_equal(frames[-1], render_rgb(aec.engine, observer=0,
                                                         show_all_hands=True))


def test_rgb_frames_of_the_gym_env_for_video_recording():
    env = gymnasium.wrappers.RenderCollection(
        make_env(rules=Rules(target_score=None), opponents="greedy", render_mode="rgb_array"))
    _, info = env.reset(seed=1)
    done = False
    while not done:
        _, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    frames = env.render()
    assert len(frames) == 14  # after the reset and after each of the 13 learner moves
    assert {f.shape for f in frames} == {(500, 800, 3)} and frames[0].dtype == np.uint8
    assert _pixels(frames[0], GOLD) > 0 and _pixels(frames[-1], GOLD) == 0  # nothing legal


def test_record_video_writes_a_file(tmp_path):
    pytest.importorskip("moviepy")
    env = gymnasium.wrappers.RecordVideo(
        make_env(rules=Rules(target_score=None), render_mode="rgb_array"),
        str(tmp_path / "videos"), episode_trigger=lambda episode: True)
    _, info = env.reset(seed=1)
    done = False
    while not done:
        _, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    env.close()
    assert list((tmp_path / "videos").glob("*.mp4"))


def test_text_and_view_show_bids_and_the_last_trick():
    engine = _scripted(bidding=True)
    for seat_bid in (60, 52, 53, 54):  # seats 2, 3, 0, 1 bid 8, 0, 1, 2
        engine.step([seat_bid])
    engine.step(parse_cards("AH"))
    view = table_view(engine)
    assert view.bids == [1, 2, 8, 0] and view.trick == [(2, 38)] and view.last_trick == []
    for card in parse_cards("2S 2C 2D"):
        engine.step([card])
    view = table_view(engine, observer=2)
    assert view.last_trick == [(2, 38), (3, 39), (0, 0), (1, 13)] and view.last_winner == 2
    assert view.legal_cards == list(range(26, 38))
    text = render_text(engine, observer=2)
    assert "last trick: player_2 A♥, player_3 2♠, player_0 2♣, player_1 2♦ - taken by player_2" \
        in text
    with pytest.raises(ValueError, match="names"):
        table_view(engine, names=["a", "b"])
