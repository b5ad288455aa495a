"""A plain, scalar reference implementation of every rule in ``docs/rules.md``.

This module is written directly from the rule book (summarised in ``docs/rules.md``),
one short function per rule, with plain lists and ints. It never imports the
engine: the vectorised engine is tested against it (differential tests), so the
two must stay independent. It only *reads* attributes of the rules object it is
given (duck-typed, the field names of ``smoor_env.core.rules.Rules``).

Cards: id = ``13 * suit + (rank - 2)``, suits ``C D H S`` = 0..3, ranks 2..14.
Actions: 0..51 a card (play it, or choose it to pass), 52..65 bid 0..13,
66..69 name the cursed suit C, D, H, S.

One ``RefMatch`` is one match. The caller deals: ``start_round(hands, dead)``
starts each round (phase ``"deal"`` -> passing -> cursed suit -> bidding ->
play), then ``legal_actions()`` / ``apply(action)`` until the phase is ``"deal"``
again (next round) or ``"match_over"``.

Choices made where the interface leaves room (the rule book is silent):

- ``hands`` are kept sorted by card id. During passing the chosen cards stay in
  the hand until everyone has chosen; then they move to the receiver.
- ``hearts_broken`` is only tracked in Hearts (always False in Smoorverliefd).
- Hearts has no dead pile: ``start_round`` must get ``dead == []`` (the removed
  ``2D`` / ``2C`` are simply not dealt).
- The round winners of Smoorverliefd are judged on the full round score
  (after bonus, penalties and doubling), i.e. on ``round_points``.
"""

from __future__ import annotations

import operator
import random
from typing import Any

# ----------------------------------------------------------------- cards
CLUBS, DIAMONDS, HEARTS, SPADES = 0, 1, 2, 3
NUM_CARDS = 52
TWO_CLUBS, THREE_CLUBS, TWO_DIAMONDS = 0, 1, 13
ACE_OF_HEARTS = 38
QUEEN_OF_SPADES = 49
ALL_HEARTS = list(range(26, 39))

# ----------------------------------------------------------------- actions
FIRST_BID_ACTION = 52  # 52 + b = bid b heart cards, b = 0..13
FIRST_CURSE_ACTION = 66  # 66 + s = name suit s (C D H S) as the cursed suit
NUM_ACTIONS = 70

# Hearts passing: receiver = passer + offset (mod n), by round; 0 = no pass.
# 4 players: left, right, across, none. 3: left, right. 5: left, right,
# across (two seats to the left), none.
PASS_OFFSETS = {3: (1, 2), 4: (1, 3, 2, 0), 5: (1, 4, 2, 0)}


def suit_of(card: int) -> int:
    return card // 13


def rank_of(card: int) -> int:
    """Rank 2..14 (ace = 14)."""
    return card % 13 + 2


def is_heart(card: int) -> bool:
    return suit_of(card) == HEARTS


# ----------------------------------------------------------------- layout of a deal
def is_hearts_game(rules: Any) -> bool:
    return rules.game == "hearts"


def removed_cards(rules: Any) -> list[int]:
    """Hearts: 3 players remove 2D, 5 players remove 2C and 2D. Smoorverliefd: none."""
    if not is_hearts_game(rules):
        return []
    return {3: [TWO_DIAMONDS], 4: [], 5: [TWO_CLUBS, TWO_DIAMONDS]}[rules.num_players]


def deck_of(rules: Any) -> list[int]:
    """The cards in play or in the dead pile this game."""
    removed = removed_cards(rules)
    return [c for c in range(NUM_CARDS) if c not in removed]


def hand_size(rules: Any) -> int:
    """4 players: 13. 3 players: 17. 5 players: 10 (both games)."""
    return len(deck_of(rules)) // rules.num_players


def dead_count(rules: Any) -> int:
    """Smoorverliefd: 3 players 1 dead card, 5 players 2. Hearts: none."""
    return len(deck_of(rules)) - hand_size(rules) * rules.num_players


def pass_offset(rules: Any, round_number: int) -> int:
    """Seat offset to the receiver of the Hearts pass in this round; 0 = no pass."""
    if not is_hearts_game(rules) or not rules.passing:
        return 0
    cycle = PASS_OFFSETS[rules.num_players]
    return cycle[(round_number - 1) % len(cycle)]


