"""Small helpers that let tests read like the rule book: deals and plays as card text."""

from __future__ import annotations

import signal
import subprocess

import numpy as np

from smoor_env import Engine, Rules, parse_card, parse_cards


def new_game(rules: Rules, hands: list[str], dealer: int, seed: int = 0) -> Engine:
    """A batch of one game with the given first deal (one card string per seat) and dealer."""
    engine = Engine(rules, 1)
    engine.reset(seed, hands=[hands], dealers=[dealer])
    return engine


def legal_cards(engine: Engine, game: int = 0) -> list[int]:
    """Legal action ids of one game, ascending."""
    return [int(a) for a in np.flatnonzero(engine.legal_mask[game])]


def play(engine: Engine, cards: str) -> None:
    """Play the given cards (text, in order) in game 0 of a batch of one."""
    for card in parse_cards(cards):
        engine.step(np.array([card]))


def act(engine: Engine, action: int | str) -> None:
    """One action in a batch of one (an id, or a card text)."""
    engine.step(np.array([parse_card(action) if isinstance(action, str) else action]))


def play_out_round(engine: Engine) -> None:
    """Finish the current round of every game, each playing its lowest legal action."""
    start = engine.state.round_number.copy()
    while not (engine.state.match_over | (engine.state.round_number != start)).all():
        engine.step(np.argmax(engine.legal_mask, axis=1))


def start_interruptible(command: list[str], **popen) -> subprocess.Popen:
    """Start a console script that a later ``SIGINT`` reaches as Ctrl-C would.

    A shell's background job (as CI may run us) inherits SIGINT *ignored*, and Python then
    never raises ``KeyboardInterrupt``; the child gets the default disposition back, as a
    terminal's foreground program has it.
    """
    def restore() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])  # nor blocked

    return subprocess.Popen(command, preexec_fn=restore,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def processes_mentioning(text: str) -> list[int]:
    """The ids of live processes whose command line contains ``text`` (a test's temporary
    folder, say: forked workers carry their parent's command line)."""
    from pathlib import Path

    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:  # ended meanwhile
                continue
            if text in line and state != "Z":  # a zombie has stopped already
                found.append(int(entry.name))
    return found
