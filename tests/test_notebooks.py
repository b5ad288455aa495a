"""Every notebook runs top to bottom (nbclient), on a tiny results folder."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from experiments.win_rates import Args, run

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("results")
    return run(Args(agents=["random", "greedy"], players=[3, 4], rule_sets=["hearts"],
                    deals=2, chunk=2, out_dir=str(out), progress=False))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tiny_results, monkeypatch):
    monkeypatch.setenv("SMOOR_RESULTS", str(tiny_results))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert outputs, "the notebook printed nothing"


def test_there_are_notebooks():
    assert {p.name for p in NOTEBOOKS} >= {"quickstart.ipynb", "win_rates.ipynb"}
