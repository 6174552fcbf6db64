"""Nothing overwrites or poisons a sessions database: exports onto a database, hostile bundles,
rows already poisoned, bad `--seed` / `--timeout`. Real `workbench` processes on real SQLite files."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import cli
from workbench.profile.sessions.export import ExportError, render, write_text
from workbench.profile.sessions.record import record_report
from workbench.profile.sessions.sources import snapshot_hash
from workbench.profile.sessions.store import SessionStore

REPO = Path(__file__).resolve().parents[2]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def recorded_db(tmp_path, make_report) -> Path:
    """Two recorded runs of two results each, with their source snapshots."""
    path = tmp_path / "runs.db"
    with SessionStore(path) as store:
        for seed, text in ((1, "fn a() {}\n"), (2, "fn b() {}\n")):
            files = {"src/lib.rs": text}
            record_report(store, make_report(seed=seed, n=20), snapshot=(snapshot_hash(files), files))
    return path


# ---------------------------------------------------------------- exports never replace a database
def test_export_onto_its_own_database_is_refused_and_the_database_kept(recorded_db, tmp_path):
    before = digest(recorded_db)
    for fmt in ("csv", "json", "chrome-trace"):
        done = cli("sessions", "export", "--format", fmt, "--db", str(recorded_db), "-o", str(recorded_db))
        assert done.returncode == 2, done.stderr
        assert "refusing to export over" in done.stderr and "sessions database open here" in done.stderr
        assert "Traceback" not in done.stderr
    (tmp_path / "link.db").symlink_to(recorded_db)  # the same file by another name
    done = cli("sessions", "export", "--db", str(recorded_db), "-o", str(tmp_path / "link.db"))
    assert done.returncode == 2 and "refusing" in done.stderr
    assert digest(recorded_db) == before
    with SessionStore(recorded_db) as store:
        assert store.count() == 4 and store.integrity_check() == "ok"


def test_export_onto_another_sqlite_file_or_a_wal_is_refused(recorded_db, tmp_path):
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE contacts (name TEXT)")
    db.commit()
    db.close()
    before = digest(other)
    done = cli("sessions", "export", "--format", "csv", "--db", str(recorded_db), "-o", str(other))
    assert done.returncode == 2 and "it is a SQLite database" in done.stderr, done.stderr
    assert digest(other) == before
    with SessionStore(recorded_db) as store:
        with pytest.raises(ExportError, match="refusing to export over"):  # its log while it is open
            write_text(f"{recorded_db}-wal", render(store, "csv", None))
        assert Path(f"{recorded_db}-wal").exists()
    # An earlier export (not a database) is replaced only when asked to.
    target = tmp_path / "runs.csv"
    target.write_text("old export\n")
    done = cli("sessions", "export", "--format", "csv", "--db", str(recorded_db), "-o", str(target))
    assert done.returncode == 2 and "pass --overwrite to replace it" in done.stderr, done.stderr
    assert target.read_text() == "old export\n"
    done = cli(
        "sessions", "export", "--format", "csv", "--db", str(recorded_db), "-o", str(target), "--overwrite"
    )
    assert done.returncode == 0, done.stderr
    assert target.read_text().startswith("id,uuid,")
    assert sorted(p.name for p in tmp_path.iterdir() if ".tmp" in p.name) == []


# ---------------------------------------------------------------- hostile bundles
def _set(path: str, value):
    """A mutation that sets the value at a dotted path (`runs.0.median_s`)."""

    def mutate(bundle):
        *parents, last = path.split(".")
        node = bundle
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _delete(path: str):
    def mutate(bundle):
        *parents, last = path.split(".")
        node = bundle
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        del node[last]

    return mutate


def _duplicate_uuid(bundle):
    bundle["runs"][1]["uuid"] = bundle["runs"][0]["uuid"]


def _unknown_snapshot(bundle):
    bundle["runs"][2]["snapshot_hash"] = "f" * 64


def _as_report(bundle):
    """Replace the bundle by a `workbench run --json` report with a poisoned timing."""
    bundle.clear()
    bundle.update({
        "project": "demo", "kernel": "saxpy",
        "results": [{"backend": "cpu", "status": "ok", "verified": None, "device": {"spec": "cpu"},
                     "timing": {"median_s": "fast", "samples_s": [1e-3, 2e-3]}, "provenance": {}}],
    })  # fmt: skip


def _report_seed(bundle):
    _as_report(bundle)
    bundle["results"][0]["timing"]["median_s"] = 1e-3
    bundle["results"][0]["provenance"]["seed"] = 2**64


#: (mutation of a good bundle, the field path the error must name, a word of what was expected)
HOSTILE = [
    (_set("runs.3.median_s", "fast"), "runs[3].median_s", "positive number"),
    (_set("runs.3.detail.timing.median_s", "fast"), "runs[3].detail.timing.median_s", "positive number"),
    (_set("runs.0.verified", "no"), "runs[0].verified", "JSON boolean"),
    (_set("runs.0.is_reference", 1), "runs[0].is_reference", "JSON boolean"),
    (_set("runs.0.samples_s.3", float("nan")), "runs[0].samples_s", "element [3] is NaN"),
    (_set("runs.0.samples_s.0", -1.0), "runs[0].samples_s", "element [0] is -1.0"),
    (_set("runs.1.median_s", -0.001), "runs[1].median_s", "positive number"),
    (_set("runs.1.median_s", float("inf")), "runs[1].median_s", "positive number"),
    (_set("runs.1.iqr_s", float("nan")), "runs[1].iqr_s", "number >= 0"),
    (_set("runs.0.n", 2.5), "runs[0].n", "integer"),
    (_set("runs.0.n", True), "runs[0].n", "integer"),
    (_set("runs.0.seed", 2**63), "runs[0].seed", "2**63"),
    (_set("runs.0.seed", -1), "runs[0].seed", "2**63"),
    (_set("runs.0.registers", -3), "runs[0].registers", "integer >= 0"),
    (_set("runs.0.colour", "red"), "runs[0].colour", "unknown field"),
    (_delete("runs.0.uuid"), "runs[0].uuid", "missing"),
    (_set("runs.0.uuid", 7), "runs[0].uuid", "string"),
    (_set("runs.0.kernel", ""), "runs[0].kernel", "non-empty string"),
    (_set("runs.0.time", "yesterday"), "runs[0].time", "UTC time"),
    (_set("runs.0.time_unix", "now"), "runs[0].time_unix", "number >= 0"),
    (_set("runs.0.sizes", {"n": "big"}), "runs[0].sizes", "integer >= 0"),
    (_set("runs.0.flags", "--release"), "runs[0].flags", "list of strings"),
    (_set("runs.0.tunables", {"block": [1]}), "runs[0].tunables", "tunable values"),
    (_set("runs.0.detail", []), "runs[0].detail", "object"),
    (_set("runs.0.detail.check", "fine"), "runs[0].detail.check", "object"),
    (_set("runs.0", "a run"), "runs[0]", "object"),
    (_set("runs", {"0": {}}), "runs", "list of runs"),
    (_set("sources", []), "sources", "object"),
    (_set("version", "1"), "version", "integer"),
    (_set("extra", 1), "extra", "unknown field"),
    (_duplicate_uuid, "runs[1].uuid", "appears twice"),
    (_unknown_snapshot, "runs[2].snapshot_hash", "neither in the bundle"),
    (_as_report, "results[0].timing.median_s", "positive number"),
    (_report_seed, "results[0].provenance.seed", "2**63"),
]


def test_every_hostile_bundle_is_rejected_whole_naming_the_field(recorded_db, tmp_path):
    with SessionStore(recorded_db) as store:
        good = json.loads(render(store, "json", None))
    assert len(good["runs"]) == 4
    home = tmp_path / "home.db"
    with SessionStore(home) as store:
        record_report(store, {"project": "p", "kernel": "k", "results": []})
    before = digest(home)
    files = []
    for index, (mutate, _field, _word) in enumerate(HOSTILE):
        bundle = copy.deepcopy(good)
        mutate(bundle)
        path = tmp_path / f"hostile-{index}.json"
        path.write_text(json.dumps(bundle))  # NaN and Infinity as Python's json writes them
        files.append(path)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    importers = [
        subprocess.Popen(
            [sys.executable, "-m", "workbench", "sessions", "import", str(path), "--db", str(home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )  # fmt: skip
        for path in files
    ]
    answers = [importer.communicate(timeout=300) for importer in importers]
    for importer, (_out, err), (_mutate, field, word) in zip(importers, answers, HOSTILE, strict=True):
        assert importer.returncode == 2, (field, err)
        assert "Traceback" not in err, err
        assert f": {field}: " in err and word in err and "nothing was imported" in err, (field, err)
    assert digest(home) == before
    with SessionStore(home) as store:
        assert store.count() == 0
    # The good bundle itself imports: the table rejects what is wrong, not everything.
    (tmp_path / "good.json").write_text(json.dumps(good))
    done = cli("sessions", "import", str(tmp_path / "good.json"), "--db", str(home))
    assert done.returncode == 0 and "imported 4 run(s)" in done.stdout, done.stderr


def test_the_example_message_reads_as_documented(recorded_db, tmp_path):
    with SessionStore(recorded_db) as store:
        bundle = json.loads(render(store, "json", None))
    bundle["runs"][3]["detail"]["timing"]["median_s"] = "fast"
    (tmp_path / "b.json").write_text(json.dumps(bundle))
    done = cli("sessions", "import", str(tmp_path / "b.json"), "--db", str(tmp_path / "home.db"))
    assert done.returncode == 2
    assert 'runs[3].detail.timing.median_s: expected a positive number, got "fast"' in done.stderr


# ---------------------------------------------------------------- rows poisoned before the checks
def poison(path: Path) -> None:
    """What an older workbench let a bad bundle store: text for numbers and flags, broken JSON,
    NaN and negative samples."""
    db = sqlite3.connect(path)
    db.execute("UPDATE runs SET median_s = 'fast', n = 'many' WHERE id = 1")
    db.execute("UPDATE runs SET verified = 'no' WHERE id = 2")
    db.execute("UPDATE runs SET flags = 'not json', time = 12345 WHERE id = 3")
    db.execute("UPDATE run_data SET detail = '{{', samples = ? WHERE run_id = 4",
               (np.array([1e-3, np.nan, -2e-3], dtype="<f8").tobytes(),))  # fmt: skip
    db.commit()
    db.close()


def test_poisoned_rows_are_listed_and_shown_as_invalid_never_a_crash(recorded_db):
    poison(recorded_db)
    listed = cli("sessions", "list", "--db", str(recorded_db))
    assert listed.returncode == 0, listed.stderr
    assert (
        "run #1 holds invalid values" in listed.stdout
        and 'median_s: expected a positive number, got "fast"' in listed.stdout
    )
    assert "run #2 holds invalid values" in listed.stdout and "verified" in listed.stdout
    as_json = cli("sessions", "list", "--json", "--db", str(recorded_db))
    assert as_json.returncode == 0, as_json.stderr
    runs = {r["id"]: r for r in json.loads(as_json.stdout)["runs"]}
    assert runs[1]["median_s"] is None and any("median_s" in p for p in runs[1]["invalid"])
    assert runs[2]["verified"] is None and any("verified" in p for p in runs[2]["invalid"])
    assert "invalid" not in runs[4]  # its summary is sound; its detail and samples are not
    for run_id in (1, 2, 3, 4):
        shown = cli("sessions", "show", str(run_id), "--db", str(recorded_db))
        assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
        as_json = cli("sessions", "show", str(run_id), "--json", "--db", str(recorded_db))
        assert as_json.returncode == 0, as_json.stderr
        record = json.loads(as_json.stdout)  # strict JSON: no NaN left in it
        assert record["invalid"], run_id
    with SessionStore(recorded_db) as store:
        run = store.get_run(4)
        assert run["samples_s"] == [1e-3] and run["detail"] == {}
        assert any("2 of 3 samples" in p for p in run["invalid"])
        assert store.get_run(3)["flags"] is None and store.get_run(3)["time"] == "12345"


# ---------------------------------------------------------------- options checked before a run
@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--seed", str(2**63), "0 <= seed < 2**63"),
        ("--seed", "-1", "0 <= seed < 2**63"),
        ("--seed", "ten", "expected an integer"),
        ("--timeout", "nan", "finite number of seconds > 0"),
        ("--timeout", "inf", "finite number of seconds > 0"),
        ("--timeout", "0", "finite number of seconds > 0"),
        ("--timeout", "soon", "expected a number of seconds"),
        ("--timeout", "1e10", "at most 86400 seconds (a day)"),
        ("--timeout", "86401", "at most 86400 seconds (a day)"),
    ],
)
@pytest.mark.parametrize("command", ["run", "tune", "sweep"])
def test_bad_seed_and_timeout_are_usage_errors_naming_the_option(command, option, value, words, tmp_path):
    done = cli(
        command, str(REPO / "resources" / "examples" / "saxpy"), option, value, "--db", str(tmp_path / "s.db")
    )
    assert done.returncode == 2
    assert f"argument {option}: " in done.stderr and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "s.db").exists()  # nothing ran, nothing was recorded


# ---------------------------------------------------------------- files that are not a database
def test_a_short_file_or_a_folder_is_refused_and_left_as_it_was(tmp_path):
    """SQLite takes a 1-byte file for an empty database and would write over it: refused by size."""
    short = tmp_path / "note.txt"
    short.write_bytes(b"x")
    done = cli("sessions", "list", "--db", str(short))
    assert done.returncode == 2 and "is not a SQLite database (1 bytes" in done.stderr, done.stderr
    assert short.read_bytes() == b"x" and sorted(p.name for p in tmp_path.iterdir()) == ["note.txt"]
    done = cli("sessions", "list", "--db", str(tmp_path))
    assert done.returncode == 2 and "is a folder, not a sessions database file" in done.stderr, done.stderr


@pytest.mark.parametrize("what", ["/dev/null", "fifo"])
def test_a_device_or_a_fifo_as_the_database_is_named_as_such(what, tmp_path):
    """SQLite opens /dev/null and a FIFO, then fails with "cannot rollback - no transaction is
    active" or a disk I/O error: the user is told what the path is, for reading and for a run's
    recording alike."""
    path = Path(what)
    if what == "fifo":
        path = tmp_path / "sessions.db"
        os.mkfifo(path)
    kind = "a character device" if what == "/dev/null" else "a FIFO (named pipe)"
    done = cli("sessions", "list", "--db", str(path))
    assert done.returncode == 2, done.stderr
    assert f"{path} is {kind}, not a sessions database file" in done.stderr, done.stderr
    assert "rollback" not in done.stderr and "I/O" not in done.stderr and "Traceback" not in done.stderr
    assert path.is_char_device() if what == "/dev/null" else path.is_fifo()
