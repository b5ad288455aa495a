"""The environments fail cleanly: wrong time, wrong type, wrong value; nothing changes.

Every public method of the PettingZoo AEC environment (``raw_env`` and ``env()``), the
single-agent ``SmoorEnv`` and the native ``SmoorVectorEnv``, called before ``reset``,
after the end, or with a value of the wrong kind, raises a ``RuntimeError``,
``TypeError`` or ``ValueError`` that says what to do; and a failed call leaves the
games, the environment's fields and every random generator as they were (the next
steps are those of an environment where the call never happened).
"""

from __future__ import annotations

import numpy as np
import pytest
from env_snapshots import snapshot

from agents import make_agent
from smoor_env import Rules, env, raw_env
from smoor_env.envs.gym_env import SmoorEnv, SmoorVectorEnv

RANDOM = make_agent("random")

#: Actions of the wrong kind, for every environment that takes one action.
WRONG_TYPES = [2.7, "2", np.float64(2.0), np.float32(1.0), True, np.bool_(False), [2],
               np.array([2]), np.array(2.0), {"action": 2}]
#: Integers outside the action space.
OUT_OF_RANGE = [-1, 70, 2**70, np.int64(-5), np.uint64(1000)]
#: Malformed reset options of the single-agent env, with the error they raise.
BAD_OPTIONS = [("deal", TypeError), (["deal"], TypeError), ({"dealer": 9}, ValueError),
               ({"dealer": 1.5}, ValueError), ({"dealer": True}, ValueError),
               ({"deal": "AS"}, ValueError), ({"deal": [["AS"]] * 4}, ValueError),
               ({"dealr": 1}, ValueError)]
BAD_SEEDS = [(-1, ValueError), (2**64, ValueError), (1.5, TypeError), ("7", TypeError),
             (True, TypeError), (np.float64(3), TypeError)]


def _rejected(target, call, error, *patterns) -> None:
    """``call()`` raises ``error`` matching the patterns, and ``target`` is unchanged."""
    before = snapshot(target)
    with pytest.raises(error) as info:
        call()
    for pattern in patterns:
        assert pattern in str(info.value), (pattern, str(info.value))
    assert snapshot(target) == before


# -------------------------------------------------------------------------- AEC
@pytest.fixture(params=["raw_env", "env"])
def aec(request):
    make = raw_env if request.param == "raw_env" else env
    return make(rules=Rules(target_score=None))


@pytest.mark.parametrize("call", [
    lambda e: e.step(0), lambda e: e.observe("player_0"), lambda e: e.state(),
    lambda e: e.last(), lambda e: next(iter(e.agent_iter())),
], ids=["step", "observe", "state", "last", "agent_iter"])
def test_aec_before_reset(aec, call):
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        call(aec)


@pytest.mark.parametrize("action", WRONG_TYPES + [None], ids=repr)
def test_aec_wrong_action_type(aec, action):
    aec.reset(seed=1)
    _rejected(aec, lambda: aec.step(action), TypeError, "an action must be an int 0..69")


@pytest.mark.parametrize("action", OUT_OF_RANGE, ids=repr)
def test_aec_action_out_of_range(aec, action):
    aec.reset(seed=1)
    _rejected(aec, lambda: aec.step(action), ValueError, "out of range 0..69")


def test_aec_unknown_agent(aec):
    aec.reset(seed=1)
    for agent in ("player_9", 0, None):
        _rejected(aec, lambda a=agent: aec.observe(a), ValueError, "unknown agent")
    with pytest.raises(ValueError, match="unknown agent"):
        aec.unwrapped.action_space("nobody")


@pytest.mark.parametrize(("seed", "error"), BAD_SEEDS, ids=repr)
def test_aec_bad_seed(aec, seed, error):
    aec.reset(seed=1)
    aec.step(int(np.argmax(aec.observe(aec.agent_selection)["action_mask"])))
    _rejected(aec, lambda: aec.reset(seed=seed), error, "seed")


@pytest.mark.parametrize(("options", "error"), [o for o in BAD_OPTIONS if o[0] != {"dealr": 1}],
                         ids=repr)
def test_aec_bad_options_change_nothing(aec, options, error):
    """A failed reset keeps the match and the generator: the next reset() (no seed) gives
    the match it would have given anyway."""
    twin = raw_env(rules=Rules(target_score=None))
    for e in (aec, twin):
        e.reset(seed=3)
    _rejected(aec, lambda: aec.reset(options=options), error)
    aec.reset()
    twin.reset()
    assert np.array_equal(aec.unwrapped.engine.state.dealt, twin.engine.state.dealt)


