"""Bad input: every mistake is a clear ValueError / TypeError and changes nothing.

Each bad call must raise with a message that names the problem, and leave every array
of ``engine.state`` (the ``finished`` round record included) exactly as it was; the
engine must then go on normally with good input.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from helpers import act, new_game, play_out_round

from smoor_env import Engine, Phase, Rules, action_str, card_str, parse_card, parse_cards
from smoor_env.core.rules import OPTION_BOUNDS, TOTALS_BOUND

RANKS = "23456789TJQKA"
SUIT_PER_SEAT = [" ".join(r + s for r in RANKS) for s in "CDHS"]
B = 8


# ------------------------------------------------------------------ helpers
def _arrays(state) -> dict[str, np.ndarray]:
    """Every array of a State by name, ``finished`` ones as ``finished.<name>``."""
    arrays = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)
              if f.name != "finished"}
    arrays.update({f"finished.{k}": v for k, v in state.finished.items()})
    return arrays


def assert_same_state(before, after) -> None:
    """Every array of two states equal (values, dtypes, shapes)."""
    a, b = _arrays(before), _arrays(after)
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        assert np.array_equal(a[name], b[name]), f"state.{name} changed"


def assert_rejected(engine: Engine, call, error: type[Exception] | tuple, *patterns: str) -> str:
    """``call()`` raises ``error`` whose message matches every pattern; state unchanged."""
    before = engine.state.copy()
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    for pattern in patterns:
        assert re.search(pattern, message), f"{pattern!r} not in message {message!r}"
    assert_same_state(before, engine.state)
    return message


def lowest_legal(engine: Engine) -> np.ndarray:
    return np.argmax(engine.legal_mask, axis=1)


@pytest.fixture
def engine() -> Engine:
    """A batch of 8 four-player games, 5 cards into the first round (mid-trick)."""
    engine = Engine(Rules(target_score=None), B)
    engine.reset(11)
    for _ in range(5):
        engine.step(lowest_legal(engine))
    return engine


def _card_texts(mask: int) -> list[str]:
    return [card_str(c) for c in range(52) if mask >> c & 1]


def _legal_texts(engine: Engine, g: int) -> list[str]:
    return [action_str(a) for a in np.flatnonzero(engine.legal_mask[g])]


# ------------------------------------------------------------------ actions: shape and type
@pytest.mark.parametrize("shape", [(B + 1,), (B - 1,), (B, 1), (1, B), ()],
                         ids=["B+1", "B-1", "Bx1", "1xB", "scalar"])
def test_wrong_action_shape(engine: Engine, shape: tuple[int, ...]) -> None:
    actions = np.zeros(shape, np.int64)
    assert_rejected(engine, lambda: engine.step(actions), ValueError,
                    r"shape", rf"\({B},\)", re.escape(str(shape)))
    engine.step(lowest_legal(engine))  # still works


def test_plain_int_is_not_a_batch(engine: Engine) -> None:
    assert_rejected(engine, lambda: engine.step(3), ValueError, "shape")


@pytest.mark.parametrize("dtype", [np.float64, np.float32, bool, object],
                         ids=["float64", "float32", "bool", "object"])
def test_non_integer_actions(engine: Engine, dtype) -> None:
    actions = lowest_legal(engine).astype(dtype)  # the right values, the wrong type
    assert_rejected(engine, lambda: engine.step(actions), (ValueError, TypeError), "integer")


def test_python_floats_and_strings(engine: Engine) -> None:
    legal = lowest_legal(engine).tolist()
    assert_rejected(engine, lambda: engine.step([float(a) for a in legal]),
                    (ValueError, TypeError), "integer")
    assert_rejected(engine, lambda: engine.step([str(a) for a in legal]),
                    (ValueError, TypeError), "integer")


@pytest.mark.parametrize("bad", [-1, 70, 1000, -(2**40), 2**40])
def test_out_of_range_action(engine: Engine, bad: int) -> None:
    actions = lowest_legal(engine)
    actions[3] = bad
    message = assert_rejected(engine, lambda: engine.step(actions), ValueError,
                              r"game 3\b", rf"(?<!\d){bad}(?!\d)", "out of range")
    assert "legal:" in message
    engine.step(lowest_legal(engine))


# ------------------------------------------------------------------ illegal choices
def test_illegal_card_in_one_game_of_a_batch_names_game_seat_card_and_legal_cards(
        engine: Engine) -> None:
    st = engine.state
    mask = engine.legal_mask
    # A game where the player to act holds a card it may not play (must follow suit).
    games = [g for g in range(B)
             if any(int(st.hands[g, st.current_player[g]]) >> c & 1 and not mask[g, c]
                    for c in range(52))]
    assert games, "precondition: some player must be unable to play one of its cards"
    g = games[-1]
    seat = int(st.current_player[g])
    card = next(c for c in range(52)
                if int(st.hands[g, seat]) >> c & 1 and not mask[g, c])
    actions = lowest_legal(engine)
    actions[g] = card
    message = assert_rejected(engine, lambda: engine.step(actions), ValueError,
                              rf"game {g}\b", rf"seat {seat}\b", card_str(card))
    legal_part = message.split("legal:")[1]
    for text in _legal_texts(engine, g):
        assert text in legal_part, f"legal card {text} missing from {message!r}"
    # The other 7 games were legal and did not move either (checked above); now all move.
    engine.step(lowest_legal(engine))


def test_card_from_another_hand(engine: Engine) -> None:
    st = engine.state
    g = 6
    seat = int(st.current_player[g])
    other = (seat + 1) % 4
    card = min(c for c in range(52) if int(st.hands[g, other]) >> c & 1)
    actions = lowest_legal(engine)
    actions[g] = card
    assert_rejected(engine, lambda: engine.step(actions), ValueError,
                    rf"game {g}\b", rf"seat {seat}\b", card_str(card), "legal:")


def test_several_illegal_games_are_all_listed(engine: Engine) -> None:
    actions = lowest_legal(engine)
    actions[[1, 4, 6]] = 60  # a bid id during play
    assert_rejected(engine, lambda: engine.step(actions), ValueError,
                    r"game 1\b", r"3 games", r"\[1, 4, 6\]")


def test_bid_action_during_the_play_phase(engine: Engine) -> None:
    actions = lowest_legal(engine)
    actions[0] = 52 + 3  # "bid 3"
    assert_rejected(engine, lambda: engine.step(actions), ValueError,
                    r"game 0\b", "bid 3", "play phase")


def test_card_and_curse_actions_during_bidding() -> None:
    engine = Engine(Rules(target_score=None, bidding=True), 2)
    engine.reset(5)
    assert (engine.state.phase == Phase.BID).all()
    for bad, text in ((parse_card("AH"), "AH"), (66, "curse C"), (51, "AS")):
        actions = np.array([52, bad])
        assert_rejected(engine, lambda a=actions: engine.step(a), ValueError,
                        r"game 1\b", "bid phase", text, "bid 0")
    engine.step(np.array([52, 65]))
    assert engine.state.bids[:, :2].max() >= 0


def test_cursed_hearts_when_forbidden() -> None:
    rules = Rules(cupids_arrow=True, cursed_suit_may_be_hearts=False, target_score=200)
    engine = Engine(rules, 1)
    engine.reset(2)
    play_out_round(engine)
    assert engine.state.phase[0] == Phase.CURSE
    assert_rejected(engine, lambda: act(engine, 66 + 2), ValueError,
                    "curse H", "curse phase", "curse C", "curse D", "curse S")
    assert_rejected(engine, lambda: act(engine, 52), ValueError, "bid 0", "curse phase")
    act(engine, 66 + 3)
    assert engine.state.cursed_suit[0] == 3


def test_passing_a_card_twice_or_a_card_not_held() -> None:
    engine = Engine(Rules(game="hearts"), 1)
    engine.reset(4)
    assert engine.state.phase[0] == Phase.PASS
    seat = int(engine.state.current_player[0])
    hand = [c for c in range(52) if int(engine.state.hands[0, seat]) >> c & 1]
    act(engine, hand[0])
    assert_rejected(engine, lambda: act(engine, hand[0]), ValueError,
                    card_str(hand[0]), "pass phase", rf"seat {seat}\b")
    not_held = next(c for c in range(52) if c not in hand)
    assert_rejected(engine, lambda: act(engine, not_held), ValueError,
                    card_str(not_held), "pass phase")
    act(engine, hand[1])


# ------------------------------------------------------------------ finished matches
def test_step_after_the_match_ended_single_game() -> None:
    engine = new_game(Rules(target_score=None), SUIT_PER_SEAT, dealer=1)
    play_out_round(engine)
    assert engine.state.match_over[0]
    for action in (0, 38, -1):
        assert_rejected(engine, lambda a=action: act(engine, a), ValueError,
                        "over", "reset")


def test_finished_games_of_a_batch_ignore_their_actions() -> None:
    """Game 0 sweeps (34 >= 30) and is over after one round; games 1-3 play on."""
    rules = Rules(target_score=30, max_rounds=10)
    engine = Engine(rules, 4)
    shuffled = engine.reset(8).dealt
    deals = [SUIT_PER_SEAT] + [
        [_card_texts(int(m)) for m in shuffled[g]] for g in (1, 2, 3)]
    engine.reset(8, hands=deals, dealers=[1, 0, 0, 0])
    play_out_round(engine)
    st = engine.state
    over = st.match_over.tolist()
    assert over[0] and not any(over[1:]), f"precondition: only game 0 is over: {over}"
    for junk in (0, -1, 69, 1000, 2**40):
        before = engine.state.copy()
        actions = lowest_legal(engine)
        actions[0] = junk
        engine.step(actions)
        after = engine.state
        for name, array in _arrays(before).items():
            if name != "round_over":  # "a round ended during the last step": now False
                assert np.array_equal(array[0], _arrays(after)[name][0]), f"{name} of game 0"
        assert not after.round_over[0] and after.match_over[0]
        assert (after.played[1:] != before.played[1:]).all(), "the live games did not move"
    # An illegal action in a live game is still caught (not the all-play fast path).
    actions = lowest_legal(engine)
    actions[2] = 60
    assert_rejected(engine, lambda: engine.step(actions), ValueError, r"game 2\b", "bid 8")


@pytest.mark.parametrize("bad", [-1, 60, 70, 2**40, "held"])
def test_an_illegal_action_among_many_active_games_of_a_large_batch(bad) -> None:
    """200 games, about half of them acting (the engine plays them masked, whole-batch),
    the waiting ones with junk actions: one acting game's bad action is named, and
    nothing moves."""
    engine = Engine(Rules(target_score=None), 200)
    engine.reset(5)
    rng = np.random.default_rng(5)
    for _ in range(6):  # out of lockstep: different places in the trick
        engine.step(lowest_legal(engine), active=rng.random(200) < 0.5)
    st = engine.state
    active = rng.random(200) < 0.5
    actions = np.where(active, lowest_legal(engine), rng.integers(-5, 80, 200))
    mask = engine.legal_mask
    # An acting game whose player holds a card it may not play (it must follow suit).
    g = next(g for g in np.flatnonzero(active)
             if any(int(st.hands[g, st.current_player[g]]) >> c & 1 and not mask[g, c]
                    for c in range(52)))
    if bad == "held":
        bad = next(c for c in range(52)
                   if int(st.hands[g, st.current_player[g]]) >> c & 1 and not mask[g, c])
    actions[g] = bad
    assert_rejected(engine, lambda: engine.step(actions, active=active), ValueError,
                    rf"illegal action in game {g}\b", r"legal:")
    actions[g] = lowest_legal(engine)[g]
    played = st.played.copy()  # (200,)
    engine.step(actions, active=active)  # the same step with the action fixed goes on
    assert (engine.state.played != played).tolist() == active.tolist()


def test_is_legal_says_which_actions_are_legal_without_changing_anything(
        engine: Engine) -> None:
    before = engine.state.copy()
    mask = engine.legal_mask  # (B, 70)
    for action in (0, 13, 26, 39, 51, 52, 69):
        assert np.array_equal(engine.is_legal(np.full(B, action)), mask[:, action])
    for junk in (-1, 70, 2**40):
        assert not engine.is_legal(np.full(B, junk)).any()
    assert_rejected(engine, lambda: engine.is_legal(np.zeros(B + 1, np.int64)), ValueError,
                    "shape")
    assert_rejected(engine, lambda: engine.is_legal(np.zeros(B)), ValueError, "integers")
    assert_same_state(before, engine.state)


# ------------------------------------------------------------------ impossible rules
@pytest.mark.parametrize(("kwargs", "pattern"), [
    ({"partners": True, "num_players": 3}, "partners"),
    ({"partners": True, "num_players": 5}, "partners"),
    ({"cupids_arrow": True, "target_score": None}, "cupids_arrow"),
    ({"cupids_arrow": True, "max_rounds": 1}, "cupids_arrow"),
    ({"game": "hearts", "trump_hearts": True}, "trump_hearts"),
    ({"game": "hearts", "bidding": True}, "bidding"),
    ({"game": "hearts", "partners": True}, "partners"),
    ({"passing": True}, "passing"),
    ({"queen_never_first_trick": True}, "queen_never_first_trick"),
    ({"num_players": 6}, "num_players"),
    ({"num_players": 2}, "num_players"),
    ({"game": "hearts", "num_players": 6}, "num_players"),
    ({"game": "spades"}, "game"),
    ({"target_score": 0}, "target_score"),
    ({"target_score": -5}, "target_score"),
    ({"max_rounds": 0}, "max_rounds"),
    ({"bid_penalty": -5}, "bid_penalty"),
    ({"num_players": 4.0}, "num_players"),
    ({"trump_hearts": 1}, "trump_hearts"),
], ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}={x}" for k, x in v.items()))
def test_impossible_rules(kwargs: dict, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        Rules(**kwargs)


def test_rules_are_immutable() -> None:
    rules = Rules()
    with pytest.raises(AttributeError):
        rules.num_players = 5  # type: ignore[misc]


# ------------------------------------------------------------------ bad reset arguments
def _four_hands() -> list[list[str]]:
    return [s.split() for s in SUIT_PER_SEAT]


def test_reset_with_a_duplicated_card(engine: Engine) -> None:
    deal = _four_hands()
    deal[2][0] = "AC"  # AC is also in seat 0's hand
    deals = [deal] * B
    assert_rejected(engine, lambda: engine.reset(1, hands=deals), ValueError,
                    "AC", "twice", r"game 0\b")


def test_reset_with_a_hand_of_the_wrong_size(engine: Engine) -> None:
    deal = _four_hands()
    deal[1] = deal[1][:12]
    assert_rejected(engine, lambda: engine.reset(1, hands=[deal] * B), ValueError,
                    r"seat 1\b", r"\b13\b", r"\b12\b")


def test_reset_with_a_card_not_in_the_hearts_deck() -> None:
    rules = Rules(game="hearts", num_players=3, target_score=None)
    engine = Engine(rules, 1)
    engine.reset(0)
    deck = [c for c in range(52) if c != parse_card("2D")]
    deal = [[card_str(c) for c in deck[17 * s: 17 * s + 17]] for s in range(3)]
    deal[1][0] = "2D"
    assert_rejected(engine, lambda: engine.reset(1, hands=[deal]), ValueError,
                    "not in the deck", r"seat 1\b", r"2D|\b13\b")


def test_reset_with_a_bad_card_text(engine: Engine) -> None:
    deal = _four_hands()
    deal[0][0] = "1X"
    assert_rejected(engine, lambda: engine.reset(1, hands=[deal] * B), ValueError, "1X")


@pytest.mark.parametrize("bad", [0.5, np.float64(0.9)], ids=["float", "np-float"])
def test_reset_with_a_non_integer_card_id(engine: Engine, bad) -> None:
    # Card ids must be ints (actions must be too): 0.5 must not silently become 2C.
    deal = [list(range(13 * s, 13 * s + 13)) for s in range(4)]
    deal[0][0] = bad  # in place of 2C (id 0), which int(bad) truncates it to
    assert_rejected(engine, lambda: engine.reset(1, hands=[deal] * B), (ValueError, TypeError),
                    "card", re.escape(str(bad)))


def test_reset_with_the_wrong_number_of_hands(engine: Engine) -> None:
    deal = _four_hands()[:3]
    assert_rejected(engine, lambda: engine.reset(1, hands=[deal] * B), ValueError,
                    r"\b4 hands\b", r"\b3\b")


def test_reset_with_the_wrong_number_of_deals(engine: Engine) -> None:
    assert_rejected(engine, lambda: engine.reset(1, hands=[_four_hands()] * (B - 1)),
                    ValueError, rf"\b{B}\b", rf"\b{B - 1}\b")


@pytest.mark.parametrize("dealers", [
    [4] * B, [-1] + [0] * (B - 1), [0] * (B - 1), [[0]] * B, [0.0] * B, ["0"] * B,
], ids=["seat-4", "seat--1", "too-few", "nested", "float", "str"])
def test_reset_with_bad_dealers(engine: Engine, dealers) -> None:
    assert_rejected(engine, lambda: engine.reset(1, dealers=dealers), ValueError, "dealers")


@pytest.mark.parametrize("game_ids", [
    list(range(B - 1)), [list(range(B))], [0.5] * B, np.arange(B).reshape(2, B // 2),
], ids=["too-few", "nested", "float", "2d"])
def test_reset_with_bad_game_ids(engine: Engine, game_ids) -> None:
    assert_rejected(engine, lambda: engine.reset(1, game_ids=game_ids), ValueError,
                    "game_ids", rf"\({B},\)")


@pytest.mark.parametrize("seed", [1.5, "7", None, True, np.float64(3.0)],
                         ids=["float", "str", "None", "bool", "np-float"])
def test_reset_with_a_non_int_seed(engine: Engine, seed) -> None:
    assert_rejected(engine, lambda: engine.reset(seed), TypeError, "seed", "int")


def test_numpy_int_seed_is_fine() -> None:
    a, b = Engine(Rules(), 2), Engine(Rules(), 2)
    a.reset(np.int64(9))
    b.reset(9)
    assert np.array_equal(a.state.dealt, b.state.dealt)


def test_good_reset_after_bad_ones_still_works(engine: Engine) -> None:
    with pytest.raises(ValueError):
        engine.reset(1, dealers=[9] * B)
    deals = [_four_hands()] * B
    engine.reset(1, hands=deals, dealers=[3] * B)
    assert engine.state.hands[0].tolist() == [
        sum(1 << c for c in parse_cards(h)) for h in SUIT_PER_SEAT]



@pytest.mark.parametrize("games", [[], np.array([], np.int64)], ids=["list", "array"])
def test_a_reset_of_no_games_changes_nothing(engine: Engine, games) -> None:
    before = engine.state.copy()
    engine.reset(3, games=games)
    assert_same_state(before, engine.state)
    engine.step(lowest_legal(engine))

# ------------------------------------------------------------------ bad engines
@pytest.mark.parametrize("size", [0, -1, 2.0, "8", None], ids=["0", "-1", "float", "str", "None"])
def test_bad_batch_size(size) -> None:
    with pytest.raises((ValueError, TypeError), match="batch_size"):
        Engine(Rules(), size)


def test_rules_must_be_rules() -> None:
    with pytest.raises(TypeError, match="Rules"):
        Engine({"game": "hearts"}, 1)  # type: ignore[arg-type]


# ------------------------------------------------------------------ bounds
@pytest.mark.parametrize("seed", [-1, 2**64, -(2**63), 2**70], ids=repr)
def test_a_seed_out_of_range_is_an_error_not_an_alias(engine: Engine, seed) -> None:
    assert_rejected(engine, lambda: engine.reset(seed), ValueError, "seed", r"0\.\.2\*\*64 - 1")


def test_the_largest_seed_and_game_id_are_fine() -> None:
    a, b = Engine(Rules(), 1), Engine(Rules(), 1)
    a.reset(2**64 - 1, game_ids=[2**64 - 1])
    b.reset(2**64 - 1, game_ids=np.array([2**64 - 1], np.uint64))
    assert np.array_equal(a.state.dealt, b.state.dealt)
    b.reset(0, game_ids=[0])
    assert not np.array_equal(a.state.dealt, b.state.dealt)


@pytest.mark.parametrize("game_ids", [
    [-1] * B, [2**64] * B, [True] * B, np.array([-1] * B), np.ones(B, bool), [2**63, -1] * 4,
], ids=["-1", "2**64", "bool", "array--1", "bool-array", "mixed"])
def test_game_ids_out_of_range_or_bools(engine: Engine, game_ids) -> None:
    assert_rejected(engine, lambda: engine.reset(1, game_ids=game_ids), ValueError, "game_ids")


@pytest.mark.parametrize("totals", [
    [[TOTALS_BOUND + 1, 0, 0, 0]] * B, [[0, 0, 0, -(2**31)]] * B, [[2**40] * 4] * B,
    [[0.5] * 4] * B, [[True] * 4] * B,
], ids=["bound+1", "-2**31", "2**40", "float", "bool"])
def test_totals_out_of_range(engine: Engine, totals) -> None:
    assert_rejected(engine, lambda: engine.reset(1, totals=totals), ValueError, "totals")


def test_totals_at_the_bound_stay_exact_over_the_longest_match() -> None:
    """The bounds keep int32 totals exact: the start bound plus max_rounds rounds of the
    largest round score of the most extreme rules stays below 2**31."""
    low, high = OPTION_BOUNDS["max_rounds"]
    extreme = Rules(partners=True, bidding=True, cupids_arrow=True, max_rounds=high,
                    **{k: OPTION_BOUNDS[k][1] for k in ("ace_of_hearts_points", "bid_bonus",
                                                         "bid_penalty", "cursed_penalty")})
    assert extreme.round_points_bound == 60_024
    assert TOTALS_BOUND + high * extreme.round_points_bound < 2**31
    engine = Engine(extreme.replace(max_rounds=2), 2)
    engine.reset(0, totals=[[TOTALS_BOUND] * 4, [-TOTALS_BOUND] * 4], round_number=[2, 2])
    rng = np.random.default_rng(0)
    while not engine.state.match_over.all():
        engine.step(engine.sample_legal(rng))
    points = engine.state.round_points
    assert np.array_equal(engine.state.totals, [[TOTALS_BOUND] * 4, [-TOTALS_BOUND] * 4] + points)
    assert (np.abs(points) <= extreme.round_points_bound).all()


@pytest.mark.parametrize("size", [True, np.bool_(True), 2.5], ids=repr)
def test_a_bool_or_float_is_not_a_batch_size(size) -> None:
    with pytest.raises(TypeError, match="batch_size must be an int"):
        Engine(Rules(), size)


def test_a_refused_step_leaves_the_engine_version_unchanged():
    """Observers (the tracker) compare Engine.version to notice changes: a step that
    raises changed nothing, so the version stays too."""
    engine = Engine(Rules(target_score=None), 4)
    engine.reset(0)
    before = engine.version
    with pytest.raises(ValueError):
        engine.step(np.full(4, 69))  # no game may name a cursed suit now
    assert engine.version == before
    engine.step(engine.sample_legal(np.random.default_rng(0)))
    assert engine.version == before + 1
