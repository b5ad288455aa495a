"""A guard against slow-downs: the numpy calls per learner step (the vector env, random
opponents) and per self-play step stay within a stated bound.

At large batches the cost of a step is its number of numpy calls times a few
microseconds each (``docs/speed.md``), so a change that adds calls to the hot path
shows here before it shows in a benchmark. A "numpy call" is a C-level call the
profiler sees of a numpy function, ufunc or array method. The counts are
deterministic for a seed; the bounds are the counts measured on 2026-12-03 plus 20%:
raise them only with a reason (and a speed A/B) in the commit.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from agents import make_agent
from smoor_env import SelfPlayVectorEnv, preset
from smoor_env.envs.gym_env import SmoorVectorEnv

STEPS = 100
#: (measured 2026-12-03, 256 games, 4 players, whole matches) per step.
BOUNDS = {
    ("vector", "smoorverliefd"): 822,  # measured 685
    ("vector", "hearts"): 856,  # measured 713
    ("selfplay", "smoorverliefd"): 92,  # measured 76
    ("selfplay", "hearts"): 131,  # measured 109
}


def numpy_calls_per_call(call, n: int) -> float:
    """Mean numpy calls of ``call()`` over ``n`` calls."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event != "c_call":
            return
        owner = getattr(arg, "__self__", None)
        if ((getattr(arg, "__module__", None) or "").startswith("numpy")
                or isinstance(arg, np.ufunc) or isinstance(owner, np.ndarray | np.generic)
                or type(arg).__name__ == "_ArrayFunctionDispatcher"):
            count += 1

    sys.setprofile(profile)
    try:
        for _ in range(n):
            call()
    finally:
        sys.setprofile(None)
    return count / n


@pytest.mark.parametrize("kind, game", list(BOUNDS))
def test_numpy_calls_per_step_stay_within_their_bound(kind, game):
    rules = preset(game, 4, matches=True)
    if kind == "vector":
        env = SmoorVectorEnv(256, rules, opponents=make_agent("random"))
    else:
        env = SelfPlayVectorEnv(256, rules)
    env.reset(seed=0)
    calls = numpy_calls_per_call(lambda: env.step(np.argmax(env.action_masks(), 1)), STEPS)
    assert calls <= BOUNDS[kind, game], (
        f"{kind} {game}: {calls:.0f} numpy calls a step, over the bound "
        f"{BOUNDS[kind, game]}")
    assert calls >= 0.5 * BOUNDS[kind, game]  # the count still sees the calls
