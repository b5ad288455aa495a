"""Tests for card ids and text (smoor_env.core.cards) and the Rules value (smoor_env.core.rules)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from smoor_env.core import cards as C
from smoor_env.core.rules import Rules

ALL_CARDS = range(C.NUM_CARDS)

# --------------------------------------------------------------------- card ids


@pytest.mark.parametrize(
    ("text", "card"),
    [("2C", 0), ("AC", 12), ("2D", 13), ("2H", 26), ("AH", 38), ("QS", 49), ("AS", 51)],
)
def test_card_ids_match_rules_md(text: str, card: int) -> None:
    assert C.parse_card(text) == card
    assert C.card_str(card) == text


def test_card_id_formula_suit_and_rank() -> None:
    for suit in range(C.NUM_SUITS):
        for rank in range(2, 15):
            card = 13 * suit + (rank - 2)
            assert C.card_suit(card) == suit
            assert C.card_rank(card) == rank
    assert (C.CLUBS, C.DIAMONDS, C.HEARTS, C.SPADES) == (0, 1, 2, 3)
    assert C.card_rank(C.parse_card("TD")) == 10
    assert C.card_rank(C.parse_card("AS")) == 14


@pytest.mark.parametrize("symbols", [False, True])
def test_card_str_parse_card_round_trip_all_52(symbols: bool) -> None:
    texts = [C.card_str(c, symbols=symbols) for c in ALL_CARDS]
    assert len(set(texts)) == C.NUM_CARDS
    assert [C.parse_card(t) for t in texts] == list(ALL_CARDS)


def test_card_str_accepts_numpy_integers() -> None:
    assert C.card_str(np.int64(49)) == "QS"
    assert C.card_str(np.uint8(0)) == "2C"


def test_symbols() -> None:
    assert C.card_str(49, symbols=True) == "Q♠"
    assert C.card_str(38, symbols=True) == "A♥"
    assert C.card_str(0, symbols=True) == "2♣"
    assert C.card_str(C.parse_card("TD"), symbols=True) == "10♦"
    assert C.parse_card("Q♠") == 49
    assert C.parse_card("A♥") == 38
    assert C.cards_str(C.parse_cards("AH TD 2C"), symbols=True) == "A♥ 10♦ 2♣"


def test_the_ten_is_T_in_the_compact_form_and_10_on_display() -> None:
    for suit in range(4):
        ten = 13 * suit + 8
        assert C.card_str(ten) == "T" + C.SUITS[suit]
        assert C.card_str(ten, symbols=True) == "10" + C.SUIT_SYMBOLS[suit]
        assert C.rank_str(ten) == "10"
    # every display form reads back as its card
    assert all(C.parse_card(C.card_str(c, symbols=True)) == c for c in range(52))


@pytest.mark.parametrize("text", ["TD", "td", "tD", " TD ", "10D", "10d", "T♦", "10♦", "t♦"])
def test_parse_card_accepted_spellings(text: str) -> None:
    assert C.parse_card(text) == C.parse_card("TD") == 21


def test_parse_cards() -> None:
    assert C.parse_cards("AH TD 2C") == [38, 21, 0]
    assert C.parse_cards("AH, TD,2C") == [38, 21, 0]
    assert C.parse_cards(["AH", "TD", "2C"]) == [38, 21, 0]
    assert C.parse_cards("") == []
    assert C.cards_str(C.parse_cards("AH TD 2C")) == "AH TD 2C"


@pytest.mark.parametrize("text", ["", "  ", "Q", "1C", "11C", "QX", "QSS", "ZS", "SQ", "♠Q", "10"])
def test_parse_card_rejects_bad_text(text: str) -> None:
    with pytest.raises(ValueError, match="cannot read card"):
        C.parse_card(text)


def test_parse_cards_reports_the_bad_card() -> None:
    with pytest.raises(ValueError, match="'XS'"):
        C.parse_cards("AH XS 2C")


@pytest.mark.parametrize("card", [-1, 52, 100])
def test_card_str_rejects_out_of_range(card: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        C.card_str(card)


# ------------------------------------------------------------------ masks


def test_mask_constants() -> None:
    assert C.SUIT_MASKS.dtype == np.uint64
    assert C.CARD_BITS.dtype == np.uint64
    assert C.CARD_BITS.shape == (C.NUM_CARDS,)
    assert [int(b) for b in C.CARD_BITS] == [1 << c for c in ALL_CARDS]
    assert np.bitwise_count(C.SUIT_MASKS).tolist() == [13, 13, 13, 13]
    assert int(np.bitwise_or.reduce(C.SUIT_MASKS)) == (1 << C.NUM_CARDS) - 1
    for s in range(C.NUM_SUITS):
        assert C.cards_of(C.SUIT_MASKS[s]) == list(range(13 * s, 13 * s + 13))
        for t in range(s + 1, C.NUM_SUITS):
            assert int(C.SUIT_MASKS[s] & C.SUIT_MASKS[t]) == 0
    assert int(C.SUIT_MASKS[C.HEARTS]) == C.HEART_MASK
    assert C.cards_of(C.HEART_MASK) == C.parse_cards("2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH")


def test_mask_of_cards_of_examples() -> None:
    assert C.mask_of([]) == 0
    assert C.cards_of(0) == []
    assert C.mask_of([0, 51]) == 1 | (1 << 51)
    assert C.mask_of(C.parse_cards("AH TD 2C")) == (1 << 38) | (1 << 21) | 1
    assert C.cards_of(C.mask_of([38, 21, 0, 21])) == [0, 21, 38]  # sorted, no duplicates
    assert C.cards_of(np.uint64(1 << 49)) == [49]
    assert C.cards_of(C.mask_of(ALL_CARDS)) == list(ALL_CARDS)


@given(st.sets(st.integers(0, C.NUM_CARDS - 1)))
def test_mask_of_cards_of_round_trip(cards: set[int]) -> None:
    mask = C.mask_of(cards)
    assert C.cards_of(mask) == sorted(cards)
    assert C.cards_of(np.uint64(mask)) == sorted(cards)
    assert int(np.bitwise_count(np.uint64(mask))) == len(cards)


@given(st.lists(st.sets(st.integers(0, C.NUM_CARDS - 1)), min_size=1, max_size=12))
def test_mask_to_bool_bool_to_mask_round_trip(hands: list[set[int]]) -> None:
    masks = np.array([C.mask_of(h) for h in hands], dtype=np.uint64)
    flags = C.mask_to_bool(masks)
    assert flags.shape == (len(hands), C.NUM_CARDS)
    assert flags.dtype == bool
    for row, hand in zip(flags, hands, strict=True):
        assert np.flatnonzero(row).tolist() == sorted(hand)
    back = C.bool_to_mask(flags)
    assert back.dtype == np.uint64
    assert np.array_equal(back, masks)


def test_mask_helpers_keep_leading_shape() -> None:
    rng = np.random.default_rng(0)
    flags = rng.random((2, 3, C.NUM_CARDS)) < 0.5
    masks = C.bool_to_mask(flags)
    assert masks.shape == (2, 3)
    assert np.array_equal(C.mask_to_bool(masks), flags)
    # scalar mask -> one row
    assert C.mask_to_bool(np.uint64(C.mask_of([0, 51]))).nonzero()[0].tolist() == [0, 51]


def test_mask_helpers_full_64_bits() -> None:
    flags = np.ones(64, dtype=bool)
    mask = C.bool_to_mask(flags)
    assert int(mask) == (1 << 64) - 1
    assert C.mask_to_bool(mask, width=64).all()


@given(
    st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=9),
    st.integers(1, 64),
)
def test_mask_to_bool_reads_bit_i_as_element_i(values: list[int], width: int) -> None:
    # every other column of a 2-D array: a strided view, as `legal[rows, 1]` is
    grid = np.array([[v, 0] for v in values], dtype=np.uint64)
    flags = C.mask_to_bool(grid[:, 0], width)
    assert flags.shape == (len(values), width)
    for row, value in zip(flags, values, strict=True):
        assert row.tolist() == [bool(value >> i & 1) for i in range(width)]
    low = [v & ((1 << width) - 1) for v in values]
    assert C.bool_to_mask(flags).tolist() == low


def test_mask_helpers_on_an_empty_batch() -> None:
    assert C.mask_to_bool(np.zeros(0, np.uint64)).shape == (0, C.NUM_CARDS)
    assert C.bool_to_mask(np.zeros((0, C.NUM_CARDS), bool)).shape == (0,)


def test_bool_to_mask_refuses_more_than_64_flags() -> None:
    with pytest.raises(ValueError, match="at most 64 flags"):
        C.bool_to_mask(np.ones((2, 65), bool))


# ------------------------------------------------------------------ Rules


def test_rules_defaults_smoorverliefd() -> None:
    r = Rules()
    assert r.game == "smoorverliefd"
    assert r.num_players == 4
    assert r.target_score == 50
    assert r.passing is False
    assert not r.is_hearts
    assert r.pass_offset(1) == 0


def test_rules_defaults_hearts() -> None:
    r = Rules(game="hearts")
    assert r.target_score == 100
    assert r.passing is True
    assert r.is_hearts
    assert [r.pass_offset(n) for n in range(1, 6)] == [1, 3, 2, 0, 1]  # left, right, across, none


def test_rules_explicit_values_override_game_defaults() -> None:
    assert Rules(target_score=None).target_score is None
    assert Rules(game="hearts", target_score=None).target_score is None
    assert Rules(game="hearts", passing=False).passing is False
    assert Rules(game="hearts", passing=False).pass_offset(1) == 0


@pytest.mark.parametrize(
    ("num_players", "hand_size", "dead"),
    [(3, 17, 1), (4, 13, 0), (5, 10, 2)],
)
def test_smoorverliefd_hand_sizes_and_dead_pile(num_players: int, hand_size: int, dead: int):
    r = Rules(num_players=num_players)
    assert r.hand_size == hand_size
    assert r.num_tricks == hand_size
    assert r.dead_count == dead
    assert r.deck_mask == (1 << C.NUM_CARDS) - 1  # full deck; the leftovers are dead
    assert hand_size * num_players + dead == C.NUM_CARDS


@pytest.mark.parametrize(
    ("num_players", "hand_size", "removed"),
    [(3, 17, "2D"), (4, 13, ""), (5, 10, "2C 2D")],
)
def test_hearts_hand_sizes_and_removed_cards(num_players: int, hand_size: int, removed: str):
    r = Rules(game="hearts", num_players=num_players)
    assert r.hand_size == hand_size
    assert r.dead_count == 0
    full = (1 << C.NUM_CARDS) - 1
    assert C.cards_of(full & ~r.deck_mask) == C.parse_cards(removed)
    assert bin(r.deck_mask).count("1") == hand_size * num_players


@pytest.mark.parametrize("num_players", [3, 5])
def test_partners_needs_four_players(num_players: int) -> None:
    with pytest.raises(ValueError, match="partners needs exactly 4 players"):
        Rules(partners=True, num_players=num_players)
    assert Rules(partners=True, num_players=4).partners


def test_cupids_arrow_needs_multi_round_match() -> None:
    with pytest.raises(ValueError, match="cupids_arrow needs a multi-round match"):
        Rules(cupids_arrow=True, target_score=None)
    with pytest.raises(ValueError, match="cupids_arrow"):
        Rules(cupids_arrow=True, max_rounds=1)
    assert Rules(cupids_arrow=True).cupids_arrow


@pytest.mark.parametrize(
    "option",
    [
        "trump_hearts",
        "bidding",
        "partners",
        "pip_scoring",
        "cupids_arrow",
        "sweep_needs_all_thirteen",
    ],
)
def test_smoorverliefd_variants_rejected_in_hearts(option: str) -> None:
    message = f"Smoorverliefd options cannot be used in Hearts: {option}"
    with pytest.raises(ValueError, match=message):
        Rules(game="hearts", **{option: True})
    Rules(**{option: True})  # fine in Smoorverliefd (4 players, default target)


@pytest.mark.parametrize("option", ["passing", "queen_never_first_trick", "queen_breaks_hearts"])
def test_hearts_options_rejected_in_smoorverliefd(option: str) -> None:
    message = f"Hearts options cannot be used in Smoorverliefd: {option}"
    with pytest.raises(ValueError, match=message):
        Rules(**{option: True})
    Rules(game="hearts", **{option: True})  # fine in Hearts


@pytest.mark.parametrize("game", ["smoorverliefd", "hearts"])
@pytest.mark.parametrize("num_players", [0, 1, 2, 6, 7])
def test_num_players_out_of_range(game: str, num_players: int) -> None:
    with pytest.raises(ValueError, match="num_players must be in 3..5"):
        Rules(game=game, num_players=num_players)


def test_unknown_game() -> None:
    with pytest.raises(ValueError, match="game must be one of"):
        Rules(game="bridge")


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"num_players": "4"}, "num_players must be an int"),
        ({"num_players": 4.0}, "num_players must be an int"),
        ({"num_players": True}, "num_players must be an int"),
        ({"max_rounds": None}, "max_rounds must be an int"),
        ({"ace_of_hearts_points": 5.5}, "ace_of_hearts_points must be an int"),
        ({"bidding": 1}, "bidding must be a bool"),
        ({"partners": "yes"}, "partners must be a bool"),
        ({"passing": None}, "passing must be a bool"),
        ({"target_score": "50"}, "target_score must be an int or None"),
        ({"target_score": 50.0}, "target_score must be an int or None"),
        ({"target_score": True}, "target_score must be an int or None"),
        ({"target_score": 0}, "target_score must be in 1.."),
        ({"max_rounds": 0}, "max_rounds must be in 1..10_000"),
        ({"ace_of_hearts_points": -1}, "ace_of_hearts_points must be in 0..10_000"),
        ({"bid_penalty": -5}, "bid_penalty must be in 0..10_000"),
        ({"bid_penalty": 2**32}, "bid_penalty must be in 0..10_000"),
        ({"ace_of_hearts_points": 2**31}, "ace_of_hearts_points must be in"),
        ({"max_rounds": 10_001}, "max_rounds must be in"),
        ({"cursed_penalty": True}, "cursed_penalty must be an int"),
    ],
)
def test_wrong_types_and_values(changes: dict, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Rules(**changes)


def test_error_messages_say_impossible_rules() -> None:
    with pytest.raises(ValueError, match=r"^impossible rules: "):
        Rules(partners=True, num_players=3)


def test_rules_is_frozen() -> None:
    r = Rules()
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.num_players = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.game = "hearts"  # type: ignore[misc]
    assert r.num_players == 4


def test_rules_value_semantics() -> None:
    assert Rules() == Rules()
    assert hash(Rules()) == hash(Rules())
    assert Rules() != Rules(num_players=3)
    assert Rules(game="hearts") == Rules(game="hearts", target_score=100, passing=True)


def test_rules_replace_validates_again() -> None:
    r = Rules()
    assert r.replace(num_players=3).hand_size == 17
    assert r.num_players == 4  # original unchanged
    with pytest.raises(ValueError, match="partners"):
        r.replace(num_players=3, partners=True)


def test_rules_to_dict() -> None:
    d = Rules(game="hearts", num_players=5).to_dict()
    assert d["game"] == "hearts"
    assert d["num_players"] == 5
    assert d["target_score"] == 100
    assert d["passing"] is True
    assert "deck_mask" not in d and "hand_size" not in d
    assert Rules(**d) == Rules(game="hearts", num_players=5)
