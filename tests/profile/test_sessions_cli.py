"""`workbench run` records into the sessions database; `workbench sessions ...` reads it back.

Real runs: the saxpy example on the CPU and on llvmpipe, in child processes as a user runs them.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import cli
from workbench.profile.sessions.store import SessionStore

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "resources" / "examples"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, shared_cache_dir):
    """A saxpy copy run twice (cpu + wgsl), its WGSL edited between the runs, into one database."""
    tmp_path = tmp_path_factory.mktemp("recorded")
    root = tmp_path / "saxpy"
    shutil.copytree(EXAMPLES / "saxpy", root, ignore=shutil.ignore_patterns("target"))
    db = tmp_path / "runs.db"
    common = [
        "--backend",
        "cpu,wgsl",
        "--size",
        "n=4096",
        "--cache-dir",
        str(shared_cache_dir),
        "--db",
        str(db),
    ]
    first = cli("run", str(root), *common)
    assert first.returncode == 0, first.stderr
    assert f"recorded as run(s) #1–#2 in {db}" in first.stderr
    wgsl = root / "reference" / "saxpy.wgsl"
    edited = wgsl.read_text().replace(
        "let i = group * threads + lid.x;", "let i = group * threads + lid.x; // edited"
    )
    assert "// edited" in edited
    wgsl.write_text(edited)
    second = cli("run", str(root), *common, "--json")
    assert second.returncode == 0, second.stderr
    assert "recorded as run(s)" not in second.stdout  # --json output stays one JSON object
    json.loads(second.stdout)
    return db


def test_runs_land_in_the_database_and_list_show_compare_read_them(recorded):
    listed = cli("sessions", "list", "--db", str(recorded), "--json")
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)["runs"]
    assert [(r["id"], r["backend"], r["device"]) for r in runs] == [
        (4, "wgsl", "wgpu:0"), (3, "cpu", "cpu"), (2, "wgsl", "wgpu:0"), (1, "cpu", "cpu")
    ]  # fmt: skip
    for run in runs:
        assert {
            "id",
            "time",
            "project",
            "kernel",
            "backend",
            "device",
            "verified",
            "median_s",
            "iqr_s",
        } <= set(run)
        assert run["kernel"] == "saxpy" and run["median_s"] > 0
    assert runs[0]["verified"] is True
    only = json.loads(cli("sessions", "list", "--db", str(recorded), "--backend", "wgsl", "--json").stdout)[
        "runs"
    ]
    assert [r["id"] for r in only] == [4, 2]
    by_device = json.loads(
        cli("sessions", "list", "--db", str(recorded), "--device", "llvmpipe", "--json").stdout
    )
    assert [r["id"] for r in by_device["runs"]] == [4, 2]

    shown = json.loads(cli("sessions", "show", "4", "--db", str(recorded), "--json").stdout)
    assert shown["detail"]["provenance"]["sizes"] == {"n": 4096}
    assert len(shown["samples_s"]) == shown["n"] > 1
    assert (
        "+    let i = group * threads + lid.x; // edited" in shown["diff"]
    )  # against the previous run of saxpy
    assert shown["toolchain"].startswith("wgpu-py")
    text = cli("sessions", "show", "4", "--db", str(recorded))
    assert "source diff" in text.stdout and "// edited" in text.stdout

    compared = cli("sessions", "compare", "1", "3", "--invocation", "--db", str(recorded), "--json")
    assert compared.returncode == 0, compared.stderr
    rows = json.loads(compared.stdout)["rows"]
    assert {(r["backend"], r["device"]) for r in rows} == {("cpu", "cpu"), ("wgsl", "wgpu:0")}
    for row in rows:
        # One invocation a side and no A/A history: no verdict can be honest.
        assert row["verdict"].startswith("ambiguous (1 invocation: run with --repeat)")
        assert row["outcome"] == "ambiguous" and row["invocations"] == [1, 1]
        assert row["within"]["ci"][0] <= row["within"]["ratio"] <= row["within"]["ci"][1] or row["within"][
            "ratio"
        ] == pytest.approx(row["within"]["ci"][0], rel=0.05)
        assert "per-invocation medians" in row["method"]
        assert row["ratio"] == pytest.approx(row["median_s"] / row["baseline_median_s"])
    table = cli("sessions", "compare", "1", "3", "--invocation", "--db", str(recorded))
    assert "verdict" in table.stdout and "wgpu:0" in table.stdout


def test_exports_and_import_through_the_command_line(recorded, tmp_path):
    db = str(recorded)
    csv_out = cli("sessions", "export", "--format", "csv", "--db", db, "1", "2")
    assert [r["id"] for r in csv.DictReader(io.StringIO(csv_out.stdout))] == ["1", "2"]
    trace_file = tmp_path / "trace.json"
    done = cli("sessions", "export", "--format", "chrome-trace", "-o", str(trace_file), "--db", db)
    assert done.returncode == 0, done.stderr
    events = json.loads(trace_file.read_text())["traceEvents"]
    with SessionStore(recorded) as store:
        total = sum(r["n"] for r in store.list_runs())
    assert len([e for e in events if e["ph"] == "X"]) == total
    bundle = tmp_path / "bundle.json"
    assert cli("sessions", "export", "--format", "json", "-o", str(bundle), "--db", db).returncode == 0
    home = tmp_path / "home.db"
    first = cli("sessions", "import", str(bundle), "--db", str(home))
    assert first.returncode == 0 and "imported 4 run(s)" in first.stdout
    again = cli("sessions", "import", str(bundle), "--db", str(home))
    assert "imported 0 run(s)" in again.stdout and "4 already there" in again.stdout


def test_export_to_a_csv_file_without_format_writes_csv(recorded, tmp_path):
    # `-o runs.csv` alone wrote a JSON bundle into runs.csv (the default format was json whatever
    # the file's name); a name ending in .csv now means CSV, anything else the bundle, as before.
    db = str(recorded)
    runs_csv = tmp_path / "runs.CSV"
    done = cli("sessions", "export", "-o", str(runs_csv), "--db", db, "1", "2")
    assert done.returncode == 0, done.stderr
    assert [r["id"] for r in csv.DictReader(io.StringIO(runs_csv.read_text()))] == ["1", "2"]
    bundle = tmp_path / "runs.out"
    assert cli("sessions", "export", "-o", str(bundle), "--db", db, "1").returncode == 0
    assert [r["id"] for r in json.loads(bundle.read_text())["runs"]] == [1]
    # An explicit --format wins over the name.
    forced = tmp_path / "forced.csv"
    assert cli("sessions", "export", "--format", "json", "-o", str(forced), "--db", db, "1").returncode == 0
    assert json.loads(forced.read_text())["format"] == "workbench-sessions"


def test_bad_input_exits_2_with_a_clear_message(recorded, tmp_path):
    unwritable = cli(
        "sessions",
        "export",
        "--format",
        "csv",
        "-o",
        str(tmp_path / "no" / "such" / "x.csv"),
        "--db",
        str(recorded),
    )
    assert unwritable.returncode == 2
    assert "cannot write" in unwritable.stderr and "x.csv" in unwritable.stderr
    missing = cli("sessions", "show", "99", "--db", str(recorded))
    assert missing.returncode == 2 and "no run #99" in missing.stderr
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all\n")
    refused = cli("sessions", "list", "--db", str(junk))
    assert refused.returncode == 2 and "not a SQLite database" in refused.stderr
    assert junk.read_text() == "not a database at all\n"


def test_no_record_and_the_default_database(example_copy, shared_cache_dir, private_sessions_db):
    root = example_copy("saxpy")
    common = ["run", str(root), "--backend", "cpu", "--size", "n=1024", "--cache-dir", str(shared_cache_dir)]
    assert cli(*common, "--no-record").returncode == 0
    assert not private_sessions_db.exists()
    assert cli(*common).returncode == 0  # default: the data folder ($WB_DATA_DIR in tests)
    with SessionStore(private_sessions_db) as store:
        assert [r["backend"] for r in store.list_runs()] == ["cpu"]