def test_aec_after_the_end(aec):
    aec.reset(seed=2)
    for agent in aec.agent_iter():
        obs, _, done, truncated, _ = aec.last()
        if done or truncated:
            if agent == "player_0":
                _rejected(aec, lambda: aec.step(3), ValueError, "only valid action is None")
            aec.step(None)
        else:
            aec.step(int(np.argmax(obs["action_mask"])))
    _rejected(aec, lambda: aec.step(None), RuntimeError, "call reset()")
    _rejected(aec, aec.last, RuntimeError, "call reset()")


@pytest.mark.parametrize("rules", ["hearts", {"game": "hearts"}, 4], ids=repr)
def test_aec_rules_must_be_rules(rules):
    with pytest.raises(TypeError, match="rules must be a smoor_env.Rules"):
        raw_env(rules=rules)


# ----------------------------------------------------------------- single agent
@pytest.fixture
def single() -> SmoorEnv:
    return SmoorEnv(opponents=RANDOM, target_score=None)


def test_single_before_reset_and_after_the_end(single):
    with pytest.raises(RuntimeError, match=r"call reset\(\)"):
        single.step(0)
    single.reset(seed=0)
    terminated = False
    while not terminated:
        _, _, terminated, _, _ = single.step(int(np.argmax(single.action_masks())))
    _rejected(single, lambda: single.step(0), RuntimeError, "call reset()")


@pytest.mark.parametrize("action", WRONG_TYPES + [None], ids=repr)
def test_single_wrong_action_type(single, action):
    single.reset(seed=0)
    _rejected(single, lambda: single.step(action), TypeError, "an action must be an int")


@pytest.mark.parametrize("action", OUT_OF_RANGE, ids=repr)
def test_single_action_out_of_range(single, action):
    single.reset(seed=0)
    _rejected(single, lambda: single.step(action), ValueError, "out of range")


@pytest.mark.parametrize(("options", "error"), BAD_OPTIONS, ids=repr)
def test_single_failed_reset_keeps_every_generator(options, error):
    """After a failed reset the env goes on exactly as an env that never saw the call."""
    env_a, env_b = (SmoorEnv(opponents=RANDOM, target_score=None) for _ in range(2))
    for e in (env_a, env_b):
        e.reset(seed=5)
        e.step(int(np.argmax(e.action_masks())))
    _rejected(env_a, lambda: env_a.reset(options=options), error)
    _rejected(env_a, lambda: env_a.reset(seed=9, options=options), error)
    for e in (env_a, env_b):  # the same next match, opponents' moves included
        e.reset()
    while True:
        action = int(np.argmax(env_a.action_masks()))
        obs_a, reward_a, done, _, _ = env_a.step(action)
        obs_b, reward_b, _, _, _ = env_b.step(action)
        assert np.array_equal(obs_a, obs_b) and reward_a == reward_b
        if done:
            break


@pytest.mark.parametrize(("seed", "error"), BAD_SEEDS, ids=repr)
def test_single_bad_seed(single, seed, error):
    single.reset(seed=0)
    _rejected(single, lambda: single.reset(seed=seed), error, "seed")


