"""The vectorised rules core: B games of one ``Rules`` stepped in lockstep.

``Engine(rules, batch_size)`` owns a ``State`` (see ``state.py``) and offers
``reset``, ``step``, the exact ``legal_mask`` (B, 70) and ``sample_legal``. The
engine keeps the batch state and the phase machine (deal, pass, curse, bid,
play, end of round, end of match); the rules themselves are functions in their
own modules, each named in ``docs/rules.md``: ``deal`` (keys, shuffle, pass
exchange), ``legal`` (legal sets), ``play`` (trick winner, hearts broken, and the
three play paths), ``scoring`` (round points, winners, match end, next dealer),
``bits`` (bit-set helpers). The environments, agents and experiments only read
the state.

Design notes:

* Hands, won cards and legal sets are ``uint64`` bitmasks, so following suit is
  one ``&`` with a suit mask and counting hearts is one ``np.bitwise_count``.
  The (B, 70) bool mask is only built when asked for.
* A step touches every game that is still playing at once; the rarer events (a
  trick completes, a round ends, a phase changes) run on the subset of games
  they concern, still vectorised. No Python loop runs over games; the deal
  alone loops over the deck's cards (a card's seat depends on the cards dealt
  before it), with whole-batch operations per card.
* Games that started together stay in lockstep; the play paths (``play.py``)
  use that: a masked or gathered path serves any mix of games.
* Randomness is counter-based: the deal of round ``r`` of game ``i`` is a hash of
  (seed, game id ``i``, ``r``), so a game is the same alone or in any batch.
* A step first checks every action and raises ``ValueError`` (naming game,
  seat, action and the legal actions) before it changes anything.
* Speed: at large B the cost is whole-array passes over memory, so the hot path
  avoids temporaries (``out=``), short inner axes (column loops instead of
  (B, P) reductions and (B, 1) broadcasts), mixed-dtype operations (numpy casts
  them through a buffer), fresh (B, P) temporaries (their pages fault in again)
  and gathers from big tables (``sample_legal`` selects bits with byte-wise SWAR
  arithmetic and a 16 KB table); ``take`` uses ``mode="clip"`` where the indices
  are known to be in range (it skips the bounds check). A whole-batch reset
  refills the engine's own State instead of allocating one. At B = 1 the cost is
  the number of numpy calls, so the hot path makes few of them (below 64 games
  it keeps the forms with fewer calls, ``_few``) and skips whole-batch checks the
  cached lockstep makes unnecessary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from smoor_env.core import cards as C
from smoor_env.core.bits import ONE, U32, U56, byte_prefix_counts, kth_set_bit, popcount
from smoor_env.core.checks import (
    SEED_LIMIT,
    ChangeGuard,
    check_batch_size,
    check_seed,
    int_array,
)
from smoor_env.core.deal import Dealer, check_hands, first_dealers, game_keys, received
from smoor_env.core.legal import (
    BID_LEGAL,
    LED_MASKS,
    curse_legal,
    opening_card,
    pass_legal,
    play_legal,
)
from smoor_env.core.rules import TOTALS_BOUND, Rules
from smoor_env.core.scoring import best, match_over, next_dealer, round_score
from smoor_env.core.state import (
    BID_OFFSET,
    CURSE_OFFSET,
    NUM_ACTIONS,
    PHASE_ACTION_OFFSET,
    ROUND_RECORD_FIELDS,
    Phase,
    State,
)
from smoor_env.core.tricks import PlayPaths, hearts_breakers, trick_keys

# The value of every element of each State.finished array in an empty State.
_EMPTY_FILL = {name: array.flat[0] for name, array in State.empty(1, 1, 1).finished.items()}
# Phase.PLAY as a numpy scalar: comparing an array with the IntEnum member itself costs
# numpy a slow lookup of array protocols on the enum.
_PLAY = np.int8(Phase.PLAY)
# legal_mask: per phase, how far the legal bits move to land on their action ids, as
# left shifts into word 0 (actions 0..63) and right/left shifts into word 1 (64..127);
# 64 stands for "nothing" (numpy gives 0 for shifts of 64 or more).
_MASK_LOW_SHIFT = PHASE_ACTION_OFFSET.astype(np.uint64)
_MASK_HIGH_RSHIFT = np.array([64 - o if 0 < o < 64 else 64 for o in PHASE_ACTION_OFFSET],
                             np.uint64)
_MASK_HIGH_LSHIFT = np.array([o - 64 if o >= 64 else 64 for o in PHASE_ACTION_OFFSET],
                             np.uint64)
# The general play step works on whole-batch arrays, masked, once at least one game in
# this many plays (measured: it then beats gathering the playing games' rows), in
# batches of 64 games or more (below, numpy calls cost more than the data: it gathers).
_MASKED_PLAY_SHARE = 4


class Engine(PlayPaths):
    """B games of one rule set, stepped together.

    Args:
        rules: the rules shared by every game of the batch.
        batch_size: B, the number of games.

    Attributes:
        state: the ``State`` of the B games (mutated in place by ``reset`` and ``step``).
    """

    def __init__(self, rules: Rules, batch_size: int = 1) -> None:
        if not isinstance(rules, Rules):
            raise TypeError(f"rules must be a smoor_env.Rules, got {type(rules).__name__}")
        self.rules = rules
        self.batch_size = check_batch_size(batch_size, "batch_size")
        # Set while a step or reset changes the state: one cut short (Ctrl-C) is refused
        # by the next step until a reset of every game (ValueError/TypeError: no change).
        self._guard = ChangeGuard("Engine", (ValueError, TypeError))
        p = rules.num_players
        self._players = p
        self._all = np.arange(self.batch_size)  # (B,)
        self._base = self._all * p  # (B,) flat offset of seat 0 of each game in (B, P) arrays
        self._next_seat = np.roll(np.arange(p, dtype=np.int8), -1)  # (P,) seat -> its left
        self._trick_keys = trick_keys(rules)  # P x (5 * 52,) int16, see play.trick_winner
        self._hearts_breakers = hearts_breakers(rules)  # (52,) bool
        self._dealer = Dealer(rules)
        self._opening_card = opening_card(rules)
        self._curse_legal = curse_legal(rules)
        self._ones = np.ones(self.batch_size, np.uint64)  # (B,) for 1 << action
        # A few games: the cost is the number of numpy calls, not passes over memory.
        self._few = self.batch_size < 64
        self._sample_buffers: tuple[np.ndarray, ...] | None = None  # sample_legal's scratch
        # Bids (52..65) and cursed suits (66..69) are the only actions past bit 63 of the
        # action space; without them every legal set is already the action mask.
        self._wide_actions = rules.bidding or rules.cupids_arrow
        # Counts the changes made to the state through the engine (step, reset, refresh_legal,
        # assigning engine.state), so that observers can tell whether it moved under them.
        self.version = 0
        self.state = State.empty(self.batch_size, p, rules.num_tricks)
        self._own_state: State | None = None  # the last State that reset made (reused)
        self.state.phase[:] = Phase.OVER  # nothing is legal before reset

    # ------------------------------------------------------------ caches
    # Facts about the state are remembered between steps, to spare the hot path a few
    # whole-batch tests and gathers (and numpy calls, which dominate at small batch sizes):
    #   _lockstep: (trick position, trick index) when every game is live, in the play
    #       phase and at that same place; None when unknown or not so.
    #   _round_over_clear: state.round_over is known to be all False.
    #   _play_cache: (lockstep, flat index and hand of the player to act, cards of the
    #       led suit or None), left by a lockstep step; valid while _lockstep is that
    #       very tuple.
    # Only the engine writes the state; assigning ``engine.state`` (or refresh_legal)
    # forgets them.
    @property
    def state(self) -> State:
        """The ``State`` of the B games (mutated in place by ``reset`` and ``step``)."""
        return self._state

    @state.setter
    def state(self, state: State) -> None:
        self.version += 1
        self._state = state
        self._lockstep: tuple[int, int] | None = None
        self._round_over_clear = False
        self._play_cache = None

    def refresh_legal(self) -> None:
        """Recompute every game's legal set from its state (after installing a state built
        by hand, e.g. a sampled world: ``engine.state = world; engine.refresh_legal()``).

        Forgets the cached play facts; the lockstep facts are forgotten by assigning
        ``engine.state`` (edit the arrays of a state in place only before assigning it)."""
        self.version += 1
        self._play_cache = None
        self._update_legal(self._all)

    def install(self, state: State) -> State:
        """Play on from a known position: ``state`` (B games) becomes the engine's state.

        For positions built outside the engine: the sampled worlds of a search agent,
        a position read from a record. The state is checked first, like ``reset``'s
        arguments; on an error (``ValueError`` naming the field and the first bad
        game) nothing changes. The engine then owns ``state`` (it is stepped in place)
        and recomputes every legal set from it.

        Checked: the shapes and dtypes of every field; phase, seats, led suit, bids and
        cursed suit in range; in the pass, curse, bid and play phases, that the hands,
        the cards won, the trick in progress and the dead pile are disjoint and hold
        exactly the deck; that ``played`` is the cards won plus the trick; that the trick
        in progress agrees with ``trick_mask``, ``trick_size`` and ``led_suit``; that the
        cards played add up to ``trick_index`` full tricks plus the trick in progress;
        and that every hand holds the cards it should at that point of the trick.
        """
        if not isinstance(state, State):
            raise TypeError(f"state must be a smoor_env.State, got {type(state).__name__}")
        rules, p, b = self.rules, self._players, self.batch_size
        like = State.empty(b, p, rules.num_tricks)
        for f in dataclasses.fields(State):
            if f.name == "finished":
                continue
            want, got = getattr(like, f.name), getattr(state, f.name)
            if (not isinstance(got, np.ndarray) or got.shape != want.shape
                    or got.dtype != want.dtype):
                kind = getattr(got, "dtype", type(got).__name__)
                raise ValueError(f"state.{f.name} must be {want.dtype} of shape {want.shape}, "
                                 f"got {kind} {getattr(got, 'shape', None)}")

        def check(bad: np.ndarray, what: str) -> None:
            if bad.any():
                raise ValueError(f"cannot install the state: {what} (game {int(np.argmax(bad))})")

        phase = state.phase
        check((phase < 0) | (phase > Phase.OVER), "phase out of range")
        check((state.current_player < 0) | (state.current_player >= p),
              "current_player out of range")
        check((state.led_suit < -1) | (state.led_suit > 3), "led_suit out of range")
        check(((state.bids < -1) | (state.bids > 13)).any(axis=1), "a bid out of range -1..13")
        check((state.cursed_suit < -1) | (state.cursed_suit > 3), "cursed_suit out of range")
        live = phase != Phase.OVER
        held = np.bitwise_or.reduce(state.hands, axis=1)  # (B,)
        won = np.bitwise_or.reduce(state.won, axis=1)
        count = (popcount(state.hands).sum(axis=1) + popcount(state.won).sum(axis=1)
                 + popcount(state.trick_mask) + popcount(state.dead))  # (B,)
        union = held | won | state.trick_mask | state.dead
        check(live & ((union != self._dealer.deck) | (count != len(self._dealer.deck_cards))),
              "the hands, cards won, trick and dead pile are not exactly the deck")
        check(live & (state.played != (won | state.trick_mask)),
              "played is not the cards won plus the trick in progress")
        in_trick = state.current_trick >= 0  # (B, P)
        trick_set = np.bitwise_or.reduce(np.where(
            in_trick, C.CARD_BITS[np.maximum(state.current_trick, 0)], np.uint64(0)), axis=1)
        size = state.trick_size
        check(live & ((trick_set != state.trick_mask) | (in_trick.sum(axis=1) != size)
                      | ((size == 0) != (state.led_suit < 0)) | (size >= p)),
              "current_trick, trick_mask, trick_size and led_suit disagree")
        check(live & (popcount(state.played) != state.trick_index.astype(np.int64) * p + size),
              "the cards played are not trick_index full tricks plus the trick in progress")
        # Each seat has played one card per finished trick, plus one if it is in the trick.
        expected = rules.hand_size - state.trick_index[:, None].astype(np.int64) - in_trick
        playing = live & (phase == Phase.PLAY)
        check(playing & (popcount(state.hands) != expected).any(axis=1),
              "a hand holds the wrong number of cards for this point of the round")
        self.state = state
        self.refresh_legal()
        return state

    def _find_lockstep(self) -> tuple[int, int] | None:
        """(trick position, trick index) shared by every game if all are live and playing."""
        st = self.state
        pos, trick = int(st.trick_size[0]), int(st.trick_index[0])
        if ((st.phase == _PLAY).all() and not st.match_over.any()
                and (st.trick_size == pos).all() and (st.trick_index == trick).all()):
            self._lockstep = (pos, trick)
        return self._lockstep

    def _clear_round_over(self) -> None:
        if not self._round_over_clear:
            self.state.round_over[:] = False
            self._round_over_clear = True

    # ------------------------------------------------------------------ reset
    def reset(
        self,
        seed: int,
        *,
        game_ids: Sequence[int] | np.ndarray | None = None,
        dealers: Sequence[int] | np.ndarray | None = None,
        hands: Sequence | np.ndarray | None = None,
        games: Sequence[int] | np.ndarray | None = None,
        round_number: Sequence[int] | np.ndarray | None = None,
        totals: Sequence | np.ndarray | None = None,
    ) -> State:
        """Start new matches: all B games, or only ``games`` (the others go on untouched).

        Args:
            seed: the seed of the batch, an int in 0..2**64 - 1. Game ``i`` is
                determined by (rules, seed, ``game_ids[i]``) alone, whatever the batch size.
            game_ids: (n,) ints in 0..2**64 - 1 naming each started game's random stream; default
                ``0..B-1`` (or ``games``). ``reset(seed, game_ids=[7])`` replays game 7
                of a larger batch alone.
            dealers: (n,) first dealer of each game; default drawn uniformly from the
                seed (the cut for the highest card).
            hands: the first round's deal instead of a shuffle: per game, per seat,
                the cards dealt to that seat, as ids (array (n, P, hand size)) or as
                text (``[["AH", "TD", ...], ...]`` or ``"AH TD ..."`` per seat). The
                dead pile is the rest of the deck.
            games: (n,) indices of the games to start; default every game. Used by
                vector environments to reset finished games while the others play on.
                An empty list starts none and changes nothing.
            round_number: (n,) number of the first round (default 1), to replay a later
                round of a match (Cupid's Arrow and Hearts passing depend on it).
            totals: (n, P) match totals before the first round (default 0), each within
                ``rules.TOTALS_BOUND`` (1_000_000_000) in magnitude.

        Raises:
            TypeError: a seed that is not an int.
            ValueError: any value of the wrong type, shape or range (naming it); nothing
                has changed then.

        Returns:
            The state (also ``self.state``). A reset of every game refills the State
            that the engine's previous whole-batch reset made, in place: keep a
            ``state.copy()``, not the object, to compare matches.
        """
        args = self._reset_args(seed, game_ids, dealers, hands, games, round_number, totals)
        if args is None:
            return self.state  # no game to start (a vector env with none to reset)
        rows, given, game_key, first_dealer, first_round, start_totals = args
        if len(game_key) < self.batch_size:  # the other games go on: they must be whole
            self._guard.check("reset(games=...)")
        with self._guard.changing("reset()"):
            return self._start_matches(rows, given, game_key, first_dealer, first_round,
                                       start_totals)

    def check_reset(self, seed: int, **kwargs: Any) -> None:
        """Raise as ``reset(seed, **kwargs)`` would on a bad argument, changing nothing
        (environments check a reset before they change their own fields)."""
        self._reset_args(seed, **kwargs)

    def _reset_args(self, seed: int, game_ids=None, dealers=None, hands=None, games=None,
                    round_number=None, totals=None) -> tuple | None:
        """``reset``'s arguments checked: (rows or None for all, the given hands or None,
        (n,) game keys, (n,) first dealers, (n,) first rounds, (n, P) totals), or None if
        ``games`` is empty."""
        b, p = self.batch_size, self._players
        seed = check_seed(seed)
        rows = None if games is None else int_array(games, "games", (None,), 0, b - 1, np.int64)
        if rows is not None and rows.shape == (0,):
            return None
        if rows is not None and len(np.unique(rows)) != len(rows):
            raise ValueError(f"games must be distinct game indices 0..{b - 1}, got {games!r}")
        n = b if rows is None else len(rows)
        ids = (self._all if rows is None else rows) if game_ids is None \
            else int_array(game_ids, "game_ids", (n,), 0, SEED_LIMIT - 1, np.uint64)
        game_key = game_keys(seed, ids)  # (n,)
        if dealers is None:
            first_dealer = first_dealers(game_key, p)
        else:
            first_dealer = int_array(dealers, "dealers", (n,), 0, p - 1, np.int8)
        first_round = np.ones(n, np.int16)
        if round_number is not None:
            first_round = int_array(round_number, "round_number", (n,), 1,
                                    self.rules.max_rounds, np.int16)
        start_totals = np.zeros((n, p), np.int32)
        if totals is not None:
            start_totals = int_array(totals, "totals", (n, p), -TOTALS_BOUND, TOTALS_BOUND,
                                     np.int32)
        given = None if hands is None else check_hands(self.rules, hands, n)
        return rows, given, game_key, first_dealer, first_round, start_totals

    def _start_matches(self, rows: np.ndarray | None, given: np.ndarray | None,
                       game_key: np.ndarray, first_dealer: np.ndarray,
                       first_round: np.ndarray, start_totals: np.ndarray) -> State:
        """``reset``'s changes, its arguments checked: the matches of ``rows`` (None: all)."""
        n, p = len(game_key), self._players
        if rows is None and self._state is self._own_state:
            # Every game restarts: refill the engine's own arrays rather than allocate a
            # new State. _start_round rewrites the round's fields; these are the others.
            state = self._own_state
            for array in (state.round_points, state.round_winners, state.round_over,
                          state.match_over, state.winners):
                array.fill(0)
            for name, array in state.finished.items():
                array.fill(_EMPTY_FILL[name])
        else:
            state = State.empty(n, p, self.rules.num_tricks)
        state.game_key[:] = game_key
        state.dealer[:] = first_dealer
        state.round_number[:] = first_round
        state.totals[:] = start_totals
        if rows is None:
            self.state = self._own_state = state
            rows = self._all
        else:  # write the new games' rows into the running batch
            for name, value in vars(state).items():
                if name == "finished":
                    for key, array in value.items():
                        self._state.finished[key][rows] = array
                else:
                    getattr(self._state, name)[rows] = value
            self.state = self._state  # forget what was known about the whole batch
        self._start_round(rows, given)
        return self.state

    # ------------------------------------------------------------- round flow
    def _start_round(self, idx: np.ndarray, given: np.ndarray | None = None) -> None:
        """Deal round ``round_number`` for games idx and enter its first phase."""
        st, p = self.state, self._players
        rows = slice(None) if idx is self._all else idx  # a slice writes faster
        if given is None:
            hands = self._dealer.deal(st.game_key[rows], st.round_number[rows])
        else:
            hands = given
        st.hands[rows] = hands
        st.dealt[rows] = hands
        st.dead[rows] = self._dealer.dead_pile(hands)
        st.won[rows] = 0
        st.played[rows] = 0
        st.passes[rows] = -1
        st.pass_out[rows] = 0
        st.cursed_suit[rows] = -1
        st.bids[rows] = -1
        st.hearts_broken[rows] = False
        st.trick_index[rows] = 0
        st.trick_size[rows] = 0
        st.led_suit[rows] = -1
        st.trick_cards[rows] = -1
        st.current_trick[rows] = -1
        st.trick_mask[rows] = 0
        st.trick_leader[rows] = -1
        st.trick_winner[rows] = -1
        left = (st.dealer[rows] + 1) % p
        passing = self.rules.pass_offset(st.round_number[rows]) != 0  # (n,)
        cursing = np.full(len(idx), self.rules.cupids_arrow) & (st.round_number[rows] >= 2)
        # Phases in RULES.md order: pass, curse, bid, play.
        st.phase[rows] = np.where(passing, Phase.PASS, np.where(
            cursing, Phase.CURSE, Phase.BID if self.rules.bidding else Phase.PLAY))
        st.current_player[rows] = np.where(cursing & ~passing, st.dealer[rows], left)
        self._begin_play(idx[st.phase[rows] == Phase.PLAY])
        self._update_legal(idx)
        self._lockstep = None  # the next step looks again

    def _begin_play(self, idx: np.ndarray) -> None:
        """First lead of the round: left of the dealer; in Hearts the holder of 2C (3C)."""
        st = self.state
        if self.rules.is_hearts:
            holds = (st.hands[idx] >> np.uint64(self._opening_card)) & ONE  # (n, P)
            st.current_player[idx] = np.argmax(holds, axis=1)
        else:
            st.current_player[idx] = (st.dealer[idx] + 1) % self._players
        st.phase[idx] = Phase.PLAY

    def _update_legal(self, idx: np.ndarray) -> None:
        """Recompute ``state.legal`` for games idx from their phase."""
        st = self.state
        phase = st.phase[idx]
        at = idx * self._players + st.current_player[idx]
        hand = st.hands.reshape(-1).take(at)  # (n,) hand of the player to act
        rules_of_phase = {  # computed only for the phases present (usually one)
            Phase.PLAY: lambda: self._play_legal(idx, hand),
            Phase.PASS: lambda: pass_legal(hand, st.pass_out.reshape(-1).take(at)),
            Phase.BID: lambda: BID_LEGAL,
            Phase.CURSE: lambda: self._curse_legal,
        }
        first = int(phase[0])
        if (phase == first).all():
            st.legal[idx] = rules_of_phase[first]() if first in rules_of_phase else 0
            return
        legal = np.zeros(len(idx), np.uint64)  # Phase.OVER: nothing is legal
        for kind, rule in rules_of_phase.items():
            here = phase == kind
            if here.any():
                legal = np.where(here, rule(), legal)
        st.legal[idx] = legal

    def _play_legal(self, rows: np.ndarray | slice, hand: np.ndarray,
                    leading: np.ndarray | bool | None = None,
                    first: np.ndarray | bool | None = None,
                    led_mask: np.ndarray | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
        """(n,) uint64 legal cards of the player to act in games ``rows`` (play phase):
        ``legal.play_legal`` with what it needs read from the state.

        ``leading`` (nobody has played to the trick yet) and ``first`` (it is the first
        trick) are read from the state, or given as Python bools when they are the same
        for every game (lockstep); ``led_mask`` (n,) uint64: the cards of the led suit,
        when already known. ``out``: an (n,) array the result may be written to.
        """
        st = self.state
        if led_mask is None and leading is not True:
            led_mask = LED_MASKS.take(st.led_suit[rows])  # (n,) empty while leading
        broken = None
        if self.rules.is_hearts:
            leading = st.trick_size[rows] == 0 if leading is None else leading
            first = st.trick_index[rows] == 0 if first is None else first
            broken = st.hearts_broken[rows]
        return play_legal(self.rules, hand, led_mask, leading, first, broken, self._few, out)

    # ------------------------------------------------------------------- step
    @property
    def legal_words(self) -> np.ndarray:
        """(B, 2) uint64: the legal actions as bits, action a at bit a % 64 of word a // 64
        (the ``legal_mask`` packed, for callers that work on bits).

        ``state.legal`` is relative to the phase's first action; shifted by it, it spans
        the two words (numpy shifts by 64 or more give 0, so one of two shifts is used).
        """
        st = self.state
        words = np.zeros((self.batch_size, 2), np.uint64)  # (B, 2): actions 0..63, 64..127
        if self._wide_actions:  # bids and cursed suits: actions 52..69
            phase = st.phase
            words[:, 0] = st.legal << _MASK_LOW_SHIFT.take(phase)
            words[:, 1] = ((st.legal >> _MASK_HIGH_RSHIFT.take(phase))
                           | (st.legal << _MASK_HIGH_LSHIFT.take(phase)))
        else:  # every legal set is a set of cards (actions 0..51)
            words[:, 0] = st.legal
        return words

    @property
    def legal_mask(self) -> np.ndarray:
        """(B, 70) bool: exactly the legal actions of each game (all False once over).

        One ``unpackbits`` of ``legal_words`` (without bids and cursed suits, of the
        legal sets themselves: they are already the action bits).
        """
        words = self.legal_words if self._wide_actions else self.state.legal
        return np.unpackbits(words.view(np.uint8).reshape(self.batch_size, -1), axis=1,
                             count=NUM_ACTIONS, bitorder="little").view(bool)

    @property
    def current_player(self) -> np.ndarray:
        """(B,) int8 seat to act in each game."""
        return self.state.current_player

    def step(self, actions: np.ndarray | Sequence[int],
             active: np.ndarray | Sequence[bool] | None = None) -> State:
        """Apply one action per game. Games whose match is over ignore theirs.

        Args:
            actions: (B,) integer action ids (0..69).
            active: optional (B,) bool: only these games act; the others ignore their
                action and stay as they are (used by environments whose games wait for
                different players).

        Returns:
            The state after the step (also ``self.state``).

        Raises:
            ValueError: on a wrong shape or type, an out-of-range id, an illegal
                action in any live game (naming the game, seat, action and the legal
                actions), or a step when no game can act. The state is then unchanged.
        """
        self._guard.check("step()")
        self.version += 1  # observers compare it to notice changes
        try:
            with self._guard.changing("step()"):
                return self._step(actions, active)
        except (ValueError, TypeError):  # raised before any change: nothing changed
            self.version -= 1
            raise

    def _step(self, actions: np.ndarray | Sequence[int],
              active: np.ndarray | Sequence[bool] | None) -> State:
        st = self.state
        a = self._check_shape(actions)
        if active is not None:
            active = np.asarray(active)
            if active.shape != (self.batch_size,) or active.dtype != bool:
                raise ValueError(f"active must be a ({self.batch_size},) bool array, got "
                                 f"shape {active.shape} dtype {active.dtype}")
            if not active.all():
                return self._step_games(a, active)
        lock = self._lockstep if self._lockstep is not None else self._find_lockstep()
        if lock is not None:
            # The hot path: every game plays a card at the same place in its trick. A
            # play-phase legal set holds only card bits, and 1 << a is 0 for a >= 64 or
            # a < 0 (a huge uint64), so this one test checks range and legality at once.
            bit = np.left_shift(self._ones, a.view(np.uint64))  # (B,) uint64
            if np.count_nonzero(np.bitwise_and(st.legal, bit)) == self.batch_size:
                self._clear_round_over()
                self._play_lockstep(a, bit, lock)
                return st
            self._raise_illegal(a)
        return self._step_games(a, ~st.match_over)

    def _step_games(self, a: np.ndarray, live: np.ndarray) -> State:
        """The general step: the ``live`` games act (all playing a card, the usual
        case: one check, then a masked or gathered play; else grouped by phase)."""
        st = self.state
        live = live & ~st.match_over  # (B,)
        n_live = np.count_nonzero(live)
        if not n_live:
            raise ValueError("no game of the batch can act: every match is over or inactive; "
                             "call reset() first")
        if np.count_nonzero(live & (st.phase == _PLAY)) == n_live:
            # Every acting game plays a card (the usual case). As in the lockstep path,
            # 1 << a & legal checks range and legality at once; what is left is the bit
            # of each card played, 0 in the games that do not act.
            bit = np.left_shift(self._ones, a.view(np.uint64))  # (B,) uint64
            np.bitwise_and(bit, st.legal, out=bit)
            np.multiply(bit, live, out=bit)
            if np.count_nonzero(bit) != n_live:
                self._raise_illegal(a, live)
            self._clear_round_over()
            self._lockstep = None  # games may fall out of step
            if n_live * _MASKED_PLAY_SHARE >= self.batch_size and not self._few:
                self._play_masked(a, live, bit)  # many games: whole-batch arrays, masked
            else:
                idx = np.flatnonzero(live)
                self._play(idx, a[idx])  # a few: gather them, work on them only
            return st
        if len(self._illegal_games(a, live)):
            self._raise_illegal(a, live)
        self._clear_round_over()
        self._lockstep = None  # games may fall out of step
        # Group the games by phase before any handler runs: a game that changes
        # phase during this step must not be handled twice.
        phase = np.where(live, st.phase, Phase.OVER)
        groups = [(handler, np.flatnonzero(phase == ph)) for ph, handler in (
            (Phase.PLAY, self._play), (Phase.PASS, self._pass),
            (Phase.CURSE, self._curse), (Phase.BID, self._bid))]
        for handler, idx in groups:
            if len(idx):
                handler(idx, a[idx])
        return st

    def is_legal(self, actions: np.ndarray | Sequence[int]) -> np.ndarray:
        """(B,) bool: whether each game's action is legal now (False once its match is over).

        Raises:
            ValueError: on a wrong shape or type, as ``step`` does.
        """
        return self._legal_of(self._as_actions(actions))

    def _as_actions(self, actions: np.ndarray | Sequence[int]) -> np.ndarray:
        """The actions as a (B,) int64 array; ValueError on a wrong shape or type."""
        a = np.asarray(actions)
        if a.shape != (self.batch_size,):
            raise ValueError(f"actions must have shape ({self.batch_size},) (one per game), "
                             f"got {a.shape}")
        if a.dtype.kind not in "iu":
            raise ValueError(f"actions must be integers, got dtype {a.dtype}")
        return a.astype(np.int64, copy=False)

    def _check_shape(self, actions: np.ndarray | Sequence[int]) -> np.ndarray:
        """``_as_actions``, and ValueError if every match of the batch is over."""
        a = self._as_actions(actions)
        if self._lockstep is None and self.state.match_over.all():
            raise ValueError("every match in the batch is over; call reset() first")
        return a

    def _legal_of(self, a: np.ndarray) -> np.ndarray:
        """(B,) bool: whether each game's action ``a`` (B,) int64 is legal now."""
        st = self.state
        rel = a - PHASE_ACTION_OFFSET[st.phase]  # (B,) bit of the action in the legal set
        inside = (rel >= 0) & (rel < 64)
        return inside & ((st.legal >> np.where(inside, rel, 0).astype(np.uint64)) & ONE == 1)

    def _illegal_games(self, a: np.ndarray, live: np.ndarray | None = None) -> np.ndarray:
        """Indices of live games whose action is not legal."""
        live = ~self.state.match_over if live is None else live
        return np.flatnonzero(~self._legal_of(a) & live)

    def _raise_illegal(self, a: np.ndarray, live: np.ndarray | None = None) -> None:
        bad = self._illegal_games(a, live)
        g = int(bad[0])
        raise ValueError(self._illegal_message(g, int(a[g])) + (
            f" ({len(bad)} games got an illegal action: {bad[:10].tolist()}"
            f"{'...' if len(bad) > 10 else ''})" if len(bad) > 1 else ""))

    def _illegal_message(self, g: int, action: int) -> str:
        st = self.state
        phase = Phase(int(st.phase[g]))
        legal = [int(x) for x in np.flatnonzero(self.legal_mask[g])]
        return (f"illegal action in game {g}: seat {int(st.current_player[g])} "
                f"({phase.name.lower()} phase) chose {action_str(action)}; "
                f"legal: {' '.join(action_str(x) for x in legal)}")

    # ---------------------------------------------------------------- phases
    def _pass(self, idx: np.ndarray, card: np.ndarray) -> None:
        """Hearts: the current player chooses one card to pass (three each, in turn)."""
        st, p = self.state, self._players
        seat = st.current_player[idx]
        at = idx * p + seat  # (n,) flat index of (game, seat) in (B, P) arrays
        pass_out = st.pass_out.reshape(-1)
        chosen_set = pass_out.take(at) | C.CARD_BITS.take(card)
        pass_out[at] = chosen_set
        chosen = popcount(chosen_set)  # (n,) 1..3 cards chosen by this seat
        st.passes.reshape(-1)[at * 3 + chosen - 1] = card
        st.current_player[idx] = np.where(chosen == 3, self._next_seat.take(seat), seat)
        # Everyone has chosen once the seat right of the first passer (the dealer) has.
        complete = (chosen == 3) & (seat == st.dealer[idx])
        done = idx[complete]
        if len(done):
            out = st.pass_out[done]  # (n, P)
            gets = received(out, self.rules.pass_offset(st.round_number[done]))  # (n, P)
            st.hands[done] = (st.hands[done] & ~out) | gets
            self._begin_play(done)
        self._update_legal(idx)

    def _curse(self, idx: np.ndarray, action: np.ndarray) -> None:
        """Cupid's Arrow: the dealer names the cursed suit; then bidding or play."""
        st = self.state
        st.cursed_suit[idx] = action - CURSE_OFFSET
        st.current_player[idx] = (st.dealer[idx] + 1) % self._players
        if self.rules.bidding:
            st.phase[idx] = Phase.BID
        else:
            self._begin_play(idx)
        self._update_legal(idx)

    def _bid(self, idx: np.ndarray, action: np.ndarray) -> None:
        """Blinde Liefde: bids go clockwise from left of the dealer, who bids last."""
        st = self.state
        seat = st.current_player[idx]
        st.bids[idx, seat] = action - BID_OFFSET
        st.current_player[idx] = (seat + 1) % self._players
        last = idx[seat == st.dealer[idx]]
        if len(last):
            self._begin_play(last)
        self._update_legal(idx)

    # --------------------------------------------------------------- scoring
    # ------------------------------------------------------------ end of round
    def _end_round(self, idx: np.ndarray) -> None:
        """Score the round of games idx, decide the match, and deal the next round."""
        st, rules = self.state, self.rules
        rows = slice(None) if idx is self._all else idx  # a slice copies faster
        self._lockstep = None
        self._round_over_clear = False
        for name in ROUND_RECORD_FIELDS:
            st.finished[name][rows] = getattr(st, name)[rows]
        points = round_score(rules, st.won[rows], st.dead[rows], st.bids[rows],
                             st.cursed_suit[rows])
        st.round_points[rows] = points
        totals = st.totals[rows] + points
        st.totals[rows] = totals
        st.round_over[rows] = True
        st.round_winners[rows] = best(rules, points)
        leaders = best(rules, totals)  # (n, P) best total
        over = match_over(rules, totals, leaders, st.round_number[rows])  # (n,)
        everyone_over = over.all()
        ended = rows if everyone_over else idx[over]
        st.match_over[ended] = True
        st.winners[ended] = leaders if everyone_over else leaders[over]
        st.phase[ended] = Phase.OVER
        st.legal[ended] = 0
        if everyone_over:
            return
        going = idx[~over]
        if len(going):
            st.dealer[going] = next_dealer(rules, st.dealer[going], st.won[going])
            st.round_number[going] += 1
            self._start_round(going)

    def round_score(self, won: np.ndarray, dead: np.ndarray, bids: np.ndarray,
                    cursed_suit: np.ndarray) -> np.ndarray:
        """Round points (n, P) int32 under the engine's rules: ``scoring.round_score``."""
        return round_score(self.rules, won, dead, bids, cursed_suit)

    # ------------------------------------------------------------ sampling
    def sample_legal(self, rng: np.random.Generator,
                     rows: np.ndarray | None = None) -> np.ndarray:
        """(B,) int64 uniformly random legal action of each game (0 where the match is over).

        Each game takes one 32-bit draw ``r`` from ``rng`` (half a ``random_raw`` word)
        and picks the k-th legal action, k = (r * number legal) >> 32 (uniform up to a
        bias below 2**-26), with ``kth_set_bit``. No (B, 70) array and no nested ``where``.

        ``rows`` (k,) int indices of games: only their actions (k,), the same as
        ``sample_legal(rng)[rows]`` (every game's draw is still taken, so ``rng`` advances
        as for the whole batch) at the cost of k games (a rollout's few random moves).
        """
        st, b = self.state, self.batch_size
        if b == 1:  # the same draw with Python ints: no numpy call overhead
            legal = st.legal.item()
            total = legal.bit_count()
            # The low half of a raw word, as the batch's (little-endian) uint32 view.
            k = (rng.bit_generator.random_raw() & 0xFFFFFFFF) * total >> 32
            for _ in range(k):
                legal &= legal - 1  # drop the lowest set bit
            action = (legal & -legal).bit_length() - 1
            action += int(PHASE_ACTION_OFFSET[st.phase.item()])
            one = np.array([action if total else 0], np.int64)
            return one if rows is None else one[rows]
        draw = rng.bit_generator.random_raw((b + 1) // 2).view(np.uint32)[:b]  # (B,) uint32
        if rows is not None:
            rows = np.asarray(rows, np.intp)  # (k,)
            return self._kth_legal(st.legal[rows], draw[rows], st.phase[rows],
                                   tuple(np.empty(len(rows), np.uint64) for _ in range(3)))
        if self._sample_buffers is None:
            self._sample_buffers = tuple(np.empty(b, np.uint64) for _ in range(3))
        return self._kth_legal(st.legal, draw, st.phase, self._sample_buffers)

    def _kth_legal(self, legal: np.ndarray, draw: np.ndarray, phase: np.ndarray,
                   buffers: tuple[np.ndarray, ...]) -> np.ndarray:
        """(n,) int64 the action ``draw`` (n,) uint32 picks among each (n,) legal set."""
        upto, k, scratch = buffers  # (n,) uint64 each
        upto = byte_prefix_counts(legal, out=upto)  # byte j: set bits in bytes 0..j
        total = np.right_shift(upto, U56, out=k)  # (n,) legal actions
        k = np.multiply(draw, total, out=k)
        k = np.right_shift(k, U32, out=k)  # (n,) uniform 0..total-1
        actions = kth_set_bit(legal, k, upto, scratch)  # (n,) int64 0..63
        if self._wide_actions:
            actions += PHASE_ACTION_OFFSET.take(phase)
        if self._lockstep is None:  # some matches may be over (no legal action): 0
            actions[legal == 0] = 0
        return actions


def action_str(action: int) -> str:
    """Readable text of an action id: a card (``QS``), ``bid 3`` or ``curse H``."""
    action = int(action)
    if 0 <= action < C.NUM_CARDS:
        return C.card_str(action)
    if BID_OFFSET <= action < CURSE_OFFSET:
        return f"bid {action - BID_OFFSET}"
    if CURSE_OFFSET <= action < NUM_ACTIONS:
        return f"curse {C.SUITS[action - CURSE_OFFSET]}"
    return f"action {action} (out of range 0..69)"