def opening_card(rules: Any) -> int:
    """Hearts: the holder of 2C leads it (5 players: 3C, the lowest club in play)."""
    return THREE_CLUBS if rules.num_players == 5 else TWO_CLUBS


def random_deal(rules: Any, rng: random.Random) -> tuple[list[list[int]], list[int]]:
    """Shuffle the deck and split it into hands and dead pile (a test helper)."""
    deck = deck_of(rules)
    rng.shuffle(deck)
    size = hand_size(rules)
    hands = [sorted(deck[i * size : (i + 1) * size]) for i in range(rules.num_players)]
    dead = sorted(deck[size * rules.num_players :])
    return hands, dead


# ----------------------------------------------------------------- tricks
def trick_winner(trick: list[tuple[int, int]], trump_hearts: bool) -> int:
    """Seat that wins a complete trick of (seat, card) pairs, in play order.

    The highest card of the led suit wins. Met Troef: if any heart was played,
    the highest heart wins instead.
    """
    led_suit = suit_of(trick[0][1])
    winning_suit = led_suit
    if trump_hearts and any(is_heart(card) for _, card in trick):
        winning_suit = HEARTS
    seat, _ = max(
        ((s, c) for s, c in trick if suit_of(c) == winning_suit), key=lambda pair: pair[1]
    )
    return seat


# ----------------------------------------------------------------- scoring
def heart_value(rules: Any, card: int) -> int:
    """Smoorverliefd: a heart is 1, AH is ace_of_hearts_points; Kleine Liefde: pip 2..14."""
    if rules.pip_scoring:
        return rank_of(card)
    return rules.ace_of_hearts_points if card == ACE_OF_HEARTS else 1


def teams_of(rules: Any) -> list[list[int]]:
    """Partner Smoorverliefd: seats {0, 2} and {1, 3}; otherwise every seat alone."""
    if rules.partners:
        return [[0, 2], [1, 3]]
    return [[seat] for seat in range(rules.num_players)]


def cursed_losers(won_cards: list[list[int]], cursed_suit: int) -> list[int]:
    """Cupid's Arrow: the player(s) who won the most cards of the cursed suit.

    At most two cards are dead, so someone always won at least one cursed card.
    """
    counts = [sum(1 for c in won if suit_of(c) == cursed_suit) for won in won_cards]
    most = max(counts)
    return [seat for seat, count in enumerate(counts) if count == most]


def smoorverliefd_round_points(
    rules: Any,
    won_cards: list[list[int]],
    dead: list[int],
    bids: list[int | None],
    cursed_suit: int | None,
) -> list[int]:
    """Whole round score per seat (partners: the team's score on both seats)."""
    hearts_in_play = [c for c in ALL_HEARTS if c not in dead]
    # sweep_needs_all_thirteen: a round with a dead heart cannot be swept.
    sweep_possible = not (rules.sweep_needs_all_thirteen and len(hearts_in_play) < 13)
    heart_cards = [[c for c in won if is_heart(c)] for won in won_cards]
    losers = cursed_losers(won_cards, cursed_suit) if cursed_suit is not None else []

    points = [0] * rules.num_players
    for team in teams_of(rules):
        team_hearts = [c for seat in team for c in heart_cards[seat]]
        team_points = sum(heart_value(rules, c) for c in team_hearts)
        # Sweep: the player (team) won every heart in play -> heart points doubled.
        if sweep_possible and len(team_hearts) == len(hearts_in_play):
            team_points *= 2
        for seat in team:
            # Blinde Liefde: bid = heart cards won by this player; not doubled.
            if rules.bidding:
                if len(heart_cards[seat]) == bids[seat]:
                    team_points += rules.bid_bonus
                else:
                    team_points -= rules.bid_penalty
            # Cupid's Arrow: the most cursed cards loses cursed_penalty (per player).
            if seat in losers:
                team_points -= rules.cursed_penalty
        for seat in team:
            points[seat] = team_points
    return points


