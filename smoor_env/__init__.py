"""smoor-env: batched trick-taking card games (Smoorverliefd and Hearts) for RL and game AI."""

from smoor_env.core.cards import (
    SUIT_SYMBOLS,
    card_rank,
    card_str,
    card_suit,
    cards_str,
    parse_card,
    parse_cards,
)
from smoor_env.core.engine import Engine, action_str
from smoor_env.core.presets import PRESETS, Preset, preset, preset_tables
from smoor_env.core.rules import Rules
from smoor_env.core.state import NUM_ACTIONS, Phase, State
from smoor_env.envs.aec_env import env, raw_env
from smoor_env.envs.selfplay import SelfPlayVectorEnv

__version__ = "0.1.0"


def _register_gymnasium_ids() -> None:
    """``smoor_env/Smoorverliefd-v1`` and ``smoor_env/Hearts-v1`` (rules as keyword arguments).

    The entry points are in ``agents.env_factories``: they turn opponent names into
    agents (``agents.make_agent``) and build ``gym_env.SmoorEnv`` / ``SmoorVectorEnv``.
    """
    import gymnasium

    for name, game in (("Smoorverliefd", "smoorverliefd"), ("Hearts", "hearts")):
        env_id = f"smoor_env/{name}-v1"
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point="agents.env_factories:make_env",
                               vector_entry_point="agents.env_factories:make_vector_env",
                               kwargs={"game": game})


_register_gymnasium_ids()

__all__ = [
    "NUM_ACTIONS",
    "PRESETS",
    "SUIT_SYMBOLS",
    "Engine",
    "Phase",
    "Preset",
    "Rules",
    "SelfPlayVectorEnv",
    "State",
    "action_str",
    "env",
    "raw_env",
    "card_rank",
    "card_str",
    "card_suit",
    "cards_str",
    "parse_card",
    "parse_cards",
    "preset",
    "preset_tables",
]
