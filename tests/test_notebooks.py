"""Every notebook runs top to bottom (nbclient) from notebooks/ (Jupyter's default folder)
with no results folder given, and shows its figures; the win-rate notebook also runs
from the repository root on a given results folder. The stored notebooks carry their
outputs (``make notebooks``), so that a reader sees the plots without running them."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from experiments.win_rates import Args, run

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# notebook -> image outputs it must show (plots)
FIGURES = {"quickstart.ipynb": 0, "win_rates.ipynb": 2, "agents.ipynb": 3}


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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebooks_are_stored_with_their_outputs_and_small(path):
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "run `make notebooks`"
    assert images(notebook) >= FIGURES[path.name]
    assert path.stat().st_size < 600_000
