"""Check every field of a sessions bundle (or a `workbench run --json` report) before importing it.

A bundle is checked whole before anything is added: one bad field rejects it, and the error names
the field's path and what was expected (`runs[3].timing.median_s: expected a positive number, got
"fast"`). The rules are also what a stored row must satisfy to be shown as valid (`row_problems`),
so one table says what a recorded run may hold (Qt-free).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from workbench.errors import WorkbenchError

#: What a seed may be: SQLite stores it as a signed 64-bit INTEGER.
SEED_LIMIT = 2**63
TIME_PATTERN = re.compile(r"\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-6]\dZ")


class BundleError(WorkbenchError):
    """A field of a bundle or report is not what it must be; `field` is its path."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


def shown(value: Any) -> str:
    """A value as the message shows it (JSON, cut short)."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


Rule = Callable[[Any], str | None]  # the problem with a value ("expected ..."), or None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def optional(rule: Rule) -> Rule:
    return lambda value: None if value is None else rule(value)


def text(value: Any) -> str | None:
    return None if isinstance(value, str) and value else "expected a non-empty string"


def any_text(value: Any) -> str | None:
    return None if isinstance(value, str) else "expected a string"


def boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "expected true or false (a JSON boolean)"


def positive(value: Any) -> str | None:
    return None if _is_number(value) and value > 0 else "expected a positive number"


def not_negative(value: Any) -> str | None:
    return None if _is_number(value) and value >= 0 else "expected a number >= 0"


def count(value: Any) -> str | None:
    return None if _is_int(value) and value >= 0 else "expected an integer >= 0"


def seed(value: Any) -> str | None:
    if _is_int(value) and 0 <= value < SEED_LIMIT:
        return None
    return "expected an integer seed, 0 <= seed < 2**63"


def timestamp(value: Any) -> str | None:
    if isinstance(value, str) and TIME_PATTERN.fullmatch(value):
        return None
    return "expected a UTC time such as 2026-12-01T12:00:00Z"


def samples(value: Any) -> str | None:
    if not isinstance(value, list):
        return "expected a list of positive numbers (seconds)"
    for index, sample in enumerate(value):
        if not (_is_number(sample) and sample > 0):
            return f"expected a list of positive numbers (seconds); element [{index}] is {shown(sample)}"
    return None


def strings(value: Any) -> str | None:
    ok = isinstance(value, list) and all(isinstance(x, str) for x in value)
    return None if ok else "expected a list of strings"


def sizes(value: Any) -> str | None:
    ok = isinstance(value, dict) and all(_is_int(v) and v >= 0 for v in value.values())
    return None if ok else "expected an object of sizes, each an integer >= 0"


def tunables(value: Any) -> str | None:
    ok = isinstance(value, dict) and all(isinstance(v, str | bool) or _is_number(v) for v in value.values())
    return None if ok else "expected an object of tunable values (numbers, strings, booleans)"


def mapping(value: Any) -> str | None:
    return None if isinstance(value, dict) else "expected an object"


#: The fields of a bundle's run and what each must be (every exported field; no others).
RUN_RULES: dict[str, Rule] = {
    "id": optional(count), "uuid": text, "invocation": text, "time": timestamp,
    "time_unix": optional(not_negative), "project": text, "kernel": text, "backend": text,
    "device": text, "device_name": optional(any_text), "status": text, "verified": optional(boolean),
    "is_reference": optional(boolean), "unverified": optional(any_text), "median_s": optional(positive), "iqr_s": optional(not_negative),
    "q1_s": optional(positive), "q3_s": optional(positive), "min_s": optional(positive),
    "max_s": optional(positive), "n": optional(count), "timing_method": optional(any_text),
    "source_hash": optional(any_text), "snapshot_hash": optional(text),
    "prev_snapshot_hash": optional(text), "build_key": optional(any_text),
    "toolchain": optional(any_text), "seed": optional(seed), "registers": optional(count),
    "spills": optional(count), "shared_bytes": optional(count), "error": optional(any_text),
    "outputs": optional(any_text), "flags": optional(strings), "sizes": optional(sizes),
    "tunables": optional(tunables), "ceilings": optional(mapping), "detail": optional(mapping),
    "samples_s": optional(samples),
    "counters": optional(mapping),  # Nsight Compute's record, where the run took counters
    "invalid": optional(strings),  # what the exporting store found poisoned; not imported
}  # fmt: skip

#: The timing fields inside a run's `detail.timing` (and a report result's `timing`).
TIMING_RULES: dict[str, Rule] = {
    "median_s": optional(positive), "iqr_s": optional(not_negative), "min_s": optional(positive),
    "max_s": optional(positive), "n": optional(count), "samples_s": optional(samples),
}  # fmt: skip
#: Parts of `detail` (and of a report's result) that must be objects when present.
DETAIL_PARTS = ("device", "check", "timing", "throughput", "provenance", "resources")
BUNDLE_KEYS = ("format", "version", "exported", "runs", "sources")


def _check(field: str, value: Any, rule: Rule) -> None:
    problem = rule(value)
    if problem is not None:
        raise BundleError(field, f"{problem}, got {shown(value)}")


def _check_parts(where: str, record: dict[str, Any]) -> None:
    for part in DETAIL_PARTS:
        _check(f"{where}.{part}", record.get(part), optional(mapping))
    for key, rule in TIMING_RULES.items():
        _check(f"{where}.timing.{key}", (record.get("timing") or {}).get(key), rule)


def check_run(where: str, run: Any) -> None:
    """One bundle run: an object with known keys, each of its type and range."""
    _check(where, run, mapping)
    unknown = sorted(set(run) - set(RUN_RULES))
    if unknown:
        raise BundleError(f"{where}.{unknown[0]}", f"unknown field (known: {', '.join(RUN_RULES)})")
    for key, rule in RUN_RULES.items():
        if key in ("uuid", "invocation", "time", "project", "kernel", "backend", "device", "status"):
            if key not in run:
                raise BundleError(f"{where}.{key}", "missing (a recorded run always has it)")
        _check(f"{where}.{key}", run.get(key), rule)
    _check_parts(f"{where}.detail", run.get("detail") or {})


def check_bundle(data: dict[str, Any]) -> None:
    """A whole bundle: its keys, version, sources and every run; duplicate run UUIDs refused."""
    unknown = sorted(set(data) - set(BUNDLE_KEYS))
    if unknown:
        raise BundleError(unknown[0], f"unknown field (known: {', '.join(BUNDLE_KEYS)})")
    _check("version", data.get("version", 1), count)
    _check("exported", data.get("exported"), optional(any_text))
    _check("runs", data.get("runs"), lambda v: None if isinstance(v, list) else "expected a list of runs")
    sources = data.get("sources")
    _check("sources", sources, optional(mapping))
    for digest, files in (sources or {}).items():
        ok = isinstance(files, dict) and all(isinstance(v, str) for v in files.values())
        _check(f"sources[{shown(digest)}]", files, lambda _v, ok=ok: None if ok else "expected {path: text}")
    first: dict[str, int] = {}
    for index, run in enumerate(data["runs"]):
        check_run(f"runs[{index}]", run)
        if run["uuid"] in first:
            raise BundleError(
                f"runs[{index}].uuid",
                f"{shown(run['uuid'])} appears twice (first at runs[{first[run['uuid']]}])",
            )
        first[run["uuid"]] = index


#: Report result fields that become row columns, checked where the report holds them.
RESULT_RULES: dict[str, Rule] = {
    "backend": text, "status": text, "verified": optional(boolean), "error": optional(any_text),
}  # fmt: skip
PROVENANCE_RULES: dict[str, Rule] = {
    "project": optional(any_text), "kernel": optional(any_text), "seed": optional(seed),
    "sizes": optional(sizes), "tunables": optional(tunables), "flags": optional(strings),
    "time": optional(timestamp), "source_hash": optional(any_text), "build_key": optional(any_text),
}  # fmt: skip


def check_report(data: dict[str, Any]) -> None:
    """A `workbench run --json` report as an import: every result's fields that are recorded."""
    _check("project", data.get("project"), optional(any_text))
    _check("kernel", data.get("kernel"), optional(any_text))
    _check("seed", data.get("seed"), optional(seed))
    _check("sizes", data.get("sizes"), optional(sizes))
    results = data.get("results")
    _check("results", results, lambda v: None if isinstance(v, list) else "expected a list of results")
    for index, result in enumerate(results):
        where = f"results[{index}]"
        _check(where, result, mapping)
        for key, rule in RESULT_RULES.items():
            _check(f"{where}.{key}", result.get(key), rule)
        _check_parts(where, result)
        for key, rule in PROVENANCE_RULES.items():
            _check(f"{where}.provenance.{key}", (result.get("provenance") or {}).get(key), rule)
        _check(f"{where}.device.spec", (result.get("device") or {}).get("spec"), optional(any_text))
        _check(
            f"{where}.check.is_reference", (result.get("check") or {}).get("is_reference"), optional(boolean)
        )


#: Fields a recorded run always has: a broken one still reads as text.
REQUIRED = ("uuid", "invocation", "time", "project", "kernel", "backend", "device", "status")


def sanitize(row: dict[str, Any], problems: list[str] | None = None) -> dict[str, Any]:
    """A row read from a database, made safe to show: each field that breaks its rule (text where
    a number belongs, a poisoned import of an older workbench) becomes None (text for the fields a
    run always has), and `row["invalid"]` lists what was wrong. Rows without problems are as read."""
    problems = list(problems or ())
    for key, value in row.items():
        rule = RUN_RULES.get(key)
        if rule is None or value is None and key not in REQUIRED:
            continue
        problem = rule(value)
        if problem is None:
            continue
        problems.append(f"{key}: {problem}, got {shown(value)}")
        if key in REQUIRED:
            row[key] = "" if value is None else str(value)
        else:
            row[key] = False if key == "is_reference" else None
    if problems:
        row["invalid"] = problems
    return row
