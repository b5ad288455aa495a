"""Property tests (Hypothesis): invariants of random legal play over random rule sets.

Rule sets are drawn valid by construction (game, player count, every variant flag and
option that applies); matches are kept short (target scores and ``max_rounds`` small)
so that each example runs in milliseconds. Checked for every game and step:

- every card of the deck is dealt exactly once per round (hands + dead pile = deck);
- every played card was legal and in the hand, followed suit when possible, leaves the
  hand and appears exactly once in the trick history;
- the round points add up (17 / 34, the in-play total or its double, 26 / moon);
- a game played alone (``game_ids=[i]``) is the same, array for array and step for step,
  as game ``i`` of a batch of 64, also when only some games of the batch act each step;
- the same seed gives the same deals, different game ids and seeds different ones.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smoor_env import Engine, Phase, Rules
from smoor_env.core.cards import cards_of, mask_of
from smoor_env.core.deal import DEAL_AHEAD_GAMES

QS, AH = 49, 38
HEARTS = list(range(26, 39))
SEEDS = st.integers(min_value=0, max_value=2**63 - 1)


# ------------------------------------------------------------------ rule sets
@st.composite
def rule_sets(draw: st.DrawFn, max_rounds: int = 3) -> Rules:
    """A valid ``Rules`` with every applicable option drawn; matches of at most max_rounds."""
    game = draw(st.sampled_from(["smoorverliefd", "hearts"]))
    n = draw(st.sampled_from([3, 4, 5]))
    rounds = draw(st.integers(1, max_rounds))
    if game == "hearts":
        target = draw(st.sampled_from([None, 20, 40, 100]))
        return Rules(game=game, num_players=n, target_score=target, max_rounds=rounds,
                     passing=draw(st.booleans()),
                     queen_never_first_trick=draw(st.booleans()),
                     queen_breaks_hearts=draw(st.booleans()))
    target = draw(st.sampled_from([None, 10, 25, 50]))
    multi = target is not None and rounds > 1
    return Rules(
        game=game, num_players=n, target_score=target, max_rounds=rounds,
        ace_of_hearts_points=draw(st.sampled_from([5, 5, 1, 3, 0])),
        sweep_needs_all_thirteen=draw(st.booleans()),
        trump_hearts=draw(st.booleans()),
        bidding=draw(st.booleans()),
        partners=n == 4 and draw(st.booleans()),
        pip_scoring=draw(st.booleans()),
        cupids_arrow=multi and draw(st.booleans()),
        cursed_suit_may_be_hearts=draw(st.booleans()),
    )


def _random_actions(engine: Engine, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per game (0 once its match is over)."""
    mask = engine.legal_mask
    return np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)


def _state_arrays(state) -> dict[str, np.ndarray]:
    """Every array of a State by name, ``finished`` ones as ``finished.<name>``."""
    arrays = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)
              if f.name != "finished"}
    arrays.update({f"finished.{k}": v for k, v in state.finished.items()})
    return arrays


# ------------------------------------------------------------------ checks
def _check_deal(rules: Rules, state, g: int, where: str) -> None:
    """Round start: hands + dead pile = deck, each card once; Hearts removes 2D (2C)."""
    dealt = [int(m) for m in state.dealt[g]]
    dead = int(state.dead[g])
    deck = (1 << 52) - 1
    if rules.is_hearts:
        removed = {3: [13], 4: [], 5: [0, 13]}[rules.num_players]
        deck &= ~mask_of(removed)
        assert dead == 0, f"{where}: Hearts has no dead pile"
        assert all(mask_of(removed) & m == 0 for m in dealt), f"{where}: removed card dealt"
    assert sorted(c for m in dealt + [dead] for c in cards_of(m)) == cards_of(deck), (
        f"{where}: hands + dead pile are not the deck, each card once")
    assert all(len(cards_of(m)) == rules.hand_size for m in dealt), f"{where}: hand sizes"
    assert len(cards_of(dead)) == rules.dead_count, f"{where}: dead pile size"
    assert rules.hand_size == {3: 17, 4: 13, 5: 10}[rules.num_players]
    assert state.hands[g].tolist() == dealt, f"{where}: hands differ from the deal"
    assert state.won[g].tolist() == [0] * rules.num_players, f"{where}: won cards not cleared"
    assert int(state.trick_index[g]) == 0 and (state.trick_winner[g] == -1).all(), where


