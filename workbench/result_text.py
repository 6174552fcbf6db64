"""How a result reads: its verdict, check line, durations, numbers and stale note (Qt-free).

The one place these texts are written. The command line (`workbench run`, `workbench sessions`),
the results table, the details dialog and the sessions panel all call it, so a result reads the
same in a terminal, in the window and in the sessions database. It reads results by their fields
(duck-typed: a `RunResult`, or a sessions-database row for `row_verdict`) and imports nothing
but `units`, so the records themselves can use it (`RunResult.verdict`).

- Verdict: one word or phrase from the fields (`verdict`): reference, "reference (incomplete)" (a
  reference whose own outputs still hold the poison: `incomplete_text` names the first such
  element in its check line), verified, weak, failed,
  disputed (a mismatch the reference itself may explain: `CheckRecord.disputed`, set by
  `run.reference`), "not verified (<why>)" (`CheckRecord.unverified`, e.g. "reference failed") or
  "not verified"; `verdict_cell` is the same verdict in a table cell ("✓ yes", "✗ no", "⚠ weak",
  "⚠ disputed", …), `verdict_tone` whether it reads good, bad or as a warning, and `check_line`
  opens a disputed mismatch with why ("disputed — the reference (cpu) has 1 race at src/lib.rs:87").
- Numbers: one formatter (`format_number`) and one precision policy: 6 significant digits for what
  is derived from elements (errors, the check line), 9 for an element's own value
  (`ELEMENT_DIGITS`: enough to tell two float32 values apart); GB/s with 2 decimals, a fraction of
  a peak as a percentage with 1, more where a small value needs them (`units.format_fixed`).
- Durations: `units.format_time`, the one duration formatter.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from workbench.units import format_fixed, format_rate, format_time

__all__ = [
    "ELEMENT_DIGITS",
    "REFERENCE_FAILED",
    "REFERENCE_INCOMPLETE",
    "incomplete_text",
    "buffer_lines",
    "cell_of",
    "check_line",
    "DISPUTED",
    "disputed_text",
    "format_gbps",
    "format_number",
    "format_percent",
    "format_time",
    "row_verdict",
    "stale_label",
    "stale_note",
    "TIMING_PENDING",
    "timing_line",
    "verdict",
    "verdict_cell",
    "verdict_tone",
]

#: `CheckRecord.unverified` when the run's reference produced no outputs to compare with (set by
#: `run.reference.ReferencePolicy`); the verdict reads "not verified (reference failed)".
REFERENCE_FAILED = "reference failed"

#: A result's median while its samples are taken (its verdict is shown already: `RunVerified`).
TIMING_PENDING = "timing…"

REFERENCE, VERIFIED, WEAK, FAILED, NOT_VERIFIED = "reference", "verified", "weak", "failed", "not verified"
DISPUTED = "disputed"
#: The verdict of a reference whose own outputs still hold the poison somewhere (it never wrote
#: them): what the others were compared with is incomplete.
REFERENCE_INCOMPLETE = "reference (incomplete)"

#: A verdict in a table cell: a mark that reads at a glance (others show as themselves).
_CELLS = {
    VERIFIED: "✓ yes", FAILED: "✗ no", WEAK: "⚠ weak", NOT_VERIFIED: "—", DISPUTED: "⚠ disputed",
    REFERENCE_INCOMPLETE: "⚠ reference (incomplete)",
}  # fmt: skip
_TONES = {VERIFIED: "good", FAILED: "bad", WEAK: "warn", DISPUTED: "warn", REFERENCE_INCOMPLETE: "warn"}

#: Significant digits of derived numbers (errors, throughput ratios) and of an element's value.
DIGITS = 6
ELEMENT_DIGITS = 9


# ---------------------------------------------------------------------------------------- numbers
def format_number(value: Any, digits: int = DIGITS, missing: str = "") -> str:
    """A float (numpy's too) with `digits` significant digits; an integer (or text) as it is;
    `missing` for None."""
    if value is None:
        return missing
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        return f"{float(value):.{digits}g}"
    return str(value)


def format_gbps(gbps: float | None, missing: str = "") -> str:
    """Bandwidth in GB/s as tables show it ("12.35", "0.00412": never a non-zero "0.00"; no unit:
    the column names it)."""
    return format_rate(gbps, missing)


def format_percent(fraction: float | None, missing: str = "") -> str:
    """A fraction of a peak as a percentage ("41.2 %", "0.0312 %": never a non-zero "0.0 %")."""
    return missing if fraction is None else f"{format_fixed(100 * fraction, 1)} %"


# ---------------------------------------------------------------------------------------- verdict
def verdict(result: Any) -> str:
    """One word or phrase for a result's check: reference, verified, weak, failed, not verified
    (why). It reads the check's fields only (`is_reference`, `weak`, `unverified`), never a note."""
    check = result.check or {}
    if check.get("is_reference"):
        return REFERENCE_INCOMPLETE if check.get("unwritten") else REFERENCE
    if result.verified is False and check.get("disputed"):
        return DISPUTED
    return _verdict(result.verified, bool(check.get("weak")), check.get("unverified"))


def outcome_text(result: Any) -> str:
    """A result's status and check in words, for a heading: `ran, check: failed` (a run that
    completed: never `ok: failed`, which read as the check being fine), `error: not verified`."""
    if result.status == "ok":
        return f"ran, check: {verdict(result)}"
    return f"{result.status}: {verdict(result)}"


def disputed_text(check: Mapping[str, Any] | None) -> str:
    """ "disputed — the reference (cpu) has 1 race at src/lib.rs:87" ("" when not disputed)."""
    why = (check or {}).get("disputed")
    return f"{DISPUTED} — {why}" if why else ""


def incomplete_text(check: Mapping[str, Any] | None) -> str:
    """A reference's own outputs that it did not all write: "incomplete: partial[0] never written
    (2 elements never written)" ("" when it wrote every element)."""
    check = check or {}
    count = check.get("unwritten")
    if not check.get("is_reference") or not count:
        return ""
    first = check.get("first_unwritten") or {}
    where = f"{first['buffer']}[{first['index']}] never written, " if first.get("buffer") else ""
    return f"incomplete: {where}{count} element{'s' if count != 1 else ''} never written"


def row_verdict(run: Mapping[str, Any]) -> str:
    """The verdict of a sessions-database row (its `verified`, `is_reference` and `unverified`
    columns); a run that did not complete reads as its status ("error", "skipped")."""
    if run.get("status") != "ok":
        return str(run.get("status") or "")
    if run.get("is_reference"):
        return REFERENCE
    return _verdict(run.get("verified"), False, run.get("unverified"))


def _verdict(verified: bool | None, weak: bool, unverified: str | None) -> str:
    if verified is True:
        return WEAK if weak else VERIFIED
    if verified is False:
        return FAILED
    return f"{NOT_VERIFIED} ({unverified})" if unverified else NOT_VERIFIED


def verdict_cell(result: Any) -> str:
    """The verdict in a table cell ("✓ yes", "✗ no", "⚠ weak", "reference", "not verified
    (reference failed)", "—"); a result that did not run ok shows its status instead."""
    if result.status != "ok":
        return result.status
    return _CELLS.get(verdict(result), verdict(result))


def cell_of(verdict_text: str) -> str:
    """`verdict_cell` for a verdict already read (a database row's `row_verdict`)."""
    return _CELLS.get(verdict_text, verdict_text)


def verdict_tone(verdict_text: str) -> str:
    """How a verdict reads: "good", "bad", "warn" (weak, or not verified for a reason) or ""."""
    if verdict_text.startswith(f"{NOT_VERIFIED} ("):
        return "warn"
    return _TONES.get(verdict_text, "")


# ---------------------------------------------------------------------------------------- check
def check_line(result: Any) -> str:
    """One line for a result's check: its error when it did not run; the first bad element with
    both values and how many were bad; else the worst error (and why a pass is weak); else the
    check's note (why it could not be verified)."""
    if result.status != "ok":
        return " | ".join(line.strip() for line in (result.error or "").strip().splitlines() if line.strip())
    check = result.check or {}
    incomplete = incomplete_text(check)
    if incomplete:
        return incomplete
    if result.verified is False:
        first = check.get("first_bad") or {}
        index = check.get("first_bad_index", first.get("index"))
        buffer = first.get("buffer")
        where = f"{buffer}[{index}]" if buffer else f"[{index}]"
        if first.get("reference_unwritten"):
            # The reference's "expected" value is its poison: no expectation, and the candidate
            # is not shown wrong by it ("got nan, expected nan" read as if it were).
            got = (
                "never written here either"
                if first.get("unwritten")
                else f"got {format_number(first.get('got'))}"
            )
            text = f"first bad {where}: the reference never wrote it ({got})"
        else:
            text = (
                f"first bad {where}: got {format_number(first.get('got'))}, "
                f"expected {format_number(first.get('expected'))}"
            )
            if first.get("unwritten"):
                text += " (never written)"
        bad = check.get("bad")
        if bad:
            text += f"; {bad} bad element{'s' if bad != 1 else ''}"
        if check.get("unwritten"):
            text += f", {check['unwritten']} never written"
        disputed = disputed_text(check)
        return f"{disputed}; {text}" if disputed else text
    parts = []
    if check.get("max_abs_err") is not None:
        parts.append(f"max abs {format_number(check['max_abs_err'])}")
    if check.get("max_ulp_err") is not None:
        parts.append(f"max {format_number(check['max_ulp_err'])} ULP")
    text = ", ".join(parts)
    if check.get("weak"):
        text = f"{text}; weak: {check['weak']}" if text else f"weak: {check['weak']}"
    return text or str(check.get("note") or "")


def buffer_lines(check: Mapping[str, Any] | None) -> list[str]:
    """Per checked buffer: "y: ok; max abs 1e-07, max rel 2e-07" (or "3 bad; …")."""
    lines = []
    for name, buf in ((check or {}).get("buffers") or {}).items():
        state = "ok" if buf.get("passed") else f"{buf.get('bad', '?')} bad"
        lines.append(
            f"{name}: {state}; max abs {format_number(buf.get('max_abs_err'))}, "
            f"max rel {format_number(buf.get('max_rel_err'))}"
        )
    return lines


def timing_line(timing: Mapping[str, Any] | None) -> str:
    """The timing in one line: "40 samples, wall-clock timer (resolution 1.000 µs), min 2.100 ms, …"."""
    if not timing:
        return ""
    return (
        f"{timing.get('n', '?')} samples, {timing.get('method', '?')} timer "
        f"(resolution {format_time(timing.get('resolution_s'))}), "
        f"min {format_time(timing.get('min_s'))}, max {format_time(timing.get('max_s'))}"
    )


# ---------------------------------------------------------------------------------------- stale
def stale_note(stale: Any) -> str:
    """A kept result's note from its `RunResult.stale`:
    "stale: <reason> — result of 2026-12-01 01:52:10 UTC, source 3f2a1c9d"."""
    when = str(stale.time or "")
    when = when.replace("T", " ").replace("Z", " UTC").strip() if when else "an earlier run"
    source = str(stale.source_hash or "")[:8]
    text = f"stale: {stale.reason or 'the last run failed'} — result of {when}"
    return text + (f", source {source}" if source else "")


def stale_label(stale: Any) -> str:
    """A kept result's status: "stale · 01:52:10" (UTC; `stale_note` names the day and source)."""
    when = str(stale.time or "")
    clock = when.split("T", 1)[1].rstrip("Z") if "T" in when else when
    return f"stale · {clock}" if clock else "stale"
