"""Gymnasium environments: the checker, masks, rewards, illegal actions, the vector autoreset."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import smoor_env  # noqa: F401 - registers the ids
from agents import RandomAgent, make_agent
from agents.base import pack_mask
from agents.env_factories import make_env, make_vector_env
from smoor_env import PRESETS, Engine, Phase, Rules, preset
from smoor_env.core.state import PHASE_ACTION_OFFSET
from smoor_env.envs.agent_loop import offers_packed
from smoor_env.envs.gym_env import RESTART_ACTION, SmoorEnv, SmoorVectorEnv
from smoor_env.observation import OBSERVATION_SIZE, observe, split_observation

IDS = ["smoor_env/Smoorverliefd-v1", "smoor_env/Hearts-v1"]


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("options", [{}, {"num_players": 3}, {"num_players": 5}])
def test_gymnasium_check_env(env_id, options):
    env = gym.make(env_id, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checker finds an unbounded Box "probably" odd
        check_env(env.unwrapped, skip_render_check=True)


def test_rules_are_keyword_arguments():
    env = gym.make("smoor_env/Smoorverliefd-v1", num_players=5, bidding=True, trump_hearts=True)
    assert env.unwrapped.rules == Rules(num_players=5, bidding=True, trump_hearts=True)
    hearts = gym.make("smoor_env/Hearts-v1", num_players=3)
    assert hearts.unwrapped.rules.is_hearts and hearts.unwrapped.rules.num_players == 3


def _play_match(env: SmoorEnv, seed: int, rng: np.random.Generator) -> float:
    obs, info = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        mask = env.action_masks()
        assert np.array_equal(mask, info["action_mask"]) and mask.any()
        assert env.engine.state.current_player[0] == 0  # the learner's turn
        obs, reward, done, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        total += reward
        assert not truncated and not info["illegal_action"]
    return total


@pytest.mark.parametrize("game", ["smoorverliefd", "hearts"])
@pytest.mark.parametrize("mode", ["round", "trick"])
def test_learner_return_is_its_match_total(game, mode):
    env = make_env(game=game, target_score=30, max_rounds=3, reward_mode=mode,
                   opponents="greedy")
    total = _play_match(env, seed=5, rng=np.random.default_rng(0))
    sign = -1 if game == "hearts" else 1
    assert total == sign * env.engine.state.totals[0, 0]


def test_opponents_one_agent_per_seat():
    env = make_env(num_players=3, opponents=["random", "greedy"], target_score=None)
    _play_match(env, seed=1, rng=np.random.default_rng(1))
    with pytest.raises(ValueError, match="one agent for each of the 2 other seats"):
        make_env(num_players=3, opponents=["random"])
    with pytest.raises(ValueError, match="unknown agent 'nobody'"):
        make_env(opponents="nobody")


def test_the_environments_take_agent_objects_and_gymnasium_make_takes_names():
    """smoor_env's own classes play agent objects; names are resolved by agents' entry points."""
    with pytest.raises(TypeError, match="opponents are required"):
        SmoorEnv()
    with pytest.raises(TypeError, match="opponents must be agent objects"):
        SmoorVectorEnv(num_envs=2, opponents="greedy")
    with pytest.raises(TypeError, match="is not an agent"):
        SmoorEnv(opponents=object())
    greedy = make_agent("greedy")
    env = SmoorEnv(num_players=3, opponents=[greedy, make_agent("random")], target_score=None)
    _play_match(env, seed=2, rng=np.random.default_rng(2))
    made = gym.make("smoor_env/Smoorverliefd-v1", opponents="greedy").unwrapped
    assert isinstance(made, SmoorEnv) and made._match.agent_loop.agents[0].name == "greedy"


def test_illegal_action_ends_the_episode_or_raises():
    env = make_env(target_score=None)
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    before = env.engine.state.copy()
    obs, reward, terminated, _, info = env.step(illegal)
    assert terminated and reward == -1.0 and info["illegal_action"]
    assert np.array_equal(before.hands, env.engine.state.hands)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    strict = make_env(target_score=None, illegal_action="raise")
    strict.reset(seed=0)
    with pytest.raises(ValueError, match="illegal action in game 0"):
        strict.step(illegal)


def test_same_seed_same_episode():
    def trajectory(seed):
        env = make_env(game="hearts", target_score=None, opponents="random")
        obs, _ = env.reset(seed=seed)
        out = [obs]
        rng = np.random.default_rng(0)
        done = False
        while not done:
            obs, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            out.append(obs)
        return np.stack(out)

    assert np.array_equal(trajectory(3), trajectory(3))
    assert not np.array_equal(trajectory(3)[0], trajectory(4)[0])


def test_vector_env_from_make_vec():
    envs = gym.make_vec("smoor_env/Hearts-v1", num_envs=16,
                        vectorization_mode="vector_entry_point", num_players=5)
    assert isinstance(envs, SmoorVectorEnv)
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    obs, info = envs.reset(seed=0)
    assert obs.shape == (16, envs.single_observation_space.shape[0])
    assert info["action_mask"].shape == (16, 70) and info["action_mask"].any(axis=1).all()


def _random_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)


@pytest.mark.parametrize("game", ["smoorverliefd", "hearts"])
def test_vector_env_next_step_autoreset_step_by_step(game):
    envs = make_vector_env(num_envs=12, game=game, target_score=None, opponents="greedy")
    rng = np.random.default_rng(7)
    obs, info = envs.reset(seed=11)
    ended = np.zeros(12, bool)
    returns = np.zeros(12)
    checked = 0
    for _ in range(200):
        mask = info["action_mask"]
        actions = _random_actions(mask, rng)
        actions[ended] = 69  # ignored: these games restart on this step
        obs, rewards, terminated, truncated, info = envs.step(actions)
        st = envs.engine.state
        assert not truncated.any()
        if ended.any():  # the games that had ended restart: reward 0, not terminated
            assert (rewards[ended] == 0).all() and not terminated[ended].any()
            first = split_observation(obs[ended])
            assert (first["totals"] == 0).all() and (first["won"] == 0).all()
            assert (st.round_number[ended] == 1).all()
            checked += int(ended.sum())
        returns += rewards
        live = ~terminated
        # Everywhere the episode goes on, it is the learner's (seat 0) turn, with its mask.
        assert (st.current_player[live] == 0).all()
        assert np.array_equal(info["action_mask"][live], envs.engine.legal_mask[live])
        # Where the episode ended, the mask is never empty: only the restart placeholder.
        restart_only = np.zeros(70, bool)
        restart_only[RESTART_ACTION] = True
        assert (info["action_mask"][terminated] == restart_only).all()
        assert np.array_equal(envs.action_masks(), info["action_mask"])
        if terminated.any():
            sign = -1 if game == "hearts" else 1
            assert np.array_equal(returns[terminated], sign * st.round_points[terminated, 0])
            returns[terminated] = 0
        ended = terminated
    assert checked >= 12


def test_masks_are_never_empty_and_a_sampler_can_draw_from_every_one():
    """Drawing from every mask the vector env hands out (finished games included) plays
    on without an error; the single env's mask after the end allows only the placeholder."""
    envs = make_vector_env(num_envs=32, num_players=3, target_score=None, opponents="random")
    _, info = envs.reset(seed=2)
    rng = np.random.default_rng(2)
    ends = 0
    for _ in range(60):
        mask = info["action_mask"]
        assert mask.any(axis=1).all()
        _, _, terminated, _, info = envs.step(_random_actions(mask, rng))
        ends += int(terminated.sum())
        assert (np.flatnonzero(info["action_mask"][terminated].any(axis=0)) <= RESTART_ACTION).all()
    assert ends >= 32
    single = make_env(target_score=None)
    single.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, info = single.step(int(np.argmax(single.action_masks())))
    assert np.flatnonzero(info["action_mask"]).tolist() == [RESTART_ACTION]
    with pytest.raises(RuntimeError, match="reset"):
        single.step(RESTART_ACTION)


