"""Tests of the scalar reference implementation (``tests/reference.py``) itself.

Scripted deals with exact results, written with card texts, then random play
over many rule sets checking invariants that follow directly from RULES.md.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from reference import (  # noqa: E402
    ALL_HEARTS,
    FIRST_BID_ACTION,
    FIRST_CURSE_ACTION,
    RefMatch,
    deck_of,
    heart_value,
    pass_offset,
    random_deal,
)

from smoor_env.core.rules import Rules  # noqa: E402

RANKS, SUITS = "23456789TJQKA", "CDHS"


def cards(text: str) -> list[int]:
    """Card ids of a text such as "AH TD 2C"."""
    return [13 * SUITS.index(t[1]) + RANKS.index(t[0]) for t in text.split()]


def card(text: str) -> int:
    return cards(text)[0]


def play_scripted(match: RefMatch, scripts: list[str]) -> None:
    """Each seat plays the cards of its script in order, whenever it is its turn."""
    queues = [cards(s) for s in scripts]
    while match.phase == "play":
        seat = match.current_player
        match.apply(queues[seat].pop(0))


# Seat 0 holds all clubs, 1 all diamonds, 2 all hearts, 3 all spades.
SUIT_PER_SEAT = [" ".join(r + s for r in RANKS) for s in SUITS]

# A mixed 4-player deal, each hand in the order it is played (dealer 3, seat 0 leads).
# Tricks 1-6: seat 0 wins clubs, seat 1 discards 2H..7H. Trick 7: 2D led, seat 2's
# AD wins 8H. Tricks 8-13: seat 2 leads diamonds, seat 3 discards 9H..AH.
SPLIT_DEAL = [
    "AC KC QC JC TC 9C 2D 3D 4D 5D 6D 7D AS",
    "2H 3H 4H 5H 6H 7H 8H 8S 9S TS JS QS KS",
    "2C 3C 4C 5C 6C 7C AD KD QD JD TD 9D 8D",
    "8C 2S 3S 4S 5S 6S 7S 9H TH JH QH KH AH",
]


# ------------------------------------------------------------------ scripted tests
def test_card_ids():
    assert cards("2C 3C 2D 2H AH QS AS") == [0, 1, 13, 26, 38, 49, 51]


def test_follow_suit_and_highest_of_led_suit_wins():
    match = RefMatch(Rules(target_score=None), first_dealer=3)
    match.start_round([cards(h) for h in SPLIT_DEAL], [])
    assert match.phase == "play" and match.current_player == 0  # left of dealer leads
    assert match.legal_actions() == sorted(cards(SPLIT_DEAL[0]))  # any lead
    match.apply(card("5D"))
    # Seat 1 is void in diamonds: any card. Seat 2 must follow diamonds.
    assert match.legal_actions() == sorted(cards(SPLIT_DEAL[1]))
    match.apply(card("KS"))
    assert match.legal_actions() == cards("AD KD QD JD TD 9D 8D")[::-1]
    with pytest.raises(ValueError):
        match.apply(card("2C"))
    match.apply(card("8D"))
    match.apply(card("AH"))  # seat 3 discards the ace of hearts
    # 8D is the highest card of the led suit; the higher KS and AH were discards.
    assert match.trick_winners == [2] and match.trick_leaders == [0]
    assert sorted(match.won_cards[2]) == sorted(cards("5D KS 8D AH"))
    assert match.current_player == 2 and match.current_trick == []


def test_four_player_sweep_is_worth_34():
    match = RefMatch(Rules(), first_dealer=3)
    match.start_round([cards(h) for h in SUIT_PER_SEAT], [])
    play_scripted(match, SUIT_PER_SEAT)  # seat 0 leads clubs, everyone else discards
    assert match.trick_winners == [0] * 13
    assert match.round_points == [34, 0, 0, 0] and match.totals == [34, 0, 0, 0]
    assert match.round_winners == [0]
    # 34 < 50: the match goes on, the deal passes clockwise.
    assert match.phase == "deal" and match.dealer == 0 and match.round_number == 2


def test_split_deal_points_partners_and_bids():
    # Seat 0 wins 2H..7H (6 points), seat 2 wins 8H..AH (5 ones + AH = 11 points).
    alone = RefMatch(Rules(target_score=None), first_dealer=3)
    alone.start_round([cards(h) for h in SPLIT_DEAL], [])
    play_scripted(alone, SPLIT_DEAL)
    assert alone.round_points == [6, 0, 11, 0]
    assert alone.match_over and alone.winners == [2] and alone.phase == "match_over"

    # Partners: team {0, 2} won every heart -> a team sweep, (6 + 11) * 2.
    team = RefMatch(Rules(target_score=None, partners=True), first_dealer=3)
    team.start_round([cards(h) for h in SPLIT_DEAL], [])
    play_scripted(team, SPLIT_DEAL)
    assert team.round_points == [34, 0, 34, 0] and team.totals == [34, 0, 34, 0]
    assert team.round_winners == [0, 2] and team.winners == [0, 2]

    # Blinde Liefde: bids from the left of the dealer; heart CARDS won 6, 0, 7, 0.
    bids = RefMatch(Rules(target_score=None, bidding=True), first_dealer=3)
    bids.start_round([cards(h) for h in SPLIT_DEAL], [])
    assert bids.phase == "bid" and bids.current_player == 0
    for bid in (6, 0, 7, 1):
        bids.apply(FIRST_BID_ACTION + bid)
    assert bids.bids == [6, 0, 7, 1] and bids.phase == "play" and bids.current_player == 0
    play_scripted(bids, SPLIT_DEAL)
    assert bids.round_points == [6 + 10, 10, 11 + 10, -5]

    # Kleine Liefde: pip values. 2..7 = 27; 8..14 = 77.
    pips = RefMatch(Rules(target_score=None, pip_scoring=True), first_dealer=3)
    pips.start_round([cards(h) for h in SPLIT_DEAL], [])
    play_scripted(pips, SPLIT_DEAL)
    assert pips.round_points == [27, 0, 77, 0]


def test_trump_trick_won_by_a_low_heart():
    match = RefMatch(Rules(target_score=None, trump_hearts=True), first_dealer=3)
    match.start_round([cards(h) for h in SPLIT_DEAL], [])
    for text in ("AC", "2H", "2C", "8C"):  # seat 1 is void in clubs and trumps
        match.apply(card(text))
    assert match.trick_winners == [1] and match.current_player == 1
    match.apply(card("8S"))
    match.apply(card("AD"))  # seat 2 is void in spades
    # Following suit is still compulsory: seat 3 holds hearts but must play a spade.
    assert match.legal_actions() == cards("2S 3S 4S 5S 6S 7S")
    match.apply(card("7S"))
    match.apply(card("AS"))
    assert match.trick_winners == [1, 0]  # no heart in the trick: highest spade wins


def test_sweep_with_a_dead_heart():
    hands = [
        "AC KC QC JC TC 9C 8C 7C 6C 5C 4C 3C 2C 2D 3D 4D 5D",
        "6D 7D 8D 9D TD JD QD KD AD 2S 3S 4S 5S 6S 7S 8S 9S",
        "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH TS JS QS KS AS",
    ]
    # Seat 0 leads its clubs from the lowest; seat 2 throws its hearts first.
    scripts = [" ".join(reversed(hands[0].split()[:13])) + " 2D 3D 4D 5D", hands[1], hands[2]]
    for needs_all, expected in ((False, 32), (True, 16)):
        rules = Rules(num_players=3, target_score=None, sweep_needs_all_thirteen=needs_all)
        match = RefMatch(rules, first_dealer=2)
        match.start_round([cards(h) for h in hands], cards("2H"))
        play_scripted(match, scripts)
        assert match.round_points == [expected, 0, 0]


def test_hearts_shoot_the_moon_and_first_trick():
    rules = Rules(game="hearts", passing=False)
    match = RefMatch(rules, first_dealer=1)
    match.start_round([cards(h) for h in SUIT_PER_SEAT], [])
    assert match.phase == "play" and match.current_player == 0  # 2C holder leads
    assert match.legal_actions() == [card("2C")]
    match.apply(card("2C"))
    match.apply(card("2D"))
    # Seat 2 holds only hearts: may play one on the first trick.
    assert match.legal_actions() == cards(SUIT_PER_SEAT[2])
    match.apply(card("2H"))
    assert match.hearts_broken
    # Seat 3: no QS on the first trick while it holds other spades.
    assert card("QS") not in match.legal_actions() and len(match.legal_actions()) == 12
    # Seats 0..2 already played their lowest card; seat 0 leads clubs to the end.
    play_scripted(match, [h.split(" ", 1)[1] for h in SUIT_PER_SEAT[:3]] + [SUIT_PER_SEAT[3]])
    assert sorted(match.won_cards[0]) == list(range(52))
    assert match.round_points == [0, 26, 26, 26] and match.totals == [0, 26, 26, 26]
    assert match.round_winners == [0] and match.phase == "deal" and match.dealer == 2


def test_hearts_cannot_be_led_until_broken():
    hands = [
        "2C 2S 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH",
        "3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC QS",
        "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
        "3S 4S 5S 6S 7S 8S 9S TS JS KS AS KH AH",
    ]
    for queen_breaks in (False, True):
        rules = Rules(game="hearts", passing=False, queen_breaks_hearts=queen_breaks)
        match = RefMatch(rules, first_dealer=3)
        match.start_round([cards(h) for h in hands], [])
        match.apply(card("2C"))
        match.apply(card("AC"))
        match.apply(card("2D"))
        # First trick: seat 3 is void in clubs but may not throw its hearts.
        assert match.legal_actions() == cards("3S 4S 5S 6S 7S 8S 9S TS JS KS AS")
        match.apply(card("3S"))
        for text in ("QS", "3D", "AS", "2S"):  # seat 1 wins trick 1 and leads QS
            match.apply(card(text))
        assert match.trick_winners == [1, 3]
        # QS breaks hearts only with queen_breaks_hearts.
        assert match.hearts_broken == queen_breaks
        hearts_leadable = card("KH") in match.legal_actions()
        assert hearts_leadable == queen_breaks
        # A heart discarded on the next trick breaks hearts for the following lead.
        for text in ("4S", "2H", "3C", "4D"):
            match.apply(card(text))
        assert match.hearts_broken and match.current_player == 3
        assert card("KH") in match.legal_actions()


def test_hearts_passing_directions():
    for n, expected in ((4, [1, 3, 2, 0, 1]), (3, [1, 2, 1, 2, 1]), (5, [1, 4, 2, 0, 1])):
        rules = Rules(game="hearts", num_players=n)
        assert [pass_offset(rules, r) for r in range(1, 6)] == expected
    rules = Rules(game="hearts", num_players=4)
    rng = random.Random(7)
    match = RefMatch(rules, first_dealer=2)
    hands, dead = random_deal(rules, rng)
    match.start_round(hands, dead)
    assert match.phase == "pass" and match.current_player == 3
    for choice in range(3):  # seat 3 (left of the dealer) makes its three choices
        assert match.current_player == 3
        chosen = match.legal_actions()[0]
        match.apply(chosen)
        if choice < 2:
            assert chosen not in match.legal_actions()  # a chosen card leaves the mask
    assert match.current_player == 0 and match.hands == hands  # nothing moved yet
    for _ in range(9):
        match.apply(match.legal_actions()[-1])
    assert match.phase == "play"
    for seat in range(4):  # round 1 passes left: seat i receives from i - 1
        given, got = match.passes[seat], match.passes[(seat - 1) % 4]
        assert sorted(match.hands[seat]) == sorted([c for c in hands[seat] if c not in given] + got)
    assert card("2C") in match.hands[match.current_player]


def test_cupids_arrow_dealer_and_curse_phase():
    rules = Rules(cupids_arrow=True, cursed_suit_may_be_hearts=False)
    match = RefMatch(rules, first_dealer=3)
    match.start_round([cards(h) for h in SPLIT_DEAL], [])
    assert match.phase == "play" and match.cursed_suit is None  # none in round 1
    play_scripted(match, SPLIT_DEAL)
    # Heart cards won: 6, 0, 7, 0. Ties go to the first clockwise from seat 0.
    assert match.dealer == 1 and match.round_number == 2
    hands, dead = random_deal(rules, random.Random(1))
    match.start_round(hands, dead)
    assert match.phase == "curse" and match.current_player == 1
    assert match.legal_actions() == [66, 67, 69]
    with pytest.raises(ValueError):
        match.apply(FIRST_CURSE_ACTION + 2)
    match.apply(FIRST_CURSE_ACTION + 3)
    assert match.cursed_suit == 3 and match.phase == "play" and match.current_player == 2


def test_bad_calls_raise():
    match = RefMatch(Rules(), first_dealer=0)
    with pytest.raises(ValueError):
        match.apply(0)  # nothing to do before the deal
    with pytest.raises(ValueError):
        match.start_round([cards(h) for h in SUIT_PER_SEAT[:3]], [])
    assert match.phase == "deal"


def test_smoorverliefd_tie_continues_the_match():
    # With AH worth 0 the split deal ties seats 0 and 2 on 6 points.
    rules = Rules(target_score=5, ace_of_hearts_points=0)
    match = RefMatch(rules, first_dealer=3)
    match.start_round([cards(h) for h in SPLIT_DEAL], [])
    play_scripted(match, SPLIT_DEAL)
    assert match.round_points == [6, 0, 6, 0] and match.round_winners == [0, 2]
    assert not match.match_over and match.phase == "deal"  # target reached, but a tie
    assert match.dealer == 0 and match.round_number == 2
    # Round 2: seat 1 (left of dealer 0) holds all clubs and takes every trick.
    rotated = SUIT_PER_SEAT[3:] + SUIT_PER_SEAT[:3]
    match.start_round([cards(h) for h in rotated], [])
    play_scripted(match, rotated)
    assert match.round_points == [0, 24, 0, 0] and match.totals == [6, 24, 6, 0]
    assert match.match_over and match.winners == [1]

    # At max_rounds the tied best totals share the win.
    capped = RefMatch(Rules(target_score=5, ace_of_hearts_points=0, max_rounds=1), 3)
    capped.start_round([cards(h) for h in SPLIT_DEAL], [])
    play_scripted(capped, SPLIT_DEAL)
    assert capped.match_over and capped.winners == [0, 2]


# ------------------------------------------------------------------ random play
RULE_SETS = {
    "smoor4": Rules(target_score=None),
    "smoor3": Rules(num_players=3, target_score=None),
    "smoor5": Rules(num_players=5, target_score=None, sweep_needs_all_thirteen=True),
    "smoor4_match": Rules(target_score=20),
    "trump": Rules(num_players=3, target_score=None, trump_hearts=True),
    "bidding": Rules(target_score=None, bidding=True),
    "partners": Rules(target_score=None, partners=True, bidding=True),
    "pips": Rules(num_players=5, target_score=None, pip_scoring=True),
    "cupid": Rules(
        target_score=20, max_rounds=3, cupids_arrow=True, cursed_suit_may_be_hearts=False
    ),
    "cupid_partners_bids": Rules(
        target_score=40, max_rounds=3, cupids_arrow=True, partners=True, bidding=True
    ),
    "hearts4": Rules(game="hearts", target_score=None),
    "hearts4_match": Rules(game="hearts", target_score=40, queen_breaks_hearts=True),
    "hearts3": Rules(game="hearts", num_players=3, target_score=None, queen_never_first_trick=True),
    "hearts5": Rules(game="hearts", num_players=5, target_score=None),
    "hearts_nopass": Rules(game="hearts", passing=False, target_score=30, max_rounds=3),
}


def check_round(rules, match: RefMatch, hands, dead, played: list[int]) -> None:
    """Invariants of a finished round."""
    n = rules.num_players
    dealt = sorted(c for h in hands for c in h)
    assert sorted(played) == dealt  # every card in play played exactly once
    assert sorted(c for won in match.won_cards for c in won) == dealt
    assert len(match.trick_winners) == len(match.trick_leaders) == len(hands[0])
    assert match.round_winners
    points = match.round_points
    if rules.game == "hearts":
        assert sum(points) in (26, 26 * (n - 1))
        assert match.round_winners == [s for s in range(n) if points[s] == min(points)]
        return
    in_play = sum(heart_value(rules, c) for c in ALL_HEARTS if c not in dead)
    if not (rules.bidding or rules.cupids_arrow or rules.partners):
        assert sum(points) in (in_play, 2 * in_play)
        if rules.num_players == 4 and not rules.pip_scoring:
            assert sum(points) in (17, 34)
    if rules.partners:
        assert points[0] == points[2] and points[1] == points[3]
        assert match.totals[0] == match.totals[2] and match.totals[1] == match.totals[3]
    if rules.cupids_arrow and match.cursed_suit is not None and not rules.bidding:
        # Heart points (maybe doubled) minus the penalty of one or more tied players.
        team_sum = sum(
            points[team[0]]
            for team in ([[0, 2], [1, 3]] if rules.partners else [[s] for s in range(n)])
        )
        penalty = rules.cursed_penalty
        assert any(
            d % penalty == 0 and penalty <= d <= n * penalty
            for d in (in_play - team_sum, 2 * in_play - team_sum)
        )


def check_legal_plays(match: RefMatch, legal: list[int]) -> None:
    """Legal cards come from the hand and follow the led suit when able."""
    hand = match.hands[match.current_player]
    assert set(legal) <= set(hand)
    if match.current_trick:
        led_suit = match.current_trick[0][1] // 13
        if any(c // 13 == led_suit for c in hand):
            assert all(c // 13 == led_suit for c in legal)
    elif match.rules.game == "hearts" and match.trick_winners and not match.hearts_broken:
        # Hearts are not led before they are broken, unless the leader holds only hearts.
        only_hearts = all(c // 13 == 2 for c in hand)
        assert only_hearts or all(c // 13 != 2 for c in legal)


def play_random_match(rules, rng: random.Random) -> RefMatch:
    n = rules.num_players
    match = RefMatch(rules, first_dealer=rng.randrange(n))
    totals = [0] * n
    while not match.match_over:
        assert match.phase == "deal" and match.legal_actions() == []
        hands, dead = random_deal(rules, rng)
        match.start_round(hands, dead)
        assert match.round_number <= rules.max_rounds
        played, phases = [], []
        while match.phase not in ("deal", "match_over"):
            if not phases or phases[-1] != match.phase:
                phases.append(match.phase)
            legal = match.legal_actions()
            assert legal and legal == sorted(set(legal))
            if rng.random() < 0.05:  # an illegal action changes nothing
                bad = rng.choice([a for a in range(70) if a not in legal])
                before = (match.phase, match.current_player, [list(h) for h in match.hands])
                with pytest.raises(ValueError):
                    match.apply(bad)
                assert before == (match.phase, match.current_player, match.hands)
            if match.phase == "play":
                check_legal_plays(match, legal)
            action = rng.choice(legal)
            if match.phase == "play":
                played.append(action)
                assert action in match.hands[match.current_player]
            match.apply(action)
        # Phases in rule-book order: passing, cursed suit, bidding, tricks.
        assert phases == [p for p in ("pass", "curse", "bid", "play") if p in phases]
        assert ("curse" in phases) == (rules.cupids_arrow and match.cursed_suit is not None)
        assert ("bid" in phases) == rules.bidding
        check_round(rules, match, hands, dead, played)
        totals = [t + p for t, p in zip(totals, match.round_points, strict=True)]
        assert match.totals == totals
    assert match.phase == "match_over" and match.legal_actions() == []
    assert match.winners
    return match


def check_match_end(rules, match: RefMatch) -> None:
    totals = match.totals
    hearts = rules.game == "hearts"
    best = min(totals) if hearts else max(totals)
    assert match.winners == [s for s in range(rules.num_players) if totals[s] == best]
    if rules.target_score is None or match.round_number == rules.max_rounds:
        return
    if hearts:
        assert max(totals) >= rules.target_score
    else:
        assert best >= rules.target_score
        assert len(match.winners) == (2 if rules.partners else 1)


@pytest.mark.parametrize("name", sorted(RULE_SETS))
def test_random_play_invariants(name):
    rules = RULE_SETS[name]
    rng = random.Random(name)
    rounds = 0
    for _ in range(200):
        match = play_random_match(rules, rng)
        check_match_end(rules, match)
        rounds += match.round_number
    if rules.target_score is not None and rules.max_rounds > 1:
        assert rounds > 200  # multi-round matches really happened


def test_deck_layouts():
    assert len(deck_of(Rules(game="hearts", num_players=3))) == 51
    assert len(deck_of(Rules(game="hearts", num_players=5))) == 50
    assert len(deck_of(Rules(num_players=5))) == 52
