"""The docs state what the code does: every size, count, name and default they give about the
API is checked against the code here, every Python block of the README and docs/ runs as
written, every shell block names commands and options that exist, and every relative link
points at a file that exists."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import gymnasium
import pytest

import smoor_env
from agents import agent_names
from agents.base import _REGISTRY
from smoor_env import PRESETS, Rules
from smoor_env.core.state import BID_OFFSET, CURSE_OFFSET, NUM_ACTIONS
from smoor_env.observation import (
    COMPACT_UNITS,
    LAYOUT,
    OBSERVATION_SIZE,
    QUANTISED_BLOCKS,
    RULE_FLAGS,
)

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_LINES = 300


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of every row of the tables under ``heading`` (up to the next heading of
    the same or a higher level), header and rule rows left out."""
    level = heading.split(" ")[0]
    text = "\n" + text
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    rows = []
    for line in text[start:].splitlines():
        if re.match(rf"#{{1,{len(level)}}} ", line):
            break
        if line.startswith("|") and not re.fullmatch(r"[|\s:-]+", line):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[1:] if rows else rows


# ------------------------------------------------------------------------ README


def test_the_readme_is_short():
    assert len(read(README).splitlines()) <= README_LINES


def test_the_readmes_first_screen_gives_the_two_make_commands():
    first_block = re.search(r"```sh\n(.*?)```", read(README), re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()]
    assert [c for c in commands if c] == ["make benchmark", "make test"]
    assert "make test" in read(ROOT / ".ci" / "run")


# ------------------------------------------------------------------ code blocks
#: The pages whose code blocks are run or checked: the README and every page of docs/.
CODE_PAGES = [README, *sorted(DOCS.glob("*.md"))]
#: The languages a block may name: python runs, sh is checked command by command, text
#: (the README's layout) names files that exist.
LANGUAGES = {"python", "sh", "text"}


def code_blocks(language: str | None = None) -> list[tuple[Path, int, str]]:
    """(page, line, code) of every fenced block of the CODE_PAGES in ``language`` (all
    blocks when None)."""
    blocks = []
    for path in CODE_PAGES:
        text = read(path)
        for match in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
            if language is None or match.group(1) == language:
                blocks.append((path, text.count("\n", 0, match.start()) + 1, match.group(2)))
    return blocks


def block_id(block: tuple[Path, int, str]) -> str:
    return f"{block[0].relative_to(ROOT)}:{block[1]}"


@pytest.mark.parametrize("path", CODE_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_block_is_fenced_and_names_its_language(path):
    """An indented block would escape the tests below; so would a block without a language."""
    text = read(path)
    languages = re.findall(r"^```(\w*)\n.*?^```", text, re.S | re.M)
    assert set(languages) <= LANGUAGES, languages
    outside = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    indented = re.findall(r"\n\n((?: {4}|\t)\S.*)", outside)
    assert not indented, "indented code block; fence it with its language"


@pytest.mark.parametrize("block", code_blocks("python"), ids=block_id)
def test_every_python_block_runs(block, tmp_path):
    """Each block as written, in a fresh interpreter, from an empty folder."""
    code = block[2]
    timeout = 600
    if "sb3_contrib" in code:
        pytest.importorskip("sb3_contrib", reason="the SB3 quick start needs the rl extra")
        timeout = 120  # it quotes seconds; SB3's default batch_size did not end in 170
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]


def shell_commands(code: str) -> list[list[str]]:
    """The command lines of a shell block, continuation lines joined, comments dropped."""
    return [words for line in code.replace("\\\n", " ").splitlines()
            if (words := shlex.split(line, comments=True))]


def pyproject() -> dict:
    return tomllib.loads(read(ROOT / "pyproject.toml"))