def test_vector_env_restart_starts_chosen_games_at_once():
    envs = make_vector_env(num_envs=6, target_score=None, opponents="greedy")
    _, info = envs.reset(seed=3)
    envs.step(np.argmax(info["action_mask"], axis=1))
    st = envs.engine.state
    untouched = [0, 2, 3, 5]
    hands_before = st.hands[untouched].copy()  # (4, P) uint64
    first = envs.restart(np.array([1, 4]))
    assert first.shape == (2, OBSERVATION_SIZE) and (st.current_player == 0).all()
    assert (np.bitwise_count(st.hands[[1, 4], 0]) == 13).all()  # a new deal, before its turn
    assert np.array_equal(st.hands[untouched], hands_before)
    assert np.array_equal(first, observe(envs.engine, np.zeros(2, np.int64), np.array([1, 4])))
    with pytest.raises(ValueError, match="games must be ints in 0..5"):
        envs.restart(np.array([6]))


def test_vector_env_illegal_action_ends_only_that_game():
    envs = make_vector_env(num_envs=4, target_score=None)
    _, info = envs.reset(seed=0)
    actions = np.argmax(info["action_mask"], axis=1)
    actions[2] = int(np.flatnonzero(~info["action_mask"][2])[0])
    _, rewards, terminated, _, info = envs.step(actions)
    assert terminated.tolist() == [False, False, True, False]
    assert rewards[2] == -1.0 and info["illegal_action"][2]
    assert envs.engine.state.phase.tolist().count(Phase.PLAY) == 4


