"""Nothing outside the database is overwritten or read without bound (issue 35): `sessions export -o`
onto a character device, a FIFO, a socket, a symbolic link, a folder or an existing file; `sessions
import` of a device, a FIFO, a file over the size limit, a bundle nested 200,000 deep. Real
`workbench` processes, real special files made here (`mknod` needs root: skipped without it)."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.waits import HANG_GUARD_S
from workbench.profile.sessions.outside_files import MAX_BUNDLE_BYTES, MAX_CONTAINERS, MAX_DEPTH, nesting
from workbench.profile.sessions.record import record_report
from workbench.profile.sessions.store import SessionStore


@pytest.fixture
def db(tmp_path, make_report) -> Path:
    path = tmp_path / "data" / "s.db"
    with SessionStore(path) as store:
        record_report(store, make_report(n=20))
    return path


def _device(path: Path, minor: int) -> Path:
    """A character device node of the kernel's memory driver (1, minor): 7 is /dev/full, 5 /dev/zero."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    except PermissionError:
        pytest.skip("making a device node needs root")
    return path


def _export(db: Path, target: Path, *extra: str):
    return cli("sessions", "export", "--format", "json", "--db", db, "-o", target, *extra, timeout=120)


def _left_no_temp(folder: Path) -> None:
    assert [p.name for p in folder.iterdir() if ".tmp-" in p.name] == []


def test_export_refuses_a_device_a_fifo_a_socket_and_a_folder_leaving_each_as_it_was(db, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    full = _device(out / "full", 7)
    fifo = out / "fifo"
    os.mkfifo(fifo)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(out / "sock"))
    try:
        cases = [
            (full, stat.S_ISCHR, "it is a character device, not a regular file"),
            (fifo, stat.S_ISFIFO, "it is a FIFO (named pipe), not a regular file"),
            (out / "sock", stat.S_ISSOCK, "it is a socket, not a regular file"),
            (out, stat.S_ISDIR, "it is a folder, not a regular file"),
        ]
        for target, is_kind, words in cases:
            before = os.lstat(target)
            for extra in ((), ("--overwrite",)):  # --overwrite never reaches beyond regular files
                done = _export(db, target, *extra)
                assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
                assert f"refusing to write {target}: {words}" in done.stderr, done.stderr
                assert "left untouched" in done.stderr
                after = os.lstat(target)
                assert is_kind(after.st_mode)
                assert (after.st_ino, after.st_rdev, after.st_size) == (
                    before.st_ino,
                    before.st_rdev,
                    before.st_size,
                )
        assert sorted(p.name for p in out.iterdir()) == ["fifo", "full", "sock"]  # nothing else made
    finally:
        sock.close()


def test_export_refuses_a_symbolic_link_and_the_file_it_names_is_kept(db, tmp_path):
    kept = tmp_path / "notes.txt"
    kept.write_text("my notes\n")
    link = tmp_path / "link.json"
    link.symlink_to(kept)
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere.json")
    for target, to in ((link, kept), (dangling, tmp_path / "nowhere.json")):
        for extra in ((), ("--overwrite",)):
            done = _export(db, target, *extra)
            assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
            assert f"refusing to write {target}: it is a symbolic link (to {to})" in done.stderr, done.stderr
            assert target.is_symlink() and os.readlink(target) == str(to)
    assert kept.read_text() == "my notes\n" and not (tmp_path / "nowhere.json").exists()
    _left_no_temp(tmp_path)


def test_export_replaces_an_existing_file_only_with_overwrite(db, tmp_path):
    target = tmp_path / "runs.json"
    target.write_text("an earlier export\n")
    target.chmod(0o640)
    done = _export(db, target)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        f"refusing to write {target}: the file exists and was left untouched — pass --overwrite"
        in done.stderr
    )
    assert target.read_text() == "an earlier export\n"
    done = _export(db, target, "--overwrite")
    assert done.returncode == 0, done.stderr
    bundle = json.loads(target.read_text())
    assert bundle["format"] == "workbench-sessions" and len(bundle["runs"]) == 2
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the replaced file's permissions kept
    fresh = tmp_path / "new.json"
    done = _export(db, fresh)  # a new file needs no permission
    assert done.returncode == 0 and json.loads(fresh.read_text())["runs"] == bundle["runs"], done.stderr
    _left_no_temp(tmp_path)


def test_import_refuses_a_device_and_a_fifo_before_reading(db, tmp_path):
    zero = _device(tmp_path / "zero", 5)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opened for reading, it would wait for a writer for ever
    for source, words in ((zero, "a character device"), (fifo, "a FIFO (named pipe)")):
        done = cli("sessions", "import", source, "--db", db, timeout=HANG_GUARD_S)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert (
            f"refusing to read {source}: it is {words}, not a regular file; nothing was imported"
            in done.stderr
        )
    with SessionStore(db) as store:
        assert store.count() == 2


def test_import_refuses_a_file_over_the_limit_before_reading_it(db, tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as file:  # sparse: no disk used, and nothing that would parse
        file.truncate(MAX_BUNDLE_BYTES + 1)
    done = cli("sessions", "import", big, "--db", db, timeout=HANG_GUARD_S)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"refusing to read {big}: {MAX_BUNDLE_BYTES + 1} bytes, more than the 256 MiB" in done.stderr


def test_import_of_a_bundle_nested_200000_deep_is_a_clear_error(db, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"format": "workbench-sessions", "runs": ' + "[" * 200_000 + "]" * 200_000 + "}")
    done = cli("sessions", "import", deep, "--db", db, timeout=HANG_GUARD_S)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert (
        f"{deep} nests objects and arrays 200001 deep, more than the {MAX_DEPTH} a bundle may" in done.stderr
    )
    with SessionStore(db) as store:
        assert store.count() == 2


def test_import_of_a_bundle_of_too_many_arrays_is_refused_before_parsing(db, tmp_path):
    flat = tmp_path / "flat.json"
    flat.write_text("[" + "[]," * MAX_CONTAINERS + "[]]")  # 24 MB: shallow, but 8 million lists
    done = cli("sessions", "import", flat, "--db", db, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert (
        f"{flat} holds {MAX_CONTAINERS + 2} objects and arrays, more than the {MAX_CONTAINERS}" in done.stderr
    )


def test_nesting_leaves_strings_out_and_a_real_bundle_passes(db, tmp_path):
    assert nesting('{"a": "[[[{\\"[", "b": [[1], {}]}') == (3, 4)
    done = _export(db, tmp_path / "b.json")
    assert done.returncode == 0, done.stderr
    depth, containers = nesting((tmp_path / "b.json").read_text())
    assert 4 <= depth <= MAX_DEPTH // 4 and containers > 2
