"""Game records: the specification's keys, JSON lines, replay, records of an earlier version."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from test_engine_rules import SUIT_PER_SEAT

from smoor_env import Rules, raw_env
from smoor_env.record import RECORD_KEYS, ReplayError, read_records, replay, write_records

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
    with pytest.raises(ReplayError, match="step [01]"):
        replay(swapped)
    short = copy.deepcopy(record)
    short["actions"] = short["actions"][:-1]
    with pytest.raises(ReplayError, match="end before the round"):
        replay(short)


def test_reading_something_that_is_not_a_record(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"rules": {}}\n')
    with pytest.raises(ValueError, match="not a game record"):
        list(read_records(path))
