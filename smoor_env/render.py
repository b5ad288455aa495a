"""A readable text table of one game: hands, the trick in progress, points and totals."""

from __future__ import annotations

from smoor_env import cards as C
from smoor_env.engine import Engine
from smoor_env.scoring import provisional_points
from smoor_env.state import Phase


def _hand_text(mask: int) -> str:
    """Cards grouped by suit, high to low: ``♠ A Q 7  ♥ K 2 ...``."""
    groups = []
    for suit in (C.SPADES, C.HEARTS, C.DIAMONDS, C.CLUBS):
        ranks = [C.RANKS[c % 13] for c in reversed(C.cards_of(mask)) if c // 13 == suit]
        if ranks:
            groups.append(C.SUIT_SYMBOLS[suit] + " " + " ".join(ranks))
    return "  ".join(groups) or "-"


def render_text(engine: Engine, game: int = 0, observer: int | None = None,
                show_all_hands: bool = False) -> str:
    """The table of game ``game`` as text.

    Args:
        engine: the engine to show.
        game: which game of the batch.
        observer: the seat whose hand is shown (default: the player to act).
        show_all_hands: show every hand (and the dead pile), not only the observer's.
    """
    st, rules = engine.state, engine.rules
    p = rules.num_players
    phase = Phase(int(st.phase[game]))
    seat_to_act = int(st.current_player[game])
    observer = seat_to_act if observer is None else observer
    title = "Hearts" if rules.is_hearts else "Smoorverliefd"
    lines = [f"{title}, {p} players - round {int(st.round_number[game])}, "
             f"dealer player_{int(st.dealer[game])}, "
             f"trick {min(int(st.trick_index[game]) + 1, rules.num_tricks)}/{rules.num_tricks}"
             + ("" if phase == Phase.OVER else f", {phase.name.lower()}: player_{seat_to_act}")]
    if st.cursed_suit[game] >= 0:
        lines.append(f"cursed suit: {C.SUIT_SYMBOLS[int(st.cursed_suit[game])]}")
    points = provisional_points(rules, st)[game]
    header = f"{'seat':10s} {'trick':>5s} {'round':>6s} {'total':>6s}"
    lines += ["", header + ("  bid" if rules.bidding else "") + "  hand"]
    for seat in range(p):
        card = int(st.current_trick[game, seat])
        played = C.card_str(card, symbols=True) if card >= 0 else ""
        held = int(st.hands[game, seat])
        hand = (_hand_text(held) if show_all_hands or seat == observer
                else f"({bin(held).count('1')} cards)")
        marker = "*" if seat == seat_to_act and phase != Phase.OVER else " "
        row = (f"{marker}player_{seat:<2d} {played:>5s} {int(points[seat]):>6d} "
               f"{int(st.totals[game, seat]):>6d}")
        if rules.bidding:
            bid = int(st.bids[game, seat])
            row += f"  {bid if bid >= 0 else '-':>3}"
        lines.append(row + "  " + hand)
    if show_all_hands and st.dead[game]:
        lines.append(f"dead pile: {_hand_text(int(st.dead[game]))}")
    if st.match_over[game]:
        winners = [f"player_{s}" for s in range(p) if st.winners[game, s]]
        lines.append(f"match over; won by {', '.join(winners)}")
    return "\n".join(lines)
