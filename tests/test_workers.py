"""The vector environment over worker processes, and compact observations.

``num_workers=k`` must give exactly what one process gives, step by step (the
NEXT_STEP autoreset, ``copy=``, compact observations included); a worker that
raises or dies must be a clear error, never a hang; ``close`` must leave no
process behind.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal

import gymnasium as gym
import numpy as np
import pytest

import smoor_env  # noqa: F401 - registers the ids
from agents import RandomAgent, make_agent
from agents.env_factories import make_vector_env
from smoor_env import Engine, Rules
from smoor_env.core.streams import GameStreams
from smoor_env.envs.gym_env import SmoorVectorEnv
from smoor_env.envs.workers import WorkerError
from smoor_env.observation import (
    COMPACT_UNITS,
    OBSERVATION_SIZE,
    QUANTISED_BLOCKS,
    SLICES,
    ObservationTracker,
    compact_scale,
    observe,
)


def _random_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)


def _trajectory(num_workers: int, steps: int, policy=_random_actions,
                **options) -> list[tuple[np.ndarray, ...]]:
    """Every array that reset and each step return, for the learner's ``policy``."""
    envs = make_vector_env(num_workers=num_workers, **options)
    rng = np.random.default_rng(1)
    obs, info = envs.reset(seed=21)
    out = [(obs.copy(), info["action_mask"])]
    try:
        for _ in range(steps):
            actions = policy(info["action_mask"], rng)
            obs, rewards, terminated, truncated, info = envs.step(actions)
            out.append((obs.copy(), rewards, terminated, truncated, info["action_mask"],
                        info["illegal_action"]))
        obs, info = envs.reset(seed=22)  # a second seed, in the same workers
        out.append((obs.copy(), info["action_mask"]))
    finally:
        envs.close()
    return out


@pytest.mark.parametrize(("options", "workers"), [
    ({"game": "smoorverliefd", "target_score": None, "opponents": "random"}, 2),
    ({"game": "hearts", "num_players": 3, "target_score": 26,
      "opponents": ["random", "greedy"], "copy": False}, 3),
    ({"game": "smoorverliefd", "num_players": 5, "bidding": True, "target_score": None,
      "obs_dtype": "int8", "reward_mode": "trick"}, 4),
])
def test_workers_give_exactly_what_one_process_gives_step_by_step(options, workers):
    # Matches end and restart (NEXT_STEP) many times over these steps.
    one = _trajectory(1, 120, num_envs=23, **options)
    many = _trajectory(workers, 120, num_envs=23, **options)
    ended = sum(int(step[2].sum()) for step in one[1:-1])
    assert ended >= 23
    for t, (a, b) in enumerate(zip(one, many, strict=True)):
        for x, y in zip(a, b, strict=True):
            assert x.dtype == y.dtype and np.array_equal(x, y), f"step {t}"


def test_sub_environment_does_not_depend_on_the_batch_it_runs_in():
    # The first 5 sub-environments of 5 and of 11 are different engines' games 0..4.
    def first_legal(mask, rng):  # the learner's choice in a game depends on that game only
        return np.argmax(mask, axis=1)

    small = _trajectory(1, 60, first_legal, num_envs=5, target_score=None)
    big = _trajectory(1, 60, first_legal, num_envs=11, target_score=None)
    ended = [step[2] for step in small[1:-1]]
    compared = 0
    for t, (a, b) in enumerate(zip(small, big, strict=True)):
        if 0 < t < len(small) - 1 and any(e.any() for e in ended[:t]):
            break  # a restarted match takes id i + e * num_envs: different from here on
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y[:5]), f"step {t}"
        compared += 1
    assert compared > 5


def test_make_vec_passes_num_workers_and_copy():
    envs = gym.make_vec("smoor_env/Hearts-v1", num_envs=6, vectorization_mode="vector_entry_point",
                        num_workers=2, copy=False, obs_dtype="int8")
    try:
        assert isinstance(envs, SmoorVectorEnv) and envs.num_workers == 2 and envs.engine is None
        obs, info = envs.reset(seed=0)
        assert obs.dtype == np.int8 and obs.shape == (6, OBSERVATION_SIZE)
        assert envs.observation_space.contains(obs)
        assert not obs.flags.writeable
        kept = obs
        obs, *_ = envs.step(_random_actions(info["action_mask"], np.random.default_rng(0)))
        assert np.shares_memory(kept, obs)  # the shared memory the workers write
    finally:
        envs.close()


