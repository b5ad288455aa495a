"""Rendering one game of an engine: a text table, and a picture (SVG or RGB array).

``table_view`` reads what a table shows from the engine state (hands, the trick in
progress, the last finished trick and who took it, points, totals, bids, the cursed
suit); ``render_text`` prints it, ``draw_table`` draws it with matplotlib, and
``render_svg`` / ``render_rgb`` export that one drawing as an SVG document (shown
inline by notebooks) or as an ``(H, W, 3)`` uint8 array (the environments'
``render_mode="rgb_array"``, so Gymnasium's ``RecordVideo`` can film a match).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from smoor_env import cards as C
from smoor_env.engine import Engine
from smoor_env.rules import turn_order
from smoor_env.scoring import provisional_points
from smoor_env.state import Phase

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
    points: list[int]  # (P,) round points so far (Hearts: minus penalty points)
    totals: list[int]  # (P,) match totals before this round's points
    bids: list[int] | None  # (P,) bids (-1: not yet), None without bidding
    cursed_suit: int | None  # 0..3 or None
    dead: list[int] | None  # the dead pile, when every hand is shown
    winners: list[int]  # the seats that won the match (empty until it is over)


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
    points = provisional_points(rules, st)[g]
    cursed = int(st.cursed_suit[g])
    return TableView(
        title=title, names=names, seat_to_act=seat_to_act, phase=phase, observer=observer,
        hands=shown, hand_sizes=[len(h) for h in hands], legal_cards=legal, trick=trick,
        last_trick=last, last_winner=winner, points=[int(x) for x in points],
        totals=[int(x) for x in st.totals[g]],
        bids=[int(b) for b in st.bids[g]] if rules.bidding else None,
        cursed_suit=cursed if cursed >= 0 else None,
        dead=C.cards_of(int(st.dead[g])) if show_all_hands else None,
        winners=[s for s in range(p) if over and st.winners[g, s]])


def suit_groups(cards: list[int]) -> list[tuple[int, list[int]]]:
    """(suit, cards high to low) for each suit present, spades, hearts, diamonds, clubs."""
    groups = []
    for suit in DISPLAY_SUITS:
        of_suit = [c for c in reversed(cards) if C.card_suit(c) == suit]
        if of_suit:
            groups.append((suit, of_suit))
    return groups


def hand_text(cards: list[int]) -> str:
    """Cards grouped by suit, high to low: ``♠ A Q 7  ♥ K 2 ...``."""
    return "  ".join(C.SUIT_SYMBOLS[suit] + " " + " ".join(C.RANKS[c % 13] for c in group)
                     for suit, group in suit_groups(cards)) or "-"


def trick_text(trick: list[tuple[int, int]], names: list[str]) -> str:
    """``player_1 Q♠, player_2 7♠`` (in play order)."""
    return ", ".join(f"{names[s]} {C.card_str(c, symbols=True)}" for s, c in trick)


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
        hand = hand_text(held) if held is not None else f"({view.hand_sizes[seat]} cards)"
        marker = "*" if seat == view.seat_to_act else " "
        row = (f"{marker}{name:<{width - 1}s} {card:>5s} {view.points[seat]:>6d} "
               f"{view.totals[seat]:>6d}")
        if view.bids is not None:
            bid = view.bids[seat]
            row += f"  {bid if bid >= 0 else '-':>3}"
        lines.append(row + "  " + hand)
    if view.last_trick:
        lines.append(f"last trick: {trick_text(view.last_trick, view.names)} "
                     f"- taken by {view.names[view.last_winner]}")
    if view.dead:
        lines.append(f"dead pile: {hand_text(view.dead)}")
    if view.winners:
        lines.append(f"match over; won by {', '.join(view.names[s] for s in view.winners)}")
    return "\n".join(lines)


# ------------------------------------------------------------------ picture
# The drawing is in data units on a 160 x 100 table; 1 unit = 5 pixels at the default size.
_WIDTH, _HEIGHT = 160.0, 100.0
_CARD_W, _CARD_H = 6.0, 8.5
_FELT, _BACK = "#1d6b3a", "#27408b"
_RED, _BLACK = "#c8102e", "#111111"


def _seat_positions(p: int, observer: int) -> dict[int, tuple[float, float]]:
    """Centre of each seat's hand: the observer at the bottom, the others clockwise."""
    angles = 270.0 - 360.0 * np.arange(p) / p  # (P,) degrees, clockwise from the bottom
    xs = _WIDTH / 2 + 57 * np.cos(np.radians(angles))
    ys = _HEIGHT / 2 - 6 + 34 * np.sin(np.radians(angles))
    return {(observer + k) % p: (float(xs[k]), float(ys[k])) for k in range(p)}


def _card(ax, x: float, y: float, card: int | None, legal: bool = False,
          scale: float = 1.0) -> None:
    """One card face (or a back, card None) with its lower left corner at (x, y)."""
    from matplotlib.patches import FancyBboxPatch

    w, h = _CARD_W * scale, _CARD_H * scale
    face = "#fffdf5" if card is not None else _BACK
    edge = "#f2b705" if legal else "#555555"
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=0.8",
                                facecolor=face, edgecolor=edge, linewidth=2.2 if legal else 0.6,
                                zorder=2))
    if card is not None:
        suit = C.card_suit(card)
        colour = _RED if suit in RED_SUITS else _BLACK
        rank = C.RANKS[card % 13].replace("T", "10")
        ax.text(x + 0.35 * scale, y + h - 0.4 * scale, rank, color=colour,
                fontsize=8.5 * scale, fontweight="bold", ha="left", va="top", zorder=3)
        ax.text(x + 0.35 * scale, y + h - 3.6 * scale, C.SUIT_SYMBOLS[suit], color=colour,
                fontsize=9 * scale, ha="left", va="top", zorder=3)


