"""Labels for imitation: a teacher's decisions (and its values of every searched action) in
the learner's seat against an opponent pool, and the soft targets learnt from them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import build_agent
from agents.ppo import training_rules
from agents.training.opponents import PoolEnv
from smoor_env.envs.gym_env import RESTART_ACTION
from smoor_env.observation import OBSERVATION_SIZE, compact_scale


def label_decisions(args: Any, members: list, seed: int,
                    obs_size: int = OBSERVATION_SIZE) -> dict[str, np.ndarray]:
    """``args.imitate``'s decisions in the learner's seat against the opponent pool
    ``members`` (``args``: ``experiments.train_ppo.Args`` or anything with its fields).

    Returns ``"observations"`` (D, obs_size) int8 (compact: times ``compact_scale()``
    gives the float observation; the first ``obs_size`` features), ``"masks"`` (D, 70) bool,
    ``"actions"`` (D,) int64 the teacher's choices (also with ``args.imitate_play``,
    whose agent then makes the moves) and ``"values"`` (D, 70) float32 its
    estimated value of every action it searched (a teacher with ``evaluate``, as ``mc``;
    NaN elsewhere: illegal, forced, heuristic phases, or a teacher without values).
    With ``args.imitate_data`` the labels are read from that ``.npz`` file if it exists,
    else written there, so that several runs share one labelling; several files are read
    and concatenated in the order given.
    """
    paths = [Path(name) for name in args.imitate_data]
    if paths and all(path.exists() for path in paths):
        files = []
        for path in paths:
            with np.load(path) as stored:
                files.append({key: stored[key] for key in stored.files})
            width = files[-1]["observations"].shape[1]
            if width < obs_size:
                raise ValueError(f"{path} holds observations of {width} features, the "
                                 f"network reads {obs_size}: label again, or train on "
                                 f"--obs-size {width}")
            files[-1]["observations"] = files[-1]["observations"][:, :obs_size]
        return {key: np.concatenate([data[key] for data in files]) for key in files[0]}
    if len(paths) > 1:
        missing = [str(path) for path in paths if not path.exists()]
        raise FileNotFoundError(f"labels to read are missing: {missing} (labelling writes "
                                f"one file: give a single --imitate-data)")
    path = paths[0] if paths else None
    teacher = build_agent(args.imitate)
    player = build_agent(args.imitate_play) if args.imitate_play else None
    rng = np.random.default_rng(seed)
    to_compact = 1.0 / compact_scale()  # (OBSERVATION_SIZE,)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("observations", "masks", "actions",
                                                           "values")}
    tables = [PoolEnv(training_rules(dataclasses.asdict(args), players), args.num_envs,
                      args.learner_seat, members, seed + 7919 * (offset + 1), rng, "round")
              for offset, players in enumerate(args.num_players)]
    taken = saved = 0
    while taken < args.imitate_decisions:
        # The tables take turns (one step each), so that every player count gets the same
        # number of steps and an interrupted labelling equals a shorter complete one.
        for table in tables:
            live = ~table.resetting  # (N,)
            chosen = np.full(args.num_envs, RESTART_ACTION, np.int64)
            mask = table.info["action_mask"][live]  # (L, 70)
            view = {"observation": table.obs[live], "action_mask": mask}
            if hasattr(teacher, "evaluate"):
                chosen[live], values = teacher.evaluate(view, rng)
            else:
                chosen[live] = teacher.act(view, rng)
                values = np.full(mask.shape, np.nan)
            parts["observations"].append(np.rint(table.obs[live] * to_compact).astype(np.int8))
            parts["masks"].append(mask)
            parts["actions"].append(chosen[live])
            parts["values"].append(values.astype(np.float32))
            taken += int(live.sum())
            if player is not None:  # DAgger: the teacher labels, the player moves
                chosen[live] = player.act(view, rng)
            table.step(chosen)
        if path is not None and (taken - saved >= args.imitate_save_every
                                 or taken >= args.imitate_decisions):
            # Written as it goes: a labelling stopped early leaves a usable file.
            saved = taken
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.stem + ".partial.npz")
            np.savez(partial, **{key: np.concatenate(value) for key, value in parts.items()})
            partial.replace(path.with_name(path.stem + ".labelling.npz")
                            if taken < args.imitate_decisions else path)
    data = {key: np.concatenate(value) for key, value in parts.items()}
    data["observations"] = data["observations"][:, :obs_size]
    return data


def soft_targets(values: np.ndarray, actions: np.ndarray, temperature: float) -> np.ndarray:
    """(D, 70) float32 target distributions: softmax(values / temperature) over the actions
    the teacher searched ((D, 70) values, NaN elsewhere), or one-hot on the teacher's
    action ((D,) ``actions``) where it searched nothing or ``temperature`` is 0."""
    searched = ~np.isnan(values)  # (D, 70)
    rows = searched.any(axis=1) & (temperature > 0)  # (D,)
    targets = np.zeros(values.shape, np.float32)
    targets[np.arange(len(actions)), actions] = 1.0
    scaled = np.where(searched[rows], values[rows] / max(temperature, 1e-9), -np.inf)
    scaled -= scaled.max(axis=1, keepdims=True)
    weights = np.exp(scaled)  # (R, 70) zero where not searched
    targets[rows] = weights / weights.sum(axis=1, keepdims=True)
    return targets
