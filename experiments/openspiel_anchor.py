"""The anchor of issue 43: one of our agents against OpenSpiel's ISMCTS bot in 4-player
Hearts without passing, head to head on duplicate deals.

Every deal (from ``--seed``, the protocol's 3000) is played four times, ours in seat r in
rotation r and OpenSpiel's bot (``open_spiel.python.algorithms.ismcts``, 1,000 simulations,
one random rollout per leaf, UCT c = 2, its defaults) in the other three. Both programs
see the same game: the deal, the passes and every card are applied to our engine and to
OpenSpiel's ``hearts`` state at once, and at every decision the two must agree on the
seat to act and on its legal cards (a disagreement stops the run: the two rule books
would differ). The rules: our ``hearts_no_passing`` preset at 4 players, a single round,
and OpenSpiel's ``hearts`` with the pass direction "No Pass" and ``qs_breaks_hearts=False``
(our default; its other defaults are our rules: 2C leads, no points on the first trick,
hearts broken before they are led, shooting the moon).

Without passing because OpenSpiel's bot cannot pass: in a round with passing its search
fails on the second player's first pass (``resample_from_infostate`` of OpenSpiel 2.0.2's
Hearts deals worlds in which the rollout finds no legal action:
``ValueError: 'a' cannot be empty``), in every direction; once the passes are made it
plays. ``tests/test_openspiel_anchor.py`` keeps that fact checked.

The run, its record and its report are those of every anchor (``experiments/anchor.py``):
the sample of a deal is the mean over its rotations of (the bots' mean penalty points less
ours), with its t interval over deals and both programs' time a decision; a stopped run
goes on with the same command; ``--report`` summarises a folder's games without playing.

    python -m experiments.openspiel_anchor                     # the protocol: 1,000 deals
    python -m experiments.openspiel_anchor --deals 4 --simulations 50 --out-dir /tmp/a
    python -m experiments.openspiel_anchor --report --out-dir docs/results/openspiel-anchor/run2
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from agents import build_agent
from agents.evaluation.runs import read_jsonl as read_games  # noqa: F401 (the tests' reader)
from experiments import anchor as common
from experiments.anchor import PLAYERS
from smoor_env import Engine, preset
from smoor_env.core import cards as C

PROG = "python -m experiments.openspiel_anchor"

#: (52,) OpenSpiel's card id of each of ours (its ids are 4 * rank + suit, suits C D H S).
TO_OPENSPIEL = C.RANK_OF * 4 + C.SUIT_OF
#: (52,) the inverse.
FROM_OPENSPIEL = np.argsort(TO_OPENSPIEL)


@dataclass
class Args:
    deals: int = 1000
    """duplicate deals (each played once with ours in every seat)"""
    seed: int = 3000
    """seed of the deals and of both programs' random numbers"""
    ours: str = "ismcts"
    """our agent's spec (name:key=value,...)"""
    simulations: int = 1000
    """OpenSpiel ISMCTS simulations a decision"""
    uct_c: float = 2.0
    """OpenSpiel ISMCTS exploration constant"""
    workers: int = 1
    """worker processes, each playing whole games (results do not depend on it)"""
    out_dir: str = "runs/openspiel_anchor"
    """the run's folder: args.json, games.jsonl, summary.json"""
    progress: bool = True
    """a progress bar"""
    report: bool = False
    """play nothing: summarise the games in --out-dir under its args.json's settings"""

    def check(self) -> None:
        """Refuse settings that cannot run (a ValueError naming them), before any file."""
        common.check_settings(self, ("deals", "simulations", "workers"))


def openspiel_state(game, engine: Engine, seat_of: np.ndarray):
    """OpenSpiel's state after the deal of ``engine``'s game 0, without passing, the cards
    dealt so that OpenSpiel's player i holds the hand of our seat ``seat_of[i]``."""
    state = game.new_initial_state()
    state.apply_action(0)  # pass direction "No Pass"
    hands = [C.cards_of(engine.state.dealt[0, seat]) for seat in seat_of]  # (4, 13)
    for k in range(13 * PLAYERS):  # OpenSpiel deals card k to player k % 4
        state.apply_action(int(TO_OPENSPIEL[hands[k % PLAYERS][k // PLAYERS]]))
    return state


def play_game(args: Args, deal: int, ours_seat: int) -> dict:
    """One game: deal ``deal`` with ours in ``ours_seat``, OpenSpiel's bot elsewhere."""
    import pyspiel
    from open_spiel.python.algorithms import ismcts, mcts

    engine = Engine(preset("hearts_no_passing", PLAYERS), 1)
    engine.reset(args.seed, game_ids=[deal])
    # OpenSpiel's player i is the i-th seat from the dealer's left.
    seat_of = common.seat_order(engine)  # (4,) our seat of OpenSpiel's player
    game = pyspiel.load_game("hearts", {"qs_breaks_hearts": False})
    state = openspiel_state(game, engine, seat_of)
    random_state = np.random.RandomState([args.seed, deal, ours_seat])
    bot = ismcts.ISMCTSBot(game, mcts.RandomRolloutEvaluator(1, random_state), args.uct_c,
                           args.simulations, random_state=random_state)
    agent = build_agent(args.ours)
    rng = np.random.default_rng([args.seed, deal, ours_seat])
    times: dict[str, list[float]] = {"ours": [], "openspiel": []}
    while not engine.state.match_over[0]:
        seat = int(engine.state.current_player[0])
        mask = engine.legal_mask  # (1, 70)
        legal = sorted(int(TO_OPENSPIEL[c]) for c in np.flatnonzero(mask[0, :C.NUM_CARDS]))
        if seat_of[state.current_player()] != seat or state.legal_actions() != legal:
            raise AssertionError(
                f"deal {deal}: the engines disagree (our seat {seat} may play {legal}, "
                f"OpenSpiel's player {state.current_player()} {state.legal_actions()})")
        start = time.perf_counter()
        if seat == ours_seat:
            card = common.our_move(agent, engine, mask, rng)
            spent = "ours"
        else:
            card = int(FROM_OPENSPIEL[bot.step(state)])
            spent = "openspiel"
        if len(legal) > 1:
            times[spent].append(time.perf_counter() - start)
        engine.step(np.array([card]))
        state.apply_action(int(TO_OPENSPIEL[card]))
    if not state.is_terminal():
        raise AssertionError(f"deal {deal}: our round ended, OpenSpiel's did not")
    points = engine.state.round_points[0].tolist()  # (4,) penalty points by our seat
    returns = state.returns()  # by OpenSpiel player: 26 less the penalty points (moon: 0/26)
    return {"deal": deal, "ours_seat": ours_seat, "points": points,
            "openspiel_returns": common.by_our_seat(returns, seat_of),
            "ours_seconds": times["ours"], "openspiel_seconds": times["openspiel"]}


def scored_alike(game: dict) -> bool:
    """OpenSpiel's return is 26 less the penalty points (a moon: 26 to the shooter, 0 to
    the rest), which is ours when the two programs scored the round alike."""
    return game["openspiel_returns"] == [26 - p for p in game["points"]]


ANCHOR = common.Anchor(PROG, "openspiel", "OpenSpiel ISMCTS", Args, play_game, scored_alike)
DESCRIPTION = __doc__.split("\n\n")[0]
run, main, command = common.entry_points(ANCHOR, DESCRIPTION)


if __name__ == "__main__":
    sys.exit(command())
