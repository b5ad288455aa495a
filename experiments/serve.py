"""``smoor-serve``: play Smoorverliefd or Hearts against agents in the browser.

    smoor-serve                      # http://127.0.0.1:8765/
    smoor-serve --port 9000 --max-games 16

One local page: choose the rule set, the player count and the agents of the other
seats, then play. The table is the project's own picture (``smoor_env.render``, SVG)
drawn for your seat only; your legal cards (and bids, the cursed suit) are the only
buttons; other seats' passes are announced, never shown (the fair-game rule of
``smoor-play``); ``hint`` shows the ``mc`` agent's values; ``undo`` goes back to your
previous decision; at a round's end its points, its replay in ``smoor-view``'s page,
and the game record (JSON lines, ``smoor_env.record``) to download.

The server is the standard library's ``ThreadingHTTPServer``, bound to 127.0.0.1 by
default. Games live in memory only: at most ``--max-games``, each dropped after
``--max-idle`` minutes without a request (the oldest first when full). The agents
think in a worker thread, so the page stays responsive and shows "thinking"; an
agent's error ends that game with its message, never the server. A bad request (an
unknown game, an illegal or untimely move, a malformed body) is a 4xx with a JSON
``{"error": ...}`` and changes nothing.

JSON API (what the page uses): ``GET /api/options``; ``POST /api/games`` with
``{"rule_set", "num_players", "agents": [spec, ...], "seed"}``; ``GET
/api/games/<id>`` (your view); ``POST /api/games/<id>/move`` with ``{"action": id}``;
``POST /api/games/<id>/undo``; ``GET /api/games/<id>/hint``; ``GET
/api/games/<id>/record`` (JSON lines); ``GET /api/games/<id>/replay`` (the finished
rounds in ``smoor-view``'s page).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import tyro

from experiments.play import Session, hint_text, move_text, play_move
from smoor_env import PRESETS, preset
from smoor_env.core import cards as C
from smoor_env.render import render_svg, table_view
from smoor_env.render.viewer import viewer_html

#: The human's seat in every game (the picture puts it at the bottom).
HUMAN_SEAT = 0
#: The largest request body read (a move or a new game is a few hundred bytes).
MAX_BODY = 16_384


class RequestError(Exception):
    """A refused request: its HTTP status and a message for the page."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Log:
    """What ``play.play_move`` says, kept as lines (the ``Screen`` protocol: ``say``)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, text: str, style: str = "") -> None:
        self.lines.extend(text.splitlines())


class Game:
    """One match in the browser: a ``smoor-play`` session, its log and its status.

    ``lock`` guards every change; agents move in ``advance`` (a worker thread) until it
    is the human's turn, the match ends, or an agent fails (``error``)."""

    def __init__(self, rule_set: str, num_players: int, agents: list[str], seed: int) -> None:
        self.rules = preset(rule_set, num_players, matches=True)
        self.rule_set = rule_set
        self.session = Session(self.rules, seed, HUMAN_SEAT, agents)
        self.seed = seed
        self.log = _Log()
        self.lock = threading.Lock()
        self.thinking = False
        self.error: str | None = None
        self.version = 0  # counts changes (the page redraws when it moves)
        self.touched = time.monotonic()
        self._picture: tuple[int, str] | None = None  # (version, svg)

    # -------------------------------------------------------------- moves
    def advance(self) -> None:
        """Let the agents play until the human is to act or the match is over."""
        session = self.session
        try:
            while not session.over and session.to_act() != HUMAN_SEAT:
                seat = session.to_act()
                action = session.agent_action(seat)
                with self.lock:
                    play_move(session, self.log, seat, action, None)
                    self.version += 1
        except Exception as error:  # noqa: BLE001 - an agent's failure ends this game only
            with self.lock:
                self.error = (f"{session.names[session.to_act()]} failed: "
                              f"{type(error).__name__}: {error}")
                self.log.say("game ended: " + self.error)
                traceback.print_exc()
        finally:
            with self.lock:
                self.thinking = False
                self.version += 1

    def play(self, action: Any) -> None:
        """The human's move (an action id); refused unless it is legal now."""
        with self.lock:
            self._can_act()
            legal = self.session.legal_actions()
            if not isinstance(action, int) or isinstance(action, bool) or action not in legal:
                raise RequestError(HTTPStatus.CONFLICT, f"{action!r} is not a legal move now; "
                                   f"legal: {[move_text(a) for a in legal]}")
            self.session.mark_decision()
            play_move(self.session, self.log, HUMAN_SEAT, action, None)
            self.thinking = True
            self.version += 1

    def undo(self) -> None:
        with self.lock:
            self._can_act()
            self.session.mark_decision()
            if not self.session.undo():
                raise RequestError(HTTPStatus.CONFLICT, "nothing to undo")
            self.log.say("undone: back to your previous move")
            self.version += 1

    def hint(self) -> str:
        with self.lock:
            self._can_act()
            return hint_text(self.session, worlds=32)

    def _can_act(self) -> None:
        if self.error:
            raise RequestError(HTTPStatus.CONFLICT, f"the game has ended: {self.error}")
        if self.thinking or self.session.over or self.session.to_act() != HUMAN_SEAT:
            raise RequestError(HTTPStatus.CONFLICT, "it is not your turn")

    # -------------------------------------------------------------- views
    def view(self) -> dict:
        """What the human's seat may see now (JSON)."""
        with self.lock:
            session = self.session
            table = table_view(session.engine, observer=HUMAN_SEAT, names=session.names)
            yours = not (self.thinking or self.error or session.over) and \
                session.to_act() == HUMAN_SEAT
            legal = session.legal_actions() if yours else []
            if self._picture is None or self._picture[0] != self.version:
                self._picture = (self.version, str(render_svg(
                    session.engine, observer=HUMAN_SEAT, names=session.names)))
            status = ("error" if self.error else "over" if session.over else
                      "thinking" if self.thinking or not yours else "your move")
            return {
                "version": self.version, "status": status, "error": self.error,
                "title": table.title, "rule_set": self.rule_set, "names": table.names,
                "phase": table.phase.name.lower(), "hearts": self.rules.is_hearts,
                "points": table.points, "totals": table.totals, "bids": table.bids,
                "hand": [C.card_str(c) for c in table.hands[HUMAN_SEAT] or []],
                "chosen": [C.card_str(c) for c in table.chosen[HUMAN_SEAT] or []],
                "moves": [{"action": a, "text": move_text(a),
                           "card": C.card_str(a) if a < C.NUM_CARDS else None}
                          for a in legal],
                "svg": self._picture[1], "log": self.log.lines[-60:],
                "rounds": [{"round": r["round"], "points": r["round_points"],
                            "totals": r["totals"]} for r in session.records],
                "winners": [table.names[s] for s in table.winners],
            }

    def replay(self) -> str:
        """``smoor-view``'s page of the finished rounds (every hand: they are over)."""
        with self.lock:
            if not self.session.records:
                raise RequestError(HTTPStatus.CONFLICT, "no round has finished yet")
            return viewer_html(list(self.session.records), title="smoor-serve game")

    def record(self) -> str:
        with self.lock:
            out = io.StringIO()
            for record in self.session.records:
                out.write(json.dumps(record) + "\n")
            return out.getvalue()


