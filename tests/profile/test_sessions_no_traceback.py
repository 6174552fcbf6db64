"""No traceback for any input (issue 35): run ids past SQLite's INTEGER, counts out of range, and
`sessions check` on a real read-only bind mount. Real `workbench` processes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import cli
from workbench.profile.sessions.record import record_report
from workbench.profile.sessions.store import SessionStore

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "resources" / "examples" / "saxpy"


@pytest.fixture
def db(tmp_path, make_report) -> Path:
    path = tmp_path / "data" / "s.db"
    with SessionStore(path) as store:
        record_report(store, make_report(n=20))
    return path


@pytest.mark.parametrize(
    "args, option",
    [
        (("show", str(2**63)), "id"),
        (("show", "0"), "id"),
        (("compare", "1", str(2**64)), "run"),
        (("compare", str(-(2**63) - 1), "1"), "baseline"),
        (("export", "1", str(2**63)), "ID"),
    ],
)
def test_a_run_id_outside_sqlites_integers_is_a_usage_error(db, args, option):
    done = cli("sessions", *args, "--db", db, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"argument {option}: expected a run id from 1 to 2**63 - 1" in done.stderr, done.stderr


def test_the_largest_run_id_is_read_as_a_missing_run(db):
    done = cli("sessions", "show", str(2**63 - 1), "--db", db, timeout=120)
    assert done.returncode == 2 and f"no run #{2**63 - 1} in {db}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args, words",
    [
        (("run", SAXPY, "--repeat", "0"), "argument --repeat: expected an integer from 1 to 1000, got 0"),
        (("run", SAXPY, "--repeat", "1e9"), "argument --repeat: expected an integer, got '1e9'"),
        (("tune", SAXPY, "--rounds", str(10**30)), "argument --rounds: expected an integer from 1 to 1000"),
        (("tune", SAXPY, "--budget", "-1"), "argument --budget: expected an integer from 1 to 1000000"),
        (("tune", SAXPY, "--min-effect", "nan"), "argument --min-effect: expected a fraction from 0 up to"),
        (("sessions", "list", "--limit", "-5"), "argument --limit: expected an integer from 0 to"),
    ],
)
def test_counts_out_of_range_are_usage_errors_before_anything_runs(args, words, tmp_path):
    done = cli(*args, "--db", tmp_path / "s.db", timeout=120)
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "s.db").exists()


@pytest.fixture
def read_only_view(tmp_path):
    """`view(folder)`: the folder seen through a real read-only bind mount (unmounted at teardown)."""
    points: list[Path] = []

    def view(folder: Path) -> Path:
        if shutil.which("mount") is None:
            pytest.skip("no mount command here")
        point = tmp_path / f"ro{len(points)}"
        point.mkdir()
        bind = subprocess.run(
            ["mount", "--bind", "-o", "ro", str(folder), str(point)], capture_output=True, text=True
        )
        if bind.returncode != 0:
            pytest.skip(f"bind mounts are not permitted here: {bind.stderr.strip()}")
        points.append(point)
        # Older mount(8) ignores ro on the first call of a bind mount: make sure.
        subprocess.run(["mount", "-o", "remount,bind,ro", str(point)], check=True, capture_output=True)
        return point

    yield view
    for point in reversed(points):
        subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


def test_sessions_check_on_a_read_only_mount_reports_clearly(db, read_only_view, tmp_path):
    folder = db.parent
    (folder / "s.db.damaged").write_text("2026-12-05T00:00:00Z (pid 1): is corrupt\n")
    before = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir())
    ro = read_only_view(folder)
    done = cli("sessions", "check", "--db", ro / "s.db", timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert (
        f"{ro / 's.db'}: ok (2 runs) (on a read-only file system: checked as it is, nothing written)"
        in done.stdout
    )
    assert f"its damaged mark {ro / 's.db.damaged'} could not be removed here" in done.stdout, done.stdout
    (folder / "s.db.damaged").unlink()  # through the writable side
    done = cli("sessions", "check", "--db", ro / "s.db", timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert (
        done.stdout.strip()
        == f"{ro / 's.db'}: ok (2 runs) (on a read-only file system: checked as it is, nothing written)"
    )
    after = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir())
    assert after == [entry for entry in before if entry[0] != "s.db.damaged"]


def test_sessions_check_of_a_damaged_file_on_a_read_only_mount(db, read_only_view):
    data = bytearray(db.read_bytes())
    size = int.from_bytes(data[16:18], "big")
    data[size * 2 : size * 3] = b"\x0d" + b"\xa5" * (size - 1)  # page 3: garbage
    db.write_bytes(bytes(data))
    ro = read_only_view(db.parent)
    done = cli("sessions", "check", "--db", ro / "s.db", timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert f"{ro / 's.db'} is not sound: " in done.stdout
    assert (
        f"it could not be marked damaged ({ro / 's.db.damaged'}) (on a read-only file system" in done.stdout
    )
