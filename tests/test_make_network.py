"""``experiments.make_network``: the one command that makes a shipped network
(``one_network``, and the three before it, its first steps: ``dmc_all``, ``dmc3_it1000``,
``dmc4_it1000``)
from scratch is the record's commands, and it compares what it made with
the shipped file weight by weight. (The full runs take hours: not a test.)"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import tyro  # noqa: E402

from agents.ppo import CHECKPOINT_DIR, SHIPPED_NETWORK, SHIPPED_NETWORKS  # noqa: E402
from experiments import distill_table, dmc, expert_iteration, make_network  # noqa: E402

SHIPPED = CHECKPOINT_DIR / f"{SHIPPED_NETWORK}.pt"


@pytest.mark.parametrize("network", SHIPPED_NETWORKS)
def test_its_steps_are_the_commands_the_networks_record_gives(network):
    record = json.loads((CHECKPOINT_DIR / f"{network}.json").read_text())
    args = make_network.Args(network=network, out_dir="runs/x", progress=True)
    made = make_network.steps(args)
    recorded = [shlex.split(step["command_today"]) for step in record["made_by"]]
    assert len(made) == len(recorded)
    # each step's files in a folder of its own; each starts from the step before's network
    folders = ["runs/x/ei", "runs/x/dmc", "runs/x/dmc3", "runs/x/dmc4", "runs/x/table"]
    starts = ["", "runs/x/ei/gen1.pt", "runs/x/dmc/it200.pt", "runs/x/dmc3/it1000.pt",
              "runs/x/dmc4/it1000.pt"]
    for k, ((module, argv), typed) in enumerate(zip(made, recorded, strict=True)):
        assert typed[:3] == ["python", "-m", f"experiments.{module}"]
        ours, theirs = parsed(module, argv), parsed(module, typed[3:])
        assert ours == dataclasses.replace(theirs, out_dir=folders[k], init=starts[k]), k
    # each shipped network is the last of its own steps, the record's first ones (the
    # same commands and arguments; the notes say what each step's network became)
    assert len(made) == make_network.STEPS[network]
    for earlier in SHIPPED_NETWORKS:
        if make_network.STEPS[earlier] < len(made):
            before = json.loads((CHECKPOINT_DIR / f"{earlier}.json").read_text())["made_by"]
            assert [without_note(step) for step in before] == \
                [without_note(step) for step in record["made_by"][:len(before)]], earlier
    # the last step writes the network compared
    last = made[-1][1]
    assert make_network.made_file(args).parent == Path(last[last.index("--out-dir") + 1])
    # and each step's settings are accepted as its command checks them (a warm start exists
    # once the step before has run: here, a stand-in)
    for module, argv in made:
        settings = parsed(module, argv)
        if module in ("dmc", "distill_table"):
            settings = dataclasses.replace(settings, init=str(SHIPPED))
        settings.check()


def parsed(module: str, argv: list[str]):
    """A step's command line read as its command reads it: its ``Args``."""
    return tyro.cli({"expert_iteration": expert_iteration.Args, "dmc": dmc.Args,
                     "distill_table": distill_table.Args}[module], args=argv)


def without_note(step: dict) -> dict:
    return {key: value for key, value in step.items() if key != "note"}


def test_the_network_made_by_default_is_the_one_prior_auto_plays_into_its_own_folder(capsys):
    args = make_network.Args()
    assert args.network == SHIPPED_NETWORK == "one_network"
    assert args.folder() == Path("runs/one_network")
    assert make_network.Args(network="dmc3_it1000").folder() == Path("runs/dmc3_it1000")
    assert set(make_network.STEPS) == set(SHIPPED_NETWORKS)
    assert make_network.main(["--network", "dmc_9"]) == 2
    assert ("--network must be one of one_network, dmc_all, dmc3_it1000, dmc4_it1000, got "
            "'dmc_9'"
            in capsys.readouterr().err)


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


@pytest.mark.parametrize("network", SHIPPED_NETWORKS)
def test_it_runs_the_steps_in_order_and_reports_the_comparison(tmp_path, monkeypatch, capsys,
                                                               network):
    shipped = CHECKPOINT_DIR / f"{network}.pt"
    calls = []

    def fake(module):
        def main(argv):
            calls.append((module, argv))
            assert sys.argv[1:] == argv  # the step's own command line, for its records
            if module == "dmc":  # the network DMC's last iteration would write
                out = Path(argv[argv.index("--out-dir") + 1])
                out.mkdir(parents=True)
                last = argv[argv.index("--stop-at") + 1] if "--stop-at" in argv else \
                    argv[argv.index("--iterations") + 1]
                shutil.copy(shipped if out == made.parent else SHIPPED, out / f"it{last}.pt")
            if module == "distill_table":  # the distilled network (always the last step)
                out = Path(argv[argv.index("--out-dir") + 1])
                out.mkdir(parents=True)
                shutil.copy(shipped, out / "network.pt")
            return 0
        return main

    monkeypatch.setattr(expert_iteration, "main", fake("expert_iteration"))
    monkeypatch.setattr(dmc, "main", fake("dmc"))
    monkeypatch.setattr(distill_table, "main", fake("distill_table"))
    argv = ["--network", network, "--out-dir", str(tmp_path), "--no-progress"]
    made = make_network.made_file(make_network.Args(network=network, out_dir=str(tmp_path)))
    assert make_network.main(argv) == 0
    count = make_network.STEPS[network]
    steps = ["expert_iteration", *["dmc"] * min(count - 1, 3), *["distill_table"] * (count > 4)]
    assert [module for module, _ in calls] == steps
    assert "the same weights as the shipped" in capsys.readouterr().out
    # other weights: said so, exit status 1
    data = torch.load(shipped, weights_only=True)
    name = next(iter(data["model"]))
    data["model"][name] = data["model"][name] + 1.0
    torch.save(data, made)
    monkeypatch.setattr(dmc, "main", lambda argv: 0)  # a finished run: nothing to do
    monkeypatch.setattr(distill_table, "main", lambda argv: 0)
    assert make_network.main(argv) == 1
    assert "differs from the shipped (largest difference 1)" in capsys.readouterr().out
    # a step that stops is the command's stop
    monkeypatch.setattr(dmc, "main", lambda argv: 130)
    assert make_network.main(argv) == 130
    monkeypatch.setattr(dmc, "main", lambda argv: 2)
    assert make_network.main(argv) == 2
    assert "experiments.dmc stopped with exit status 2" in capsys.readouterr().err
