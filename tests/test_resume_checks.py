"""Resume verifies what it reads, and one run holds a folder at a time.

Every chunk a run's summary lists carries its rows' count, its file's checksum and the
fingerprints of the settings and code that played it; ``--resume`` plays again a chunk
that fails the check (naming it) and refuses a run begun under other code. A live run
holds an OS lock on its folder.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.evaluation import runs
from experiments import league, win_rates

ROOT = Path(__file__).resolve().parents[1]


def bench_args(tmp_path: Path, **changes) -> win_rates.Args:
    """Three chunks of one deal (3 players, Smoorverliefd), no plots, no bar."""
    settings = dict(agents=["random", "greedy"], players=[3], rule_sets=["smoorverliefd"],
                    deals=3, chunk=1, out_dir=str(tmp_path), run_name="run", plots=False,
                    progress=False)
    return win_rates.Args(**{**settings, **changes})


def league_args(tmp_path: Path, **changes) -> league.Args:
    settings = dict(agents=["random", "greedy", "mc:worlds=2"], players=[3],
                    rule_sets=["hearts"], deals=6, chunk=2, out_dir=str(tmp_path),
                    run_name="run", plots=False, progress=False)
    return league.Args(**{**settings, **changes})


def chunk_files(folder: Path) -> list[Path]:
    return sorted((folder / "chunks").glob("*.csv"))


def emptied(first: bytes, second: bytes) -> bytes:
    return b""


def cut_at_a_line_end(first: bytes, second: bytes) -> bytes:
    return b"".join(first.splitlines(keepends=True)[:-1])


def another_chunk(first: bytes, second: bytes) -> bytes:
    return second


def one_digit_changed(first: bytes, second: bytes) -> bytes:
    cut = first.rindex(b",", 0, first.index(b"\r\n"))  # the last field of the first row
    digit = first[cut + 1:cut + 2]
    return first[:cut + 1] + (b"1" if digit == b"0" else b"0") + first[cut + 2:]


def json_list(first: bytes, second: bytes) -> bytes:
    return b"[]"


def json_object(first: bytes, second: bytes) -> bytes:
    return b"{}"


def not_utf8(first: bytes, second: bytes) -> bytes:
    return first[:40] + b"\xff\xfe" + first[40:]


TAMPERS = [emptied, cut_at_a_line_end, another_chunk, one_digit_changed, json_list,
           json_object, not_utf8]


@pytest.mark.parametrize("kind", ["bench", "league"])
@pytest.mark.parametrize("tamper", TAMPERS, ids=lambda f: f.__name__)
def test_resume_plays_again_a_chunk_that_fails_its_check(tmp_path, capsys, kind, tamper):
    make, run, results = ((bench_args, win_rates.run, "results.csv") if kind == "bench"
                          else (league_args, league.run, "games.csv"))
    whole = run(make(tmp_path, run_name="whole"))
    folder = run(make(tmp_path))
    first, second = chunk_files(folder)[:2]
    first.write_bytes(tamper(first.read_bytes(), second.read_bytes()))
    capsys.readouterr()
    run(make(tmp_path, resume=True))
    said = capsys.readouterr().err
    assert f"chunks/{first.name}" in said and "played again" in said
    assert f"chunks/{second.name}" not in said  # the untouched chunks are kept
    assert (folder / results).read_bytes() == (whole / results).read_bytes()
    assert first.read_bytes() == (whole / "chunks" / first.name).read_bytes()


def test_resume_names_why_each_chunk_is_played_again(tmp_path, capsys):
    folder = win_rates.run(bench_args(tmp_path))
    files = chunk_files(folder)
    files[0].write_bytes(b"")
    files[1].unlink()
    summary_path = folder / "summary.json"
    summary = json.loads(summary_path.read_text())
    del summary["chunk_checks"][files[2].name]
    runs.write_atomic(summary_path, json.dumps(summary))
    capsys.readouterr()
    win_rates.run(bench_args(tmp_path, resume=True))
    said = capsys.readouterr().err
    assert f"{files[0].name} does not match its checksum: played again" in said
    assert f"{files[1].name} is missing: played again" in said
    assert f"{files[2].name} has no check in the summary: played again" in said


def test_a_forged_check_does_not_let_other_deals_in(tmp_path, capsys):
    """Even with a checksum that matches, a chunk must hold its own unit's deals."""
    folder = win_rates.run(bench_args(tmp_path))
    first, second = chunk_files(folder)[:2]
    summary = json.loads((folder / "summary.json").read_text())
    summary["chunk_checks"][first.name] = summary["chunk_checks"][second.name]
    runs.write_atomic(folder / "summary.json", json.dumps(summary))
    first.write_bytes(second.read_bytes())
    capsys.readouterr()
    win_rates.run(bench_args(tmp_path, resume=True))
    assert f"{first.name} holds rows of other deals: played again" in capsys.readouterr().err


