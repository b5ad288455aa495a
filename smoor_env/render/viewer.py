"""``smoor-view``: a replay viewer of game records as one self-contained HTML file.

    smoor-view results/play/smoorverliefd_4p_seed7.jsonl -o game.html

The page steps through every round of the records action by action: every hand,
the trick in progress, the last finished trick and who took it, bids, the cursed
suit, round points and totals, and the seats' names when the records have an
``"agents"`` key (``smoor-play`` writes one). Keys: ``→``/``←`` next/previous
card, ``t``/``T`` next/previous trick, ``r``/``R`` next/previous round, ``Home``
the start of the round; the same as buttons. Nothing is loaded from the network.

Each record is replayed through the engine here, in Python (the page repeats no
rule): the page receives one frame per action, read with ``render.table_view``.
Elements carry data attributes (``data-seat``, ``data-card``, ``data-points``,
``data-round``, ``data-step``) for tests and scripts.
"""

from __future__ import annotations

import html
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
import tyro

from smoor_env.core import cards as C
from smoor_env.core.engine import Engine, action_str
from smoor_env.core.rules import Rules
from smoor_env.core.state import Phase
from smoor_env.record import ReplayError, read_records, replay, replay_match
from smoor_env.render import table_view


def _texts(cards: list[int]) -> list[str]:
    return [C.card_str(c) for c in cards]


def round_frames(record: dict) -> dict:
    """The frames of one record: the deal, then the table after each action.

    Returns:
        ``{"round", "names", "game", "frames": [...]}``; a frame holds ``hands``
        (card texts per seat), ``trick`` and ``last`` (``[seat, card]`` in play
        order), ``winner`` (of ``last``), ``points``, ``totals``, ``bids``,
        ``cursed``, ``move`` (``[seat, text]`` of the action that led to it) and
        ``trick_done`` (the action finished a trick).
    """
    rules = Rules(**record["rules"])
    p = rules.num_players
    names = record.get("agents") or [f"player_{s}" for s in range(p)]
    engine = Engine(rules, 1)
    before = np.array(record["totals"]) - np.array(record["round_points"])
    engine.reset(record["seed"] or 0, hands=[record["hands"]], dealers=[record["dealer"]],
                 round_number=[record["round"]], totals=[before])

    def frame(move: list | None, trick_done: bool) -> dict:
        view = table_view(engine, observer=0, show_all_hands=True, names=names)
        return {"hands": [_texts(h) for h in view.hands],
                "trick": [[s, C.card_str(c)] for s, c in view.trick],
                "last": [[s, C.card_str(c)] for s, c in view.last_trick],
                "winner": view.last_winner, "points": view.points, "totals": view.totals,
                "bids": view.bids, "move": move, "trick_done": trick_done,
                "cursed": None if view.cursed_suit is None else C.SUITS[view.cursed_suit],
                "pass_to": view.pass_to,
                "chosen": [None if c is None else _texts(c) for c in view.chosen],
                "received": [None if c is None else _texts(c) for c in view.received]}

    frames = [frame(None, False)]
    for seat, action in record["actions"]:
        tricks = int(engine.state.trick_index[0])
        passing = Phase(int(engine.state.phase[0])) == Phase.PASS
        engine.step(np.array([action]))
        done = bool(engine.state.round_over[0]) or int(engine.state.trick_index[0]) > tricks
        text = (action_str(action) if action >= C.NUM_CARDS else
                ("passes " if passing else "") + C.card_str(action, symbols=True))
        frames.append(frame([seat, text], done))
    # After the last card the engine has dealt the next round: show the round's end instead.
    end = frames[-1]
    end.update(hands=[[] for _ in range(p)], trick=[], points=list(record["round_points"]),
               totals=list(record["totals"]))
    return {"round": record["round"], "names": names, "game": rules.game,
            "players": p, "frames": frames}


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body { font-family: system-ui, sans-serif; background: #f4f1ea; margin: 16px; color: #222; }
#table { background: #1d6b3a; color: #fff; border-radius: 18px; padding: 12px 16px;
         max-width: 980px; }
