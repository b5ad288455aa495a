"""The Smoorverliefd base game as the rule book states it, on scripted deals."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers import act, legal_cards, new_game, play, play_out_round

from smoor_env import Engine, Phase, Rules, State, parse_cards

# Each seat holds one whole suit: nobody can follow anyone, so the leader wins every trick.
CLUBS, DIAMONDS, HEARTS, SPADES = (
    " ".join(r + s for r in "23456789TJQKA") for s in "CDHS"
)
SUIT_PER_SEAT = [CLUBS, DIAMONDS, HEARTS, SPADES]


def test_sweep_doubles_to_34():
    # Dealer 1: seat 2 (all hearts) leads, nobody can follow, seat 2 takes all 13 hearts.
    engine = new_game(Rules(target_score=None), SUIT_PER_SEAT, dealer=1)
    assert engine.state.current_player[0] == 2
    play_out_round(engine)
    st = engine.state
    assert st.finished["trick_winner"][0].tolist() == [2] * 13
    assert st.round_points[0].tolist() == [0, 0, 34, 0]
    assert st.match_over[0] and st.winners[0].tolist() == [False, False, True, False]


def test_hearts_discarded_into_a_trick_go_to_its_winner():
    # Dealer 3: seat 0 (all clubs) leads and wins every trick; seat 2 has to discard its
    # hearts into those tricks, so seat 0 sweeps without ever holding a heart.
    engine = new_game(Rules(target_score=None), SUIT_PER_SEAT, dealer=3)
    play_out_round(engine)
    assert engine.state.round_points[0].tolist() == [34, 0, 0, 0]


def _won(*per_seat: str) -> np.ndarray:
    """(1, P) uint64 won-card masks from card text per seat."""
    return np.array([[sum(1 << c for c in parse_cards(cards)) for cards in per_seat]],
                    dtype=np.uint64)


def _score(rules: Rules, *won: str, dead: str = "") -> list[int]:
    engine = Engine(rules, 1)
    dead_mask = np.array([sum(1 << c for c in parse_cards(dead))], dtype=np.uint64)
    no_bids = np.full((1, rules.num_players), -1)
    return engine.round_score(_won(*won), dead_mask, no_bids, np.array([-1]))[0].tolist()


def test_ace_of_hearts_is_worth_five():
    rules = Rules(target_score=None)
    assert _score(rules, "AH 2C 3C 4C", "2H 3H 4H 5H 6H 7H", "8H 9H TH JH QH KH", "") == [
        5, 6, 6, 0]
    assert _score(rules.replace(ace_of_hearts_points=1), "AH", "", "", "") == [1, 0, 0, 0]
    # Played out: seat 0 leads AH, seat 1 must follow with its only heart; the ace wins.
    hands = [
        "AH 2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC",
        "2H 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD",
        "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AC AD",
        SPADES,
    ]
    engine = new_game(rules, hands, dealer=3)
    play(engine, "AH 2H 3H 2S")
    assert engine.state.won[0, 0] & (0x1FFF << 26) == sum(1 << c for c in parse_cards("AH 2H 3H"))
    assert engine.state.trick_winner[0, 0] == 0


def test_round_points_add_up_to_17():
    rules = Rules(target_score=None)
    assert sum(_score(rules, "AH 2H", "3H 4H 5H", "6H 7H 8H 9H", "TH JH QH KH")) == 17


def test_trick_goes_to_highest_card_of_led_suit_not_to_a_higher_discard():
    hands = [
        "5C 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD",
        "3C 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH",
        "AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS",
        "2C 4C 6C 7C 8C 9C TC JC QC KC AC AD AH",
    ]
    engine = new_game(Rules(target_score=None), hands, dealer=3)
    play(engine, "5C 3C AS")  # seat 2 is void in clubs and discards the ace of spades
    play(engine, "2C")
    assert engine.state.trick_winner[0, 0] == 0
    assert engine.state.current_player[0] == 0  # the winner leads next


def test_follow_suit_mask():
    hands = [
        "5C 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD",
        "3C 7C 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH",
        "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
        "2C 4C 6C 8C 9C TC JC QC KC AC AD AH KH",
    ]
    engine = new_game(Rules(target_score=None), hands, dealer=3)
    # The leader may lead anything, hearts included.
    assert legal_cards(engine) == sorted(parse_cards(hands[0]))
    act(engine, "5C")
    assert legal_cards(engine) == parse_cards("3C 7C")  # must follow clubs
    act(engine, "7C")
    assert legal_cards(engine) == sorted(parse_cards(hands[2]))  # void: anything
    act(engine, "AS")
    assert legal_cards(engine) == parse_cards("2C 4C 6C 8C 9C TC JC QC KC AC")
    mask = engine.legal_mask[0]
    assert mask.shape == (70,) and not mask[52:].any()


DEAD_HEART_HANDS = [  # 3 players, 17 cards each; 2H is the dead card
    "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH AS KS QS JS TS",
    "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC 2S 3S 4S 5S",
    "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD 6S 7S 8S 9S",
]


@pytest.mark.parametrize(("needs_all", "expected"), [(False, 32), (True, 16)])
def test_heart_in_the_dead_pile(needs_all, expected):
    rules = Rules(num_players=3, target_score=None, sweep_needs_all_thirteen=needs_all)
    engine = new_game(rules, DEAD_HEART_HANDS, dealer=2)
    assert engine.state.dead[0] == 1 << 26
    # Seat 0 leads its 12 hearts first: nobody can follow, so it wins all hearts in play
    # (11 + 5 for the ace = 16), doubled unless the dead heart forbids the sweep.
    play(engine, "AH 2C 2D")
    play_out_round(engine)
    assert engine.state.round_points[0, 0] == expected


def test_dealer_rotation_and_first_lead():
    engine = Engine(Rules(num_players=5, target_score=1000, max_rounds=4), 1)
    engine.reset(3, dealers=[4])
    for round_number, dealer in zip(range(1, 5), [4, 0, 1, 2], strict=True):
        st = engine.state
        assert st.round_number[0] == round_number and st.dealer[0] == dealer
        assert st.current_player[0] == (dealer + 1) % 5  # left of the dealer leads
        play_out_round(engine)
    assert engine.state.match_over[0]  # max_rounds = 4


def _finish_round_with_totals(totals_before: list[int]) -> Engine:
    """Seat 2 sweeps (34) a round that starts from the given totals, target 50."""
    engine = new_game(Rules(target_score=50), SUIT_PER_SEAT, dealer=1)
    engine.state.totals[0] = totals_before
    play_out_round(engine)
    return engine


def test_match_goes_on_while_the_top_is_tied():
    engine = _finish_round_with_totals([50, 50, 16, 0])
    st = engine.state
    assert st.totals[0].tolist() == [50, 50, 50, 0]
    assert not st.match_over[0]
    assert st.round_number[0] == 2 and st.dealer[0] == 2 and st.current_player[0] == 3
    assert st.phase[0] == Phase.PLAY


def test_match_goes_on_until_the_target_is_reached():
    engine = _finish_round_with_totals([40, 0, 0, 0])
    assert not engine.state.match_over[0]


def test_match_ends_with_a_single_leader_over_the_target():
    engine = _finish_round_with_totals([49, 0, 20, 0])
    st = engine.state
    assert st.match_over[0] and st.totals[0].tolist() == [49, 0, 54, 0]
    assert st.winners[0].tolist() == [False, False, True, False]
    assert st.phase[0] == Phase.OVER and not engine.legal_mask.any()


def test_max_rounds_shares_the_win_between_tied_leaders():
    engine = new_game(Rules(target_score=50, max_rounds=1), SUIT_PER_SEAT, dealer=1)
    engine.state.totals[0] = [34, 0, 0, 0]
    play_out_round(engine)
    assert engine.state.match_over[0]
    assert engine.state.winners[0].tolist() == [True, False, True, False]


def test_round_winners_share_ties():
    engine = new_game(Rules(target_score=None), SUIT_PER_SEAT, dealer=1)
    play_out_round(engine)
    assert engine.state.round_winners[0].tolist() == [False, False, True, False]


def test_trick_history_records_every_card_by_seat():
    engine = new_game(Rules(target_score=None), SUIT_PER_SEAT, dealer=1)
    play_out_round(engine)
    fin = engine.state.finished
    cards = fin["trick_cards"][0]  # (13, 4): card per seat per trick
    assert sorted(cards.ravel().tolist()) == list(range(52))
    assert fin["trick_leader"][0].tolist() == [2] * 13
    assert np.all(cards // 13 == np.array([0, 1, 2, 3]))  # each seat played its own suit


def test_concat_joins_states_that_take_split_and_play_goes_on_the_same():
    engine = Engine(Rules(), 4)
    engine.reset(seed=3)
    for _ in range(5):
        engine.step(engine.sample_legal(np.random.default_rng(0)))
    st = engine.state
    joined = State.concat([st.take([2, 0]), st.take([3])])
    again = Engine(Rules(), 3)
    again.state = joined
    again.refresh_legal()
    np.testing.assert_array_equal(again.legal_mask, engine.legal_mask[[2, 0, 3]])
    whole = st.take([2, 0, 3])
    for f in dataclasses.fields(State):
        if f.name != "finished":
            np.testing.assert_array_equal(getattr(joined, f.name), getattr(whole, f.name))
    assert set(joined.finished) == set(st.finished)
    for key, value in whole.finished.items():
        np.testing.assert_array_equal(joined.finished[key], value)
    with pytest.raises(ValueError, match="at least one state"):
        State.concat([])
