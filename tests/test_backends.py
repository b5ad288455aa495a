"""The local backend's worker processes (``agents.evaluation.backends.finished_units``):
every unit played once; an error, an interrupt, a worker that dies or a stop with units
still waiting ends the run at once, without a hang and without a process left behind."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

import pytest

from agents.evaluation.backends import finished_units

UNITS = [(i,) for i in range(8)]


def square(x: int) -> list[dict]:
    return [{"x": x, "square": x * x}]


def slow(x: int) -> list[dict]:
    time.sleep(0.02)
    return [{"x": x}]


def fails(x: int) -> list[dict]:
    if x == 3:
        raise ValueError("unit three is bad")
    return [{"x": x}]


def interrupted(x: int) -> list[dict]:
    if x == 1:
        raise KeyboardInterrupt
    return [{"x": x}]


def dies(x: int) -> list[dict]:
    if x == 2:
        os._exit(3)
    return [{"x": x}]


def stopped(x: int) -> list[dict]:
    if x == 2:
        os.kill(os.getpid(), signal.SIGTERM)  # as `timeout` or Slurm stops a process group
    return [{"x": x}]


def test_every_unit_is_played_once_by_the_workers():
    got = list(finished_units(UNITS, square, workers=2))
    assert sorted(got) == [((i,), [{"x": i, "square": i * i}]) for i in range(8)]
    assert multiprocessing.active_children() == []


def test_a_stop_with_units_still_waiting_is_at_once_and_leaves_no_process():
    """Closing the iterator (Ctrl-C, a failed write) after one unit, with hundreds not yet
    played: the workers stop at once (``multiprocessing.Pool.terminate`` can hang here,
    python/cpython#78178)."""
    finished = finished_units([(i,) for i in range(500)], slow, workers=2)
    next(finished)
    start = time.perf_counter()
    finished.close()
    assert time.perf_counter() - start < 5
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("play,raised,message", [
    (fails, ValueError, "unit three is bad"),
    (interrupted, KeyboardInterrupt, None),
    (dies, RuntimeError, r"a worker process died \(exit code 3\) playing unit \(2,\)"),
    (stopped, KeyboardInterrupt, None),
], ids=["error", "interrupt", "death", "sigterm"])
def test_what_goes_wrong_in_a_worker_is_raised_here_not_a_hang(play, raised, message):
    with pytest.raises(raised, match=message):
        list(finished_units(UNITS, play, workers=2))
    assert multiprocessing.active_children() == []


def test_a_workers_error_carries_the_workers_traceback():
    with pytest.raises(ValueError) as raised:
        list(finished_units(UNITS, fails, workers=2))
    assert "in fails" in str(raised.value.__cause__)  # where in the worker it was raised
