"""Run folders that never lie: chunks saved as they finish, atomic writes, a summary that
always says what the folder holds, and resuming from it."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import errno
import fcntl
import hashlib
import io
import json
import os
import platform
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
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
#: Arguments that decide the results where a command has them and they are set (the
#: tournament's ``--rule-options``; the league has none): left out when empty, so the runs
#: made before them keep their fingerprints and resume.
OPTIONAL_RESULT_ARGS = ("rule_options",)


#: A unit of work: (rule set, player count, chunk index).
Unit = tuple[str, int, int]


#: The file in a run's folder that a live run holds an OS lock on (``fcntl.flock``).
LOCK = ".lock"


#: The code whose changes make a run's results different: the packages that play.
CODE_PACKAGES = ("smoor_env", "agents")


def code_fingerprint() -> str:
    """A SHA-256 of the code that plays a run's games: every ``.py`` file and checkpoint of
    ``CODE_PACKAGES``, by path and content (16 hex digits). Any edit changes it, so that
    ``--resume`` never mixes chunks played by two versions of the code."""
    digest = hashlib.sha256()
    for package in CODE_PACKAGES:
        root = Path(__import__(package).__file__).parent
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".pt", ".json", ".npz") and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root.parent)).encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def settings_fingerprint(args: Any) -> str:
    """A SHA-256 (16 hex digits) of the settings that decide a run's results
    (``result_settings``)."""
    settings = result_settings(vars(args))
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def result_settings(args: dict) -> dict:
    """The settings that decide a run's results, from its arguments ``args`` (a dict, as
    in ``summary.json``): every ``RESULT_ARGS``, and each ``OPTIONAL_RESULT_ARGS`` set, in
    sorted order and lower case (the same flags in another order or spelling play the same
    games)."""
    settings = {name: args.get(name) for name in RESULT_ARGS}
    settings.update({name: sorted(option.lower() for option in args[name])
                     for name in OPTIONAL_RESULT_ARGS if args.get(name)})
    return settings


def text_checksum(text: str) -> str:
    """The SHA-256 of a chunk's text (its bytes as written)."""
    return hashlib.sha256(text.encode()).hexdigest()


