"""Fuzzing what people type and send: records given to smoor-view, moves typed into
smoor-play, requests sent to smoor-serve, calls made on the SB3 adapter, batches given
to agents, and chunk files edited before ``--resume``.

Each target gets random valid and invalid input (Hypothesis). Every outcome must be one
of two things: the input is accepted and does what it should (a viewed record replays,
a typed move is legal), or it is refused with a clear, one-line error and nothing
changes. A traceback, a crash (a 500) or a silent change fails the test. A short run
is in the default suite; ``--runslow`` runs a long one.
"""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments import play
from smoor_env import Rules
from smoor_env.record import ReplayError, read_records, replay_match
from smoor_env.render.viewer import main as view

ROOT = Path(__file__).parent.parent
RECORDS = list(read_records(ROOT / "tests" / "data" / "records_v0.jsonl"))
SHORT, LONG = settings(max_examples=25, deadline=None,
                       suppress_health_check=[HealthCheck.function_scoped_fixture]), \
    settings(max_examples=400, deadline=None,
             suppress_health_check=[HealthCheck.function_scoped_fixture])

# JSON values of every kind, for any field.
JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 60) | st.floats(allow_nan=False)
                    | st.text(max_size=4),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)


def _paths(value, prefix=()):
    """Every (path, value) inside a JSON value."""
    yield prefix, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _set(value, path, new):
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


# ------------------------------------------------------------------ smoor-view
def _view_records(records, tmp_path, capsys):
    path, out = tmp_path / "match.jsonl", tmp_path / "game.html"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out.unlink(missing_ok=True)
    code = view([str(path), "-o", str(out)])
    err = capsys.readouterr().err
    if code == 0:
        try:  # a page is drawn only for records the engine plays
            replay_match(records)
        except ReplayError:
            for record in records:  # (or rounds of a match, each as it stands)
                from smoor_env.record import replay

                replay(record)
        assert out.exists()
    else:
        assert code == 2 and err.startswith("smoor-view: error: ") and err.count("\n") == 1
        assert "Traceback" not in err and not out.exists()


def _mutated_records(data):
    records = copy.deepcopy(RECORDS[:2])
    for _ in range(data.draw(st.integers(1, 3))):
        record = records[data.draw(st.integers(0, len(records) - 1))]
        path, _ = data.draw(st.sampled_from(list(_paths(record))[1:]))
        _set(record, path, data.draw(JSON))
    return records


@SHORT
@given(data=st.data())
def test_fuzz_smoor_view(data, tmp_path, capsys):
    _view_records(_mutated_records(data), tmp_path, capsys)


@pytest.mark.slow
@LONG
@given(data=st.data())
def test_fuzz_smoor_view_long(data, tmp_path, capsys):
    _view_records(_mutated_records(data), tmp_path, capsys)


# ------------------------------------------------------------------ smoor-play
TYPED = st.one_of(st.text(max_size=6), st.sampled_from(
    ["1", "2", "99", "0", "-1", "QS", "10h", "th", "TH", "10♥", "bid 3", "curse H", "hint",
     "undo", "help", "", " ", "1.5", "♠", "10", "AH AH"]))


def _type_moves(lines, monkeypatch, capsys):
    session = play.Session(Rules(bidding=True, target_score=None), 3, 0, ["random"])
    screen = play.Screen(plain=True)
    moves = iter(lines)
    before = []

    def read(prompt):
        before.append(len(session.moves))
        try:
            return next(moves)
        except StopIteration:
            raise EOFError from None

    play.play(session, screen, None, hint_worlds=2, read=read)
    out = capsys.readouterr().out
    assert "Traceback" not in out
    # Every move the session took is legal (the engine would have raised otherwise), and
    # a refused line took none.
    for text, count, after in zip(lines, before, before[1:] + [len(session.moves)],
                                  strict=False):
        if text.strip().lower() in ("hint", "help", "", "quit"):
            assert after == count  # a command, not a move


