"""Fixtures for the tuning tests: a private sessions database, one RunService with a short timing
protocol, the command line as a user runs it, and saxpy variants."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import cli
from workbench.run.service import RunService
from workbench.run.timing import TimingOptions

REPO = Path(__file__).resolve().parents[2]

#: Timing protocol kept short: these tests check behaviour, not speed.
FAST_TIMING = TimingOptions(min_n=5, min_time_s=0.02, warmup_max_n=6, warmup_max_s=0.3, max_time_s=2.0)


@pytest.fixture(scope="session")
def tune_service(long_lived):
    """One RunService (and its workers) for the session, with a short timing protocol."""
    service = RunService(timing=FAST_TIMING)
    long_lived.add(service.pool.owned)
    yield service
    service.close()


@pytest.fixture(scope="session")
def workbench_cli(shared_cache_dir):
    """`python -m workbench ARGS` in a child process (`tests.conftest.cli`), once the session's
    build cache is set up."""
    return cli


@pytest.fixture(scope="session")
def break_wgsl_at():
    return _break_wgsl_at


def _break_wgsl_at(root: Path, threads: int) -> None:
    """saxpy's WGSL writes a wrong value when built with `threads` (a failing configuration)."""
    wgsl = root / "reference" / "saxpy.wgsl"
    line = "        y[i] = params.a * x[i] + y[i];"
    text = wgsl.read_text()
    assert line in text
    wgsl.write_text(text.replace(line, line + f"\n        if (threads == {threads}u) {{ y[i] = 0.5; }}"))


@pytest.fixture(scope="session")
def slow_wgsl_at():
    return _slow_wgsl_at


def _slow_wgsl_at(root: Path, threads: int, iterations: int = 2000) -> None:
    """saxpy's WGSL does `iterations` extra sines per element when built with `threads`: still
    correct (the sum never equals 12345 for these inputs, and keeps the loop alive), much slower."""
    wgsl = root / "reference" / "saxpy.wgsl"
    line = "        y[i] = params.a * x[i] + y[i];"
    text = wgsl.read_text()
    assert line in text
    slow = (
        f"\n        if (threads == {threads}u) {{\n            var acc = 0.0;\n"
        f"            for (var k = 0u; k < {iterations}u; k++) {{ acc = sin(acc + f32(k) + x[i]); }}\n"
        "            if (acc == 12345.0) { y[i] = 0.0; }\n        }"
    )
    wgsl.write_text(text.replace(line, line + slow))
