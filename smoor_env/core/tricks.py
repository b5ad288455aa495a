"""Playing a card: the trick rules (who wins a trick, what breaks hearts) and the play paths.

The rules are functions (``trick_strength_table``, ``trick_winner``,
``breaks_hearts``, ``lead``'s led suit); the three ways the engine plays cards
share them. ``PlayPaths`` is the part of ``Engine`` that plays cards (the engine
inherits it; its attributes are the engine's):

* ``_play_lockstep``: the hot path. Games that started together stay in lockstep
  (same phase, same place in the same trick); the engine remembers that
  (``_lockstep``), and this path then writes whole arrays and decides the lead,
  the trick's end and the next legal sets once for all games. It also keeps the
  place and hand of the player to act and the led suit's cards for the next step
  (``_play_cache``).
* ``_play_masked``: when only some games act (``step(actions, active)``, as in a
  vector environment whose games wait for different seats) and a quarter of the
  batch or more plays, masked whole-batch operations.
* ``_play``: fewer games, gathered (also every step of a batch under 64 games).
"""

from __future__ import annotations

import numpy as np

from smoor_env.core import cards as C
from smoor_env.core.bits import byte_rows
from smoor_env.core.rules import Rules

_SUIT_OF = (np.arange(C.NUM_CARDS) // C.CARDS_PER_SUIT).astype(np.int8)  # (52,) suit of each card
SUIT_MASK_OF_CARD = C.SUIT_MASKS.take(_SUIT_OF)  # (52,) uint64 cards of each card's suit


def trick_strength_table(trump_hearts: bool) -> np.ndarray:
    """(5 * 52,) int16: 8 * strength of card c in a trick whose led suit is s, at ``s * 52 + c``.

    The highest card of the led suit wins (card ids rise with rank within a suit);
    with trump_hearts any heart beats every card of another suit; strength -1 never
    wins. Row 4 (all -1) is padding so that every index is valid. The factor 8 leaves
    the low three bits free for the seat (see ``trick_winner``). Public so that agents
    judge a trick by the engine's own rule instead of writing it again.
    """
    table = np.full((5, C.NUM_CARDS), -1, np.int16)
    cards = np.arange(C.NUM_CARDS)
    for led in range(4):
        table[led] = np.where(np.equal(_SUIT_OF, led), cards % 13, -1)
        if trump_hearts:
            table[led] = np.where(_SUIT_OF == C.HEARTS, 13 + cards % 13, table[led])
    return (table * 8).reshape(-1)


def trick_keys(rules: Rules) -> list[np.ndarray]:
    """Per seat s, (5 * 52,) int16 ``8 * strength + s`` of each (led suit, card): one
    gather gives the packed (strength, seat) key of a seat's card (see ``trick_winner``)."""
    strength = trick_strength_table(rules.trump_hearts)  # (5 * 52,) int16
    return [strength + np.int16(seat) for seat in range(rules.num_players)]


def trick_winner(keys: list[np.ndarray], led: np.ndarray, cards: np.ndarray) -> np.ndarray:
    """(n,) int16 seat that wins each full trick: the strongest card (``trick_strength_table``).

    Args:
        keys: ``trick_keys(rules)``.
        led: (n,) int64 ``led suit * 52``, the row of the strength table.
        cards: (n, P) int8 the card each seat played.

    (strength, seat) is packed into one int16 key (8 * strength + seat) whose maximum
    names the winner; one seat (column) at a time: whole (n,) arrays, no short inner
    axis. (Every index is in range: mode="clip" spares take its bounds check.)
    """
    best = keys[0].take(led + cards[:, 0], mode="clip")  # (n,) int16
    for seat in range(1, len(keys)):
        np.maximum(best, keys[seat].take(led + cards[:, seat], mode="clip"), out=best)
    return best & 7


def hearts_breakers(rules: Rules) -> np.ndarray:
    """(52,) bool Hearts: the cards that break hearts when played (hearts; QS by option)."""
    queen = np.arange(C.NUM_CARDS) == C.QUEEN_OF_SPADES
    return (_SUIT_OF == C.HEARTS) | (queen & rules.queen_breaks_hearts)


def breaks_hearts(breakers: np.ndarray, card: np.ndarray) -> np.ndarray:
    """(n,) bool: whether each card played (n,) int64 breaks hearts (``hearts_breakers``)."""
    return breakers.take(card, mode="clip")


class PlayPaths:
    """The engine's card play (see the module docstring); mixed into ``Engine``."""

    def _play_lockstep(self, card: np.ndarray, bit: np.ndarray, lock: tuple[int, int]) -> None:
        """Play one card in every game, all at place ``lock`` = (trick position, trick index).

        The hot path (a batch that starts together stays in lockstep): the lead, the
        trick's end and the next legal sets are decided once for all, and whole arrays
        are written instead of indexed rows. ``card`` (B,) int64 and ``bit`` (B,) uint64
        are the cards played. The place and hand of the player to act and the led suit's
        cards, found for the legal sets, are kept for the next step (``_play_cache``).
        """
        st, p = self.state, self._players
        pos, trick = lock
        seat = st.current_player  # (B,) int8 (read before it is overwritten below)
        hands = st.hands.reshape(-1)
        cache = self._play_cache
        # Valid only if made by the step that set this very lockstep tuple: any other
        # path that changes the state sets a new tuple (or None), so identity suffices.
        if cache is not None and cache[0] is lock:  # the previous step left the lockstep here
            _, at, hand, led_mask = cache
        else:
            at = np.add(self._base, seat)  # (B,) int64 flat index of (game, seat) in (B, P)
            hand, led_mask = hands.take(at, mode="clip"), None  # (B,) hand to act
        hands[at] = np.bitwise_xor(hand, bit, out=hand)
        np.bitwise_or(st.played, bit, out=st.played)
        np.bitwise_or(st.trick_mask, bit, out=st.trick_mask)
        st.current_trick.reshape(-1)[at] = card.astype(np.int8)  # (cast first: faster)
        if self.rules.is_hearts:
            st.hearts_broken |= breaks_hearts(self._hearts_breakers, card)
        if pos == 0:
            self._lead(self._all, slice(None), seat, card, trick)
            led_mask = SUIT_MASK_OF_CARD.take(card, mode="clip")  # (B,) cards of the led suit
        if pos + 1 < p:
            st.trick_size.fill(pos + 1)
            if self._few:
                self._next_seat.take(seat, out=st.current_player)
            else:  # the seat to the left: as uint8, min(seat + 1, seat + 1 - P) (the
                # second wraps past 250 unless it is 0); cheaper than a table lookup
                after = st.current_player.view(np.uint8)
                np.add(after, np.uint8(1), out=after)
                np.minimum(after, after - np.uint8(p), out=after)
            self._lockstep = (pos + 1, trick)
        else:
            st.trick_size.fill(0)
            self._finish_trick(self._all, trick)  # the winner leads next
            if trick + 1 == self.rules.num_tricks:
                self._play_cache = None
                return  # the round ended: _end_round set the legal sets
            trick, led_mask = trick + 1, None
        at = np.add(self._base, st.current_player, out=at)
        hand = hands.take(at, mode="clip")  # (B,) hand of the player to act
        legal = self._play_legal(slice(None), hand, pos + 1 == p, trick == 0, led_mask, st.legal)
        if legal is not st.legal:
            st.legal[:] = legal
        self._play_cache = (self._lockstep, at, hand, led_mask)

    def _play(self, idx: np.ndarray, card: np.ndarray) -> None:
        """Play one card in games idx (all in the play phase), at any mix of places."""
        st, p = self.state, self._players
        bit = C.CARD_BITS.take(card)  # (n,) uint64
        seat = st.current_player[idx]  # (n,) int8
        at = idx * p + seat  # (n,) int64 flat index of (game, seat) in (B, P) arrays
        hands = st.hands.reshape(-1)
        hands[at] = hands.take(at) ^ bit
        st.played[idx] |= bit
        st.trick_mask[idx] |= bit
        st.current_trick.reshape(-1)[at] = card.astype(np.int8)  # (cast first: faster)
        if self.rules.is_hearts:
            st.hearts_broken[idx] |= breaks_hearts(self._hearts_breakers, card)
        size = st.trick_size[idx]  # (n,) cards already in the trick
        first = int(size[0])
        if (size == first).all():  # the same position in every game of idx
            if first == 0:
                self._lead(idx, idx, seat, card)
            if first + 1 == p:
                st.trick_size[idx] = 0
                self._finish_trick(idx)  # the winner leads next
            else:
                st.trick_size[idx] = first + 1
                st.current_player[idx] = self._next_seat.take(seat)
        else:
            leading = size == 0
            if leading.any():
                lead = idx[leading]
                self._lead(lead, lead, seat[leading], card[leading])
            done = size + 1 == p
            st.trick_size[idx] = np.where(done, 0, size + 1)
            st.current_player[idx] = self._next_seat.take(seat)
            if done.any():
                self._finish_trick(idx[done])  # the winner leads next
        self._update_legal(idx)

    def _play_masked(self, card: np.ndarray, act: np.ndarray, bit: np.ndarray) -> None:
        """Play one card in the games where ``act`` (B,) bool is set, at any mix of places.

        The same moves as ``_play``, as whole-batch operations that leave the other games
        as they are (their bit is 0, their values are written back unchanged): cheaper
        than gathering and scattering rows once a good share of the batch acts, as in a
        vector environment where the opponents of a learner play up to their next turn.
        Only the leads and the finished tricks (a part of these games) are gathered.
        ``card`` (B,) int64: the cards played (ignored where not ``act``); ``bit`` (B,)
        uint64: 1 << card where ``act``, else 0.
        """
        st, p = self.state, self._players
        seat = st.current_player.copy()  # (B,) int8 seat to act (before it moves on)
        at = self._base + seat  # (B,) int64 flat index of (game, seat) in (B, P) arrays
        hands = st.hands.reshape(-1)
        hands[at] = hands.take(at) ^ bit
        np.bitwise_or(st.played, bit, out=st.played)
        np.bitwise_or(st.trick_mask, bit, out=st.trick_mask)
        in_trick = st.current_trick.reshape(-1)
        in_trick[at] = np.where(act, card.astype(np.int8), in_trick.take(at))
        if self.rules.is_hearts:
            st.hearts_broken |= breaks_hearts(self._hearts_breakers, card) & act
        size = st.trick_size  # (B,) int8 cards already in the trick
        lead = np.flatnonzero(act & (size == 0))  # (n,) games whose card leads
        if len(lead):
            self._lead(lead, lead, seat[lead], card[lead])
        np.add(size, act, out=size, casting="unsafe")
        st.current_player[:] = np.where(act, self._next_seat.take(seat), seat)
        done = np.flatnonzero(size == p)  # (n,) games whose card completed the trick
        if len(done):
            st.trick_size[done] = 0
            self._finish_trick(done)  # the winner leads next (or the round ends)
        # Next legal sets, where the game acted and its round goes on (a round that
        # ended has its next phase's sets already).
        hand = hands.take(self._base + st.current_player)  # (B,) hand of the player to act
        legal = self._play_legal(slice(None), hand)  # (B,) uint64
        st.legal[:] = np.where(act & ~st.round_over, legal, st.legal)

    def _lead(self, idx: np.ndarray, rows: np.ndarray | slice, seat: np.ndarray,
              card: np.ndarray, trick: int | None = None) -> None:
        """The first card of a trick sets the led suit and the trick's leader.

        ``trick``: the trick index when idx is every game and all play the same trick.
        """
        st = self.state
        st.led_suit[rows] = _SUIT_OF.take(card)
        if trick is not None:
            st.trick_leader[:, trick] = seat
        else:
            at = idx * self.rules.num_tricks + st.trick_index[rows]
            st.trick_leader.reshape(-1)[at] = seat

    def _finish_trick(self, idx: np.ndarray, trick: int | None = None) -> None:
        """Games idx have a full trick: find its winner, who takes the cards and leads.

        ``trick``: the trick index when idx is every game and all play the same trick.
        """
        st, p, t = self.state, self._players, self.rules.num_tricks
        everyone = idx is self._all
        rows = slice(None) if everyone else idx
        cards = st.current_trick[rows]  # (n, P) int8 card by seat
        led = st.led_suit[rows] * np.int64(C.NUM_CARDS)  # (n,) row of the strength table
        winner = trick_winner(self._trick_keys, led, cards)  # (n,) int16 seat
        at = (self._base if everyone else idx * p) + winner
        won = st.won.reshape(-1)
        won[at] = won.take(at, mode="clip") | st.trick_mask[rows]
        if trick is None:
            trick = st.trick_index[rows].copy()  # (n,)
            if (trick == trick[0]).all():  # the same trick everywhere
                trick = int(trick[0])
        # A trick's P cards copied as one opaque P-byte item each: much faster than a
        # (n, P) copy with a short inner axis.
        trick_cards, cards = byte_rows(st.trick_cards), byte_rows(cards)  # (B, T), (n,)
        if isinstance(trick, int):
            trick_cards[rows, trick] = cards
            st.trick_winner[rows, trick] = winner
        else:
            slot = idx * t + trick  # (n,) flat index of this trick in (B, T) arrays
            trick_cards.reshape(-1)[slot] = cards
            st.trick_winner.reshape(-1)[slot] = winner
        st.trick_mask[rows] = 0
        st.current_trick[rows] = -1
        st.current_player[rows] = winner
        st.led_suit[rows] = -1
        st.trick_index[rows] = trick + 1
        if everyone and isinstance(trick, int):
            self._lockstep = (0, trick + 1)
            if trick + 1 == t:
                self._end_round(idx)
        else:
            ended = np.asarray(trick + 1 == t)
            if ended.all():
                self._end_round(idx)
            elif ended.any():
                self._end_round(idx[ended])

