"""The Smoorverliefd variants (met Troef, Blinde Liefde, Partner, Kleine Liefde, Cupid's Arrow)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import act, legal_cards, new_game, play, play_out_round
from test_engine_rules import SUIT_PER_SEAT, _score

from smoor_env import Engine, Phase, Rules, parse_cards

BID, CURSE = 52, 66

TRUMP_HANDS = [
    "AC 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD",
    "2H 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS",  # void in clubs, holds the lowest heart
    "2C 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",  # one club and twelve hearts
    "3C 4C 5C 6C 7C 8C 9C TC JC QC KC AD AS",
]


@pytest.mark.parametrize(("trump", "winner"), [(True, 1), (False, 0)])
def test_met_troef_a_low_heart_beats_the_ace_of_the_led_suit(trump, winner):
    engine = new_game(Rules(target_score=None, trump_hearts=trump), TRUMP_HANDS, dealer=3)
    play(engine, "AC 2H")
    # Following suit stays compulsory: seat 2 holds hearts but must play its club.
    assert legal_cards(engine) == parse_cards("2C")
    play(engine, "2C 3C")
    assert engine.state.trick_winner[0, 0] == winner


def test_blinde_liefde_bids_in_order_then_bonus_and_penalty_and_a_sweep():
    # Dealer 1: bidding starts with seat 2 (all hearts), who then sweeps every trick.
    engine = new_game(Rules(target_score=None, bidding=True), SUIT_PER_SEAT, dealer=1)
    st = engine.state
    for seat, bid in [(2, 13), (3, 0), (0, 1), (1, 0)]:
        assert st.phase[0] == Phase.BID and st.current_player[0] == seat
        assert legal_cards(engine) == list(range(BID, BID + 14))  # bids 0..13
        act(engine, BID + bid)
    assert st.bids[0].tolist() == [1, 0, 13, 0]
    assert st.phase[0] == Phase.PLAY and st.current_player[0] == 2  # left of dealer leads
    play_out_round(engine)
    # Seat 2: 17 heart points doubled by the sweep (34) + 10 for hitting 13; the bonus is
    # not doubled. Seat 0 bid 1 and won none: -5. Seats 1 and 3 bid 0 and won 0: +10.
    assert st.round_points[0].tolist() == [-5, 10, 44, 10]


def test_blinde_liefde_miss_without_a_sweep():
    rules = Rules(target_score=None, bidding=True)
    engine = Engine(rules, 1)
    won = np.array([[sum(1 << c for c in parse_cards(t)) for t in
                     ("AH 2H", "3H 4H 5H", "6H 7H 8H 9H", "TH JH QH KH")]], np.uint64)
    points = engine.round_score(won, np.zeros(1, np.uint64), np.array([[2, 2, 4, 0]]),
                                np.array([-1]))
    assert points[0].tolist() == [6 + 10, 3 - 5, 4 + 10, 4 - 5]


def test_partners_sweep_as_a_team():
    rules = Rules(target_score=None, partners=True)
    # Seats 0 and 2 share the 13 hearts: the team sweeps; both partners show 34.
    assert _score(rules, "2H 3H 4H 5H 6H 7H", "", "8H 9H TH JH QH KH AH", "") == [34, 0, 34, 0]
    # One heart on the other team: no sweep; team points are the partners' sum.
    assert _score(rules, "2H 3H 4H 5H 6H 7H", "8H", "9H TH JH QH KH AH", "") == [
        16, 1, 16, 1]
    engine = new_game(rules, SUIT_PER_SEAT, dealer=1)
    play_out_round(engine)
    st = engine.state
    assert st.round_points[0].tolist() == [34, 0, 34, 0]
    assert st.winners[0].tolist() == [True, False, True, False]


@pytest.mark.parametrize("players", [3, 5])
def test_partners_need_four_players(players):
    with pytest.raises(ValueError, match="partners needs exactly 4 players"):
        Rules(partners=True, num_players=players)


def test_kleine_liefde_pip_values():
    rules = Rules(target_score=None, pip_scoring=True)
    points = _score(rules, "AH 2H", "3H 4H 5H", "6H 7H 8H 9H", "TH JH QH KH")
    assert points == [14 + 2, 3 + 4 + 5, 6 + 7 + 8 + 9, 10 + 11 + 12 + 13]
    assert sum(points) == 104
    engine = new_game(rules, SUIT_PER_SEAT, dealer=1)
    play_out_round(engine)
    assert engine.state.round_points[0].tolist() == [0, 0, 208, 0]


def _heart_cards_won(engine: Engine) -> list[int]:
    """Heart cards each seat won in the finished round, counted from its tricks."""
    fin = engine.state.finished
    counts = [0] * engine.rules.num_players
    for cards, winner in zip(fin["trick_cards"][0], fin["trick_winner"][0], strict=True):
        counts[winner] += sum(1 for c in cards if c // 13 == 2)
    return counts


def test_cupids_arrow_over_three_rounds():
    rules = Rules(cupids_arrow=True, target_score=500, max_rounds=3)
    engine = new_game(rules, SUIT_PER_SEAT, dealer=1, seed=5)
    st = engine.state
    assert st.phase[0] == Phase.PLAY and st.cursed_suit[0] == -1  # round 1: no curse
    play_out_round(engine)
    # Seat 2 won all 13 hearts; seats 3, 0 and 1 tie on none. The first of them clockwise
    # from the left of the previous dealer (seat 1) is seat 3: seat 3 deals round 2.
    assert _heart_cards_won(engine) == [0, 0, 13, 0]
    assert st.round_number[0] == 2 and st.dealer[0] == 3
    for _ in range(2):
        dealer = int(st.dealer[0])
        assert st.phase[0] == Phase.CURSE and st.current_player[0] == dealer
        assert legal_cards(engine) == [CURSE, CURSE + 1, CURSE + 2, CURSE + 3]
        act(engine, CURSE + 3)  # spades
        assert st.cursed_suit[0] == 3
        assert st.phase[0] == Phase.PLAY and st.current_player[0] == (dealer + 1) % 4
        totals_before = st.totals[0].copy()
        play_out_round(engine)
        fin = engine.state.finished
        spades = [0] * 4
        for cards, winner in zip(fin["trick_cards"][0], fin["trick_winner"][0], strict=True):
            spades[winner] += sum(1 for c in cards if c // 13 == 3)
        most = max(spades)
        hearts = _heart_cards_won(engine)
        plain = _score(Rules(target_score=None), *(
            " ".join(f"{'23456789TJQKA'[c % 13]}{'CDHS'[c // 13]}" for c in cards_won)
            for cards_won in _cards_won(engine)))
        expected = [p - 5 * (s == most) for p, s in zip(plain, spades, strict=True)]
        assert (st.totals[0] - totals_before).tolist() == expected
        if not st.match_over[0]:
            fewest = min(hearts)
            order = [(dealer + 1 + k) % 4 for k in range(4)]
            assert st.dealer[0] == next(s for s in order if hearts[s] == fewest)
    assert st.match_over[0] and st.round_number[0] == 3


def _cards_won(engine: Engine) -> list[list[int]]:
    fin = engine.state.finished
    won: list[list[int]] = [[] for _ in range(engine.rules.num_players)]
    for cards, winner in zip(fin["trick_cards"][0], fin["trick_winner"][0], strict=True):
        won[winner].extend(int(c) for c in cards)
    return won


def test_cupids_arrow_every_player_tied_on_the_most_cursed_cards_loses():
    rules = Rules(cupids_arrow=True)
    engine = Engine(rules, 1)
    won = np.array([[sum(1 << c for c in parse_cards(t)) for t in
                     ("2S 3S 4S 5S 6S AH", "7S 8S 9S TS JS", "QS KS AS 2H", "")]], np.uint64)
    points = engine.round_score(won, np.zeros(1, np.uint64), np.full((1, 4), -1), np.array([3]))
    assert points[0].tolist() == [5 - 5, 0 - 5, 1, 0]


def test_cupids_arrow_may_forbid_hearts_and_needs_a_match():
    rules = Rules(cupids_arrow=True, cursed_suit_may_be_hearts=False, max_rounds=2,
                  target_score=500)
    engine = new_game(rules, SUIT_PER_SEAT, dealer=1)
    play_out_round(engine)
    assert legal_cards(engine) == [CURSE, CURSE + 1, CURSE + 3]
    with pytest.raises(ValueError, match="multi-round"):
        Rules(cupids_arrow=True, target_score=None)