def hearts_round_points(won_cards: list[list[int]]) -> list[int]:
    """Hearts penalty points: each heart 1, QS 13; shooting the moon: 0 / 26 for the rest."""
    points = [
        sum(1 for c in won if is_heart(c)) + (13 if QUEEN_OF_SPADES in won else 0)
        for won in won_cards
    ]
    for seat, p in enumerate(points):
        if p == 26:  # all 13 hearts and QS: shot the moon
            return [0 if other == seat else 26 for other in range(len(points))]
    return points


# ----------------------------------------------------------------- the match
class RefMatch:
    """One match, played action by action, exactly as the rule book says.

    Attributes (public, read them freely):
        phase: "deal", "pass", "curse", "bid", "play" or "match_over".
        dealer, round_number: of the current round (or of the next one in "deal").
        current_player: seat to act.
        hands: per seat the cards held, sorted.
        trick_winners, trick_leaders: per completed trick of this round.
        current_trick: (seat, card) pairs of the trick in progress.
        bids, cursed_suit, passes, hearts_broken, won_cards: this round.
        round_points, round_winners: of the last finished round.
        totals, match_over, winners: of the match.
        dealt_hands, dead: the deal of this round (before passing).
        actions: (seat, action) pairs applied this round, in order.
    """

    def __init__(self, rules: Any, first_dealer: int):
        n = rules.num_players
        if rules.game not in ("smoorverliefd", "hearts"):
            raise ValueError(f"unknown game {rules.game!r}")
        if n not in (3, 4, 5):
            raise ValueError(f"3, 4 or 5 players, got {n}")
        if rules.partners and n != 4:
            raise ValueError("partners needs exactly 4 players")
        if not 0 <= first_dealer < n:
            raise ValueError(f"first_dealer {first_dealer} is not a seat")
        self.rules = rules
        self.num_players = n
        self.is_hearts = is_hearts_game(rules)
        self.phase = "deal"
        self.dealer = first_dealer
        self.round_number = 1
        self.current_player = (first_dealer + 1) % n
        self.totals = [0] * n
        self.round_points = [0] * n
        self.round_winners: list[int] = []
        self.match_over = False
        self.winners: list[int] = []
        self._reset_round_state([[] for _ in range(n)], [])

    def _reset_round_state(self, hands: list[list[int]], dead: list[int]) -> None:
        n = self.num_players
        self.dealt_hands = [sorted(h) for h in hands]
        self.dead = sorted(dead)
        self.hands = [sorted(h) for h in hands]
        self.trick_winners: list[int] = []
        self.trick_leaders: list[int] = []
        self.current_trick: list[tuple[int, int]] = []
        self.bids: list[int | None] = [None] * n
        self.cursed_suit: int | None = None
        self.passes: list[list[int]] | None = None
        self.hearts_broken = False
        self.won_cards: list[list[int]] = [[] for _ in range(n)]
        self.actions: list[tuple[int, int]] = []

    def left_of(self, seat: int) -> int:
        return (seat + 1) % self.num_players

    # ------------------------------------------------------------- round set-up
    def start_round(self, hands: list[list[int]], dead: list[int]) -> None:
        """Deal a round: ``hands[seat]`` as dealt (before passing), ``dead`` the dead pile."""
        if self.phase != "deal":
            raise ValueError(f"start_round needs phase 'deal', not {self.phase!r}")
        self._check_deal(hands, dead)
        self._reset_round_state([[int(c) for c in h] for h in hands], [int(c) for c in dead])
        # Order of phases: passing (Hearts), cursed suit (Cupid's Arrow), bidding, tricks.
        if pass_offset(self.rules, self.round_number) != 0:
            self.phase = "pass"
            self.passes = [[] for _ in range(self.num_players)]
            self.current_player = self.left_of(self.dealer)  # clockwise from left of dealer
        else:
            self._after_passing()

    def _check_deal(self, hands: list[list[int]], dead: list[int]) -> None:
        if len(hands) != self.num_players:
            raise ValueError(f"need {self.num_players} hands, got {len(hands)}")
        size = hand_size(self.rules)
        for seat, hand in enumerate(hands):
            if len(hand) != size:
                raise ValueError(f"seat {seat} has {len(hand)} cards, needs {size}")
        if len(dead) != dead_count(self.rules):
            raise ValueError(f"dead pile has {len(dead)} cards, needs {dead_count(self.rules)}")
        cards = [int(c) for hand in hands for c in hand] + [int(c) for c in dead]
        if sorted(cards) != deck_of(self.rules):
            raise ValueError("hands and dead pile must hold every card of the deck exactly once")

    def _after_passing(self) -> None:
        # Cupid's Arrow: from round 2 the dealer names the cursed suit.
        if self.rules.cupids_arrow and self.round_number >= 2:
            self.phase = "curse"
            self.current_player = self.dealer
        else:
            self._after_cursing()

    def _after_cursing(self) -> None:
        # Blinde Liefde: bids from the left of the dealer, clockwise.
        if self.rules.bidding:
            self.phase = "bid"
            self.current_player = self.left_of(self.dealer)
        else:
            self._start_tricks()

    def _start_tricks(self) -> None:
        self.phase = "play"
        if self.is_hearts:
            # The holder of 2C (5 players: 3C) leads it.
            opener = opening_card(self.rules)
            self.current_player = next(s for s, h in enumerate(self.hands) if opener in h)
        else:
            # Smoorverliefd: the player left of the dealer leads the first trick.
            self.current_player = self.left_of(self.dealer)

    # ------------------------------------------------------------- legal actions
    def legal_actions(self) -> list[int]:
        """Sorted legal action ids for ``current_player``; [] in "deal" / "match_over"."""
        if self.phase == "pass":
            chosen = self.passes[self.current_player]
            return [c for c in self.hands[self.current_player] if c not in chosen]
        if self.phase == "curse":
            suits = [CLUBS, DIAMONDS, HEARTS, SPADES]
            if not self.rules.cursed_suit_may_be_hearts:
                suits.remove(HEARTS)
            return [FIRST_CURSE_ACTION + s for s in suits]
        if self.phase == "bid":
            return [FIRST_BID_ACTION + b for b in range(14)]
        if self.phase == "play":
            return sorted(self._legal_cards())
        return []

    def _legal_cards(self) -> list[int]:
        hand = self.hands[self.current_player]
        if not self.current_trick:
            return self._legal_leads(hand)
        # Follow the led suit when able; otherwise any card.
        led_suit = suit_of(self.current_trick[0][1])
        legal = [c for c in hand if suit_of(c) == led_suit] or list(hand)
        if self.is_hearts and not self.trick_winners:
            legal = self._first_trick_filter(legal)
        return legal

    def _legal_leads(self, hand: list[int]) -> list[int]:
        if not self.is_hearts:
            return list(hand)  # Smoorverliefd: any suit, hearts included, at any time
        if not self.trick_winners:
            return [opening_card(self.rules)]  # Hearts: 2C (5 players 3C) opens
        if not self.hearts_broken:
            # Hearts may not be led until broken, unless the leader holds only hearts.
            non_hearts = [c for c in hand if not is_heart(c)]
            if non_hearts:
                return non_hearts
        return list(hand)

    def _first_trick_filter(self, legal: list[int]) -> list[int]:
        """Hearts, first trick: no heart and no QS unless nothing else is legal."""
        harmless = [c for c in legal if not is_heart(c) and c != QUEEN_OF_SPADES]
        if harmless:
            return harmless
        if self.rules.queen_never_first_trick:
            # QS may never be played to the first trick; the hand then holds hearts.
            legal = [c for c in legal if c != QUEEN_OF_SPADES]
            assert legal, "a hand of 10+ cards cannot be only QS"
        return legal

    # ------------------------------------------------------------- acting
    def apply(self, action: int) -> None:
        """Apply one action of ``current_player``; ValueError (and no change) if illegal."""
        try:
            action = operator.index(action)
        except TypeError:
            raise ValueError(f"action must be an int, got {action!r}") from None
        if action not in self.legal_actions():
            raise ValueError(
                f"action {action} is illegal in phase {self.phase!r} for seat {self.current_player}"
            )
        seat = self.current_player
        self.actions.append((seat, action))
        if self.phase == "pass":
            self._choose_pass_card(seat, action)
        elif self.phase == "curse":
            self.cursed_suit = action - FIRST_CURSE_ACTION
            self._after_cursing()
        elif self.phase == "bid":
            self._bid(seat, action - FIRST_BID_ACTION)
        else:
            self._play_card(seat, action)

    def _choose_pass_card(self, seat: int, card: int) -> None:
        self.passes[seat].append(card)
        if len(self.passes[seat]) < 3:
            return  # the same player makes its three choices in a row
        self.current_player = self.left_of(seat)
        if all(len(p) == 3 for p in self.passes):
            self._exchange_passes()
            self._after_passing()

    def _exchange_passes(self) -> None:
        """Cards move only after everyone has chosen: seat i gives to i + offset."""
        offset = pass_offset(self.rules, self.round_number)
        n = self.num_players
        for seat in range(n):
            self.hands[seat] = [c for c in self.hands[seat] if c not in self.passes[seat]]
        for seat in range(n):
            receiver = (seat + offset) % n
            self.hands[receiver] = sorted(self.hands[receiver] + self.passes[seat])

    def _bid(self, seat: int, bid: int) -> None:
        self.bids[seat] = bid
        self.current_player = self.left_of(seat)
        if all(b is not None for b in self.bids):
            self._start_tricks()

    def _play_card(self, seat: int, card: int) -> None:
        self.hands[seat].remove(card)
        if not self.current_trick:
            self.trick_leaders.append(seat)
        self.current_trick.append((seat, card))
        if self.is_hearts and (
            is_heart(card) or (card == QUEEN_OF_SPADES and self.rules.queen_breaks_hearts)
        ):
            self.hearts_broken = True
        if len(self.current_trick) < self.num_players:
            self.current_player = self.left_of(seat)
            return
        # Trick complete: the winner takes the cards and leads the next trick.
        winner = trick_winner(self.current_trick, self.rules.trump_hearts)
        self.trick_winners.append(winner)
        self.won_cards[winner].extend(c for _, c in self.current_trick)
        self.current_trick = []
        self.current_player = winner
        if not any(self.hands):
            self._finish_round()

    # ------------------------------------------------------------- end of round
    def _finish_round(self) -> None:
        if self.is_hearts:
            self.round_points = hearts_round_points(self.won_cards)
            best = min(self.round_points)  # Hearts: fewest penalty points wins the round
        else:
            self.round_points = smoorverliefd_round_points(
                self.rules, self.won_cards, self.dead, self.bids, self.cursed_suit
            )
            best = max(self.round_points)  # most round points wins the round
        self.round_winners = [s for s, p in enumerate(self.round_points) if p == best]
        self.totals = [t + p for t, p in zip(self.totals, self.round_points, strict=True)]

        if self._match_ends():
            self.phase = "match_over"
            self.match_over = True
            best_total = min(self.totals) if self.is_hearts else max(self.totals)
            self.winners = [s for s, t in enumerate(self.totals) if t == best_total]
            return
        self.dealer = self._next_dealer()
        self.round_number += 1
        self.phase = "deal"

    def _match_ends(self) -> bool:
        rules = self.rules
        if rules.target_score is None:
            return True  # a single round
        if self.round_number >= rules.max_rounds:
            return True  # hard cap: the best totals share the win
        if self.is_hearts:
            # Hearts: ends after the round in which someone reaches the target.
            return max(self.totals) >= rules.target_score
        # Smoorverliefd: someone reached the target and exactly one player (team) leads.
        best = max(self.totals)
        leading_teams = [team for team in teams_of(rules) if self.totals[team[0]] == best]
        return best >= rules.target_score and len(leading_teams) == 1

    def _next_dealer(self) -> int:
        n = self.num_players
        if not self.rules.cupids_arrow:
            return self.left_of(self.dealer)  # the deal passes clockwise
        # Cupid's Arrow: fewest heart cards last round deals; ties: first clockwise
        # from the left of the previous dealer.
        heart_cards = [sum(1 for c in won if is_heart(c)) for won in self.won_cards]
        fewest = min(heart_cards)
        order = [(self.dealer + k) % n for k in range(1, n + 1)]
        return next(seat for seat in order if heart_cards[seat] == fewest)
