"""Worker processes for the vector environment: its games split over k processes.

``SmoorVectorEnv(num_workers=k)`` hands its games to a ``WorkerPool``: worker w
runs sub-environments ``bounds[w] .. bounds[w + 1] - 1`` in its own batched
engine, with its own opponents, and writes their observations, masks, rewards
and flags straight into one shared-memory array per field (Gymnasium's
``gymnasium.vector.utils.create_shared_memory``, as its ``AsyncVectorEnv``
with ``shared_memory=True``), which the learner's process reads without
copying; the learner's actions go the other way through a shared array too.
Each step is one short message each way per worker on a pipe (a few tens of
microseconds): the learner writes the actions, sends every worker "step",
and waits for every worker's "done" (or its death) with
``multiprocessing.connection.wait``, so that k workers step their games at
the same time and the learner's process only waits.

A worker that raises sends its exception and traceback back, and the learner's
process raises ``WorkerError`` with them; a worker that dies (killed, out of
memory) is noticed through its process sentinel and reported the same way;
neither hangs. After either, the pool is shut down. ``close()`` stops every
worker (asking first, then terminating one that does not stop) and joins it.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import pickle
import signal
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any, Protocol

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory

#: Seconds ``close`` waits for a worker to stop by itself before terminating it.
CLOSE_TIMEOUT = 5.0


class WorkerError(RuntimeError):
    """A worker process raised or died; the message names it, its games and the cause."""


class Block(Protocol):
    """What a worker runs: some sub-environments, writing into the shared arrays."""

    def reset(self, seed: int | None) -> None: ...

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def restart(self, chosen: np.ndarray) -> None: ...

    def observations(self) -> np.ndarray: ...

    def masks(self) -> np.ndarray: ...


#: ``make_block(first, count, observations_out)``: the block of sub-environments
#: first .. first + count - 1, keeping its observations in ``observations_out``.
BlockFactory = Callable[[int, int, np.ndarray], Block]


def shared_space(observation_space: spaces.Box, num_actions: int) -> spaces.Dict:
    """One sub-environment's fields in shared memory: what a step writes and reads."""
    return spaces.Dict({
        "observation": observation_space,
        "action_mask": spaces.Box(0, 1, (num_actions,), bool),
        "reward": spaces.Box(-np.inf, np.inf, (), np.float32),
        "terminated": spaces.Box(0, 1, (), bool),
        "illegal_action": spaces.Box(0, 1, (), bool),
        "action": spaces.Box(0, num_actions - 1, (), np.int64),
        "restart": spaces.Box(0, 1, (), bool),  # the games ``restart`` restarts now
    })


def _write_outputs(block: Block, mine: dict[str, np.ndarray],
                   outputs: tuple[Any, Any, Any] | None) -> None:
    """Masks, observations and (unless None) a step's rewards, terminated and illegal
    flags into this worker's rows."""
    if outputs is not None:
        mine["reward"][:], mine["terminated"][:], mine["illegal_action"][:] = outputs
    mine["action_mask"][:] = block.masks()
    block.observations()  # brings every row of the shared observations up to date


def _worker(conn: Connection, learner_ends: list[Connection], shared: Any, space: spaces.Dict,
            num_envs: int, first: int, count: int, make_block: BlockFactory) -> None:
    """A worker's loop: build its block on the shared arrays, then obey the learner."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the learner's to handle
    # The learner's ends of the pipes, inherited (fork) or passed: closed here, so that
    # when the learner's process dies, reading from conn fails and the worker exits.
    for end in learner_ends:
        end.close()
    try:
        arrays = read_from_shared_memory(space, shared, num_envs)
        mine = {name: array[first:first + count] for name, array in arrays.items()}
        block = make_block(first, count, mine["observation"])
        conn.send(("ready", None))
    except Exception as error:  # noqa: BLE001 - every failure goes back to the learner
        conn.send(("error", _picklable(error, traceback.format_exc())))
        return
    while True:
        try:
            command, argument = conn.recv()
        except (EOFError, OSError):  # the learner's process is gone
            return
        try:
            if command == "close":
                conn.send(("done", None))
                return
            if command == "reset":
                block.reset(argument)
                _write_outputs(block, mine, (0.0, False, False))
            elif command == "step":
                _write_outputs(block, mine, block.step(mine["action"]))
            elif command == "restart":
                block.restart(mine["restart"])
                _write_outputs(block, mine, None)
            else:
                raise ValueError(f"unknown command {command!r}")
            conn.send(("done", None))
        except Exception as error:  # noqa: BLE001
            conn.send(("error", _picklable(error, traceback.format_exc())))
            return


def _picklable(error: BaseException, trace: str) -> tuple[BaseException | None, str]:
    """The exception itself if it survives pickling, and its traceback as text."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - then only its text goes back
        return None, trace
    return error, trace


