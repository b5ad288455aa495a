"""smoor-serve: whole games played by clicking in a real browser (Debian's chromium), no
hidden card in the page at any point, records that replay; the JSON API's refusals."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest
from test_fair_play import hidden_from

from experiments.serve import HUMAN_SEAT
from smoor_env.core import cards as C
from smoor_env.record import replay_match


def _request(base: str, method: str, path: str, body=None, raw: bytes | None = None):
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, method=method, data=data,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _check_page(page, game) -> None:
    """No card the human's seat cannot know is anywhere in the page now."""
    with game.lock:
        hidden = hidden_from(game.session, None)
    faces = page.eval_on_selector_all("[id^='card-']", "els => els.map(e => e.id.slice(5))")
    buttons = page.eval_on_selector_all("[data-card]", "els => els.map(e => e.dataset.card)")
    shown = {C.parse_card(c) for c in faces + buttons}
    leaked = shown & hidden
    assert not leaked, f"the page shows {C.cards_str(sorted(leaked))}, hidden from the player"
    log = page.inner_text("#log")
    assert all(" plays " not in line for line in log.splitlines() if "chosen" in line)


@pytest.mark.parametrize("rule_set, players, rounds", [("smoorverliefd", 4, 1),
                                                        ("hearts", 4, 2), ("bidding", 3, 1)])
def test_whole_rounds_by_clicking(server, browser, rule_set, players, rounds, tmp_path):
    srv, base = server
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(base + "/")
    page.select_option("#rule-set", rule_set)
    page.select_option("#players", str(players))
    page.fill("#agents", "greedy")
    page.fill("#seed", "7")
    page.click("#start")
    page.wait_for_function("document.getElementById('status').dataset.status !== ''")
    game = next(iter(g for g in srv.games._games.values() if g.rule_set == rule_set
                     and g.seed == 7))
    clicks = 0
    while len(game.session.records) < rounds and not game.session.over:
        page.wait_for_function(
            "['your move', 'over', 'error'].includes("
            "document.getElementById('status').dataset.status)", timeout=60_000)
        status = page.get_attribute("#status", "data-status")
        assert status != "error", page.inner_text("#status")
        _check_page(page, game)
        if status == "over":
            break
        buttons = page.query_selector_all("#moves button")
        assert buttons, "your move, but no move to click"
        with game.lock:
            legal = game.session.legal_actions()
        assert sorted(int(b.get_attribute("data-action")) for b in buttons) == sorted(legal)
        shown = page.get_attribute("#status", "data-version")
        action = buttons[clicks % len(buttons)].get_attribute("data-action")
        # by selector, found again at the click: a re-render between the query and the
        # click detaches the handle (seen once under load)
        page.click(f"#moves button[data-action='{action}']")
        page.wait_for_function(  # the page has drawn the answer to the click
            f"document.getElementById('status').dataset.version !== '{shown}'")
        clicks += 1
        assert clicks < 400
    page.wait_for_function(f"document.querySelectorAll('#rounds tr').length >= {rounds}")
    _check_page(page, game)
    assert not errors, errors
    # The record downloads and replays.
    with page.expect_download() as download:
        page.click("#record")
    path = tmp_path / "game.jsonl"
    download.value.save_as(path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) >= rounds and records[0]["agents"][HUMAN_SEAT] == "0:you"
    replay_match(records)
    # ... and the finished rounds open in smoor-view's page.
    with page.context.expect_page() as opened:
        page.click("#replay")
    viewer = opened.value
    viewer.wait_for_selector("#seats .seat")
    assert viewer.inner_text("#title").startswith(records[0]["rules"]["game"])
    viewer.close()
    page.close()


