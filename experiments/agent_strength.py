"""The agents' ladder: each agent against the next weaker one, head to head, for every
rule set and player count, with paired 95% intervals and decision times.

For each rule set, player count and adjacent pair (weaker, stronger) of ``--ladder``
(default random < greedy < mc < ismcts), a table seats the two agents in turn
(stronger, weaker, stronger, ...; with partners the two teams), and plays every deal
once per rotation of that line-up around the table (the same cards and dealer each
time), so both agents play every seat of every deal. The reported *advantage* is the
stronger agent's mean points per round less the weaker one's (Hearts: the weaker
one's penalty points less the stronger one's), so positive means the ladder holds.
One sample per deal (averaged over its rotations and the agent's seats): the samples
are independent and the interval is paired, a t interval over deals. Every game
is a single round (``target_score=None``; so Cupid's Arrow, which needs a match, is
not in the ladder: ``smoor-bench --matches`` plays it, with ``--rule-options`` too).

Decision times: every agent of the ladder (the policies too), one decision
at a time (B = 1, as in the PettingZoo environment), against greedy seats, over the
decisions with more than one legal action: median and 95th percentile per rule set.

    python -m experiments.agent_strength                       # defaults (~1 hour, 2 workers)
    python -m experiments.agent_strength --deals 8 --rule-sets hearts --players 4
    python -m experiments.agent_strength --rule-sets hearts --rule-options queen_breaks_hearts=true

``--rule-options`` sets rule flags on every table (and on the timed games) beyond the
presets, e.g. Hearts' queen options; an unknown flag, a value other than true/false, a
flag the preset sets or already has, or an impossible combination is refused before
anything is played; so is one that makes another preset (``hearts`` with
``passing=false``: use ``hearts_no_passing``). Each row and timing records the rules it
played (``Rules.to_dict``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tyro

from agents import make_agent, parse_agent
from agents.evaluation.backends import finished_units
from agents.evaluation.duplicate import rotation_seating
from agents.evaluation.rule_options import check_rule_tables, parse_rule_options, rules_with
from agents.evaluation.runs import code_fingerprint, sigterm_interrupts
from agents.evaluation.stats import mean_interval
from smoor_env import PRESETS, Engine, Rules
from smoor_env.envs.agent_loop import play_agents
from smoor_env.observation import observe


@dataclass
class Args:
    ladder: list[str] = field(default_factory=lambda: ["random", "greedy", "mc", "ismcts"])
    """agent specs from the weakest to the strongest (name:key=value,...)"""
    rule_sets: list[str] = field(default_factory=lambda: [
        "smoorverliefd", "trump_hearts", "bidding", "partners", "pip_scoring", "hearts",
        "hearts_no_passing"])
    """rule sets (names of smoor_env.PRESETS; partners: 4 players only)"""
    rule_options: list[str] = field(default_factory=list)
    """rule flags set on every rule set, as field=true or field=false (flags the agents
    see in the observation, not set by the preset), e.g. queen_never_first_trick=true"""
    players: list[int] = field(default_factory=lambda: [3, 4, 5])
    """player counts"""
    deals: int = 40
    """deals per table (each played once per rotation of the line-up)"""
    batch: int = 64
    """games played at once (the agents act on all their decisions in one batch)"""
    workers: int = 2
    """worker processes (results do not depend on it: every table has its own seeds)"""
    timing_decisions: int = 60
    """decisions timed one at a time (B = 1) per agent and rule set (0: none)"""
    seed: int = 0
    """seed of the deals and of the agents' generators"""
    out: str = "results/agent_strength.json"
    """where to write the results (JSON)"""

    def __post_init__(self) -> None:
        for name in ("deals", "batch", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be at least 1, got {getattr(self, name)}")
        if self.timing_decisions < 0:
            raise ValueError("--timing-decisions must be >= 0")
        if len(self.ladder) < 2:
            raise ValueError("--ladder needs at least two agents")
        counts = sorted({*self.players, *([4] if self.timing_decisions else [])})  # timed at 4
        check_rule_tables(self.rule_sets, counts, False, parse_rule_options(self.rule_options))


def interval(samples: np.ndarray) -> dict:
    """Mean with its 95% t interval over independent samples (``agents.evaluation.stats``)."""
    mean, low, high = mean_interval(samples)
    return {"mean": mean, "low": low, "high": high, "half_width": (high - low) / 2,
            "n": len(samples)}


def play_rounds(rules: Rules, lineup: list[str], deals: int, seed: int, agents: dict,
                batch: int) -> np.ndarray:
    """Points (deals, rotations, P) of line-up position k (not seat) in each game.

    Game (deal d, rotation r) seats position ``(s + r) mod P`` of ``lineup`` at seat s
    (``agents.evaluation.duplicate.rotation_seating``); every rotation of a deal has the
    same cards and dealer (same game id).
    """
    p = rules.num_players
    rotations = p
    total = deals * rotations
    # (G,) deal and rotation of each game, (G, P) line-up position at each seat
    deal_of, rot_of, position_at = rotation_seating(np.tile(np.arange(p), (deals, 1)), p)
    points = np.zeros((total, p))
    rngs = [np.random.default_rng([seed, i]) for i in range(len(agents))]
    index_of = {name: i for i, name in enumerate(agents)}  # name -> index in agents
    lineup_index = np.array([index_of[name] for name in lineup])  # (P,)
    for start in range(0, total, batch):
        games = np.arange(start, min(start + batch, total))
        n = len(games)
        engine = Engine(rules, n)
        engine.reset(seed, game_ids=deal_of[games])
        play_agents(engine, list(agents.values()), lineup_index[position_at[games]], rngs)
        st = engine.state
        # position k sits at seat (k - r) mod P
        by_position = np.take_along_axis(st.round_points, (np.arange(p)[None, :]
                                                           - rot_of[games][:, None]) % p, axis=1)
        points[games] = by_position
    return points.reshape(deals, rotations, p)


def tables(args: Args) -> list[dict]:
    """Every (rule set, player count, adjacent pair) table to play, with its seed."""
    jobs, options = [], parse_rule_options(args.rule_options)
    for r, rule_set in enumerate(args.rule_sets):
        for p in args.players:
            if p not in PRESETS[rule_set].players:  # partners: 4 only
                continue
            for k in range(len(args.ladder) - 1):
                jobs.append({"rule_set": rule_set, "players": p,
                             "rule_options": options,
                             "weaker": args.ladder[k],
                             "stronger": args.ladder[k + 1],
                             "seed": int(np.random.SeedSequence([args.seed, r, p, k])
                                         .generate_state(1)[0])})
    return jobs


def play_table(job: dict, deals: int, batch: int) -> dict:
    """One ladder table: the stronger agent's advantage over the weaker, per deal."""
    t0 = time.perf_counter()
    rules = rules_with(job["rule_set"], job["players"], False, job["rule_options"])
    p = rules.num_players
    names = ("stronger", "weaker")
    agents = {role: make_agent(name, **options) for role, (name, options) in
              zip(names, map(parse_agent, (job["stronger"], job["weaker"])), strict=True)}
    lineup = [names[k % 2] for k in range(p)]
    pts = play_rounds(rules, lineup, deals, job["seed"], agents, batch)  # (deals, rot, P)
    mean = {role: pts[:, :, [k for k in range(p) if lineup[k] == role]].mean(axis=(1, 2))
            for role in names}  # (deals,) each
    sign = -1.0 if rules.is_hearts else 1.0
    return {**job, "rules": rules.to_dict(), "deals": deals,
            "lineup": [job[role] for role in lineup],
            "games": int(pts.shape[0] * pts.shape[1]), "seconds": time.perf_counter() - t0,
            "points_stronger": interval(mean["stronger"]),
            "points_weaker": interval(mean["weaker"]),
            "advantage": interval(sign * (mean["stronger"] - mean["weaker"]))}


def decision_times(spec: str, rule_set: str, decisions: int, seed: int,
                   rule_options: dict | None = None) -> dict:
    """Median and 95th percentile (ms) of one agent's decisions with a choice, B = 1, at
    4 players (``rule_options``: fields set on the preset, as in the tables)."""
    name, options = parse_agent(spec)
    agent, others = make_agent(name, **options), make_agent("greedy")
    rules = rules_with(rule_set, 4, False, rule_options or {})
    rng = np.random.default_rng(seed)
    engine = Engine(rules, 1)
    times: list[float] = []
    game = 0
    engine.reset(seed + 1)  # warm-up (allocations and caches): untimed
    agent.act({"observation": observe(engine, engine.state.current_player),
               "action_mask": engine.legal_mask}, rng)
    while len(times) < decisions:
        engine.reset(seed, game_ids=[game])
        game += 1
        while not engine.state.match_over[0] and len(times) < decisions:
            obs = {"observation": observe(engine, engine.state.current_player),
                   "action_mask": engine.legal_mask}
            if engine.state.current_player[0] == 0 and obs["action_mask"].sum() > 1:
                t0 = time.perf_counter()
                action = agent.act(obs, rng)
                times.append(time.perf_counter() - t0)
            else:
                action = others.act(obs, rng)
            engine.step(action)
    ms = np.array(times) * 1e3
    return {"agent": spec, "rule_set": rule_set, "rule_options": rule_options or {},
            "rules": rules.to_dict(), "players": 4, "decisions": len(ms),
            "median_ms": float(np.median(ms)), "p95_ms": float(np.percentile(ms, 95))}


def _ci(x: dict) -> str:
    return f"{x['mean']:+6.2f} [{x['low']:+6.2f}, {x['high']:+6.2f}]"


def format_row(row: dict) -> str:
    return (f"{row['rule_set']:15s} {row['players']}p  {row['stronger']:>8s} - "
            f"{row['weaker']:8s} {_ci(row['advantage'])}  ({row['seconds']:.0f} s)")


def main(argv: list[str] | None = None) -> dict:
    args = tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0])
    rule_options = parse_rule_options(args.rule_options)  # checked by Args
    for spec in args.ladder:
        name, options = parse_agent(spec)
        make_agent(name, **options)
    code = code_fingerprint()  # of the code that plays, taken before it does
    t0 = time.perf_counter()
    jobs = tables(args)
    print("advantage of the stronger agent, points per round [95% paired interval]; "
          "Hearts: penalty points saved", flush=True)
    if rule_options:
        print("every rule set with " + ", ".join(f"{k}={v}" for k, v in rule_options.items()),
              flush=True)
    timing_jobs = [(spec, rule_set) for rule_set in args.rule_sets for spec in args.ladder
                   if args.timing_decisions]

    def play(kind: str, k: int) -> dict:
        """One unit: a ladder table, or one agent's decision times."""
        if kind == "table":
            return play_table(jobs[k], args.deals, args.batch)
        spec, rule_set = timing_jobs[k]
        return decision_times(spec, rule_set, args.timing_decisions, args.seed, rule_options)

    units = [*(("table", k) for k in range(len(jobs))),
             *(("time", k) for k in range(len(timing_jobs)))]
    done: dict[tuple[str, int], dict] = {}
    printed = 0
    # The shared pool: Ctrl-C or SIGTERM stops the workers too.
    with contextlib.closing(finished_units(units, play, args.workers)) as finished:
        for unit, result in finished:
            done[unit] = result
            while ("table", printed) in done:  # in job order: the workers change nothing
                print(format_row(done[("table", printed)]), flush=True)
                printed += 1
    rows = [done[("table", k)] for k in range(len(jobs))]
    timing = [done[("time", k)] for k in range(len(timing_jobs))]
    for t in timing:
        print(f"decision time {t['agent']:8s} {t['rule_set']:15s} 4p: median "
              f"{t['median_ms']:6.1f} ms, 95th percentile {t['p95_ms']:6.1f} ms", flush=True)
    summary = {
        "args": dataclasses.asdict(args),
        "command": " ".join([os.path.basename(sys.executable), "-m",
                             "experiments.agent_strength",
                             *(sys.argv[1:] if argv is None else argv)]),
        "interval": "paired t interval over deals, one sample per deal (agents.evaluation.stats)",
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__},
        "code": code,
        "seconds": time.perf_counter() - t0,
        "ladder": rows,
        "decision_time": timing,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(summary, indent=1))
    os.replace(tmp, out)
    print(f"wrote {out} ({summary['seconds']:.0f} s)")
    return summary


if __name__ == "__main__":
    try:
        with sigterm_interrupts():
            main()
    except KeyboardInterrupt:  # nothing is written before the end: nothing is kept
        print("\npython -m experiments.agent_strength: interrupted", file=sys.stderr)
        sys.exit(130)
