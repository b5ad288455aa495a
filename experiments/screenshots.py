"""The README's pictures, made by the project's own commands (``make screenshots``).

* ``docs/img/play.svg``: ``smoor-play``'s terminal (its ``rich`` console exported as SVG)
  at a decision of a 4-player Smoorverliefd round with bids, after asking for a hint;
* ``docs/img/table.svg``: ``render_svg`` of that table, every hand shown;
* ``docs/img/viewer.png``: ``smoor-view``'s page of the match's first round, opened in
  headless Chromium (Playwright) and stepped to the middle of a trick;
* ``docs/img/serve.png``: ``smoor-serve``'s page in a 4-player Hearts match against
  ``greedy``, clicked through the pass to the third trick.
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

from experiments.play import Screen, Session, play
from smoor_env.core.rules import Rules
from smoor_env.record import write_records
from smoor_env.render import render_svg
from smoor_env.render.viewer import main as view

OUT = Path("docs/img")
CHROMIUM = "/usr/bin/chromium"


def terminal(session: Session, moves: int) -> str:
    """Play the person's first ``moves`` decisions (move 1), then, at the next decision
    with at least 4 legal moves, ask for a hint; returns that last screen as SVG."""
    from rich.console import Console

    console = Console(record=True, width=92, file=io.StringIO(), force_terminal=True)
    answers = []

    def read(prompt: str) -> str:
        if answers and answers[-1] == "hint":
            answer = "quit"
        elif len(answers) >= moves and len(session.legal_actions()) >= 4:
            answer = "hint"
        else:
            answer = "1"
        console.print(prompt + answer, style="dim", highlight=False)
        answers.append(answer)
        if answer == "1":  # the picture starts after the person's last move
            console.export_text(clear=True)
        return answer

    play(session, Screen(console=console), None, hint_worlds=64, read=read)
    return console.export_svg(title="smoor-play")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    rules = Rules(bidding=True, target_score=None)
    session = Session(rules, seed=7, seat=0, agent_specs=["greedy", "mc", "greedy"])
    (OUT / "play.svg").write_text(terminal(session, moves=5), encoding="utf-8")
    (OUT / "table.svg").write_text(render_svg(session.engine, observer=0, show_all_hands=True,
                                              names=session.names), encoding="utf-8")
    # The rest of the round, for the viewer.
    play(session, Screen(console=_silent()), None, hint_worlds=16,
         read=lambda prompt: "1")
    with tempfile.TemporaryDirectory() as tmp:
        records, page = Path(tmp) / "match.jsonl", Path(tmp) / "game.html"
        write_records(records, session.records)
        view([str(records), "-o", str(page)])
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            tab = browser.new_page(viewport={"width": 1010, "height": 500})
            tab.goto(page.as_uri())
            for key in ["t"] * 5 + ["ArrowRight"] * 2:
                tab.keyboard.press(key)
            tab.screenshot(path=str(OUT / "viewer.png"))
            browser.close()
        serve_page(browser_path=CHROMIUM, out=OUT / "serve.png")
    for name in ("play.svg", "table.svg", "viewer.png", "serve.png"):
        print(f"{OUT / name}: {(OUT / name).stat().st_size // 1024} kB")
    return 0


def serve_page(browser_path: str, out: Path) -> None:
    """``smoor-serve``'s page, clicked (first legal move) to the third trick of Hearts."""
    from playwright.sync_api import sync_playwright

    from experiments.serve import running_server

    with running_server() as (server, base), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_path,
                                             args=["--no-sandbox"])
        tab = browser.new_page(viewport={"width": 1010, "height": 900})
        tab.goto(base + "/")
        tab.select_option("#rule-set", "hearts")
        tab.fill("#seed", "3")
        tab.click("#start")
        game = None
        while game is None or game.session.engine.state.trick_index[0] < 2:
            tab.wait_for_function("['your move', 'over'].includes("
                                  "document.getElementById('status').dataset.status)")
            game = next(iter(server.games._games.values()))
            shown = tab.get_attribute("#status", "data-version")
            tab.click("#moves button")
            tab.wait_for_function("document.getElementById('status').dataset.version"
                                  f" !== '{shown}'")
        tab.wait_for_function("document.getElementById('status').dataset.status"
                              " === 'your move'")
        tab.screenshot(path=str(out), full_page=True)
        browser.close()


def _silent():
    from rich.console import Console

    return Console(file=io.StringIO())


if __name__ == "__main__":
    sys.exit(main())
