"""What one seat knows, as a flat float32 vector, for every game of a batch at once.

Seats are *relative* to the observer: relative seat 0 is the observer, 1 the
player on their left, 2 the next one, and so on. Every per-seat block has room
for 5 seats whatever the player count (unused seats are zeros), so one policy
can play 3, 4 and 5 players and does not depend on where it sits.

Layout (``OBSERVATION_SIZE`` = 1076 floats; ``observation_slices()`` names them,
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
``voids``           5 x 4      suits (C D H S) a seat showed it lacks by not following
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
==================  =========  =================================================

With partners, ``round_points`` and ``totals`` show the team's numbers on both
partners, as the engine does. Nothing about other seats' hands, the dead pile
or cards passed between other seats is included.

``full_state`` adds what no seat knows (every hand by absolute seat, the dead
pile and every seat's passes) after the observation of absolute seat 0, for
centralised critics.
"""

from __future__ import annotations

import numpy as np

from smoor_env import cards as C
from smoor_env.engine import Engine
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
)
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


def split_observation(obs: np.ndarray) -> dict[str, np.ndarray]:
    """Views of a (..., OBSERVATION_SIZE) array as named blocks of their documented shapes."""
    lead = obs.shape[:-1]
    return {name: obs[..., s].reshape(*lead, *_SHAPES[name]) for name, s in SLICES.items()}


def _card_sets(cards: np.ndarray) -> np.ndarray:
    """Card-id arrays (..., K) with -1 = none -> uint64 sets (...)."""
    bits = np.where(cards >= 0, C.CARD_BITS.take(np.maximum(cards, 0)), np.uint64(0))
    return np.bitwise_or.reduce(bits, axis=-1)


def _one_hot(index: np.ndarray, size: int) -> np.ndarray:
    """(...,) ints (negative = none) -> (..., size) float32 one-hot."""
    out = np.zeros((*index.shape, size), np.float32)
    valid = (index >= 0) & (index < size)
    np.put_along_axis(out, np.where(valid, index, 0)[..., None].astype(np.int64),
                      valid[..., None].astype(np.float32), axis=-1)
    return out


def score_scale(engine: Engine) -> float:
    """The full round total that scales points: 17/34 base, 104/208 pips, 26 Hearts."""
    rules = engine.rules
    if rules.is_hearts:
        return 26.0
    hearts = 104 if rules.pip_scoring else 12 + rules.ace_of_hearts_points
    return float(2 * hearts)


def provisional_points(engine: Engine, state: State | None = None) -> np.ndarray:
    """(B, P) int32 round points as if the round ended now (Hearts: minus penalty points).

    The dead pile is taken as empty, so a sweep (or the moon) only counts once all
    13 hearts are won: the value never depends on hidden cards. At the end of a
    round, use ``state.round_points`` instead (the real score).
    """
    st = engine.state if state is None else state
    points = engine.round_score(st.won, np.zeros_like(st.dead), st.bids, st.cursed_suit)
    return -points if engine.rules.is_hearts else points


def _bits(masks: np.ndarray) -> np.ndarray:
    """uint64 bitmasks of shape S -> uint8 0/1 array S + (52,) (bit c = card id c)."""
    m = np.ascontiguousarray(masks, dtype=np.uint64)
    return np.unpackbits(m.view(np.uint8).reshape(*m.shape, 8), axis=-1, count=C.NUM_CARDS,
                         bitorder="little")