def help_text(argv: list[str]) -> str:
    """What ``argv --help`` prints (a wide terminal, so that no option name is wrapped)."""
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "COLUMNS": "250"}
    done = subprocess.run([*argv, "--help"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def command_help(words: list[str]) -> str | None:
    """The help of the Python command line ``words`` starts (``python -m module`` or a
    console script), None for make and pip; fails on a command the project does not have."""
    scripts = pyproject()["project"]["scripts"]
    if words[0] == "make":
        targets = re.findall(r"^([\w-]+):", read(ROOT / "Makefile"), re.M)
        assert set(words[1:]) <= set(targets), words
        return None
    if words[:2] == ["pip", "install"]:
        extras = pyproject()["project"]["optional-dependencies"]
        for target in words[2:]:
            match = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", target)
            assert match, target
            assert set((match.group(1) or "").split(",")) - {""} <= set(extras), target
        return None
    if words[:2] == ["python", "-m"]:
        return help_text([sys.executable, "-m", words[2]])
    assert words[0] in scripts, f"{words[0]} is not a console script of the project"
    module, function = scripts[words[0]].split(":")
    return help_text([sys.executable, "-c", f"from {module} import {function}; {function}()"])


@pytest.mark.parametrize("block", code_blocks("sh"), ids=block_id)
def test_every_shell_block_names_real_commands_and_options(block):
    """Shell blocks start long jobs (a benchmark, an interactive game, an install), so they
    are not run: every command must exist (a make target, an extra, a module or console
    script of the project) and every ``--option`` it gives must be in its ``--help``."""
    for words in shell_commands(block[2]):
        shown = command_help(words)
        if shown is None:
            continue
        for option in [w.split("=")[0] for w in words if w.startswith("--")]:
            assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", shown), (
                f"{' '.join(words[:3])}: {option} is not in its --help")


def test_the_layout_block_names_files_that_exist():
    (layout,) = [code for path, _, code in code_blocks("text") if path == README]
    named = [line.split()[0] for line in layout.splitlines() if line and not line[0].isspace()]
    assert len(named) >= 8
    assert [name for name in named if not (ROOT / name).exists()] == []


def test_the_readmes_gymnasium_ids_are_registered():
    ids = set(re.findall(r"smoor_env/\w+-v\d+", read(README)))
    assert ids == {"smoor_env/Smoorverliefd-v1", "smoor_env/Hearts-v1"}
    assert ids <= set(gymnasium.registry)


def test_the_games_table_gives_every_preset_with_its_rules_field():
    rows = table_rows(read(README), "## Games and variants")
    assert [re.fullmatch(r"`(\w+)`", r[2]).group(1) for r in rows] == list(PRESETS)
    for game, field, name, _players in rows:
        preset = PRESETS[name.strip("`")]
        options = {key: ast.literal_eval(value)
                   for key, value in re.findall(r"(\w+)=([^,`]+)", field)}
        assert preset.options == ({} if options == {"game": "smoorverliefd"} else options)
        assert game.startswith(preset.title)


# ------------------------------------------------------------------------ agents


def test_the_prior_table_is_what_prior_auto_plays():
    """docs/agents.md's table of ``prior="auto"`` names, in each row, the checkpoint and
    the weight ``agents.mc.table_prior`` gives in every rule set of that row."""
    from agents.mc import table_prior

    def every(*names: str) -> list[Rules]:
        return [PRESETS[name].rules(players, PRESETS[name].matches_only)
                for name in names for players in PRESETS[name].players]

    members = {
        "Smoorverliefd, 3-5 players": every("smoorverliefd"),
        "Hearts, 3-5 players, with or without passing; with one queen option and passing": [
            *every("hearts", "hearts_no_passing"),
            Rules(game="hearts", num_players=4, queen_breaks_hearts=True),
            Rules(game="hearts", num_players=5, queen_never_first_trick=True)],
        "Hearts, 3-5 players, with both queen options, or with one without passing": [
            Rules(game="hearts", num_players=3, passing=False, queen_never_first_trick=True,
                  queen_breaks_hearts=True),
            Rules(game="hearts", num_players=4, queen_never_first_trick=True,
                  queen_breaks_hearts=True),
            Rules(game="hearts", num_players=5, passing=False, queen_breaks_hearts=True)],
        "Blinde Liefde, Partner, Kleine Liefde": every("bidding", "partners", "pip_scoring"),
        "met Troef": every("trump_hearts"),
        "Cupid's Arrow": every("cupids_arrow"),
        "Cupid's Arrow with one other variant (met Troef, Blinde Liefde, Partner or Kleine "
        "Liefde)": [
            Rules(num_players=3, trump_hearts=True, cupids_arrow=True, target_score=50),
            Rules(num_players=4, partners=True, cupids_arrow=True, target_score=50),
            Rules(num_players=5, pip_scoring=True, cupids_arrow=True, target_score=50)],
        "any other (several Smoorverliefd variants at once; Smoorverliefd with "
        "`sweep_needs_all_thirteen`)": [
            Rules(num_players=4, trump_hearts=True, bidding=True),
            Rules(num_players=5, pip_scoring=True, bidding=True, cupids_arrow=True,
                  target_score=50),
            Rules(num_players=3, sweep_needs_all_thirteen=True)]}
    rows = {row[0]: row for row in table_rows(read(DOCS / "agents.md"), "## Shipped policies")}
    assert set(rows) == set(members)
    for name, rule_sets in members.items():
        for rules in rule_sets:
            checkpoint, weight, steers = table_prior(rules)
            assert rows[name][1] == f"`{checkpoint}`", (name, rules)
            assert re.match(r"[\d.]+", rows[name][2]).group() == str(weight), (name, rules)
            assert rows[name][3] == ("`ucb` / `own`" if steers else
                                     "`halving` / `relative`"), (name, rules)


def agent_table(path: Path, heading: str) -> dict[str, str]:
    """{agent name: its options cell} from the agents table under ``heading``."""
    return {re.fullmatch(r"`(\w+)`", r[0]).group(1): r[2]
            for r in table_rows(read(path), heading) if len(r) == 3}


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


def real_options(name: str) -> tuple[dict[str, object], set[str]]:
    parameters = real_signature(name).parameters.values()
    return ({p.name: p.default for p in parameters if p.default is not p.empty},
            {p.name for p in parameters if p.default is p.empty})


@pytest.mark.parametrize(("path", "heading"), [(README, "## Agents"),
                                               (DOCS / "agents.md", "# Agents")])
def test_the_agents_tables_list_every_registered_agent(path, heading):
    assert sorted(agent_table(path, heading)) == agent_names()


@pytest.mark.parametrize("name", agent_names())
def test_the_agents_page_gives_every_option_with_its_real_default(name):
    defaults, required = documented_options(agent_table(DOCS / "agents.md", "# Agents")[name])
    assert (defaults, required) == real_options(name)


@pytest.mark.parametrize("name", agent_names())
def test_the_readmes_agent_options_are_real_defaults(name):
    defaults, required = documented_options(agent_table(README, "## Agents")[name])
    real_defaults, real_required = real_options(name)
    assert defaults.items() <= real_defaults.items()
    assert required <= real_required


# ------------------------------------------------------------------ environments


def test_the_observation_table_gives_every_block_its_size_in_order():
    rows = table_rows(read(DOCS / "environments.md"), "## Observation")
    blocks = [(r[0].strip("`"), r[1]) for r in rows]
    expected = [(name, " x ".join(map(str, shape))) for name, shape in LAYOUT]
    assert blocks == expected
    assert f"`OBSERVATION_SIZE` = {OBSERVATION_SIZE}" in read(DOCS / "environments.md")


@pytest.mark.parametrize("path", [README, DOCS / "environments.md", DOCS / "rl.md"])
def test_the_observation_length_is_stated_as_the_code_has_it(path):
    stated = {int(n) for n in re.findall(r"\((?:N, )?(\d{4}),?\)", read(path))}
    assert stated <= {OBSERVATION_SIZE}


def test_the_action_table_gives_the_real_id_ranges():
    rows = table_rows(read(DOCS / "environments.md"), "## Actions")
    ranges = [tuple(map(int, r[0].split("-"))) for r in rows]
    assert ranges == [(0, BID_OFFSET - 1), (BID_OFFSET, CURSE_OFFSET - 1),
                      (CURSE_OFFSET, NUM_ACTIONS - 1)]
    assert f"`NUM_ACTIONS` = {NUM_ACTIONS}" in read(DOCS / "environments.md")


def test_the_version_history_names_the_registered_version():
    text = read(DOCS / "environments.md")
    history = text[text.index("## Version history"):]
    newest = re.search(r"- v(\d+)", history).group(1)
    assert {f"smoor_env/{game}-v{newest}" for game in ("Smoorverliefd", "Hearts")} <= set(
        gymnasium.registry)
    aec = smoor_env.raw_env(rules=Rules(game="hearts"))
    assert aec.metadata["name"] == f"hearts_v{newest}"
    assert smoor_env.raw_env().metadata["name"] == f"smoorverliefd_v{newest}"


# ------------------------------------------------------------------------- rules


@pytest.mark.parametrize(("heading", "game"), [("## Smoorverliefd", "smoorverliefd"),
                                               ("## Hearts", "hearts")])
def test_the_rules_page_gives_the_real_defaults(heading, game):
    rules = Rules(game=game)
    fields = {f.name for f in dataclasses.fields(Rules) if f.init}
    rows = [r for r in table_rows(read(DOCS / "rules.md"), heading)
            if re.fullmatch(r"`\w+`", r[0]) and r[0].strip("`") in fields]
    assert len(rows) >= 5
    for row in rows:
        assert ast.literal_eval(row[1].strip("`")) == getattr(rules, row[0].strip("`")), row


# ------------------------------------------------------------------------- links


def doc_files() -> list[Path]:
    return [README, ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file(path):
    missing = [target for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", read(path))
               if not target.startswith(("http://", "https://", "mailto:"))
               and not (path.parent / target).exists()]
    assert not missing


# ------------------------------------------------------- more environment facts


def test_the_rules_block_lists_the_real_flags_in_order():
    rows = {r[0].strip("`"): r[2] for r in table_rows(read(DOCS / "environments.md"),
                                                       "## Observation")}
    flags = rows["rules"].split(":", 1)[1].split(",")
    assert [f.strip() for f in flags] == ["hearts", *RULE_FLAGS]


def test_the_compact_form_is_stated_as_the_code_has_it():
    text = read(DOCS / "environments.md")
    assert f"`COMPACT_UNITS` = {COMPACT_UNITS}" in text
    stated = re.search(r"the four blocks that are not \(([^)]*)\)", text).group(1)
    assert re.findall(r"`(\w+)`", stated) == list(QUANTISED_BLOCKS)


def test_the_options_table_gives_the_real_defaults():
    from smoor_env.envs.aec_env import raw_env
    from smoor_env.envs.gym_env import SmoorEnv, SmoorVectorEnv
    classes = {"AEC": raw_env, "single agent": SmoorEnv, "vector": SmoorVectorEnv}
    rows = table_rows(read(DOCS / "environments.md"), "## Options")
    documented = {}
    for option, default, where, _meaning in rows:
        names = list(classes) if where == "all" else [w.strip() for w in where.split(",")]
        for name in names:
            documented.setdefault(name, {})[option.strip("`")] = ast.literal_eval(
                default.strip("`"))
    for name, cls in classes.items():
        real = {p.name: p.default for p in inspect.signature(cls).parameters.values()
                if p.default is not p.empty and p.kind is not p.VAR_KEYWORD}
        assert documented[name] == real, name


@pytest.mark.parametrize("path", [README, DOCS / "environments.md", DOCS / "rl.md",
                                  DOCS / "agents.md", DOCS / "speed.md"],
                         ids=lambda p: p.name)
def test_every_gymnasium_id_the_docs_name_is_registered(path):
    assert set(re.findall(r"smoor_env/\w+-v\d+", read(path))) <= set(gymnasium.registry)


@pytest.mark.parametrize("path", [README, DOCS / "environments.md", DOCS / "agents.md",
                                  DOCS / "rl.md", DOCS / "speed.md", DOCS / "play.md"],
                         ids=lambda p: p.name)
def test_the_docs_name_only_real_presets(path):
    """A command line's ``--rule-sets``/``--rules``/``--preset`` (or ``preset("...")``) names
    presets."""
    text = read(path)
    named = [name for names in re.findall(r"--(?:rules|preset|rule-sets)((?:[ =][a-z][\w-]*)+)",
                                          text)
             for name in re.split(r"[ =]", names.strip(" ="))]
    named += re.findall(r"preset\(\"(\w+)\"", text)
    assert set(named) <= set(PRESETS)
