"""The environment-speed script runs end to end and compares with texas_holdem_v4 in the same run.

Only that it measures and reports is checked here, not how fast anything is
(timings on a shared machine are not test material).
"""

from __future__ import annotations

import importlib.util
import itertools
import json

from experiments import env_speed


def test_env_speed_measures_every_row_and_the_same_run_ratio(tmp_path, capsys):
    out = tmp_path / "env_speed.json"
    env_speed.main(["--seconds", "0.05", "--num-envs", "16", "--repeats", "1", "--out",
                    str(out)])
    rows = {row["env"]: row for row in json.loads(out.read_text())["rows"]}
    ours = rows["smoor_env AEC (4-player Smoorverliefd)"]
    theirs = rows["pettingzoo texas_holdem_v4"]
    ratio = rows["ratio smoor_env AEC / texas_holdem_v4"]
    assert ours["steps_per_s"] > 0 and theirs["steps_per_s"] > 0
    assert ratio["steps_per_s"] == ours["steps_per_s"] / theirs["steps_per_s"]
    assert ours["steps_per_episode"] > 50 > theirs["steps_per_episode"]  # a match vs a hand
    for bare in ("smoor_env raw_env", "pettingzoo texas_holdem_v4 raw_env"):
        assert rows[bare]["steps_per_s"] > 0
    for copy in (True, False):
        vector = rows[f"SmoorVectorEnv num_envs=16 copy={copy}"]
        assert vector["plies_per_s"] == 4 * vector["learner_steps_per_s"]
        assert vector["learner_steps_per_s_in_step"] > 0
    assert rows["SmoorVectorEnv num_envs=16 copy=False greedy"]["learner_steps_per_s"] > 0
    for dtype in ("float32", "int8"):
        selfplay = rows[f"SelfPlayVectorEnv num_envs=16 {dtype}"]
        assert selfplay["decisions_per_s_in_step"] >= selfplay["decisions_per_s"] > 0
    if importlib.util.find_spec("pyspiel"):  # the anchor extra: OpenSpiel's Hearts loop
        spiel = rows["OpenSpiel hearts loop (4 players, information_state_tensor)"]
        aec = rows["smoor_env AEC (4-player Hearts)"]
        selfplay = rows["SelfPlayVectorEnv num_envs=16 float32 (4-player Hearts)"]
        assert spiel["steps_per_s"] > 0 and spiel["steps_per_episode"] >= 52
        assert aec["steps_per_episode"] in (52, 64)  # 52 cards, 12 passes unless none
        assert rows["ratio smoor_env AEC Hearts / OpenSpiel hearts loop"]["steps_per_s"] == (
            aec["steps_per_s"] / spiel["steps_per_s"])
        assert rows["ratio SelfPlayVectorEnv num_envs=16 Hearts / OpenSpiel hearts loop"][
            "steps_per_s"] == selfplay["decisions_per_s"] / spiel["steps_per_s"]
        greedy = rows["SmoorVectorEnv num_envs=16 copy=False greedy (4-player Hearts)"]
        assert rows["ratio SmoorVectorEnv num_envs=16 greedy Hearts / OpenSpiel hearts loop"][
            "steps_per_s"] == greedy["learner_steps_per_s"] / spiel["steps_per_s"]
    apis = ["SmoorVectorEnv"] + (["make_sb3_vec_env"] if importlib.util.find_spec(
        "stable_baselines3") else [])
    for api, dtype in itertools.product(apis, ("float32", "int8")):
        one = rows[f"{api} num_envs=16 obs_dtype={dtype} num_workers=1"]
        two = rows[f"{api} num_envs=16 obs_dtype={dtype} num_workers=2"]
        assert one["scaling_learner_steps_per_s"] == 1.0
        assert two["learner_steps_per_s"] > 0 and two["learner_steps_per_s_free_cores"] > 0
        assert two["scaling_learner_steps_per_s"] == (two["learner_steps_per_s"]
                                                      / one["learner_steps_per_s"])
        assert one["worker_cpu_ms_per_step"] == [] and len(two["worker_cpu_ms_per_step"]) == 1
    assert "same run" in capsys.readouterr().out
