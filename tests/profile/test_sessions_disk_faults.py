"""SQLite's errors named truly, on real file systems: a full tmpfs, a read-only mount, a damaged
page, a lock held by another process, a refused row. "Corrupt" only where the file is.

The mounts need root (`mount -t tmpfs`); where mounting is not permitted those tests skip.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import cli
from tests.waits import HANG_GUARD_S
from workbench.profile.sessions import db_errors
from workbench.profile.sessions.export import render
from workbench.profile.sessions.record import record_report
from workbench.profile.sessions.store import SessionStore, SessionStoreError


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def tmpfs(tmp_path):
    """`mount(size)`: a fresh tmpfs of that size under tmp_path (unmounted at teardown)."""
    points: list[Path] = []

    def mount(size: str, name: str = "fs") -> Path:
        if shutil.which("mount") is None:
            pytest.skip("no mount command here")
        point = tmp_path / name
        point.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"mounting a tmpfs is not permitted here: {done.stderr.strip()}")
        points.append(point)
        return point

    yield mount
    for point in reversed(points):
        subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


def fill_until_full(store: SessionStore, make_report) -> SessionStoreError:
    for seed in range(10_000):
        try:
            record_report(store, make_report(seed=seed, n=2000))
        except SessionStoreError as exc:
            return exc
    raise AssertionError("the tmpfs never filled")


def test_a_full_disk_is_named_full_and_the_database_stays_whole(tmpfs, make_report, tmp_path):
    fs = tmpfs("1m")
    ballast = fs / "ballast"
    ballast.write_bytes(b"\0" * 200_000)
    path = fs / "s.db"
    with SessionStore(path) as store:
        error = fill_until_full(store, make_report)
        assert error.kind == "full" and "is full" in str(error) and "corrupt" not in str(error)
        recorded = store.count()
        assert recorded >= 2 and recorded % 2 == 0  # whole reports only: the failed one rolled back
        assert store.integrity_check() == "ok"
        bundle = json.loads(render(store, "json", None))
    bundle["runs"] = bundle["runs"][:2]  # one report: it fits once the ballast is gone
    for run in bundle["runs"]:
        run["uuid"] = "imported-" + run["uuid"]  # new runs, so the import has to write
    (tmp_path / "bundle.json").write_text(json.dumps(bundle))
    done = cli("sessions", "import", str(tmp_path / "bundle.json"), "--db", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is full" in done.stderr and "corrupt" not in done.stderr, done.stderr
    ballast.unlink()  # space again: the same database takes the import
    done = cli("sessions", "import", str(tmp_path / "bundle.json"), "--db", str(path))
    assert done.returncode == 0, done.stderr
    with SessionStore(path) as store:
        assert store.count() == recorded + 2 and store.integrity_check() == "ok"


def test_kept_outputs_that_do_not_fit_leave_no_temporary_file(tmpfs, make_report):
    class Report:  # a RunReport's shape: results plus output arrays per backend
        def __init__(self, data, n):
            self.project, self.kernel, self.results = data["project"], data["kernel"], data["results"]
            noise = np.random.default_rng(0).random(n).astype(np.float32)  # incompressible
            self.outputs = {"cpu": {"y": noise}, "wgsl": {"y": noise[::-1].copy()}}

    fs = tmpfs("2m")
    with SessionStore(fs / "s.db") as store:
        record_report(store, Report(make_report(), 1000), keep_outputs=True)  # fits
        kept = sorted(p.name for p in store.outputs_dir().iterdir())
        assert len(kept) == 2 and all(name.endswith(".npz") for name in kept)
        free = shutil.disk_usage(fs).free
        with pytest.raises(SessionStoreError, match="cannot keep the output arrays.*No space left") as caught:
            record_report(store, Report(make_report(), 300_000), keep_outputs=True)  # 1.2 MB each
        assert caught.value.kind == "full"
        assert sorted(p.name for p in store.outputs_dir().iterdir()) == kept  # no .npz.tmp, no half run
        assert shutil.disk_usage(fs).free == free
        assert store.count() == 2  # the run that did not fit was not recorded
        record_report(store, make_report())  # and the disk is not left full
        assert store.count() == 4


def test_a_read_only_mount_is_named_read_only_and_still_lists(tmp_path, make_report):
    """The database seen through a read-only bind mount while the window (a store here) has it
    open, then after it closed: never "corrupt", and the file unchanged."""
    data, ro = tmp_path / "data", tmp_path / "ro"
    data.mkdir()
    ro.mkdir()
    window = SessionStore(data / "s.db")
    record_report(window, make_report())
    bundle = render(window, "json", None).replace('"uuid": "', '"uuid": "new-')
    (tmp_path / "bundle.json").write_text(bundle)
    bind = subprocess.run(["mount", "--bind", str(data), str(ro)], capture_output=True, text=True)
    if bind.returncode != 0:
        window.close()
        pytest.skip(f"bind mounts are not permitted here: {bind.stderr.strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True, capture_output=True)
        listed = cli("sessions", "list", "--json", "--db", str(ro / "s.db"))
        assert listed.returncode == 0, listed.stderr
        assert len(json.loads(listed.stdout)["runs"]) == 2
        done = cli("sessions", "import", str(tmp_path / "bundle.json"), "--db", str(ro / "s.db"))
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert "SQLITE_READONLY" in done.stderr and "mounted read-only" in done.stderr, done.stderr
        assert "database itself is fine" in done.stderr and "corrupt" not in done.stderr
        fresh = cli("sessions", "list", "--db", str(ro / "new.db"))
        assert fresh.returncode == 2 and "mounted read-only" in fresh.stderr, fresh.stderr
        window.close()  # the last user: -wal and -shm are gone and SQLite cannot make them there,
        closed = cli("sessions", "list", "--json", "--db", str(ro / "s.db"))  # so it is read as immutable
        assert closed.returncode == 0, closed.stderr
        assert len(json.loads(closed.stdout)["runs"]) == 2
        refused = cli("sessions", "import", str(tmp_path / "bundle.json"), "--db", str(ro / "s.db"))
        assert refused.returncode == 2 and "mounted read-only" in refused.stderr, refused.stderr
        assert "corrupt" not in fresh.stderr + refused.stderr
    finally:
        window.close()
        subprocess.run(["umount", "-l", str(ro)], capture_output=True, check=False)
    with SessionStore(data / "s.db") as store:
        assert store.count() == 2 and store.integrity_check() == "ok"


def test_a_damaged_page_stops_the_write_and_every_later_one(tmp_path, make_report):
    path = tmp_path / "s.db"
    with SessionStore(path) as store:
        for seed in range(60):
            record_report(store, make_report(seed=seed, n=50))
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'runs_project_kernel'").fetchone()[0]
    db.close()
    shutil.copy(path, tmp_path / "copy.db")  # the user's copy from before the damage
    data = bytearray(path.read_bytes())
    start = (root - 1) * page_size
    data[start : start + page_size] = b"\x0d" + b"\xa5" * (page_size - 1)  # garbage mid-file
    path.write_bytes(bytes(data))
    damaged = digest(path)

    first, second = SessionStore(path), SessionStore(path)  # opening reads only the schema page
    try:
        with pytest.raises(SessionStoreError, match="quick check finds it corrupt") as caught:
            record_report(first, make_report(seed=99))  # changed since sealed: checked before writing
        assert caught.value.damaged and caught.value.code.startswith("SQLITE_CORRUPT")
        assert "Page 11" in str(caught.value) and "workbench sessions check" in str(caught.value)
        assert first.damaged() and second.damaged()  # the whole process knows
        for store in (first, second):
            with pytest.raises(SessionStoreError, match="not written: .*corrupt"):
                with store.transaction() as db:
                    db.execute("INSERT INTO sources (hash, files) VALUES ('x', '{}')")  # touches no bad page
        assert first.count() == 120  # reading what is still readable goes on
    finally:
        first.close()
        second.close()
    assert digest(path) == damaged  # nothing more was written into it
    assert (tmp_path / "s.db.damaged").read_text().count("quick check finds it corrupt") == 1

    # The next process does not write into it either, though its write would touch no bad page.
    bundle = tmp_path / "bundle.json"
    with SessionStore(tmp_path / "other.db") as other:
        record_report(other, make_report(seed=7))
        bundle.write_text(render(other, "json", None))
    done = cli("sessions", "import", str(bundle), "--db", str(path))
    assert done.returncode == 2 and "not written" in done.stderr and "s.db.damaged" in done.stderr, (
        done.stderr
    )
    assert "workbench sessions check" in done.stderr
    assert digest(path) == damaged
    checked = cli("sessions", "check", "--db", str(path))
    assert checked.returncode == 1 and "is not sound" in checked.stdout, checked.stdout + checked.stderr
    shutil.copy(tmp_path / "copy.db", path)  # the copy put back
    checked = cli("sessions", "check", "--db", str(path))
    assert checked.returncode == 0 and "the damaged mark was lifted" in checked.stdout, checked.stderr
    assert not (tmp_path / "s.db.damaged").exists()
    done = cli("sessions", "import", str(bundle), "--db", str(path))
    assert done.returncode == 0 and "imported 2 run(s)" in done.stdout, done.stderr


def test_a_lock_held_by_another_process_is_named_a_lock(tmp_path, make_report):
    path = tmp_path / "s.db"
    store = SessionStore(path, timeout_s=0.3)
    record_report(store, make_report())
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys; db = sqlite3.connect(sys.argv[1], isolation_level=None); "
         "db.execute('BEGIN IMMEDIATE'); print('held', flush=True); sys.stdin.read(); db.execute('ROLLBACK')",
         str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SessionStoreError, match="stayed locked by another process for 0.3 s") as caught:
            record_report(store, make_report(seed=1))
        assert caught.value.kind == "locked" and "corrupt" not in str(caught.value)
        holder.stdin.close()
        holder.wait(HANG_GUARD_S)
        record_report(store, make_report(seed=2))  # the lock is gone: the store writes again
        assert store.count() == 4 and store.damaged() is None
    finally:
        store.close()
        if holder.poll() is None:
            holder.kill()
            holder.wait(HANG_GUARD_S)


def test_a_refused_row_is_a_constraint_not_corruption(tmp_path, make_report):
    with SessionStore(tmp_path / "s.db") as store:
        from workbench.profile.sessions.record import result_row

        report = make_report()
        row = result_row(report, report["results"][0], "inv", "no-such-snapshot")
        with pytest.raises(SessionStoreError, match="refused a row.*FOREIGNKEY") as caught:
            store.insert_runs([row], None)  # its snapshot is not in `sources`
        assert caught.value.kind == "constraint" and "corrupt" not in str(caught.value)
        assert store.damaged() is None and store.count() == 0
        record_report(store, report)
        assert store.count() == 2


def test_every_result_code_has_its_own_words(tmp_path):
    """The mapping itself, from real SQLite errors where this machine can make them."""
    cases = []
    try:
        sqlite3.connect(tmp_path / "no" / "such" / "x.db")
    except sqlite3.Error as exc:
        cases.append((exc, "cannot-open", "cannot open"))
    (tmp_path / "notes.txt").write_bytes(b"notes " * 200)
    try:
        sqlite3.connect(tmp_path / "notes.txt").execute("PRAGMA user_version")
    except sqlite3.Error as exc:
        cases.append((exc, "corrupt", "not a SQLite database"))
    db = sqlite3.connect(tmp_path / "ok.db")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    try:
        sqlite3.connect(f"file:{tmp_path / 'ok.db'}?mode=ro", uri=True).execute("INSERT INTO t VALUES (1)")
    except sqlite3.Error as exc:
        cases.append((exc, "read-only", "cannot be written"))
    assert [c[1] for c in cases] == ["cannot-open", "corrupt", "read-only"]
    for exc, kind, words in cases:
        error = db_errors.describe(tmp_path / "x.db", exc)
        assert error.kind == kind and words in str(error) and str(tmp_path / "x.db") in str(error)
        assert ("corrupt" in str(error)) == (kind == "corrupt")
    # Disk I/O errors cannot be provoked on a healthy disk: SQLite's own exception, its code set.
    io = sqlite3.OperationalError("disk I/O error")
    io.sqlite_errorcode, io.sqlite_errorname = 10 | (4 << 8), "SQLITE_IOERR_WRITE"
    error = db_errors.describe(tmp_path / "x.db", io)
    assert error.kind == "io" and "disk I/O error" in str(error) and "corrupt" not in str(error)
    assert "not known to be damaged" in str(error)