class Games:
    """The games in memory: at most ``limit``, each dropped after ``max_idle`` s."""

    def __init__(self, limit: int, max_idle: float, workers: int = 2) -> None:
        self.limit, self.max_idle = limit, max_idle
        self._games: dict[str, Game] = {}
        self._lock = threading.Lock()
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agents")

    def new(self, body: dict) -> tuple[str, Game]:
        rule_set = body.get("rule_set", "smoorverliefd")
        if rule_set not in PRESETS:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"unknown rule set {rule_set!r}; "
                               f"known: {', '.join(PRESETS)}")
        players = body.get("num_players", 4)
        agents = body.get("agents", ["greedy"])
        seed = body.get("seed")
        if seed is None:
            seed = int(np.random.default_rng().integers(2**31))
        if not (isinstance(agents, list) and agents and all(isinstance(a, str) for a in agents)):
            raise RequestError(HTTPStatus.BAD_REQUEST, "agents must be a list of agent specs")
        if not (isinstance(players, int) and isinstance(seed, int)):
            raise RequestError(HTTPStatus.BAD_REQUEST, "num_players and seed must be integers")
        try:
            game = Game(rule_set, players, agents, seed)
        except (ValueError, TypeError, OSError, ImportError) as error:
            raise RequestError(HTTPStatus.BAD_REQUEST, str(error)) from None
        key = uuid.uuid4().hex[:12]
        with self._lock:
            self._evict()
            while len(self._games) >= self.limit:
                oldest = min(self._games, key=lambda k: self._games[k].touched)
                del self._games[oldest]
            self._games[key] = game
        self.think(game)
        return key, game

    def get(self, key: str) -> Game:
        with self._lock:
            self._evict()
            game = self._games.get(key)
        if game is None:
            raise RequestError(HTTPStatus.NOT_FOUND, f"no game {key!r} (games end after "
                               f"{self.max_idle / 60:g} idle minutes)")
        game.touched = time.monotonic()
        return game

    def think(self, game: Game) -> None:
        """Let the agents move, off the request's thread."""
        with game.lock:
            game.thinking = True
        self.pool.submit(game.advance)

    def _evict(self) -> None:
        now = time.monotonic()
        for key in [k for k, g in self._games.items() if now - g.touched > self.max_idle]:
            del self._games[key]