def draw_table(view: TableView, figsize: tuple[float, float] = (8.0, 5.0)):
    """Draw a ``TableView`` as a matplotlib figure (the one drawing behind SVG and RGB).

    Every seat around an oval table with its name, bid, round points and total; the
    observer's hand (every hand when shown) as card faces grouped by suit with the
    legal cards outlined in gold, hidden hands as card backs; the trick in progress
    in the middle, each card towards its player; the last finished trick and who
    took it in the top left corner.

    Returns:
        A ``matplotlib.figure.Figure`` (not attached to pyplot: nothing is shown).
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import Ellipse

    fig = Figure(figsize=figsize, dpi=100)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, _WIDTH)
    ax.set_ylim(0, _HEIGHT)
    ax.set_axis_off()
    ax.add_patch(Ellipse((_WIDTH / 2, _HEIGHT / 2 - 6), 150, 86, facecolor=_FELT,
                         edgecolor="#0f3d21", linewidth=3, zorder=0))
    fig.patch.set_facecolor("#f4f1ea")
    ax.text(2, _HEIGHT - 1.5, view.title, fontsize=9, ha="left", va="top")
    if view.cursed_suit is not None:
        suit = view.cursed_suit
        ax.text(_WIDTH - 2, _HEIGHT - 1.5, f"cursed suit {C.SUIT_SYMBOLS[suit]}", fontsize=9,
                ha="right", va="top", color=_RED if suit in RED_SUITS else _BLACK)
    p = len(view.names)
    positions = _seat_positions(p, view.observer)
    legal = set(view.legal_cards)
    for seat, (cx, cy) in positions.items():
        held = view.hands[seat]
        n = view.hand_sizes[seat]
        step = 3.6 if held is not None else 1.6
        cards: list[int | None] = ([c for _, group in suit_groups(held) for c in group]
                                   if held is not None else [None] * n)
        x0 = cx - (step * (len(cards) - 1) + _CARD_W) / 2
        for k, card in enumerate(cards):
            raised = 1.2 if card in legal else 0.0
            _card(ax, x0 + step * k, cy - _CARD_H / 2 + raised, card, legal=card in legal)
        label = view.names[seat]
        if view.bids is not None:
            label += f"  bid {view.bids[seat] if view.bids[seat] >= 0 else '-'}"
        label += f"  round {view.points[seat]}  total {view.totals[seat]}"
        acting = seat == view.seat_to_act
        ax.text(cx, cy + _CARD_H / 2 + 2.2, ("▶ " if acting else "") + label, fontsize=8,
                ha="center", va="bottom", color="#ffe066" if acting else "white",
                fontweight="bold" if seat in view.winners or acting else "normal", zorder=3,
                bbox={"facecolor": "#0f3d21", "edgecolor": "none", "pad": 1.5, "alpha": 0.8})
    # The trick in progress: each card between the centre and its player.
    centre = np.array([_WIDTH / 2, _HEIGHT / 2 - 6])
    for seat, card in view.trick:
        x, y = centre + 0.28 * (np.array(positions[seat]) - centre)
        _card(ax, x - _CARD_W * 0.65, y - _CARD_H * 0.65, card, scale=1.3)
    if view.last_trick:
        ax.text(2, _HEIGHT - 6.5, f"last trick, taken by {view.names[view.last_winner]}:",
                fontsize=7.5, ha="left", va="top")
        for k, (_, card) in enumerate(view.last_trick):
            _card(ax, 2 + 5.0 * k, _HEIGHT - 18, card, scale=0.75)
    if view.winners:
        ax.text(*centre, "match won by " + ", ".join(view.names[s] for s in view.winners),
                fontsize=12, color="white", ha="center", va="center", fontweight="bold")
    return fig


class SVGDrawing(str):
    """An SVG document (a str) that Jupyter displays inline as a picture."""

    def _repr_svg_(self) -> str:
        return str(self)


def render_svg(engine: Engine, game: int = 0, observer: int | None = None,
               show_all_hands: bool = False, names: list[str] | None = None) -> SVGDrawing:
    """The table as an SVG document (``draw_table``; text kept as text, so it stays small).

    Arguments as for ``table_view``. In a notebook the returned value shows as a picture.
    """
    import matplotlib

    fig = draw_table(table_view(engine, game, observer, show_all_hands, names))
    out = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "smoor"}):
        fig.savefig(out, format="svg", metadata={"Date": None})
    return SVGDrawing(out.getvalue())


def render_rgb(engine: Engine, game: int = 0, observer: int | None = None,
               show_all_hands: bool = False, names: list[str] | None = None) -> np.ndarray:
    """(500, 800, 3) uint8 picture of the table (``draw_table`` rasterised); arguments as
    for ``table_view``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = draw_table(table_view(engine, game, observer, show_all_hands, names))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[:, :, :3].copy()  # (H, W, 3) uint8
