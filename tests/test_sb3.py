"""The Stable-Baselines3 adapter (``smoor_env.envs.sb3``): SB3's conventions checked step by step
against the underlying ``SmoorVectorEnv``, and sb3-contrib's ``MaskablePPO`` training on it.
Skipped without the ``rl`` extra."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
sb3_contrib = pytest.importorskip("sb3_contrib")

from sb3_contrib.common.maskable.utils import get_action_masks  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv, VecMonitor  # noqa: E402

from agents.env_factories import make_vector_env  # noqa: E402
from smoor_env import Rules  # noqa: E402
from smoor_env.envs.gym_env import RESTART_ACTION  # noqa: E402
from smoor_env.envs.sb3 import SB3VecEnv, make_sb3_vec_env  # noqa: E402

ENV_ID = "smoor_env/Smoorverliefd-v1"


def _random_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)


@pytest.mark.parametrize("env_id", [ENV_ID, "smoor_env/Hearts-v1"])
def test_conventions_step_by_step_against_the_vector_env(env_id):
    """Single rounds end for every game on the same step: there the adapter returns the next
    episode's first observation at once (``terminal_observation`` in the infos), while the
    NEXT_STEP vector env, run alongside with the same seed and actions, ends the episode and
    restarts it on its next step. Everything else must be equal."""
    options = {"num_players": 4, "target_score": None, "opponents": "random"}
    adapter = make_sb3_vec_env(env_id, 8, monitor=False, **options)
    reference = make_vector_env(8, game=env_id.split("/")[1][:-3].lower(), **options)
    assert isinstance(adapter, SB3VecEnv) and isinstance(adapter, VecEnv)
    adapter.seed(5)
    obs = adapter.reset()
    ref_obs, ref_info = reference.reset(seed=5)
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(60):
        assert np.array_equal(obs, ref_obs)
        masks = get_action_masks(adapter)  # what MaskablePPO reads
        assert masks.shape == (8, 70) and masks.any(axis=1).all()
        assert np.array_equal(masks, ref_info["action_mask"])
        actions = _random_actions(masks, rng)
        obs, rewards, dones, infos = adapter.step(actions)
        ref_obs, ref_rewards, ref_terminated, _, ref_info = reference.step(actions)
        assert rewards.dtype == np.float32 and dones.dtype == bool and len(infos) == 8
        assert np.array_equal(rewards, ref_rewards) and np.array_equal(dones, ref_terminated)
        if dones.any():
            assert dones.all()  # single rounds without bidding: 13 decisions each
            for game, info in enumerate(infos):
                assert np.array_equal(info["terminal_observation"], ref_obs[game])
                assert info["TimeLimit.truncated"] is False
                assert info["illegal_action"] is False
            # The reference restarts on its next step and ignores that step's action.
            ref_obs, ref_rewards, ref_terminated, _, ref_info = reference.step(
                np.full(8, RESTART_ACTION))
            assert not ref_terminated.any() and not ref_rewards.any()
            episodes += 1
        else:
            assert infos == [{}] * 8
    assert episodes >= 3


def test_illegal_action_ends_that_episode_with_terminal_observation():
    adapter = make_sb3_vec_env(ENV_ID, 4, monitor=False, target_score=None)
    adapter.seed(1)
    obs = adapter.reset()
    masks = adapter.action_masks()
    actions = np.argmax(masks, axis=1)
    actions[2] = int(np.flatnonzero(~masks[2])[0])
    new_obs, rewards, dones, infos = adapter.step(actions)
    assert dones.tolist() == [False, False, True, False] and rewards[2] == -1.0
    assert infos[2]["illegal_action"] is True
    assert np.array_equal(infos[2]["terminal_observation"], obs[2])  # the game did not move
    assert not np.array_equal(new_obs[2], obs[2])  # a new deal
    assert adapter.action_masks()[2].any()


def test_seeding_attributes_and_methods():
    def first_steps(seed: int) -> list[np.ndarray]:
        adapter = make_sb3_vec_env(ENV_ID, 6, monitor=False, num_players=5, opponents="greedy")
        adapter.seed(seed)
        out = [adapter.reset()]
        for _ in range(3):
            out.append(adapter.step(np.argmax(adapter.action_masks(), axis=1))[0])
        return out

    assert all(np.array_equal(a, b) for a, b in zip(first_steps(3), first_steps(3),
                                                    strict=True))
    assert not np.array_equal(first_steps(3)[0], first_steps(4)[0])

    env = make_sb3_vec_env(ENV_ID, 6, num_players=3)
    assert isinstance(env, VecMonitor)  # episode returns for SB3's logs, by default
    assert env.get_attr("rules") == [Rules(num_players=3)] * 6
    assert env.get_attr("num_envs", indices=[1, 2]) == [6, 6]
    assert env.has_attr("action_masks") and not env.has_attr("no_such_attribute")
    assert env.env_is_wrapped(VecMonitor) == [False] * 6
    env.reset()
    rows = env.env_method("action_masks", indices=[0, 5])
    assert len(rows) == 2 and np.array_equal(rows[1], env.unwrapped.action_masks()[5])
    env.set_attr("note", "shared")  # stored once, on the shared SmoorVectorEnv
    assert env.get_attr("note", indices=[0, 4]) == ["shared", "shared"]
    with pytest.raises(ValueError, match="all of them"):
        env.set_attr("another_note", None, indices=[0])
    with pytest.raises(ValueError, match="one row per environment"):
        env.env_method("__repr__")
    with pytest.raises(ValueError, match="indices"):
        env.get_attr("rules", indices=[6])
    with pytest.raises(ValueError, match="copies"):
        make_sb3_vec_env(ENV_ID, 2, copy=False)
    with pytest.raises(ValueError, match="reset options"):
        env.set_options({"deal": None})
        env.reset()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_maskable_ppo_trains_on_the_adapter():
    """MaskablePPO, unchanged, for a few thousand steps: it draws only legal actions (an
    illegal one would end an episode with ``illegal_action`` in the infos)."""
    import torch
    from sb3_contrib.common.maskable.evaluation import evaluate_policy
    from stable_baselines3.common.callbacks import BaseCallback

    class NoIllegalAction(BaseCallback):
        def _on_step(self) -> bool:
            assert not any(info.get("illegal_action") for info in self.locals["infos"])
            self.episodes = getattr(self, "episodes", 0) + int(self.locals["dones"].sum())
            return True

    torch.set_num_threads(1)
    env = make_sb3_vec_env("smoor_env/Hearts-v1", 16, num_players=3, target_score=None,
                           reward_mode="trick", opponents="greedy")
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=256, n_epochs=2,
                                    seed=0, verbose=0)
    callback = NoIllegalAction()
    model.learn(3072, callback=callback)
    assert model.num_timesteps >= 3072
    assert callback.episodes >= 100  # 3-player Hearts: 20 decisions a round with passing
    assert len(model.ep_info_buffer) > 0  # VecMonitor's episode returns reached the logs
    mean, _ = evaluate_policy(model, env, n_eval_episodes=16, warn=False)
    assert np.isfinite(mean) and mean <= 0  # Hearts points are penalties


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_speed_script_smoke(tmp_path):
    from experiments import sb3_speed

    out = tmp_path / "speed.json"
    results = sb3_speed.main(["--adapter-envs", "16", "--adapter-steps", "128", "--single-envs",
                              "2", "--single-steps", "64", "--rollout", "64", "--opponents",
                              "random", "--out", str(out)])
    row = results["rows"][0]
    assert row["adapter"]["learner_steps"] >= 128 and row["dummy_vec_env"]["learner_steps"] >= 64
    assert row["adapter"]["env_steps_per_s"] > 0 and out.exists()


def test_the_adapter_refuses_before_it_acts():
    env = make_sb3_vec_env(ENV_ID, 4, monitor=False, opponents="random")
    first = env.reset()
    masks = env.action_masks()
    for name in ("num_envs", "copy", "rules", "engine"):
        with pytest.raises(ValueError, match="fixed at construction"):
            env.set_attr(name, 1)
    for method in ("reset", "step", "restart", "close"):
        with pytest.raises(ValueError, match="would change the shared env"):
            env.env_method(method)
    for bad, message in ((np.argmax(masks, 1) + 0.5, "integers"),
                         (np.ones(4, bool), "integers"),
                         (np.array(["1"] * 4), "integers"),
                         (np.zeros(3, np.int64), "shape")):
        with pytest.raises(ValueError, match=message):
            env.step_async(bad)
    # Nothing acted: the first real step plays from the first observations.
    assert np.array_equal(env.action_masks(), masks)
    again = make_sb3_vec_env(ENV_ID, 4, monitor=False, opponents="random")
    assert np.array_equal(again.reset(), first)
    actions = np.argmax(masks, 1)
    assert all(np.array_equal(a, b) for a, b in zip(env.step(actions)[:3],
                                                    again.step(actions)[:3], strict=True))
    env.step_async(actions.reshape(4, 1))  # an (N, 1) column is read as (N,)
    env.step_wait()
    env.close()
    again.close()
