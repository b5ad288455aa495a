"""The README states what the code does: the agents' table lists every registered agent with
its real options and defaults."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from agents import agent_names
from agents.base import _REGISTRY

README = Path(__file__).resolve().parent.parent / "README.md"


def agent_table() -> dict[str, str]:
    """{agent name: its options cell} from the README's table under "## Agents"."""
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Agents\n") + len("\n## Agents\n")
    rows = {}
    for line in text[start:].splitlines():
        if line.startswith("## "):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        match = re.fullmatch(r"`(\w+)`", cells[0])
        if line.startswith("|") and match and len(cells) == 3:
            rows[match.group(1)] = cells[2]
    return rows


def documented_options(cell: str) -> tuple[dict[str, object], set[str]]:
    """The cell's ``key=value`` defaults (values as Python literals) and its required keys
    (a bare ``key`` followed by "required")."""
    defaults = {key: ast.literal_eval(value)
                for key, value in re.findall(r"`(\w+)=([^`]+)`", cell)}
    required = set(re.findall(r"`(\w+)` \([^)]*required\)", cell))
    return defaults, required


def real_signature(name: str) -> inspect.Signature:
    """The signature of the class a registered name builds (``rllib``'s needs Ray)."""
    factory = _REGISTRY[name]
    if name == "rllib":
        pytest.importorskip("ray.rllib")
        from agents.rllib import RLlibAgent
        factory = RLlibAgent
    return inspect.signature(factory)


def test_the_agents_table_lists_every_registered_agent():
    assert sorted(agent_table()) == agent_names()


@pytest.mark.parametrize("name", sorted(agent_table()))
def test_the_agents_table_gives_the_real_options_and_defaults(name):
    defaults, required = documented_options(agent_table()[name])
    parameters = real_signature(name).parameters.values()
    real_defaults = {p.name: p.default for p in parameters if p.default is not p.empty}
    real_required = {p.name for p in parameters if p.default is p.empty}
    assert defaults == real_defaults
    assert required == real_required