.seat { display: flex; align-items: center; gap: 10px; padding: 4px 0; }
.seat.to-act .name { color: #ffe066; font-weight: bold; }
.name { width: 140px; } .nums { width: 190px; font-size: 14px; }
.pass { font-size: 12px; color: #cfe8d6; }
.hand, .cards { display: flex; gap: 3px; flex-wrap: wrap; min-height: 46px; }
.card { width: 34px; height: 42px; background: #fffdf5; color: #111; border-radius: 4px;
        border: 1px solid #555; font-weight: bold; font-size: 13px; line-height: 16px;
        padding: 2px 0 0 3px; box-sizing: border-box; white-space: nowrap; overflow: hidden; }
.cards .card { width: 58px; height: 48px; }
.card.red { color: #c8102e; }
.card .who { display: block; font-size: 9px; color: #555; font-weight: normal; }
#middle { display: flex; gap: 40px; margin: 10px 0; padding: 8px 0;
          border-top: 1px solid #2f8a50; border-bottom: 1px solid #2f8a50; }
#middle h3 { margin: 0 0 4px 0; font-size: 14px; font-weight: normal; }
#controls { margin: 12px 0; } button { margin-right: 6px; }
#move { font-weight: bold; }
</style></head><body>
<h2 id="title"></h2>
<div id="controls">
 <button id="prev-round">&#8676; round (R)</button>
 <button id="prev-trick">&#8592; trick (T)</button>
 <button id="prev-card">&#8592; card</button>
 <button id="next-card">card &#8594;</button>
 <button id="next-trick">trick (t) &#8594;</button>
 <button id="next-round">round (r) &#8677;</button>
 <span id="status"></span>
</div>
<div id="table">
 <div id="cursed"></div>
 <div id="seats"></div>
 <div id="middle">
  <div><h3>trick</h3><div id="trick" class="cards"></div></div>
  <div><h3 id="last-title">last trick</h3><div id="last" class="cards"></div></div>
 </div>
 <div>last move: <span id="move"></span></div>
</div>
<script>
const ROUNDS = __DATA__;
const SYMBOL = {C: "\\u2663", D: "\\u2666", H: "\\u2665", S: "\\u2660"};
const ORDER = "SHDC", RANKS = "23456789TJQKA";
let r = 0, i = 0;

function cardText(text) {  // "TH" -> "10♥": the display form of a card
  return (text[0] === "T" ? "10" : text[0]) + SYMBOL[text[1]];
}
function cardElement(text, seat) {
  const el = document.createElement("div");
  el.className = "card" + ("HD".includes(text[1]) ? " red" : "");
  el.dataset.card = text;
  el.textContent = cardText(text);
  if (seat !== undefined) {
    el.dataset.seat = seat;
    const who = document.createElement("span");
    who.className = "who"; who.textContent = ROUNDS[r].names[seat];
    el.appendChild(who);
  }
  return el;
}
function sortHand(cards) {  // suits spades first, high to low
  const key = c => ORDER.indexOf(c[1]) * 13 + (12 - RANKS.indexOf(c[0]));
  return cards.slice().sort((a, b) => key(a) - key(b));
}
function show() {
  const round = ROUNDS[r], f = round.frames[i];
  document.getElementById("title").textContent =
    `${round.game}, ${round.players} players - round ${round.round}`;
  const status = document.getElementById("status");
  status.dataset.round = r; status.dataset.step = i;
  status.textContent = `record ${r + 1}/${ROUNDS.length}, action ${i}/${round.frames.length - 1}`;
  document.getElementById("cursed").textContent =
    f.cursed ? "cursed suit: " + SYMBOL[f.cursed] : "";
  const seats = document.getElementById("seats");
  seats.replaceChildren();
  const next = round.frames[i + 1];
  round.names.forEach((name, s) => {
    const row = document.createElement("div");
    row.className = "seat" + (next && next.move[0] === s ? " to-act" : "");
    row.dataset.seat = s;
    const label = document.createElement("div");
    label.className = "name"; label.textContent = name;
    const nums = document.createElement("div");
    nums.className = "nums"; nums.dataset.points = f.points[s]; nums.dataset.total = f.totals[s];
    nums.textContent = (f.bids ? `bid ${f.bids[s] < 0 ? "-" : f.bids[s]}  ` : "")
      + `round ${f.points[s]}  total ${f.totals[s]}`;
    const pass = document.createElement("div");
    pass.className = "pass";
    if (f.chosen && f.chosen[s])
      pass.textContent = `passes to ${round.names[f.pass_to[s]]}: `
        + f.chosen[s].map(cardText).join(" ");
    else if (f.received && f.received[s])
      pass.textContent = `received from ${round.names[f.pass_to.indexOf(s)]}: `
        + f.received[s].map(cardText).join(" ");
    nums.appendChild(pass);
    const hand = document.createElement("div");
    hand.className = "hand";
    sortHand(f.hands[s]).forEach(c => hand.appendChild(cardElement(c)));
    row.append(label, nums, hand);
    seats.appendChild(row);
  });
  document.getElementById("trick").replaceChildren(...f.trick.map(([s, c]) => cardElement(c, s)));
  document.getElementById("last").replaceChildren(...f.last.map(([s, c]) => cardElement(c, s)));
  const lastTitle = document.getElementById("last-title");
  lastTitle.dataset.winner = f.winner === null ? "" : f.winner;
  lastTitle.textContent =
    f.winner === null ? "last trick" : `last trick, taken by ${round.names[f.winner]}`;
  document.getElementById("move").textContent =
    f.move ? `${round.names[f.move[0]]}: ${f.move[1]}` : "(the deal)";
}
function step(delta) {
  const n = ROUNDS[r].frames.length;
  i = Math.min(n - 1, Math.max(0, i + delta));
  show();
}
function trick(delta) {  // to the next (previous) frame that finishes a trick
  const frames = ROUNDS[r].frames;
  let j = i + delta;
  while (j > 0 && j < frames.length - 1 && !frames[j].trick_done) j += delta;
  i = Math.min(frames.length - 1, Math.max(0, j));
  show();
}
function round(delta) {
  r = Math.min(ROUNDS.length - 1, Math.max(0, r + delta)); i = 0; show();
}
const ACTIONS = {"next-card": () => step(1), "prev-card": () => step(-1),
  "next-trick": () => trick(1), "prev-trick": () => trick(-1),
  "next-round": () => round(1), "prev-round": () => round(-1)};
for (const [id, act] of Object.entries(ACTIONS)) document.getElementById(id).onclick = act;
const KEYS = {ArrowRight: "next-card", ArrowLeft: "prev-card", t: "next-trick",
  T: "prev-trick", r: "next-round", R: "prev-round"};
document.addEventListener("keydown", e => {
  if (KEYS[e.key]) { ACTIONS[KEYS[e.key]](); e.preventDefault(); }
  else if (e.key === "Home") { i = 0; show(); }
});
show();
</script></body></html>
"""


def _matches(records: list[dict]) -> list[tuple[int, list[dict]]]:
    """The records split into matches, as (index of the first, its records): a match
    begins at round 1, or where the rules or the seed change, or a round is skipped."""
    matches: list[tuple[int, list[dict]]] = []
    for index, record in enumerate(records):
        last = matches[-1][1][-1] if matches else None
        if (last is None or record.get("round") == 1 or record.get("rules") != last["rules"]
                or record.get("seed") != last["seed"] or record.get("round") != last["round"] + 1):
            matches.append((index, []))
        matches[-1][1].append(record)
    return matches


def viewer_html(records: list[dict], title: str = "smoor-env replay") -> str:
    """The replay page of ``records`` (one HTML document, no external resources), each
    replayed first (``record.replay``: a record the engine would not play is refused with
    a ``ReplayError`` naming the record and the field)."""
    if not records:
        raise ValueError("no game records to show")
    for first, match in _matches(records):  # the page shows only what the engine plays
        if match[0]["round"] == 1:
            try:
                replay_match(match)
            except ReplayError as error:  # "record <k in the match>: ..."
                k, why = str(error).split(": ", 1)
                raise ReplayError(f"record {first + int(k.split()[1]) + 1}: {why}") from None
        else:  # a match's later rounds alone: each round as it stands
            for k, record in enumerate(match):
                try:
                    replay(record)
                except ReplayError as error:
                    raise ReplayError(f"record {first + k + 1}: {error}") from None
    data = json.dumps([round_frames(record) for record in records], separators=(",", ":"))
    # Escape every "<" so that no text (an agent's name) can close or comment out the
    # script element; JSON reads "\\u003c" back as "<".
    data = data.replace("<", "\\u003c")
    return _PAGE.replace("__TITLE__", html.escape(title)).replace("__DATA__", data)


@dataclass
class Args:
    """Write a self-contained HTML replay of game records (JSON lines, smoor_env.record):
    arrows step through cards, t/T tricks, r/R rounds."""

    records: tyro.conf.Positional[Path]
    """a JSON-lines file of game records"""
    output: Annotated[Path, tyro.conf.arg(aliases=("-o",))] = Path("game.html")
    """the HTML file to write"""


def main(argv: list[str] | None = None) -> int:
    args = tyro.cli(Args, args=argv, prog="smoor-view")
    try:
        records = list(read_records(args.records))
        page = viewer_html(records, title=args.records.name)
    except ReplayError as error:
        print(f"smoor-view: error: {args.records}: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"smoor-view: error: cannot read {args.records}: {error.strerror or error}",
              file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"smoor-view: error: {error}", file=sys.stderr)
        return 2
    if not args.output.parent.is_dir():
        print(f"smoor-view: error: the folder of --output {args.output} does not exist",
              file=sys.stderr)
        return 2
    try:
        args.output.write_text(page, encoding="utf-8")
    except OSError as error:
        print(f"smoor-view: error: cannot write {args.output}: {error.strerror}",
              file=sys.stderr)
        return 2
    print(f"{args.output}: {len(records)} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
