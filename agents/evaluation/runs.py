"""Run folders that never lie: chunks saved as they finish, atomic writes, a summary that
always says what the folder holds, and resuming from it."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from agents.evaluation.backends import play_units
from agents.evaluation.duplicate import CSV_COLUMNS
from agents.evaluation.plots import plot_summary, plot_throughput
from agents.evaluation.tournament import summarise
from smoor_env import preset

SUMMARY = "summary.json"


RESULTS = "results.csv"


CHUNKS = "chunks"


#: The arguments that decide the results: a run resumes only with the same values.
RESULT_ARGS = ("agents", "players", "rule_sets", "deals", "matches", "seed", "chunk")


#: A unit of work: (rule set, player count, chunk index).
Unit = tuple[str, int, int]


def current_umask() -> int:
    """The process's umask (read by setting it and putting it back: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: str) -> None:
    """Write ``path`` whole or not at all: a temporary file in the same folder, flushed
    to disk, then ``os.replace`` (atomic), so a reader or a Ctrl-C never meets half a file.
    The file gets the permissions ``open`` would give it (0o666 less the umask), not
    ``mkstemp``'s private 0o600."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(handle, 0o666 & ~current_umask())
        with os.fdopen(handle, "w", newline="") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def csv_text(rows: list[dict], header: bool = False) -> str:
    """Rows as CSV lines (``csv`` module's dialect), optionally after the header line."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS)
    if header:
        writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def read_rows(lines: Iterable[str]) -> list[dict]:
    """Typed rows (ints where the columns hold ints) of CSV lines with the header."""
    return [{**r, "players": int(r["players"]), "deal": int(r["deal"]),
             "rotation": int(r["rotation"]), "seat": int(r["seat"]),
             "round": int(r["round"]), "points": int(r["points"]),
             "round_win": int(r["round_win"])} for r in csv.DictReader(lines)]


#: The largest ``--seed`` of a run: the deals' seed is ``seed`` plus a number below 10**6
#: per rule set.
MAX_SEED = 2 ** 32 - 1


def check_run_settings(args: Any, repeatable: tuple[str, ...] = ()) -> None:
    """The settings every run of duplicate-deal chunks shares (the tournament's and the
    league's), checked before anything is played or written: ``--deals``, ``--chunk``,
    ``--workers`` and ``--seed`` are ints in range, ``--agents``, ``--players`` and
    ``--rule-sets`` are non-empty and without repeats (except the ``repeatable`` ones),
    ``--run-name`` is a plain name, ``--resume`` and ``--overwrite`` exclude each other,
    and every rule set takes every player count.

    Raises:
        TypeError: a count that is not an int. ValueError: any other bad value.
    """
    for name in ("deals", "chunk", "workers", "seed"):
        value = getattr(args, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"--{name} must be an int, got {value!r}")
        low = 0 if name == "seed" else 1
        if value < low or (name == "seed" and value > MAX_SEED):
            bounds = f"in 0..{MAX_SEED}" if name == "seed" else "at least 1"
            raise ValueError(f"--{name} must be {bounds}, got {value}")
    for name in ("agents", "players", "rule_sets"):
        values = getattr(args, name)
        flag = "--" + name.replace("_", "-")
        if not values:
            raise ValueError(f"{flag} needs at least one value")
        if name not in repeatable and len(set(values)) != len(values):
            raise ValueError(f"{flag} lists a value twice: {values}")
    check_run_name(args.run_name)
    if args.resume and args.overwrite:
        raise ValueError("--resume continues the run in the folder and --overwrite replaces "
                         "it: pass one of them")
    for rule_set in args.rule_sets:
        for players in args.players:
            preset(rule_set, players, args.matches)  # fail early on a bad combination


def check_run_name(name: str) -> None:
    """A ValueError unless ``name`` (``--run-name``) is a plain folder name (or empty, for
    the default): a run never writes outside ``--out-dir``."""
    if name in (".", "..") or "/" in name or os.sep in name:
        raise ValueError(f"--run-name must be a plain folder name, got {name!r}")


def load_results(folder: str | Path) -> tuple[list[dict], dict]:
    """The CSV rows (typed) and the summary of a results folder (for notebooks)."""
    folder = Path(folder)
    with open(folder / RESULTS, newline="") as f:
        rows = read_rows(f)
    return rows, json.loads((folder / SUMMARY).read_text())


class RunFolder:
    """The files of one run, kept truthful at every moment.

    ``chunks/`` holds one CSV file per finished chunk, written atomically as soon as the
    chunk is played; ``summary.json`` is rewritten (atomically) after every change and
    lists the finished chunks and the output files (``results.csv``, plots) that hold
    them. A file the summary does not list is not part of the run: whenever the run
    stops (done, Ctrl-C, a crash), ``summary.json`` says what the folder holds, and
    ``--resume`` continues from the chunks it lists.

    This class is the win-rate tournament's folder (``experiments.win_rates``); another
    run of duplicate-deal chunks (the league) subclasses it, with its own file names
    (the class attributes) and its own tables and outputs (``empty_tables``, ``tables``,
    ``outputs``, ``versions``).
    """

    #: The default folder name is ``<default_name>__seed<seed>``.
    default_name = "win_rates"
    #: The module of the command line, for the summary's ``command``.
    command_module = "experiments.win_rates"
    #: The rows of every finished chunk (CSV, ``CSV_COLUMNS``).
    results_file = RESULTS
    #: What the folder holds (JSON).
    summary_file = SUMMARY

    def __init__(self, args: Any, units: list[Unit]) -> None:
        """``args``: the run's settings (``experiments.win_rates.Args``: ``out_dir``,
        ``run_name``, ``seed``, ``resume``, ``overwrite``, ``plots``, ``matches`` and the
        ``RESULT_ARGS``); ``units``: every unit of the run, in the order of ``results.csv``."""
        self.args, self.units = args, units
        self.folder = Path(args.out_dir) / (args.run_name
                                            or f"{self.default_name}__seed{args.seed}")
        self.chunk_texts: dict[Unit, str] = {}  # finished unit -> its CSV lines
        self.files: list[str] = []  # output files that hold the finished chunks
        self.seconds_before = 0.0  # playing time of the sessions this one resumes
        self.started = time.time()

    def chunk_path(self, unit: Unit) -> Path:
        rule_set, players, chunk = unit
        return self.folder / CHUNKS / f"{rule_set}_{players}p_{chunk:06d}.csv"

    def open(self) -> None:
        """Check the folder (an existing run, writability) and claim it, before any game.

        ``--out-dir`` and the run's folder are made if missing, nothing above them.

        Raises:
            ValueError: the folder holds a run and neither ``--resume`` nor
                ``--overwrite`` was given, ``--resume`` finds no run or a run with other
                settings, or the folder cannot be written (or ``--out-dir``'s own folder
                does not exist).
        """
        args, folder = self.args, self.folder
        old = self._read_old_summary()
        if old is None and args.resume:
            raise ValueError(f"nothing to resume: {folder} holds no run "
                             f"({self.summary_file} missing)")
        if old is not None and not (args.resume or args.overwrite):
            state = "finished" if old.get("complete") else "unfinished"
            raise ValueError(
                f"{folder} already holds a {state} run ({old.get('chunks_done')} of "
                f"{old.get('chunks')} chunks): pass --resume to continue it or --overwrite "
                f"to replace it (or choose another --run-name)")
        if old is not None and args.resume:
            before = old.get("args", {})
            differ = [name for name in RESULT_ARGS if before.get(name) != getattr(args, name)]
            if differ:
                raise ValueError(
                    "--resume needs the run's own settings; these differ: " + ", ".join(
                        f"--{n.replace('_', '-')} {before.get(n)!r} (now {getattr(args, n)!r})"
                        for n in differ))
        out_dir = folder.parent
        if not out_dir.is_dir() and not out_dir.parent.is_dir():
            raise ValueError(f"cannot write the results folder {folder}: {out_dir.parent} is "
                             f"not a folder (--out-dir is made if missing, not the folders "
                             f"above it)")
        try:
            for place in (out_dir, folder, folder / CHUNKS):
                place.mkdir(exist_ok=True)
            for place in (folder, folder / CHUNKS):
                with tempfile.TemporaryFile(dir=place):
                    pass
        except OSError as error:
            raise ValueError(f"cannot write the results folder {folder}: "
                             f"{error.strerror or error}") from error
        stale = [] if old is None else list(old.get("files", []))
        if old is not None and args.resume:
            self.seconds_before = float(old.get("seconds", 0.0))
            for unit in map(tuple, old.get("finished_chunks", [])):
                path = self.chunk_path(unit)
                if unit in self.units and path.exists():
                    self.chunk_texts[unit] = path.read_bytes().decode()  # CSV's \r\n kept
        self.write_summary(complete=False, interrupted=False)
        # Only now that the summary no longer claims them: the old run's outputs (and, to
        # replace the run, its chunks) go.
        for name in stale:
            with contextlib.suppress(FileNotFoundError):
                (folder / Path(name).name).unlink()
        if args.overwrite:
            for path in (folder / CHUNKS).glob("*.csv"):
                path.unlink()

    def _read_old_summary(self) -> dict | None:
        path = self.folder / self.summary_file
        if not path.is_file():
            return None
        try:
            old = json.loads(path.read_text())
            if not isinstance(old, dict):
                raise ValueError("not a JSON object")
        except ValueError as error:
            if self.args.overwrite:
                return {}
            raise ValueError(f"{path} is not a run summary ({error}): remove it or pass "
                             f"--overwrite") from error
        return old

    def save_chunk(self, unit: Unit, rows: list[dict]) -> None:
        """Keep a finished chunk: its file first, then the summary that lists it."""
        text = csv_text(rows)
        write_atomic(self.chunk_path(unit), text)
        self.chunk_texts[unit] = text
        self.write_summary(complete=False, interrupted=False)

    @property
    def finished(self) -> list[Unit]:
        """The finished units, in the order of ``results.csv``."""
        return [unit for unit in self.units if unit in self.chunk_texts]

    # ------------------------------------------- what a kind of run adds to its folder
    def empty_tables(self) -> dict:
        """The summary's tables before any chunk is summarised."""
        return {"table": [], "pairs": []}

    def tables(self, rows: list[dict]) -> dict:
        """The summary's tables of the finished rows (at least one)."""
        return summarise(rows, self.args.matches)

    def outputs(self, summary: dict, drafts: Path) -> list[Path]:
        """Draw the output files besides ``results_file`` (plots) into ``drafts``; returns
        their paths (each is then moved into the folder and listed in the summary)."""
        if not (self.args.plots and summary["chunks_done"]):
            return []
        return plot_summary(summary, drafts) + plot_throughput(
            Path(self.args.out_dir) / "throughput.json", drafts)

    def versions(self) -> dict[str, str]:
        """The versions of the packages the results depend on."""
        import matplotlib
        import scipy

        import smoor_env

        return {"smoor_env": smoor_env.__version__, "python": platform.python_version(),
                "numpy": np.__version__, "scipy": scipy.__version__,
                "matplotlib": matplotlib.__version__}

    # ------------------------------------------------------------------- writing
    def write_summary(self, complete: bool, interrupted: bool,
                      tables: dict | None = None) -> dict:
        """Write ``summary.json`` for the folder as it is now; returns the summary."""
        args = self.args
        summary = dict(tables or self.empty_tables())
        summary.update({
            "command": " ".join([Path(sys.executable).name, "-m", self.command_module,
                                 *sys.argv[1:]]),
            "args": dataclasses.asdict(args), "seed": args.seed,
            "complete": complete, "interrupted": interrupted,
            "chunks_done": len(self.chunk_texts), "chunks": len(self.units),
            "finished_chunks": [list(unit) for unit in self.finished],
            "files": list(self.files),
            "seconds": self.seconds_before + time.time() - self.started,
            "versions": self.versions(),
        })
        write_atomic(self.folder / self.summary_file, json.dumps(summary, indent=1))
        return summary

    def finish(self, interrupted: bool) -> dict:
        """Write ``results.csv`` from the finished chunks, the summary with its tables, then
        the other outputs (plots; each listed in the summary once it is in place)."""
        folder = self.folder
        text = csv_text([], header=True) + "".join(self.chunk_texts[u] for u in self.finished)
        write_atomic(folder / self.results_file, text)
        self.files = [self.results_file]
        rows = read_rows(io.StringIO(text))
        tables = self.tables(rows) if rows else None
        complete = len(self.chunk_texts) == len(self.units)
        summary = self.write_summary(complete, interrupted, tables)
        with tempfile.TemporaryDirectory(dir=folder, prefix=".outputs-") as drafts:
            drawn = self.outputs(summary, Path(drafts))
            for path in drawn:
                os.replace(path, folder / path.name)
                self.files.append(path.name)
        if drawn:
            summary = self.write_summary(complete, interrupted, tables)
        return summary


# ----------------------------------------------------------- playing a run, its command
def play_run(run_folder: RunFolder, play: Callable[..., list[dict]], desc: str,
             **backend: Any) -> dict:
    """Open the run's folder, play the units it lacks (``play(*unit)``, see
    ``backends.play_units``; ``backend``: its ``backend``, ``address``, ``shared``) and
    write its outputs; returns the summary.

    Raises:
        ValueError: a folder that cannot take the run (``RunFolder.open``), before any
            game is played.
        KeyboardInterrupt: Ctrl-C while the outputs were being written (its message: the
            summary says which were; ``--resume`` writes the rest). Ctrl-C while playing
            is not an error: the finished chunks are kept and summarised
            (``summary["interrupted"]``).
    """
    args, units = run_folder.args, run_folder.units
    run_folder.open()
    todo = [unit for unit in units if unit not in run_folder.chunk_texts]
    _, interrupted = play_units(todo, play, args.workers, args.progress, desc,
                                run_folder.save_chunk, done_before=len(units) - len(todo),
                                **backend)
    try:
        return run_folder.finish(interrupted)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(f"while writing: {run_folder.folder / run_folder.summary_file}"
                                f" lists what was written; --resume writes the rest") from None


def wrote(run_folder: RunFolder, summary: dict) -> str:
    """The closing line: every file the run's folder holds."""
    return "\nwrote " + ", ".join(str(run_folder.folder / name)
                                  for name in [*summary["files"], run_folder.summary_file])


def one_line(error: BaseException) -> str:
    """An exception's message on one line (its type's name if it has none)."""
    return " ".join(str(error).split()) or type(error).__name__


def command_line(prog: str, args_type: type, play: Callable[[Any], tuple[Path, dict]],
                 description: str, argv: list[str] | None = None) -> int:
    """A run's command: parse ``argv`` (tyro; ``prog`` in the usage and error lines), run
    ``play(args)`` and return the exit status. Failures end in one line, no traceback:
    ``prog: error: ...`` and 2 for bad arguments, agent specs or folders (refused before
    the folder is touched); ``prog: interrupted ...`` and 130 after Ctrl-C, also when the
    run stopped early and kept its finished chunks (``--resume`` continues it)."""
    import tyro

    args = tyro.cli(args_type, args=argv, prog=prog, description=description)
    try:
        _, summary = play(args)
    except KeyboardInterrupt as interrupt:
        print(f"\n{prog}: interrupted {one_line(interrupt) if interrupt.args else ''}".rstrip(),
              file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError) as error:
        print(f"{prog}: error: {one_line(error)}", file=sys.stderr)
        return 2
    # A run stopped while playing has said so (``play_units``) and kept its chunks.
    return 130 if summary["interrupted"] else 0
