"""Per-game random numbers for batched agents: game g's draws do not depend on its batch.

An agent is asked for a batch of games with one ``numpy.random.Generator``; the
numbers it draws for game g then depend on which other games share the call.
A vector environment whose games are split over worker processes must give each
game the same opponents' moves whatever the split, so its table hands the agents
a ``GameRandom`` instead: a ``Generator`` whose ``random(size)`` with one row per
game (``size`` = n or (n, ...), n the games of the call) is counter-based: game
g's k-th uniform is a hash of (its ``game_key``, k), like the deal
(``smoor_env.core.deal``). The random agent (``random(n)``) and PPO's sampling
(``random((n, 70))``) draw this way. Any other draw (``integers``, or a
``random`` of another size, as Monte Carlo's worlds) comes from the
generator's own bit generator: reproducible from the seed, but shared by the
games of the call.
"""

from __future__ import annotations

import numpy as np

from smoor_env.core.deal import mix
from smoor_env.core.engine import Engine

_STREAM = np.uint64(0xD1B54A32D192ED03)  # separates these draws from the deal's
_STEP = np.uint64(0x9E3779B97F4A7C15)
_U11 = np.uint64(11)
_TO_UNIT = 2.0 ** -53


class GameStreams:
    """The draw counters of every game of an engine (one stream per game).

    Args:
        engine: the engine whose games draw (keys from ``engine.state.game_key``).
        fallback: the bit generator behind draws that are not one row per game.
    """

    def __init__(self, engine: Engine, fallback: np.random.BitGenerator) -> None:
        self.engine = engine
        self.fallback = fallback
        self.drawn = np.zeros(engine.batch_size, np.uint64)  # (B,) uniforms drawn so far
        self.keys = engine.state.game_key ^ _STREAM  # (B,) uint64 key of each game's stream
        # One generator, pointed at each call's games: a new one per call would cost
        # more than a small batch's draws.
        self._generator = GameRandom(self, np.zeros(0, np.int64))

    def restart(self, games: np.ndarray | slice = slice(None)) -> None:
        """Start the streams of ``games`` (their matches restarted: call after the engine's
        reset) from their first draw."""
        self.drawn[games] = 0
        self.keys[games] = self.engine.state.game_key[games] ^ _STREAM

    def for_games(self, games: np.ndarray) -> GameRandom:
        """The generator for one agent call on ``games`` ((n,) indices, no repeats); the
        same object each time, pointed at the new games (valid until the next call)."""
        self._generator.games = games
        return self._generator

    def uniforms(self, games: np.ndarray, per_game: int) -> np.ndarray:
        """(n, per_game) float64 in [0, 1): the next ``per_game`` uniforms of each game."""
        count = self.drawn.take(games)  # (n,) uint64 draws so far
        self.drawn[games] = count + np.uint64(per_game)
        keys = self.keys.take(games)  # (n,)
        if per_game > 1:
            count = count[:, None] + np.arange(per_game, dtype=np.uint64)  # (n, per_game)
            keys = keys[:, None]
        with np.errstate(over="ignore"):  # hash of (key, draw number), in place
            bits = mix(np.add(np.multiply(count, _STEP, out=count), keys, out=count),
                       keys if per_game == 1 else None)
        return np.multiply(np.right_shift(bits, _U11, out=bits), _TO_UNIT).reshape(-1, per_game)


class GameRandom(np.random.Generator):
    """A ``Generator`` for one agent call whose row-per-game ``random`` draws are per game
    (see the module docstring); every other method draws from the shared fallback."""

    def __init__(self, streams: GameStreams, games: np.ndarray) -> None:
        super().__init__(streams.fallback)
        self._streams, self.games = streams, games  # (n,) the games of the call

    def random(self, size=None, dtype=np.float64, out=None):  # noqa: D102 - numpy's
        shape = (size,) if isinstance(size, (int, np.integer)) else size
        if (out is not None or shape is None or len(shape) == 0
                or shape[0] != len(self.games) or np.dtype(dtype) != np.float64):
            return super().random(size, dtype, out)
        per_game = int(np.prod(shape[1:], dtype=np.int64))
        return self._streams.uniforms(self.games, per_game).reshape(shape)
