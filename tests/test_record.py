"""Game records: the specification's keys, JSON lines, replay, records of an earlier version."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_engine_rules import SUIT_PER_SEAT

from smoor_env import Engine, Rules, raw_env
from smoor_env.record import (
    RECORD_KEYS,
    RecordError,
    ReplayError,
    read_records,
    replay,
    replay_match,
    round_record,
    write_records,
)

SHIPPED = Path(__file__).parent / "data" / "records_v0.jsonl"


def _records(rules: Rules, seed: int) -> list[dict]:
    env = raw_env(rules=rules)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in env.agent_iter():
        obs, _, termination, truncation, _ = env.last()
        env.step(None if termination or truncation
                 else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return env.game_record()


def test_records_written_by_version_0_still_replay():
    records = list(read_records(SHIPPED))
    assert len(records) >= 10
    games = {(r["rules"]["game"], r["rules"]["num_players"]) for r in records}
    assert {("hearts", 3), ("hearts", 5), ("smoorverliefd", 4), ("smoorverliefd", 5)} <= games
    for record in records:
        replay(record)


@pytest.mark.parametrize("rules", [
    Rules(target_score=30, max_rounds=3),
    Rules(partners=True, bidding=True, cupids_arrow=True, target_score=40, max_rounds=3),
    Rules(game="hearts", target_score=50, max_rounds=5),
], ids=["smoor", "partners-bidding-cupid", "hearts"])
def test_every_round_of_a_match_replays(rules, tmp_path):
    records = _records(rules, seed=2)
    assert [r["round"] for r in records] == list(range(1, len(records) + 1))
    for record in records:
        assert tuple(record) == RECORD_KEYS
        json.dumps(record)  # plain JSON
        replay(record)
    path = tmp_path / "match.jsonl"
    write_records(path, records)
    assert list(read_records(path)) == records
    assert records[-1]["totals"] == np.sum([r["round_points"] for r in records], 0).tolist()


def test_record_fields_follow_the_rules_specification():
    env = raw_env(rules=Rules(game="hearts", target_score=None))
    env.reset(seed=0, options={"deal": SUIT_PER_SEAT, "dealer": 2})
    for _ in env.agent_iter():
        obs, _, termination, truncation, _ = env.last()
        env.step(None if termination or truncation else int(np.argmax(obs["action_mask"])))
    (record,) = env.game_record()
    assert record["seed"] == 0 and record["round"] == 1 and record["dealer"] == 2
    assert record["hands"][3][-1] == "AS" and record["dead"] == []
    assert record["passes"][3] == ["2S", "3S", "4S"] and record["bids"] is None
    assert record["cursed_suit"] is None
    assert record["actions"][:3] == [[3, 39], [3, 40], [3, 41]]  # seat 3 passes first
    assert len(record["actions"]) == 12 + 52 and len(record["trick_winners"]) == 13
    assert sum(record["round_points"]) in (26, 78)


def test_replay_raises_at_the_first_difference():
    record = next(read_records(SHIPPED))
    tampered = copy.deepcopy(record)
    tampered["round_points"][0] += 1
    with pytest.raises(ReplayError, match="round_points"):
        replay(tampered)
    swapped = copy.deepcopy(record)
    swapped["actions"][0], swapped["actions"][1] = swapped["actions"][1], swapped["actions"][0]
    with pytest.raises(ReplayError, match=r"actions\[[01]\]"):
        replay(swapped)
    short = copy.deepcopy(record)
    short["actions"] = short["actions"][:-1]
    with pytest.raises(ReplayError, match="end before the round"):
        replay(short)




# ------------------------------------------------------------ every field is verified
def _matches() -> list[list[dict]]:
    """Valid matches of every kind: the shipped ones, and matches with passes, bids,
    cursed suits, partners, trumps and pip scoring."""
    matches: list[list[dict]] = []
    for record in read_records(SHIPPED):
        if record["round"] == 1:
            matches.append([])
        matches[-1].append(record)
    for rules in (Rules(partners=True, bidding=True, cupids_arrow=True, target_score=40,
                        max_rounds=3),
                  Rules(num_players=3, trump_hearts=True, pip_scoring=True, target_score=200,
                        max_rounds=2),
                  Rules(game="hearts", num_players=4, target_score=60, max_rounds=4)):
        matches.append(_records(rules, seed=5))
    return matches


MATCHES = _matches()


def test_every_match_replays_as_a_match():
    assert any(len(match) > 1 for match in MATCHES)
    for match in MATCHES:
        replay_match(match)


def _paths(value, path=()):
    """Every place in a JSON value: (path, value) of each container and leaf."""
    yield path, value
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*path, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))


def _set(record: dict, path: tuple, value) -> dict:
    changed = copy.deepcopy(record)
    place = changed
    for step in path[:-1]:
        place = place[step]
    place[path[-1]] = value
    return changed


@st.composite
def single_field_changes(draw) -> tuple[list[dict], int, dict, str]:
    """(valid match, index of a record, that record with one value changed, description).

    ``rules`` and ``seed`` change only in matches of several rounds: a rule that plays no
    part in a round, or the seed of a first round whose deal was given, leave no trace
    in that round alone.
    """
    match = draw(st.sampled_from(MATCHES))
    index = draw(st.integers(0, len(match) - 1))
    record = match[index]
    keys = [k for k in RECORD_KEYS if len(match) > 1 or k not in ("rules", "seed")]
    key = draw(st.sampled_from([*keys, "<delete>", "<add>"]))
    if key == "<delete>":
        gone = draw(st.sampled_from(RECORD_KEYS))
        return match, index, {k: v for k, v in record.items() if k != gone}, f"delete {gone}"
    if key == "<add>":
        extra = draw(st.sampled_from(["note", "Seed", "winner"]))
        return match, index, {**record, extra: 1}, f"add {extra}"
    path, old = draw(st.sampled_from(list(_paths(record[key], (key,)))))
    json_values = st.one_of(st.none(), st.booleans(), st.integers(-70, 70), st.floats(-2, 2),
                            st.sampled_from(["AH", "2C", "QS", "H", "C", "hearts", "XX", ""]),
                            st.lists(st.integers(0, 51), max_size=3))
    if isinstance(old, bool):
        new = draw(st.one_of(st.just(not old), json_values))
    elif isinstance(old, int):
        new = draw(st.one_of(st.integers(-3, 3).map(lambda d: old + d), json_values))
    elif isinstance(old, list) and old:
        i, j = draw(st.integers(0, len(old) - 1)), draw(st.integers(0, len(old) - 1))
        swapped = old.copy()
        swapped[i], swapped[j] = old[j], old[i]
        new = draw(st.sampled_from([old[:i] + old[i + 1:], old + [old[i]], swapped,
                                    old[:i] + [old[i]] + old[i:]]))
    else:
        new = draw(json_values)
    return match, index, _set(record, path, new), f"{path}: {old!r} -> {new!r}"


@given(single_field_changes())
@settings(max_examples=300)
def test_any_single_field_change_is_rejected(change):
    match, index, changed, description = change
    assume(changed != match[index])
    with pytest.raises(ReplayError):
        replay_match([*match[:index], changed, *match[index + 1:]])
    if changed.get("round") == 1 and match[index]["round"] == 1 and not any(
            k in description for k in ("rules", "seed")):
        with pytest.raises(ReplayError):  # a first round alone is checked in full too
            replay(changed)


def _first(**where) -> dict:
    """A copy of the first pooled record whose rules have the given options."""
    return copy.deepcopy(next(r for m in MATCHES for r in m
                              if all(r["rules"][k] == v for k, v in where.items())
                              and (r["passes"] or not where.get("passing"))))


@pytest.mark.parametrize(("field", "change"), [
    ("totals", lambda r: r.update(totals=[t + 1000 for t in r["totals"]])),
    ("dead", lambda r: r.update(dead=[])),
    ("passes", lambda r: r["passes"][0].reverse()),
    ("cursed_suit", lambda r: r.update(cursed_suit="CDHS"["CDHS".index(r["cursed_suit"]) - 1])),
    ("bids", lambda r: r["bids"].__setitem__(0, (r["bids"][0] + 1) % 14)),
], ids=["totals+1000", "dead", "passes", "cursed_suit", "bids"])
def test_the_fields_a_replay_used_to_accept_are_checked(field, change):
    kinds = {"dead": {"num_players": 5, "game": "smoorverliefd"},
             "passes": {"game": "hearts", "passing": True}, "bids": {"bidding": True},
             "cursed_suit": {"cupids_arrow": True}}
    match = next(m for m in MATCHES if any(
        all(r["rules"][k] == v for k, v in kinds.get(field, {}).items())
        and r[field] not in (None, []) for r in m))
    index = next(i for i, r in enumerate(match) if r[field] not in (None, []))
    record = copy.deepcopy(match[index])
    change(record)
    with pytest.raises(ReplayError, match=rf"{field}|totals"):
        replay_match([*match[:index], record, *match[index + 1:]])


@pytest.mark.parametrize("key", RECORD_KEYS)
def test_a_missing_key_is_named(key):
    record = next(read_records(SHIPPED))
    del record[key]
    with pytest.raises(ReplayError, match=rf"missing key\(s\) \['{key}'\]"):
        replay(record)


@pytest.mark.parametrize(("key", "value"), [
    ("seed", "100"), ("seed", 1.0), ("round", True), ("dealer", None), ("hands", "AS KS"),
    ("dead", [49]), ("passes", [[1, 2, 3]]), ("bids", [0.5]), ("cursed_suit", 3),
    ("actions", [[0, 1, 2]]), ("trick_winners", None), ("round_points", [1.5]),
    ("totals", {"0": 1}), ("rules", []),
])
def test_a_mistyped_value_is_named(key, value):
    record = next(read_records(SHIPPED))
    record[key] = value
    with pytest.raises(ReplayError, match=rf"^{key}: must be"):
        replay(record)


def test_unknown_keys_and_rule_options_are_named():
    record = next(read_records(SHIPPED))
    with pytest.raises(ReplayError, match=r"unknown key\(s\) \['note'\]"):
        replay({**record, "note": "x"})
    with pytest.raises(ReplayError, match=r"rules: unknown option\(s\) \['jokers'\]"):
        replay({**record, "rules": {**record["rules"], "jokers": True}})
    with pytest.raises(ReplayError, match=r"rules: missing option\(s\) \['bidding'\]"):
        replay({**record, "rules": {k: v for k, v in record["rules"].items() if k != "bidding"}})
    with pytest.raises(ReplayError, match="rules: impossible rules: bid_bonus"):
        replay({**record, "rules": {**record["rules"], "bid_bonus": 2**31}})


def test_a_later_round_is_dealt_from_its_seed():
    match = next(m for m in MATCHES if len(m) > 1)
    record = copy.deepcopy(match[1])
    replay(record)
    record["seed"] += 1
    with pytest.raises(ReplayError, match=r"^hands\[0\]\[0\]: .*round 2 of seed"):
        replay(record)


def test_a_record_names_only_game_id_0_of_its_seed():
    engine = Engine(Rules(target_score=None), 2)
    engine.reset(4)
    while not engine.state.round_over.all():
        engine.step(engine.sample_legal(np.random.default_rng(0)))
    replay(round_record(engine, 0, 4))
    with pytest.raises(ValueError, match="game id 0 of seed 4"):
        round_record(engine, 1, 4)
    replay(round_record(engine, 1, None))


@pytest.mark.parametrize(("text", "problem"), [
    ('{"rules": {', r"bad\.jsonl:2: not JSON .*truncated line"),
    ("not json\n", r"bad\.jsonl:2: not JSON"),
    ("null\n", r"bad\.jsonl:2: a record must be a JSON object, got NoneType"),
    ("[1, 2]\n", r"bad\.jsonl:2: a record must be a JSON object, got list"),
    ('{"rules": {}}\n', r"bad\.jsonl:2: not a game record: missing key\(s\)"),
], ids=["truncated", "not-json", "null", "array", "missing-keys"])
def test_reading_a_bad_line_names_the_file_and_line(tmp_path, text, problem):
    path = tmp_path / "bad.jsonl"
    path.write_text(SHIPPED.read_text().splitlines(keepends=True)[0] + text)
    records = read_records(path)
    assert next(records)["round"] == 1  # the good first line
    with pytest.raises(RecordError, match=problem):
        next(records)
