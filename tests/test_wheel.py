"""The package works installed from its wheel, outside the source tree.

The wheel is built (``pip wheel --no-deps``) from a clean copy of the checkout (no stale
``build/`` of earlier builds can slip into it, and nothing is written into the working
tree) and installed, without its dependencies, into a fresh venv in a temporary folder.
The dependencies come from this interpreter's site-packages, added to the new venv by a
``.pth`` line (a plain path: the ``.pth`` files there, among them the editable install's,
are not run), so nothing is downloaded, while ``smoor_env``, ``agents`` and
``experiments`` come only from the wheel. Every check runs in a subprocess of that venv,
in a temporary working directory outside the checkout, without PYTHONPATH: the shipped
policies play by name, ``prior="auto"`` finds one in every rule set, and
every console script runs.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version
from test_base_install import SCRIPTS, tiny_runs

from agents.mc import table_prior
from agents.ppo import SHIPPED_NETWORKS, SHIPPED_POLICIES, shipped_policy_for
from smoor_env import PRESETS

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("smoor_env", "agents", "experiments")


class Installed:
    """The built wheel and the venv it is installed in."""

    def __init__(self, wheel: Path, venv: Path, work: Path, dependencies: list[Path]
                 ) -> None:
        self.wheel, self.venv, self.work = wheel, venv, work
        self.dependencies = dependencies  # this interpreter's site-packages
        self.bin = venv / "bin"
        self.python = self.bin / "python"

    def env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items()
               if key not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")}
        env.update(PATH=f"{self.bin}:/usr/bin:/bin", VIRTUAL_ENV=str(self.venv),
                   PYTHONNOUSERSITE="1", MPLBACKEND="Agg")
        return env

    def run(self, command: list[str], stdin: str = "", timeout: float = 120
            ) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=self.work, env=self.env(), input=stdin,
                              capture_output=True, text=True, timeout=timeout)

    def python_code(self, code: str, *args: str) -> subprocess.CompletedProcess:
        done = self.run([str(self.python), "-c", textwrap.dedent(code), *args])
        assert done.returncode == 0, done.stderr[-4000:]
        return done


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
                   check=True, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("wheel").resolve()
    assert not base.is_relative_to(ROOT), f"{base} is inside the checkout"
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".*", "build", "dist", "*.egg-info", "__pycache__", "results"))
    wheels = base / "wheels"
    # This venv's setuptools builds it when it is recent enough (no download); otherwise
    # pip's isolated build fetches the build-system's requirements.
    try:
        local = Version(importlib.metadata.version("setuptools")) >= Version("69")
    except importlib.metadata.PackageNotFoundError:
        local = False
    offline = ["--no-build-isolation", "--no-index"] if local else []
    try:
        _pip("wheel", "--no-deps", *offline, "-w", str(wheels), str(source))
    except subprocess.CalledProcessError as error:
        raise AssertionError(f"pip wheel failed:\n{error.stderr[-4000:]}") from error
    (wheel,) = wheels.glob("smoor_env-*.whl")

    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    _pip("--python", str(venv / "bin" / "python"), "install", "--no-deps", "--no-index",
         str(wheel))
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (Path(purelib) / "_dependencies_from_the_test_venv.pth").write_text(
        "".join(f"{path}\n" for path in ours))
    work = base / "work"
    work.mkdir()
    return Installed(wheel, venv, work, [Path(path) for path in ours])


def test_the_wheel_holds_the_packages_and_the_shipped_policies(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == set(PACKAGES)
    for name in (*SHIPPED_POLICIES, *SHIPPED_NETWORKS):
        for suffix in (".pt", ".json"):
            assert f"agents/checkpoints/{name}{suffix}" in names
    # measurements (the training curves' plots and points) stay in the repository
    assert not [name for name in names if "_curve." in name and not name.endswith(".py")]
    # torch is a range (the Makefile pins this machine's CPU build), not an exact pin
    torch = [Requirement(line.partition(":")[2]) for line in metadata.decode().splitlines()
             if line.startswith("Requires-Dist: torch")]
    assert torch and all(spec.operator in (">=", "<", "!=") for requirement in torch
                         for spec in requirement.specifier), torch


def test_the_packages_come_from_the_wheel(installed: Installed) -> None:
    done = installed.python_code("""
        import json, sys
        import agents, experiments, smoor_env
        print(json.dumps({m.__name__: m.__file__ for m in (smoor_env, agents, experiments)}
                         | {"prefix": sys.prefix, "path": sys.path}))
        """)
    found = json.loads(done.stdout)
    assert Path(found["prefix"]) == installed.venv
    # nothing of the checkout is on the path but the dependencies' site-packages (this
    # venv's, which may live in the checkout: they hold no smoor_env, agents, experiments)
    assert not [path for path in found["path"] if path and Path(path) not in
                installed.dependencies and Path(path).resolve().is_relative_to(ROOT)]
    for package in PACKAGES:
        assert not [path for path in installed.dependencies if (path / package).exists()]
        where = Path(found[package]).resolve()
        assert where.is_relative_to(installed.venv), (package, where)
        assert not where.is_relative_to(ROOT), (package, where)


def test_the_shipped_policies_play_by_name(installed: Installed) -> None:
    """``make_agent("ppo")`` and every shipped checkpoint by name play legal moves on a few
    decisions of the rule set they were trained on, from the installed package data."""
    installed.python_code("""
        import sys
        from pathlib import Path
        import numpy as np
        import agents.ppo as ppo
        from agents import make_agent
        from smoor_env import Engine, Rules
        from smoor_env.observation import observe

        venv = Path(sys.prefix)
        assert ppo.CHECKPOINT_DIR.is_relative_to(venv), ppo.CHECKPOINT_DIR
        assert set(ppo.shipped_checkpoints()) == {*ppo.SHIPPED_POLICIES, *ppo.SHIPPED_NETWORKS}
        plays = [(make_agent("ppo"), Rules(num_players=4, target_score=None)),
                 *((make_agent("ppo", checkpoint=name),
                    Rules(num_players=3, bidding=True, target_score=None))
                   for name in ppo.SHIPPED_NETWORKS)]
        for name, args in sorted(ppo.SHIPPED_POLICIES.items()):
            agent = make_agent("ppo", checkpoint=name)
            assert agent.train_args["game"] == args["game"]
            assert ppo.resolve_checkpoint(name).is_relative_to(venv)
            rules = Rules(game=args["game"], num_players=args["num_players"][-1],
                          target_score=None)
            plays.append((agent, rules))
        rng = np.random.default_rng(0)
        for agent, rules in plays:
            engine = Engine(rules, 4)
            engine.reset(1)
            for _ in range(12):  # Hearts' passes, then leads and follows
                mask = engine.legal_mask
                actions = agent.act({"observation": observe(engine, engine.state.current_player),
                                     "action_mask": mask}, rng)
                assert mask[np.arange(len(actions)), actions].all()
                engine.step(actions)
        """)


def test_prior_auto_is_a_shipped_policy_in_every_rule_set(installed: Installed) -> None:
    """In every preset at every player count, as rounds and as matches, ``ismcts``
    (``prior="auto"`` by default) and ``mc:prior=auto`` play the shipped policy the
    checkout's table gives the rule set (``table_prior``: the plain network, a
    specialist, or the one network; loaded from the venv)."""
    expected = []
    for name, preset in PRESETS.items():
        for players in preset.players:
            for matches in (False, True):
                if matches or not preset.matches_only:
                    rules = preset.rules(players, matches)
                    assert shipped_policy_for(rules) in {None, *SHIPPED_POLICIES}
                    expected.append([name, players, matches, table_prior(rules)[0]])
    assert {policy for *_, policy in expected} <= {*SHIPPED_POLICIES, *SHIPPED_NETWORKS}
    done = installed.python_code("""
        import json, sys
        from pathlib import Path
        from agents import make_agent
        from agents.ppo import resolve_checkpoint
        from smoor_env import preset

        searches = [make_agent("ismcts"), make_agent("mc", prior="auto")]
        found = 0
        for name, players, matches, policy in json.loads(sys.argv[1]):
            rules = preset(name, players, matches)
            for search in searches:
                prior = search.prior_for(rules)
                assert prior is not None, (name, players, matches, policy)
                assert prior.checkpoint == policy, (name, players, matches, prior.checkpoint)
                assert resolve_checkpoint(prior.checkpoint).is_relative_to(sys.prefix)
                found += 1
        print(found)
        """, json.dumps(expected))
    assert int(done.stdout) == 2 * len(expected)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_console_script_runs_from_the_venv(installed: Installed, script: str,
                                           tmp_path: Path) -> None:
    """``--help``, then the tiny run of ``tests/test_base_install.py`` (smoor-view: on the
    record of a tiny game smoor-play writes)."""
    command = str(installed.bin / script)
    helped = installed.run([command, "--help"])
    assert helped.returncode == 0 and "usage" in helped.stdout.lower(), helped.stderr[-3000:]
    runs = tiny_runs(tmp_path)
    args, stdin, output = runs[script]
    if script == "smoor-view":
        play_args, play_stdin, record = runs["smoor-play"]
        played = installed.run([str(installed.bin / "smoor-play"), *play_args], play_stdin)
        assert played.returncode == 0, played.stderr[-3000:]
        args = [str(record), *args[1:]]
    done = installed.run([command, *args], stdin)
    assert done.returncode == 0, done.stderr[-3000:]
    assert output.stat().st_size > 0, f"{script} wrote no {output.name}"
