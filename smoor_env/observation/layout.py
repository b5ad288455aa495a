"""What one seat knows, as a flat float32 vector, for every game of a batch at once.

Seats are *relative* to the observer: relative seat 0 is the observer, 1 the
player on their left, 2 the next one, and so on. Every per-seat block has room
for 5 seats whatever the player count (unused seats are zeros), so one policy
can play 3, 4 and 5 players and does not depend on where it sits.

Layout (``OBSERVATION_SIZE`` = 1128 floats; ``observation_slices()`` names them,
``split_observation`` cuts a batch into named, shaped blocks):

==================  =========  =================================================
block               size       meaning
==================  =========  =================================================
``phase``           5          one-hot phase: play, pass, curse, bid, over
``hand``            52         the observer's cards (card id order, ``2C`` .. ``AS``)
``current_trick``   5 x 52     card each relative seat played to the trick in progress
``trick_leader``    5          relative seat that led the trick in progress
``played``          5 x 52     every card each relative seat played this round
``won``             5 x 52     every card each relative seat won in tricks this round
``voids``           5 x 4      suits (C D H S) a seat is known to lack: it did not
                               follow them, or (Hearts) it led a heart before hearts
                               were broken (C D S), or it played a point card off
                               suit to the first trick (C D, and S if it was QS)
``round_points``    5          points so far this round, as if it ended now (Hearts:
                               minus penalty points), over the round's full total;
                               sweeps count only once all 13 hearts are won, so the
                               hidden dead pile cannot leak through this block
``totals``          5          match totals over ``target_score`` (or the round total)
``bids``            5 x 14     one-hot bid 0..13 of each relative seat (Blinde Liefde)
``cursed_suit``     4          one-hot cursed suit (Cupid's Arrow)
``dealer``          5          relative seat of the dealer
``pass_direction``  5          one-hot k: cards go to the seat k places to the left
                               this round (Hearts); all zero in a round without pass
``passed``          52         cards the observer chose to pass this round
``received``        52         cards passed to the observer (only after the exchange)
``hearts_broken``   1          Hearts: a heart has been played (``QS`` by option)
``trick_number``    1          completed tricks over the tricks per round
``num_players``     3          one-hot 3, 4, 5
``rules``           11         flags: hearts, trump_hearts, bidding, partners,
                               pip_scoring, cupids_arrow, sweep_needs_all_thirteen,
                               passing, queen_never_first_trick, queen_breaks_hearts,
                               cursed_suit_may_be_hearts
``card_trick``      52         (t + 1) / 50 for a card played in trick t (0-based,
                               the trick in progress included), 0 for a card not
                               played this round (int8: t + 1)
==================  =========  =================================================

``card_trick`` with ``played`` and ``won`` is the round's whole public history:
the cards of trick t are those marked t, who played each is in ``played``, who won
it in ``won``, and so who led each trick (the first: the rules' opening seat; the
next: the last winner) and in which order its cards came. Search agents read it to
weigh sampled worlds by how likely the other seats' plays were
(``agents.search.play_likelihood``).

Compact observations (``dtype="int8"`` in ``observe``, ``ObservationTracker``
and the vector environment's ``obs_dtype``) hold the same layout in a quarter of
the bytes: the 0/1 blocks as 0/1, and the four blocks that are not 0/1
(``round_points``, ``totals``, ``trick_number``, ``card_trick``) as ``round(value *
COMPACT_UNITS)`` (50 steps per 1.0), clipped to -127..127 (totals beyond 2.54
targets, possible only with a target below a round's points, saturate). So
``compact * compact_scale()`` gives the float observation back, exactly for the
0/1 blocks and ``card_trick`` and to within 1/100 elsewhere (half a step). Hearts' 26 points and
Smoorverliefd's 17 stay distinct values (more than one step apart); pip scoring's
104 do not. A policy converts on its side (on the GPU, say) where the copy is
cheap; the environment writes and ships 4x fewer bytes a step.

With partners, ``round_points`` and ``totals`` show the team's numbers on both
partners, as the engine does. Nothing about other seats' hands, the dead pile
or cards passed between other seats is included.

``observe`` builds observations from the whole state and is their definition.
``ObservationTracker`` keeps chosen (game, seat) observations up to date while
it steps the engine, writing only what each card changes (a few floats instead
of 1128); the environments read their observations from it.

``full_state`` adds what no seat knows (every hand by absolute seat, the dead
pile and every seat's passes) after the observation of absolute seat 0, for
centralised critics.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from smoor_env.core import cards as C
from smoor_env.core.rules import TOTALS_BOUND, Rules
from smoor_env.core.scoring import score_scale

MAX_SEATS = 5
LAYOUT: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("phase", (5,)),
    ("hand", (52,)),
    ("current_trick", (MAX_SEATS, 52)),
    ("trick_leader", (MAX_SEATS,)),
    ("played", (MAX_SEATS, 52)),
    ("won", (MAX_SEATS, 52)),
    ("voids", (MAX_SEATS, 4)),
    ("round_points", (MAX_SEATS,)),
    ("totals", (MAX_SEATS,)),
    ("bids", (MAX_SEATS, 14)),
    ("cursed_suit", (4,)),
    ("dealer", (MAX_SEATS,)),
    ("pass_direction", (MAX_SEATS,)),
    ("passed", (52,)),
    ("received", (52,)),
    ("hearts_broken", (1,)),
    ("trick_number", (1,)),
    ("num_players", (3,)),
    ("rules", (11,)),
    ("card_trick", (52,)),
)
#: Observation dtypes: float32 (the definition) and int8 (compact, see the module docs).
OBS_DTYPES = ("float32", "int8")
#: int8 steps per 1.0 in the blocks that are not 0/1 (``QUANTISED_BLOCKS``).
COMPACT_UNITS = 50
QUANTISED_BLOCKS = ("round_points", "totals", "trick_number", "card_trick")
RULE_FLAGS = ("trump_hearts", "bidding", "partners", "pip_scoring", "cupids_arrow",
              "sweep_needs_all_thirteen", "passing", "queen_never_first_trick",
              "queen_breaks_hearts", "cursed_suit_may_be_hearts")


def observation_slices() -> dict[str, slice]:
    """Name -> slice of the flat observation vector."""
    out, start = {}, 0
    for name, shape in LAYOUT:
        size = int(np.prod(shape))
        out[name] = slice(start, start + size)
        start += size
    return out


SLICES = observation_slices()
OBSERVATION_SIZE = max(s.stop for s in SLICES.values())
_SHAPES = dict(LAYOUT)


def compact_scale() -> np.ndarray:
    """(OBSERVATION_SIZE,) float32: multiply an int8 observation by it to get the float one
    back (1 on the 0/1 blocks, 1 / ``COMPACT_UNITS`` on ``QUANTISED_BLOCKS``)."""
    scale = np.ones(OBSERVATION_SIZE, np.float32)
    for name in QUANTISED_BLOCKS:
        scale[SLICES[name]] = 1 / COMPACT_UNITS
    return scale


def observation_dtype(name: str | np.dtype | type) -> np.dtype:
    """The numpy dtype of an observation dtype name (``OBS_DTYPES``), with a clear error."""
    try:
        dtype = np.dtype(name)
    except TypeError:
        dtype = None
    if dtype is None or dtype.name not in OBS_DTYPES:
        raise ValueError(f"the observation dtype must be one of {OBS_DTYPES}, got {name!r} "
                         f"(uint8 cannot hold Hearts' negative points)")
    return dtype


def observation_bounds(rules: Rules, dtype: str | np.dtype | type = "float32"
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(OBSERVATION_SIZE,) lowest and highest value of every entry of an observation under
    ``rules`` in ``dtype`` (the environments' observation spaces).

    0..1 for the 0/1 blocks and ``trick_number``; ``round_points`` within the rules' largest
    round points (``Rules.round_points_bound``) over the round total, either sign;
    ``totals`` within the largest total a match can reach (a start of ``TOTALS_BOUND`` plus
    ``max_rounds`` rounds of the largest points) over the target; ``card_trick`` up to the
    last trick's ``tricks / COMPACT_UNITS``. int8 observations: the same in compact steps,
    clipped to -127..127.
    """
    dtype = observation_dtype(dtype)
    scale = score_scale(rules)
    points = rules.round_points_bound / scale
    totals = (TOTALS_BOUND + rules.max_rounds * rules.round_points_bound) / (
        rules.target_score if rules.target_score is not None else scale)
    low = np.zeros(OBSERVATION_SIZE)  # (OBSERVATION_SIZE,) float64
    high = np.ones(OBSERVATION_SIZE)
    for name, (lowest, highest) in {"round_points": (-points, points),
                                    "totals": (-totals, totals),
                                    "card_trick": (0.0, rules.num_tricks / COMPACT_UNITS)}.items():
        low[SLICES[name]], high[SLICES[name]] = lowest, highest
    if dtype == np.int8:
        low = np.clip(np.floor(low * COMPACT_UNITS), -127, 127)
        high = np.clip(np.ceil(high * COMPACT_UNITS), -127, 127)
        quantised = np.zeros(OBSERVATION_SIZE, bool)
        for name in QUANTISED_BLOCKS:
            quantised[SLICES[name]] = True
        low, high = np.where(quantised, low, 0), np.where(quantised, high, 1)
    return low.astype(dtype), high.astype(dtype)