def test_bad_arguments_raise_in_the_learners_process():
    with pytest.raises(ValueError, match="num_workers"):
        make_vector_env(num_envs=3, num_workers=4)
    with pytest.raises(ValueError, match="observation dtype"):
        make_vector_env(num_envs=3, obs_dtype="uint8")
    with pytest.raises(ValueError, match="illegal_action"):
        make_vector_env(num_envs=3, num_workers=2, illegal_action="ignore")


def test_illegal_action_raise_leaves_every_worker_unchanged():
    envs = make_vector_env(num_envs=6, num_workers=2, illegal_action="raise")
    try:
        obs, info = envs.reset(seed=3)
        actions = np.argmax(info["action_mask"], axis=1)
        actions[4] = int(np.flatnonzero(~info["action_mask"][4])[0])
        with pytest.raises(ValueError, match=r"illegal actions in games \[4\]"):
            envs.step(actions)
        actions[4] = int(np.argmax(info["action_mask"][4]))
        stepped, *_ = envs.step(actions)  # nothing had moved: the same as a fresh env
        fresh = make_vector_env(num_envs=6)
        fresh.reset(seed=3)
        assert np.array_equal(stepped, fresh.step(actions)[0])
    finally:
        envs.close()


class _FailingAgent(RandomAgent):
    """A random agent that raises on its ``fail_at``-th call, only in the learner's process
    (block 0) or only in the workers' (each block calls its own copy)."""

    def __init__(self, fail_at: int, where: str) -> None:
        self.calls, self.fail_at, self.where = 0, fail_at, where

    def act_packed(self, words, rng):
        self.calls += 1
        in_worker = mp.parent_process() is not None
        if self.calls == self.fail_at and in_worker == (self.where == "worker"):
            raise RuntimeError("opponent exploded")
        return super().act_packed(words, rng)


def _processes(envs: SmoorVectorEnv) -> list[mp.process.BaseProcess]:
    return list(envs._pool.processes)


@pytest.mark.parametrize(("where", "named"), [
    ("worker", r"worker 1 \(sub-environments 4\.\.7\)"),
    ("learner", r"the learner's process \(sub-environments 0\.\.3\)"),
])
def test_a_block_that_raises_is_an_error_in_the_learners_process(where, named):
    envs = make_vector_env(num_envs=8, num_workers=2,
                           opponents=_FailingAgent(fail_at=30, where=where))
    processes = _processes(envs)
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    with pytest.raises(WorkerError, match=rf"(?s){named} raised during 'step'.*opponent exploded"):
        for _ in range(100):
            envs.step(_random_actions(envs.action_masks(), rng))
    assert not any(p.is_alive() for p in processes)  # the others were stopped too
    with pytest.raises(WorkerError, match="closed"):
        envs.step(np.zeros(8, np.int64))
    envs.close()


@pytest.mark.parametrize("how", ["kill", "exit"])
def test_a_worker_that_dies_is_an_error_not_a_hang(how):
    envs = make_vector_env(num_envs=8, num_workers=2)
    processes = _processes(envs)
    _, info = envs.reset(seed=0)
    assert len(processes) == 1  # block 1; block 0 runs in the learner's process
    if how == "kill":
        os.kill(processes[0].pid, signal.SIGKILL)
    else:
        processes[0].terminate()
    processes[0].join()
    with pytest.raises(WorkerError, match=r"worker 1 \(sub-environments 4\.\.7\) died"):
        envs.step(np.argmax(info["action_mask"], axis=1))
    assert not any(p.is_alive() for p in processes)
    envs.close()


def test_close_leaves_no_process_behind():
    before = set(mp.active_children())
    envs = make_vector_env(num_envs=9, num_workers=3)
    processes = _processes(envs)
    assert len(processes) == 2 and all(p.is_alive() for p in processes)  # and this one
    envs.reset(seed=0)
    envs.close()
    assert all(p.exitcode is not None for p in processes)
    assert set(mp.active_children()) <= before
    envs.close()  # twice is fine


