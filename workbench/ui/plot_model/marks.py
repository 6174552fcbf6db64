"""What every plot says about a result besides its numbers, and the order of its series (Qt-free).

One rule for all plots (timing, history, roofline, outputs):

- a *stale* result (kept from an earlier run after a failed build or run, `profile.last_good`) is
  drawn dimmed and named "stale", as the results table dims its row;
- a result whose check *failed* (`verified is False`) is drawn with a red ring and named
  "check failed": its time is real, but of a kernel that computes something else;
- a result that did not run (status "error") has no numbers: it is listed as failed, never drawn
  at an invented value;
- series come in one order whatever order the backends finished in (results stream in as builds
  end, so the report's order changes from run to run): the reference first, then the backend
  table's order (`workbench.backends`), then the device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.backends import BACKENDS
from workbench.result_text import disputed_text

_BACKEND_ORDER = {name: i for i, name in enumerate(BACKENDS)}


@dataclass(frozen=True)
class Marks:
    """How one result is marked in the plots."""

    stale: bool = False
    stale_reason: str = ""
    check_failed: bool = False
    #: A mismatch the reference itself may explain (`CheckRecord.disputed`): not "check failed".
    disputed: str = ""

    @property
    def words(self) -> list[str]:
        """The words a label adds: ["stale", "check failed"] (or "disputed")."""
        marks = (
            ("stale", self.stale),
            ("check failed", self.check_failed),
            ("disputed", bool(self.disputed)),
        )
        return [w for w, on in marks if on]

    def suffix(self) -> str:
        """ " (stale, check failed)" or ""."""
        return f" ({', '.join(self.words)})" if self.words else ""


def marks_of(result: Any) -> Marks:
    stale = getattr(result, "stale", None)  # records.Stale: set by profile.last_good
    disputed = (
        disputed_text(getattr(result, "check", None)) if getattr(result, "verified", None) is False else ""
    )
    return Marks(
        stale=stale is not None,
        stale_reason=stale.reason if stale is not None else "",
        check_failed=getattr(result, "verified", None) is False and not disputed,
        disputed=disputed,
    )


def order_key(backend: str, device: str, reference: str = "") -> tuple:
    """The sort key of a backend × device series: reference, backend table order, device."""
    return (backend != reference, _BACKEND_ORDER.get(backend, len(_BACKEND_ORDER)), backend, device)


def result_order_key(result: Any, reference: str = "") -> tuple:
    device = result.device or {}
    return order_key(result.backend, str(device.get("spec") or device.get("runtime") or ""), reference)


def slot_order_key(slot: str) -> tuple:
    """The key of a sweep's "backend@device" slot (sweeps have no reference row)."""
    backend, _, device = slot.partition("@")
    return order_key(backend, device)


@dataclass(frozen=True)
class Failure:
    """A backend that has no numbers in a report: its build failed, or its run did."""

    backend: str
    device: str  # the device spec; "" when the build failed (no device was reached)
    status: str  # "build error", "build cancelled" or the result's status ("error")
    why: str


def failed_runs(report: Any, builds: dict[str, Any] | None = None) -> list[Failure]:
    """The backends of `report` that did not run, in series order: results with status "error",
    and backends whose build in `builds` ({backend: BuildResult}) failed and that have no result."""
    reference = getattr(report, "reference", "") or ""
    results = getattr(report, "results", None) or ()
    out = [
        Failure(r.backend, str((r.device or {}).get("spec") or ""), r.status, first_line(r.error) or r.status)
        for r in results
        if r.status == "error"
    ]
    ran = {r.backend for r in results}
    for backend, build in (builds or {}).items():
        status = getattr(build, "status", "")
        if status in ("error", "cancelled") and backend not in ran:
            out.append(Failure(backend, "", f"build {status}", _build_error(build) or f"build {status}"))
    return sorted(out, key=lambda f: order_key(f.backend, f.device, reference))


def _build_error(build: Any) -> str:
    """The first error diagnostic of a build, as "file:line: message"."""
    for diagnostic in getattr(build, "diagnostics", None) or ():
        if diagnostic.get("severity", "error") == "error":
            place = ":".join(str(v) for v in (diagnostic.get("file"), diagnostic.get("line")) if v)
            message = first_line(diagnostic.get("message"))
            return f"{place}: {message}" if place else message
    return first_line(getattr(build, "hint", "")) or ""


def first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""
