"""Environment speed: PettingZoo AEC steps/s and native vector-environment learner steps/s.

* AEC: one game at a time, an observation (``env.last()``) before every action,
  uniformly random legal actions, whole matches of 4-player Smoorverliefd.
* Self-play: ``SelfPlayVectorEnv`` decisions/s (every seat a learner), float32 and
  int8 observations, the acting seats' gathered (N, D) or every seat's (N, P, D) as the
  env keeps them (``all_seats``); and the vector env with greedy opponents
  (``act_state``).
* Vector: ``SmoorVectorEnv`` with random opponents; every learner step returns
  observations and masks for all sub-environments; reported per learner step
  and per action of any seat (plies), over the whole loop and counting only the
  time inside ``step()`` (without the learner's own random choice), with
  ``copy=True`` (a new observation array per step, the default) and
  ``copy=False`` (the environment's own array, for callers that copy it into a
  rollout buffer anyway).
* Workers: ``SmoorVectorEnv(num_workers=k)`` (``copy=False``) and the SB3
  adapter (``make_sb3_vec_env(..., num_workers=k)``, which copies and restarts
  ended games in the same step; if SB3 is installed) at each ``--num-envs``,
  for each ``--workers`` count and observation dtype (float32 and compact
  int8); the configurations take turns, ``--repeats`` rounds, and each round's
  k-worker figure is divided by the same round's one-worker figure (the
  scaling), so that a machine shared with other jobs slows both sides of a
  ratio alike. Besides wall-clock steps/s, the CPU time per learner step of the
  learner's process (inside ``step()``, and inside its own block of games) and
  of each worker is read (``/proc``), and what a machine with a free core per
  process would give is estimated from it: N / (the slower of the learner's
  block and the busiest worker + the learner's CPU time outside its block).
* OpenSpiel's 4-player ``hearts`` (the ``anchor`` extra), one game at a time in a
  Python loop, ``information_state_tensor`` (its Hearts has no other) of the player to
  act before every action, random legal actions and chance outcomes: the loop a
  researcher would write on OpenSpiel; beside it the same Hearts through our AEC env
  (the same loop as above) and the vector env with greedy opponents, and their ratios,
  in the same run.
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
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pettingzoo
import tyro

from agents import RandomAgent, make_agent
from smoor_env import Rules, SelfPlayVectorEnv, env, preset, raw_env
from smoor_env.envs.gym_env import SmoorVectorEnv


@dataclass
class Args:
    seconds: float = 2.0
    """minimum measuring time per row (at least one episode or step is always measured)"""
    num_envs: list[int] = field(default_factory=lambda: [1024, 8192])
    """sub-environment counts of the vector-environment rows"""
    workers: list[int] = field(default_factory=lambda: [1, 2])
    """worker-process counts of the worker rows (1 = in the learner's process)"""
    repeats: int = 3
    """rounds of the worker rows (the configurations take turns in each round)"""
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


def random_legal_steps(envs: Any, seconds: float, seed: int) -> tuple[int, float, float]:
    """Reset ``envs`` and step it with a random legal action per game (from
    ``info["action_mask"]``) for at least ``seconds`` and one step; returns (steps, wall
    seconds, seconds inside ``step()``: without the random choice, an argmax over
    (N, 70) draws, as a policy's forward pass would be left out)."""
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
    return steps, time.perf_counter() - start, in_step


def openspiel_steps_per_second(seconds: float, seed: int) -> dict:
    """OpenSpiel's 4-player Hearts in a per-game Python loop: the acting player's
    information-state tensor, then a random legal action (chance outcomes drawn likewise)."""
    import pyspiel

    game = pyspiel.load_game("hearts")
    rng = np.random.default_rng(seed)
    steps, episodes = 0, 0
    start = time.perf_counter()
    while episodes == 0 or time.perf_counter() - start < seconds:
        state = game.new_initial_state()
        episodes += 1
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[int(rng.random() * len(outcomes))][0])
                continue
            state.information_state_tensor(state.current_player())
            legal = state.legal_actions()
            state.apply_action(legal[int(rng.random() * len(legal))])
            steps += 1
    elapsed = time.perf_counter() - start
    return {"steps_per_s": steps / elapsed, "steps_per_episode": steps / episodes}


