"""cpu-sim's findings (races, out-of-bounds indexes, barrier divergence, reads of unwritten
workgroup memory) as the workbench shows them: located in the project, one sentence each, and as
`Diagnostic`s at the Rust line (the build panel's list and the editor's gutter take them like a
compiler's). Qt-free: the CLI, the run service and the window call the same functions.

A finding, as the simulator reports it (`gpu_kernel::host::report`), with `file` paths relative to
the crate's folder (rustc's view) until `locate` makes them relative to the project:

    {"kind": "shared-race", "array": "shared", "slot": 0, "declared": {"file", "line", "column"},
     "index": 128, "count": 25088,
     "accesses": [{"group": [0, 0, 0], "local": [0, 0, 0], "access": "read", "file": "src/lib.rs",
                   "line": 39, "column": 57}, {... "access": "write" ...}]}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.records import Diagnostic

#: The source the window files run findings under (the build panel's backend column, the editor's
#: diagnostics): beside the cpu-sim build's own, replaced by every run that checked.
RUN_SOURCE = "cpu-sim run"

#: Each kind, as a sentence begins (and as the results table counts them: "2 races").
KINDS = {
    "shared-race": "data race on workgroup memory",
    "global-race": "data race on a global buffer",
    "out-of-bounds": "out-of-bounds index",
    "barrier-divergence": "barrier divergence",
    "uninitialized-read": "read of workgroup memory no invocation wrote",
}


def locate(report: dict[str, Any], crate_dir: Path, project_root: Path) -> dict[str, Any]:
    """`report` with every file made relative to the project (absolute when outside it, e.g. the
    kernel API crate's own files)."""
    crate_dir, project_root = Path(crate_dir).resolve(), Path(project_root).resolve()

    def fix(place: dict[str, Any]) -> None:
        name = place.get("file")
        if not isinstance(name, str):
            return
        path = Path(name) if Path(name).is_absolute() else crate_dir / name
        try:
            place["file"] = path.resolve().relative_to(project_root).as_posix()
        except ValueError:
            place["file"] = str(path.resolve())

    for finding in report.get("findings", []):
        for place in [finding.get("declared") or {}, *finding.get("accesses", [])]:
            fix(place)
    return report


def _where(place: dict[str, Any]) -> str:
    return f"{place.get('file')}:{place.get('line')}:{place.get('column')}"


def _who(access: dict[str, Any]) -> str:
    return f"workgroup {tuple(access.get('group', []))} local id {tuple(access.get('local', []))}"


def _element(finding: dict[str, Any]) -> str:
    if finding.get("array") == "buffer":
        name = finding.get("name") or f"buffer {finding.get('buffer')}"
    elif finding.get("array") == "shared":
        name = f"shared array {finding.get('slot')} (declared at {_where(finding.get('declared') or {})})"
    else:
        return ""
    if finding.get("index") is None:
        return name
    text = f"{name}[{finding['index']}]"
    if finding.get("length") is not None:
        text += f" (length {finding['length']})"
    return text


def describe(finding: dict[str, Any]) -> str:
    """One sentence: what, which element, which invocations did what where, how often."""
    kind = finding.get("kind", "")
    accesses = finding.get("accesses", [])
    head = KINDS.get(kind, kind)
    parts = []
    for access in accesses:
        what = access.get("access")
        if what == "barrier":
            parts.append(f"{_who(access)} waits at the barrier at {_where(access)}")
        elif what == "return":
            parts.append(f"{_who(access)} returned without reaching it")
        else:
            parts.append(f"{what} by {_who(access)} at {_where(access)}")
    element = _element(finding)
    text = f"{head}: " + (f"{element}: " if element else "") + "; ".join(parts)
    if kind == "shared-race":
        text += " (no barrier between them)"
    count = int(finding.get("count") or 1)
    if count > 1:
        text += f" [{count} times]"
    return text


def diagnostics(report: dict[str, Any] | None, backend: str = "cpu-sim") -> list[Diagnostic]:
    """One error per finding, at the line of its last write (a race: whichever order the host ran
    the two invocations in, fibers or a `#[lanes]` copy, the same line), else of its last access
    (for divergence: the first barrier)."""
    out = []
    for finding in (report or {}).get("findings", []):
        accesses = finding.get("accesses") or [{}]
        writes = [a for a in accesses if a.get("access") == "write"]
        if finding.get("kind") == "barrier-divergence":
            at = accesses[0]
        else:
            at = writes[-1] if writes else accesses[-1]
        message = describe(finding)
        out.append(
            Diagnostic(
                "error",
                message,
                file=at.get("file"),
                line=at.get("line"),
                column=at.get("column"),
                code=finding.get("kind"),
                rendered=f"error[{finding.get('kind')}]: {message}",
                backend=backend,
            )  # fmt: skip
        )
    return out


def summary(report: dict[str, Any] | None) -> str:
    """The results table's words for the findings: "2 races, 1 out-of-bounds" ("" for none)."""
    if not report:
        return ""
    counts: dict[str, int] = {}
    for finding in report.get("findings", []):
        kind = finding.get("kind", "")
        word = {"shared-race": "race", "global-race": "race", "out-of-bounds": "out-of-bounds",
                "barrier-divergence": "divergence", "uninitialized-read": "unwritten read"}.get(kind, kind)  # fmt: skip
        counts[word] = counts.get(word, 0) + 1
    dropped = int(report.get("dropped") or 0)
    text = ", ".join(
        f"{n} {w}{'s' if n > 1 and w in ('race', 'divergence') else ''}" for w, n in counts.items()
    )
    if dropped:
        text += f" (+{dropped} more)"
    return text


def located(
    report: dict[str, Any], crate_dir: Path, project_root: Path, backend: str = "cpu-sim"
) -> dict[str, Any]:
    """The report as a run result keeps it: files relative to the project, each finding's
    sentence (`message`), and the findings as diagnostics (`Diagnostic.to_dict()`)."""
    report = locate(report, crate_dir, project_root)
    for finding in report.get("findings", []):
        finding["message"] = describe(finding)
    report["diagnostics"] = [d.to_dict() for d in diagnostics(report, backend)]
    return report


def run_diagnostics(report: Any) -> list[dict[str, Any]] | None:
    """The diagnostics of every result of a run (`RunReport`) whose checks ran; None when none ran
    (a run without cpu-sim leaves the last findings standing)."""
    checked = [r for r in getattr(report, "results", []) if getattr(r, "findings", None) is not None]
    if not checked:
        return None
    return [dict(d, backend=RUN_SOURCE) for r in checked for d in r.findings.get("diagnostics", [])]
