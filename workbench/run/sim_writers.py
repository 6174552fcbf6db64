"""cpu-sim's element → writer: for each element of each output buffer, the invocation (workgroup,
local id) and the Rust line of its last write, and how many invocations wrote it. Asked for per
run (`workbench run --writers`): the verification launch fills one u64 and one u32 per output
element (`gpu_kernel::host::debug::Writers`), the timed launches after it record nothing.
Qt-free: the CLI, the run service and the window read the same records and sentences.

A launch's raw arrays, per output buffer NAME (the worker's launch reply):

    writers.last.NAME   u64: (workgroup linear + 1) << 32 | local linear << 16 | location id (0: none)
    writers.count.NAME  u32: writes by an invocation other than the one before (atomics count each)

and the report's `locations` (location id k + 1 is entry k, `{"file", "line", "column"}`).

What a result keeps (`RunResult.writers`), per buffer: a summary of the whole buffer and the
writers of the elements that matter — the check's mismatches (the first `LIMIT`) and the ones
the user named (`--writers y[3],y[7]`):

    {"y": {"written": 4096, "unwritten": 0, "single": 4096, "several": 0, "max_writers": 1,
           "elements": [{"index": 3, "value": 7.5, "group": [0, 0, 0], "local": [3, 0, 0],
                         "file": "src/lib.rs", "line": 42, "column": 9, "writers": 1}, ...]}}
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError

#: Mismatching elements per buffer whose writers a result keeps (as many as the details view lists).
LIMIT = 100

#: What `--writers` takes, for messages.
FORMAT = "BUF[I][,BUF[I]...] (e.g. y[3],C[1025]); nothing: the check's mismatches only"

_ELEMENT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[\s*(\d+)\s*\]\s*$")


class WritersSpecError(WorkbenchError):
    """A `--writers` value that names no element."""


def parse_elements(text: str) -> list[tuple[str, int]]:
    """`y[3],C[1025]` → [("y", 3), ("C", 1025)]; "" → []."""
    out = []
    for part in re.split(r",(?![^\[]*\])", text or ""):
        if not part.strip():
            continue
        match = _ELEMENT.match(part)
        if match is None:
            raise WritersSpecError(f"--writers {text!r}: {part.strip()!r} is no element; expected {FORMAT}")
        out.append((match.group(1), int(match.group(2))))
    return out


def _coords(linear: int, dims: list[int]) -> list[int]:
    x, y = int(dims[0]), int(dims[1])
    return [linear % x, (linear // x) % y, linear // (x * y)]


def element(
    index: int,
    last: np.ndarray,
    count: np.ndarray,
    locations: list[dict[str, Any]],
    grid: list[int],
    threads: list[int],
) -> dict[str, Any]:
    """The writer of element `index`: workgroup, local id, file/line/column and how many wrote
    it; `{"index", "writers": 0}` for an element no invocation wrote."""
    word = int(last[index])
    out: dict[str, Any] = {"index": int(index), "writers": int(count[index])}
    if word == 0:
        return out
    grid3, threads3 = [*map(int, grid), 1, 1][:3], [*map(int, threads), 1, 1][:3]
    out["group"] = _coords((word >> 32) - 1, grid3)
    out["local"] = _coords((word >> 16) & 0xFFFF, threads3)
    loc = word & 0xFFFF
    place = locations[loc - 1] if 0 < loc <= len(locations) else {}
    out.update({k: place.get(k) for k in ("file", "line", "column")})
    return out


def buffer_summary(last: np.ndarray, count: np.ndarray) -> dict[str, int]:
    """How many elements were written, by one invocation, by several; the most writers of one."""
    written = int(np.count_nonzero(last))
    several = int(np.count_nonzero(count > 1))
    return {
        "written": written,
        "unwritten": int(last.size) - written,
        "single": int(np.count_nonzero(count == 1)),
        "several": several,
        "max_writers": int(count.max()) if count.size else 0,
    }


def located_writers(
    arrays: dict[str, np.ndarray],
    locations: list[dict[str, Any]],
    spec: dict[str, Any],
    outputs: dict[str, np.ndarray] | None,
    reference: dict[str, np.ndarray] | None,
    tolerance: Any,
    named: list[tuple[str, int]],
    crate_dir: Path,
    project_root: Path,
) -> dict[str, Any]:
    """What a result keeps (see the module's docstring): per output buffer its summary and the
    writers of its mismatches (against `reference`, under `tolerance`) and of the `named`
    elements, each with its value in `outputs`, files relative to the project."""
    from workbench.run.sim_findings import locate
    from workbench.run.verify import bad_elements

    fixed = locate({"findings": [{"accesses": [dict(p) for p in locations]}]}, crate_dir, project_root)
    places = fixed["findings"][0]["accesses"]
    grid, threads = spec.get("grid") or [1], spec.get("threads") or [1]
    out: dict[str, Any] = {}
    for name in [k.removeprefix("writers.last.") for k in arrays if k.startswith("writers.last.")]:
        last, count = arrays[f"writers.last.{name}"], arrays[f"writers.count.{name}"]
        indices: list[int] = []
        got = outputs.get(name) if outputs else None
        ref = reference.get(name) if reference else None
        if got is not None and ref is not None and got.shape == ref.shape and tolerance is not None:
            flat = np.flatnonzero(bad_elements(got.reshape(-1), ref.reshape(-1), tolerance, False))
            indices = flat[:LIMIT].tolist()
        for buffer, index in named:
            if buffer == name and index not in indices:
                indices.append(index)
        elements = []
        for index in indices:
            if index >= last.size:
                elements.append({"index": index, "error": f"past the end of {name} ({last.size} elements)"})
                continue
            record = element(index, last, count, places, grid, threads)
            if got is not None:
                record["value"] = got.reshape(-1)[index].item()
            elements.append(record)
        out[name] = {**buffer_summary(last, count), "elements": elements}
    return out


def unknown_buffer(named: list[tuple[str, int]], outputs: list[str]) -> str:
    """Why a named element cannot have a writer ("" when every one can): not an output buffer."""
    for buffer, index in named:
        if buffer not in outputs:
            return f"--writers {buffer}[{index}]: {buffer!r} is not an output buffer (outputs: {', '.join(outputs)})"
    return ""


def sentence(name: str, record: dict[str, Any]) -> str:
    """`y[1234] = 5.0, written by workgroup (4, 0, 0) local (210, 0, 0) at src/lib.rs:42`."""
    from workbench.result_text import ELEMENT_DIGITS

    value = record.get("value")
    head = f"{name}[{record['index']}]"
    if record.get("error"):
        return f"{head}: {record['error']}"
    if isinstance(value, float):
        head += f" = {value:.{ELEMENT_DIGITS}g}"
    elif value is not None:
        head += f" = {value}"
    return f"{head}, {writer_text(record)}"


def writer_text(record: dict[str, Any]) -> str:
    """`written by workgroup (4, 0, 0) local (210, 0, 0) at src/lib.rs:42` (the details view's
    column, the end of `sentence`)."""
    if not record.get("group"):
        return "written by no invocation"
    who = f"workgroup {tuple(record['group'])} local {tuple(record['local'])}"
    text = f"written by {who} at {record.get('file')}:{record.get('line')}"
    writers = int(record.get("writers") or 0)
    if writers > 1:
        text += f" (last of {writers} writes by different invocations)"
    return text


def lines(writers: dict[str, Any]) -> list[str]:
    """Each buffer's summary and its elements' sentences (the CLI prints them under the table)."""
    out = []
    for name, entry in writers.items():
        out.append(
            f"writers of {name}: {entry['written']} elements written ({entry['single']} by one invocation, "
            f"{entry['several']} by several, at most {entry['max_writers']}), {entry['unwritten']} never"
        )
        out += [f"  {sentence(name, record)}" for record in entry.get("elements", [])]
    return out
