"""``ObservationTracker``: chosen (game, seat) observations kept up to date as the
engine steps, writing only what each step changes (the environments read theirs here).
"""

from collections.abc import Sequence
from typing import Any

import numpy as np

from smoor_env.core.engine import Engine
from smoor_env.core.scoring import provisional_points, score_scale
from smoor_env.core.state import Phase, State
from smoor_env.observation.encode import (
    _PLAY,
    _indices,
    _inferred_voids,
    _Rows,
    observe,
    shows_void,
)
from smoor_env.observation.layout import (
    _AT,
    COMPACT_UNITS,
    OBSERVATION_SIZE,
    _encode,
    observation_dtype,
)


class ObservationTracker:
    """Observations of fixed (game, seat) pairs of an engine, kept up to date step by step.

    ``observe`` builds all 1128 floats of an observation from the state; a card
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

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_flat"]  # a view of _out: a pickle would copy it apart from _out
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._flat = self._out.reshape(-1)  # (M * OBSERVATION_SIZE,) patched in place

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
        # close together in time, in a (M, 1128) array far bigger than the cache). A
        # write that does not apply to a row repeats its "played" write (value 1): the
        # cost is the cache lines touched, and that one was just touched.
        at_card = at + rel * 52 + card  # (n,) flat index of (relative seat, card) in a block
        led = led[g].astype(np.int64)  # (n,) led suit before this card, -1 = it led
        # The three writes that apply to some rows only are the "played" index plus, where
        # they apply, the offset from it to their own (a multiply by a bool: no masks).
        where = np.empty((len(rows), 6), np.int64)  # (n, 6) flat indices
        played_at = np.add(at_card, _AT["played"], out=where[:, 0])  # (n,) strided view
        np.add(at_card, _AT["current_trick"], out=where[:, 1])
        own = rel == 0  # (n,) the observer played it: it leaves the observer's hand
        # (own: rel = 0, so hand + card is played_at + hand - played)
        np.add(played_at, own * (_AT["hand"] - _AT["played"]), out=where[:, 2])
        lead = size[g] == 0  # (n,) the card led the trick
        leader_at = (_AT["trick_leader"] - _AT["played"]) - 51 * rel - card  # (n,) offset
        np.add(played_at, lead * leader_at, out=where[:, 3])
        void = shows_void(card, led)  # (n,) it did not follow the led suit
        void_at = (_AT["voids"] - _AT["played"]) - 48 * rel + led - card  # (n,) offset
        np.add(played_at, void * void_at, out=where[:, 4])
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


