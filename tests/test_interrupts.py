"""Interrupts are safe: a ``KeyboardInterrupt`` at any line of a step or reset leaves an
engine or environment either unchanged (the retried call gives what it would have
given) or broken with a clear error on the next call, which ``reset()`` ends; never
silently wrong.

The interrupt is injected with a trace function at the k-th line our code
(``smoor_env``, ``agents``) runs inside the call, for k over every line of the call
(every ``STRIDE``-th in the default run, every one with ``--runslow``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from smoor_env import Rules, raw_env
from smoor_env.core.checks import BrokenStateError
from smoor_env.core.engine import Engine
from smoor_env.envs.gym_env import SmoorEnv, SmoorVectorEnv

ROOT = Path(__file__).parent.parent
OURS = (str(ROOT / "smoor_env"), str(ROOT / "agents"))
STEPS = 3  # steps before the interrupted call, and after the recovery
STRIDE = 11  # lines between injection points in the default run


def count_lines(call: Callable[[], object], stop_at: int | None = None) -> int:
    """Run ``call``, counting the lines of our code it runs; raise KeyboardInterrupt at
    line ``stop_at``. Returns the count (of a call that was not interrupted)."""
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
            if count == stop_at:
                raise KeyboardInterrupt
        return local

    def trace(frame, event, arg):
        return local if frame.f_code.co_filename.startswith(OURS) else None

    sys.settrace(trace)
    try:
        call()
    finally:
        sys.settrace(None)
    return count


def same(a, b) -> bool:
    """Equal results: arrays by value, dicts and sequences item by item."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


@dataclass
class Case:
    """An object and its calls: ``reset(obj, seed)`` and ``step(obj)``, the one call an
    interrupt is injected into, and ``read(obj, returned)``, what a run of them shows
    (to compare runs; read after the call, never interrupted)."""

    make: Callable[[], object]
    reset: Callable[[object, int], object]
    step: Callable[[object], object]
    read: Callable[[object, object], object] = lambda obj, returned: returned


def _first_legal(mask: np.ndarray) -> np.ndarray:
    return np.argmax(mask, axis=-1)


def _vector(num_workers: int = 1) -> Case:
    return Case(lambda: SmoorVectorEnv(4, Rules(game="hearts"), opponents=make_agent("random"),
                                       num_workers=num_workers),
                lambda env, seed: env.reset(seed=seed),
                lambda env: env.step(_first_legal(env.action_masks())))


def _single() -> Case:
    return Case(lambda: SmoorEnv(Rules(bidding=True), opponents=make_agent("greedy")),
                lambda env, seed: env.reset(seed=seed),
                lambda env: env.step(int(_first_legal(env.action_masks()))))


def _aec() -> Case:
    def step(env):
        env.step(int(_first_legal(env.observe(env.agent_selection)["action_mask"])))
    return Case(lambda: raw_env(Rules(game="hearts", num_players=3)),
                lambda env, seed: env.reset(seed=seed), step,
                lambda env, returned: (env.last(), env.rewards, env.agent_selection))


def _engine() -> Case:
    return Case(lambda: Engine(Rules(cupids_arrow=True, bidding=True, target_score=20), 3),
                lambda engine, seed: engine.reset(seed),
                lambda engine: engine.step(_first_legal(engine.legal_mask)),
                lambda engine, returned: {k: v.copy() if isinstance(v, np.ndarray) else v
                                          for k, v in vars(engine.state).items()})


CASES = {"vector": _vector, "vector-2-workers": lambda: _vector(2), "single": _single,
         "aec": _aec, "engine": _engine}


def _do(case: Case, obj, call: str) -> object:
    """``case``'s ``call`` ("reset" to seed 2, or "step") on ``obj``, and what it shows."""
    return case.read(obj, case.reset(obj, 2) if call == "reset" else case.step(obj))