def test_hint_and_undo(server, browser):
    srv, base = server
    status, body = _request(base, "POST", "/api/games",
                            {"rule_set": "smoorverliefd", "num_players": 4,
                             "agents": ["random"], "seed": 11})
    assert status == 201
    key = json.loads(body)["id"]
    game = srv.games.get(key)
    for _ in range(200):
        view = json.loads(_request(base, "GET", f"/api/games/{key}")[1])
        if view["status"] == "your move":
            break
        time.sleep(0.02)
    status, body = _request(base, "GET", f"/api/games/{key}/hint")
    assert status == 200 and json.loads(body)["hint"].startswith("mc would play ")
    assert _request(base, "POST", f"/api/games/{key}/undo")[0] == 409  # nothing to undo
    first = view["moves"][0]["action"]
    assert _request(base, "POST", f"/api/games/{key}/move", {"action": first})[0] == 200
    for _ in range(200):
        view = json.loads(_request(base, "GET", f"/api/games/{key}")[1])
        if view["status"] == "your move":
            break
        time.sleep(0.02)
    moves = len(game.session.moves)
    assert _request(base, "POST", f"/api/games/{key}/undo")[0] == 200
    assert len(game.session.moves) < moves


def test_bad_requests_are_4xx_and_change_nothing(server):
    srv, base = server
    status, body = _request(base, "POST", "/api/games", {"rule_set": "hearts", "seed": 1,
                                                         "agents": ["greedy"]})
    key = json.loads(body)["id"]
    game = srv.games.get(key)
    while game.thinking:
        time.sleep(0.02)
    moves = list(game.session.moves)
    illegal = next(a for a in range(70) if a not in game.session.legal_actions())
    cases = [
        ("POST", f"/api/games/{key}/move", {"action": illegal}, None, 409, "not a legal move"),
        ("POST", f"/api/games/{key}/move", {"action": "QS"}, None, 409, "not a legal move"),
        ("POST", f"/api/games/{key}/move", None, b"{not json", 400, "JSON object"),
        ("POST", f"/api/games/{key}/move", None, b"[1]", 400, "JSON object"),
        ("POST", "/api/games/abcdefabcdef/move", {"action": 1}, None, 404, "no game"),
        ("GET", "/api/nothing", None, None, 404, "no such page"),
        ("POST", "/api/games", {"rule_set": "bridge"}, None, 400, "unknown rule set"),
        ("POST", "/api/games", {"agents": ["nobody"]}, None, 400, "unknown agent"),
        ("POST", "/api/games", {"num_players": 9}, None, 400, "players"),
        ("POST", "/api/games", None, b"x" * 20_000, 413, "over"),
    ]
    for method, path, body, raw, code, message in cases:
        status, text = _request(base, method, path, body, raw)
        assert status == code and message in json.loads(text)["error"], (path, body, text)
    assert game.session.moves == moves


def test_an_agents_error_ends_that_game_only(server):
    srv, base = server

    class Broken:
        name, uses_observation = "broken", True

        def act(self, observations, rng):
            raise RuntimeError("agent exploded")

    status, body = _request(base, "POST", "/api/games", {"agents": ["random"], "seed": 2})
    key = json.loads(body)["id"]
    game = srv.games.get(key)
    while game.thinking:
        time.sleep(0.02)
    game.session.agents = dict.fromkeys(game.session.agents, Broken())
    first = game.session.legal_actions()[0]
    assert _request(base, "POST", f"/api/games/{key}/move", {"action": first})[0] == 200
    for _ in range(200):
        view = json.loads(_request(base, "GET", f"/api/games/{key}")[1])
        if view["status"] != "thinking":
            break
        time.sleep(0.02)
    assert view["status"] == "error" and "agent exploded" in view["error"]
    assert _request(base, "GET", "/api/options")[0] == 200  # the server goes on


def test_the_page_answers_while_a_search_agent_thinks(server):
    srv, base = server
    status, body = _request(base, "POST", "/api/games",
                            {"rule_set": "smoorverliefd", "agents": ["ismcts:iterations=4000"],
                             "seed": 5})
    assert status == 201
    key = json.loads(body)["id"]
    answered = []  # (seconds, status) of the page's requests while the agents think
    for _ in range(400):
        start = time.perf_counter()
        view = json.loads(_request(base, "GET", f"/api/games/{key}")[1])
        seconds = time.perf_counter() - start
        if view["status"] == "thinking":
            answered.append(seconds)
            if len(answered) >= 5:
                break
        elif view["status"] == "your move":  # play on until an ismcts seat searches
            _request(base, "POST", f"/api/games/{key}/move",
                     {"action": view["moves"][0]["action"]})
        else:
            break
    assert len(answered) >= 5, "never saw the agents thinking"
    assert max(answered) < 2.0  # the page is served while the agent searches
