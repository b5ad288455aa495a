"""Pictures of a game: the table as text (``text``), as SVG or an RGB array (``picture``),
and the replay viewer's HTML page (``viewer``, the ``smoor-view`` command).
"""

from smoor_env.render.picture import SVGDrawing, draw_table, render_rgb, render_svg
from smoor_env.render.text import (
    DISPLAY_SUITS,
    TableView,
    hand_text,
    render_text,
    suit_groups,
    table_view,
    trick_text,
)

__all__ = ["DISPLAY_SUITS", "SVGDrawing", "TableView", "draw_table", "hand_text",
           "render_rgb", "render_svg", "render_text", "suit_groups", "table_view", "trick_text"]