def test_vector_env_without_copy_returns_read_only_views_of_the_same_observations():
    copied, viewed = make_vector_env(num_envs=8, copy=True), make_vector_env(num_envs=8, copy=False)
    obs_a, info = copied.reset(seed=4)
    obs_b, _ = viewed.reset(seed=4)
    rng = np.random.default_rng(4)
    for _ in range(30):
        assert np.array_equal(obs_a, obs_b)
        assert not obs_b.flags.writeable  # the environment patches it in place
        with pytest.raises(ValueError, match="read-only"):
            obs_b[0, 0] = 1.0
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
        obs_a, _, _, _, info = copied.step(actions)
        kept = obs_b
        obs_b, *_ = viewed.step(actions)
        assert np.shares_memory(kept, obs_b)  # a view: copy it to keep it


def _packed_from_legal_sets(state) -> np.ndarray:
    """(B, 2) uint64: bit k of a game's legal set is action PHASE_ACTION_OFFSET[phase] + k,
    at bit a % 64 of word a // 64 (computed with Python ints, apart from the engine)."""
    out = np.zeros((len(state.legal), 2), np.uint64)
    for g, (legal, phase) in enumerate(zip(state.legal.tolist(), state.phase.tolist(),
                                           strict=True)):
        bits = legal << int(PHASE_ACTION_OFFSET[phase])
        out[g] = [bits & (2**64 - 1), bits >> 64]
    return out


@pytest.mark.parametrize("rules", [
    Rules(), Rules(game="hearts", max_rounds=2), Rules(num_players=3, bidding=True),
    Rules(num_players=5, cupids_arrow=True, bidding=True, max_rounds=3)],
    ids=["smoorverliefd", "hearts", "bidding", "cupid-and-bidding"])
def test_legal_words_are_the_packed_action_mask_in_every_phase(rules):
    """What the vector environment hands to ``act_packed`` agents (``Engine.legal_words``)
    equals ``pack_mask`` of the engine's mask, for every phase (bids and cursed suits lie
    past action 63)."""
    engine = Engine(rules, 64)
    engine.reset(2)
    rng = np.random.default_rng(2)
    phases = set()
    for _ in range(400):
        phases.update(engine.state.phase.tolist())
        expected = _packed_from_legal_sets(engine.state)  # (64, 2), with Python ints
        assert np.array_equal(engine.legal_words, expected)
        assert np.array_equal(pack_mask(engine.legal_mask), expected)
        if engine.state.match_over.all():
            engine.reset(int(rng.integers(1000)))
        engine.step(engine.sample_legal(rng), active=~engine.state.match_over)
    wanted = {Phase.PLAY, Phase.OVER} | ({Phase.PASS} if rules.passing else set()) | (
        {Phase.BID} if rules.bidding else set()) | ({Phase.CURSE} if rules.cupids_arrow else set())
    assert wanted <= phases


