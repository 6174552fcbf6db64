"""A kernel that panics or indexes out of bounds on the cpu backend: its worker aborts (the
profiles build with `panic = "abort"`), and the panic's message and the kernel's file:line reach
the user in `--json` and the run table, not backtrace frames.

Real builds of saxpy copies (the kernel API crate's panic hook, `host/panic_line.rs`) and real
`workbench run` processes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, cli

BODY = "    } else if i < n {\n        y[i] = a * x[i] + y[i];"
#: Kernels that stop: an explicit panic at element 77, a read half the buffer too far (from the
#: first invocation of workgroup 2 on), and one 100 elements too far (from invocation 924, inside
#: workgroup 3's span: the cpu build splits the span's loop where the checks start to fail,
#: `LOOP_FLAGS` in workbench/build/adapters/cpu.py, and the check must still stop it there).
FAULTS = {
    "panic": (
        '    } else if i < n {\n        if i == 77 { panic!("gave up at element {i} of {n}"); }\n'
        "        y[i] = a * x[i] + y[i];",
        'panic!("gave up',
        "gave up at element 77 of 1024",
    ),
    "oob": (
        "    } else if i < n {\n        y[i] = a * x[i + n / 2] + y[i];",
        "x[i + n / 2]",
        "buffer 0: index 1024 is out of bounds (length 1024)",
    ),
    "oob-mid": (
        "    } else if i < n {\n        y[i] = a * x[i + 100] + y[i];",
        "x[i + 100]",
        "buffer 0: index 1024 is out of bounds (length 1024)",
    ),
}


def faulty_copy(tmp_path: Path, fault: str) -> tuple[Path, str]:
    """A copy of saxpy whose plain body holds the fault; the `src/lib.rs:LINE:` it panics at."""
    root = tmp_path / fault
    shutil.copytree(EXAMPLES / "saxpy", root, ignore=shutil.ignore_patterns("target"))
    new, needle, _ = FAULTS[fault]
    path = root / "src" / "lib.rs"
    text = path.read_text()
    assert text.count(BODY) == 1
    text = text.replace(BODY, new)
    path.write_text(text)
    line_no = next(i + 1 for i, s in enumerate(text.splitlines()) if needle in s)
    return root, f"src/lib.rs:{line_no}:"


@pytest.mark.parametrize("fault", ["panic", "oob", "oob-mid"])
def test_a_kernel_panic_reaches_json_and_the_run_table_whole(fault, tmp_path, shared_cache_dir):
    root, where = faulty_copy(tmp_path, fault)
    message = FAULTS[fault][2]
    args = [
        "run",
        root,
        "--backend",
        "cpu",
        "--size",
        "n=1024",
        "--cache-dir",
        shared_cache_dir,
        "--no-record",
    ]
    done = cli(*args, "--json")
    assert done.stdout, done.stderr
    (result,) = json.loads(done.stdout)["results"]
    assert result["status"] == "error"
    found = re.search(
        rf"the kernel panicked at {where}(\d+): (.*) \(the cpu worker died with SIGABRT", result["error"]
    )
    assert found and found[2] == message, result["error"]
    assert "core::panicking" not in result["error"]  # the message, not the frames
    table = cli(*args).stdout
    (row,) = [line for line in table.splitlines() if line.startswith("cpu ")]
    assert f"the kernel panicked at {where}{found[1]}: {message}" in row, table