def vector_steps_per_second(num_envs: int, seconds: float, seed: int, copy: bool,
                            opponent: str = "random", rules: Rules | None = None) -> dict:
    envs = SmoorVectorEnv(num_envs=num_envs, rules=rules or Rules(),
                          opponents=make_agent(opponent), copy=copy)
    steps, elapsed, in_step = random_legal_steps(envs, seconds, seed)
    players = envs.rules.num_players
    return {"learner_steps_per_s": steps * num_envs / elapsed,
            "plies_per_s": steps * num_envs * players / elapsed,
            "learner_steps_per_s_in_step": steps * num_envs / in_step}


def selfplay_steps_per_second(num_envs: int, seconds: float, seed: int,
                              obs_dtype: str, all_seats: bool = False,
                              rules: Rules | None = None) -> dict:
    """``SelfPlayVectorEnv``: decisions/s (every seat a learner), observations and masks
    every step, a random legal action per game (left out of the in-step figure); with
    ``all_seats`` the (N, P, D) buffer of every seat's observation, not gathered."""
    envs = SelfPlayVectorEnv(num_envs, rules or Rules(), obs_dtype=obs_dtype, copy=False,
                             all_seats=all_seats)
    steps, elapsed, in_step = random_legal_steps(envs, seconds, seed)
    return {"decisions_per_s": steps * num_envs / elapsed,
            "decisions_per_s_in_step": steps * num_envs / in_step}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _CpuTimer:
    """Wraps a block's methods (instance attributes) to add up the CPU seconds the
    learner's process spends in its own block of games."""

    def __init__(self, block: Any) -> None:
        self.seconds = 0.0
        for name in ("step", "restart", "masks", "observations"):
            setattr(block, name, self._timed(getattr(block, name)))

    def _timed(self, method: Any) -> Any:
        def timed(*args: Any) -> Any:
            start = time.process_time()
            try:
                return method(*args)
            finally:
                self.seconds += time.process_time() - start
        return timed


def _make_envs(api: str, num_envs: int, num_workers: int, obs_dtype: str) -> Any:
    """The vector env of a worker row: ``SmoorVectorEnv`` (``copy=False``) or the SB3
    adapter (``make_sb3_vec_env``, which copies), random opponents, 4-player Smoorverliefd."""
    options = {"opponents": RandomAgent(), "obs_dtype": obs_dtype, "num_workers": num_workers}
    if api == "sb3":
        from smoor_env.envs.sb3 import make_sb3_vec_env  # SB3 is optional (the rl extra)

        return make_sb3_vec_env("smoor_env/Smoorverliefd-v1", num_envs, monitor=False,
                                rules=Rules(), **options)
    return SmoorVectorEnv(num_envs=num_envs, rules=Rules(), copy=False, **options)


