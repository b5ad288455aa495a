"""Where the units of work of a tournament are played: in this process, in forked worker
processes, or as Ray tasks (the ray extra), with the same results for any number of
workers; Ctrl-C keeps the finished units."""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any


class WorkerInterrupted(Exception):
    """A KeyboardInterrupt in a worker process, carried back to the main process (a pool
    worker passes on only ``Exception``s: a bare KeyboardInterrupt would kill it and
    leave its task unanswered forever)."""


#: ``play`` of the forked worker processes: set before they fork, so it need not pickle.
_worker_play: Callable[..., list[dict]] | None = None


def _play_in_worker(unit: tuple) -> tuple[tuple, list[dict]]:
    try:
        return unit, _worker_play(*unit)
    except KeyboardInterrupt:
        raise WorkerInterrupted(f"unit {unit} interrupted") from None


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
    pool = multiprocessing.get_context("fork").Pool(min(workers, len(units)),
                                                     initializer=_quiet_worker)
    try:
        yield from pool.imap_unordered(_play_in_worker, units)
    except WorkerInterrupted:
        raise KeyboardInterrupt from None
    finally:
        pool.terminate()
        pool.join()
        _worker_play = None


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
