"""``experiments.make_network``: the one command that makes the shipped ``dmc_all`` from
scratch is the record's two commands, and it compares what it made with the shipped
file weight by weight. (The full run takes over an hour: not a test.)"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import tyro  # noqa: E402

from agents.ppo import CHECKPOINT_DIR, SHIPPED_NETWORK  # noqa: E402
from experiments import dmc, expert_iteration, make_network  # noqa: E402

SHIPPED = CHECKPOINT_DIR / f"{SHIPPED_NETWORK}.pt"


def test_its_steps_are_the_commands_the_networks_record_gives():
    record = json.loads(SHIPPED.with_suffix(".json").read_text())
    args = make_network.Args(out_dir="runs/ei2", progress=True)
    (ei_module, ei_argv), (dmc_module, dmc_argv) = make_network.steps(args)
    recorded = [shlex.split(step["command_today"]) for step in record["made_by"]]
    assert recorded[0][:3] == ["python", "-m", f"experiments.{ei_module}"]
    assert recorded[1][:3] == ["python", "-m", f"experiments.{dmc_module}"]
    as_dict = [dict(zip(argv[::2], argv[1::2], strict=True)) for argv in (ei_argv, dmc_argv)]
    assert as_dict[0] == {**dict(zip(recorded[0][3::2], recorded[0][4::2], strict=True)),
                          "--out-dir": "runs/ei2/ei"}
    assert as_dict[1] == {**dict(zip(recorded[1][3::2], recorded[1][4::2], strict=True)),
                          "--init": "runs/ei2/ei/gen1.pt", "--out-dir": "runs/ei2/dmc"}
    # and both parse, with their settings accepted, as their commands read them (DMC's
    # warm start exists once the first step has run: here, a stand-in)
    tyro.cli(expert_iteration.Args, args=ei_argv).check()
    start = dmc_argv.index("--init") + 1
    tyro.cli(dmc.Args, args=[*dmc_argv[:start], str(SHIPPED), *dmc_argv[start + 1:]]).check()


def test_compare_finds_the_same_weights_and_a_changed_one(tmp_path: Path):
    assert make_network.compare(SHIPPED, SHIPPED) == 0.0
    data = torch.load(SHIPPED, weights_only=True)
    name = next(iter(data["model"]))
    data["model"][name] = data["model"][name].clone()
    data["model"][name].view(-1)[0] += 0.25
    torch.save(data, tmp_path / "changed.pt")
    assert make_network.compare(tmp_path / "changed.pt", SHIPPED) == pytest.approx(0.25)
    del data["model"][name]
    torch.save(data, tmp_path / "fewer.pt")
    with pytest.raises(ValueError, match="different layers"):
        make_network.compare(tmp_path / "fewer.pt", SHIPPED)


def test_it_runs_the_steps_in_order_and_reports_the_comparison(tmp_path, monkeypatch, capsys):
    calls = []

    def fake(module):
        def main(argv):
            calls.append((module, argv))
            assert sys.argv[1:] == argv  # the step's own command line, for its records
            if module == "dmc":  # the network DMC's last iteration would write
                out = Path(argv[argv.index("--out-dir") + 1])
                out.mkdir(parents=True)
                shutil.copy(SHIPPED, out / "it200.pt")
            return 0
        return main

    monkeypatch.setattr(expert_iteration, "main", fake("expert_iteration"))
    monkeypatch.setattr(dmc, "main", fake("dmc"))
    assert make_network.main(["--out-dir", str(tmp_path), "--no-progress"]) == 0
    assert [module for module, _ in calls] == ["expert_iteration", "dmc"]
    assert "the same weights as the shipped" in capsys.readouterr().out
    # other weights: said so, exit status 1
    data = torch.load(SHIPPED, weights_only=True)
    name = next(iter(data["model"]))
    data["model"][name] = data["model"][name] + 1.0
    torch.save(data, tmp_path / "dmc" / "it200.pt")
    monkeypatch.setattr(dmc, "main", lambda argv: 0)  # a finished run: nothing to do
    assert make_network.main(["--out-dir", str(tmp_path), "--no-progress"]) == 1
    assert "differs from the shipped (largest difference 1)" in capsys.readouterr().out
    # a step that stops is the command's stop
    monkeypatch.setattr(dmc, "main", lambda argv: 130)
    assert make_network.main(["--out-dir", str(tmp_path)]) == 130
    monkeypatch.setattr(dmc, "main", lambda argv: 2)
    assert make_network.main(["--out-dir", str(tmp_path)]) == 2
    assert "experiments.dmc stopped with exit status 2" in capsys.readouterr().err
