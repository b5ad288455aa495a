"""A fair game: what smoor-play shows the person's seat never holds a card that seat
cannot know at that moment, in every rule set; and every view shows the records'
points (Hearts: penalty points, positive)."""

from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest

from experiments import play
from smoor_env import PRESETS, preset
from smoor_env.core import cards as C
from smoor_env.core.engine import Engine
from smoor_env.record import round_record
from smoor_env.render import render_text, table_view
from smoor_env.render.viewer import round_frames

#: A card in the display form (``10♥``, ``Q♠``).
CARD = re.compile(r"(10|[2-9JQKA])([♣♦♥♠])")
ROUNDS = 3  # Hearts at 4 players passes left, right, across in rounds 1..3


def _display_cards(text: str) -> set[int]:
    return {C.parse_card(rank + suit) for rank, suit in CARD.findall(text)}


def hidden_from(session: play.Session, ended: dict | None) -> set[int]:
    """The cards the person's seat cannot know now: every other seat's hand and the dead
    pile, less the cards the person passed this round (the receiver holds them). Just
    after a round ended (``ended``: its record) the engine has dealt the next round; the
    ended round's cards went through its tricks in public, so only its dead pile (and the
    new deal's cards it did not hold) stay hidden; and the ended round's last trick stays
    on the table until the next trick is taken."""
    st, me = session.engine.state, session.seat
    hidden = set()
    for seat in range(session.rules.num_players):
        if seat != me:
            hidden |= set(C.cards_of(int(st.hands[0, seat])))
    hidden |= set(C.cards_of(int(st.dead[0])))
    if session.phase != play.Phase.PASS:
        hidden -= {int(c) for c in st.passes[0, me] if c >= 0}
    if ended is not None:
        hidden -= set(range(52)) - {C.parse_card(c) for c in ended["dead"]}
    if session.records and int(st.trick_index[0]) == 0:
        # Until this round's first trick is taken, the table shows the last round's last.
        hidden -= {card for _, card in session.records[-1]["actions"][-session.rules.num_players:]}
    return hidden


class WatchedScreen(play.Screen):
    """A plain screen that checks everything it writes against what the seat may know."""

    def __init__(self, session: play.Session) -> None:
        super().__init__(plain=True)
        self.session, self.ended, self.text = session, None, []

    def _check(self, text: str) -> None:
        leaked = _display_cards(text) & hidden_from(self.session, self.ended)
        assert not leaked, (f"seat {self.session.seat} is shown "
                            f"{C.cards_str(sorted(leaked), symbols=True)}, hidden from it, in:\n"
                            f"{text}")
        self.text.append(text)

    def say(self, text: str, style: str = "") -> None:
        self._check(text)

    def table(self, view, legal, you) -> None:
        for seat in range(len(view.names)):
            if seat != you:
                assert view.hands[seat] is None and view.chosen[seat] is None
                assert view.received[seat] is None
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            super().table(view, legal, you)
        self._check(out.getvalue())


def _play_rounds(rules, seat: int, agents: list[str], seed: int) -> WatchedScreen:
    session = play.Session(rules, seed, seat, agents)
    screen = WatchedScreen(session)
    step = session.step

    def watched_step(action: int) -> dict | None:
        screen.ended = step(action)
        return screen.ended

    session.step = watched_step
    asked = []

    def read(prompt: str) -> str:
        screen._check(prompt)
        if len(session.records) >= ROUNDS:
            raise EOFError
        asked.append(prompt)
        if len(asked) == 2:  # one hint a match: it prints values of the person's moves
            return "hint"
        return str(1 + len(asked) % len(session.legal_actions()))

    play.play(session, screen, None, hint_worlds=4, read=read)
    assert session.over or len(session.records) == ROUNDS
    return screen


CASES = [(name, p) for name, spec in PRESETS.items() for p in spec.players]


@pytest.mark.parametrize("name, players", CASES, ids=[f"{n}-{p}p" for n, p in CASES])
def test_the_person_sees_no_hidden_card(name, players):
    rules = preset(name, players, matches=True)
    screen = _play_rounds(rules, seat=players - 1, agents=["greedy", "random"][:1] * (
        players - 1), seed=players)
    text = "\n".join(screen.text)
    assert "round 1 over" in text
    if rules.is_hearts and rules.passing:
        # The pass shown as a pass: direction, own cards one by one, the exchange.
        assert "has chosen 3 cards to pass to" in text and "you pass " in text
        assert "pass: you gave " in text and " and received " in text
        assert "passing 3 cards to " in text


