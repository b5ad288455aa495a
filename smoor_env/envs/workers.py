"""Worker processes for the vector environment: its games split over k processes.

``SmoorVectorEnv(num_workers=k)`` hands its games to a ``WorkerPool``: block w
(sub-environments ``bounds[w] .. bounds[w + 1] - 1``) runs in its own batched
engine, with its own opponents, and writes its observations, masks, rewards
and flags straight into one shared-memory array per field (Gymnasium's
``gymnasium.vector.utils.create_shared_memory``, as its ``AsyncVectorEnv``
with ``shared_memory=True``), which the learner's process reads without
copying; the learner's actions go the other way through a shared array too.
Block 0 runs in the learner's process itself, blocks 1 .. k-1 in k-1 worker
processes: k processes step games, so that k cores are busy during a step
instead of k workers and a learner that only waits (on a 2-core machine, 2
processes rather than 3 competing for the cores).

Each step is one short message each way per worker on a pipe (a few tens of
microseconds): the learner writes the actions, sends every worker "step",
steps block 0, then waits for every worker's "done" (or its death) with
``multiprocessing.connection.wait``, by which time the workers, which started
at the same moment, have usually finished.

A worker that raises sends its exception and traceback back, and the learner's
process raises ``WorkerError`` with them; a worker that dies (killed, out of
memory) is noticed through its process sentinel and reported the same way;
neither hangs. Block 0 raising in the learner's process is reported as a
``WorkerError`` too. After any of these, the pool is shut down (its blocks no
longer agree on how far their games went). ``close()`` stops every worker
(asking first, then terminating one that does not stop) and joins it.
"""

from __future__ import annotations

import contextlib
import copy
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
    """A block of games failed (its worker raised or died, or block 0 raised in the
    learner's process); the message names it, its games and the cause."""


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


def _serve(block: Block, mine: dict[str, np.ndarray], command: str, argument: Any) -> None:
    """Run ``command`` on ``block`` and write its outputs into its rows ``mine`` of the
    shared arrays: masks, observations and (reset, step) rewards and flags."""
    if command == "reset":
        block.reset(argument)
        outputs: tuple[Any, Any, Any] | None = (0.0, False, False)
    elif command == "step":
        outputs = block.step(mine["action"])
    elif command == "restart":
        block.restart(mine["restart"])
        outputs = None
    else:
        raise ValueError(f"unknown command {command!r}")
    if outputs is not None:
        mine["reward"][:], mine["terminated"][:], mine["illegal_action"][:] = outputs
    mine["action_mask"][:] = block.masks()
    block.observations()  # brings every row of the shared observations up to date


def _rows(arrays: dict[str, np.ndarray], first: int, stop: int) -> dict[str, np.ndarray]:
    """A block's rows ``first .. stop - 1`` of every shared array (views)."""
    return {name: array[first:stop] for name, array in arrays.items()}


def _worker(conn: Connection, learner_ends: list[Connection], shared: Any, space: spaces.Dict,
            num_envs: int, first: int, count: int, make_block: BlockFactory) -> None:
    """A worker's loop: build its block on the shared arrays, then obey the learner."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the learner's to handle
    # The learner's ends of the pipes, inherited (fork) or passed: closed here, so that
    # when the learner's process dies, reading from conn fails and the worker exits.
    for end in learner_ends:
        end.close()
    try:
        mine = _rows(read_from_shared_memory(space, shared, num_envs), first, first + count)
        block = make_block(first, count, mine["observation"])
        conn.send(("ready", None, 0))
    except Exception as error:  # noqa: BLE001 - every failure goes back to the learner
        conn.send(("error", _picklable(error, traceback.format_exc()), 0))
        return
    while True:
        try:
            command, argument, number = conn.recv()
        except (EOFError, OSError):  # the learner's process is gone
            return
        if command == "close":
            conn.send(("done", None, number))
            return
        try:
            _serve(block, mine, command, argument)
        except Exception as error:  # noqa: BLE001
            conn.send(("error", _picklable(error, traceback.format_exc()), number))
            return
        conn.send(("done", None, number))


def _picklable(error: BaseException, trace: str) -> tuple[BaseException | None, str]:
    """The exception itself if it survives pickling, and its traceback as text."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - then only its text goes back
        return None, trace
    return error, trace


