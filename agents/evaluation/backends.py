"""Where the units of work of a tournament are played: in this process, in forked worker
processes, or as Ray tasks (the ray extra), with the same results for any number of
workers; Ctrl-C keeps the finished units."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import pickle
import signal
import sys
from collections.abc import Callable, Iterator
from multiprocessing.pool import ExceptionWithTraceback
from typing import Any

#: ``play`` of the forked worker processes: set before they fork, so it need not pickle.
_worker_play: Callable[..., list[dict]] | None = None


def _quiet_worker() -> None:
    """A worker ignores SIGINT (Ctrl-C reaches the main process, which stops the workers
    with ``terminate``) and dies of SIGTERM (``terminate``'s signal), whatever handler the
    main process had set when it forked (``runs.sigterm_interrupts``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def finished_units(units: list[tuple], play: Callable[..., list[dict]], workers: int,
                   backend: str = "local", address: str = "",
                   shared: Callable[[], dict[str, Any]] | None = None,
                   ) -> Iterator[tuple[tuple, list[dict]]]:
    """``(unit, play(*unit))`` of every unit, in the order they finish: in this process,
    in ``workers`` forked processes, or as Ray tasks (``backend="ray"``, ``workers`` at a
    time; see ``finished_on_ray``). Closing the iterator (Ctrl-C) stops the workers at once."""
    global _worker_play
    if backend == "ray":
        yield from finished_on_ray(units, play, workers, address, shared)
        return
    if workers == 1 or len(units) <= 1:
        for unit in units:
            yield unit, play(*unit)
        return
    _worker_play = play
    try:
        yield from _forked(units, min(workers, len(units)))
    finally:
        _worker_play = None


def _forked(units: list[tuple], workers: int) -> Iterator[tuple[tuple, list[dict]]]:
    """``(unit, _worker_play(*unit))`` of every unit from ``workers`` forked processes,
    one unit at a time each, in the order they finish. Each worker has a pipe of its own
    and nothing else is shared, so stopping them (``terminate``, when the iterator is
    closed) cannot hang as ``multiprocessing.Pool.terminate`` can with tasks still queued
    (python/cpython#78178: its task thread waits forever on the queue's lock)."""
    context = multiprocessing.get_context("fork")
    processes, pipes = [], []
    try:
        for _ in range(workers):
            mine, theirs = context.Pipe()
            process = context.Process(target=_worker, args=(theirs,), daemon=True)
            process.start()
            theirs.close()
            processes.append(process)
            pipes.append(mine)
        worker_of = dict(zip(pipes, processes, strict=True))
        waiting = iter(units)
        busy: dict[Any, tuple] = {}  # pipe -> the unit its worker plays
        for pipe in pipes:
            unit = next(waiting, None)
            if unit is not None:
                pipe.send(unit)
                busy[pipe] = unit
        while busy:
            for pipe in multiprocessing.connection.wait(list(busy)):
                try:
                    kind, answer = pipe.recv()
                except (EOFError, OSError):  # OSError: it died in the middle of an answer
                    worker = worker_of[pipe]
                    worker.join(1)
                    if worker.exitcode == -signal.SIGTERM:  # the whole group was stopped
                        raise KeyboardInterrupt from None
                    raise RuntimeError(f"a worker process died (exit code {worker.exitcode})"
                                       f" playing unit {busy[pipe]}") from None
                del busy[pipe]
                if kind == "interrupted":
                    raise KeyboardInterrupt
                if kind == "error":
                    raise answer
                unit = next(waiting, None)
                if unit is not None:  # the worker's next unit, before this one is used
                    pipe.send(unit)
                    busy[pipe] = unit
                yield answer
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join()
        for pipe in pipes:
            pipe.close()


def _worker(pipe) -> None:
    """A forked worker: plays the units it is sent until its pipe closes, answering each
    with ``("ok", (unit, rows))``, ``("error", exception)`` or ``("interrupted", None)``."""
    _quiet_worker()
    while True:
        try:
            unit = pipe.recv()
        except (EOFError, OSError):
            return
        try:
            answer = ("ok", (unit, _worker_play(*unit)))
        except KeyboardInterrupt:
            answer = ("interrupted", None)
        except Exception as error:  # raised again in the main process, as a pool does
            answer = ("error", _portable(error))
        try:
            pipe.send(answer)
        except Exception as error:  # an answer that does not pickle
            pipe.send(("error", _portable(RuntimeError(f"unit {unit}: {type(error).__name__}"
                                                       f": {error}"))))


def _portable(error: Exception) -> ExceptionWithTraceback:
    """``error`` to send to the main process, which raises it with this process's
    traceback as its cause (as ``multiprocessing.Pool`` does); one that does not pickle
    and unpickle becomes a RuntimeError naming it."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        error = RuntimeError(f"{type(error).__name__}: {error}")
    return ExceptionWithTraceback(error, error.__traceback__)


def finished_on_ray(units: list[tuple], play: Callable[..., list[dict]], workers: int,
                    address: str = "", shared: Callable[[], dict[str, Any]] | None = None,
                    ) -> Iterator[tuple[tuple, list[dict]]]:
    """``(unit, play(*unit, made=shared objects))`` of every unit, as Ray tasks.

    Joins the Ray at ``address``, else the one this process already started, else starts
    a local Ray with this machine's cores (and stops it at the end). ``shared()`` (heavy
    objects, e.g. the agents, by name) is built once here and put in the object store:
    each machine fetches it once, instead of every task carrying it.
    """
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        before = signal.getsignal(signal.SIGTERM)  # ray.init sets its own (an exit)
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
        with contextlib.suppress(ValueError):  # not the main thread: nothing was set
            signal.signal(signal.SIGTERM, before)  # SIGTERM stops the run as Ctrl-C does
    objects = shared() if shared else {}
    names = list(objects)
    references = [ray.put(objects[name]) for name in names]
    task = ray.remote(num_cpus=1, max_retries=0)(play_with_shared)
    waiting = iter(units)
    running: dict[Any, tuple] = {}  # task reference -> its unit

    def submit() -> None:
        unit = next(waiting, None)
        if unit is not None:
            running[task.remote(play, unit, names, *references)] = unit

    try:
        for _ in range(workers):
            submit()
        while running:
            [done], _ = ray.wait(list(running), num_returns=1)
            del running[done]
            submit()
            yield ray.get(done)
    finally:
        if running and not started_here:  # stopped early on a Ray that stays: free it
            # Only the tasks still running: cancelling one as it completes is a race that
            # aborts this process inside Ray 2.60 ("Tried to complete task that was not
            # pending", ray-project/ray#54527); a Ray started here stops with its tasks.
            _, unfinished = ray.wait(list(running), num_returns=len(running), timeout=0)
            for reference in unfinished:
                ray.cancel(reference, force=True)
        if started_here:
            ray.shutdown()


def play_with_shared(play: Callable[..., list[dict]], unit: tuple, names: list[str],
                     *objects: Any) -> tuple[tuple, list[dict]]:
    """A Ray task: ``(unit, play(*unit, made={name: object}))`` (Ray hands it the objects
    from the object store); ``play(*unit)`` when nothing is shared."""
    if not names:
        return unit, play(*unit)
    return unit, play(*unit, made=dict(zip(names, objects, strict=True)))


def play_units(units: list[tuple], play: Callable[..., list[dict]], workers: int,
               progress: bool, desc: str,
               on_done: Callable[[tuple, list[dict]], None] | None = None, *,
               done_before: int = 0, backend: str = "local", address: str = "",
               shared: Callable[[], dict[str, Any]] | None = None,
               ) -> tuple[dict[tuple, list[dict]], bool]:
    """Run ``play(*unit)`` for every unit (see ``finished_units``), with a progress bar.

    ``on_done(unit, rows)`` is called in this process as each unit finishes (in any
    order). Ctrl-C (here or in a worker) stops early and keeps the finished units.
    ``done_before``: units finished by an earlier session (the bar starts there).

    Returns:
        (rows of each finished unit, whether the run was interrupted).
    """
    results: dict[tuple, list[dict]] = {}
    interrupted = False
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=done_before + len(units), initial=done_before, unit="chunk",
                   desc=desc, file=sys.stderr)
    try:
        with contextlib.closing(finished_units(units, play, workers, backend, address,
                                               shared)) as finished:
            for unit, rows in finished:
                results[unit] = rows
                if on_done:
                    on_done(unit, rows)
                if bar:
                    bar.update()
    except KeyboardInterrupt:
        interrupted = True
        print(f"\ninterrupted: keeping the {done_before + len(results)} of "
              f"{done_before + len(units)} finished chunks (--resume continues the run)",
              file=sys.stderr)
    finally:
        if bar:
            bar.close()
    return results, interrupted
