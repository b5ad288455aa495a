"""The vectorised rules core: B games of one ``Rules`` stepped in lockstep.

``Engine(rules, batch_size)`` owns a ``State`` (see ``state.py``) and offers
``reset``, ``step``, the exact ``legal_mask`` (B, 70) and ``sample_legal``.
Every rule of ``docs/rules.md`` lives here, once; the environments, agents and
experiments only read the state.

Design notes:

* Hands, won cards and legal sets are ``uint64`` bitmasks, so following suit is
  one ``&`` with a suit mask and counting hearts is one ``np.bitwise_count``.
  The (B, 70) bool mask is only built when asked for.
* A step touches every game that is still playing at once; the rarer events (a
  trick completes, a round ends, a phase changes) run on the subset of games
  they concern, still vectorised. No Python loop runs over games or cards.
* Randomness is counter-based: the deal of round ``r`` of game ``i`` is a hash of
  (seed, game id ``i``, ``r``), so a game is the same alone or in any batch.
* A step first checks every action and raises ``ValueError`` (naming game,
  seat, action and the legal actions) before it changes anything.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from smoor_env import cards as C
from smoor_env.rules import Rules
from smoor_env.state import (
    BID_OFFSET,
    CURSE_OFFSET,
    NUM_ACTIONS,
    PHASE_ACTION_OFFSET,
    ROUND_RECORD_FIELDS,
    Phase,
    State,
)

_U1 = np.uint64(1)
_HEARTS = np.uint64(C.HEART_MASK)
_QS = np.uint64(1 << 49)
_AH = 38
_PENALTY_CARDS = np.uint64(C.HEART_MASK | (1 << 49))
# Kleine Liefde: heart of rank r (2..14) scores r. Bit j of the pip value of each heart,
# as masks: pip points = sum_j 2**j * popcount(hearts won & _PIP_BITS[j]).
_PIP_BITS = [np.uint64(sum(1 << (26 + r - 2) for r in range(2, 15) if r >> j & 1))
             for j in range(4)]
_MIX1, _MIX2, _GOLDEN = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), \
    np.uint64(0x9E3779B97F4A7C15)


_SUIT_OF = (np.arange(C.NUM_CARDS) // 13).astype(np.int8)  # (52,) suit of each card id
_NONE = np.int8(-1)


def _strength_table(trump_hearts: bool) -> np.ndarray:
    """(5 * 52,) int8: strength of card c in a trick whose led suit is s, at ``s * 52 + c``.

    The highest card of the led suit wins (card ids rise with rank within a suit);
    with trump_hearts any heart beats every card of another suit; -1 never wins.
    Row 4 (all -1) is padding so that every index is valid.
    """
    table = np.full((5, C.NUM_CARDS), -1, np.int8)
    cards = np.arange(C.NUM_CARDS)
    for led in range(4):
        table[led] = np.where(np.equal(_SUIT_OF, led), cards % 13, -1)
        if trump_hearts:
            table[led] = np.where(_SUIT_OF == C.HEARTS, 13 + cards % 13, table[led])
    return table.reshape(-1)


def _select16_table() -> np.ndarray:
    """(65536 * 16,) uint8: position of the k-th set bit of a 16-bit word w, at w * 16 + k."""
    words = np.arange(1 << 16, dtype=np.uint32)
    bits = (words[:, None] >> np.arange(16, dtype=np.uint32)) & 1  # (65536, 16)
    rank = np.cumsum(bits, axis=1) - 1  # rank of each set bit within its word
    word, pos = np.nonzero(bits)
    table = np.zeros((1 << 16, 16), np.uint8)
    table[word, rank[word, pos]] = pos
    return table.reshape(-1)


_SELECT16: np.ndarray | None = None  # built on first use (about 1 MB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a bijective hash of uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _MIX1
        x = (x ^ (x >> np.uint64(27))) * _MIX2
        return x ^ (x >> np.uint64(31))


def _bits(cards: np.ndarray) -> np.ndarray:
    """uint64 bit of each card id (any shape)."""
    return _U1 << cards.astype(np.uint64)


def _popcount(masks: np.ndarray) -> np.ndarray:
    return np.bitwise_count(masks).astype(np.int32)


class Engine:
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
        if not isinstance(batch_size, int | np.integer) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.rules = rules
        self.batch_size = int(batch_size)
        p = rules.num_players
        self._players = p
        self._seats = np.arange(p)  # (P,)
        self._all = np.arange(self.batch_size)  # (B,)
        self._base = self._all * p  # (B,) flat offset of seat 0 of each game in (B, P) arrays
        self._next_seat = np.roll(np.arange(p, dtype=np.int8), -1)  # (P,) seat -> its left
        self._strength = _strength_table(rules.trump_hearts)  # (5 * 52,) int8
        # Hearts: which cards break hearts when played.
        queen = np.arange(C.NUM_CARDS) == 49
        self._breaks_hearts = (_SUIT_OF == C.HEARTS) | (queen & rules.queen_breaks_hearts)
        # Seat -> side (team or player) used for sweeps, round wins and match wins.
        self._side = np.array([0, 1, 0, 1]) if rules.partners else self._seats  # (P,)
        self._side_size = 2 if rules.partners else 1
        self._deck = np.uint64(rules.deck_mask)
        self._deck_cards = np.array(C.cards_of(rules.deck_mask))  # (N,) card ids in play
        # Hearts: the lowest club in play leads the first trick (2C, or 3C with 5 players).
        self._opening_card = int(self._deck_cards[0])
        cycle = [rules.pass_offset(r) for r in range(1, 5)] if rules.passing else [0]
        self._pass_cycle = np.array(cycle[: 2 if p == 3 else 4], dtype=np.int8)
        curse = 0b1111 if rules.cursed_suit_may_be_hearts else 0b1011
        self._curse_legal = np.uint64(curse)
        self._bid_legal = np.uint64((1 << 14) - 1)
        self.state = State.empty(self.batch_size, p, rules.num_tricks)
        self.state.phase[:] = Phase.OVER  # nothing is legal before reset

    # ------------------------------------------------------------------ reset
    def reset(
        self,
        seed: int,
        *,
        game_ids: Sequence[int] | np.ndarray | None = None,
        dealers: Sequence[int] | np.ndarray | None = None,
        hands: Sequence | np.ndarray | None = None,
    ) -> State:
        """Start B new matches.

        Args:
            seed: the seed of the batch. Game ``i`` is determined by (rules, seed,
                ``game_ids[i]``) alone, whatever the batch size.
            game_ids: (B,) ints naming each game's random stream; default ``0..B-1``.
                ``reset(seed, game_ids=[7])`` replays game 7 of a larger batch alone.
            dealers: (B,) first dealer of each game; default drawn uniformly from the
                seed (the cut for the highest card).
            hands: the first round's deal instead of a shuffle: per game, per seat,
                the cards dealt to that seat, as ids (array (B, P, hand size)) or as
                text (``[["AH", "TD", ...], ...]`` or ``"AH TD ..."`` per seat). The
                dead pile is the rest of the deck.

        Returns:
            The new state (also ``self.state``).
        """
        b, p = self.batch_size, self._players
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise TypeError(f"seed must be an int, got {seed!r}")
        ids = self._all if game_ids is None else np.asarray(game_ids)
        if ids.shape != (b,) or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"game_ids must be {b} ints (shape ({b},)), got shape {ids.shape}")
        seed_key = _mix(np.array([int(seed) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]
        game_key = _mix(_mix(ids.astype(np.uint64) * _GOLDEN) ^ seed_key)  # (B,)
        if dealers is None:
            first_dealer = (_mix(game_key ^ _GOLDEN) % np.uint64(p)).astype(np.int8)
        else:
            first_dealer = np.asarray(dealers)
            if first_dealer.shape != (b,) or not np.issubdtype(first_dealer.dtype, np.integer):
                raise ValueError(f"dealers must be {b} ints (shape ({b},)), "
                                 f"got shape {first_dealer.shape}")
            if ((first_dealer < 0) | (first_dealer >= p)).any():
                raise ValueError(f"dealers must be seats 0..{p - 1}, got {first_dealer.tolist()}")
            first_dealer = first_dealer.astype(np.int8)
        given = None if hands is None else self._check_hands(hands)
        state = State.empty(b, p, self.rules.num_tricks)
        state.game_key[:] = game_key
        state.dealer[:] = first_dealer
        self.state = state
        self._start_round(self._all, given)
        return state

    def _check_hands(self, hands: Sequence | np.ndarray) -> np.ndarray:
        """Validate a given deal; returns (B, P) uint64 hands."""
        b, p, n = self.batch_size, self._players, self.rules.hand_size
        if len(hands) != b:
            raise ValueError(f"hands must hold a deal for each of the {b} games, got {len(hands)}")
        out = np.zeros((b, p), np.uint64)
        for g, deal in enumerate(hands):
            if len(deal) != p:
                raise ValueError(f"game {g}: the deal must have {p} hands, got {len(deal)}")
            seen: set[int] = set()
            for seat, hand in enumerate(deal):
                ids = C.parse_cards(hand) if isinstance(hand, str) else [
                    C.parse_card(c) if isinstance(c, str) else int(c) for c in hand]
                if len(ids) != n:
                    raise ValueError(f"game {g}, seat {seat}: a hand has {n} cards, got {len(ids)}")
                for c in ids:
                    if not (0 <= c < C.NUM_CARDS and self.rules.deck_mask >> c & 1):
                        raise ValueError(f"game {g}, seat {seat}: card {c} is not in the deck")
                    if c in seen:
                        raise ValueError(f"game {g}: card {C.card_str(c)} is dealt twice")
                    seen.add(c)
                out[g, seat] = np.uint64(C.mask_of(ids))
        return out

    def _deal(self, idx: np.ndarray) -> np.ndarray:
        """Shuffled hands (n, P) uint64 for games idx, dealt one at a time from left of dealer."""
        st, p, n = self.state, self._players, self.rules.hand_size
        size, games = len(self._deck_cards), len(idx)
        # Round r of game g draws from a splitmix64 stream keyed by hash(game key, r):
        # each 64-bit output gives two 32-bit draws for a Fisher-Yates shuffle.
        with np.errstate(over="ignore"):
            key = _mix(st.game_key[idx] + st.round_number[idx].astype(np.uint64) * _MIX2)
            counters = np.arange(1, (size + 1) // 2 + 1, dtype=np.uint64) * _GOLDEN  # (N/2,)
            words = _mix(counters[:, None] + key)  # (N/2, n) uint64
        halves = (words >> np.uint64(32), words & np.uint64(0xFFFFFFFF))  # 2 x (N/2, n)
        # Deck positions first, games second, so each position is one contiguous row.
        deck = np.repeat(self._deck_cards[:, None], games, axis=1)  # (N, n) card ids
        flat = deck.reshape(-1)
        column = np.arange(games)
        for i in range(size - 1, 0, -1):  # swap position i with a uniform j in 0..i
            draw = halves[i % 2][i // 2]  # (n,) uniform 32-bit
            at = ((draw * np.uint64(i + 1)) >> np.uint64(32)).astype(np.int64) * games + column
            card = deck[i].copy()
            deck[i] = flat.take(at)
            flat[at] = card
        # The card at position j goes to the seat j % P places left of the dealer's left.
        dealt = C.CARD_BITS.take(deck[: n * p]).reshape(n, p, games)
        by_turn = np.bitwise_or.reduce(dealt, axis=0).T  # (n, P), seat 0 = dealer's left
        rel = (self._seats[None, :] - st.dealer[idx, None] - 1) % p  # (n, P)
        return np.take_along_axis(by_turn, rel, axis=1)

    # ------------------------------------------------------------- round flow
    def _start_round(self, idx: np.ndarray, given: np.ndarray | None = None) -> None:
        """Deal round ``round_number`` for games idx and enter its first phase."""
        st, p = self.state, self._players
        hands = self._deal(idx) if given is None else given
        st.hands[idx] = hands
        st.dealt[idx] = hands
        st.dead[idx] = self._deck & ~np.bitwise_or.reduce(hands, axis=1)
        st.won[idx] = 0
        st.played[idx] = 0
        st.passes[idx] = -1
        st.pass_out[idx] = 0
        st.cursed_suit[idx] = -1
        st.bids[idx] = -1
        st.hearts_broken[idx] = False
        st.trick_index[idx] = 0
        st.trick_size[idx] = 0
        st.led_suit[idx] = -1
        st.trick_cards[idx] = -1
        st.current_trick[idx] = -1
        st.trick_mask[idx] = 0
        st.trick_leader[idx] = -1
        st.trick_winner[idx] = -1
        left = (st.dealer[idx] + 1) % p
        offset = self._pass_cycle[(st.round_number[idx] - 1) % len(self._pass_cycle)]
        passing = offset != 0
        cursing = np.full(len(idx), self.rules.cupids_arrow) & (st.round_number[idx] >= 2)
        # Phases in RULES.md order: pass, curse, bid, play.
        st.phase[idx] = np.where(passing, Phase.PASS, np.where(
            cursing, Phase.CURSE, Phase.BID if self.rules.bidding else Phase.PLAY))
        st.current_player[idx] = np.where(cursing & ~passing, st.dealer[idx], left)
        self._begin_play(idx[st.phase[idx] == Phase.PLAY])
        self._update_legal(idx)

    def _begin_play(self, idx: np.ndarray) -> None:
        """First lead of the round: left of the dealer; in Hearts the holder of 2C (3C)."""
        st = self.state
        if self.rules.is_hearts:
            holds = (st.hands[idx] >> np.uint64(self._opening_card)) & _U1  # (n, P)
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
        legal = np.where(phase == Phase.PLAY, self._play_legal(idx, hand), np.uint64(0))
        legal = np.where(phase == Phase.PASS, hand & ~st.pass_out.reshape(-1).take(at), legal)
        legal = np.where(phase == Phase.BID, self._bid_legal, legal)
        legal = np.where(phase == Phase.CURSE, self._curse_legal, legal)
        st.legal[idx] = legal

    def _play_legal(self, rows: np.ndarray | slice, hand: np.ndarray) -> np.ndarray:
        """(n,) uint64 legal cards of the player to act in games ``rows`` (play phase)."""
        st = self.state
        size = st.trick_size[rows]
        leading = size == 0
        follow = hand & C.SUIT_MASKS.take(st.led_suit[rows])  # led_suit -1 (leading): ignored
        legal = np.where(leading | (follow == 0), hand, follow)
        if not self.rules.is_hearts:
            return legal
        # Hearts. First trick: the opening card is led; a player who cannot follow
        # may not play a heart or QS unless nothing else is left (QS never, by option).
        first = st.trick_index[rows] == 0
        opening = np.uint64(1 << self._opening_card)
        clean = hand & ~_PENALTY_CARDS
        if self.rules.queen_never_first_trick:
            fallback = np.where(hand & ~_QS != 0, hand & ~_QS, hand)
        else:
            fallback = hand
        void_first = np.where(clean != 0, clean, fallback)
        legal = np.where(first & ~leading & (follow == 0), void_first, legal)
        legal = np.where(first & leading, opening, legal)
        # Hearts may not be led until broken, unless the leader holds only hearts.
        no_hearts = hand & ~_HEARTS
        unbroken_lead = leading & ~first & ~st.hearts_broken[rows] & (no_hearts != 0)
        return np.where(unbroken_lead, no_hearts, legal)

    # ------------------------------------------------------------------- step
    @property
    def legal_mask(self) -> np.ndarray:
        """(B, 70) bool: exactly the legal actions of each game (all False once over)."""
        st = self.state
        bits = np.unpackbits(st.legal.view(np.uint8).reshape(-1, 8), axis=1,
                             bitorder="little").view(bool)  # (B, 64)
        mask = np.zeros((self.batch_size, NUM_ACTIONS), bool)
        mask[:, : C.NUM_CARDS] = bits[:, : C.NUM_CARDS]
        for phase, offset, width in ((Phase.BID, BID_OFFSET, 14), (Phase.CURSE, CURSE_OFFSET, 4)):
            rows = st.phase == phase
            if rows.any():
                mask[rows] = False
                mask[rows, offset: offset + width] = bits[rows, :width]
        return mask

    @property
    def current_player(self) -> np.ndarray:
        """(B,) int8 seat to act in each game."""
        return self.state.current_player

    def step(self, actions: np.ndarray | Sequence[int]) -> State:
        """Apply one action per game. Games whose match is over ignore theirs.

        Args:
            actions: (B,) integer action ids (0..69).

        Returns:
            The state after the step (also ``self.state``).

        Raises:
            ValueError: on a wrong shape or type, an out-of-range id, an illegal
                action in any live game (naming the game, seat, action and the legal
                actions), or a step when every match is over. The state is then
                unchanged.
        """
        st = self.state
        a = self._check_shape(actions)
        if not st.match_over.any() and (st.phase == Phase.PLAY).all():
            # The hot path: every game plays a card; one check of every card at once.
            if a.min() >= 0 and a.max() < C.NUM_CARDS:
                bit = C.CARD_BITS.take(a)  # (B,) uint64
                if ((st.legal & bit) != 0).all():
                    st.round_over[:] = False
                    self._play(self._all, a, bit)
                    return st
            self._raise_illegal(a)
        a = self._check_legal(a)
        st.round_over[:] = False
        # Group the games by phase before any handler runs: a game that changes
        # phase during this step must not be handled twice.
        phase = np.where(st.match_over, Phase.OVER, st.phase)
        groups = [(handler, np.flatnonzero(phase == ph)) for ph, handler in (
            (Phase.PLAY, self._play), (Phase.PASS, self._pass),
            (Phase.CURSE, self._curse), (Phase.BID, self._bid))]
        for handler, idx in groups:
            if len(idx):
                handler(idx, a[idx])
        return st

    def _check_shape(self, actions: np.ndarray | Sequence[int]) -> np.ndarray:
        a = np.asarray(actions)
        if a.shape != (self.batch_size,):
            raise ValueError(f"actions must have shape ({self.batch_size},) (one per game), "
                             f"got {a.shape}")
        if not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be integers, got dtype {a.dtype}")
        if self.state.match_over.all():
            raise ValueError("every match in the batch is over; call reset() first")
        return a.astype(np.int64, copy=False)

    def _illegal_games(self, a: np.ndarray) -> np.ndarray:
        """Indices of live games whose action is not legal."""
        st = self.state
        rel = a - PHASE_ACTION_OFFSET[st.phase]
        inside = (rel >= 0) & (rel < 64)
        ok = inside & ((st.legal >> np.where(inside, rel, 0).astype(np.uint64)) & _U1 == 1)
        return np.flatnonzero(~ok & ~st.match_over)

    def _check_legal(self, a: np.ndarray) -> np.ndarray:
        if len(self._illegal_games(a)):
            self._raise_illegal(a)
        return a

    def _raise_illegal(self, a: np.ndarray) -> None:
        bad = self._illegal_games(a)
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
    def _play(self, idx: np.ndarray, card: np.ndarray, bit: np.ndarray | None = None) -> None:
        """Play one card in games idx (all in the play phase).

        Written for the lockstep case: when every game of idx is at the same
        position in its trick (always so when a batch starts together), the lead,
        the trick's end and the next legal sets are decided once for all.
        """
        st, p = self.state, self._players
        everyone = idx is self._all
        rows = slice(None) if everyone else idx  # views instead of copies on the hot path
        base = self._base if everyone else idx * p  # (n,) flat offset of seat 0
        bit = C.CARD_BITS.take(card) if bit is None else bit  # (n,) uint64
        seat = st.current_player[rows].copy()  # (n,) int8
        at = base + seat
        hands = st.hands.reshape(-1)
        hands[at] = hands.take(at) ^ bit
        st.played[rows] |= bit
        st.trick_mask[rows] |= bit
        st.current_trick.reshape(-1)[at] = card
        if self.rules.is_hearts:
            st.hearts_broken[rows] |= self._breaks_hearts.take(card)
        size = st.trick_size[rows]  # (n,) cards already in the trick
        first = int(size[0])
        if (size == first).all():  # lockstep: one position for all
            if first == 0:
                self._lead(idx, rows, seat, card)
            if first + 1 == p:
                st.trick_size[rows] = 0
                self._finish_trick(idx)  # the winner leads next
            else:
                st.trick_size[rows] = first + 1
                st.current_player[rows] = self._next_seat.take(seat)
        else:
            leading = size == 0
            if leading.any():
                lead = idx[leading]
                self._lead(lead, lead, seat[leading], card[leading])
            done = size + 1 == p
            st.trick_size[rows] = np.where(done, 0, size + 1)
            st.current_player[rows] = self._next_seat.take(seat)
            if done.any():
                self._finish_trick(idx[done])  # the winner leads next
        if everyone and not st.round_over.any():
            hand = hands.take(base + st.current_player)
            st.legal[:] = self._play_legal(rows, hand)
        else:
            self._update_legal(idx)

    def _lead(self, idx: np.ndarray, rows: np.ndarray | slice, seat: np.ndarray,
              card: np.ndarray) -> None:
        """The first card of a trick sets the led suit and the trick's leader."""
        st = self.state
        st.led_suit[rows] = _SUIT_OF.take(card)
        trick = st.trick_index[rows]
        st.trick_leader.reshape(-1)[idx * self.rules.num_tricks + trick] = seat

    def _finish_trick(self, idx: np.ndarray) -> None:
        """Games idx have a full trick: find its winner, who takes the cards and leads."""
        st, p, t = self.state, self._players, self.rules.num_tricks
        rows = slice(None) if idx is self._all else idx
        cards = st.current_trick[rows]  # (n, P) int8 card by seat
        led = st.led_suit[rows].astype(np.int64)
        strength = self._strength.take(led[:, None] * C.NUM_CARDS + cards)  # (n, P) int8
        # Winner = seat of the strongest card: pack (strength, seat) and take the maximum
        # column by column (faster than argmax along a short axis).
        key = strength.astype(np.int16) * 8 + self._seats.astype(np.int16)  # (n, P)
        best = key[:, 0]
        for seat in range(1, p):
            best = np.maximum(best, key[:, seat])
        winner = (best & 7).astype(np.int64)  # (n,) seat
        at = idx * p + winner
        won = st.won.reshape(-1)
        won[at] = won.take(at) | st.trick_mask[rows]
        trick = st.trick_index[rows].copy()  # (a view on the hot path; updated below)
        if (trick == trick[0]).all():  # lockstep: the same trick everywhere
            st.trick_cards[rows, int(trick[0])] = cards
            st.trick_winner[rows, int(trick[0])] = winner
        else:
            slot = idx * t + trick  # (n,) flat index of this trick in (B, T) arrays
            st.trick_cards.reshape(-1, p)[slot] = cards
            st.trick_winner.reshape(-1)[slot] = winner
        st.trick_mask[rows] = 0
        st.current_trick[rows] = -1
        st.current_player[rows] = winner
        st.led_suit[rows] = -1
        st.trick_index[rows] = trick + 1
        ended = trick + 1 == t
        if ended.any():
            self._end_round(idx[ended])

    def _pass(self, idx: np.ndarray, card: np.ndarray) -> None:
        """Hearts: the current player chooses one card to pass (three each, in turn)."""
        st, p = self.state, self._players
        seat = st.current_player[idx]
        st.pass_out[idx, seat] |= _bits(card)
        chosen = _popcount(st.pass_out[idx, seat])
        st.passes[idx, seat, chosen - 1] = card
        st.current_player[idx] = np.where(chosen == 3, (seat + 1) % p, seat)
        # Everyone has chosen once the seat right of the first passer (the dealer) has.
        complete = (chosen == 3) & (seat == st.dealer[idx])
        done = idx[complete]
        if len(done):
            offset = self._pass_cycle[(st.round_number[done] - 1) % len(self._pass_cycle)]
            out = st.pass_out[done]  # (n, P)
            giver = (self._seats[None, :] - offset[:, None].astype(np.int64)) % p  # (n, P)
            received = np.take_along_axis(out, giver, axis=1)
            st.hands[done] = (st.hands[done] & ~out) | received
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
    def _end_round(self, idx: np.ndarray) -> None:
        """Score the round of games idx, decide the match, and deal the next round."""
        st, rules = self.state, self.rules
        for name in ROUND_RECORD_FIELDS:
            st.finished[name][idx] = getattr(st, name)[idx]
        points = self.round_score(st.won[idx], st.dead[idx], st.bids[idx], st.cursed_suit[idx])
        st.round_points[idx] = points
        totals = st.totals[idx] + points
        st.totals[idx] = totals
        st.round_over[idx] = True
        # Hearts counts penalty points: lowest is best.
        sign = -1 if rules.is_hearts else 1
        st.round_winners[idx] = sign * points == (sign * points).max(axis=1, keepdims=True)
        best = (sign * totals).max(axis=1, keepdims=True)
        leaders = sign * totals == best  # (n, P) seats on the best total
        rounds = st.round_number[idx]
        if rules.target_score is None:
            over = np.ones(len(idx), bool)
        else:
            reached = (totals >= rules.target_score).any(axis=1)
            # Smoorverliefd goes on while the lead is shared; Hearts ends on reaching it.
            unique = leaders.sum(axis=1) == self._side_size
            over = reached if rules.is_hearts else reached & unique
        over |= rounds >= rules.max_rounds
        ended = idx[over]
        st.match_over[ended] = True
        st.winners[ended] = leaders[over]
        st.phase[ended] = Phase.OVER
        st.legal[ended] = 0
        going = idx[~over]
        if len(going):
            st.dealer[going] = self._next_dealer(going)
            st.round_number[going] += 1
            self._start_round(going)

    def _next_dealer(self, idx: np.ndarray) -> np.ndarray:
        """Dealer of the next round: clockwise, or (Cupid's Arrow) the fewest heart cards."""
        st, p = self.state, self._players
        dealer = st.dealer[idx].astype(np.int64)
        if not self.rules.cupids_arrow:
            return (dealer + 1) % p
        hearts = _popcount(st.won[idx] & _HEARTS)  # (n, P)
        fewest = hearts == hearts.min(axis=1, keepdims=True)
        order = (dealer[:, None] + 1 + self._seats[None, :]) % p  # clockwise from left of dealer
        first = np.argmax(np.take_along_axis(fewest, order, axis=1), axis=1)
        return order[np.arange(len(idx)), first]

    def round_score(self, won: np.ndarray, dead: np.ndarray, bids: np.ndarray,
                    cursed_suit: np.ndarray) -> np.ndarray:
        """Round points (n, P) int32 from the cards won (n, P), dead pile (n,), bids, cursed suit.

        Smoorverliefd: points gained (partners: the team's on both seats). Hearts:
        penalty points after shooting the moon.
        """
        rules = self.rules
        hearts_won = won & _HEARTS
        heart_cards = _popcount(hearts_won)  # (n, P)
        if rules.is_hearts:
            penalty = heart_cards + 13 * ((won & _QS) != 0)
            moon = penalty == 26
            return np.where(moon.any(axis=1, keepdims=True), 26 * ~moon, penalty).astype(np.int32)
        if rules.pip_scoring:
            points = sum((1 << j) * _popcount(hearts_won & m) for j, m in enumerate(_PIP_BITS))
        else:
            ace = ((won >> np.uint64(_AH)) & _U1).astype(np.int32)
            points = heart_cards + (rules.ace_of_hearts_points - 1) * ace
        if rules.partners:
            mate = [2, 3, 0, 1]
            hearts_won = hearts_won | hearts_won[:, mate]
            points = points + points[:, mate]
        in_play = _HEARTS & ~dead  # (n,)
        swept = hearts_won == in_play[:, None]
        if rules.sweep_needs_all_thirteen:
            swept &= (in_play == _HEARTS)[:, None]
        points = points * (1 + swept)
        extra = np.zeros_like(points)  # per player, then added to the team
        if rules.bidding:
            extra += np.where(heart_cards == bids, rules.bid_bonus, -rules.bid_penalty)
        if rules.cupids_arrow:
            named = cursed_suit >= 0  # (n,)
            suit_mask = C.SUIT_MASKS[np.maximum(cursed_suit, 0)]
            cursed = _popcount(won & suit_mask[:, None])
            most = cursed == cursed.max(axis=1, keepdims=True)
            extra -= rules.cursed_penalty * (most & named[:, None])
        if rules.partners:
            extra = extra + extra[:, [2, 3, 0, 1]]
        return (points + extra).astype(np.int32)

    # ------------------------------------------------------------ sampling
    def sample_legal(self, rng: np.random.Generator) -> np.ndarray:
        """(B,) int64 uniformly random legal action of each game (0 where the match is over).

        Draws k uniformly below the number of legal actions and finds the k-th set
        bit: popcounts of the four 16-bit words locate its word, and a table of
        "k-th set bit of a 16-bit word" its place, so no (B, 70) array is built.
        """
        global _SELECT16
        if _SELECT16 is None:
            _SELECT16 = _select16_table()
        st, b = self.state, self.batch_size
        words = st.legal.view(np.uint16).reshape(b, 4)  # (B, 4) little-endian 16-bit words
        count = np.bitwise_count(words)  # (B, 4) uint8
        upto0 = count[:, 0]
        upto1 = upto0 + count[:, 1]
        upto2 = upto1 + count[:, 2]
        total = upto2 + count[:, 3]  # (B,) legal actions
        k = (rng.random(b) * total).astype(np.uint8)  # (B,) 0..total-1
        past0, past1, past2 = k >= upto0, k >= upto1, k >= upto2
        word = past0.view(np.uint8) + past1.view(np.uint8) + past2.view(np.uint8)  # (B,) 0..3
        before = np.where(past2, upto2, np.where(past1, upto1, np.where(past0, upto0, 0)))
        chunk = words.reshape(-1).take(self._all * 4 + word).astype(np.int64)
        bit = _SELECT16.take(chunk * 16 + (k - before))
        actions = word.astype(np.int64) * 16 + bit + PHASE_ACTION_OFFSET.take(st.phase)
        return np.where(total == 0, 0, actions)


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
