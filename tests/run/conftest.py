"""Fixtures for the run engine's tests: a shared RunService, saxpy variants with planted faults,
and the command line as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.run.service import RunService
from workbench.run.timing import TimingOptions

REPO = Path(__file__).resolve().parents[2]

#: Timing protocol kept short: these tests check behaviour, not speed.
FAST_TIMING = TimingOptions(min_n=5, min_time_s=0.02, warmup_max_n=6, warmup_max_s=0.3, max_time_s=2.0)

#: The CPU entry's launch of the kernel body in the saxpy example; variants put their fault just before it.
SAXPY_CPU_LOOP = "    k.run(body);"
SAXPY_WGSL_LINE = "        y[i] = params.a * x[i] + y[i];"

NULL_WRITE = "unsafe { core::ptr::write_volatile(core::ptr::null_mut::<f32>(), 1.0) };"
ENDLESS_LOOP = "loop { core::hint::spin_loop(); }"


def fault_on_call(k: int, body: str) -> str:
    """Rust for the saxpy CPU entry: run `body` from the k-th call on (k = 1: every call)."""
    return (
        "    static CALLS: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);\n"
        f"    if CALLS.fetch_add(1, core::sync::atomic::Ordering::Relaxed) + 1 >= {k} {{\n"
        f"        {body}\n"
        "    }\n"
    )


@pytest.fixture
def saxpy_variant(example_copy):
    """A copy of the saxpy example with a fault in its CPU entry (`crash` or `hang`, from call
    `on_call` on) and/or one WGSL line replaced."""

    def make(fault: str | None = None, on_call: int = 1, wgsl_line: str | None = None) -> Path:
        root = example_copy("saxpy")
        if fault is not None:
            # A crate name of its own: cargo shares a target dir between same-named crates and
            # may take another copy's output for fresh (see the run helper's report).
            cargo = root / "Cargo.toml"
            cargo.write_text(
                cargo.read_text().replace('name = "saxpy"', f'name = "saxpy_{fault}{on_call}"', 1)
            )
            body = {"crash": NULL_WRITE, "hang": ENDLESS_LOOP}[fault]
            lib = root / "src" / "lib.rs"
            text = lib.read_text()
            assert SAXPY_CPU_LOOP in text
            lib.write_text(text.replace(SAXPY_CPU_LOOP, fault_on_call(on_call, body) + SAXPY_CPU_LOOP))
        if wgsl_line is not None:
            wgsl = root / "reference" / "saxpy.wgsl"
            text = wgsl.read_text()
            assert SAXPY_WGSL_LINE in text
            wgsl.write_text(text.replace(SAXPY_WGSL_LINE, wgsl_line))
        return root

    return make


@pytest.fixture(scope="session")
def fast_timing() -> TimingOptions:
    return FAST_TIMING


@pytest.fixture(scope="session")
def run_service(long_lived):
    """One RunService (and its workers) for the session, with a short timing protocol."""
    service = RunService(timing=FAST_TIMING)
    long_lived.add(service.pool.owned)  # its workers outlive each test on purpose
    yield service
    service.close()


@pytest.fixture(scope="session")
def workbench_cli():
    """`python -m workbench ARGS` in a child process, as a user runs it."""

    def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "workbench", *args],
            capture_output=True, text=True, timeout=timeout, cwd=REPO, env=dict(os.environ), check=False,
        )  # fmt: skip

    return run
