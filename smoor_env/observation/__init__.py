"""What one seat knows: the observation layout (``layout``), its definition built from the
whole state (``encode.observe``) and the incremental tracker the environments read
(``tracker.ObservationTracker``). The layout, block by block: ``docs/environments.md``.
"""

from smoor_env.observation.encode import STATE_EXTRA, STATE_SIZE, full_state, observe, shows_void
from smoor_env.observation.layout import (
    COMPACT_UNITS,
    LAYOUT,
    MAX_SEATS,
    OBS_DTYPES,
    OBSERVATION_SIZE,
    QUANTISED_BLOCKS,
    RULE_FLAGS,
    SLICES,
    card_sets,
    compact_scale,
    decode,
    observation_bounds,
    observation_dtype,
    observation_slices,
    split_observation,
)
from smoor_env.observation.tracker import ObservationTracker

__all__ = ["COMPACT_UNITS", "LAYOUT", "MAX_SEATS", "OBSERVATION_SIZE", "OBS_DTYPES",
           "QUANTISED_BLOCKS", "RULE_FLAGS", "SLICES", "STATE_EXTRA", "STATE_SIZE",
           "ObservationTracker", "card_sets", "compact_scale", "decode", "full_state",
           "observation_bounds", "observation_dtype", "observation_slices", "observe",
           "shows_void", "split_observation"]