def worker_steps_per_second(api: str, num_envs: int, num_workers: int, obs_dtype: str,
                            seconds: float, seed: int) -> dict:
    """Learner steps/s of the ``api`` (``"gymnasium"`` or ``"sb3"``) vector env with
    ``num_workers``, random opponents and learner, wall clock and from CPU times (see the
    module docstring)."""
    envs = _make_envs(api, num_envs, num_workers, obs_dtype)
    vector_env = envs.vector_env if api == "sb3" else envs
    try:
        rng = np.random.default_rng(seed)
        if api == "sb3":
            envs.seed(seed)
            envs.reset()

            def step(actions: np.ndarray) -> np.ndarray:
                envs.step(actions)
                return envs.action_masks()
        else:
            _, info = envs.reset(seed=seed)

            def step(actions: np.ndarray) -> np.ndarray:
                return envs.step(actions)[4]["action_mask"]
        pool = vector_env._pool
        pids = [p.pid for p in pool.processes] if pool is not None else []
        block = _CpuTimer(pool._local) if pool is not None else None
        workers_before = [_cpu_seconds(pid) for pid in pids]
        mask = vector_env.action_masks()
        steps, in_step, cpu_in_step = 0, 0.0, 0.0
        start = time.perf_counter()
        while steps == 0 or time.perf_counter() - start < seconds:
            actions = np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)
            t0, c0 = time.perf_counter(), time.process_time()
            mask = step(actions)
            in_step += time.perf_counter() - t0
            cpu_in_step += time.process_time() - c0
            steps += 1
        elapsed = time.perf_counter() - start
        workers = [_cpu_seconds(pid) - before
                   for pid, before in zip(pids, workers_before, strict=True)]
    finally:
        envs.close()
    # A free core for each process: a step lasts as long as the slower of the learner's
    # own block and the busiest worker, plus the learner's part outside its block (the
    # actions in, the shared outputs read, the pipes); in one process, its CPU time.
    own_block = block.seconds if block is not None else cpu_in_step
    outside_block = cpu_in_step - own_block
    free_cores = max([own_block, *workers]) + outside_block
    return {"learner_steps_per_s": steps * num_envs / elapsed,
            "learner_steps_per_s_in_step": steps * num_envs / in_step,
            "learner_cpu_ms_per_step": 1e3 * cpu_in_step / steps,
            "learner_outside_block_cpu_ms_per_step": 1e3 * outside_block / steps,
            "worker_cpu_ms_per_step": [1e3 * w / steps for w in workers],
            "learner_steps_per_s_free_cores": steps * num_envs / free_cores}


def worker_rows(args: Args) -> list[dict]:
    """The worker table: every (api, num_envs, workers, dtype) in turn, ``repeats``
    rounds; medians, and each round's scaling over the same round's one-worker figure."""
    apis = ["gymnasium"] + (["sb3"] if _has_sb3() else [])
    configs = [(api, n, k, dtype) for api in apis for n in args.num_envs
               for dtype in ("float32", "int8") for k in args.workers]
    runs: dict[tuple, list[dict]] = {c: [] for c in configs}
    for _ in range(args.repeats):
        for config in configs:
            runs[config].append(worker_steps_per_second(*config, args.seconds, args.seed))
    rows = []
    keys = ("learner_steps_per_s", "learner_steps_per_s_in_step",
            "learner_steps_per_s_free_cores")
    for (api, n, k, dtype), results in runs.items():
        name = "SmoorVectorEnv" if api == "gymnasium" else "make_sb3_vec_env"
        row = {"env": f"{name} num_envs={n} obs_dtype={dtype} num_workers={k}"}
        for key in (*keys, "learner_cpu_ms_per_step", "learner_outside_block_cpu_ms_per_step"):
            row[key] = float(np.median([r[key] for r in results]))
        row["worker_cpu_ms_per_step"] = np.median(
            [r["worker_cpu_ms_per_step"] for r in results], axis=0).tolist()
        one = runs.get((api, n, 1, dtype))
        if one is not None:
            for key in keys:  # round by round, then the median
                row[f"scaling_{key}"] = float(np.median(
                    [r[key] / o[key] for r, o in zip(results, one, strict=True)]))
        rows.append(row)
        print(f"{name}, num_envs={n:6d}, {dtype:7}, {k} worker(s): "
              f"{row['learner_steps_per_s']:10,.0f} learner steps/s "
              f"({row['learner_steps_per_s_in_step']:,.0f} in step(); "
              f"{row['learner_steps_per_s_free_cores']:,.0f} with a free core each)"
              + (f"; x{row['scaling_learner_steps_per_s']:.2f} wall, "
                 f"x{row['scaling_learner_steps_per_s_free_cores']:.2f} free cores, "
                 f"over 1 worker" if one is not None and k != 1 else ""), flush=True)
    return rows


def _has_sb3() -> bool:
    """Whether Stable-Baselines3 (the ``rl`` extra) is installed; its rows need it."""
    try:
        importlib.import_module("stable_baselines3")
    except ImportError:
        print("the SB3 adapter's rows not measured (stable_baselines3 missing: the rl extra)")
        return False
    return True


