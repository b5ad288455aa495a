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
of 1076); the environments read their observations from it.

``full_state`` adds what no seat knows (every hand by absolute seat, the dead
pile and every seat's passes) after the observation of absolute seat 0, for
centralised critics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from smoor_env import cards as C
from smoor_env import deal
from smoor_env.engine import Engine
from smoor_env.play import breaks_hearts, hearts_breakers
from smoor_env.rules import Rules, turn_order
from smoor_env.scoring import provisional_points, score_scale
from smoor_env.state import Phase, State

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
    one-hot blocks as indices (-1 = none), rule flags by name. For a batch (B, 1076):

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


def _card_sets(cards: np.ndarray) -> np.ndarray:
    """Card-id arrays (..., K) with -1 = none -> uint64 sets (...)."""
    bits = np.where(cards >= 0, C.CARD_BITS.take(np.maximum(cards, 0)), np.uint64(0))
    return np.bitwise_or.reduce(bits, axis=-1)


def _bits(masks: np.ndarray) -> np.ndarray:
    """uint64 bitmasks of shape S -> uint8 0/1 array S + (52,) (bit c = card id c)."""
    m = np.ascontiguousarray(masks, dtype=np.uint64)
    return np.unpackbits(m.view(np.uint8).reshape(*m.shape, 8), axis=-1, count=C.NUM_CARDS,
                         bitorder="little")


def _put_bits(block: np.ndarray, masks: np.ndarray) -> None:
    """Write ``_bits(masks)`` into a zeroed ``block`` (masks.shape + (52,)): only the rows
    with a card, if they are few (the others stay zeros: no pass over them)."""
    held = masks if masks.ndim == 1 else np.bitwise_or.reduce(masks, axis=1)  # (n,)
    rows = np.flatnonzero(held)
    if 2 * len(rows) > len(masks):
        block[...] = _bits(masks)
    elif len(rows):
        block[rows] = _bits(masks[rows])


def observe(engine: Engine, seats: np.ndarray | int,
            games: np.ndarray | None = None, out: np.ndarray | None = None,
            dtype: str = "float32") -> np.ndarray:
    """(n, OBSERVATION_SIZE) float32 (or ``dtype``): what each game's observer seat knows.

    Every block is written in place into one zeroed array (the views of
    ``split_observation``), seat-relative blocks through one (n, P) index of the
    absolute seat behind each relative seat. This is the definition of the
    observation; ``ObservationTracker`` keeps the same values up to date step by
    step, for the environments.

    Args:
        engine: the engine whose ``state`` is observed.
        seats: (n,) absolute seat of the observer in each game (or one seat for all).
        games: (n,) indices of the games to observe (repeats allowed); default all B.
        out: an (n, OBSERVATION_SIZE) array of ``dtype`` to write into (and return)
            instead of a new one; reusing memory saves the cost of touching fresh pages.
        dtype: ``"float32"`` or ``"int8"`` (compact: see the module docstring).
    """
    dtype = observation_dtype(dtype)
    st, rules, p = engine.state, engine.rules, engine.rules.num_players
    if games is None:
        sub = st  # every game: read the arrays themselves
    else:
        games = _indices("games", games, engine.batch_size)
        sub = _Rows(st, games)
    b = len(sub.phase)
    seat = np.asarray(seats)
    if seat.ndim > 1 or seat.shape not in ((), (b,)):
        raise ValueError(f"seats must be one seat or one per observed game ({b}), got shape "
                         f"{seat.shape}")
    seat = np.broadcast_to(_indices("seats", seat.reshape(-1), p), (b,))
    rows = np.arange(b)
    by_rel = (rows[:, None], turn_order(seat, p))  # (n, P) index: relative seat k
    ks = np.arange(p)[None, :]  # (1, P) relative seat numbers
    if out is None:
        out = np.zeros((b, OBSERVATION_SIZE), dtype)
    elif out.shape != (b, OBSERVATION_SIZE) or out.dtype != dtype:
        raise ValueError(f"out must be a ({b}, {OBSERVATION_SIZE}) {dtype} array, got "
                         f"{out.shape} {out.dtype}")
    else:
        out.fill(0)
    v = split_observation(out)  # writable views into out

    # (Card blocks are written only in the rows that have a card in them, if they are
    # few: ``out`` is zeros, and at the start of a round most of them are empty.)
    v["phase"][rows, sub.phase] = 1
    _put_bits(v["hand"], sub.hands[rows, seat])
    trick = sub.current_trick[by_rel]  # (n, P) card of each relative seat, -1 = none
    v["current_trick"][rows[:, None], ks, trick] = trick >= 0
    current = np.minimum(sub.trick_index, rules.num_tricks - 1)
    leader = sub.trick_leader[rows, current]  # (n,) absolute seat, -1 before the lead
    v["trick_leader"][rows, (leader - seat) % p] = (sub.trick_size > 0) & (leader >= 0)
    # Cards played: what each seat held when play began, less what it holds now.
    offset = rules.pass_offset(sub.round_number)  # (n,) 0 = no pass this round
    passes = _card_sets(sub.passes)  # (n, P) cards each seat chose to pass
    exchanged = (offset > 0) & (sub.phase != Phase.PASS)  # (n,) the cards changed hands
    received = deal.received(passes, offset)  # (n, P)
    at_start = np.where(exchanged[:, None], (sub.dealt & ~passes) | received, sub.dealt)
    _put_bits(v["played"][:, :p], (at_start & ~sub.hands)[by_rel])
    _put_bits(v["won"][:, :p], sub.won[by_rel])
    shown = np.flatnonzero((sub.trick_index > 0) | (sub.trick_size > 1))  # others: no void yet
    if 2 * len(shown) > b:
        v["voids"][:, :p] = _voids(sub, rules)[by_rel]
    elif len(shown):
        v["voids"][shown, :p] = _voids(_Rows(sub, shown), rules)[np.arange(len(shown))[:, None],
                                                         by_rel[1][shown]]
    scale = score_scale(rules)
    v["round_points"][:, :p] = _encode(provisional_points(rules, sub)[by_rel] / scale, dtype)
    target = float(rules.target_score) if rules.target_score is not None else scale
    v["totals"][:, :p] = _encode(sub.totals[by_rel] / target, dtype)
    bids = sub.bids[by_rel]  # (n, P)
    v["bids"][rows[:, None], ks, bids] = bids >= 0
    v["cursed_suit"][rows, sub.cursed_suit] = sub.cursed_suit >= 0
    v["dealer"][rows, (sub.dealer - seat) % p] = 1
    v["pass_direction"][rows, offset] = offset > 0
    _put_bits(v["passed"], passes[rows, seat])
    _put_bits(v["received"], np.where(exchanged, received[rows, seat], np.uint64(0)))
    v["hearts_broken"][:, 0] = sub.hearts_broken
    v["trick_number"][:, 0] = _encode(sub.trick_index / rules.num_tricks, dtype)
    v["num_players"][:, p - 3] = 1
    v["rules"][:] = [rules.is_hearts] + [bool(getattr(rules, name)) for name in RULE_FLAGS]
    # Each played card's trick: the completed tricks' cards, then the trick in progress's.
    tricks = np.concatenate([np.where((sub.trick_winner >= 0)[:, :, None], sub.trick_cards, -1),
                             sub.current_trick[:, None, :]], axis=1)  # (n, T+1, P) card ids
    number = np.concatenate([np.arange(1, rules.num_tricks + 1)[None, :].repeat(b, 0),
                             sub.trick_index[:, None] + 1], axis=1)  # (n, T+1) trick t + 1
    game, trick, _ = np.nonzero(tricks >= 0)  # every card played, in (n, T+1, P) order
    v["card_trick"][game, tricks[tricks >= 0]] = _encode(number[game, trick] / COMPACT_UNITS,
                                                          dtype)
    return out


def _indices(name: str, values: np.ndarray | Sequence[int], upper: int) -> np.ndarray:
    """(n,) int64 indices 0..upper-1 from a 1-D integer array; ValueError naming ``name``."""
    array = np.asarray(values)
    if array.ndim != 1 or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
        raise ValueError(f"{name} must be a 1-D array of ints, got {array.dtype} of shape "
                         f"{array.shape}")
    if ((array < 0) | (array >= upper)).any():
        raise ValueError(f"{name} must be in 0..{upper - 1}, got {array.tolist()[:10]}")
    return array.astype(np.int64, copy=False)


class _Rows:
    """The state's arrays of some games only (copied on first use), read like a State."""

    def __init__(self, state: State, games: np.ndarray) -> None:
        self._state, self._games = state, games

    def __getattr__(self, name: str) -> np.ndarray:
        # (take along axis 0 is several times faster than indexing [games] for 2-D arrays)
        rows = getattr(self._state, name).take(self._games, axis=0)
        setattr(self, name, rows)
        return rows


class ObservationTracker:
    """Observations of fixed (game, seat) pairs of an engine, kept up to date step by step.

    ``observe`` builds all 1076 floats of an observation from the state; a card
    played changes about seven of them. The tracker owns ``out`` (M,
    OBSERVATION_SIZE) float32, row r the observation of seat ``seats[r]`` in game
    ``games[r]`` (a vector environment: one row per game; the AEC environment:
    one row per seat of its single game), and steps the engine itself, so that
    after every play-phase step it writes only what the card changed: the hand,
    the trick in progress and its leader, the cards played, a revealed void,
    hearts broken, and at the end of a trick the cards won, the provisional
    points and the trick count. Everything
    else (a new round, the pass, bid and curse phases, the end of the match) is
    rare and rebuilt with ``observe`` for the games concerned, all at once when
    ``out`` is next read. The values equal ``observe``'s exactly (a test checks
    this after every step).

    Args:
        engine: the engine to observe and step.
        seats: (M,) absolute observer seat of each row.
        games: (M,) game of each row; default ``0..M-1`` (then M must be B).
        dtype: ``"float32"`` or ``"int8"`` (compact: see the module docstring).
        out: an (M, OBSERVATION_SIZE) array of ``dtype`` to keep the observations in
            (shared memory, say) instead of a new one.
    """

    def __init__(self, engine: Engine, seats: np.ndarray | Sequence[int],
                 games: np.ndarray | Sequence[int] | None = None, dtype: str = "float32",
                 out: np.ndarray | None = None) -> None:
        self.engine = engine
        self.seats = _indices("seats", seats, engine.rules.num_players)  # (M,)
        m = len(self.seats)
        self.games = np.arange(m) if games is None else _indices("games", games,
                                                                  engine.batch_size)
        if self.games.shape != (m,):
            raise ValueError(f"seats and games must have the same length, got {m} seats and "
                             f"{len(self.games)} games")
        # One row per game, in game order: rows and games are the same indices.
        self._identity = m == engine.batch_size and bool((self.games == np.arange(m)).all())
        self.dtype = observation_dtype(dtype)
        if out is None:
            out = np.zeros((m, OBSERVATION_SIZE), self.dtype)
        elif out.shape != (m, OBSERVATION_SIZE) or out.dtype != self.dtype:
            raise ValueError(f"out must be a ({m}, {OBSERVATION_SIZE}) {self.dtype} array, got "
                             f"{out.shape} {out.dtype}")
        self._out = out  # (M, OBSERVATION_SIZE)
        self._flat = self._out.reshape(-1)
        # Rows to rebuild with observe before they are read: they are batched up over
        # steps (one observe call, not one per step); updates to them meanwhile are moot.
        self._stale = np.zeros(m, bool)  # (M,)
        self._scratch = np.zeros_like(self._out)  # (M, OBSERVATION_SIZE) for observe
        self._row_start = np.arange(m) * OBSERVATION_SIZE  # (M,) flat index of each row
        p = engine.rules.num_players
        # (P,) absolute -> relative seat when every row observes from one seat (then
        # relative seats are the same in every row: see _relative), else None.
        one_seat = m and bool((self.seats == self.seats[0]).all())
        self._relative_of = (np.arange(p) - self.seats[0]) % p if one_seat else None
        self._scale = score_scale(engine.rules)
        self._version = -1  # engine.version when the rows were last known to be right
        self.refresh()

    @property
    def out(self) -> np.ndarray:
        """(M, OBSERVATION_SIZE) ``dtype``: the observations now (the tracker's own array,
        patched in place by the next step: copy it to keep it, never write into it)."""
        self._notice_outside_changes()
        if self._stale.any():
            self._rebuild(np.flatnonzero(self._stale))
        return self._out

    def refresh(self, games: np.ndarray | None = None) -> None:
        """Rebuild the rows of ``games`` (default all) from the state with ``observe``.

        Changes made through the engine by others (``step``, ``reset``, assigning
        ``engine.state``, ``refresh_legal``) are noticed by themselves (through
        ``engine.version``) and rebuild every row; after editing the state's arrays
        in place, call ``refresh()``.
        """
        if games is None:  # every row is rebuilt: whatever changed is covered
            self._version = self.engine.version
        self._stale[self._rows_of(games)] = True  # (rebuilt with the rows already stale)
        self._rebuild(np.flatnonzero(self._stale))

    def _notice_outside_changes(self) -> None:
        """Mark every row stale if the engine's state changed since the tracker last saw it."""
        if self.engine.version != self._version:
            self._stale[:] = True
            self._version = self.engine.version

    def _rebuild(self, rows: np.ndarray) -> None:
        """Rebuild ``rows`` (ascending, no repeats) with ``observe``."""
        if 2 * len(rows) > len(self._out):
            # Most rows (a batch that started together begins its rounds together):
            # every row straight into out, cheaper than gathering most games' state and
            # copying most rows back (the other rows equal observe's values already).
            observe(self.engine, self.seats, None if self._identity else self.games,
                    out=self._out, dtype=self.dtype)
            self._stale[:] = False
        elif len(rows):
            scratch = self._scratch[:len(rows)]  # reused memory: no fresh pages to touch
            observe(self.engine, self.seats[rows], self.games[rows], out=scratch,
                    dtype=self.dtype)
            self._out[rows] = scratch
            self._stale[rows] = False

    def reset(self, seed: int, **kwargs: Any) -> State:
        """``engine.reset(seed, **kwargs)``, then rebuild the rows of the games it started."""
        self._notice_outside_changes()
        state = self.engine.reset(seed, **kwargs)
        self._version = self.engine.version
        self.refresh(kwargs.get("games"))
        return state

    def step(self, actions: np.ndarray, active: np.ndarray | None = None) -> State:
        """``engine.step(actions, active)``, then bring every row up to date."""
        self._notice_outside_changes()
        if self.engine.batch_size == 1:
            return self._step_one_game(actions, active)
        st = self.engine.state
        # What the step reads and changes, before it runs: (B,) each.
        over, playing = st.match_over.copy(), st.phase == _PLAY
        seat, size, led = st.current_player.copy(), st.trick_size.copy(), st.led_suit.copy()
        trick = st.trick_index.copy()
        hearts = self.engine.rules.is_hearts
        broken = st.hearts_broken.copy() if hearts else None
        self.engine.step(actions, active)  # checks actions and active (or raises, unchanged)
        self._version = self.engine.version
        live = ~over if active is None else np.asarray(active) & ~over  # (B,) games that acted
        # A card played in the same round: the incremental update. Anything else: observe.
        played = live & playing & (st.phase == _PLAY) & ~st.round_over  # (B,)
        self._stale[self._rows_of(np.flatnonzero(live & ~played))] = True
        rows = self._rows_of(np.flatnonzero(played))  # (n,) rows whose game played a card
        if not len(rows):
            return st
        g = rows if self._identity else self.games[rows]  # (n,) their games
        card = np.asarray(actions, dtype=np.int64)[g]  # (n,) the card played
        rel = self._relative(seat.take(g), rows)  # (n,) relative seat of its player
        at = self._row_start[rows]  # (n,) flat index of each row's start
        # Every write of every row in one scatter, row by row (each row's few writes
        # close together in time, in a (M, 1076) array far bigger than the cache). A
        # write that does not apply to a row repeats its "played" write (value 1): the
        # cost is the cache lines touched, and that one was just touched.
        at_card = at + rel * 52 + card  # (n,) flat index of (relative seat, card) in a block
        led = led[g].astype(np.int64)  # (n,) led suit before this card, -1 = it led
        where = np.empty((len(rows), 6), np.int64)  # (n, 6) flat indices
        played_at = np.add(at_card, _AT["played"], out=where[:, 0])  # (n,) strided view
        np.add(at_card, _AT["current_trick"], out=where[:, 1])
        own = rel == 0  # (n,) the observer played it: it leaves the observer's hand
        np.copyto(where[:, 2], at + (_AT["hand"] + card), where=own)
        np.copyto(where[:, 2], played_at, where=~own)
        lead = size[g] == 0  # (n,) the card led the trick
        np.copyto(where[:, 3], at + (_AT["trick_leader"] + rel), where=lead)
        np.copyto(where[:, 3], played_at, where=~lead)
        void = shows_void(card, led)  # (n,) it did not follow the led suit
        np.copyto(where[:, 4], at + (_AT["voids"] + rel * 4 + led), where=void)
        np.copyto(where[:, 4], played_at, where=~void)
        np.add(at, _AT["card_trick"] + card, out=where[:, 5])
        values = np.ones(where.shape, self.dtype)  # (n, 6)
        values[:, 2] = ~own  # 0 where the hand loses the card (else the "played" 1 again)
        values[:, 5] = _encode((trick[g] + 1) / COMPACT_UNITS, self.dtype)
        self._flat[where] = values
        if hearts:
            self._flat[at + _AT["hearts_broken"]] = st.hearts_broken[g]
            bits = _inferred_voids(card, led, trick[g], broken[g])  # (n,) uint8
            shown = np.flatnonzero(bits)
            if len(shown):  # rare: write the inferred voids of those rows only
                suits = (bits[shown, None] >> np.arange(4, dtype=np.uint8) & 1).astype(bool)
                k, s = np.nonzero(suits)
                self._flat[at[shown[k]] + _AT["voids"] + rel[shown[k]] * 4 + s] = 1
        done = st.trick_index[g] != trick[g]  # (n,) the card completed a trick
        if done.any():
            self._finish_trick(rows[done], g[done], trick[g[done]], at[done])
        return st

    def _step_one_game(self, actions: np.ndarray, active: np.ndarray | None) -> State:
        """``step`` for an engine of one game (the AEC and single-agent environments).

        The same update as the batched one, written with Python scalars: with one
        game the cost is the number of numpy calls, not the data.
        """
        engine, st = self.engine, self.engine.state
        p = engine.rules.num_players
        over, playing = bool(st.match_over[0]), int(st.phase[0]) == Phase.PLAY
        seat, size, led = int(st.current_player[0]), int(st.trick_size[0]), int(st.led_suit[0])
        trick = int(st.trick_index[0])
        broken = bool(st.hearts_broken[0])
        engine.step(actions, active)  # checks actions and active (or raises, unchanged)
        self._version = engine.version
        if self._stale.any():  # the game's rows are rebuilt when read
            self._stale[:] = True
            return st
        if over or (active is not None and not np.asarray(active)[0]):
            return st  # the game did not act
        if not (playing and int(st.phase[0]) == Phase.PLAY and not st.round_over[0]):
            self.refresh()
            return st
        card = int(np.asarray(actions)[0])
        void = shows_void(card, led)
        inferred = int(_inferred_voids(np.array([card]), np.array([led]), np.array([trick]),
                                       np.array([broken]))[0]) if engine.rules.is_hearts else 0
        done = int(st.trick_index[0]) != trick
        trick_value = float(_encode(np.float32((trick + 1) / COMPACT_UNITS), self.dtype))
        if done:
            cards = st.trick_cards[0, trick].tolist()  # (P,) card by absolute seat
            winner, leader = int(st.trick_winner[0, trick]), int(st.trick_leader[0, trick])
            points = _encode(provisional_points(engine.rules, st)[0] / self._scale,
                             self.dtype).tolist()  # (P,)
            tricks_done = float(_encode(st.trick_index[0] / engine.rules.num_tricks,
                                        self.dtype))
        for row, observer in enumerate(self.seats.tolist()):  # the seats observing (<= 5)
            o = self._out[row]  # (OBSERVATION_SIZE,) view
            rel = (seat - observer) % p
            o[_AT["played"] + rel * 52 + card] = 1
            o[_AT["current_trick"] + rel * 52 + card] = 1
            o[_AT["card_trick"] + card] = trick_value
            if rel == 0:
                o[_AT["hand"] + card] = 0
            if size == 0:
                o[_AT["trick_leader"] + rel] = 1
            if void:
                o[_AT["voids"] + rel * 4 + led] = 1
            for suit in range(4):
                if inferred >> suit & 1:
                    o[_AT["voids"] + rel * 4 + suit] = 1
            if engine.rules.is_hearts:
                o[_AT["hearts_broken"]] = st.hearts_broken[0]
            if done:
                o[_AT["trick_leader"] + (leader - observer) % p] = 0
                for absolute, c in enumerate(cards):
                    o[_AT["current_trick"] + (absolute - observer) % p * 52 + c] = 0
                    o[_AT["won"] + (winner - observer) % p * 52 + c] = 1
                for k in range(p):
                    o[_AT["round_points"] + k] = points[(observer + k) % p]
                o[_AT["trick_number"]] = tricks_done
        return st

    def _finish_trick(self, rows: np.ndarray, g: np.ndarray, trick: np.ndarray,
                      at: np.ndarray) -> None:
        """Rows whose game completed trick ``trick``: clear it, add the cards won, rescore.

        One scatter, row by row, as in ``step``: per row the leader's flag and the P
        cards of the trick are cleared, the P cards are added to the winner's, and the
        P provisional points and the trick count are written.
        """
        st, rules, p = self.engine.state, self.engine.rules, self.engine.rules.num_players
        n = len(rows)
        slot = g * rules.num_tricks + trick  # (n,) flat index of the trick in (B, T) arrays
        # (take along axis 0 is several times faster than indexing [slot] for 2-D arrays)
        cards = st.trick_cards.reshape(-1, p).take(slot, axis=0)  # (n, P) card by absolute seat
        winner = self._relative(st.trick_winner.reshape(-1).take(slot), rows)  # (n,)
        leader = self._relative(st.trick_leader.reshape(-1).take(slot), rows)  # (n,)
        points = provisional_points(rules, _Rows(st, g))  # (n, P) int32 absolute seats
        where = np.empty((n, 3 * p + 2), np.int64)  # (n, 3P + 2) flat indices, see below
        values = np.empty(where.shape, np.float32)  # (n, 3P + 2)
        np.add(at, leader + _AT["trick_leader"], out=where[:, 0])
        won_at = at + (_AT["won"] + winner * 52)  # (n,) flat index of the winner's card 0
        for absolute in range(p):  # one seat (column) at a time
            card = cards[:, absolute]  # (n,) int8
            rel = self._relative(absolute, rows)  # its relative seat: int or (n,)
            np.add(at + (_AT["current_trick"] + rel * 52), card, out=where[:, 1 + absolute])
            np.add(won_at, card, out=where[:, 1 + p + absolute])
            np.add(at, _AT["round_points"] + rel, out=where[:, 1 + 2 * p + absolute])
        np.add(at, _AT["trick_number"], out=where[:, -1])
        values[:, :1 + p] = 0  # the leader and the trick in progress are cleared
        values[:, 1 + p:1 + 2 * p] = 1  # the winner took the cards
        values[:, 1 + 2 * p:-1] = _encode(points / self._scale, self.dtype)
        values[:, -1] = _encode(st.trick_index[g] / rules.num_tricks, self.dtype)
        self._flat[where] = values

    def _relative(self, absolute: int | np.ndarray, rows: np.ndarray) -> int | np.ndarray:
        """Relative seats, for the observers of ``rows``, of ``absolute``: one seat (an int)
        or (n,) int8 seats. With one observer seat for every row (the vector environment)
        a table look-up, an int for an int; else (n,) int64, by modulo."""
        if self._relative_of is not None:
            if isinstance(absolute, int):
                return int(self._relative_of[absolute])
            return self._relative_of.take(absolute)
        return (absolute - self.seats[rows]) % self.engine.rules.num_players

    def _rows_of(self, games: np.ndarray | None) -> np.ndarray:
        """(n,) rows observing any of ``games`` (default: every row)."""
        if games is None:
            return np.arange(len(self.seats))
        games = np.asarray(games, dtype=np.int64)
        if self._identity:
            return games
        chosen = np.zeros(self.engine.batch_size, bool)  # (B,)
        chosen[games] = True
        return np.flatnonzero(chosen[self.games])


_AT = {name: s.start for name, s in SLICES.items()}  # first column of each block
# Phase.PLAY as a numpy scalar (numpy compares arrays with an IntEnum member slowly).
_PLAY = np.int8(Phase.PLAY)


def shows_void(card: int | np.ndarray, led: int | np.ndarray) -> bool | np.ndarray:
    """Whether playing ``card`` to a trick whose led suit is ``led`` (-1: none yet; card
    -1: none) shows the player lacks the led suit: a card of another suit. Ints or
    arrays (broadcast)."""
    return (card >= 0) & (led >= 0) & (card // C.CARDS_PER_SUIT != led)


# Hearts' inferences, as bits of the suits (C D H S = bits 0..3) a seat is shown to lack.
_LED_UNBROKEN_HEART = 0b1011  # led a heart before hearts broke: it holds only hearts
_POINTS_ON_FIRST_TRICK = 0b0011  # a point card off suit to the first trick: only points left
_SPADES = 0b1000  # ... and if that card was QS, no spade is left either


def _voids(st: State | _Rows, rules: Rules) -> np.ndarray:
    """(B, P, 4) float32: suits each seat is known to lack.

    A seat that did not follow the led suit lacks it. In Hearts the rules reveal
    more: a seat that led a heart before hearts were broken held only hearts
    (void in C, D, S); a seat that played a point card (a heart or ``QS``) off suit
    to the first trick held nothing but point cards (void in C and D, and in S too
    if the card was ``QS``). These are the inferences a player at the table can make.
    """
    completed = st.trick_winner >= 0  # (B, T)
    lead_card = np.take_along_axis(st.trick_cards, np.maximum(st.trick_leader, 0)[:, :, None],
                                   axis=2)[:, :, 0]  # (B, T) card the leader played
    led = np.concatenate([np.where(completed, lead_card // 13, -1), st.led_suit[:, None]],
                         axis=1).astype(np.int8)  # (B, T+1) led suit; the trick in progress last
    cards = np.concatenate([st.trick_cards, st.current_trick[:, None, :]], axis=1)  # (B,T+1,P)
    missed = shows_void(cards, led[:, :, None])  # (B, T+1, P) did not follow
    # Bit s set: a card was played off the led suit s; OR over the tricks, then unpack.
    led_bit = np.where(led >= 0, np.uint8(1) << np.maximum(led, 0).astype(np.uint8),
                       np.uint8(0))  # (B, T+1) uint8
    bits = np.where(missed, led_bit[:, :, None], np.uint8(0))  # (B, T+1, P) uint8
    shown = bits[:, 0].copy()  # (B, P) uint8: OR one trick at a time (a reduce over the
    for trick in range(1, bits.shape[1]):  # middle axis is several times slower)
        shown |= bits[:, trick]
    if rules.is_hearts:
        shown |= _hearts_inferences(st, rules, cards, missed)
    return (shown[:, :, None] >> np.arange(4, dtype=np.uint8) & 1).astype(np.float32)


def _inferred_voids(card: np.ndarray, led: np.ndarray, trick: np.ndarray,
                    broken: np.ndarray) -> np.ndarray:
    """(n,) uint8 void bits that Hearts' rules reveal about the seat that just played
    ``card`` (n,) to a trick led with ``led`` (-1: it led), trick index ``trick``, with
    hearts ``broken`` before the card (see ``_voids``)."""
    heart = card // 13 == C.HEARTS
    queen = card == C.QUEEN_OF_SPADES
    first_off = (trick == 0) & shows_void(card, led) & (heart | queen)
    return (np.where((led < 0) & heart & ~broken, _LED_UNBROKEN_HEART, 0)
            | np.where(first_off, _POINTS_ON_FIRST_TRICK, 0)
            | np.where(first_off & queen, _SPADES, 0)).astype(np.uint8)


def _hearts_inferences(st: State | _Rows, rules: Rules, cards: np.ndarray,
                       missed: np.ndarray) -> np.ndarray:
    """(B, P) uint8 void bits of Hearts' two inferences (see ``_voids``), from the tricks
    ``cards`` (B, T+1, P) (the trick in progress last) and ``missed`` (did not follow)."""
    b, t = cards.shape[0], cards.shape[1] - 1
    breaking = breaks_hearts(hearts_breakers(rules), cards)  # (B, T+1, P); -1 (none): 2C
    broke = breaking.any(axis=2)  # (B, T+1) a card of that trick broke hearts
    # The trick in progress is at index T here, but after trick_index completed tricks.
    index = np.minimum(st.trick_index.astype(np.int64), t)  # (B,)
    order = np.concatenate([np.arange(t)[None, :].repeat(b, 0), index[:, None]], axis=1)
    # broken_before[b, k]: a completed trick before (in play order) trick k broke hearts.
    completed = np.concatenate([st.trick_winner >= 0, np.zeros((b, 1), bool)], axis=1)
    before = (order[:, None, :] < order[:, :, None]) & (broke & completed)[:, None, :]
    broken_before = before.any(axis=2)  # (B, T+1)
    leader = np.concatenate([st.trick_leader, np.where(
        st.trick_size > 0, st.trick_leader[np.arange(b), np.minimum(index, t - 1)], -1)[:, None]],
        axis=1)  # (B, T+1) seat that led each trick, -1 = none
    lead = np.take_along_axis(cards, np.maximum(leader, 0)[:, :, None], axis=2)[:, :, 0]
    hearts_led = (leader >= 0) & (lead // 13 == C.HEARTS) & ~broken_before  # (B, T+1)
    seats = np.arange(cards.shape[2])
    out = np.zeros((b, cards.shape[2]), np.uint8)
    out |= np.where((hearts_led[:, :, None] & (seats == leader[:, :, None])).any(axis=1),
                    np.uint8(_LED_UNBROKEN_HEART), np.uint8(0))
    first = np.where((order == 0)[:, :, None], cards, -1).max(axis=1)  # (B, P) first trick
    off = np.where((order == 0)[:, :, None], missed, False).any(axis=1)  # (B, P)
    point = (first // 13 == C.HEARTS) | (first == C.QUEEN_OF_SPADES)
    out |= np.where(off & point, np.uint8(_POINTS_ON_FIRST_TRICK), np.uint8(0))
    out |= np.where(off & (first == C.QUEEN_OF_SPADES), np.uint8(_SPADES), np.uint8(0))
    return out


STATE_EXTRA = (MAX_SEATS * 52, 52, MAX_SEATS * 52)  # hands, dead pile, passes
STATE_SIZE = OBSERVATION_SIZE + sum(STATE_EXTRA)


def full_state(engine: Engine) -> np.ndarray:
    """(B, STATE_SIZE) float32: seat 0's observation, then every hand (absolute seats,
    padded to 5), the dead pile and every seat's chosen passes."""
    st, p = engine.state, engine.rules.num_players
    b = st.batch_size
    pad = [(0, 0), (0, MAX_SEATS - p), (0, 0)]
    hands = np.pad(_bits(st.hands), pad).reshape(b, -1)
    passes = np.pad(_bits(_card_sets(st.passes)), pad).reshape(b, -1)
    return np.concatenate([observe(engine, 0), hands, _bits(st.dead), passes], axis=1,
                          dtype=np.float32)
