"""Game records: every finished round as a JSON object, JSON-lines files, and replay.

A record has exactly the keys of the rules specification::

    {"rules": {...all options...}, "seed": int, "round": int, "dealer": int,
     "hands": [[card text, ...] per seat, as dealt], "dead": [card text, ...],
     "passes": [[3 card texts] per seat] or null, "bids": [...] or null,
     "cursed_suit": "H" or null, "actions": [[seat, action id], ...] in order,
     "trick_winners": [seat, ...], "round_points": [...], "totals": [...]}

``round_points`` is the whole round score after every bonus, penalty and
doubling (Hearts: positive penalty points); ``totals`` are the match totals
after the round. ``replay(record)`` plays the record through the engine and
raises ``ReplayError`` at the first difference. Records may carry more keys
(``smoor-play`` adds ``"agents"``, the seats' names, which ``smoor-view`` shows);
reading and replay ignore them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from smoor_env import cards as C
from smoor_env.engine import Engine
from smoor_env.rules import Rules, turn_order
from smoor_env.state import BID_OFFSET, CURSE_OFFSET

RECORD_KEYS = ("rules", "seed", "round", "dealer", "hands", "dead", "passes", "bids",
               "cursed_suit", "actions", "trick_winners", "round_points", "totals")


class ReplayError(AssertionError):
    """A record does not replay: the engine disagrees with it."""


def _texts(mask: int) -> list[str]:
    return [C.card_str(c) for c in C.cards_of(mask)]


def round_record(engine: Engine, game: int, seed: int | None) -> dict:
    """The record of the round that game ``game`` just finished (call it on ``round_over``).

    Built from ``state.finished``, the snapshot the engine takes at the end of each
    round, with the round's points and the match totals after it.
    """
    st, rules = engine.state, engine.rules
    fin = {name: value[game] for name, value in st.finished.items()}
    p = rules.num_players
    dealer = int(fin["dealer"])
    order = turn_order(dealer + 1, p).tolist()  # clockwise from the dealer's left
    actions: list[list[int]] = []
    passes = fin["passes"]  # (P, 3)
    passed = bool((passes >= 0).any())
    if passed:
        actions += [[seat, int(card)] for seat in order for card in passes[seat]]
    cursed = int(fin["cursed_suit"])
    if cursed >= 0:
        actions.append([dealer, CURSE_OFFSET + cursed])
    bids = fin["bids"]  # (P,)
    if rules.bidding:
        actions += [[seat, BID_OFFSET + int(bids[seat])] for seat in order]
    for leader, cards in zip(fin["trick_leader"], fin["trick_cards"], strict=True):
        actions += [[seat, int(cards[seat])] for seat in turn_order(int(leader), p).tolist()]
    return {
        "rules": rules.to_dict(),
        "seed": seed,
        "round": int(fin["round_number"]),
        "dealer": dealer,
        "hands": [_texts(int(h)) for h in fin["dealt"]],
        "dead": _texts(int(fin["dead"])),
        "passes": [[C.card_str(c) for c in seat] for seat in passes] if passed else None,
        "bids": [int(b) for b in bids] if rules.bidding else None,
        "cursed_suit": C.SUITS[cursed] if cursed >= 0 else None,
        "actions": actions,
        "trick_winners": [int(w) for w in fin["trick_winner"]],
        "round_points": [int(x) for x in st.round_points[game]],
        "totals": [int(x) for x in st.totals[game]],
    }


def write_records(path: str | Path, records: Iterable[dict]) -> None:
    """Append records to a JSON-lines file (one round per line)."""
    with open(path, "a", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")


def read_records(path: str | Path) -> Iterator[dict]:
    """The records of a JSON-lines file, in order."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                record = json.loads(line)
                missing = set(RECORD_KEYS) - set(record)
                if missing:
                    raise ValueError(f"{path}:{number}: not a game record, missing "
                                     f"{sorted(missing)}")
                yield record


def replay(record: dict) -> Engine:
    """Play a record through the engine; raise ``ReplayError`` at the first difference.

    The round starts from the record's deal, dealer, round number and the totals
    before it (``totals - round_points``); every action must be legal and made by
    the recorded seat, and the trick winners, round points and totals must match.

    Returns:
        The engine after the round (its ``state.finished`` holds the replayed round).
    """
    rules = Rules(**record["rules"])
    engine = Engine(rules, 1)
    before = np.array(record["totals"]) - np.array(record["round_points"])
    engine.reset(record["seed"] or 0, hands=[record["hands"]], dealers=[record["dealer"]],
                 round_number=[record["round"]], totals=[before])
    st = engine.state
    for step, (seat, action) in enumerate(record["actions"]):
        if st.round_over[0]:
            raise ReplayError(f"step {step}: the round ended before the record's last action")
        if int(st.current_player[0]) != seat:
            raise ReplayError(f"step {step}: record says seat {seat} acts, engine says seat "
                              f"{int(st.current_player[0])}")
        try:
            engine.step(np.array([action]))
        except ValueError as error:
            raise ReplayError(f"step {step}: {error}") from error
    if not st.round_over[0]:
        raise ReplayError("the record's actions end before the round does")
    got = {
        "trick_winners": [int(w) for w in st.finished["trick_winner"][0]],
        "round_points": [int(x) for x in st.round_points[0]],
        "totals": [int(x) for x in st.totals[0]],
    }
    for key, value in got.items():
        if value != record[key]:
            raise ReplayError(f"{key}: record has {record[key]}, the engine gives {value}")
    return engine