def _run(case: Case, which: str, stop_at: int | None) -> tuple[bool, list]:
    """Reset and step ``case``'s object, interrupting its ``which`` call ("reset" or
    "step", the one after ``STEPS`` steps) at line ``stop_at``; then go on as a user
    would: step again, and if that is refused, reset and step. Returns (whether it was
    interrupted, the path taken and the results after it)."""
    obj = case.make()
    try:
        case.reset(obj, 1)
        for _ in range(STEPS):
            case.step(obj)
        call = (lambda: case.reset(obj, 2)) if which == "reset" else (lambda: case.step(obj))
        try:
            count_lines(call, stop_at)
        except KeyboardInterrupt:
            pass
        else:
            return False, []
        try:  # as if the interrupted call never ran, or refused
            first = _do(case, obj, "step")
        except BrokenStateError as error:
            assert "call reset() to start again" in str(error)
            results = [_do(case, obj, "reset")]  # a reset ends it
            return True, ["broken", *results, *(_do(case, obj, "step") for _ in range(STEPS))]
        return True, ["unchanged", first, *(_do(case, obj, "step") for _ in range(STEPS))]
    finally:
        if hasattr(obj, "close"):
            obj.close()


def _reference(case: Case, path: str) -> list:
    """What an uninterrupted object gives on either path: the step after ``STEPS`` steps
    and the next ones, or a reset there and the steps after it."""
    obj = case.make()
    try:
        case.reset(obj, 1)
        for _ in range(STEPS):
            case.step(obj)
        first = _do(case, obj, "reset" if path == "broken" else "step")
        return [first, *(_do(case, obj, "step") for _ in range(STEPS))]
    finally:
        if hasattr(obj, "close"):
            obj.close()


@pytest.mark.parametrize("which", ["step", "reset"])
@pytest.mark.parametrize("name", list(CASES))
def test_an_interrupt_at_any_line_is_refused_or_harmless(name, which, request):
    case = CASES[name]()
    obj = case.make()
    case.reset(obj, 1)
    for _ in range(STEPS):
        case.step(obj)
    lines = count_lines((lambda: case.reset(obj, 2)) if which == "reset"
                        else (lambda: case.step(obj)))
    if hasattr(obj, "close"):
        obj.close()
    assert lines > 10
    stride = 1 if request.config.getoption("--runslow") else STRIDE
    references = {path: _reference(case, path) for path in ("broken", "unchanged")}
    seen = set()
    for stop_at in range(1, lines + 1, stride):
        interrupted, results = _run(case, which, stop_at)
        assert interrupted, f"line {stop_at} of {lines} was not reached"
        path, results = results[0], results[1:]
        seen.add(path)
        assert same(results, references[path]), (
            f"{name}: interrupted at line {stop_at} of {lines} of {which}(), then {path}: "
            f"the results differ from an uninterrupted run")
    assert "broken" in seen  # the injection reached the changes


def test_a_broken_environment_says_so_on_every_call():
    env = SmoorVectorEnv(4, Rules(), opponents=make_agent("random"))
    env.reset(seed=0)
    lines = count_lines(lambda: env.step(_first_legal(env.action_masks())))
    env.reset(seed=0)
    with pytest.raises(KeyboardInterrupt):
        count_lines(lambda: env.step(_first_legal(env.action_masks())), stop_at=lines // 2)
    for call in (env.action_masks, lambda: env.step(np.zeros(4, np.int64)),
                 lambda: env.restart(np.array([0]))):
        with pytest.raises(BrokenStateError, match=r"SmoorVectorEnv\.\w+\(\): "
                                                   r"KeyboardInterrupt inside step\(\)"):
            call()
    env.reset(seed=0)
    env.step(_first_legal(env.action_masks()))
    env.close()


def test_the_vector_env_lifecycle_is_checked():
    env = SmoorVectorEnv(2, Rules(), opponents=make_agent("random"))
    with pytest.raises(RuntimeError, match=r"action_masks\(\) before the first reset"):
        env.action_masks()
    env.reset(seed=0)
    env.close()
    for call in (env.action_masks, lambda: env.step(np.zeros(2, np.int64)),
                 lambda: env.reset(seed=0)):
        with pytest.raises(RuntimeError, match="after close"):
            call()