def test_random_agent_acts_the_same_from_the_mask_and_from_packed_bits():
    agent = RandomAgent()
    rng = np.random.default_rng(3)
    mask = rng.random((500, 70)) < 0.1
    mask[np.arange(500), rng.integers(0, 70, 500)] = True  # at least one legal action
    from_mask = agent.act({"observation": None, "action_mask": mask}, np.random.default_rng(4))
    from_bits = agent.act_packed(pack_mask(mask), np.random.default_rng(4))
    assert np.array_equal(from_mask, from_bits) and mask[np.arange(500), from_bits].all()
    mask[7] = False
    with pytest.raises(ValueError, match=r"no legal action in games \[7\]"):
        agent.act_packed(pack_mask(mask), rng)
    with pytest.raises(ValueError, match="uint64 of shape"):
        agent.act_packed(np.zeros((3, 70), bool), rng)


class _MaskOnly:
    """The random agent without ``act_packed``: the environment must build it masks."""

    name, uses_observation = "mask-only random", False

    def act(self, observations, rng):
        return RandomAgent().act(observations, rng)


@pytest.mark.parametrize("rules", [Rules(), Rules(num_players=5, cupids_arrow=True,
                                                  bidding=True, max_rounds=2)],
                         ids=["smoorverliefd", "cupid-and-bidding"])
def test_vector_env_gives_the_same_episodes_with_packed_or_mask_opponents(rules):
    runs = []
    for opponents in (RandomAgent(), _MaskOnly()):
        envs = make_vector_env(num_envs=24, rules=rules, opponents=opponents, reward_mode="trick")
        rng = np.random.default_rng(5)
        obs, info = envs.reset(seed=5)
        out = [obs]
        for _ in range(150):
            obs, rewards, terminated, _, info = envs.step(_random_actions(info["action_mask"],
                                                                          rng))
            out += [obs, rewards[:, None], terminated[:, None], info["action_mask"]]
        runs.append(out)
    assert all(np.array_equal(a, b) for a, b in zip(*runs, strict=True))


def test_an_agent_that_overrides_act_is_asked_through_act():
    """A RandomAgent subclass with its own ``act`` inherits ``act_packed``, which would
    skip that ``act``: the environment must see this and ask ``act``."""

    class Lowest(RandomAgent):
        calls = 0

        def act(self, observations, rng):
            Lowest.calls += 1
            return np.argmax(observations["action_mask"], axis=1)

    assert offers_packed(RandomAgent())
    assert not offers_packed(Lowest()) and not offers_packed(_MaskOnly())
    envs = make_vector_env(num_envs=8, opponents=Lowest())
    _, info = envs.reset(seed=1)
    for _ in range(5):
        _, _, _, _, info = envs.step(np.argmax(info["action_mask"], axis=1))
    assert Lowest.calls >= 5


@pytest.mark.parametrize("dtype", [np.float64, np.float32, bool])
def test_vector_env_rejects_non_integer_actions(dtype):
    envs = make_vector_env(num_envs=4)
    _, info = envs.reset(seed=0)
    before = envs.engine.state.copy()
    with pytest.raises(ValueError, match="integers"):
        envs.step(np.argmax(info["action_mask"], axis=1).astype(dtype))
    assert all(np.array_equal(getattr(before, f), getattr(envs.engine.state, f))
               for f in ("hands", "played", "current_player", "totals"))


@pytest.mark.parametrize("name", sorted(PRESETS))
@pytest.mark.parametrize("obs_dtype", ["float32", "int8"])
def test_the_observation_space_has_finite_bounds_that_every_observation_keeps(name, obs_dtype):
    rules = preset(name, num_players=4, matches=True)
    envs = SmoorVectorEnv(32, rules=rules, opponents=RandomAgent(), obs_dtype=obs_dtype)
    space = envs.single_observation_space
    assert np.isfinite(space.low).all() and np.isfinite(space.high).all()
    assert space.dtype == np.dtype(obs_dtype) and (space.low <= space.high).all()
    rng = np.random.default_rng(0)
    observations, info = envs.reset(seed=1)
    for _ in range(60):
        assert all(space.contains(o) for o in observations)
        masks = envs.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        observations, *_ = envs.step(actions)
    envs.close()
