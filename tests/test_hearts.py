"""Classic Hearts: passing, the 2C (3C) lead, the first-trick rule, broken hearts, the moon."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import act, legal_cards, new_game, play, play_out_round
from test_engine_rules import SUIT_PER_SEAT

from smoor_env import Engine, Phase, Rules, parse_cards
from smoor_env.core.cards import cards_of, mask_of

NO_PASS = Rules(game="hearts", target_score=None, passing=False)


def test_deck_sizes():
    for players, removed, size in [(3, "2D", 17), (4, "", 13), (5, "2C 2D", 10)]:
        engine = Engine(Rules(game="hearts", num_players=players), 1)
        engine.reset(0)
        dealt = [cards_of(h) for h in engine.state.dealt[0]]
        assert all(len(h) == size for h in dealt)
        assert sorted(sum(dealt, [])) == sorted(set(range(52)) - set(parse_cards(removed)))
        assert engine.state.dead[0] == 0


def test_shooting_the_moon():
    # Seat 0 holds every club: it leads 2C and nobody else can ever win a trick, so it
    # takes all 13 hearts (seat 2 must shed them) and the queen of spades.
    engine = new_game(NO_PASS, SUIT_PER_SEAT, dealer=3)
    assert engine.state.current_player[0] == 0 and legal_cards(engine) == parse_cards("2C")
    play_out_round(engine)
    assert engine.state.round_points[0].tolist() == [0, 26, 26, 26]
    assert engine.state.round_winners[0].tolist() == [True, False, False, False]


def test_penalty_points_without_the_moon():
    rules = NO_PASS
    engine = Engine(rules, 1)
    won = np.array([[mask_of(parse_cards(t)) for t in
                     ("QS 2H 2C", "3H 4H 5H", "6H 7H 8H 9H TH JH QH KH AH", "")]], np.uint64)
    points = engine.round_score(won, np.zeros(1, np.uint64), np.full((1, 4), -1),
                                np.array([-1]))
    assert points[0].tolist() == [14, 3, 9, 0]


ONLY_POINTS = [
    "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
    "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH QS",  # void in clubs: only hearts and QS
    "AH 2S 3S 4S 5S 6S 7S 8S 9S TS JS KS AS",
]


@pytest.mark.parametrize("queen_never", [False, True])
def test_first_trick_void_player_with_only_hearts_and_the_queen(queen_never):
    rules = Rules(game="hearts", target_score=None, passing=False,
                  queen_never_first_trick=queen_never)
    engine = new_game(rules, ONLY_POINTS, dealer=3)
    play(engine, "2C")  # seat 0 leads the two of clubs
    assert legal_cards(engine) == parse_cards(ONLY_POINTS[1])  # diamonds carry no points
    play(engine, "2D")
    expected = "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH" + ("" if queen_never else " QS")
    assert legal_cards(engine) == sorted(parse_cards(expected))
    play(engine, "2H")
    # Seat 3 is void too but has clean spades: no AH on the first trick.
    assert legal_cards(engine) == sorted(parse_cards("2S 3S 4S 5S 6S 7S 8S 9S TS JS KS AS"))


def test_a_leader_holding_only_hearts_may_lead_them_before_they_are_broken():
    hands = [
        "AC 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH",
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AH",
        "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    ]
    engine = new_game(NO_PASS, hands, dealer=0)
    assert engine.state.current_player[0] == 1  # holds 2C
    play(engine, "2C 2D 2S AC")
    st = engine.state
    assert st.trick_winner[0, 0] == 0 and not st.hearts_broken[0]
    assert legal_cards(engine) == sorted(parse_cards(hands[0])[1:])  # only hearts left
    play(engine, "2H")
    assert st.hearts_broken[0]


def test_hearts_may_not_be_led_before_they_are_broken():
    hands = [
        "AC 3D 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH",
        "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AH",
        "2D 4D 5D 6D 7D 8D 9D TD JD QD KD AD KH",
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    ]
    for queen_breaks in (False, True):
        rules = NO_PASS.replace(queen_breaks_hearts=queen_breaks)
        engine = new_game(rules, hands, dealer=0)
        play(engine, "2C 2D 2S AC")
        assert legal_cards(engine) == parse_cards("3D")  # hearts not broken yet
        play(engine, "3D 3C 4D QS")  # seat 1 is void in diamonds; seat 3 sheds QS
        assert engine.state.hearts_broken[0] == queen_breaks


def test_five_players_lead_the_three_of_clubs():
    engine = Engine(Rules(game="hearts", num_players=5, passing=False), 1)
    engine.reset(7)
    st = engine.state
    holder = next(s for s in range(5) if int(st.hands[0, s]) >> 1 & 1)
    assert st.current_player[0] == holder
    assert legal_cards(engine) == parse_cards("3C")


DIRECTIONS = {  # pass direction by round, from RULES.md
    3: ["left", "right", "left", "right", "left"],
    4: ["left", "right", "across", "none", "left"],
    5: ["left", "right", "across", "none", "left"],
}


@pytest.mark.parametrize("players", [3, 4, 5])
def test_pass_directions_over_five_rounds(players):
    offset = {"left": 1, "right": players - 1, "across": 2}
    engine = Engine(Rules(game="hearts", num_players=players, target_score=10_000,
                          max_rounds=5), 1)
    engine.reset(1)
    st = engine.state
    for direction in DIRECTIONS[players]:
        dealt = [int(h) for h in st.dealt[0]]
        if direction == "none":
            assert st.phase[0] == Phase.PLAY
        else:
            assert st.phase[0] == Phase.PASS
            assert st.current_player[0] == (st.dealer[0] + 1) % players
            for _ in range(3 * players):  # each seat chooses three cards in turn
                act(engine, int(np.argmax(engine.legal_mask[0])))
            passed = [mask_of(p) for p in st.passes[0]]
            for seat in range(players):
                giver = (seat - offset[direction]) % players
                assert st.hands[0, seat] == (dealt[seat] & ~passed[seat]) | passed[giver]
        play_out_round(engine)
    assert st.match_over[0]


def test_a_pass_that_hands_over_the_queen_of_spades():
    hands = [SUIT_PER_SEAT[0], SUIT_PER_SEAT[1], SUIT_PER_SEAT[2], SUIT_PER_SEAT[3]]
    engine = new_game(Rules(game="hearts", target_score=None), hands, dealer=2)
    st = engine.state
    assert st.phase[0] == Phase.PASS and st.current_player[0] == 3  # left of the dealer
    play(engine, "QS AS KS")  # seat 3 passes left, to seat 0
    assert legal_cards(engine) == parse_cards(SUIT_PER_SEAT[0])  # seat 0 chooses next
    qs = parse_cards("QS")[0]
    play(engine, "2C 3C 4C 2D 3D 4D 2H 3H")  # seats 0 and 1 choose, seat 2 has two
    assert not int(st.hands[0, 0]) >> qs & 1  # nothing moves before everyone has chosen
    assert int(st.hands[0, 3]) >> qs & 1
    play(engine, "4H")
    assert st.phase[0] == Phase.PLAY
    assert int(st.hands[0, 0]) >> qs & 1 and not int(st.hands[0, 3]) >> qs & 1
    assert st.passes[0, 3].tolist() == parse_cards("QS AS KS")
