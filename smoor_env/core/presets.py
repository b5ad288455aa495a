"""The named rule sets: one name per game and variant, used alike by the CLI, the docs and
the experiments.

A preset's name is the ``Rules`` field that makes the variant (``trump_hearts`` is *met
Troef*, ``pip_scoring`` is *Kleine Liefde*, ...), so a name read anywhere in the project
says which option it sets. The player count and single round or match are chosen when the
``Rules`` are built:

    from smoor_env import preset
    preset("trump_hearts", num_players=3)            # met Troef, 3 players, one round
    preset("hearts", num_players=5, matches=True)    # Hearts to 100, 5 players
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from smoor_env.core.rules import Rules


@dataclass(frozen=True)
class Preset:
    """A named rule set: the ``Rules`` options it sets (beside ``num_players`` and the
    target score, chosen per run)."""

    name: str  # "trump_hearts": the Rules field the variant sets (the game's name for the
    # base games)
    title: str  # "met Troef": the game's name in the rule texts
    options: dict[str, Any] = field(default_factory=dict)  # Rules fields besides num_players
    players: tuple[int, ...] = (3, 4, 5)  # player counts the rules allow
    matches_only: bool = False  # a single round is impossible (Cupid's Arrow)

    def rules(self, num_players: int = 4, matches: bool = False) -> Rules:
        """The ``Rules`` of this preset at ``num_players`` seats: a whole match to the
        game's target score with ``matches``, else a single round."""
        if num_players not in self.players:
            counts = ", ".join(map(str, self.players[:-1]))
            counts = f"{counts} or {self.players[-1]}" if counts else str(self.players[0])
            raise ValueError(f"the {self.name!r} rule set ({self.title}) is played by "
                             f"{counts} players, got {num_players}")
        if self.matches_only and not matches:
            raise ValueError(f"the {self.name!r} rule set ({self.title}) needs whole matches "
                             "(a cursed suit is named from round 2)")
        options = dict(self.options)
        if not matches:
            options["target_score"] = None
        return Rules(num_players=num_players, **options)


#: Every named rule set, in the order of the docs' tables.
PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("smoorverliefd", "Smoorverliefd"),
    Preset("trump_hearts", "met Troef", {"trump_hearts": True}),
    Preset("bidding", "Blinde Liefde", {"bidding": True}),
    Preset("partners", "Partner Smoorverliefd", {"partners": True}, players=(4,)),
    Preset("pip_scoring", "Kleine Liefde", {"pip_scoring": True}),
    Preset("cupids_arrow", "Cupid's Arrow", {"cupids_arrow": True}, matches_only=True),
    Preset("hearts", "Hearts", {"game": "hearts"}),
    Preset("hearts_no_passing", "Hearts without passing", {"game": "hearts", "passing": False}),
)}


def preset(name: str, num_players: int = 4, matches: bool = False) -> Rules:
    """The ``Rules`` of the preset ``name`` (a key of ``PRESETS``) at ``num_players`` seats:
    a single round, or with ``matches`` a match to the game's target score.

    Raises:
        ValueError: an unknown name (the message lists the known ones), a player count the
            rule set does not allow, or a single round of a matches-only rule set.
    """
    return _known(name).rules(num_players, matches)


def preset_tables(names: list[str], players: list[int], matches: bool = False) -> list[Rules]:
    """The single-round ``Rules`` (with ``matches``, a match's) of every preset in
    ``names`` at every count of ``players`` it allows (``Preset.players``; partners: 4
    only), rule set by rule set.

    Raises:
        ValueError: an unknown name (the message lists the known ones), or a single round
            of a matches-only rule set.
    """
    known = [_known(name) for name in names]
    return [preset(k.name, p, matches) for k in known for p in players if p in k.players]


def _known(name: str) -> Preset:
    """The preset called ``name``; an unknown name is a ValueError listing the known."""
    if name not in PRESETS:
        raise ValueError(f"unknown rule set {name!r}; known: {', '.join(PRESETS)}")
    return PRESETS[name]
