"""A tournament's tables, from its rows: mean points per round with t intervals over deals,
round- and match-win rates with Wilson intervals, and paired comparisons on the same deals."""

from __future__ import annotations

import numpy as np

from agents.evaluation.stats import mean_interval, rate_interval


def summarise(rows: list[dict], matches: bool) -> dict:
    """Per (rule set, players, agent) table and paired comparisons, from the CSV rows."""
    table, pairs = [], []
    keys = sorted({(r["rule_set"], r["players"]) for r in rows})
    for rule_set, players in keys:
        sub = [r for r in rows if r["rule_set"] == rule_set and r["players"] == players]
        agents = sorted({r["agent"] for r in sub})
        deals = sorted({r["deal"] for r in sub})
        per_deal = {}  # agent -> (D,) mean points per round over its seats and rotations
        for agent in agents:
            mine = [r for r in sub if r["agent"] == agent]
            by_deal: dict[int, list[int]] = {}
            for r in mine:
                by_deal.setdefault(r["deal"], []).append(r["points"])
            per_deal[agent] = np.array([np.mean(by_deal[d]) for d in deals])
            mean, low, high = mean_interval(per_deal[agent])
            win, win_low, win_high = rate_interval(sum(r["round_win"] for r in mine), len(mine))
            row = {"rule_set": rule_set, "players": players, "agent": agent,
                   "deals": len(deals), "rounds": len(mine),
                   "mean_points": mean, "mean_points_ci": [low, high],
                   "round_win_rate": win, "round_win_ci": [win_low, win_high]}
            if matches:
                ends = [r for r in mine if r["match_win"] != ""]
                rate, low, high = rate_interval(sum(int(r["match_win"]) for r in ends), len(ends))
                row.update(match_win_rate=rate, match_win_ci=[low, high])
            table.append(row)
        for i, a in enumerate(agents):
            for b in agents[i + 1:]:
                diff = per_deal[a] - per_deal[b]
                mean, low, high = mean_interval(diff)
                pairs.append({"rule_set": rule_set, "players": players, "a": a, "b": b,
                              "mean_points_a_minus_b": mean, "ci": [low, high],
                              "deals_a_ahead": int((diff > 0).sum()),
                              "deals_b_ahead": int((diff < 0).sum())})
    return {"table": table, "pairs": pairs}


def format_table(summary: dict) -> str:
    lines = [f"{'rule set':15s} {'P':>2s} {'agent':24s} {'points/round':>22s} "
             f"{'round wins':>22s}"]
    for r in summary["table"]:
        low, high = r["mean_points_ci"]
        wl, wh = r["round_win_ci"]
        lines.append(f"{r['rule_set']:15s} {r['players']:>2d} {r['agent']:24s} "
                     f"{r['mean_points']:7.2f} [{low:6.2f}, {high:6.2f}] "
                     f"{r['round_win_rate']:7.1%} [{wl:5.1%}, {wh:5.1%}]")
    lines.append("")
    lines.append("paired on the same deals (mean points per round, a - b, 95% CI):")
    for p in summary["pairs"]:
        low, high = p["ci"]
        lines.append(f"{p['rule_set']:15s} {p['players']:>2d} {p['a']} - {p['b']}: "
                     f"{p['mean_points_a_minus_b']:+.2f} [{low:+.2f}, {high:+.2f}]")
    return "\n".join(lines)