class WorkerPool:
    """k worker processes over contiguous blocks of ``num_envs`` sub-environments.

    Args:
        num_envs: the sub-environments N.
        num_workers: the processes k (1 <= k <= N); worker w runs
            ``bounds[w] .. bounds[w + 1] - 1``, blocks as equal as possible.
        space: ``shared_space(...)``: the fields each sub-environment shares.
        make_block: builds a worker's block (called in the worker; picklable for the
            ``spawn`` and ``forkserver`` contexts).
        context: a ``multiprocessing`` start method (default: the platform's).

    ``arrays`` holds the shared (N, ...) arrays by field name.
    """

    def __init__(self, num_envs: int, num_workers: int, space: spaces.Dict,
                 make_block: BlockFactory, context: str | None = None) -> None:
        if not 1 <= num_workers <= num_envs:
            raise ValueError(f"num_workers must be 1..num_envs ({num_envs}), got {num_workers}")
        ctx = mp.get_context(context)
        self.num_envs, self.num_workers = num_envs, num_workers
        self.bounds = np.linspace(0, num_envs, num_workers + 1).round().astype(int)  # (k+1,)
        shared = create_shared_memory(space, n=num_envs, ctx=ctx)
        self.arrays = read_from_shared_memory(space, shared, num_envs)  # field -> (N, ...)
        self._conns: list[Connection] = []
        self.processes: list[mp.process.BaseProcess] = []
        self.closed = False
        for w in range(num_workers):
            first, stop = int(self.bounds[w]), int(self.bounds[w + 1])
            parent_end, child_end = ctx.Pipe()
            process = ctx.Process(target=_worker, name=f"smoor_env worker {w}", daemon=True,
                                  args=(child_end, [*self._conns, parent_end], shared, space,
                                        num_envs, first, stop - first, make_block))
            process.start()
            child_end.close()
            self._conns.append(parent_end)
            self.processes.append(process)
        self._wait("start")

    def run(self, command: str, argument: Any = None) -> None:
        """Every worker runs ``command`` (``"reset"`` with a seed, ``"step"`` on the shared
        actions, ``"restart"`` of the shared chosen games); returns when all are done.
        Raises ``WorkerError`` if one raised or died."""
        if self.closed:
            raise WorkerError("the workers are closed (after close() or a worker's failure)")
        for w, conn in enumerate(self._conns):
            try:
                conn.send((command, argument))
            except (BrokenPipeError, OSError):
                self._fail(w, "died", None)
        self._wait(command)

    def _wait(self, command: str) -> None:
        """Wait for every worker's answer to ``command``, or the first failure."""
        pending = dict(enumerate(self._conns))
        sentinels = {self.processes[w].sentinel: w for w in pending}
        while pending:
            ready = wait([*pending.values(), *(s for s, w in sentinels.items() if w in pending)])
            for w, conn in list(pending.items()):
                if conn in ready or conn.poll():
                    try:
                        status, detail = conn.recv()
                    except (EOFError, OSError):
                        self._fail(w, "died", None)
                    if status == "error":
                        self._fail(w, f"raised during {command!r}", detail)
                    del pending[w]
                elif self.processes[w].sentinel in ready:
                    self._fail(w, "died", None)

    def _fail(self, w: int, what: str, detail: tuple[BaseException | None, str] | None) -> None:
        """Shut the pool down and raise ``WorkerError`` about worker ``w``."""
        process = self.processes[w]
        process.join(0.1)
        code = process.exitcode
        self.close()
        games = f"sub-environments {self.bounds[w]}..{self.bounds[w + 1] - 1}"
        if detail is None:
            raise WorkerError(f"worker {w} ({games}) {what} (exit code {code}); the "
                              f"environment is closed")
        error, trace = detail
        message = f"worker {w} ({games}) {what}; the environment is closed. Its traceback:\n{trace}"
        raise WorkerError(message) from error

    def close(self) -> None:
        """Stop every worker: ask, wait up to ``CLOSE_TIMEOUT`` s, then terminate; join all."""
        if self.closed:
            return
        self.closed = True
        for conn, process in zip(self._conns, self.processes, strict=True):
            if process.is_alive():
                with contextlib.suppress(BrokenPipeError, OSError):
                    conn.send(("close", None))
        for conn, process in zip(self._conns, self.processes, strict=True):
            process.join(CLOSE_TIMEOUT)
            if process.is_alive():
                process.terminate()
                process.join()
            conn.close()
