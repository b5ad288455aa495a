"""Every notebook runs top to bottom (nbclient) from notebooks/ (Jupyter's default folder)
with no results folder given, at the reduced size ``SMOOR_NOTEBOOK_DEALS`` chooses, and
shows its figures; the win-rate notebook also runs from the repository root on a given
results folder. The stored notebooks carry their outputs (``make notebooks``), so that a
reader sees the plots without running them: outputs of the real-size runs, whose
intervals separate what the README says they separate, and the checkpoints that ship."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from agents.ppo import SHIPPED_NETWORKS, SHIPPED_POLICIES, shipped_checkpoints
from experiments.win_rates import Args, run

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# notebook -> image outputs it must show (plots; the quickstart's table picture)
FIGURES = {"quickstart.ipynb": 1, "win_rates.ipynb": 2, "agents.ipynb": 3}
#: Deals a table when the tests run the notebooks (the real sizes take minutes).
TEST_DEALS = "4"
#: Deals a table of the agents notebook's real ladder (the README's first two columns).
LADDER_DEALS = 100


@pytest.fixture(autouse=True)
def notebook_temp_files_in_pytest_tmp(tmp_path, monkeypatch):
    """The notebooks play into ``tempfile.mkdtemp()`` folders, which they leave for the
    reader's system to clear; their kernels here put them in pytest's temporary folders
    (pruned), not /tmp."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))


def execute(path: Path, cwd: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return notebook


def outputs(notebook: nbformat.NotebookNode) -> list:
    return [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]


def images(notebook: nbformat.NotebookNode) -> int:
    return sum("image/png" in o.get("data", {}) for o in outputs(notebook))


def test_there_are_notebooks():
    assert {p.name for p in NOTEBOOKS} == set(FIGURES)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_from_the_notebooks_folder_on_its_own(path, monkeypatch):
    monkeypatch.delenv("SMOOR_RESULTS", raising=False)
    monkeypatch.delenv("SMOOR_AGENT_STRENGTH", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)  # the notebook finds the repository
    monkeypatch.setenv("SMOOR_NOTEBOOK_DEALS", TEST_DEALS)
    notebook = execute(path, ROOT / "notebooks")
    assert not [o for o in outputs(notebook) if o.output_type == "error"]
    assert outputs(notebook), "the notebook printed nothing"
    assert images(notebook) >= FIGURES[path.name]


def test_win_rates_notebook_runs_from_the_root_on_a_given_folder(tmp_path, monkeypatch):
    folder = run(Args(agents=["random", "greedy"], players=[3, 4], rule_sets=["hearts"],
                      deals=2, chunk=2, out_dir=str(tmp_path), progress=False))
    monkeypatch.setenv("SMOOR_RESULTS", str(folder))
    notebook = execute(ROOT / "notebooks" / "win_rates.ipynb", ROOT)
    text = "".join(o.get("text", "") for o in outputs(notebook))
    assert "'players': [3, 4]" in text and "random" in text
    assert images(notebook) == FIGURES["win_rates.ipynb"]


def test_win_rates_notebook_shows_make_benchmarks_folder_when_it_holds_a_run(tmp_path,
                                                                            monkeypatch):
    """A checkout (a folder with pyproject.toml) whose results/win_rates__seed0 holds a run:
    the notebook shows it rather than playing (the packages come from this checkout)."""
    run(Args(agents=["random", "greedy"], players=[3], rule_sets=["hearts"], deals=2, chunk=2,
             out_dir=str(tmp_path / "results"), progress=False))
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.delenv("SMOOR_RESULTS", raising=False)
    monkeypatch.setenv("SMOOR_NOTEBOOK_DEALS", TEST_DEALS)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    notebook = execute(ROOT / "notebooks" / "win_rates.ipynb", tmp_path / "notebooks")
    text = "".join(o.get("text", "") for o in outputs(notebook))
    assert "make benchmark's results, results/win_rates__seed0" in text
    assert "'players': [3]" in text and "'deals': 2" in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebooks_are_stored_with_their_outputs_and_small(path):
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "run `make notebooks`"
    assert images(notebook) >= FIGURES[path.name]
    assert path.stat().st_size < 600_000


def stored_text(name: str) -> str:
    notebook = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    return "".join(o.get("text", "") for o in outputs(notebook))


def test_the_stored_agents_notebook_lists_the_shipped_checkpoints():
    listed = re.search(r"(\d+) shipped checkpoints: (\[.*?\])", stored_text("agents.ipynb"))
    assert listed, "run `make notebooks`"
    assert ast.literal_eval(listed.group(2)) == sorted(SHIPPED_POLICIES)
    assert sorted([*SHIPPED_POLICIES, *SHIPPED_NETWORKS]) == shipped_checkpoints()
    assert int(listed.group(1)) == len(SHIPPED_POLICIES)
    assert f"the networks {list(SHIPPED_NETWORKS)}" in stored_text("agents.ipynb")
    for name in SHIPPED_POLICIES:  # and draws each one's curve
        assert f"  {name}: " in stored_text("agents.ipynb")


def test_the_stored_win_rates_are_the_benchmarks_size_and_separate_every_pair():
    """make benchmark's tournament (its folder, or the same run played by the notebook), not
    the tests' reduced one; the README: random < greedy < mc in every row."""
    text = stored_text("win_rates.ipynb")
    arguments = ast.literal_eval(re.search(r"arguments: (\{.*\})", text).group(1))
    defaults = Args()
    assert arguments == {key: getattr(defaults, key) for key in arguments}
    separated, pairs = map(int, re.search(r"(\d+) of (\d+) pairs separated", text).groups())
    assert separated == pairs == 3 * len(defaults.players) * len(defaults.rule_sets)
    assert "NOT separated" not in text


def test_the_stored_ladder_is_the_readmes_size_and_separates_every_step():
    text = stored_text("agents.ipynb")
    deals = int(re.search(r"(\d+) deals per table", text).group(1))
    assert deals >= LADDER_DEALS
    separated, steps = map(int, re.search(r"(\d+) of (\d+) steps separated", text).groups())
    assert separated == steps >= 12
