"""Environment speed: PettingZoo AEC steps/s and native vector-environment learner steps/s.

* AEC: one game at a time, an observation (``env.last()``) before every action,
  uniformly random legal actions, whole matches of 4-player Smoorverliefd.
* Vector: ``SmoorVectorEnv`` with random opponents; every learner step returns
  observations and masks for all sub-environments; reported per learner step
  and per action of any seat (plies), over the whole loop and counting only the
  time inside ``step()`` (without the learner's own random choice), with
  ``copy=True`` (a new observation array per step, the default) and
  ``copy=False`` (the environment's own array, for callers that copy it into a
  rollout buffer anyway).
* PettingZoo's ``texas_holdem_v4`` (rlcard and pygame, in the ``bench`` extra)
  is measured with the same loop in the same run, for comparison; both
  environments also without PettingZoo's standard wrappers (``raw_env``), which
  shows what the wrappers and ``last()`` cost a step.

Results are printed and written to ``results/env_speed.json``.

    python -m experiments.env_speed --seconds 2
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pettingzoo
import tyro

from agents import RandomAgent
from smoor_env import Rules, env, raw_env
from smoor_env.gym_env import SmoorVectorEnv


@dataclass
class Args:
    seconds: float = 2.0
    """minimum measuring time per row (at least one episode or step is always measured)"""
    num_envs: list[int] = field(default_factory=lambda: [1024, 8192])
    """sub-environment counts of the vector-environment rows"""
    seed: int = 0
    """seed of the games and the random actions"""
    out: str = "results/env_speed.json"
    """where to write the results (JSON)"""


def aec_steps_per_second(make, seconds: float, seed: int) -> dict:
    """Random legal play through an AEC environment, reading every observation.

    Returns steps/s over the whole time and over the time outside ``reset()``
    (texas_holdem_v4's episodes last about three steps, so its resets weigh).
    """
    aec = make()
    rng = np.random.default_rng(seed)
    steps, episode, in_reset = 0, 0, 0.0
    start = time.perf_counter()
    while episode == 0 or time.perf_counter() - start < seconds:  # at least one episode
        t0 = time.perf_counter()
        aec.reset(seed=seed + episode)
        in_reset += time.perf_counter() - t0
        episode += 1
        for _ in aec.agent_iter():
            obs, _, termination, truncation, _ = aec.last()
            if termination or truncation:
                aec.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            aec.step(int(legal[int(rng.random() * len(legal))]))  # (rng.choice costs more)
            steps += 1
    elapsed = time.perf_counter() - start
    return {"steps_per_s": steps / elapsed,
            "steps_per_s_without_reset": steps / (elapsed - in_reset),
            "steps_per_episode": steps / episode}


def vector_steps_per_second(num_envs: int, seconds: float, seed: int, copy: bool) -> dict:
    envs = SmoorVectorEnv(num_envs=num_envs, rules=Rules(), opponents=RandomAgent(), copy=copy)
    rng = np.random.default_rng(seed)
    _, info = envs.reset(seed=seed)
    steps, in_step = 0, 0.0
    start = time.perf_counter()
    while steps == 0 or time.perf_counter() - start < seconds:  # at least one step
        mask = info["action_mask"]
        actions = np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)
        t0 = time.perf_counter()
        _, _, _, _, info = envs.step(actions)
        in_step += time.perf_counter() - t0
        steps += 1
    elapsed = time.perf_counter() - start
    players = envs.rules.num_players
    return {"learner_steps_per_s": steps * num_envs / elapsed,
            "plies_per_s": steps * num_envs * players / elapsed,
            # The environment alone: the learner's random choice above (an argmax over
            # (N, 70) draws) is left out, as a policy's forward pass would be.
            "learner_steps_per_s_in_step": steps * num_envs / in_step}


def main(argv: list[str] | None = None) -> None:
    args = tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0])
    rows = []
    ours = aec_steps_per_second(lambda: env(rules=Rules()), args.seconds, args.seed)
    rows.append({"env": "smoor_env AEC (4-player Smoorverliefd)", **ours})
    print(f"AEC, one game, observation every step: {ours['steps_per_s']:12,.0f} steps/s "
          f"({ours['steps_per_s_without_reset']:,.0f} outside reset())", flush=True)
    try:
        importlib.import_module("pettingzoo.classic.rlcard_envs.texas_holdem")
    except ImportError as error:  # rlcard or pygame missing (the bench extra has them)
        print(f"texas_holdem_v4 not measured ({type(error).__name__}: {error})")
    else:
        theirs = aec_steps_per_second(lambda: pettingzoo.make("aec", "classic/texas_holdem-v4"),
                                      args.seconds, args.seed)
        rows.append({"env": "pettingzoo texas_holdem_v4", **theirs})
        print(f"PettingZoo texas_holdem_v4 (same loop): {theirs['steps_per_s']:12,.0f} steps/s "
              f"({theirs['steps_per_s_without_reset']:,.0f} outside reset())", flush=True)
        ratio = ours["steps_per_s"] / theirs["steps_per_s"]
        ratio_play = ours["steps_per_s_without_reset"] / theirs["steps_per_s_without_reset"]
        rows.append({"env": "ratio smoor_env AEC / texas_holdem_v4", "steps_per_s": ratio,
                     "steps_per_s_without_reset": ratio_play})
        print(f"smoor_env AEC / texas_holdem_v4, same run: {ratio:.2f}x "
              f"({ratio_play:.2f}x outside reset())", flush=True)
        # Without PettingZoo's standard wrappers (raw_env): what the wrappers cost each.
        texas_raw = importlib.import_module("pettingzoo.classic.texas_holdem_v4").raw_env
        for name, make in (("smoor_env raw_env", lambda: raw_env(rules=Rules())),
                           ("pettingzoo texas_holdem_v4 raw_env", texas_raw)):
            bare = aec_steps_per_second(make, args.seconds, args.seed)
            rows.append({"env": name, **bare})
            print(f"{name} (no wrappers, same loop): {bare['steps_per_s']:12,.0f} steps/s "
                  f"({bare['steps_per_s_without_reset']:,.0f} outside reset())", flush=True)
    for n in args.num_envs:
        for copy in (True, False):
            result = vector_steps_per_second(n, args.seconds, args.seed, copy)
            rows.append({"env": f"SmoorVectorEnv num_envs={n} copy={copy}", **result})
            print(f"vector env, num_envs={n:6d}, copy={copy!s:5}: "
                  f"{result['learner_steps_per_s']:12,.0f} learner steps/s "
                  f"({result['plies_per_s']:,.0f} plies/s, random opponents; "
                  f"{result['learner_steps_per_s_in_step']:,.0f} counting only step())",
                  flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": dataclasses.asdict(args), "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
