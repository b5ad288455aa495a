"""Every console script runs on a base install (``pip install smoor-env``, no extra).

Each ``[project.scripts]`` entry is run on a tiny workload in a fresh interpreter whose
import system refuses every module that only the extras (or the test tools) provide:
the modules of installed distributions outside the base dependencies' closure.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SCRIPTS: dict[str, str] = PYPROJECT["project"]["scripts"]



def tiny_runs(tmp: Path) -> dict[str, tuple[list[str], str, Path]]:
    """Each console script's tiny run: (arguments, standard input, a file it must write).
    A new console script needs an entry here."""
    record = tmp / "match.jsonl"
    return {
        "smoor-throughput": (["--batch-sizes", "8", "--players", "3", "--variant-batch", "8",
                              "--seconds", "0", "--out", str(tmp / "throughput.json")], "",
                             tmp / "throughput.json"),
        "smoor-bench": (["--agents", "random", "greedy", "--players", "3", "--rule-sets",
                         "hearts", "--deals", "2", "--chunk", "2", "--progress",
                         "--out-dir", str(tmp), "--run-name", "bench"], "",
                        tmp / "bench" / "summary.json"),
        "smoor-league": (["--agents", "random", "greedy", "mc:worlds=2", "--players", "3",
                          "--rule-sets", "smoorverliefd", "--deals", "3", "--progress",
                          "--out-dir", str(tmp), "--run-name", "league"], "",
                         tmp / "league" / "ratings.csv"),
        # without rich (the play extra) the table is plain text
        "smoor-play": (["--agents", "greedy", "--seed", "5", "--target-score", "none",
                        "--record", str(record)], "1\n" * 100, record),
        "smoor-view": ([str(ROOT / "tests" / "data" / "records_v0.jsonl"), "-o",
                        str(tmp / "game.html")], "", tmp / "game.html"),
        "smoor-serve": (["--port", "0", "--url-file", str(tmp / "url.txt"),
                         "--exit-when-idle", "0.3"], "", tmp / "url.txt"),
    }


# Installs a finder that refuses the modules in BLOCKED, then runs "module:function"(argv)
# or imports "module".
RUNNER = """
import importlib, importlib.abc, json, sys
blocked = set(json.loads(sys.argv[1]))
class RefuseExtras(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"blocked: {name} is not a base dependency", name=name)
        return None
sys.meta_path.insert(0, RefuseExtras())
module, _, function = sys.argv[2].partition(":")
loaded = importlib.import_module(module)
if function:
    sys.exit(getattr(loaded, function)(sys.argv[3:]))
"""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def base_closure() -> set[str]:
    """Canonical names of the base dependencies and everything they require (no extras)."""
    todo = [Requirement(text) for text in PYPROJECT["project"]["dependencies"]]
    seen: set[str] = set()
    while todo:
        requirement = todo.pop()
        name = canonical(requirement.name)
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        todo += [Requirement(text) for text in importlib.metadata.requires(name) or []]
    return seen


def extras_only_modules() -> set[str]:
    """Top-level modules whose every installed distribution is outside the base closure."""
    base = base_closure()
    return {module for module, dists in importlib.metadata.packages_distributions().items()
            if not any(canonical(d) in base for d in dists)
            and module not in ("smoor_env", "agents", "experiments")}


BLOCKED = sorted(extras_only_modules())


def run_script(target: str, args: list[str], cwd: Path,
               stdin: str = "") -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-c", RUNNER, json.dumps(BLOCKED), target, *args],
                          cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                          timeout=300)


def test_the_blocker_blocks_the_extras_and_not_the_base():
    assert {"torch", "pytest", "hypothesis", "nbclient"} <= set(BLOCKED)
    assert not {"numpy", "gymnasium", "pettingzoo", "matplotlib", "scipy", "tqdm",
                "openskill"} & set(BLOCKED)
    refused = run_script("torch", [], ROOT)
    assert refused.returncode != 0 and "blocked: torch" in refused.stderr
    allowed = run_script("scipy.stats", [], ROOT)
    assert allowed.returncode == 0, allowed.stderr


def test_every_console_script_has_a_tiny_run(tmp_path):
    assert set(SCRIPTS) == set(tiny_runs(tmp_path))


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_console_script_runs_with_the_base_dependencies_only(script, tmp_path):
    args, stdin, output = tiny_runs(tmp_path)[script]
    done = run_script(SCRIPTS[script], args, tmp_path, stdin)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "blocked" not in done.stderr
    assert output.stat().st_size > 0, f"{script} wrote no {output.name}"


def test_an_agent_from_an_extra_is_refused_before_any_game(tmp_path):
    args = ["--agents", "random", "greedy", "rllib", "--players", "3", "--deals", "3",
            "--out-dir", str(tmp_path), "--no-progress"]
    done = run_script(SCRIPTS["smoor-league"], args, tmp_path)
    assert done.returncode != 0
    assert "install the ray extra" in done.stderr
    assert not list(tmp_path.iterdir())


def test_a_trained_policy_plays_without_torch(tmp_path):
    """The shipped checkpoints play in numpy: ``ppo``, and ``ismcts`` with it as a prior."""
    args = ["--agents", "ppo:checkpoint=ppo_hearts",
            "ismcts:iterations=64,walks=32,seed_worlds=4,prior=ppo:checkpoint=ppo_hearts",
            "--players", "4", "--rule-sets", "hearts", "--deals", "2", "--chunk", "2",
            "--out-dir", str(tmp_path), "--run-name", "bench"]
    done = run_script(SCRIPTS["smoor-bench"], args, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "blocked" not in done.stderr
    assert (tmp_path / "bench" / "summary.json").stat().st_size > 0
