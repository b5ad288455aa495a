"""Agents refuse what they were not built for: a search agent built with ``rules=`` for
one game refuses observations of another (it would search the wrong rules silently)."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make_agent
from smoor_env import Engine, Rules, preset
from smoor_env.observation import observe

SMALL = {"mc": {"worlds": 4}, "ismcts": {"iterations": 16, "walks": 4}}


def _play_phase_observations(rules: Rules) -> dict:
    engine = Engine(rules, 2)
    engine.reset(0)
    engine.step(engine.sample_legal(np.random.default_rng(0)))  # a lead: the others follow
    return {"observation": observe(engine, engine.state.current_player),
            "action_mask": engine.legal_mask}


@pytest.mark.parametrize("name", list(SMALL))
@pytest.mark.parametrize("built, given, named", [
    (Rules(), preset("hearts_no_passing", 4), "game='hearts'"),
    (Rules(num_players=4), Rules(num_players=3, target_score=None), "num_players=3"),
    (Rules(trump_hearts=True), Rules(target_score=None), "trump_hearts=False"),
])
def test_a_search_agent_built_for_one_game_refuses_another(name, built, given, named):
    agent = make_agent(name, rules=built, **SMALL[name])
    with pytest.raises(ValueError, match=f"built with rules= for another game.*{named}"):
        agent.act(_play_phase_observations(given), np.random.default_rng(0))
    same = make_agent(name, rules=given, **SMALL[name])
    observations = _play_phase_observations(given)
    actions = same.act(observations, np.random.default_rng(0))
    assert observations["action_mask"][np.arange(2), actions].all()


# ------------------------------------------------ what every agent checks in act
OBSERVERS = {"greedy": {}, "ppo": {}, **SMALL}


def _observations() -> dict:
    return _play_phase_observations(Rules())


@pytest.mark.parametrize("name", ["random", *OBSERVERS])
def test_observations_and_masks_of_different_batch_sizes_are_refused(name):
    agent = make_agent(name, **OBSERVERS.get(name, {}))
    observations = _observations()
    observations["action_mask"] = observations["action_mask"][:1]
    with pytest.raises(ValueError, match="observation holds 2 rows and action_mask 1"):
        agent.act(observations, np.random.default_rng(0))


@pytest.mark.parametrize("name", list(OBSERVERS))
@pytest.mark.parametrize("spoil, message", [
    (lambda obs: np.where(np.arange(obs.shape[1]) == 5, np.nan, obs),
     r"NaN or inf in rows \[0, 1\]"),
    (lambda obs: np.where(np.arange(obs.shape[1]) == 9, np.inf, obs), "NaN or inf"),
    (lambda obs: obs[:, :-1], r"shape \(B, 1128\)"),
    (lambda obs: obs.astype(np.int64), "float or int8"),
])
def test_an_observation_that_is_not_one_is_refused(name, spoil, message):
    agent = make_agent(name, **OBSERVERS[name])
    observations = _observations()
    observations["observation"] = spoil(observations["observation"])
    with pytest.raises((ValueError, TypeError), match=message):
        agent.act(observations, np.random.default_rng(0))


@pytest.mark.parametrize("name", ["greedy", "ppo"])
def test_a_compact_int8_observation_plays_as_its_float_one(name):
    from smoor_env.observation import COMPACT_UNITS, QUANTISED_BLOCKS, SLICES

    agent = make_agent(name)
    observations = _observations()
    floats = observations["observation"].astype(np.float32)
    compact = floats.copy()
    for block in QUANTISED_BLOCKS:
        compact[:, SLICES[block]] *= COMPACT_UNITS
    compact = np.round(compact).astype(np.int8)
    from_int8 = agent.act({**observations, "observation": compact}, np.random.default_rng(0))
    from_float = agent.act(observations, np.random.default_rng(0))
    assert np.array_equal(from_int8, from_float)
    if name == "ppo":  # the policy itself, within the rounding of the quantised blocks
        unscaled = agent.net.logits(compact.astype(np.float32), observations["action_mask"])
        scaled = agent.log_policy({**observations, "observation": compact})
        exact = agent.log_policy(observations)
        legal = observations["action_mask"].astype(bool)
        assert np.abs(scaled[legal] - exact[legal]).max() < 0.05
        assert not np.allclose(unscaled, agent.net.logits(floats, legal), atol=0.05)


# ------------------------------------------------------------- specs and options
@pytest.mark.parametrize("spec, message", [
    ("mc:worlds=4,worlds=8", "option worlds is given twice"),
    ("mc:greedy_margin=nan", "greedy_margin must be finite"),
    ("ismcts:noise=inf", "noise must be finite"),
    ("mc:worlds=10000000000000", r"worlds must be in 1..1000000"),
    ("ismcts:iterations=0", r"iterations must be in 1..1000000"),
    ("mc:time_budget=-1", "time_budget must be a finite number > 0"),
])
def test_bad_spec_values_are_refused_when_the_spec_is_built(spec, message):
    from agents import build_agent

    with pytest.raises(ValueError, match=message):
        build_agent(spec)


@pytest.mark.parametrize("options, message", [
    ({"worlds": 10**13}, r"worlds must be in 1..1000000"),
    ({"worlds": 2.5}, "worlds must be an int"),
    ({"greedy_margin": float("nan")}, "greedy_margin must be a finite number"),
    ({"prior_weight": float("inf")}, "prior_weight must be a finite number"),
    ({"reply_rollouts": -1}, r"reply_rollouts must be in 0..1000000"),
])
def test_bad_options_are_refused_by_make_agent(options, message):
    with pytest.raises(ValueError, match=message):
        make_agent("mc", **options)


def test_a_bare_value_sets_the_option_the_agent_names():
    """``greedy:0.2`` is ``greedy:eps=0.2``, as the rollout spec ``greedy:EPS`` writes it;
    in every form a spec is read (``parse_agent``, ``build_agent``, ``make_agent``)."""
    from agents import GreedyAgent, build_agent, parse_agent

    assert parse_agent("greedy:0.2") == parse_agent("greedy:eps=0.2") == ("greedy",
                                                                            {"eps": 0.2})
    for spec in ("greedy:0.2", "greedy:eps=0.2"):
        for made in (build_agent(spec), make_agent(spec)):
            assert isinstance(made, GreedyAgent) and made.eps == 0.2
    assert make_agent("greedy", eps=0.2).eps == 0.2 and make_agent("greedy").eps == 0.0
    assert build_agent("greedy:1").eps == 1.0  # an int reads as the float option


@pytest.mark.parametrize("spec, message", [
    ("greedy:0.2,eps=0.3", "option eps is given twice"),
    ("greedy:0.1,0.2", "option '0.2' in 'greedy:0.1,0.2' must be key=value"),  # first only
    ("greedy:depth=2,0.2", "option '0.2' .* must be key=value"),
    ("random:0.2", "option '0.2' in 'random:0.2' must be key=value"),  # random names none
    ("mc:16", "option '16' in 'mc:16' must be key=value"),
    ("greedy:0.2", "given options too"),  # make_agent: a spec, and keywords as well
])
def test_bare_values_are_refused_where_no_option_takes_them(spec, message):
    with pytest.raises(ValueError, match=message):
        if message == "given options too":
            make_agent(spec, eps=0.3)
        else:
            make_agent(spec)


@pytest.mark.parametrize("eps, message", [
    (1.5, r"eps must be a probability in \[0, 1\], got 1.5"),
    (-0.1, "eps must be a finite number >= 0, got -0.1"),
    (float("nan"), "eps must be a finite number"),
    (float("inf"), "eps must be a finite number"),
    (True, "eps must be a finite number >= 0, got True"),
    (None, "eps must be a finite number >= 0, got None"),
])
def test_bad_eps_values_are_refused(eps, message):
    with pytest.raises(ValueError, match=message):
        make_agent("greedy", eps=eps)


@pytest.mark.parametrize("spec, message", [
    ("greedy:2", r"eps must be a probability in \[0, 1\], got 2"),
    ("greedy:-1", "eps must be a finite number >= 0"),
    ("greedy:nan", "agent 'greedy': option eps must be finite, got 'nan'"),
    ("greedy:eps=often", "agent 'greedy': option eps must be a number, got 'often'"),
])
def test_bad_eps_values_are_refused_in_specs(spec, message):
    from agents import build_agent

    with pytest.raises(ValueError, match=message):
        build_agent(spec)


@pytest.mark.parametrize("thing", [None, 3, b"not an agent", object()])
def test_make_agent_takes_a_name_or_an_agent_and_nothing_else(thing):
    with pytest.raises(TypeError, match="make_agent takes an agent's name"):
        make_agent(thing)
    agent = make_agent("random")
    assert make_agent(agent) is agent
    with pytest.raises(TypeError, match="with options"):
        make_agent(agent, worlds=3)


# -------------------------------------------------------------------- checkpoints
def _spoiled_checkpoint(tmp_path, spoil) -> str:
    """A copy of the shipped Hearts checkpoint with ``spoil(name, bytes)`` applied to every
    member of its zip archive."""
    import zipfile

    from agents.ppo import resolve_checkpoint

    path = tmp_path / "spoiled.pt"
    with zipfile.ZipFile(resolve_checkpoint("ppo_hearts")) as source, \
            zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            target.writestr(info, spoil(info.filename, source.read(info)))
    return str(path)


def _nan_storage(name: str, data: bytes) -> bytes:
    if "/data/" in name and len(data) % 4 == 0:  # every float32 storage: NaN
        return np.full(len(data) // 4, np.nan, np.float32).tobytes()
    return data


def test_a_checkpoint_with_nan_weights_is_refused_naming_the_file(tmp_path):
    path = _spoiled_checkpoint(tmp_path, _nan_storage)
    with pytest.raises(ValueError, match=f"{path}: the weights of .* hold NaN or inf"):
        make_agent("ppo", checkpoint=path)


@pytest.mark.parametrize("cut", [0, 100, 5000])
def test_a_cut_or_random_checkpoint_is_refused_naming_the_file(tmp_path, cut):
    from agents.ppo import resolve_checkpoint

    whole = resolve_checkpoint("ppo_hearts").read_bytes()
    path = tmp_path / "cut.pt"
    path.write_bytes(whole[:cut] + whole[-cut:] if cut else np.random.default_rng(0).bytes(999))
    with pytest.raises(ValueError, match=f"{path}.* not a"):
        make_agent("ppo", checkpoint=str(path))


def test_a_checkpoint_missing_a_layer_is_refused_naming_the_file(tmp_path):
    path = _spoiled_checkpoint(tmp_path, lambda name, data: data.replace(b"policy.weight",
                                                                         b"policy.wrong!"))
    with pytest.raises(ValueError, match=f"{path} is not a policy checkpoint"):
        make_agent("ppo", checkpoint=path)


def test_the_torch_loader_refuses_the_same_files(tmp_path):
    pytest.importorskip("torch")
    from agents.policy_net import load_checkpoint

    with pytest.raises(ValueError, match="hold NaN or inf"):
        load_checkpoint(_spoiled_checkpoint(tmp_path, _nan_storage))
    random = tmp_path / "random.pt"
    random.write_bytes(np.random.default_rng(0).bytes(999))
    with pytest.raises(ValueError, match=f"{random} is not a policy checkpoint"):
        load_checkpoint(random)