def _encode(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Values of a block that is not 0/1, as written into an observation of ``dtype``:
    themselves (float32) or their compact steps (int8 range, as float32)."""
    if dtype == np.float32:
        return values
    # (from the float32 value: compact = round(float observation * COMPACT_UNITS) exactly)
    steps = np.rint(np.asarray(values, np.float32) * np.float32(COMPACT_UNITS))
    return np.clip(steps, -127, 127)


def split_observation(obs: np.ndarray) -> dict[str, np.ndarray]:
    """Views of a (..., OBSERVATION_SIZE) array as named blocks of their documented shapes."""
    lead = obs.shape[:-1]
    return {name: obs[..., s].reshape(*lead, *_SHAPES[name]) for name, s in SLICES.items()}


def card_sets(block: np.ndarray) -> np.ndarray:
    """(..., 52) 0/1 card block of an observation -> (...) uint64 card sets (bit c = card c)."""
    packed = np.packbits(np.asarray(block) > 0.5, axis=-1, bitorder="little")  # (..., 7) uint8
    padded = np.zeros((*packed.shape[:-1], 8), np.uint8)
    padded[..., :7] = packed
    return padded.view(np.uint64)[..., 0]


def _index_of(one_hot: np.ndarray) -> np.ndarray:
    """(..., K) one-hot block -> (...) int64 index of its 1, or -1 where it is all zeros."""
    return np.where(one_hot.max(axis=-1) > 0.5, np.argmax(one_hot, axis=-1), -1)


def decode(obs: np.ndarray) -> dict[str, Any]:
    """What each observation says, as named per-game fields (relative seats, padded to 5).

    The one reader of the layout for agents: cards as uint64 sets (bit c = card id c),
    one-hot blocks as indices (-1 = none), rule flags by name. For a batch (B, 1128):

    * ``phase`` (B,) a ``Phase``; ``players`` (B,) 3..5;
    * ``flags``: dict name -> (B,) bool, for ``"hearts"`` and every name of ``RULE_FLAGS``;
    * ``hand``, ``passed``, ``received`` (B,) uint64;
    * ``played``, ``won`` (B, 5) uint64 by relative seat; ``trick`` (B, 5) int64 card each
      relative seat played to the trick in progress (-1 none); ``trick_cards`` (B,) uint64
      the same as a set; ``trick_size`` (B,); ``leader`` (B,) relative seat that led it
      (-1 before the lead); ``led_suit`` (B,) (-1 before the lead);
    * ``voids`` (B, 5, 4) bool; ``bids`` (B, 5) (-1 = none); ``cursed_suit`` (B,) (-1 none);
      ``dealer`` (B,); ``pass_offset`` (B,) k: cards go k seats to the left (0 = no pass);
    * ``hearts_broken`` (B,) bool; ``trick_index`` (B,) completed tricks;
    * ``card_trick`` (B, 52) int64: the trick (0-based) in which each card was played
      this round, -1 for a card not played.
    """
    obs = np.asarray(obs, np.float32)
    if obs.ndim != 2 or obs.shape[1] != OBSERVATION_SIZE:
        raise ValueError(f"observations must have shape (B, {OBSERVATION_SIZE}), got {obs.shape}")
    v = split_observation(obs)
    rule_flags = v["rules"] > 0.5  # (B, 11): "hearts", then RULE_FLAGS in order
    flags = {"hearts": rule_flags[:, 0]}
    flags.update({name: rule_flags[:, i + 1] for i, name in enumerate(RULE_FLAGS)})
    in_trick = v["current_trick"].max(axis=2) > 0.5  # (B, 5)
    trick = np.where(in_trick, np.argmax(v["current_trick"], axis=2), -1)  # (B, 5)
    size = in_trick.sum(axis=1)  # (B,)
    leader = np.where(size > 0, _index_of(v["trick_leader"]), -1)  # (B,)
    rows = np.arange(len(obs))
    led = np.where(leader >= 0, trick[rows, np.maximum(leader, 0)] // 13, -1)
    players = np.argmax(v["num_players"], axis=1) + 3  # (B,)
    played = card_sets(v["played"])  # (B, 5)
    return {
        "phase": np.argmax(v["phase"], axis=1),
        "players": players,
        "flags": flags,
        "hand": card_sets(v["hand"]),
        "passed": card_sets(v["passed"]),
        "received": card_sets(v["received"]),
        "played": played,
        "won": card_sets(v["won"]),
        "trick": trick,
        "trick_cards": np.bitwise_or.reduce(
            np.where(trick >= 0, C.CARD_BITS[np.maximum(trick, 0)], np.uint64(0)), axis=1),
        "trick_size": size,
        "leader": leader,
        "led_suit": led,
        "voids": v["voids"] > 0.5,
        "bids": _index_of(v["bids"]),
        "cursed_suit": _index_of(v["cursed_suit"]),
        "dealer": _index_of(v["dealer"]),
        "pass_offset": np.maximum(_index_of(v["pass_direction"]), 0),
        "hearts_broken": v["hearts_broken"][:, 0] > 0.5,
        "trick_index": np.rint(v["trick_number"][:, 0] * np.where(players == 5, 10, np.where(
            players == 3, 17, 13))).astype(np.int64),
        "card_trick": np.rint(v["card_trick"] * COMPACT_UNITS).astype(np.int64) - 1,
    }


_AT = {name: s.start for name, s in SLICES.items()}  # first column of each block
