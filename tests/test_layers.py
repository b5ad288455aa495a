"""The architecture's layers: each imports only the layers below it.

smoor_env.core (the rules: numpy only) < smoor_env.observation, smoor_env.record <
smoor_env.render < smoor_env.envs < agents < experiments. Every import statement counts,
those inside functions too, so that a lazy import cannot hide a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What each layer may import from the project (besides itself), and which outside
# packages it must not import.
ALLOWED = {
    "smoor_env.core": set(),
    "smoor_env.observation": {"smoor_env.core"},
    "smoor_env.record": {"smoor_env.core"},
    "smoor_env.render": {"smoor_env.core", "smoor_env.record"},
    "smoor_env.envs": {"smoor_env", "smoor_env.core", "smoor_env.observation",
                       "smoor_env.record", "smoor_env.render"},
    "agents": {"smoor_env", "smoor_env.core", "smoor_env.observation", "smoor_env.record",
               "smoor_env.render", "smoor_env.envs"},
}
FORBIDDEN_OUTSIDE = {
    "smoor_env.core": {"gymnasium", "pettingzoo", "matplotlib", "torch", "ray"},
    "smoor_env.observation": {"gymnasium", "pettingzoo", "matplotlib", "torch", "ray"},
    "smoor_env.record": {"gymnasium", "pettingzoo", "matplotlib", "torch", "ray"},
    "smoor_env.render": {"gymnasium", "pettingzoo", "torch", "ray"},
}
LAYERS = sorted(ALLOWED, key=len, reverse=True)
PROJECT = ("smoor_env", "agents", "experiments")


def layer_of(module: str) -> str | None:
    """The layer a dotted module name belongs to (the longest matching prefix)."""
    for layer in LAYERS:
        if module == layer or module.startswith(layer + "."):
            return layer
    return "smoor_env" if module == "smoor_env" else module.split(".")[0]


def modules() -> list[tuple[str, Path]]:
    found = []
    for package in ("smoor_env", "agents"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found.append((name, path))
    return found


def imports_of(path: Path, module: str) -> list[str]:
    """Every module an import statement in ``path`` names (relative ones resolved)."""
    names = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            # "from smoor_env.core import cards" names smoor_env.core.cards, "from smoor_env
            # import Engine" the package's front door (smoor_env.Engine: layer smoor_env)
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


@pytest.mark.parametrize(("module", "path"), modules(), ids=[m for m, _ in modules()])
def test_a_module_imports_only_the_layers_below_its_own(module, path):
    own = layer_of(module)
    if module == "smoor_env":  # the package's front door re-exports every layer
        return
    wrong = []
    for name in imports_of(path, module):
        top = name.split(".")[0]
        target = layer_of(name)
        if top in PROJECT and target != own and target not in ALLOWED.get(own, set()):
            wrong.append(name)
        if top in FORBIDDEN_OUTSIDE.get(own, set()):
            wrong.append(name)
    assert not wrong, f"{module} ({own}) imports {sorted(set(wrong))}"


def test_an_import_from_a_higher_layer_is_caught(tmp_path):
    path = tmp_path / "engine.py"
    path.write_text("def f():\n    from smoor_env.envs.gym_env import SmoorEnv\n"
                    "    from smoor_env import Engine\n    import gymnasium\n")
    names = imports_of(path, "smoor_env.core.engine")
    assert names == ["smoor_env.envs.gym_env.SmoorEnv", "smoor_env.Engine", "gymnasium"]
    assert [layer_of(n) for n in names] == ["smoor_env.envs", "smoor_env", "gymnasium"]


def test_the_layers_cover_every_module():
    layers = {layer_of(m) for m, _ in modules()}
    assert layers <= set(ALLOWED) | {"smoor_env"}
