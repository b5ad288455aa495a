"""The named rule sets: one name per variant, the Rules field it sets."""

import dataclasses

import pytest

from smoor_env import PRESETS, Rules, preset


def test_every_variant_preset_is_named_after_the_rules_field_it_sets():
    fields = {f.name for f in dataclasses.fields(Rules)}
    for name, entry in PRESETS.items():
        assert entry.name == name
        if name not in ("smoorverliefd", "hearts", "hearts_no_passing"):
            assert name in fields and entry.options == {name: True}


def test_met_troef_is_hearts_as_trump_in_one_round_by_default():
    assert preset("trump_hearts", num_players=3) == Rules(num_players=3, trump_hearts=True,
                                                           target_score=None)


def test_a_match_plays_to_the_games_target_score():
    assert preset("hearts", 5, matches=True).target_score == 100
    assert preset("smoorverliefd", matches=True).target_score == 50
    assert preset("hearts_no_passing").passing is False


@pytest.mark.parametrize(("name", "players", "matches", "message"), [
    ("troef", 4, False, "unknown rule set 'troef'; known: smoorverliefd, trump_hearts"),
    ("partners", 3, False, "played by 4 players, got 3"),
    ("cupids_arrow", 4, False, "needs whole matches"),
    ("hearts", 6, False, "played by 3, 4 or 5 players, got 6"),
])
def test_an_impossible_preset_is_an_error_that_names_it(name, players, matches, message):
    with pytest.raises(ValueError, match=message):
        preset(name, players, matches)


def test_cupids_arrow_plays_as_a_match():
    assert preset("cupids_arrow", 4, matches=True).cupids_arrow


def test_preset_tables_are_every_rule_set_at_every_player_count_it_allows():
    from smoor_env import preset_tables

    names = ["smoorverliefd", "trump_hearts", "bidding", "partners", "pip_scoring", "hearts",
             "hearts_no_passing"]
    tables = preset_tables(names, [3, 4, 5])
    assert len(tables) == 19  # the ladder's rows: partners at 4 players only
    assert [r.num_players for r in tables[9:12]] == [4, 3, 4]  # partners, then pip scoring
    assert all(r.target_score is None for r in tables)
    with pytest.raises(ValueError, match="unknown rule set 'hartes'"):
        preset_tables(["hartes"], [4])
    matches = preset_tables(["cupids_arrow", "partners"], [3, 4], matches=True)
    assert [(r.num_players, r.cupids_arrow, r.target_score) for r in matches] == [
        (3, True, 50), (4, True, 50), (4, False, 50)]
    with pytest.raises(ValueError, match="needs whole matches"):
        preset_tables(["cupids_arrow"], [4])
