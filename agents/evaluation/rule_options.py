"""``--rule-options``: rule flags set on a named rule set beyond its preset (Hearts'
queen options, Smoorverliefd's variants together), shared by the experiments' commands.

Only flags the agents see in the observation (``RULE_FLAGS``) are taken: a point value
(``bid_bonus``, say) would be played by searches that plan with the default.
"""

from __future__ import annotations

from smoor_env import PRESETS, Rules, preset, preset_tables
from smoor_env.observation.layout import RULE_FLAGS


def parse_rule_options(options: list[str]) -> dict[str, bool]:
    """``{field: value}`` of ``--rule-options`` (``field=true`` or ``field=false``), each
    a rule flag the agents see in the observation (``RULE_FLAGS``) given once; a
    ValueError names the bad entry. (The point values, e.g. ``bid_bonus``, are not in
    the observation: the searches would plan with the defaults, so they are refused.)"""
    parsed: dict[str, bool] = {}
    for option in options:
        name, sep, text = option.partition("=")
        if not sep or name not in RULE_FLAGS or name in parsed:
            why = ("is not field=value" if not sep else f"sets {name} twice" if name in parsed
                   else f"names no rule flag the agents see (known: {', '.join(RULE_FLAGS)}; "
                   "the game, player count and matches come from --rule-sets and --players)")
            raise ValueError(f"--rule-options {option!r} {why}")
        if text.lower() not in ("true", "false"):
            raise ValueError(f"--rule-options {option!r}: the value must be true or false")
        parsed[name] = text.lower() == "true"
    return parsed


def check_rule_options(rule_set: str, options: dict[str, bool], matches: bool = False) -> None:
    """A ValueError where ``options`` would set a field the preset ``rule_set`` sets,
    change nothing in it, or make another preset (labelled as ``rule_set``), compared as
    a single round or, with ``matches`` or a preset played only in matches (Cupid's
    Arrow), as a match. ``rule_set`` is a known preset (``check_rule_tables`` checks)."""
    if not options:
        return
    own = PRESETS[rule_set].options
    matches = matches or PRESETS[rule_set].matches_only
    base = preset(rule_set, 4, matches)
    for name, value in options.items():
        if name in own:
            raise ValueError(f"--rule-options {name}={str(value).lower()}: {rule_set} sets "
                             f"{name} itself (choose the rule set with --rule-sets)")
        if getattr(base, name) == value:
            raise ValueError(f"--rule-options {name}={str(value).lower()} changes nothing in "
                             f"{rule_set} (already {str(value).lower()})")
    try:
        made = base.replace(**options)
    except ValueError:
        return  # an impossible combination: rules_with names it
    for other in PRESETS.values():
        if (4 in other.players and (matches or not other.matches_only)
                and other.rules(4, matches) == made):
            raise ValueError(f"--rule-options {rule_set} with "
                             + ", ".join(f"{k}={str(v).lower()}" for k, v in options.items())
                             + f" is the rule set {other.name}: use --rule-sets {other.name}")


def check_rule_tables(rule_sets: list[str], players: list[int], matches: bool,
                      options: dict[str, bool]) -> None:
    """``check_rule_options`` for every rule set, and the rules of each of its tables built
    (``preset_tables``: every count of ``players`` its preset allows; the commands refuse
    the others themselves): a ValueError names an unknown rule set or an impossible
    combination, before anything is played."""
    tables = preset_tables(rule_sets, players, matches)  # an unknown name first
    for rule_set in rule_sets:
        check_rule_options(rule_set, options, matches)
    for rules in tables:
        rules.replace(**options)


def rules_with(rule_set: str, players: int, matches: bool, options: dict) -> Rules:
    """The preset ``rule_set`` at ``players`` (a match with ``matches``) with ``options``
    set (validated by ``Rules``: a ValueError names an impossible combination)."""
    return preset(rule_set, players, matches).replace(**options)
