"""`workbench debug`'s bad input (issue 40): each mistake is refused with a message naming it,
before anything is built or started; a missing gdb is said in one line with how to get it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import skip_without_debugger
from tests.waits import WORK_GUARD_S


def debug(root: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", "debug", str(root), "--size", "n=4096", *extra],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


@pytest.fixture
def saxpy(example_copy, tmp_path):
    skip_without_debugger(needs_cargo=False)
    return example_copy("saxpy")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--break", "src/lib.rs:45"), "--break needs --invocation WG/LOCAL"),
        (
            ("--invocation", "99:0", "--break", "src/lib.rs:45"),
            "is outside the launch: the grid is (16, 1, 1)",
        ),
        (("--invocation", "0:300", "--break", "src/lib.rs:45"), "workgroups are (256, 1, 1) invocations"),
        (("--invocation", "1:2", "--break", "src/nope.rs:3"), "--break src/nope.rs:3: no file"),
        (("--invocation", "1:2", "--break", "src/lib.rs"), "--break 'src/lib.rs': expected FILE:LINE"),
        (("--watch", "z[3]"), "--watch z[3]: no buffer 'z' (buffers: x, y)"),
        (("--watch", "y(3)"), "--watch 'y(3)': expected BUF[I]"),
        ((), "nothing to stop at"),
    ],
)
def test_bad_input_is_named(saxpy, args, message):
    proc = debug(saxpy, *args)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert not (saxpy / "target").exists()  # refused before any build


def test_a_bad_commands_line_is_named(saxpy, tmp_path):
    commands = tmp_path / "commands"
    commands.write_text("next\n\njump 12\n")
    proc = debug(saxpy, "--watch", "y[3]", "--commands", str(commands))
    assert proc.returncode != 0
    assert (
        "--commands line 3: 'jump 12'; expected one of next, step, finish, continue, barrier or print EXPR"
        in proc.stderr
    )


def test_a_missing_gdb_says_how_to_get_it(saxpy):
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # no gdb there
    proc = debug(saxpy, "--watch", "y[3]", env=env)
    assert proc.returncode != 0
    assert "gdb is not installed: gdb 12 or later: apt-get install gdb (what set-up installs)" in proc.stderr


def test_the_stack_names_each_frame_s_place_without_a_dangling_colon(example_copy, shared_cache_dir):
    # A stop in a `#[lanes]` body on its fibers: the stack ends in the fiber's trampoline, a frame
    # gdb gives no line for; it read `... libreduction.<hash>.debug.so:` with nothing after the colon.
    skip_without_debugger()
    root = example_copy("reduction")
    done = subprocess.run(
        [sys.executable, "-m", "workbench", "debug", str(root), "--size", "n=16384", "--invocation", "3/17",
         "--break", "src/lib.rs:77", "--cache-dir", str(shared_cache_dir)],
        capture_output=True, text=True, timeout=WORK_GUARD_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    frames = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith("#")]
    assert frames and frames[0].endswith("src/lib.rs:77"), done.stdout
    assert not [f for f in frames if f.endswith(":")], frames