def test_compact_observations_are_the_float_ones_in_steps():
    # int8 = round(float * COMPACT_UNITS) on the blocks that are not 0/1, and the float
    # values themselves on the 0/1 blocks, after every step; observe and the tracker agree.
    quantised = np.zeros(OBSERVATION_SIZE, bool)
    for name in QUANTISED_BLOCKS:
        quantised[SLICES[name]] = True
    assert np.array_equal(compact_scale() != 1, quantised)
    for rules in (Rules(), Rules(game="hearts", num_players=3), Rules(num_players=5,
                                                                     bidding=True)):
        engines = Engine(rules, 32), Engine(rules, 32)
        floats = ObservationTracker(engines[0], np.zeros(32, int))
        compact = ObservationTracker(engines[1], np.zeros(32, int), dtype="int8")
        floats.reset(5)
        compact.reset(5)
        rng = np.random.default_rng(0)
        for _ in range(150):
            actions = engines[0].sample_legal(rng)
            floats.step(actions)
            compact.step(actions)
            f, c = floats.out, compact.out
            assert c.dtype == np.int8
            expected = np.where(quantised, np.rint(f * np.float32(COMPACT_UNITS)), f)
            assert np.array_equal(c, expected)
            assert np.abs(c * compact_scale() - f).max() <= 0.5 / COMPACT_UNITS + 1e-6
            assert np.array_equal(observe(engines[1], 0, dtype="int8"), c)


def test_game_streams_draw_per_game_whatever_the_rows_asked_together():
    engine = Engine(Rules(), 6)
    engine.reset(seed=2)
    together = GameStreams(engine, np.random.PCG64(0))
    apart = GameStreams(engine, np.random.PCG64(0))
    both = together.for_games(np.array([1, 4])).random((2, 3))
    assert np.array_equal(both[1], apart.for_games(np.array([4])).random((1, 3))[0])
    assert np.array_equal(both[0], apart.for_games(np.array([1])).random((1, 3))[0])
    again = together.for_games(np.array([1])).random(1)  # the next draw, not the first
    assert again[0] not in both[0] and ((both >= 0) & (both < 1)).all()
    together.restart(np.array([1]))
    assert together.for_games(np.array([1])).random(1)[0] == both[0, 0]
    # Draws that are not one per game come from the fallback generator.
    assert together.for_games(np.array([1, 4])).integers(10, size=5).shape == (5,)


def test_agents_with_observations_play_in_workers():
    greedy = make_agent("greedy")
    one = _trajectory(1, 20, num_envs=6, opponents=greedy, target_score=None)
    two = _trajectory(2, 20, num_envs=6, opponents=greedy, target_score=None)
    for a, b in zip(one, two, strict=True):
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)


def test_workers_start_with_spawn_too():
    # spawn (and forkserver) pickle the block's arguments, opponents included.
    one = _trajectory(1, 15, num_envs=4, opponents=["greedy", "random", "random"])
    spawned = _trajectory(2, 15, num_envs=4, opponents=["greedy", "random", "random"],
                          context="spawn")
    for a, b in zip(one, spawned, strict=True):
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)


def test_sb3_adapter_with_workers_equals_one_process():
    # The adapter restarts ended games within the step (SmoorVectorEnv.restart).
    pytest.importorskip("stable_baselines3")
    from smoor_env.envs.sb3 import make_sb3_vec_env

    def run(num_workers: int) -> list[np.ndarray]:
        adapter = make_sb3_vec_env("smoor_env/Hearts-v1", 6, monitor=False, num_players=3,
                                   target_score=None, num_workers=num_workers)
        adapter.seed(5)
        out = [adapter.reset(), adapter.action_masks()]
        rng = np.random.default_rng(0)
        try:
            for _ in range(30):
                obs, rewards, dones, infos = adapter.step(
                    _random_actions(adapter.action_masks(), rng))
                finals = [info["terminal_observation"] for info in infos if info]
                out += [obs, rewards, dones, adapter.action_masks(), *finals]
        finally:
            adapter.close()
        return out

    one, two = run(1), run(2)
    assert len(one) == len(two) > 4 * 30  # some episodes ended (terminal observations)
    for x, y in zip(one, two, strict=True):
        assert np.array_equal(x, y)


def test_workers_exit_when_the_learners_process_dies():
    # The learner's process ends without close() (os._exit skips every cleanup): each
    # worker sees its pipe close and exits by itself.
    import subprocess
    import sys
    import time

    script = ("import os; from agents.env_factories import make_vector_env; "
              "envs = make_vector_env(num_envs=6, num_workers=3); envs.reset(seed=0); "
              "print(*[p.pid for p in envs._pool.processes], flush=True); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": os.getcwd()})
    pids = [int(pid) for pid in out.stdout.split()]
    assert len(pids) == 2, out.stderr

    def running(pid: int) -> bool:  # a zombie (exited, not yet reaped) is not running
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 30
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(running(pid) for pid in pids)