@SHORT
@given(lines=st.lists(TYPED, max_size=25))
def test_fuzz_smoor_play_input(lines, monkeypatch, capsys):
    _type_moves(lines, monkeypatch, capsys)


# ------------------------------------------------------------------ smoor-serve
BODIES = st.one_of(JSON.map(lambda v: json.dumps(v).encode()), st.binary(max_size=40),
                   st.builds(lambda r, p, a, s: json.dumps(
                       {"rule_set": r, "num_players": p, "agents": a, "seed": s}).encode(),
                             st.sampled_from(["hearts", "smoorverliefd", "partners", "x"]),
                             JSON, JSON, JSON),
                   st.builds(lambda a: json.dumps({"action": a}).encode(), JSON))
PATHS = st.sampled_from(["/api/games", "/api/games/{id}/move", "/api/games/{id}/undo",
                         "/api/games/{id}", "/api/games/{id}/hint", "/api/games/{id}/record",
                         "/api/games/{id}/replay", "/api/games/ffffffffffff/move", "/x",
                         "/api/options", "/"])


def _send(base, method, path, body):
    request = urllib.request.Request(base + path, method=method,
                                     data=body if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@SHORT
@given(calls=st.lists(st.tuples(st.sampled_from(["GET", "POST"]), PATHS, BODIES),
                      max_size=8))
def test_fuzz_smoor_serve(server, calls):
    srv, base = server
    status, body = _send(base, "POST", "/api/games",
                         json.dumps({"agents": ["random"], "seed": 1}).encode())
    key = json.loads(body)["id"]
    for method, path, payload in calls:
        status, answer = _send(base, method, path.format(id=key), payload)
        assert status < 500, (method, path, payload, answer)
        if status >= 400:
            assert set(json.loads(answer)) == {"error"}
    assert _send(base, "GET", "/api/options", b"")[0] == 200  # the server goes on


# ------------------------------------------------------------------ the SB3 adapter
ACTIONS = st.one_of(
    st.builds(lambda v: np.full(4, v), st.integers(-2, 72) | st.floats(allow_nan=True)
              | st.booleans() | st.text(max_size=2)),
    st.builds(lambda n: np.zeros(n, np.int64), st.integers(0, 6)),
    st.just(np.zeros((4, 2), np.int64)), st.just(None))


@SHORT
@given(data=st.data())
def test_fuzz_sb3_adapter(data):
    pytest.importorskip("stable_baselines3")
    from smoor_env.envs.sb3 import make_sb3_vec_env

    env = make_sb3_vec_env("smoor_env/Hearts-v1", 4, monitor=False, opponents="random")
    env.reset()
    for _ in range(data.draw(st.integers(1, 6))):
        masks = env.action_masks()
        call = data.draw(st.sampled_from(["step", "bad", "env_method", "set_attr"]))
        try:
            if call == "step":
                env.step(np.argmax(masks, 1))
            elif call == "bad":
                env.step_async(data.draw(ACTIONS))
                env.step_wait()
            elif call == "env_method":
                env.env_method(data.draw(st.sampled_from(["reset", "step", "close",
                                                          "action_masks", "restart"])))
            else:
                env.set_attr(data.draw(st.sampled_from(["num_envs", "rules", "copy", "tag"])),
                             data.draw(JSON))
        except (ValueError, TypeError) as error:
            assert str(error)
            assert np.array_equal(env.action_masks(), masks)  # nothing moved
    env.close()



# ------------------------------------------------------------------ agents
def _agent_batch() -> dict:
    from smoor_env import Engine
    from smoor_env.observation import observe

    engine = Engine(Rules(), 3)
    engine.reset(1)
    engine.step(engine.sample_legal(np.random.default_rng(1)))
    return {"observation": observe(engine, engine.state.current_player),
            "action_mask": engine.legal_mask}


AGENT_BATCH = _agent_batch()
SPOILS = st.sampled_from(["rows", "nan", "inf", "width", "dtype", "int8", "mask_dtype",
                          "missing", "games", "none"])


def _spoiled(observations: dict, how: str, rng: np.random.Generator) -> dict:
    obs, mask = observations["observation"].copy(), observations["action_mask"]
    spoiled = {"observation": obs, "action_mask": mask}
    cell = (rng.integers(len(obs)), rng.integers(obs.shape[1]))
    if how == "rows":
        spoiled["observation"] = obs[:rng.integers(0, len(obs))]
    elif how in ("nan", "inf"):
        obs[cell] = np.nan if how == "nan" else -np.inf
    elif how == "width":
        spoiled["observation"] = obs[:, :rng.integers(0, obs.shape[1])]
    elif how == "dtype":
        spoiled["observation"] = obs.astype(rng.choice([np.int64, np.bool_, np.uint8]))
    elif how == "int8":  # an observation that is int8 but not compact: still plays legally
        spoiled["observation"] = obs.astype(np.int8)
    elif how == "mask_dtype":
        spoiled["action_mask"] = mask.astype(np.int8)
    elif how == "missing":
        del spoiled["observation"]
    elif how == "games":
        spoiled["games"] = np.arange(rng.integers(0, 2 * len(mask)))
    return spoiled


def _fuzz_agents(data) -> None:
    from agents import make_agent

    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    name = data.draw(st.sampled_from(["random", "greedy", "ppo", "mc", "ismcts"]))
    options = {"mc": {"worlds": 2}, "ismcts": {"iterations": 8, "walks": 2}}.get(name, {})
    agent = make_agent(name, **options)
    spoiled = _spoiled(AGENT_BATCH, data.draw(SPOILS), rng)
    try:
        actions = agent.act(spoiled, rng)
    except (ValueError, TypeError) as error:
        assert str(error) and "\n" not in str(error)
        return
    mask = np.asarray(spoiled["action_mask"], bool)
    assert actions.shape == (len(mask),) and mask[np.arange(len(mask)), actions].all()


@SHORT
@given(data=st.data())
def test_fuzz_agents(data):
    _fuzz_agents(data)


@pytest.mark.slow
@LONG
@given(data=st.data())
def test_fuzz_agents_long(data):
    _fuzz_agents(data)


# ------------------------------------------------------------ resumed chunks
@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    from experiments import win_rates
    from tests.test_resume_checks import bench_args

    return win_rates.run(bench_args(tmp_path_factory.mktemp("fuzz_run")))


def _fuzz_chunks(data, finished_run, tmp_path) -> None:
    """Random edits of a finished run's chunk files: --resume ends with the untouched
    run's results, whatever was done to them."""
    import shutil
    import tempfile

    from experiments import win_rates
    from tests.test_resume_checks import bench_args

    folder = Path(tempfile.mkdtemp(dir=tmp_path)) / "run"  # one per example
    shutil.copytree(finished_run, folder, ignore=shutil.ignore_patterns(".lock"))
    chunks = sorted((folder / "chunks").glob("*.csv"))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(chunks))
        text = path.read_bytes()
        at = data.draw(st.integers(0, len(text)))
        edit = data.draw(st.sampled_from(["cut", "insert", "replace", "swap"]))
        if edit == "cut":
            text = text[:at]
        elif edit == "insert":
            text = text[:at] + data.draw(st.binary(min_size=1, max_size=8)) + text[at:]
        elif edit == "replace":
            text = text[:at] + data.draw(st.binary(min_size=1, max_size=4)) + text[at + 4:]
        else:
            text = data.draw(st.sampled_from(chunks)).read_bytes()
        path.write_bytes(text)
    win_rates.run(bench_args(folder.parent, resume=True))
    assert (folder / "results.csv").read_bytes() == (finished_run / "results.csv").read_bytes()


@SHORT
@given(data=st.data())
def test_fuzz_resumed_chunks(data, finished_run, tmp_path):
    _fuzz_chunks(data, finished_run, tmp_path)


@pytest.mark.slow
@LONG
@given(data=st.data())
def test_fuzz_resumed_chunks_long(data, finished_run, tmp_path):
    _fuzz_chunks(data, finished_run, tmp_path)
