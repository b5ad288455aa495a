"""Rendering one game of an engine: a text table, and a picture (SVG or RGB array).

``table_view`` reads what a table shows from the engine state (hands, the trick in
progress, the last finished trick and who took it, points, totals, bids, the cursed
suit); ``render_text`` prints it, ``draw_table`` draws it with matplotlib, and
``render_svg`` / ``render_rgb`` export that one drawing as an SVG document (shown
inline by notebooks) or as an ``(H, W, 3)`` uint8 array (the environments'
``render_mode="rgb_array"``, so Gymnasium's ``RecordVideo`` can film a match).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smoor_env.core import cards as C
from smoor_env.core.engine import Engine
from smoor_env.core.rules import turn_order
from smoor_env.core.scoring import known_points
from smoor_env.core.state import Phase

#: Suits in display order (spades first, as players sort their hands).
DISPLAY_SUITS = (C.SPADES, C.HEARTS, C.DIAMONDS, C.CLUBS)
RED_SUITS = (C.HEARTS, C.DIAMONDS)


@dataclass(frozen=True)
class TableView:
    """What the table of one game shows, read from the engine state (plain Python values).

    Seats are absolute (0..P-1); card lists hold card ids.
    """

    title: str  # "Smoorverliefd, 4 players - round 2, dealer player_1, trick 3/13"
    names: list[str]  # (P,) name shown for each seat
    seat_to_act: int | None  # None once the match is over
    phase: Phase
    observer: int  # the seat at the bottom of the picture
    hands: list[list[int] | None]  # (P,) cards held (ascending), or None when hidden
    hand_sizes: list[int]  # (P,) number of cards held
    legal_cards: list[int]  # the cards the player to act may play or pass (if shown)
    trick: list[tuple[int, int]]  # (seat, card) of the trick in progress, in play order
    last_trick: list[tuple[int, int]]  # (seat, card) of the last finished trick, in order
    last_winner: int | None  # the seat that took the last finished trick
    points: list[int]  # (P,) round points known so far (``scoring.known_points``; Hearts:
    #                    penalty points, positive, as in the records)
    totals: list[int]  # (P,) match totals before this round's points
    bids: list[int] | None  # (P,) bids (-1: not yet), None without bidding
    cursed_suit: int | None  # 0..3 or None
    dead: list[int] | None  # the dead pile, when every hand is shown
    winners: list[int]  # the seats that won the match (empty until it is over)
    # Hearts passing, as the observer knows it (every seat's when all hands are shown):
    pass_to: list[int | None]  # (P,) the seat each seat passes to this round, None: no pass
    chosen: list[list[int] | None]  # (P,) cards chosen to pass so far (until the exchange;
    #                                 None when hidden), also still in ``hands``
    received: list[list[int] | None]  # (P,) cards received in this round's exchange (None
    #                                   when hidden or before it)


def _trick_in_order(cards: np.ndarray, leader: int) -> list[tuple[int, int]]:
    """(seat, card) pairs of a trick (``cards`` (P,) int8, -1 = not played) from the leader."""
    p = len(cards)
    return [(s, int(cards[s])) for s in turn_order(leader, p).tolist() if cards[s] >= 0]


def table_view(engine: Engine, game: int = 0, observer: int | None = None,
               show_all_hands: bool = False, names: list[str] | None = None) -> TableView:
    """The table of game ``game`` as a ``TableView``.

    Args:
        engine: the engine to show.
        game: which game of the batch.
        observer: the seat whose hand is shown (default: the player to act).
        show_all_hands: show every hand (and the dead pile), not only the observer's.
        names: a name per seat (default ``player_0`` ...).
    """
    st, rules = engine.state, engine.rules
    p, g = rules.num_players, game
    phase = Phase(int(st.phase[g]))
    over = bool(st.match_over[g])
    seat_to_act = None if over else int(st.current_player[g])
    observer = (seat_to_act or 0) if observer is None else observer
    names = [f"player_{s}" for s in range(p)] if names is None else list(names)
    if len(names) != p:
        raise ValueError(f"names must name each of the {p} seats, got {names!r}")
    trick_index = int(st.trick_index[g])
    title = (f"{'Hearts' if rules.is_hearts else 'Smoorverliefd'}, {p} players - round "
             f"{int(st.round_number[g])}, dealer {names[int(st.dealer[g])]}, "
             f"trick {min(trick_index + 1, rules.num_tricks)}/{rules.num_tricks}")
    hands = [C.cards_of(int(h)) for h in st.hands[g]]
    shown = [h if show_all_hands or s == observer else None for s, h in enumerate(hands)]
    legal: list[int] = []
    if seat_to_act is not None and phase in (Phase.PLAY, Phase.PASS) and (
            show_all_hands or seat_to_act == observer):
        legal = C.cards_of(int(st.legal[g]))
    trick: list[tuple[int, int]] = []
    if st.trick_size[g] > 0:
        trick = _trick_in_order(st.current_trick[g], int(st.trick_leader[g, trick_index]))
    # The last finished trick: of this round, or the last one of the round before.
    last, winner = [], None
    if trick_index > 0:
        t = trick_index - 1
        last = _trick_in_order(st.trick_cards[g, t], int(st.trick_leader[g, t]))
        winner = int(st.trick_winner[g, t])
    elif st.finished["trick_winner"][g, -1] >= 0:
        fin = st.finished
        last = _trick_in_order(fin["trick_cards"][g, -1], int(fin["trick_leader"][g, -1]))
        winner = int(fin["trick_winner"][g, -1])
    points = known_points(rules, st)[g]
    cursed = int(st.cursed_suit[g])
    offset = int(rules.pass_offset(int(st.round_number[g])))
    pass_to = [(s + offset) % p if offset else None for s in range(p)]
    shows = [show_all_hands or s == observer for s in range(p)]
    exchanged = offset != 0 and phase != Phase.PASS
    chosen = [[int(c) for c in st.passes[g, s] if c >= 0] if shows[s] and offset and not exchanged
              else None for s in range(p)]
    # What seat s received: the cards its passer chose (the passer is s - offset).
    received = [[int(c) for c in sorted(st.passes[g, (s - offset) % p])]
                if shows[s] and exchanged else None for s in range(p)]
    return TableView(
        title=title, names=names, seat_to_act=seat_to_act, phase=phase, observer=observer,
        hands=shown, hand_sizes=[len(h) for h in hands], legal_cards=legal, trick=trick,
        last_trick=last, last_winner=winner, points=[int(x) for x in points],
        totals=[int(x) for x in st.totals[g]],
        bids=[int(b) for b in st.bids[g]] if rules.bidding else None,
        cursed_suit=cursed if cursed >= 0 else None,
        dead=C.cards_of(int(st.dead[g])) if show_all_hands else None,
        winners=[s for s in range(p) if over and st.winners[g, s]],
        pass_to=pass_to, chosen=chosen, received=received)



def suit_groups(cards: list[int]) -> list[tuple[int, list[int]]]:
    """(suit, cards high to low) for each suit present, spades, hearts, diamonds, clubs."""
    groups = []
    for suit in DISPLAY_SUITS:
        of_suit = [c for c in reversed(cards) if C.card_suit(c) == suit]
        if of_suit:
            groups.append((suit, of_suit))
    return groups


def hand_text(cards: list[int]) -> str:
    """Cards grouped by suit, high to low: ``♠ A Q 7  ♥ K 10 2 ...``."""
    return "  ".join(C.SUIT_SYMBOLS[suit] + " " + " ".join(C.rank_str(c) for c in group)
                     for suit, group in suit_groups(cards)) or "-"


def trick_text(trick: list[tuple[int, int]], names: list[str]) -> str:
    """``player_1 Q♠, player_2 7♠`` (in play order)."""
    return ", ".join(f"{names[s]} {C.card_str(c, symbols=True)}" for s, c in trick)


def pass_lines(view: TableView) -> list[str]:
    """The pass of this round as the view may show it: for each seat shown, the cards
    it chose so far and to whom (``passes to player_1: Q♠ 10♥``), or after the exchange
    what it received and from whom."""
    lines = []
    for seat, target in enumerate(view.pass_to):
        if target is None:
            continue
        chosen, got = view.chosen[seat], view.received[seat]
        if chosen is not None:
            lines.append(f"{view.names[seat]} passes to {view.names[target]}: "
                         + (C.cards_str(chosen, symbols=True) or "-")
                         + f" ({len(chosen)}/3 chosen)")
        elif got is not None:
            passer = view.pass_to.index(seat)
            lines.append(f"{view.names[seat]} received from {view.names[passer]}: "
                         + C.cards_str(got, symbols=True))
    return lines


def render_text(engine: Engine, game: int = 0, observer: int | None = None,
                show_all_hands: bool = False, names: list[str] | None = None) -> str:
    """The table of game ``game`` as text (arguments as for ``table_view``)."""
    view = table_view(engine, game, observer, show_all_hands, names)
    lines = [view.title + ("" if view.seat_to_act is None else
                           f", {view.phase.name.lower()}: {view.names[view.seat_to_act]}")]
    if view.cursed_suit is not None:
        lines.append(f"cursed suit: {C.SUIT_SYMBOLS[view.cursed_suit]}")
    played = dict(view.trick)
    width = max(10, *(len(n) + 1 for n in view.names))
    lines += ["", f"{'seat':{width}s} {'trick':>5s} {'round':>6s} {'total':>6s}"
              + ("  bid" if view.bids is not None else "") + "  hand"]
    for seat, name in enumerate(view.names):
        card = C.card_str(played[seat], symbols=True) if seat in played else ""
        held = view.hands[seat]
        if held is not None and view.chosen[seat]:  # shown on the seat's pass line
            held = [c for c in held if c not in view.chosen[seat]]
        hand = hand_text(held) if held is not None else f"({view.hand_sizes[seat]} cards)"
        marker = "*" if seat == view.seat_to_act else " "
        row = (f"{marker}{name:<{width - 1}s} {card:>5s} {view.points[seat]:>6d} "
               f"{view.totals[seat]:>6d}")
        if view.bids is not None:
            bid = view.bids[seat]
            row += f"  {bid if bid >= 0 else '-':>3}"
        lines.append(row + "  " + hand)
    lines += pass_lines(view)
    if view.last_trick:
        lines.append(f"last trick: {trick_text(view.last_trick, view.names)} "
                     f"- taken by {view.names[view.last_winner]}")
    if view.dead:
        lines.append(f"dead pile: {hand_text(view.dead)}")
    if view.winners:
        lines.append(f"match over; won by {', '.join(view.names[s] for s in view.winners)}")
    return "\n".join(lines)