def test_every_summary_entry_identifies_its_chunk(tmp_path):
    folder = win_rates.run(bench_args(tmp_path))
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["fingerprints"] == {"settings": runs.settings_fingerprint(bench_args(tmp_path)),
                                       "code": runs.code_fingerprint()}
    for path in chunk_files(folder):
        check = summary["chunk_checks"][path.name]
        assert check["rows"] == len(path.read_bytes().splitlines()) > 0
        assert check["sha256"] == runs.text_checksum(path.read_bytes().decode())
        assert check["fingerprints"] == summary["fingerprints"]
    other = runs.settings_fingerprint(bench_args(tmp_path, seed=1))
    assert other != summary["fingerprints"]["settings"]


def test_resume_refuses_a_run_begun_under_other_code(tmp_path, monkeypatch):
    folder = win_rates.run(bench_args(tmp_path))
    before = (folder / "results.csv").read_bytes()
    monkeypatch.setattr(runs, "code_fingerprint", lambda: "0123456789abcdef")
    with pytest.raises(ValueError, match="only under the code that began it.*--overwrite"):
        win_rates.run(bench_args(tmp_path, resume=True))
    assert (folder / "results.csv").read_bytes() == before
    win_rates.run(bench_args(tmp_path, overwrite=True))  # playing it again is allowed


def test_the_code_fingerprint_follows_every_source_file(tmp_path, monkeypatch):
    before = runs.code_fingerprint()
    assert before == runs.code_fingerprint()
    real = Path.read_bytes

    def one_file_edited(path):
        data = real(path)
        return data + b"#" if path.name == "greedy.py" else data

    monkeypatch.setattr(Path, "read_bytes", one_file_edited)
    assert runs.code_fingerprint() != before


# ------------------------------------------------------------------------ the lock
@pytest.mark.parametrize("changes", [{}, {"overwrite": True}, {"resume": True}])
def test_a_second_run_into_a_live_folder_is_refused(tmp_path, changes):
    folder = win_rates.run(bench_args(tmp_path))  # a finished run, to resume or overwrite
    live = runs.RunFolder(bench_args(tmp_path, resume=True), win_rates.plan(bench_args(tmp_path)))
    live.open()

    def contents():
        return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}

    before = contents()
    try:
        with pytest.raises(ValueError, match="another run is writing to .*run now"):
            win_rates.run(bench_args(tmp_path, **changes))
        assert contents() == before  # the live run's files untouched
    finally:
        live.close()
    win_rates.run(bench_args(tmp_path, overwrite=True))  # free again once it is over


def test_the_lock_goes_with_the_run_however_it_ends(tmp_path):
    """A run killed with SIGKILL leaves its folder free for --resume."""
    (tmp_path / "run").mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from agents.evaluation import runs\n"
         "from tests.test_resume_checks import bench_args\n"
         "from experiments.win_rates import plan\n"
         f"folder = runs.RunFolder(bench_args({str(tmp_path)!r}), plan(bench_args('.')))\n"
         "folder.open(); print('locked', flush=True); time.sleep(600)"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ValueError, match="another run is writing"):
            win_rates.run(bench_args(tmp_path, resume=True))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        holder.stdout.close()
    win_rates.run(bench_args(tmp_path, resume=True))
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["complete"]


def test_two_command_lines_started_together_never_mix(tmp_path):
    """Two smoor-bench processes into one folder: one plays, the other is one line."""
    command = [sys.executable, "-m", "experiments.win_rates", "--agents", "random", "greedy",
               "--players", "3", "--rule-sets", "smoorverliefd", "--deals", "6", "--chunk", "1",
               "--out-dir", str(tmp_path), "--run-name", "run", "--no-progress", "--no-plots",
               "--overwrite"]
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    deadline = time.time() + 120
    while not (tmp_path / "run" / "summary.json").exists() and time.time() < deadline:
        time.sleep(0.02)
    second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    out, err = first.communicate(timeout=300)
    codes = sorted([first.returncode, second.returncode])
    refused = second.stderr if second.returncode else err
    if codes == [0, 0]:  # the first had finished before the second began: no overlap
        pytest.skip("the first run ended before the second started")
    assert codes == [0, 2], (err, second.stderr)
    assert refused.startswith("smoor-bench: error: another run is writing to")
    assert len(refused.strip().splitlines()) == 1
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["complete"] and summary["chunks_done"] == 6


# -------------------------------------------------------------- files read, named
def test_results_files_that_are_not_rows_name_the_file_and_line(tmp_path):
    folder = win_rates.run(bench_args(tmp_path))
    path = folder / "results.csv"
    lines = path.read_bytes().split(b"\r\n")
    path.write_bytes(b"\r\n".join(lines[:3] + [b"smoorverliefd,3,x"] + lines[3:]))
    with pytest.raises(ValueError, match=r"results.csv, line 4: not a row of results"):
        runs.load_results(folder)
    path.write_bytes(b"\r\n".join(lines[:2] + [b"\xff" + lines[2]] + lines[3:]))
    with pytest.raises(ValueError, match=r"results.csv, line 3: not UTF-8"):
        runs.load_results(folder)
    path.write_bytes(b"a,b\r\n1,2\r\n")
    with pytest.raises(ValueError, match=r"results.csv, line 1: .*header"):
        runs.load_results(folder)


def test_sigterm_within_a_command_is_an_interrupt_and_the_old_handler_comes_back():
    import os

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), runs.sigterm_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises at the next bytecode
    assert signal.getsignal(signal.SIGTERM) is before
