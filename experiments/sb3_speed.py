"""MaskablePPO's environment-side speed: the SB3 adapter against SB3's DummyVecEnv.

sb3-contrib's ``MaskablePPO`` (default ``MlpPolicy``, one torch thread) learns on

* ``make_sb3_vec_env`` (``smoor_env.envs.sb3``): ``--adapter-envs`` games in one batched
  engine, and
* SB3's ``DummyVecEnv`` of ``--single-envs`` ``SmoorEnv`` (one engine per game, stepped
  one after another: what SB3 does with the single-agent environment),

with the same rules, opponents and PPO settings, in the same run. A timing wrapper adds
up the time spent inside the environment (``reset``, ``step`` and ``env_method``, which
is where ``MaskablePPO`` reads the masks); environment-side steps/s are the learner steps
over that time, and the learner's total steps/s (environment and PPO) are reported too.
Results are printed and written to ``results/sb3_speed.json``.

    python -m experiments.sb3_speed --opponents greedy random
"""

from __future__ import annotations

import dataclasses
import json
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
import tyro
from sb3_contrib import MaskablePPO
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper, VecMonitor

from smoor_env.envs.sb3 import make_sb3_vec_env


@dataclass
class Args:
    game: str = "Smoorverliefd"
    """environment id smoor_env/<game>-v1: Smoorverliefd or Hearts"""
    num_players: int = 4
    """number of players"""
    opponents: list[str] = field(default_factory=lambda: ["greedy", "random"])
    """opponent agents: one row pair per name (all other seats play it)"""
    adapter_envs: int = 1024
    """environments (games in one engine) of the adapter"""
    adapter_steps: int = 65_536
    """learner steps MaskablePPO takes on the adapter"""
    single_envs: int = 8
    """SmoorEnv instances in SB3's DummyVecEnv"""
    single_steps: int = 4_096
    """learner steps MaskablePPO takes on the DummyVecEnv"""
    rollout: int = 16_384
    """learner steps per PPO rollout (n_steps x environments), the same for both"""
    seed: int = 0
    """seed of the deals, opponents and PPO"""
    out: str = "results/sb3_speed.json"
    """where to write the results (JSON)"""


class TimedVecEnv(VecEnvWrapper):
    """Adds up the wall time spent inside the wrapped ``VecEnv`` (seconds in ``.seconds``)."""

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        self.seconds = 0.0

    def _timed(self, call, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start

    def reset(self):
        return self._timed(self.venv.reset)

    def step_wait(self):
        return self._timed(self.venv.step_wait)

    def step_async(self, actions) -> None:
        self._timed(self.venv.step_async, actions)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs):
        return self._timed(self.venv.env_method, method_name, *method_args, indices=indices,
                           **method_kwargs)


def measure(env: VecEnv, steps: int, args: Args) -> dict:
    """MaskablePPO learns ``steps`` learner steps on ``env``; environment and total speed."""
    timed = TimedVecEnv(env)
    model = MaskablePPO("MlpPolicy", timed, n_steps=max(1, args.rollout // env.num_envs),
                        batch_size=min(1024, args.rollout), n_epochs=2, seed=args.seed,
                        verbose=0)
    start = time.perf_counter()
    model.learn(steps)
    wall = time.perf_counter() - start
    return {"num_envs": env.num_envs, "learner_steps": model.num_timesteps,
            "env_seconds": round(timed.seconds, 2), "wall_seconds": round(wall, 2),
            "env_steps_per_s": round(model.num_timesteps / timed.seconds, 1),
            "total_steps_per_s": round(model.num_timesteps / wall, 1)}


def main(argv: list[str] | None = None) -> dict:
    args = tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0])
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=UserWarning)
    env_id = f"smoor_env/{args.game}-v1"
    options = {"num_players": args.num_players, "target_score": None}
    results: dict[str, Any] = {"args": dataclasses.asdict(args), "rows": []}
    for opponents in args.opponents:
        adapter = make_sb3_vec_env(env_id, args.adapter_envs, opponents=opponents, **options)

        def single(opponents: str = opponents) -> gym.Env:
            return Monitor(gym.make(env_id, opponents=opponents, **options))

        dummy = VecMonitor(DummyVecEnv([single] * args.single_envs))
        fast = measure(adapter, args.adapter_steps, args)
        slow = measure(dummy, args.single_steps, args)
        row = {"opponents": opponents, "adapter": fast, "dummy_vec_env": slow,
               "env_ratio": round(fast["env_steps_per_s"] / slow["env_steps_per_s"], 1),
               "total_ratio": round(fast["total_steps_per_s"] / slow["total_steps_per_s"], 1)}
        results["rows"].append(row)
        print(f"{opponents:>8} opponents: environment-side learner steps/s "
              f"adapter ({fast['num_envs']} envs) {fast['env_steps_per_s']:,.0f}, "
              f"DummyVecEnv ({slow['num_envs']} SmoorEnv) {slow['env_steps_per_s']:,.0f}: "
              f"{row['env_ratio']}x; with PPO {fast['total_steps_per_s']:,.0f} against "
              f"{slow['total_steps_per_s']:,.0f}: {row['total_ratio']}x", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
