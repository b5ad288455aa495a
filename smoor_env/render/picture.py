"""The table as a picture: ``draw_table`` (matplotlib), exported by ``render_svg`` (an SVG
document, inline in notebooks) and ``render_rgb`` (an (H, W, 3) uint8 array, the
environments' ``render_mode="rgb_array"``)."""

from __future__ import annotations

import io

import numpy as np

from smoor_env.core import cards as C
from smoor_env.core.engine import Engine
from smoor_env.render.text import RED_SUITS, TableView, suit_groups, table_view

# ------------------------------------------------------------------ picture
# The drawing is in data units on a 160 x 100 table; 1 unit = 5 pixels at the default size.
_WIDTH, _HEIGHT = 160.0, 100.0
_CARD_W, _CARD_H = 6.0, 8.5
_FELT, _BACK = "#1d6b3a", "#27408b"
_RED, _BLACK = "#c8102e", "#111111"
_CHOSEN = "#b8c4d6"  # the face of a card chosen to pass


def _seat_positions(p: int, observer: int) -> dict[int, tuple[float, float]]:
    """Centre of each seat's hand: the observer at the bottom, the others clockwise."""
    angles = 270.0 - 360.0 * np.arange(p) / p  # (P,) degrees, clockwise from the bottom
    xs = _WIDTH / 2 + 57 * np.cos(np.radians(angles))
    ys = _HEIGHT / 2 - 6 + 34 * np.sin(np.radians(angles))
    return {(observer + k) % p: (float(xs[k]), float(ys[k])) for k in range(p)}


def _card(ax, x: float, y: float, card: int | None, legal: bool = False,
          scale: float = 1.0, chosen: bool = False) -> None:
    """One card face (or a back, card None) with its lower left corner at (x, y); a card
    chosen to pass is greyed. A face's SVG element has the id ``card-<compact form>``."""
    from matplotlib.patches import FancyBboxPatch

    w, h = _CARD_W * scale, _CARD_H * scale
    face = _CHOSEN if chosen else "#fffdf5" if card is not None else _BACK
    edge = "#f2b705" if legal else "#555555"
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=0.8",
                                facecolor=face, edgecolor=edge, linewidth=2.2 if legal else 0.6,
                                zorder=2,
                                gid=None if card is None else f"card-{C.card_str(card)}"))
    if card is not None:
        suit = C.card_suit(card)
        colour = _RED if suit in RED_SUITS else _BLACK
        rank = C.rank_str(card)
        ax.text(x + 0.35 * scale, y + h - 0.4 * scale, rank, color=colour,
                fontsize=8.5 * scale, fontweight="bold", ha="left", va="top", zorder=3)
        ax.text(x + 0.35 * scale, y + h - 3.6 * scale, C.SUIT_SYMBOLS[suit], color=colour,
                fontsize=9 * scale, ha="left", va="top", zorder=3)


def draw_table(view: TableView, figsize: tuple[float, float] = (8.0, 5.0)):
    """Draw a ``TableView`` as a matplotlib figure (the one drawing behind SVG and RGB).

    Every seat around an oval table with its name, bid, round points and total; the
    observer's hand (every hand when shown) as card faces grouped by suit with the
    legal cards outlined in gold and cards chosen to pass greyed, hidden hands as card
    backs; a pass's direction, or what was received, by the seat; the trick in progress
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
        chosen = set(view.chosen[seat] or ())
        for k, card in enumerate(cards):
            raised = 1.2 if card in legal else -1.2 if card in chosen else 0.0
            _card(ax, x0 + step * k, cy - _CARD_H / 2 + raised, card, legal=card in legal,
                  chosen=card in chosen)
        label = view.names[seat]
        if view.bids is not None:
            label += f"  bid {view.bids[seat] if view.bids[seat] >= 0 else '-'}"
        label += f"  round {view.points[seat]}  total {view.totals[seat]}"
        if view.chosen[seat] is not None:
            label += f"  passes {len(chosen)}/3 to {view.names[view.pass_to[seat]]}"
        elif view.received[seat] is not None:
            label += (f"  got {C.cards_str(view.received[seat], symbols=True)} from "
                      f"{view.names[view.pass_to.index(seat)]}")
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
