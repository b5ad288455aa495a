"""Masked PPO with RLlib on the PettingZoo environment (the ray extra), single file.

The AEC environment (``smoor_env.raw_env``) goes through RLlib's PettingZoo wrapper
(``ray.rllib.env.wrappers.pettingzoo_env.PettingZooEnv``); observations are renamed to
the keys of RLlib's action-masking example, whose module
(``ActionMaskingTorchRLModule``) adds ``log(mask)`` to the logits. Two set-ups:

- no ``--opponents``: one shared policy plays every seat (self-play);
- ``--opponents greedy random ...``: the policy plays seat 0, this project's agents
  the other seats (as never-trained RLlib modules, ``agents.rllib.FixedAgentModule``).

The checkpoint (``algo.save_to_path``) plays as the ``rllib`` agent:

    python -m experiments.train_rllib --iterations 50 --opponents greedy
    python -m experiments.win_rates --agents rllib:checkpoint=checkpoints/rllib_smoorverliefd_4p \\
        greedy --players 4 --rule-sets smoorverliefd

On a cluster: ``ray start --head`` on one machine, ``ray start --address HEAD:6379`` on
the others, then ``--address auto --env-runners N`` here.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tyro
from gymnasium import spaces
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

from agents import build_agent
from smoor_env import PRESETS, preset


@dataclass
class Args:
    rule_set: str = "smoorverliefd"
    """rule set (a name of smoor_env.PRESETS); single rounds"""
    players: int = 4
    """player count"""
    opponents: list[str] = field(default_factory=list)
    """agent specs in seats 1.. (repeated to fill the table); none: a shared policy in
    every seat"""
    iterations: int = 20
    """training iterations (algo.train() calls)"""
    batch_size: int = 4000
    """environment steps per iteration (train_batch_size_per_learner)"""
    minibatch_size: int = 256
    """PPO minibatch size"""
    epochs: int = 4
    """passes over each batch"""
    hidden: list[int] = field(default_factory=lambda: [256, 256])
    """hidden layer sizes of the policy and value networks"""
    lr: float = 3e-4
    """learning rate"""
    env_runners: int = 0
    """RLlib env runners (0: sample in the driver)"""
    seed: int = 0
    """seed of RLlib, the environments and the fixed agents"""
    address: str = ""
    """Ray cluster to join ("auto" or host:port); default: a local Ray"""
    num_cpus: int = 0
    """CPUs of the local Ray (0: this machine's)"""
    checkpoint: str = ""
    """checkpoint folder (default: checkpoints/rllib_<rule set>_<players>p)"""


class SmoorRLlibEnv(PettingZooEnv):
    """RLlib's PettingZoo wrapper around ``smoor_env.raw_env``, with the observation keys
    of RLlib's masking example: ``{"observations": (D,) float32, "action_mask": (70,)
    float32}``. ``config``: ``{"rule_set": str, "players": int}``."""

    def __init__(self, config: dict[str, Any]) -> None:
        from smoor_env import raw_env

        super().__init__(raw_env(rules=preset(config["rule_set"], config["players"], False)))
        self.observation_spaces = {agent: self._renamed_space(space)
                                   for agent, space in self.observation_spaces.items()}
        self.observation_space = spaces.Dict(self.observation_spaces)

    @staticmethod
    def _renamed_space(space: spaces.Dict) -> spaces.Dict:
        mask = space["action_mask"]
        return spaces.Dict({"observations": space["observation"],
                            "action_mask": spaces.Box(0.0, 1.0, mask.shape, np.float32)})

    @staticmethod
    def _renamed(observations: dict[str, dict]) -> dict[str, dict]:
        return {agent: {"observations": seen["observation"],
                        "action_mask": seen["action_mask"].astype(np.float32)}
                for agent, seen in observations.items()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observations, infos = super().reset(seed=seed, options=options)
        return self._renamed(observations), infos

    def step(self, action: dict[str, int]):
        observations, *rest = super().step(action)
        return (self._renamed(observations), *rest)


def config_for(args: Args):
    """RLlib's ``PPOConfig`` for ``args``."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )

    from agents.rllib import LEARNER, FixedAgentModule

    learner = RLModuleSpec(module_class=ActionMaskingTorchRLModule, model_config={
        "head_fcnet_hiddens": list(args.hidden), "head_fcnet_activation": "relu"})
    modules = {LEARNER: learner}
    fixed_of_seat = {}  # seat -> module id of its fixed agent
    for seat in range(1, args.players if args.opponents else 0):
        spec = args.opponents[(seat - 1) % len(args.opponents)]
        fixed_of_seat[seat] = f"fixed_{spec}"
        modules[f"fixed_{spec}"] = RLModuleSpec(
            module_class=FixedAgentModule, model_config={"agent": spec, "seed": args.seed})

    def policy_mapping_fn(agent_id: str, episode: Any, **kwargs: Any) -> str:
        return fixed_of_seat.get(int(agent_id.rsplit("_", 1)[1]), LEARNER)

    return (
        PPOConfig()
        # RLlib's environment check steps random actions, most of them illegal here.
        .environment(SmoorRLlibEnv, env_config={"rule_set": args.rule_set,
                                                "players": args.players},
                     disable_env_checking=True)
        .env_runners(num_env_runners=args.env_runners)
        .multi_agent(policies=set(modules), policy_mapping_fn=policy_mapping_fn,
                     policies_to_train=[LEARNER])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=modules))
        .training(train_batch_size_per_learner=args.batch_size,
                  minibatch_size=args.minibatch_size, num_epochs=args.epochs, lr=args.lr)
        .debugging(seed=args.seed)
    )


def check_args(args: Args) -> None:
    """Clear errors for values that cannot make a run, before Ray starts."""
    if args.rule_set not in PRESETS:
        raise ValueError(f"unknown rule set {args.rule_set!r}; known: {', '.join(PRESETS)}")
    preset(args.rule_set, args.players, False)
    for name in ("iterations", "batch_size", "minibatch_size", "epochs"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
    if args.env_runners < 0 or args.num_cpus < 0 or args.seed < 0:
        raise ValueError("--env-runners, --num-cpus and --seed must not be negative")
    for spec in args.opponents:
        build_agent(spec)  # an unknown agent or option fails here


def train(args: Args) -> Path:
    """Train, write the checkpoint and a ``training.json`` log beside it; returns the folder."""
    import ray

    check_args(args)
    folder = Path(args.checkpoint or f"checkpoints/rllib_{args.rule_set}_{args.players}p")
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=args.address or None, num_cpus=args.num_cpus or None,
                 include_dashboard=False, log_to_driver=False)
    algo = config_for(args).build_algo()
    log = []
    try:
        for iteration in range(1, args.iterations + 1):
            result = algo.train()
            returns = {agent: float(value) for agent, value in result.get(
                "env_runners", {}).get("agent_episode_returns_mean", {}).items()}
            log.append({"iteration": iteration, "mean_return_per_seat": returns,
                        "env_steps": result.get("num_env_steps_sampled_lifetime")})
            print(f"iteration {iteration}: mean return per seat {returns}")
        algo.save_to_path(str(folder.resolve()))
        (folder / "training.json").write_text(json.dumps(
            {"args": dataclasses.asdict(args), "log": log}, indent=1))
    finally:
        algo.stop()
        if started_here:
            ray.shutdown()
    print(f"wrote {folder} (play it: --agents rllib:checkpoint={folder})")
    return folder


def main(argv: list[str] | None = None) -> None:
    train(tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0]))


if __name__ == "__main__":
    main()
