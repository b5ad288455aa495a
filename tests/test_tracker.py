"""The incremental observations (``ObservationTracker``) equal ``observe`` after every step.

The environments read observations from the tracker, which writes only what each
step changed; ``observe`` builds them from the whole state. Random legal play over
random rule sets, with games acting or waiting at random and some restarted
midway, must keep the two equal, float for float.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import SEEDS, rule_sets

from smoor_env import Engine, Rules
from smoor_env.observation import ObservationTracker, observe


def _play_and_compare(rules: Rules, batch: int, seed: int, observers: str) -> None:
    engine = Engine(rules, batch)
    rng = np.random.default_rng(seed)
    p = rules.num_players
    if observers == "one per game":  # one observer seat per game, any seat
        seats, games = rng.integers(0, p, batch), np.arange(batch)
    elif observers == "one seat":  # a vector environment: the learner's seat in every game
        seats, games = np.full(batch, rng.integers(0, p)), np.arange(batch)
    else:  # the AEC environment: every seat of every game
        seats, games = np.tile(np.arange(p), batch), np.repeat(np.arange(batch), p)
    tracker = ObservationTracker(engine, seats, games)
    tracker.reset(seed)
    steps = 0
    while not engine.state.match_over.all():
        live = np.flatnonzero(~engine.state.match_over)
        active = rng.random(batch) < 0.7
        active[rng.choice(live)] = True  # at least one game acts
        tracker.step(engine.sample_legal(rng), active)
        steps += 1
        assert np.array_equal(tracker.out, observe(engine, seats, games)), steps
        if steps in (37, 74) and batch > 1:  # restart some games while the others play on
            restart = rng.choice(batch, batch // 2, replace=False)
            tracker.reset(seed, games=restart, game_ids=restart + 1000 * steps)
            assert np.array_equal(tracker.out, observe(engine, seats, games))


@settings(max_examples=40, deadline=None)
@given(rules=rule_sets(max_rounds=2), seed=SEEDS, batch=st.sampled_from([1, 6]),
       observers=st.sampled_from(["one per game", "one seat", "every seat"]))
def test_tracker_equals_observe_after_every_step(rules: Rules, batch: int, seed: int,
                                                  observers: str):
    """Batches of one game take the tracker's scalar path, larger ones the batched one."""
    _play_and_compare(rules, batch, seed, observers)


def test_tracker_of_one_game_and_every_seat_equals_observe():
    _play_and_compare(Rules(game="hearts", target_score=40), 1, seed=7, observers="every seat")


@pytest.mark.parametrize("rules", [Rules(target_score=None), Rules(game="hearts", max_rounds=2)],
                         ids=["smoorverliefd", "hearts"])
def test_tracker_equals_observe_on_the_engines_lockstep_path(rules: Rules):
    """70 games stepped together (no ``active``): the engine's fast path for large batches."""
    engine = Engine(rules, 70)
    seats = np.arange(70) % rules.num_players
    tracker = ObservationTracker(engine, seats)
    tracker.reset(3)
    rng = np.random.default_rng(3)
    while not engine.state.match_over.all():
        tracker.step(engine.sample_legal(rng))
        assert np.array_equal(tracker.out, observe(engine, seats))


def test_tracker_notices_changes_made_through_the_engine_by_others():
    engine = Engine(Rules(target_score=None), 8)
    seats = np.zeros(8, np.int64)
    tracker = ObservationTracker(engine, seats)
    tracker.reset(5)
    rng = np.random.default_rng(5)
    saved = engine.state.copy()
    for _ in range(6):
        tracker.step(engine.sample_legal(rng))
    engine.state = saved.copy()  # back to an earlier position (e.g. a search tree)
    tracker.step(engine.sample_legal(rng))
    assert np.array_equal(tracker.out, observe(engine, seats))
    engine.step(engine.sample_legal(rng))  # stepped directly, not through the tracker
    assert np.array_equal(tracker.out, observe(engine, seats))
    engine.reset(9, games=[2, 5], game_ids=[20, 50])
    tracker.step(engine.sample_legal(rng))
    assert np.array_equal(tracker.out, observe(engine, seats))

def test_tracker_leaves_rows_unchanged_when_a_step_is_refused():
    engine = Engine(Rules(), 4)
    tracker = ObservationTracker(engine, [0, 1, 2, 3])
    tracker.reset(1)
    before = tracker.out.copy()
    illegal = np.where(engine.legal_mask[:, :52], -1, np.arange(52))[:, :52].max(axis=1)
    with pytest.raises(ValueError, match="illegal action in game 0"):
        tracker.step(illegal)
    assert np.array_equal(tracker.out, before)


@pytest.mark.parametrize(("seats", "games", "message"), [
    ([0, 1], [0], "same length"),
    ([0, 4], [0, 1], r"seats must be in 0..3"),
    ([0, 1], [0, 9], r"games must be in 0..3"),
    ([0, 1], [-1, 0], r"games must be in 0..3"),
    (0, None, "seats must be a 1-D array of ints"),
    ([0.7, 1.0], [0, 1], "seats must be a 1-D array of ints"),
    ([0, 1], [True, False], "games must be a 1-D array of ints"),
])
def test_tracker_rejects_bad_rows(seats, games, message):
    with pytest.raises(ValueError, match=message):
        ObservationTracker(Engine(Rules(), 4), seats, games)


@pytest.mark.parametrize(("seats", "games", "message"), [
    (0, np.array([True, False, True, False]), "games must be a 1-D array of ints"),
    (0, [9], r"games must be in 0..3"),
    ([0, 1, 2], [0, 1], "seats must be one seat or one per observed game"),
    (5, None, r"seats must be in 0..3"),
])
def test_observe_rejects_bad_games_and_seats(seats, games, message):
    engine = Engine(Rules(), 4)
    engine.reset(0)
    with pytest.raises(ValueError, match=message):
        observe(engine, seats, games)


@pytest.mark.parametrize(("rules", "steps"), [(Rules(), 9), (Rules(game="hearts"), 7),
                                              (Rules(game="hearts"), 21)],
                         ids=["smoorverliefd", "hearts-passing", "hearts-playing"])
def test_observe_of_a_few_games_mid_round_among_new_ones_equals_each_game_alone(rules, steps):
    """observe writes the card blocks only in the rows holding cards when those are few
    (most games just started a round): each row still equals that game observed alone."""
    engine = Engine(rules, 12)
    engine.reset(1)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        engine.step(engine.sample_legal(rng))
    engine.reset(2, games=np.arange(3, 12), game_ids=np.arange(3, 12) + 100)  # 3 go on
    seats = rng.integers(0, rules.num_players, 12)
    alone = [observe(engine, seats[g:g + 1], np.array([g])) for g in range(12)]
    assert np.array_equal(observe(engine, seats), np.concatenate(alone))
    assert np.array_equal(observe(engine, seats[:5], np.arange(5)), np.concatenate(alone[:5]))
