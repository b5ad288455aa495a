"""Expert iteration's data: a search playing every seat of batched self-play, labelling
each of its decisions with what it found, and each with the round's outcome for the seat.

``label_self_play(teacher, rules_list, decisions, num_envs, seed)`` plays
``SelfPlayVectorEnv`` tables (one per rule set and player count, taking turns one step
each) with ``teacher`` choosing for every seat, and returns per decision:

* ``"observations"`` (D, 1128) int8, the compact observation of the seat that decided
  (``smoor_env.observation``: times ``compact_scale()`` gives the float one);
* ``"masks"`` (D, 70) bool, ``"actions"`` (D,) int64 the teacher's moves;
* ``"values"`` (D, 70) float32 its searched value of every root move in points (NaN where
  it searched nothing: illegal moves, forced moves), ``"visits"`` (D, 70) float32 the
  worlds each root move was played in (teachers with ``analyse``, as ``ismcts``; a
  teacher with only ``evaluate``, as ``mc``, leaves visits 0);
* ``"returns"`` (D,) float32 the seat's round points (Hearts: minus its penalty points;
  partners: the team's) of the round the decision was made in, and ``"value_scale"`` (D,)
  float32 what a value head divides them by (``agents.ismcts._value_scale``);
* ``"table"`` (D,) int16, the index into ``rules_list`` of the decision's rule set,
  ``"game"`` (D,) int32 the game of that table's batch, ``"round"`` (D,) int32 which of
  its rounds (0, 1, ...) and ``"seat"`` (D,) int8 the seat that decided.

No labels are kept in the repository: ``experiments/expert_iteration.py`` makes them
afresh (from its seeds, so the same command labels the same decisions).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from agents.ismcts import _value_scale
from smoor_env.core.rules import Rules
from smoor_env.envs.selfplay import SelfPlayVectorEnv
from smoor_env.observation import compact_scale

#: The arrays of a labelling; the first seven are gathered step by step.
FIELDS = ("observations", "masks", "actions", "values", "visits", "value_scale", "table",
          "returns", "game", "round", "seat")


def label_self_play(teacher, rules_list: list[Rules], decisions: int, num_envs: int,
                    seed: int, rng: np.random.Generator,
                    progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
    """At least ``decisions`` labelled decisions of ``teacher`` in self-play (see the module
    docstring): once there are that many, the rounds in progress are labelled to their
    end, so every labelled round is whole and every decision has its outcome. Table k
    plays deals ``seed + k`` (game ids 0, 1, ...); ``progress`` is called with the count
    so far after every round of steps."""
    if decisions < 1 or num_envs < 1:
        raise ValueError(f"decisions and num_envs must be >= 1, got {decisions}, {num_envs}")
    for rules in rules_list:
        if rules.target_score is not None:
            raise ValueError("label_self_play plays single rounds (target_score=None), got "
                             f"a match to {rules.target_score}")
    to_compact = 1.0 / compact_scale()  # (1128,)
    tables = []
    for k, rules in enumerate(rules_list):
        env = SelfPlayVectorEnv(num_envs, rules, reward_mode="round")
        obs, info = env.reset(seed=seed + k)
        tables.append({"env": env, "obs": obs, "info": info, "rules": rules,
                       "restarting": np.zeros(num_envs, bool),
                       "open": np.ones(num_envs, bool),  # (N,) its round is labelled
                       "round": np.zeros(num_envs, np.int64),  # (N,) rounds begun, per game
                       "earned": np.zeros((num_envs, rules.num_players))})  # (N, P) so far
    parts: dict[str, list[np.ndarray]] = {key: [] for key in FIELDS[:7]}
    keys: list[np.ndarray] = []  # per part: (L, 3) its decisions' (table, game, round)
    seats: list[np.ndarray] = []
    ended: list[np.ndarray] = []  # per step of a table: (M, 3) the rounds that ended
    points: list[np.ndarray] = []  # and their (M, 5) points per seat, NaN past P
    taken = 0
    draining = False  # enough decisions: the rounds in progress are played to their end
    while True:
        if not draining and taken >= decisions:
            draining = True
            for table in tables:  # rounds about to begin are not labelled
                table["open"][table["restarting"]] = False
        if draining and not any(table["open"].any() for table in tables):
            break
        for k, table in enumerate(tables):
            env, rules, mask = table["env"], table["rules"], table["info"]["action_mask"]
            acting = ~table["restarting"]  # (N,) games with a seat to act
            live = np.flatnonzero(acting & table["open"])  # (L,) labelled decisions
            actions = np.argmax(mask, axis=1)  # (N,) games not labelled: any legal move
            if len(live):
                view = {"observation": table["obs"][live],  # (L, 1128) float32
                        "action_mask": mask[live]}
                actions[live], values, visits = _decide(teacher, view, rng)
                parts["observations"].append(
                    np.rint(view["observation"] * to_compact).astype(np.int8))
                parts["masks"].append(view["action_mask"])
                parts["actions"].append(actions[live])
                parts["values"].append(values.astype(np.float32))
                parts["visits"].append(visits.astype(np.float32))
                parts["value_scale"].append(np.full(len(live), _value_scale(rules), np.float32))
                parts["table"].append(np.full(len(live), k, np.int16))
                keys.append(np.stack([np.full(len(live), k), live, table["round"][live]], 1))
                seats.append(table["info"]["seat"][live])
                taken += len(live)
            table["obs"], rewards, terminated, _, table["info"] = env.step(actions)
            table["earned"] += rewards
            done = np.flatnonzero(terminated)  # (M,)
            ended.append(np.stack([np.full(len(done), k), done, table["round"][done]], 1))
            points.append(np.pad(table["earned"][done], ((0, 0), (0, 5 - rules.num_players)),
                                 constant_values=np.nan))
            table["earned"][terminated] = 0.0
            table["round"][terminated] += 1
            table["restarting"] = terminated
            if draining:
                table["open"][terminated] = False
        if progress is not None:
            progress(taken)
    data = {key: np.concatenate(value) for key, value in parts.items()}
    key = np.concatenate(keys)  # (D, 3)
    seat = np.concatenate(seats)  # (D,)
    data["game"], data["round"] = key[:, 1].astype(np.int32), key[:, 2].astype(np.int32)
    data["seat"] = seat.astype(np.int8)
    data["returns"] = _outcomes(key, seat, np.concatenate(ended), np.concatenate(points))
    return data


def _outcomes(key: np.ndarray, seat: np.ndarray, ended: np.ndarray, points: np.ndarray
              ) -> np.ndarray:
    """(D,) float32 the round points of seat ``seat`` (D,) in the round ``key`` (D, 3)
    (table, game, round) of each decision, from the rounds that ``ended`` (M, 3) with
    ``points`` (M, 5); NaN for a round that did not end."""
    span = np.maximum(ended.max(axis=0, initial=0), key.max(axis=0, initial=0)) + 1  # (3,)
    code = np.ravel_multi_index(ended.T, span)  # (M,) distinct: a round ends once
    order = np.argsort(code)
    wanted = np.ravel_multi_index(key.T, span)  # (D,)
    at = np.minimum(np.searchsorted(code[order], wanted), len(code) - 1)  # (D,)
    row = order[at] if len(code) else np.zeros(len(key), np.int64)
    found = (code[row] == wanted) if len(code) else np.zeros(len(key), bool)
    returns = np.full(len(key), np.nan, np.float32)
    returns[found] = points[row[found], seat[found]]
    return returns


def _decide(teacher, view: dict[str, np.ndarray], rng: np.random.Generator
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(L,) actions, (L, 70) values in points and (L, 70) visits of a teacher."""
    if hasattr(teacher, "analyse"):
        found = teacher.analyse(view, rng)
        return found.actions, found.values, found.visits
    if hasattr(teacher, "evaluate"):
        actions, values = teacher.evaluate(view, rng)
        return actions, values, np.zeros(values.shape)
    actions = teacher.act(view, rng)
    shape = view["action_mask"].shape
    return actions, np.full(shape, np.nan), np.zeros(shape)