def observe(engine: Engine, seats: np.ndarray | int) -> np.ndarray:
    """(B, OBSERVATION_SIZE) float32: what each game's observer seat knows.

    Every block is written in place into one zeroed array (the views of
    ``split_observation``), seat-relative blocks through one (B, P) index of the
    absolute seat behind each relative seat.

    Args:
        engine: the engine whose ``state`` is observed.
        seats: (B,) absolute seat of the observer in each game (or one seat for all).
    """
    st, rules, p = engine.state, engine.rules, engine.rules.num_players
    b = st.batch_size
    seat = np.broadcast_to(np.asarray(seats, dtype=np.int64), (b,))
    rows = np.arange(b)
    by_rel = (rows[:, None], (seat[:, None] + np.arange(p)) % p)  # (B, P) index: relative k
    ks = np.arange(p)[None, :]  # (1, P) relative seat numbers
    out = np.zeros((b, OBSERVATION_SIZE), np.float32)
    v = split_observation(out)  # writable views into out

    v["phase"][rows, st.phase] = 1
    v["hand"][:] = _bits(st.hands[rows, seat])
    trick = st.current_trick[by_rel]  # (B, P) card of each relative seat, -1 = none
    v["current_trick"][rows[:, None], ks, trick] = trick >= 0
    current = np.minimum(st.trick_index, rules.num_tricks - 1)
    leader = st.trick_leader[rows, current]  # (B,) absolute seat, -1 before the lead
    v["trick_leader"][rows, (leader - seat) % p] = (st.trick_size > 0) & (leader >= 0)
    # Cards played: what each seat held when play began, less what it holds now.
    offset = pass_offsets(engine, st.round_number)  # (B,) 0 = no pass this round
    passes = _card_sets(st.passes)  # (B, P) cards each seat chose to pass
    exchanged = (offset > 0) & (st.phase != Phase.PASS)  # (B,) the cards changed hands
    giver = (np.arange(p)[None, :] - offset[:, None]) % p  # (B, P) who passes to each seat
    received = passes[rows[:, None], giver]  # (B, P)
    at_start = np.where(exchanged[:, None], (st.dealt & ~passes) | received, st.dealt)
    v["played"][:, :p] = _bits((at_start & ~st.hands)[by_rel])
    v["won"][:, :p] = _bits(st.won[by_rel])
    v["voids"][:, :p] = _voids(st)[by_rel]
    scale = score_scale(engine)
    v["round_points"][:, :p] = provisional_points(engine)[by_rel] / scale
    target = float(rules.target_score) if rules.target_score is not None else scale
    v["totals"][:, :p] = st.totals[by_rel] / target
    bids = st.bids[by_rel]  # (B, P)
    v["bids"][rows[:, None], ks, bids] = bids >= 0
    v["cursed_suit"][rows, st.cursed_suit] = st.cursed_suit >= 0
    v["dealer"][rows, (st.dealer - seat) % p] = 1
    v["pass_direction"][rows, offset] = offset > 0
    v["passed"][:] = _bits(passes[rows, seat])
    v["received"][:] = _bits(np.where(exchanged, received[rows, seat], np.uint64(0)))
    v["hearts_broken"][:, 0] = st.hearts_broken
    v["trick_number"][:, 0] = st.trick_index / rules.num_tricks
    v["num_players"][:, p - 3] = 1
    v["rules"][:] = [rules.is_hearts] + [bool(getattr(rules, name)) for name in RULE_FLAGS]
    return out


def pass_offsets(engine: Engine, round_number: np.ndarray) -> np.ndarray:
    """(B,) int64 seat offset of the Hearts pass in each game's round (0 = no pass)."""
    rules = engine.rules
    cycle = np.array([rules.pass_offset(r) for r in range(1, 5)])  # period 2 or 4
    return cycle[(round_number.astype(np.int64) - 1) % 4]


def _voids(st: State) -> np.ndarray:
    """(B, P, 4) float32: suits each seat showed it lacks (it did not follow the led suit)."""
    completed = st.trick_winner >= 0  # (B, T)
    lead_card = np.take_along_axis(st.trick_cards, np.maximum(st.trick_leader, 0)[:, :, None],
                                   axis=2)[:, :, 0]  # (B, T) card the leader played
    led = np.concatenate([np.where(completed, lead_card // 13, -1), st.led_suit[:, None]],
                         axis=1).astype(np.int64)  # (B, T+1) led suit; the trick in progress last
    cards = np.concatenate([st.trick_cards, st.current_trick[:, None, :]], axis=1)  # (B,T+1,P)
    missed = (cards >= 0) & (led[:, :, None] >= 0) & (cards // 13 != led[:, :, None])
    led_suit = _one_hot(led, 4).astype(bool)  # (B, T+1, 4)
    return (missed[:, :, :, None] & led_suit[:, :, None, :]).any(axis=1).astype(np.float32)


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
