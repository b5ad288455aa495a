"""Which bid should the greedy rules make in Blinde Liefde? Every bid, played out.

For each player count, ``--deals`` deals are each played ``--max-bid`` + 1 times: the
first bidder's bid is forced to 0, 1, ..., ``--max-bid``, while every other decision
(the other seats' bids, and every card by every seat) is the greedy rules'. That gives
the first bidder's round points for every bid on every deal, (deals, bids). A bid rule
maps the first bidder's hand to a bid; its value is the mean points of the bids it
picks. Compared: ``agents.greedy.greedy_bid`` (today's rule), the rule it replaced (the
hearts from ten up plus one for every two other aces), and every rule
``round(a * H_k + b * A + c)`` (H_k: hearts held from rank k up, A: the other aces),
of which the best is chosen on the first half of the deals and every value reported
on the second half (held out). The best bid of every deal (an oracle) bounds them all.

    python -m experiments.greedy_bids
    python -m experiments.greedy_bids --players 4 --deals 2000
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tyro

from agents.greedy import greedy_bid
from agents.rollout import greedy_moves
from smoor_env import Engine, Phase, preset
from smoor_env.core import cards as C
from smoor_env.core.state import PHASE_ACTION_OFFSET

_OTHER_ACES = [C.parse_card(c) for c in ("AC", "AD", "AS")]


@dataclass
class Args:
    players: list[int] = field(default_factory=lambda: [3, 4, 5])
    """player counts"""
    deals: int = 40_000
    """deals per player count (each played once per bid)"""
    max_bid: int = 8
    """bids 0..max_bid are played out"""
    seed: int = 0
    """seed of the deals"""
    out: str = "results/greedy_bids.json"
    """where to write the results (JSON)"""


def points_by_bid(players: int, deals: int, max_bid: int, seed: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(deals, max_bid + 1) the first bidder's round points for each forced bid, and
    (deals,) uint64 its hand, every other decision by the greedy rules."""
    rules = preset("bidding", players, matches=False)
    bids = max_bid + 1
    engine = Engine(rules, deals * bids)
    engine.reset(seed, game_ids=np.repeat(np.arange(deals), bids))
    forced = np.tile(np.arange(bids), deals)  # (deals * bids,) the bid of each game
    st = engine.state
    first = st.current_player.copy()  # (G,) the first bidder: bidding opens the round
    if not (st.phase == Phase.BID).all():
        raise RuntimeError("a Blinde Liefde round should open with the bids")
    games = np.arange(deals * bids)
    hand = st.hands[games, first].copy()  # (G,) uint64
    while not st.match_over.all():
        moves = greedy_moves(engine)
        mine = (st.phase == Phase.BID) & (st.current_player == first)
        moves[mine] = PHASE_ACTION_OFFSET[Phase.BID] + forced[mine]
        engine.step(moves)
    points = st.round_points[games, first].reshape(deals, bids).astype(np.float64)
    return points, hand.reshape(deals, bids)[:, 0]


def rule_values(points: np.ndarray, hand: np.ndarray) -> dict:
    """The held-out value (mean points, second half of the deals) of each bid rule."""
    n, bids = points.shape
    train, test = np.arange(n) < n // 2, np.arange(n) >= n // 2
    held = C.mask_to_bool(hand)  # (n, 52)
    hearts = held[:, 13 * C.HEARTS:13 * C.HEARTS + 13]  # (n, 13) ranks 2..A
    from_rank = np.cumsum(hearts[:, ::-1], axis=1)[:, ::-1]  # (n, 13) hearts of rank >= k
    aces = held[:, _OTHER_ACES].sum(axis=1)  # (n,)

    def value(bid: np.ndarray, rows: np.ndarray) -> float:
        return float(points[np.arange(n), np.clip(bid, 0, bids - 1)][rows].mean())

    family = []
    for k, a, b, c in itertools.product(range(13), (0.5, 1.0), (0.0, 1 / 3, 0.5, 1.0),
                                        (-2, -1, 0, 1)):
        bid = np.floor(a * from_rank[:, k] + b * aces + c + 0.5).astype(np.int64)
        family.append((value(bid, train), {"k": C.RANKS[k], "a": a, "b": round(b, 3), "c": c,
                                           "value": value(bid, test)}))
    best = max(family, key=lambda item: item[0])[1]
    previous = from_rank[:, 8] + aces // 2  # the rule before: hearts from ten up + aces / 2
    return {"greedy_bid": value(greedy_bid(hand), test),
            "previous_rule": value(previous, test),
            "best_of_family": best,
            "oracle": float(points[test].max(axis=1).mean()),
            "each_bid": points[test].mean(axis=0).round(3).tolist()}


def main(argv: list[str] | None = None) -> list[dict]:
    args = tyro.cli(Args, args=argv, description=__doc__.split("\n\n")[0])
    if args.deals < 2 or args.max_bid < 1:
        raise ValueError("--deals must be at least 2 and --max-bid at least 1")
    rows = []
    for p in args.players:
        points, hand = points_by_bid(p, args.deals, args.max_bid, args.seed)
        row = {"players": p, **rule_values(points, hand)}
        rows.append(row)
        best = row["best_of_family"]
        print(f"{p}p  greedy_bid {row['greedy_bid']:6.2f}  previous rule "
              f"{row['previous_rule']:6.2f}  best of the family {best['value']:6.2f} "
              f"(k={best['k']}, a={best['a']}, b={best['b']}, c={best['c']})  "
              f"oracle {row['oracle']:6.2f}  points a round, held out", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    return rows


if __name__ == "__main__":
    main()