def current_umask() -> int:
    """The process's umask (read by setting it and putting it back: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def lock_folder(folder: Path, other: str) -> io.BufferedWriter:
    """Take an exclusive OS lock on ``folder/.lock`` and return its open file: the lock is
    held until that file is closed or the process ends, however it ends. A folder another
    process holds is a ValueError that says so and names ``other``, the option that
    chooses another folder."""
    path = folder / LOCK
    try:
        handle = open(path, "ab")  # noqa: SIM115 - held open for the run, closed by the caller
    except OSError as error:
        raise ValueError(f"cannot write the results folder {folder}: "
                         f"{error.strerror or error}") from error
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise ValueError(f"another run is writing to {folder} now (it holds {path}): wait "
                         f"for it to end, or choose another {other}") from None
    # A forked worker shares the lock; it lets go of its copy, so that the lock ends
    # with this process, not with a worker it leaves behind.
    os.register_at_fork(after_in_child=handle.close)
    return handle


class WriteFailed(OSError):
    """A file of a run's folder that could not be written (disk full, read-only, no
    permission): its message names the file and the problem, then ``hint`` (set by
    ``play_run``: what the summary keeps and how to go on)."""

    def __init__(self, path: Path | str, error: OSError) -> None:
        super().__init__(error.errno, error.strerror or one_line(error), str(path))
        self.hint = ""

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.strerror}" + (
            f"; {self.hint}" if self.hint else "")


#: What must change before ``--resume`` can go on, by the ``errno`` of a failed write.
REMEDIES = {errno.ENOSPC: "there is room", errno.EDQUOT: "there is room",
            errno.EROFS: "the folder can be written", errno.EACCES: "the folder can be written",
            errno.EPERM: "the folder can be written"}


def write_atomic(path: Path, data: str) -> None:
    """Write ``path`` whole or not at all: a temporary file in the same folder, flushed
    to disk, then ``os.replace`` (atomic), so a reader or a Ctrl-C never meets half a file.
    The file gets the permissions ``open`` would give it (0o666 less the umask), not
    ``mkstemp``'s private 0o600.

    Raises:
        WriteFailed: the file could not be written (disk full, read-only, ...), naming
            ``path``; the old file (if any) is left as it was, the temporary one removed.
    """
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                             suffix=".tmp")
    except OSError as error:
        raise WriteFailed(path, error) from error
    try:
        with os.fdopen(handle, "w", newline="") as f:
            os.fchmod(f.fileno(), 0o666 & ~current_umask())
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):  # (a read-only folder keeps it: nothing to do)
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise WriteFailed(path, error) from error
        raise


def claim_settings(args: Any, folder: Path, free: tuple[str, ...] = (),
                   identity: dict[str, str] | None = None) -> None:
    """Record a run's settings (the dataclass ``args``) in ``folder/args.json``, or, going
    on with a run, refuse (a ValueError naming them) settings that differ from those it was
    made with; only the ``free`` ones may (more generations or deals, say). ``identity``:
    what else names the run beside its settings (the code that plays it, say), recorded
    beside them; going on, one that differs is refused first, in words of its own."""
    identity = identity or {}
    wanted = {k: v for k, v in dataclasses.asdict(args).items() if k not in free}
    path = folder / "args.json"
    if path.exists():
        recorded = json.loads(path.read_text())
        for key, now in identity.items():
            if recorded.get(key) != now:
                raise ValueError(f"{folder} holds a run played by another {key} ("
                                 f"{recorded.get(key)!r}; now {now!r}): it goes on only "
                                 "with its own; use another --out-dir")
        had = {k: v for k, v in recorded.items() if k not in free and k not in identity}
        # A setting added after the run began: the run was made with its default.
        had |= {k: v for k, v in _defaults(args).items() if k in wanted and k not in had}
        changed = sorted(k for k in wanted.keys() | had.keys() if wanted.get(k) != had.get(k))
        if changed:
            raise ValueError(f"{folder} holds a run made with other settings ("
                             + ", ".join(f"--{k.replace('_', '-')} {had.get(k)!r}"
                                         for k in changed)
                             + "): go on with those, or use another --out-dir")
    else:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({**dataclasses.asdict(args), **identity}, indent=1))


def _defaults(args: Any) -> dict[str, Any]:
    """The dataclass ``args``' fields that have a default, as ``dataclasses.asdict`` would
    record them."""
    defaults = {}
    for f in dataclasses.fields(args):
        if f.default is not dataclasses.MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = f.default_factory()
    return json.loads(json.dumps(defaults))  # as args.json holds them (tuples as lists)


def read_jsonl(path: Path) -> list[dict]:
    """The rows of a JSON-lines file a run appends to (none if it is missing; a line cut
    short by a kill is left out)."""
    rows = []
    for line in path.read_text().splitlines() if path.exists() else []:
        with contextlib.suppress(json.JSONDecodeError):
            rows.append(json.loads(line))
    return rows


def write_csv(rows: list[dict], path: Path) -> None:
    """Rows of any fields (the union of their keys, in first-seen order) as a CSV file
    with a header line: a curve's or a table's points, not a tournament's rows
    (``csv_text``)."""
    fields = list(dict.fromkeys(key for row in rows for key in row))
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def csv_text(rows: list[dict], header: bool = False) -> str:
    """Rows as CSV lines (``csv`` module's dialect), optionally after the header line."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS)
    if header:
        writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


#: The columns of ``CSV_COLUMNS`` that hold ints.
INT_COLUMNS = ("players", "deal", "rotation", "seat", "round", "points", "round_win")


def read_rows(lines: Iterable[str], name: str = "the rows",
              header: bool = True) -> list[dict]:
    """Typed rows (ints where the columns hold ints) of CSV lines, with the header line
    (``header``) or in ``CSV_COLUMNS`` order without it (a chunk file).

    Raises:
        ValueError: a line that is not a row of ``CSV_COLUMNS`` (its fields or an int
            column), naming ``name`` (the file) and the line.
    """
    reader = csv.DictReader(lines, fieldnames=None if header else CSV_COLUMNS)
    rows = []
    try:
        if header and tuple(reader.fieldnames or ()) != CSV_COLUMNS:
            raise ValueError(f"the header is {reader.fieldnames}, not {list(CSV_COLUMNS)}")
        for r in reader:
            if None in r or None in r.values():
                raise ValueError(f"{len(r) - (None in r) + len(r.get(None) or [])} fields, "
                                 f"not {len(CSV_COLUMNS)}")
            rows.append({**r, **{column: int(r[column]) for column in INT_COLUMNS}})
    except (ValueError, csv.Error) as error:
        raise ValueError(f"{name}, line {reader.line_num}: not a row of results "
                         f"({one_line(error)})") from None
    return rows


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
    rows = read_rows(io.StringIO(read_text(folder / RESULTS)), str(folder / RESULTS))
    return rows, json.loads(read_text(folder / SUMMARY))


def read_text(path: Path) -> str:
    """A file's text (UTF-8, line ends kept).

    Raises:
        ValueError: bytes that are not UTF-8, naming the file and the line.
    """
    data = path.read_bytes()
    try:
        return data.decode()
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise ValueError(f"{path}, line {line}: not UTF-8 text ({error.reason})") from None


class RunFolder:
    """The files of one run, kept truthful at every moment.

    ``chunks/`` holds one CSV file per finished chunk, written atomically as soon as the
    chunk is played; ``summary.json`` is rewritten (atomically) after every change and
    lists the finished chunks and the output files (``results.csv``, plots) that hold
    them. A file the summary does not list is not part of the run: whenever the run
    stops (done, Ctrl-C, a crash), ``summary.json`` says what the folder holds, and
    ``--resume`` continues from the chunks it lists.

    The summary keeps, for every finished chunk, what identifies it: its rows' count, a
    checksum of its file, and the fingerprints of the settings and of the code that
    played it (``chunk_checks``). ``--resume`` plays again every chunk that fails the
    check (says which, and why) and refuses a run begun under other code. A live run holds
    an OS lock on the folder's ``.lock`` (released on any exit, even a kill), so a second
    run into the same folder is refused.

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
        self.chunk_rows: dict[Unit, int] = {}  # finished unit -> its number of rows
        self.files: list[str] = []  # output files that hold the finished chunks
        self.seconds_before = 0.0  # playing time of the sessions this one resumes
        self.started = time.time()
        self.replayed: list[str] = []  # why chunks listed by the old summary are played again
        self.fingerprints = {"settings": settings_fingerprint(args), "code": code_fingerprint()}
        self._lock: io.BufferedWriter | None = None  # the open .lock while the run is live
        self.listed: int | None = None  # chunks the summary on disk lists (None: no summary)

    def chunk_path(self, unit: Unit) -> Path:
        rule_set, players, chunk = unit
        return self.folder / CHUNKS / f"{rule_set}_{players}p_{chunk:06d}.csv"

    def open(self) -> None:
        """Check the folder (an existing run, writability), lock it and claim it, before
        any game.

        ``--out-dir`` and the run's folder are made if missing, nothing above them.

        Raises:
            ValueError: another run holds the folder, the folder holds a run and neither
                ``--resume`` nor ``--overwrite`` was given, ``--resume`` finds no run or a
                run with other settings or code, or the folder cannot be written (or
                ``--out-dir``'s own folder does not exist). The lock is let go.
        """
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        args, folder = self.args, self.folder
        if folder.is_dir():
            self._take_lock()  # before reading: the summary may be a live run's
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
            self._check_same_run(old)
        if old is not None:
            listed = old.get("finished_chunks")
            self.listed = len(listed) if isinstance(listed, list) else 0
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
        if self._lock is None:
            self._take_lock()
            if self._read_old_summary() != old:  # a run began in the moment between
                raise ValueError(f"another run began in {folder} meanwhile: run again")
        stale = [] if old is None else list(old.get("files", []))
        if old is not None and args.resume:
            self.seconds_before = float(old.get("seconds", 0.0))
            self._keep_checked_chunks(old)
        self.write_summary(complete=False, interrupted=False)
        # Only now that the summary no longer claims them: the old run's outputs (and, to
        # replace the run, its chunks) go.
        for name in stale:
            with contextlib.suppress(FileNotFoundError):
                (folder / Path(name).name).unlink()
        if args.overwrite:
            for path in (folder / CHUNKS).glob("*.csv"):
                path.unlink()

    def _take_lock(self) -> None:
        """Hold the folder's lock for the run (``lock_folder``)."""
        self._lock = lock_folder(self.folder, "--run-name")

    def close(self) -> None:
        """Let go of the folder's lock (the run is over, or was refused)."""
        if self._lock is not None:
            self._lock.close()  # closing the file releases the flock
            self._lock = None

    def _check_same_run(self, old: dict) -> None:
        """``--resume`` continues only a run of the same settings and code."""
        now, before = result_settings(vars(self.args)), result_settings(old.get("args", {}))
        differ = [name for name in (*RESULT_ARGS, *OPTIONAL_RESULT_ARGS)
                  if before.get(name) != now.get(name)]
        if differ:
            raise ValueError(
                "--resume needs the run's own settings; these differ: " + ", ".join(
                    f"--{n.replace('_', '-')} {before.get(n, [])!r} (now {now.get(n, [])!r})"
                    for n in differ))
        code = old.get("fingerprints", {}).get("code")
        if code != self.fingerprints["code"]:
            version = old.get("versions", {}).get("smoor_env", "?")
            raise ValueError(
                f"--resume continues a run only under the code that began it: {self.folder} "
                f"was played by smoor_env {version}, code {code or 'unrecorded'} and this is "
                f"code {self.fingerprints['code']}; finish it with that code, or pass "
                f"--overwrite to play it again")

    def _keep_checked_chunks(self, old: dict) -> None:
        """Keep every chunk the old summary lists that passes its check; the others are
        played again (``self.replayed`` says which and why)."""
        checks = old.get("chunk_checks", {})
        for unit in map(tuple, old.get("finished_chunks", [])):
            if unit not in self.units:
                continue
            path = self.chunk_path(unit)
            problem = self.chunk_problem(unit, checks.get(path.name))
            if problem is None:
                self.chunk_texts[unit] = path.read_bytes().decode()  # CSV's \r\n kept
                self.chunk_rows[unit] = checks[path.name]["rows"]
            else:
                self.replayed.append(f"{CHUNKS}/{path.name} {problem}: played again")

    def chunk_problem(self, unit: Unit, check: dict | None) -> str | None:
        """Why the chunk file of ``unit`` cannot be kept (None if it can): ``check`` is its
        entry in the old summary's ``chunk_checks`` (rows, sha256, fingerprints), and its
        rows must belong to the unit's rule set, player count and deals."""
        path = self.chunk_path(unit)
        if not isinstance(check, dict):
            return "has no check in the summary"
        if not path.is_file():
            return "is missing"
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != check.get("sha256"):
            return "does not match its checksum"
        if check.get("fingerprints") != self.fingerprints:
            return "was played under other settings or code"
        try:
            rows = read_rows(io.StringIO(read_text(path), newline=""), str(path), header=False)
        except ValueError as error:
            return f"is not a chunk ({one_line(error)})"
        if len(rows) != check.get("rows"):
            return f"holds {len(rows)} rows, not {check.get('rows')}"
        rule_set, players, chunk = unit
        deals = range(chunk * self.args.chunk, (chunk + 1) * self.args.chunk)
        strays = [r for r in rows if (r["rule_set"], r["players"]) != (rule_set, players)
                  or r["deal"] not in deals]
        if strays or not rows:
            return "holds rows of other deals" if rows else "holds no rows"
        return None

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
        """Keep a finished chunk: its file first, then the summary that lists it (complete
        once it lists every chunk, even if writing ``results_file`` then fails)."""
        text = csv_text(rows)
        write_atomic(self.chunk_path(unit), text)
        self.chunk_texts[unit], self.chunk_rows[unit] = text, len(rows)
        self.write_summary(complete=len(self.chunk_texts) == len(self.units), interrupted=False)

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
            "fingerprints": self.fingerprints,
            "chunk_checks": {self.chunk_path(unit).name: self.chunk_check(unit)
                             for unit in self.finished},
            "files": list(self.files),
            "seconds": self.seconds_before + time.time() - self.started,
            "versions": self.versions(),
        })
        write_atomic(self.folder / self.summary_file, json.dumps(summary, indent=1))
        self.listed = len(self.chunk_texts)
        return summary

    def resume_hint(self, error: OSError) -> str:
        """What the folder keeps after a failed write, and how to go on (``WriteFailed``'s
        hint)."""
        remedy = REMEDIES.get(error.errno, "the problem is fixed")
        if self.listed is None:
            return f"no run was begun (no {self.summary_file}); run again once {remedy}"
        chunks = {0: "no finished chunk", 1: "the 1 finished chunk"}.get(
            self.listed, f"the {self.listed} finished chunks")
        return f"{self.summary_file} lists {chunks}, --resume continues once {remedy}"

    def chunk_check(self, unit: Unit) -> dict:
        """What identifies a finished chunk (the summary's ``chunk_checks`` entry): its
        rows' count, the SHA-256 of its file, the settings' and code's fingerprints."""
        return {"rows": self.chunk_rows[unit], "sha256": text_checksum(self.chunk_texts[unit]),
                "fingerprints": self.fingerprints}

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
        moved = len(self.files)
        try:
            with tempfile.TemporaryDirectory(dir=folder, prefix=".outputs-",
                                             ignore_cleanup_errors=True) as drafts:
                try:
                    drawn = self.outputs(summary, Path(drafts))
                except OSError as error:
                    raise WriteFailed(self._draft_name(error, Path(drafts)), error) from error
                for path in drawn:
                    try:
                        os.replace(path, folder / path.name)
                    except OSError as error:
                        raise WriteFailed(folder / path.name, error) from error
                    self.files.append(path.name)
        except WriteFailed:
            if len(self.files) > moved:  # list the outputs already in place, if it can
                with contextlib.suppress(WriteFailed):
                    self.write_summary(complete, interrupted, tables)
            raise
        except OSError as error:  # the drafts' folder itself
            raise WriteFailed(folder / ".outputs-*", error) from error
        if drawn:
            summary = self.write_summary(complete, interrupted, tables)
        return summary

    def _draft_name(self, error: OSError, drafts: Path) -> Path | str:
        """The output file an error of ``outputs`` was writing: the file it names, else the
        draft written last (the one being written), as it would be named in the folder."""
        if error.filename:
            return self.folder / Path(os.fsdecode(error.filename)).name
        written = sorted(drafts.iterdir(), key=lambda path: path.stat().st_mtime_ns)
        if written:
            return self.folder / written[-1].name
        return f"the outputs of {self.folder}"


