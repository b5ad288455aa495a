"""A tournament's plots (matplotlib ``Figure`` objects, no pyplot), each written as PNG and
SVG."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

#: Resolution of the PNG plots: enough on a screen, small in a repository or notebook.
PNG_DPI = 90


def save_figure(fig, png_path: Path) -> list[Path]:
    """Write the ``matplotlib.figure.Figure`` as PNG (for screens and notebooks) and SVG
    (vector, for papers) next to each other, and return both paths. The plots build
    ``Figure`` objects without pyplot, so they neither need nor change a backend (a
    notebook's inline plots keep working). The same figure gives the same bytes: the SVG
    has no date and fixed element ids (a committed plot redrawn changes only with what
    it shows)."""
    import matplotlib

    svg_path = png_path.with_suffix(".svg")
    fig.savefig(png_path, dpi=PNG_DPI)
    with matplotlib.rc_context({"svg.hashsalt": "smoor-env"}):
        fig.savefig(svg_path, metadata={"Date": None})
    return [png_path, svg_path]


def run_caption(summary: dict) -> str:
    """What a tournament's plots show: deals, line-up, seed and game length."""
    args = summary.get("args", {})
    deals = sorted({r["deals"] for r in summary["table"]})
    lineup = ", ".join(args.get("agents", sorted({r["agent"] for r in summary["table"]})))
    return (f"{'/'.join(map(str, deals))} duplicate deals per panel point, each played in every "
            f"seat rotation; line-up by seat (repeated to fill the table): {lineup}; "
            f"seed {args.get('seed', '?')}; "
            f"{'whole matches' if args.get('matches') else 'single rounds'}")


def plot_summary(summary: dict, folder: Path) -> list[Path]:
    """Round-win rate and mean points per round against the player count, one panel per
    rule set, with 95% error bars; the win-rate panels draw the chance rate 1/P. Each
    plot is written as PNG and SVG; returns the paths."""
    from matplotlib.figure import Figure

    written = []
    rule_sets = sorted({r["rule_set"] for r in summary["table"]})
    caption = run_caption(summary)
    for metric, ci, label, name in (
            ("round_win_rate", "round_win_ci", "round-win rate (ties share)", "win_rates.png"),
            ("mean_points", "mean_points_ci", "mean points per round", "points.png")):
        fig = Figure(figsize=(5 * len(rule_sets), 4.4))
        axes = fig.subplots(1, len(rule_sets), squeeze=False)
        for ax, rule_set in zip(axes[0], rule_sets, strict=True):
            rows = [r for r in summary["table"] if r["rule_set"] == rule_set]
            player_counts = sorted({r["players"] for r in rows})
            for agent in sorted({r["agent"] for r in rows}):
                mine = sorted((r for r in rows if r["agent"] == agent),
                              key=lambda r: r["players"])
                x = [r["players"] for r in mine]
                y = np.array([r[metric] for r in mine])
                err = np.abs(np.array([r[ci] for r in mine]).T - y)
                ax.errorbar(x, y, yerr=err, marker="o", capsize=4, label=agent)
            if metric == "round_win_rate":
                ax.plot(player_counts, [1 / p for p in player_counts], color="grey",
                        linestyle="--", label="chance (1/P)")
            units = " (penalty points: lower is better)" if rule_set.startswith("hearts") and \
                metric == "mean_points" else ""
            ax.set_title(f"{rule_set}{units}")
            ax.set_xlabel("players")
            ax.set_ylabel(label)
            ax.set_xticks(player_counts)
            ax.grid(alpha=0.3)
            ax.legend()
        fig.suptitle(f"{label}, 95% confidence intervals, duplicate deals")
        fig.text(0.5, 0.01, caption, ha="center", va="bottom", fontsize=7, wrap=True)
        fig.tight_layout(rect=(0, 0.06, 1, 1))
        written += save_figure(fig, folder / name)
    return written


def plot_throughput(json_path: Path, folder: Path) -> list[Path]:
    """Rounds/s against batch size per player count, from experiments.throughput's JSON
    (PNG and SVG; none without the JSON)."""
    if not json_path.exists():
        return []
    from matplotlib.figure import Figure

    data = json.loads(json_path.read_text())
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    base = [r for r in data["rows"] if r["rules"] == "Smoorverliefd"]
    for players in sorted({r["players"] for r in base}):
        mine = sorted((r for r in base if r["players"] == players), key=lambda r: r["batch"])
        ax.plot([r["batch"] for r in mine], [r["rounds_per_s"] for r in mine], marker="o",
                label=f"{players} players")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("batch size (games stepped together)")
    ax.set_ylabel("random games (rounds) per second")
    ax.set_title("Engine throughput, one thread, random legal play")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    return save_figure(fig, folder / "throughput.png")