def test_the_next_rounds_passes_come_after_the_rounds_end():
    screen = _play_rounds(preset("hearts", 4, matches=True), 0, ["greedy"], seed=4)
    text = "\n".join(screen.text)
    first_end = text.index("round 1 over")
    passes = [m.start() for m in re.finditer("has chosen 3 cards", text)]
    assert sum(p < first_end for p in passes) == 3  # round 1: the three other seats
    assert "plays" not in text[:text.index("pass: you gave")].replace("3:greedy plays", "")


# ------------------------------------------------------------------ one sign for points
def _rounds(rules, seed: int, rounds: int) -> list[dict]:
    """Records of ``rounds`` rounds of greedy play."""
    from agents import make_agent
    from smoor_env.observation import observe

    engine, agent = Engine(rules, 1), make_agent("greedy")
    engine.reset(seed)
    rng, records = np.random.default_rng(seed), []
    while len(records) < rounds and not engine.state.match_over[0]:
        obs = observe(engine, engine.state.current_player)
        engine.step(agent.act({"observation": obs, "action_mask": engine.legal_mask}, rng))
        if engine.state.round_over[0]:
            records.append(round_record(engine, 0, seed))
    return records


def _penalty(cards: list[int]) -> int:
    return sum(C.card_suit(c) == C.HEARTS for c in cards) + 13 * (C.QUEEN_OF_SPADES in cards)


@pytest.mark.parametrize("name", ["hearts", "smoorverliefd", "bidding", "cupids_arrow",
                                  "partners"])
def test_views_show_the_records_points(name):
    rules = preset(name, 4, matches=True)
    for record in _rounds(rules, seed=3, rounds=3):
        frames = round_frames(record)["frames"]
        # Before a card is played nobody has points (no bid or cursed suit decided yet).
        first_card = next(k for k, f in enumerate(frames[1:], 1)
                          if f["move"][1][-1] in "♣♦♥♠" and "passes" not in f["move"][1])
        assert all(f["points"] == [0] * 4 for f in frames[:first_card])
        # The end of the round shows the record's points and totals.
        assert frames[-1]["points"] == record["round_points"]
        assert frames[-1]["totals"] == record["totals"]
        before = [t - r for t, r in zip(record["totals"], record["round_points"], strict=True)]
        assert all(f["totals"] == before for f in frames[:-1])
        # Mid-round, trick by trick: the cards each seat took so far.
        taken = [[] for _ in range(4)]
        for f in frames[1:-1]:
            if f["trick_done"]:
                taken[f["winner"]] += [C.parse_card(c) for _, c in f["last"]]
            if rules.is_hearts:
                penalties = [_penalty(t) for t in taken]
                if 26 not in penalties:  # the moon turns the points round once all are taken
                    assert f["points"] == penalties
            elif not rules.partners:
                hearts = [sum(C.card_suit(c) == C.HEARTS for c in t) for t in taken]
                bids = record["bids"]
                for seat in range(4):
                    known = f["points"][seat] - hearts[seat] - (
                        rules.ace_of_hearts_points - 1) * (C.ACE_OF_HEARTS in taken[seat])
                    if bids is None or hearts[seat] <= bids[seat] and sum(hearts) < 13:
                        assert known == 0  # no outcome known yet
                    elif hearts[seat] > bids[seat]:
                        assert known == -rules.bid_penalty


def test_hearts_points_are_positive_in_text_picture_and_hint():
    rules = preset("hearts", 4)
    engine = Engine(rules, 1)
    engine.reset(1)
    from agents import make_agent
    from smoor_env.observation import observe

    agent, rng = make_agent("greedy"), np.random.default_rng(0)
    while table_view(engine).points == [0] * 4 or engine.state.trick_size[0] != 0:
        obs = observe(engine, engine.state.current_player)
        engine.step(agent.act({"observation": obs, "action_mask": engine.legal_mask}, rng))
    view = table_view(engine)
    assert min(view.points) == 0 < max(view.points)
    text = render_text(engine)
    rows = [line.split() for line in text.splitlines() if line[:1] in "* " and ":" not in line
            and line.strip().startswith(("player", "*player"))]
    assert [int(r[1]) for r in rows] == view.points  # no trick card shown: round column