# ----------------------------------------------------------- playing a run, its command
def play_run(run_folder: RunFolder, play: Callable[..., list[dict]], desc: str,
             **backend: Any) -> dict:
    """Open the run's folder, play the units it lacks (``play(*unit)``, see
    ``backends.play_units``; ``backend``: its ``backend``, ``address``, ``shared``) and
    write its outputs; returns the summary.

    Raises:
        ValueError: a folder that cannot take the run (``RunFolder.open``), before any
            game is played.
        WriteFailed: a file of the folder could not be written (disk full, read-only):
            the run stops (its workers too), the summary still lists only the chunks
            whose files are in place, and the error's message says how many and that
            ``--resume`` continues.
        KeyboardInterrupt: Ctrl-C while the outputs were being written (its message: the
            summary says which were; ``--resume`` writes the rest). Ctrl-C while playing
            is not an error: the finished chunks are kept and summarised
            (``summary["interrupted"]``).
    """
    args, units = run_folder.args, run_folder.units
    try:
        run_folder.open()
        for line in run_folder.replayed:
            print(f"{run_folder.folder}: {line}", file=sys.stderr)
        todo = [unit for unit in units if unit not in run_folder.chunk_texts]
        _, interrupted = play_units(todo, play, args.workers, args.progress, desc,
                                    run_folder.save_chunk, done_before=len(units) - len(todo),
                                    **backend)
        try:
            return run_folder.finish(interrupted)
        except KeyboardInterrupt:
            raise KeyboardInterrupt(f"while writing: {run_folder.folder / run_folder.summary_file}"
                                    f" lists what was written; --resume writes the rest") from None
    except WriteFailed as error:
        error.hint = run_folder.resume_hint(error)
        raise
    finally:
        run_folder.close()