def openspiel_rows(args: Args) -> list[dict]:
    """4-player Hearts four ways in the same run: OpenSpiel's per-game loop (every
    decision with an observation), our AEC env with the same loop, the self-play vector
    env (every decision with an observation, like OpenSpiel's loop) and the vector env
    with greedy opponents (learner steps) at the largest --num-envs, and the ratios of
    the last three to the first."""
    try:
        import pyspiel  # noqa: F401
    except ImportError as error:
        print(f"OpenSpiel's hearts not measured ({error}: the anchor extra)")
        return []
    theirs = openspiel_steps_per_second(args.seconds, args.seed)
    ours = aec_steps_per_second(lambda: env(rules=preset("hearts", 4)), args.seconds,
                                args.seed)
    n = max(args.num_envs)
    selfplay = selfplay_steps_per_second(n, args.seconds, args.seed, "float32",
                                         rules=preset("hearts", 4))
    vector = vector_steps_per_second(n, args.seconds, args.seed, False, "greedy",
                                     preset("hearts", 4))
    rows = [{"env": "OpenSpiel hearts loop (4 players, information_state_tensor)", **theirs},
            {"env": "smoor_env AEC (4-player Hearts)", **ours},
            {"env": f"SelfPlayVectorEnv num_envs={n} float32 (4-player Hearts)", **selfplay},
            {"env": f"SmoorVectorEnv num_envs={n} copy=False greedy (4-player Hearts)",
             **vector},
            {"env": "ratio smoor_env AEC Hearts / OpenSpiel hearts loop",
             "steps_per_s": ours["steps_per_s"] / theirs["steps_per_s"]},
            {"env": f"ratio SelfPlayVectorEnv num_envs={n} Hearts / OpenSpiel hearts loop",
             "steps_per_s": selfplay["decisions_per_s"] / theirs["steps_per_s"]},
            {"env": f"ratio SmoorVectorEnv num_envs={n} greedy Hearts / OpenSpiel hearts loop",
             "steps_per_s": vector["learner_steps_per_s"] / theirs["steps_per_s"]}]
    print(f"4-player Hearts: OpenSpiel loop {theirs['steps_per_s']:,.0f} steps/s, our AEC "
          f"{ours['steps_per_s']:,.0f} ({rows[4]['steps_per_s']:.2f}x), self-play "
          f"num_envs={n} {selfplay['decisions_per_s']:,.0f} decisions/s "
          f"({rows[5]['steps_per_s']:.0f}x), vector env greedy "
          f"{vector['learner_steps_per_s']:,.0f} learner steps/s "
          f"({rows[6]['steps_per_s']:.0f}x)", flush=True)
    return rows


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
    for n in args.num_envs:  # greedy opponents play on the engine's state (act_state)
        result = vector_steps_per_second(n, args.seconds, args.seed, False, "greedy")
        rows.append({"env": f"SmoorVectorEnv num_envs={n} copy=False greedy", **result})
        print(f"vector env, num_envs={n:6d}, copy=False: "
              f"{result['learner_steps_per_s']:12,.0f} learner steps/s (greedy opponents; "
              f"{result['learner_steps_per_s_in_step']:,.0f} counting only step())", flush=True)
    rows.extend(openspiel_rows(args))
    for n in args.num_envs:
        for dtype in ("float32", "int8"):
            for every in (False, True):
                result = selfplay_steps_per_second(n, args.seconds, args.seed, dtype, every)
                name = f"SelfPlayVectorEnv num_envs={n} {dtype}" + " all_seats" * every
                rows.append({"env": name, **result})
                print(f"self-play, num_envs={n:6d}, {dtype:7}"
                      f"{', all seats' if every else ''}: "
                      f"{result['decisions_per_s']:12,.0f} decisions/s "
                      f"({result['decisions_per_s_in_step']:,.0f} counting only step())",
                      flush=True)
    rows.extend(worker_rows(args))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": dataclasses.asdict(args), "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
