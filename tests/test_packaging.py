"""The shipped policies are package data (``agents/checkpoints/``), and an install without
them fails loudly: ``ppo`` by name, and ``prior="auto"`` in every rule set (each has a
policy: a specialist or the one network), name the file and the folder looked in;
``prior="specialists"`` plays on without one where no specialist was trained.

(tests/test_wheel.py plays them from a built wheel, outside the checkout.)
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

import agents.ppo as ppo
from agents import make_agent
from agents.mc import table_prior
from smoor_env import Engine, Rules
from smoor_env.core.presets import PRESETS
from smoor_env.observation import observe

ROOT = Path(__file__).resolve().parents[1]


def test_the_shipped_checkpoints_are_package_data_of_agents() -> None:
    assert ppo.CHECKPOINT_DIR == ROOT / "agents" / "checkpoints"
    # a new shipped checkpoint goes into SHIPPED_POLICIES (or SHIPPED_NETWORKS), so that
    # its absence is an error
    assert set(ppo.shipped_checkpoints()) == {*ppo.SHIPPED_POLICIES, *ppo.SHIPPED_NETWORKS}
    for name in ppo.shipped_checkpoints():
        assert (ppo.CHECKPOINT_DIR / f"{name}.json").is_file(), name
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert {"checkpoints/*.pt", "checkpoints/*.json"} <= set(data["package-data"]["agents"])
    # the training curves are measurements, kept in the repository, not installed
    for name in ppo.SHIPPED_POLICIES:
        assert (ROOT / "docs" / "results" / "rl" / f"{name}_curve.csv").is_file(), name


@pytest.mark.parametrize("name", sorted(ppo.SHIPPED_POLICIES))
def test_the_listed_training_rules_are_the_checkpoints(name: str) -> None:
    """SHIPPED_POLICIES (what the mapping uses when a file is missing) says what the
    checkpoint's own arguments say."""
    args = ppo.read_checkpoint(ppo.CHECKPOINT_DIR / f"{name}.pt")["args"]
    listed = ppo.SHIPPED_POLICIES[name]
    assert {key: args[key] for key in listed} == listed


@pytest.mark.parametrize("name", ppo.SHIPPED_NETWORKS)
def test_the_networks_were_trained_on_every_rule_set_and_are_no_specialists(name) -> None:
    """``one_network`` and the three before it are the files their records name (sha256), trained
    on all 7 single-round rule sets at 3, 4 and 5 players; ``shipped_policy_for`` never
    maps a rule set to them."""
    import hashlib
    import json

    path = ppo.CHECKPOINT_DIR / f"{name}.pt"
    record = json.loads(path.with_suffix(".json").read_text())
    assert record["network"] == name
    assert record["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    args = ppo.read_checkpoint(path)["args"]
    assert args["game"] == "all" and args["players"] == [3, 4, 5]
    assert set(args["rule_sets"]) == {name for name, preset in PRESETS.items()
                                      if not preset.matches_only}
    assert name not in {ppo.shipped_policy_for(rules) for rules in rule_sets()}


def rule_sets() -> list[Rules]:
    """Every preset at every player count it allows, as single rounds and as matches."""
    found = []
    for preset in PRESETS.values():
        for players in preset.players:
            for matches in (False, True):
                if matches or not preset.matches_only:
                    found.append(preset.rules(players, matches))
    return found


def observations(rules: Rules, seed: int = 3) -> dict[str, np.ndarray]:
    """The first decision of two games of ``rules`` (Hearts' passing: a pass)."""
    engine = Engine(rules, 2)
    engine.reset(seed)
    return {"observation": observe(engine, engine.state.current_player),
            "action_mask": engine.legal_mask}


@pytest.fixture
def no_checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The checkpoint folder of an install without the package data."""
    empty = tmp_path / "checkpoints"
    empty.mkdir()
    monkeypatch.setattr(ppo, "CHECKPOINT_DIR", empty)
    monkeypatch.setattr(ppo, "_CACHE", {})
    return empty


def test_ppo_by_name_without_its_file_says_which_and_where(no_checkpoints: Path) -> None:
    for options, name in (({}, ppo.DEFAULT_CHECKPOINT), ({"checkpoint": "ppo_hearts"},
                                                         "ppo_hearts")):
        with pytest.raises(FileNotFoundError) as error:
            make_agent("ppo", **options)
        assert f"{name}.pt" in str(error.value) and str(no_checkpoints) in str(error.value)


def test_prior_auto_without_the_files_is_an_error_in_every_rule_set(
        no_checkpoints: Path) -> None:
    """With the folder empty, every rule set is a FileNotFoundError naming the file of
    its policy (by the table with the files present, ``table_prior``: the plain network,
    a specialist or the one network) and the folder, for ``ismcts`` (prior="auto" by
    default) and ``mc``; with ``prior="specialists"``, the rule sets without a specialist
    have no prior, as with the files."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ppo, "CHECKPOINT_DIR", ROOT / "agents" / "checkpoints")
        with_files = {rules: ppo.shipped_policy_for(rules) for rules in rule_sets()}
        auto = {rules: table_prior(rules)[0] for rules in rule_sets()}
    assert no_checkpoints == ppo.CHECKPOINT_DIR
    assert set(with_files.values()) == {None, *ppo.SHIPPED_POLICIES}
    for agent in (make_agent("ismcts"), make_agent("mc", prior="auto"),
                  make_agent("mc", prior="specialists")):
        for rules, name in with_files.items():
            if name is None and agent.prior == "specialists":
                assert agent.prior_for(rules) is None, rules
                continue
            with pytest.raises(FileNotFoundError) as error:
                agent.prior_for(rules)
            message = str(error.value)
            name = name if agent.prior == "specialists" else auto[rules]
            assert f"no {name}.pt in {no_checkpoints}" in message, message
            assert f"prior={agent.prior!r}" in message


def test_an_ismcts_decision_without_its_policy_fails_and_without_one_plays(
        no_checkpoints: Path) -> None:
    small = {"iterations": 8, "walks": 4, "seed_worlds": 2, "bid_worlds": 4}
    plain = Rules(num_players=4, target_score=None)  # a free lead: searched
    with pytest.raises(FileNotFoundError, match=f"{ppo.SHIPPED_NETWORK}.pt"):
        make_agent("ismcts", **small).act(observations(plain), np.random.default_rng(0))
    with pytest.raises(FileNotFoundError, match="ppo_smoorverliefd.pt"):
        make_agent("ismcts", prior="specialists", **small).act(observations(plain),
                                                                np.random.default_rng(0))
    # met Troef's prior is the one network; without the specialists only, it plays as
    # with the files
    trumps = Rules(num_players=4, trump_hearts=True, target_score=None)
    obs = observations(trumps)
    with pytest.raises(FileNotFoundError, match=f"{ppo.SHIPPED_NETWORK}.pt"):
        make_agent("ismcts", **small).act(obs, np.random.default_rng(0))
    actions = make_agent("ismcts", prior="specialists", **small).act(
        obs, np.random.default_rng(0))
    assert obs["action_mask"][np.arange(len(actions)), actions].all()
