"""Tournaments on Ray (the ray extra): the same results.csv as the local backend, Ctrl-C
and --resume as locally, heavy agents sent once. Skipped when Ray is not installed; one
local Ray with 2 CPUs serves the module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from agents.evaluation import runs  # noqa: E402
from experiments.win_rates import Args, run  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def tournament(tmp_path: Path, **changes) -> Args:
    settings = dict(agents=["random", "greedy"], players=[3, 4], rule_sets=["smoorverliefd"],
                    deals=4, chunk=2, matches=True, out_dir=str(tmp_path), run_name="run",
                    plots=False, progress=False)
    return Args(**{**settings, **changes})


def test_ray_results_are_the_local_ones_byte_for_byte(tmp_path, local_ray):
    local = run(tournament(tmp_path, run_name="local"))
    for workers in (1, 2):
        on_ray = run(tournament(tmp_path, run_name=f"ray{workers}", backend="ray",
                                workers=workers))
        assert (on_ray / "results.csv").read_bytes() == (local / "results.csv").read_bytes()
    summary = json.loads((on_ray / "summary.json").read_text())
    assert summary["complete"] and summary["args"]["backend"] == "ray"


def test_ctrl_c_on_ray_keeps_the_finished_chunks_and_resumes(tmp_path, local_ray,
                                                              monkeypatch):
    local = run(tournament(tmp_path, run_name="local"))
    save = runs.RunFolder.save_chunk

    def save_then_ctrl_c(self, unit, rows):
        save(self, unit, rows)
        raise KeyboardInterrupt

    monkeypatch.setattr(runs.RunFolder, "save_chunk", save_then_ctrl_c)
    folder = run(tournament(tmp_path, backend="ray", workers=2))
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["chunks_done"] == 1 and not summary["complete"] and summary["interrupted"]
    monkeypatch.undo()
    run(tournament(tmp_path, backend="ray", workers=2, resume=True))
    assert (folder / "results.csv").read_bytes() == (local / "results.csv").read_bytes()


def test_agents_go_to_the_object_store_once(tmp_path, local_ray, monkeypatch):
    """The driver serialises each agent once (ray.put), however many tasks use it."""
    from agents.greedy import GreedyAgent

    pickled = []

    def count_and_pickle(agent):
        pickled.append(agent)
        return dict(vars(agent))

    monkeypatch.setattr(GreedyAgent, "__getstate__", count_and_pickle, raising=False)
    folder = run(tournament(tmp_path, backend="ray", workers=2))
    assert json.loads((folder / "summary.json").read_text())["chunks"] == 4
    assert len(pickled) == 1


def test_address_needs_the_ray_backend(tmp_path):
    with pytest.raises(ValueError, match="--address .* needs --backend ray"):
        run(tournament(tmp_path, address="auto"))


@pytest.mark.parametrize("opponents", [[], ["greedy", "random"]], ids=["shared", "fixed"])
def test_rllib_training_writes_a_checkpoint_that_plays_in_win_rates(tmp_path, local_ray,
                                                                    opponents):
    """One RLlib PPO iteration (a shared policy, or a learner against fixed agents), then
    the restored policy plays a tournament, locally and on Ray, to the same results."""
    pytest.importorskip("ray.rllib")
    from agents import make_agent
    from experiments.train_rllib import Args as TrainArgs
    from experiments.train_rllib import train

    checkpoint = train(TrainArgs(iterations=1, batch_size=300, minibatch_size=100, epochs=1,
                                 hidden=[32], opponents=opponents,
                                 checkpoint=str(tmp_path / "policy")))
    log = json.loads((checkpoint / "training.json").read_text())["log"]
    assert len(log) == 1 and log[0]["env_steps"] >= 300
    agent = make_agent("rllib", checkpoint=str(checkpoint))
    assert agent.name == "rllib" and agent.uses_observation
    spec = f"rllib:checkpoint={checkpoint}"
    lineup = dict(agents=[spec, "greedy"], players=[4], deals=2, chunk=1, matches=False)
    local = run(tournament(tmp_path, run_name="local", **lineup))
    on_ray = run(tournament(tmp_path, run_name="ray", backend="ray", workers=2, **lineup))
    assert (on_ray / "results.csv").read_bytes() == (local / "results.csv").read_bytes()
    summary = json.loads((local / "summary.json").read_text())
    assert {row["agent"] for row in summary["table"]} == {spec, "greedy"}
    with pytest.raises(FileNotFoundError, match="no RLlib module"):
        make_agent("rllib", checkpoint=str(tmp_path / "missing"))
