"""Checks of the values given to the engine and the environments, shared by them.

Each check raises ``TypeError`` (wrong kind of value) or ``ValueError`` (wrong shape or
out of its range), naming the argument and what it must be, before anything changes.
The bounds themselves are documented in ``docs/rules.md`` ("Bounds").
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Seeds and game ids are 64-bit keys of the counter-based random streams: 0..2**64 - 1.
SEED_LIMIT = 2**64

#: The most games in one batch: ``Engine(batch_size)``, ``SmoorVectorEnv(num_envs)`` and
#: ``SelfPlayVectorEnv(num_envs)`` take 1..2**18 (262_144), four times the largest batch
#: of the benchmarks. A larger value (a typo such as ``10**9``) is refused before anything
#: is allocated, where it would end in a ``MemoryError`` or a long allocation. At the bound
#: the engine needs about 0.15 GB, ``SmoorVectorEnv`` about 7 GB and ``SelfPlayVectorEnv``
#: about 12 GB (float32 observations, 4 players), which a 24 GB machine holds; on a smaller
#: one a ``MemoryError`` below the bound is raised as it is.
MAX_BATCH_SIZE = 2**18


def is_int(value: Any) -> bool:
    """Whether ``value`` is an integer (Python or numpy), bools excluded."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def check_seed(seed: Any, name: str = "seed") -> int:
    """``seed`` as a Python int in 0..2**64 - 1 (TypeError if not an int, ValueError if out
    of range: a seed outside it would alias another one)."""
    if not is_int(seed):
        raise TypeError(f"{name} must be an int in 0..2**64 - 1, got {seed!r}")
    if not 0 <= int(seed) < SEED_LIMIT:
        raise ValueError(f"{name} must be in 0..2**64 - 1, got {seed}")
    return int(seed)


def check_count(value: Any, name: str, low: int = 1, high: int | None = None) -> int:
    """``value`` as a Python int >= low (and <= high if given; a count: bools and floats
    are TypeErrors)."""
    within = f">= {low}" if high is None else f"in {low}..{high}"
    if not is_int(value):
        raise TypeError(f"{name} must be an int {within}, got {value!r}")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be {'an int ' if high is None else ''}{within}, "
                         f"got {value}")
    return int(value)


def check_batch_size(value: Any, name: str = "batch_size") -> int:
    """``value`` as a number of games in one batch: an int in 1..``MAX_BATCH_SIZE``,
    checked before anything is allocated (``name``: the argument, e.g. ``num_envs``)."""
    return check_count(value, name, 1, MAX_BATCH_SIZE)


def int_array(values: Any, name: str, shape: tuple[int | None, ...], low: int, high: int,
              dtype: type | np.dtype) -> np.ndarray:
    """``values`` as an array of ``dtype`` and ``shape``, every entry an int in low..high.

    ``None`` in ``shape`` accepts any length on that axis.

    A numpy array must have an integer dtype; a list is read element by element as exact
    Python ints (numpy would turn ``[2**63, 1]`` into floats), so bools, floats and
    strings are rejected rather than converted.

    Raises:
        ValueError: naming ``name``, on a wrong element type, shape or range.
    """
    if isinstance(values, np.ndarray):
        array = values
        if array.dtype.kind not in "iu":
            raise ValueError(f"{name} must be ints, got an array of dtype {array.dtype}")
    else:
        try:
            array = np.array(values, dtype=object)
        except ValueError as error:  # ragged nesting numpy cannot hold
            raise ValueError(f"{name} must be ints of shape {shape}: {error}") from None
        wrong = [v for v in array.reshape(-1) if not is_int(v)]
        if wrong:
            raise ValueError(f"{name} must be ints of shape {shape}, got {wrong[0]!r}")
    if len(array.shape) != len(shape) or any(
            want is not None and want != got for want, got in zip(shape, array.shape, strict=True)):
        raise ValueError(f"{name} must have shape {shape}, got shape {array.shape}")
    if array.size and (array.min() < low or array.max() > high):
        raise ValueError(f"{name} must be ints in {low}..{high}, got {array.tolist()}")
    return array.astype(dtype)