class WorkerPool:
    """``num_envs`` sub-environments in k contiguous blocks: block 0 in this process,
    blocks 1 .. k-1 in k-1 worker processes.

    Args:
        num_envs: the sub-environments N.
        num_workers: the blocks k (1 <= k <= N), as equal as possible; block w is
            ``bounds[w] .. bounds[w + 1] - 1``.
        space: ``shared_space(...)``: the fields each sub-environment shares.
        make_block: builds a block (called in each worker, and on a deep copy of itself
            for block 0, so that every block has its own opponents; picklable for the
            ``spawn`` and ``forkserver`` contexts).
        context: a ``multiprocessing`` start method (default: the platform's).

    ``arrays`` holds the shared (N, ...) arrays by field name; ``processes`` the k-1
    worker processes (``processes[i]`` runs block i + 1).
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
        self._conns: list[Connection] = []  # [i]: the pipe to processes[i] (block i + 1)
        self.processes: list[mp.process.BaseProcess] = []
        self.closed = False
        # Commands are numbered and answers carry their command's number, so that the
        # answers to a run cut short (Ctrl-C) are told apart and skipped by the next run.
        self._number = 0
        for w in range(1, num_workers):
            first, stop = int(self.bounds[w]), int(self.bounds[w + 1])
            parent_end, child_end = ctx.Pipe()
            process = ctx.Process(target=_worker, name=f"smoor_env worker {w}", daemon=True,
                                  args=(child_end, [*self._conns, parent_end], shared, space,
                                        num_envs, first, stop - first, make_block))
            process.start()
            child_end.close()
            self._conns.append(parent_end)
            self.processes.append(process)
        # Block 0, built while the workers build theirs.
        self._local_rows = _rows(self.arrays, 0, int(self.bounds[1]))
        try:
            self._local = copy.deepcopy(make_block)(0, int(self.bounds[1]),
                                                    self._local_rows["observation"])
        except BaseException:
            self.close()
            raise
        self._wait("start", 0)

    def run(self, command: str, argument: Any = None) -> None:
        """Every block runs ``command`` (``"reset"`` with a seed, ``"step"`` on the shared
        actions, ``"restart"`` of the shared chosen games); returns when all are done.
        Raises ``WorkerError`` if one raised or its worker died."""
        if self.closed:
            raise WorkerError("the workers are closed (after close() or a worker's failure)")
        self._number += 1
        for i, conn in enumerate(self._conns):
            try:
                conn.send((command, argument, self._number))
            except (BrokenPipeError, OSError):
                self._fail(i + 1, "died", None)
        try:  # block 0 here, while the workers run theirs
            _serve(self._local, self._local_rows, command, argument)
        except Exception as error:  # noqa: BLE001 - reported as a block's failure
            self._fail(0, f"raised during {command!r}", (error, traceback.format_exc()))
        self._wait(command, self._number)

    def _wait(self, command: str, number: int) -> None:
        """Wait for every worker's answer to ``command`` (the ``number``-th), or the first
        failure. Answers to earlier commands (of a run cut short: the workers ignore
        SIGINT and finish) are skipped."""
        pending = dict(enumerate(self._conns))
        sentinels = {self.processes[i].sentinel: i for i in pending}
        while pending:
            ready = wait([*pending.values(), *(s for s, i in sentinels.items() if i in pending)])
            for i, conn in list(pending.items()):
                if conn in ready or conn.poll():
                    try:
                        status, detail, answered = conn.recv()
                    except (EOFError, OSError):
                        self._fail(i + 1, "died", None)
                    if answered != number:
                        continue  # an earlier command's answer
                    if status == "error":
                        self._fail(i + 1, f"raised during {command!r}", detail)
                    del pending[i]
                elif self.processes[i].sentinel in ready:
                    self._fail(i + 1, "died", None)

    def _fail(self, w: int, what: str, detail: tuple[BaseException | None, str] | None) -> None:
        """Shut the pool down and raise ``WorkerError`` about block ``w``."""
        where, code = "the learner's process", None
        if w > 0:
            process = self.processes[w - 1]
            process.join(0.1)
            where, code = f"worker {w}", process.exitcode
        self.close()
        games = f"sub-environments {self.bounds[w]}..{self.bounds[w + 1] - 1}"
        if detail is None:
            raise WorkerError(f"{where} ({games}) {what} (exit code {code}); the environment "
                              f"is closed")
        error, trace = detail
        message = f"{where} ({games}) {what}; the environment is closed. Its traceback:\n{trace}"
        raise WorkerError(message) from error

    def close(self) -> None:
        """Stop every worker: ask, wait up to ``CLOSE_TIMEOUT`` s, then terminate; join all."""
        if self.closed:
            return
        self.closed = True
        for conn, process in zip(self._conns, self.processes, strict=True):
            if process.is_alive():
                with contextlib.suppress(BrokenPipeError, OSError):
                    conn.send(("close", None, -1))
        for conn, process in zip(self._conns, self.processes, strict=True):
            process.join(CLOSE_TIMEOUT)
            if process.is_alive():
                process.terminate()
                process.join()
            conn.close()