# ------------------------------------------------------------------ HTTP
_GAME_PATH = re.compile(r"^/api/games/([0-9a-f]{12})(?:/(move|undo|hint|record|replay))?$")


def make_handler(games: Games) -> type[BaseHTTPRequestHandler]:
    """The request handler of a server holding ``games``."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "smoor-serve"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass  # quiet: the terminal shows only errors

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            self._answer(self._get)

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            self._answer(self._post)

        def _answer(self, route) -> None:
            self.server.last_request = time.monotonic()  # type: ignore[attr-defined]
            try:
                status, kind, payload = route()
            except RequestError as error:
                status, kind = error.status, "application/json"
                payload = json.dumps({"error": str(error)})
            except Exception as error:  # noqa: BLE001 - a bug: 500, the server goes on
                traceback.print_exc()
                status, kind = HTTPStatus.INTERNAL_SERVER_ERROR, "application/json"
                payload = json.dumps({"error": f"{type(error).__name__}: {error}"})
            data = payload.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", f"{kind}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            if kind == "application/x-ndjson":
                self.send_header("Content-Disposition", "attachment; filename=game.jsonl")
            self.end_headers()
            self.wfile.write(data)

        def _get(self) -> tuple[HTTPStatus, str, str]:
            path = self.path.split("?", 1)[0]
            if path == "/":
                return HTTPStatus.OK, "text/html", PAGE
            if path == "/api/options":
                from agents import agent_names

                return HTTPStatus.OK, "application/json", json.dumps({
                    "rule_sets": {name: list(p.players) for name, p in PRESETS.items()},
                    "agents": [a for a in agent_names() if a != "rllib"]})
            match = _GAME_PATH.match(path)
            if not match or match[2] in ("move", "undo"):
                raise RequestError(HTTPStatus.NOT_FOUND, f"no such page: {path}")
            game = games.get(match[1])
            if match[2] == "hint":
                return HTTPStatus.OK, "application/json", json.dumps({"hint": game.hint()})
            if match[2] == "record":
                return HTTPStatus.OK, "application/x-ndjson", game.record()
            if match[2] == "replay":  # the finished rounds in smoor-view's page
                return HTTPStatus.OK, "text/html", game.replay()
            return HTTPStatus.OK, "application/json", json.dumps(game.view())

        def _post(self) -> tuple[HTTPStatus, str, str]:
            path = self.path.split("?", 1)[0]
            body = self._body()
            if path == "/api/games":
                key, game = games.new(body)
                return HTTPStatus.CREATED, "application/json", json.dumps(
                    {"id": key, **game.view()})
            match = _GAME_PATH.match(path)
            if not match or match[2] not in ("move", "undo"):
                raise RequestError(HTTPStatus.NOT_FOUND, f"no such action: {path}")
            game = games.get(match[1])
            if match[2] == "move":
                game.play(body.get("action"))
                games.think(game)
            else:
                game.undo()
            return HTTPStatus.OK, "application/json", json.dumps(game.view())

        def _body(self) -> dict:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                raise RequestError(HTTPStatus.BAD_REQUEST, "bad Content-Length") from None
            if length > MAX_BODY:
                raise RequestError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                                   f"request body over {MAX_BODY} bytes")
            raw = self.rfile.read(length) if length else b"{}"
            try:
                body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                raise RequestError(HTTPStatus.BAD_REQUEST, "the body must be a JSON "
                                   "object") from None
            if not isinstance(body, dict):
                raise RequestError(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
            return body

    return Handler


def make_server(host: str = "127.0.0.1", port: int = 8765, max_games: int = 32,
                max_idle_minutes: float = 120.0) -> ThreadingHTTPServer:
    """A server (not yet serving: call ``serve_forever``); ``port=0`` picks a free port."""
    games = Games(max_games, max_idle_minutes * 60)
    server = ThreadingHTTPServer((host, port), make_handler(games))
    server.daemon_threads = True
    server.games = games  # type: ignore[attr-defined]
    server.last_request = time.monotonic()  # type: ignore[attr-defined]
    return server


@contextlib.contextmanager
def running_server(**options: Any) -> Iterator[tuple[ThreadingHTTPServer, str]]:
    """``make_server(**options)`` serving in a thread (``port=0``: a free port), as
    ``(server, base url)``; shut down on exit. For tests and scripts."""
    server = make_server(**{"port": 0, **options})
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    try:
        yield server, f"http://{host}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        server.games.pool.shutdown(wait=False, cancel_futures=True)  # type: ignore[attr-defined]


# ------------------------------------------------------------------ the page
PAGE = (Path(__file__).with_name("serve_page.html")).read_text(encoding="utf-8")


@dataclass
class Args:
    host: str = "127.0.0.1"
    """address to listen on (127.0.0.1: this machine only)"""
    port: int = 8765
    """port to listen on"""
    max_games: int = 32
    """games kept in memory at once (the oldest is dropped for a new one)"""
    max_idle: float = 120.0
    """minutes a game is kept without a request"""
    url_file: Path | None = None
    """write the page's address into this file once listening (for scripts: --port 0
    picks a free port)"""
    exit_when_idle: float | None = None
    """stop after this many seconds without a request (default: run until Ctrl-C)"""


def _stop_when_idle(server: ThreadingHTTPServer, seconds: float) -> None:
    """Shut ``server`` down once no request has come for ``seconds``."""
    while time.monotonic() - server.last_request < seconds:  # type: ignore[attr-defined]
        time.sleep(min(0.1, seconds))
    server.shutdown()


def main(argv: list[str] | None = None) -> int:
    args = tyro.cli(Args, args=argv, prog="smoor-serve",
                    description=__doc__.split("\n\n")[0].split(": ", 1)[1])
    if (args.max_games < 1 or args.max_idle <= 0 or not 0 <= args.port < 65536
            or args.exit_when_idle is not None and args.exit_when_idle < 0):
        print("smoor-serve: error: --max-games must be at least 1, --max-idle positive, "
              "--exit-when-idle not negative and --port 0..65535", file=sys.stderr)
        return 2
    try:
        server = make_server(args.host, args.port, args.max_games, args.max_idle)
    except OSError as error:
        print(f"smoor-serve: error: cannot listen on {args.host}:{args.port}: "
              f"{error.strerror or error}", file=sys.stderr)
        return 2
    host, port = server.server_address[:2]
    url = f"http://{host}:{port}/"
    if args.url_file is not None:
        try:
            args.url_file.write_text(url + "\n", encoding="utf-8")
        except OSError as error:
            print(f"smoor-serve: error: cannot write --url-file {args.url_file}: "
                  f"{error.strerror or error}", file=sys.stderr)
            server.server_close()
            return 2
    print(f"smoor-serve: {url} (Ctrl-C stops)", flush=True)
    if args.exit_when_idle is not None:
        threading.Thread(target=_stop_when_idle, args=(server, args.exit_when_idle),
                         daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        print("\nsmoor-serve: stopped")
    finally:
        server.server_close()
        server.games.pool.shutdown(wait=False, cancel_futures=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