def _won_cards(rules: Rules, fin: dict[str, np.ndarray], g: int) -> list[list[int]]:
    """Cards won by each seat in the finished round, from the trick history."""
    won: list[list[int]] = [[] for _ in range(rules.num_players)]
    for cards, winner in zip(fin["trick_cards"][g].tolist(), fin["trick_winner"][g].tolist(),
                             strict=True):
        won[winner].extend(cards)
    return won


def _check_round_points(rules: Rules, state, g: int, before: list[int], where: str) -> None:
    """The finished round's points add up, and the totals moved by exactly those points."""
    fin = state.finished
    points = state.round_points[g].tolist()
    n = rules.num_players
    assert state.totals[g].tolist() == [t + p for t, p in zip(before, points, strict=True)], (
        f"{where}: totals did not move by the round points")
    won = _won_cards(rules, fin, g)
    trick_cards = fin["trick_cards"][g]
    dead = cards_of(fin["dead"][g])
    in_play = [c for c in cards_of(rules.deck_mask) if c not in dead]
    assert sorted(trick_cards.ravel().tolist()) == in_play, (
        f"{where}: the tricks do not hold every card in play exactly once")
    if rules.is_hearts:
        moon = [s for s in range(n) if sorted(c for c in won[s] if c in HEARTS + [QS])
                == HEARTS + [QS]]
        if moon:
            assert points == [0 if s == moon[0] else 26 for s in range(n)], (
                f"{where}: shooting the moon: {points}")
            assert sum(points) == 26 * (n - 1)
        else:
            assert sum(points) == 26, f"{where}: Hearts points {points} do not add up to 26"
        return
    hearts_in_play = [c for c in HEARTS if c not in dead]
    teams = [[0, 2], [1, 3]] if rules.partners else [[s] for s in range(n)]

    def value(c: int) -> int:
        if rules.pip_scoring:
            return c - 26 + 2
        return rules.ace_of_hearts_points if c == AH else 1

    heart_count = [sum(1 for c in won[s] if c in HEARTS) for s in range(n)]
    swept = any(sum(heart_count[s] for s in team) == len(hearts_in_play) for team in teams)
    if rules.sweep_needs_all_thirteen and len(hearts_in_play) < 13:
        swept = False
    expected = sum(value(c) for c in hearts_in_play) * (2 if swept else 1)
    if rules.bidding:
        bids = fin["bids"][g].tolist()
        assert all(0 <= b <= 13 for b in bids), f"{where}: bids {bids}"
        expected += sum(rules.bid_bonus if heart_count[s] == bids[s] else -rules.bid_penalty
                        for s in range(n))
    cursed = int(fin["cursed_suit"][g])
    if cursed >= 0:
        counts = [sum(1 for c in won[s] if c // 13 == cursed) for s in range(n)]
        expected -= rules.cursed_penalty * counts.count(max(counts))
    # Partners: both seats of a team show the team's points; count each team once.
    shown = [points[team[0]] for team in teams]
    if rules.partners:
        assert points[0] == points[2] and points[1] == points[3], f"{where}: team points"
    assert sum(shown) == expected, (
        f"{where}: round points {points} do not add up to {expected} (sweep={swept})")
    base = not (rules.bidding or rules.partners or rules.pip_scoring or cursed >= 0)
    if base and n == 4 and rules.ace_of_hearts_points == 5:
        assert sum(points) == (34 if swept else 17), f"{where}: 4 players: 17 or 34"


# ------------------------------------------------------------------ properties
@settings(max_examples=50, deadline=None)
@given(rules=rule_sets(), seed=SEEDS, batch=st.integers(1, 8), sampler=st.booleans())
def test_random_play_invariants(rules: Rules, seed: int, batch: int, sampler: bool) -> None:
    engine = Engine(rules, batch)
    state = engine.reset(seed)
    rng = np.random.default_rng(seed % 2**32)
    for g in range(batch):
        _check_deal(rules, state, g, f"reset, game {g}")
    n = rules.num_players
    rounds = state.round_number.tolist()
    steps = 0
    while not state.match_over.all():
        mask = engine.legal_mask
        live = ~state.match_over
        assert (mask.sum(axis=1)[live] >= 1).all(), "a live game has no legal action"
        assert not mask[~live].any(), "a finished match has legal actions"
        # Half the examples draw with the engine's own sampler (it must pick legal actions).
        actions = engine.sample_legal(rng) if sampler else _random_actions(engine, rng)
        before = engine.state.copy()
        totals_before = before.totals.tolist()
        engine.step(actions)
        steps += 1
        assert steps < 1000 * rules.max_rounds, "the match never ends"
        for g in np.flatnonzero(live).tolist():
            where = f"game {g}, step {steps}, rules={rules!r}, seed={seed}, batch={batch}"
            action, seat = int(actions[g]), int(before.current_player[g])
            assert mask[g, action], f"{where}: the action {action} was not legal"
            phase = Phase(int(before.phase[g]))
            hand = int(before.hands[g, seat])
            if phase in (Phase.PLAY, Phase.PASS):
                legal_cards = mask_of(np.flatnonzero(mask[g, :52]).tolist())
                assert legal_cards & ~hand == 0, f"{where}: a legal card is not in the hand"
            if phase != Phase.PLAY:
                continue
            led = int(before.led_suit[g])
            if int(before.trick_size[g]) > 0 and any(c // 13 == led for c in cards_of(hand)):
                assert action // 13 == led, f"{where}: did not follow suit"
            round_ended = bool(state.round_over[g])
            if not round_ended:
                assert not state.hands[g, seat] >> np.uint64(action) & np.uint64(1), (
                    f"{where}: the played card is still in the hand")
                history = state.trick_cards[g].ravel().tolist() + state.current_trick[g].tolist()
            else:
                history = state.finished["trick_cards"][g].ravel().tolist()
            assert history.count(action) == 1, f"{where}: the card is not once in the history"
            if round_ended:
                _check_round_points(rules, state, g, totals_before[g], where)
                assert len(state.finished["trick_winner"][g]) == rules.num_tricks
                if not state.match_over[g]:
                    assert state.round_number[g] == rounds[g] + 1
                    _check_deal(rules, state, g, f"{where}, new round")
        rounds = state.round_number.tolist()
    for g in range(batch):
        assert state.winners[g].any(), f"game {g}: a finished match has no winner"
        assert len(state.winners[g]) == n


@settings(max_examples=30, deadline=None)
@given(rules=rule_sets(max_rounds=2), seed=SEEDS, game=st.integers(0, 63))
def test_batch_of_one_equals_the_same_game_in_a_batch(rules: Rules, seed: int,
                                                     game: int) -> None:
    big, one = Engine(rules, 64), Engine(rules, 1)
    big.reset(seed)
    one.reset(seed, game_ids=[game])
    rng = np.random.default_rng(seed % 2**32)
    step = 0
    while True:
        alone = _state_arrays(one.state)
        for name, array in _state_arrays(big.state).items():
            assert array.dtype == alone[name].dtype, name
            assert np.array_equal(array[game], alone[name][0]), (
                f"{name} of game {game} differs alone and in a batch of 64 after step {step}"
                f" (rules={rules!r}, seed={seed})")
        assert np.array_equal(big.legal_mask[game], one.legal_mask[0])
        if one.state.match_over[0]:
            break
        actions = _random_actions(big, rng)
        big.step(actions)
        one.step(actions[game: game + 1])
        step += 1


@settings(max_examples=30, deadline=None)
@given(rules=rule_sets(max_rounds=2), seed=SEEDS, game=st.integers(0, 63))
def test_a_game_is_the_same_alone_and_in_a_batch_where_others_wait(rules: Rules, seed: int,
                                                                  game: int) -> None:
    """``step(actions, active)``: the games that act move exactly as they would alone.

    Each step a random share of the 64 games acts (a few: the engine gathers them; many:
    it works on whole-batch arrays, masked), as in a vector environment whose games
    wait for different seats.
    """
    big, one = Engine(rules, 64), Engine(rules, 1)
    big.reset(seed)
    one.reset(seed, game_ids=[game])
    rng = np.random.default_rng(seed % 2**32)
    for step in range(10_000):
        if one.state.match_over[0]:
            break
        share = rng.choice([0.05, 0.5, 1.0])  # of the games that act this step
        active = (rng.random(64) < share) & ~big.state.match_over
        active[game] = rng.random() < 0.7
        if not active.any():
            continue
        # Legal actions where the game acts, junk (out of range too) where it waits.
        actions = np.where(active, _random_actions(big, rng), rng.integers(-5, 80, 64))
        big.step(actions, active)
        if active[game]:
            one.step(actions[game: game + 1])
        alone = _state_arrays(one.state)
        for name, array in _state_arrays(big.state).items():
            if name == "round_over" and not active[game]:  # set by the last step it acted in
                continue
            assert np.array_equal(array[game], alone[name][0]), (
                f"{name} of game {game} differs alone and in a batch after step {step}"
                f" (rules={rules!r}, seed={seed})")
        assert np.array_equal(big.legal_mask[game], one.legal_mask[0])


@settings(max_examples=30, deadline=None)
@given(rules=rule_sets(max_rounds=1), seed=SEEDS)
def test_same_seed_same_deals(rules: Rules, seed: int) -> None:
    a, b, c = Engine(rules, 6), Engine(rules, 6), Engine(rules, 3)
    a.reset(seed)
    b.reset(seed)
    c.reset(seed)
    for name, array in _state_arrays(a.state).items():
        assert np.array_equal(array, _state_arrays(b.state)[name]), name
        assert np.array_equal(array[:3], _state_arrays(c.state)[name]), name
    # The next round's deal too: play one identical round in both.
    if rules.target_score is not None:
        a, b = Engine(rules.replace(max_rounds=2), 4), Engine(rules.replace(max_rounds=2), 4)
        a.reset(seed)
        b.reset(seed)
        rng = np.random.default_rng(0)
        while (a.state.round_number == 1).any() and not a.state.match_over.all():
            actions = _random_actions(a, rng)
            a.step(actions)
            b.step(actions)
        assert np.array_equal(a.state.dealt, b.state.dealt)
        assert np.array_equal(a.state.dealer, b.state.dealer)


@settings(max_examples=10, deadline=None)
@given(rules=rule_sets(max_rounds=1), seed=SEEDS, first=st.integers(0, 2**40))
def test_a_deal_is_the_same_in_small_and_large_batches(rules: Rules, seed: int,
                                                      first: int) -> None:
    """Small batches draw every card's slot up front, large ones card by card: same deals."""
    large = DEAL_AHEAD_GAMES + 1
    ids = first + np.arange(large)
    big, small = Engine(rules, large), Engine(rules, 5)
    big.reset(seed, game_ids=ids)
    small.reset(seed, game_ids=ids[-5:])
    assert np.array_equal(big.state.dealt[-5:], small.state.dealt)
    assert np.array_equal(big.state.dead[-5:], small.state.dead)


@settings(max_examples=30, deadline=None)
@given(rules=rule_sets(max_rounds=1), seed=SEEDS,
       ids=st.lists(st.integers(0, 2**40), min_size=2, max_size=12, unique=True))
def test_different_game_ids_and_seeds_deal_differently(rules: Rules, seed: int,
                                                       ids: list[int]) -> None:
    engine = Engine(rules, len(ids))
    state = engine.reset(seed, game_ids=ids)
    deals = [tuple(row) for row in state.dealt.tolist()]
    assert len(set(deals)) == len(deals), f"two game ids got the same deal: {ids}"
    keys = state.game_key.tolist()
    assert len(set(keys)) == len(keys)
    first = deals[0]
    other = Engine(rules, 1).reset(seed + 1, game_ids=ids[:1])
    assert tuple(other.dealt[0].tolist()) != first, "seeds s and s + 1 dealt the same"


# ------------------------------------------------------------------ distributions
# Fixed seeds, so these are deterministic; the bounds are 6 standard deviations wide.
def _assert_uniform(counts: np.ndarray, p: float, what: str) -> None:
    """Every entry of counts (n draws each, success probability p) is near n * p."""
    n = counts.sum() / (p * counts.size)  # draws per entry
    sd = np.sqrt(n * p * (1 - p))
    worst = np.abs(counts - n * p).max()
    assert worst < 6 * sd, f"{what}: off by {worst:.0f} (sd {sd:.1f}): {counts}"


def test_deal_and_first_dealer_are_uniform() -> None:
    for rules in (Rules(), Rules(num_players=3), Rules(game="hearts", num_players=5)):
        engine = Engine(rules, 8192)
        state = engine.reset(12345)
        p = rules.num_players
        deck = cards_of(rules.deck_mask)
        seat_of = np.full((8192, 52), p)  # p = dead pile
        for s in range(p):
            seat_of[((state.dealt[:, s, None] >> np.arange(52, dtype=np.uint64)) & 1) == 1] = s
        share = rules.hand_size / len(deck)
        for s in range(p):
            _assert_uniform((seat_of[:, deck] == s).sum(axis=0), share, f"{rules}: seat {s}")
        if rules.dead_count:
            _assert_uniform((seat_of[:, deck] == p).sum(axis=0), rules.dead_count / len(deck),
                            f"{rules}: dead pile")
        _assert_uniform(np.bincount(state.dealer, minlength=p), 1 / p, "first dealer")


def test_sample_legal_is_uniform_over_the_legal_actions() -> None:
    rng = np.random.default_rng(7)
    for rules in (Rules(bidding=True, cupids_arrow=True), Rules(game="hearts")):
        engine = Engine(rules, 4096)
        engine.reset(3)
        for _ in range(60):
            mask = engine.legal_mask
            actions = engine.sample_legal(rng)
            live = ~engine.state.match_over
            assert mask[np.arange(4096), actions][live].all(), "sample_legal chose illegal"
            # Position of the chosen action among the legal ones, for games with 13 legal.
            rows = np.flatnonzero(live & (mask.sum(axis=1) == 13))
            if len(rows) > 1000:
                rank = (np.cumsum(mask[rows], axis=1)[np.arange(len(rows)), actions[rows]] - 1)
                _assert_uniform(np.bincount(rank, minlength=13), 1 / 13, f"{rules}: ranks")
            engine.step(actions)


@pytest.mark.parametrize("batch", [1, 7, 64])
def test_sample_legal_of_some_rows_is_those_rows_of_the_whole_batch(batch) -> None:
    """``sample_legal(rng, rows)`` gives the actions ``sample_legal(rng)`` gives those
    games, and leaves the generator where the whole batch's draw leaves it (a rollout
    samples only its exploring games without changing any other game's moves)."""
    for rules in (Rules(bidding=True), Rules(game="hearts", num_players=5)):
        engine = Engine(rules, batch)
        engine.reset(11)
        pick = np.random.default_rng(batch)
        for _ in range(30):
            rows = np.flatnonzero(pick.random(batch) < 0.3)
            whole, part = np.random.default_rng(5), np.random.default_rng(5)
            expected = engine.sample_legal(whole)
            np.testing.assert_array_equal(engine.sample_legal(part, rows), expected[rows])
            assert whole.random() == part.random(), "the generators drifted apart"
            engine.step(expected)


@settings(max_examples=25, deadline=None)
@given(players=st.sampled_from([3, 4, 5]), seed=st.integers(0, 2**31 - 1),
       chooser=st.integers(0, 2**31 - 1))
def test_passed_cards_never_leak_before_the_exchange(players, seed, chooser):
    """During the Hearts pass, a seat's observation does not change when another seat
    chooses a card; after the exchange each seat sees exactly what it received."""
    from smoor_env.observation import observe, split_observation

    engine = Engine(Rules(game="hearts", num_players=players, target_score=None), 1)
    engine.reset(seed)
    state = engine.state
    rng = np.random.default_rng(chooser)
    assert state.phase[0] == Phase.PASS
    while state.phase[0] == Phase.PASS:
        chooser_seat = int(state.current_player[0])
        before = {s: observe(engine, s)[0] for s in range(players)}
        engine.step(np.array([rng.choice(np.flatnonzero(engine.legal_mask[0]))]))
        if state.phase[0] != Phase.PASS:
            break  # the last choice: the exchange happened
        for s in range(players):
            if s != chooser_seat:
                assert np.array_equal(observe(engine, s)[0], before[s]), (s, chooser_seat)
    passes = [set(int(c) for c in state.passes[0, s]) for s in range(players)]
    for s in range(players):
        blocks = split_observation(observe(engine, s)[0])
        received = set(np.flatnonzero(blocks["received"]).tolist())
        assert received == passes[(s - 1) % players]  # round 1 passes to the left
        assert set(np.flatnonzero(blocks["passed"]).tolist()) == passes[s]