@pytest.mark.parametrize(("kwargs", "error", "pattern"), [
    ({"rules": "hearts"}, TypeError, "rules must be"),
    ({"learner_seat": 1.5}, ValueError, "learner_seat"),
    ({"learner_seat": 4}, ValueError, "learner_seat"),
    ({"reward_mode": "points"}, ValueError, "reward_mode"),
    ({"illegal_action": "ignore"}, ValueError, "illegal_action"),
    ({"bid_penalty": 2**32}, ValueError, "bid_penalty must be in 0..10_000"),
], ids=repr)
def test_single_bad_construction(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        SmoorEnv(**{"opponents": RANDOM, **kwargs})


# ----------------------------------------------------------------------- vector
@pytest.fixture
def vector() -> SmoorVectorEnv:
    return SmoorVectorEnv(opponents=RANDOM, num_envs=3, target_score=None)


def test_vector_before_reset(vector):
    _rejected(vector, lambda: vector.step(np.zeros(3, np.int64)), RuntimeError, "call reset()")


@pytest.mark.parametrize("actions", [
    np.zeros(2, np.int64), np.zeros((3, 1), np.int64), np.zeros(4, np.int64), 0, [[0, 0, 0]],
    np.zeros(3), np.zeros(3, bool), ["0", "0", "0"], [0, 0, 70], np.array([-1, 0, 0]),
], ids=["short", "3x1", "long", "scalar", "nested", "float", "bool", "str", "70", "-1"])
def test_vector_bad_actions(vector, actions):
    vector.reset(seed=0)
    _rejected(vector, lambda: vector.step(actions), ValueError, "actions must")


@pytest.mark.parametrize(("seed", "error"), BAD_SEEDS, ids=repr)
def test_vector_bad_seed(vector, seed, error):
    vector.reset(seed=0)
    _rejected(vector, lambda: vector.reset(seed=seed), error, "seed")


@pytest.mark.parametrize(("options", "error"), [("deal", TypeError), ({"deal": 1}, ValueError),
                                                ({"reset_mask": [True] * 3}, ValueError)],
                         ids=repr)
def test_vector_bad_options(vector, options, error):
    vector.reset(seed=0)
    _rejected(vector, lambda: vector.reset(seed=1, options=options), error, "option")


@pytest.mark.parametrize(("num_envs", "error"), [(2.5, TypeError), (0, ValueError),
                                                 (True, TypeError), ("2", TypeError)], ids=repr)
def test_vector_bad_num_envs(num_envs, error):
    with pytest.raises(error, match="num_envs"):
        SmoorVectorEnv(opponents=RANDOM, num_envs=num_envs)


def test_vector_illegal_action_raises_before_any_autoreset():
    """illegal_action="raise": a game that just ended must not restart before the raise."""
    vector = SmoorVectorEnv(opponents=RANDOM, num_envs=4, target_score=20, max_rounds=5,
                            illegal_action="raise")
    _, info = vector.reset(seed=1)  # (seed 0's four matches happen to end together)
    while not vector._ended.any():
        _, _, _, _, info = vector.step(np.argmax(info["action_mask"], axis=1))
    assert not vector._ended.all()  # matches of several rounds end apart
    illegal = np.argmin(info["action_mask"], axis=1)  # illegal where a game still plays
    _rejected(vector, lambda: vector.step(illegal), ValueError, "illegal action")


@pytest.mark.parametrize("games", [[0.5], [True], [3], [-1], [0, 0], "0"], ids=repr)
def test_vector_restart_bad_games(vector, games):
    vector.reset(seed=0)
    _rejected(vector, lambda: vector.restart(games), ValueError, "games")


def test_vector_restart_before_reset(vector):
    _rejected(vector, lambda: vector.restart([0]), RuntimeError, "call reset()")


# ------------------------------------------------------------------- batch size bound
def _batch_makers():
    from smoor_env import Engine, SelfPlayVectorEnv

    return [("batch_size", lambda n: Engine(Rules(), n)),
            ("num_envs", lambda n: SmoorVectorEnv(opponents=RANDOM, num_envs=n)),
            ("num_envs", lambda n: SelfPlayVectorEnv(num_envs=n))]


@pytest.mark.parametrize(("size", "error"), [
    (10**9, ValueError), (2**18 + 1, ValueError), (0, ValueError), (-3, ValueError),
    (np.int64(10**12), ValueError), (True, TypeError), (2.0, TypeError), ("8", TypeError),
    (None, TypeError)], ids=repr)
def test_a_huge_batch_is_refused_before_anything_is_allocated(monkeypatch, size, error):
    """The engine and both vector envs refuse a batch size outside 1..MAX_BATCH_SIZE with
    a message that names the argument and the bound, before allocating any array."""
    from smoor_env.core import checks, state

    assert checks.MAX_BATCH_SIZE == 262_144

    def no_allocation(*args, **kwargs):
        raise AssertionError("allocated before the check")

    monkeypatch.setattr(state.State, "empty", staticmethod(no_allocation))
    for name, make in _batch_makers():
        with pytest.raises(error) as info:
            make(size)
        assert f"{name} must be" in str(info.value) and "1..262144" in str(info.value)
        if error is ValueError:
            assert str(info.value) == f"{name} must be in 1..262144, got {int(size)}"


def test_a_memory_error_below_the_bound_is_raised_as_it_is(monkeypatch):
    from smoor_env.core import state

    def out_of_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 19.0 GiB")

    monkeypatch.setattr(state.State, "empty", staticmethod(out_of_memory))
    for _, make in _batch_makers():
        with pytest.raises(MemoryError, match="Unable to allocate"):
            make(1000)