def check_action(action: Any, who: str) -> int:
    """One action id as a Python int in 0..NUM_ACTIONS - 1 (an int, a numpy integer or a
    0-d integer array); TypeError for anything else (floats, strings, bools, None),
    ValueError out of range."""
    from smoor_env.core.state import NUM_ACTIONS

    if isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
        action = action.item()
    if not is_int(action):
        raise TypeError(f"{who}: an action must be an int 0..{NUM_ACTIONS - 1} (a card, bid or "
                        f"cursed suit id), got {action!r}")
    if not 0 <= action < NUM_ACTIONS:
        raise ValueError(f"{who}: action {action} is out of range 0..{NUM_ACTIONS - 1}")
    return int(action)


def reset_options(options: Any, known: tuple[str, ...], others: bool = False) -> dict:
    """The options of a ``reset`` as a dict: None or a dict whose keys are ``known`` (with
    ``others``, other keys are allowed and ignored, as PettingZoo's API test passes some)."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict (keys {', '.join(known) or 'none'}) or None, "
                        f"got {type(options).__name__} {options!r}")
    unknown = sorted(str(k) for k in set(options) - set(known))
    if unknown and not others:
        raise ValueError(f"unknown reset option(s) {unknown}; the options are "
                         f"{list(known) or 'none'}")
    return options


# ------------------------------------------------------------------ half-done changes
class BrokenStateError(RuntimeError):
    """A call stopped half-way through changing an engine or an environment (a
    ``KeyboardInterrupt``, or an error after the first change): its state no longer
    hangs together, so every call but ``reset()`` refuses until a reset succeeds."""


class ChangeGuard:
    """Marks its owner broken while a change is under way, so that a change cut short
    (Ctrl-C, an agent's error) is never taken for a finished one.

    ``with guard.changing("step()"): ...; return result`` sets the mark on entry and
    clears it on a normal exit (the ``return`` inside the block, so no line of the
    owner runs after the mark is cleared); an exception leaves the mark, naming it,
    except those in ``unchanged`` (raised before any change, by design: the engine's
    checks of its arguments). ``check`` raises ``BrokenStateError`` while the mark is
    set; the next change that ends normally (a reset) clears it.
    """

    __slots__ = ("owner", "broken", "_call", "_unchanged", "_now_unchanged")

    def __init__(self, owner: str, unchanged: tuple[type[BaseException], ...] = ()) -> None:
        self.owner = owner  # "SmoorVectorEnv": named in the error
        self.broken: str | None = None  # what left the owner half-changed
        self._call = ""
        self._unchanged = self._now_unchanged = unchanged

    def check(self, call: str) -> None:
        """Raise ``BrokenStateError`` if a change was cut short (naming it)."""
        if self.broken is not None:
            raise BrokenStateError(f"{self.owner}.{call}: {self.broken} left its state "
                                   f"half-changed; call reset() to start again")

    def changing(self, call: str,
                 unchanged: tuple[type[BaseException], ...] | None = None) -> ChangeGuard:
        """The guard as a context manager for one change (``unchanged``: this call's own
        kinds of exception raised before any change, instead of the guard's)."""
        self._call = call
        self._now_unchanged = self._unchanged if unchanged is None else unchanged
        return self

    def __enter__(self) -> None:
        self.broken = f"an interrupted {self._call}"

    def __exit__(self, kind, error, trace) -> None:  # one line: see the class docstring
        self.broken = None if kind is None else self._after(kind, error)

    def _after(self, kind: type[BaseException], error: BaseException) -> str | None:
        """The mark an exception leaves: none for the ``unchanged`` kinds, else its name."""
        if issubclass(kind, self._now_unchanged):
            return None
        return f"{kind.__name__}{f' ({error})' if str(error) else ''} inside {self._call}"
