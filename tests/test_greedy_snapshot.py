"""The greedy rules' moves, pinned: 30,720 random positions (2,048 of every rule set of
``test_agents.RULE_SETS``) and the moves the greedy rules chose there when the fixture
was written (``tests/data/greedy_moves.npz``).

The greedy agent and the greedy rollout policy share one function (``greedy_play``), so
``test_agents`` comparing them cannot see a change of the rules themselves; this file
can. A speed-up of the greedy code must leave every move unchanged. Regenerate the
fixture (``PYTHONPATH=. python tests/test_greedy_snapshot.py``) only from a commit
whose greedy moves are the intended ones, and say so in the commit message.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from test_agents import RULE_SETS, observations, random_positions

from agents import make_agent
from agents.rollout import greedy_moves
from smoor_env import Engine, Phase

FIXTURE = Path(__file__).parent / "data" / "greedy_moves.npz"
SEEDS = (0, 1)
BATCH = 1024  # positions per seed: 2,048 per rule set


def positions_digest(engine: Engine) -> str:
    """SHA-256 of the state fields the greedy rules read (tells a changed engine or
    position generator apart from changed greedy rules)."""
    st = engine.state
    digest = hashlib.sha256()
    for field in (st.phase, st.current_player, st.hands, st.legal, st.trick_mask,
                  st.led_suit, st.trick_size, st.played, st.won, st.bids, st.match_over):
        digest.update(np.ascontiguousarray(field).tobytes())
    return digest.hexdigest()


def greedy_positions(name: str, seed: int) -> tuple[Engine, np.ndarray, np.ndarray]:
    """The positions of one (rule set, seed), the greedy agent's move in each live game
    ((B,) int64, 0 where the match is over) and the rows where the rollout policy
    moves too ((B,) bool: the play and bidding phases)."""
    engine = random_positions(RULE_SETS[name], BATCH, seed)
    st = engine.state
    live = np.flatnonzero(~st.match_over)
    agent_moves = np.zeros(BATCH, np.int64)
    obs = {k: v[live] for k, v in observations(engine).items()}
    agent_moves[live] = make_agent("greedy").act(obs, np.random.default_rng(0))
    rollout_rows = np.isin(st.phase, [Phase.PLAY, Phase.BID]) & ~st.match_over
    return engine, agent_moves, rollout_rows


def write_fixture() -> None:
    """Store the current greedy moves (and the positions' digests) as the fixture."""
    stored = {}
    for name in RULE_SETS:
        for seed in SEEDS:
            engine, agent_moves, _ = greedy_positions(name, seed)
            stored[f"{name}/{seed}/moves"] = agent_moves.astype(np.int8)  # ids 0..69
            stored[f"{name}/{seed}/digest"] = np.array(positions_digest(engine))
    np.savez_compressed(FIXTURE, **stored)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", RULE_SETS)
def test_greedy_moves_match_the_fixture(name, seed):
    """The greedy agent (on observations) and the greedy rollout policy (on the engine's
    arrays) choose the stored move in every position: plays, bids, passes, curses."""
    fixture = np.load(FIXTURE)
    engine, agent_moves, rollout_rows = greedy_positions(name, seed)
    assert positions_digest(engine) == str(fixture[f"{name}/{seed}/digest"]), (
        "the random positions changed (engine or random_positions), not the greedy rules: "
        "regenerate the fixture from a commit whose greedy moves are trusted")
    expected = fixture[f"{name}/{seed}/moves"].astype(np.int64)  # (B,)
    live = ~engine.state.match_over
    assert rollout_rows.sum() > BATCH // 2  # most positions are play decisions
    assert (agent_moves[live] == expected[live]).all()
    assert (greedy_moves(engine)[rollout_rows] == expected[rollout_rows]).all()


if __name__ == "__main__":
    write_fixture()