def wrote(run_folder: RunFolder, summary: dict) -> str:
    """The closing line: every file the run's folder holds."""
    return "\nwrote " + ", ".join(str(run_folder.folder / name)
                                  for name in [*summary["files"], run_folder.summary_file])


def one_line(error: BaseException) -> str:
    """An exception's message on one line (its type's name if it has none)."""
    return " ".join(str(error).split()) or type(error).__name__


def log(show: bool, text: str) -> None:
    """Print ``text`` after the time of day (a training command's progress), if ``show``."""
    if show:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within: SIGTERM (``kill PID``, a batch system's stop) raises KeyboardInterrupt as
    Ctrl-C does, so a run stopped in the background keeps what it finished, stops its
    workers and says so, instead of dying at once with its workers left running. The
    handler before is put back after (only the main thread may set one: elsewhere this
    changes nothing)."""
    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        before = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def checked_command(prog: str, args_type: type, run: Callable[[Any], Any], description: str,
                    argv: list[str] | None = None, kept: str = "") -> int:
    """A command: parse ``argv`` (tyro), ``args.check()``, ``run(args)``; the exit
    status. Settings it refuses, and files it cannot write, end in one line
    (``prog: error: ...``) and 2; Ctrl-C or SIGTERM in ``prog: interrupted`` (then
    `` (kept)``, what is kept, if given) and 130 (SIGTERM reaches this process only:
    worker processes ``run`` starts are its to stop)."""
    import tyro

    args = tyro.cli(args_type, args=argv, prog=prog, description=description)
    try:
        with sigterm_interrupts():
            args.check()
            run(args)
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted" + (f" ({kept})" if kept else ""), file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError) as error:
        print(f"{prog}: error: {one_line(error)}", file=sys.stderr)
        return 2
    return 0


def command_line(prog: str, args_type: type, play: Callable[[Any], tuple[Path, dict]],
                 description: str, argv: list[str] | None = None) -> int:
    """A run's command: parse ``argv`` (tyro; ``prog`` in the usage and error lines), run
    ``play(args)`` and return the exit status. Failures end in one line, no traceback:
    ``prog: error: ...`` and 2 for bad arguments, agent specs or folders (refused before
    the folder is touched) and for a file that could not be written (disk full, read-only:
    ``WriteFailed``, the finished chunks kept for ``--resume``); ``prog: interrupted ...``
    and 130 after Ctrl-C or SIGTERM (``sigterm_interrupts``), also when the run stopped
    early and kept its finished chunks (``--resume`` continues it)."""
    import tyro

    args = tyro.cli(args_type, args=argv, prog=prog, description=description)
    try:
        with sigterm_interrupts():
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
