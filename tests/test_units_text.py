"""What the command line and the window print for tolerances and sizes: words and numbers, never
a Python repr ("max ULP None", "sizes {'n': 1000000}" were printed before)."""

from __future__ import annotations

import subprocess
import sys

from workbench.units import format_sizes, format_tolerance


def test_tolerance_and_sizes_read_as_text():
    assert (
        format_tolerance({"rtol": 1e-6, "atol": 0.0, "max_ulp": None}) == "rtol 1e-06, atol 0, max ULP none"
    )
    assert format_tolerance({"rtol": 0, "atol": 0, "max_ulp": 256}) == "rtol 0, atol 0, max ULP 256"
    assert format_tolerance(None) == "rtol none, atol none, max ULP none"
    assert format_sizes({"n": 1000000, "m": 64}) == "n=1000000, m=64"
    assert format_sizes({}) == "none" and format_sizes(None) == "none"


def test_sessions_show_prints_sizes_and_tunables_as_names_and_values(tmp_path, example_copy):
    db = tmp_path / "s.db"
    root = example_copy("saxpy")
    run = [sys.executable, "-m", "workbench", "run", str(root), "--backend", "cpu", "--size", "n=4096"]
    done = subprocess.run([*run, "--db", str(db)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    show = subprocess.run(
        [sys.executable, "-m", "workbench", "sessions", "show", "1", "--db", str(db)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert show.returncode == 0, show.stderr
    line = next(line for line in show.stdout.splitlines() if line.strip().startswith("sizes "))
    assert "sizes n=4096, tunables threads=" in line and "{" not in line, line
