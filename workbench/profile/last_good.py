"""Last good results: what a failed build or run leaves on screen, marked stale.

A broken build must not throw the previous results away. `LastGood` remembers, per
(backend, device spec), the last result that ran (status "ok", verified or not) with its output
arrays; `merge(report, builds)` returns the report the views show: fresh results where they are
good, and the remembered ones, marked stale, where this cycle's result is an error or missing
because its build failed. A stale result is a copy whose `RunResult.stale` field is set:

    Stale(reason="cpu build error", time="<UTC of the result>", source_hash="…")

so every view (table, plots, details) can dim it and say when and from what source it came
(`result_text.stale_note`); its provenance is the run's own, untouched.
Qt-free; the window's bridge uses it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from workbench.records import Stale


def _key(result: Any) -> tuple[str, str]:
    return result.backend, str((result.device or {}).get("spec", ""))


def _output_key(report: Any, result: Any) -> str | None:
    """Which `report.outputs` key holds this result's arrays (the run service's naming)."""
    outputs = getattr(report, "outputs", {}) or {}
    spec = str((result.device or {}).get("spec", ""))
    for key in (f"{result.backend}@{spec}", result.backend):
        if key in outputs:
            return key
    return None


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


class LastGood:
    """Remember good results; fill a new report's gaps with them, marked stale."""

    def __init__(self) -> None:
        self.results: dict[tuple[str, str], Any] = {}
        self.outputs: dict[tuple[str, str], dict[str, Any]] = {}

    def forget(self) -> None:
        self.results.clear()
        self.outputs.clear()

    def remember(self, report: Any) -> None:
        for result in getattr(report, "results", []) or []:
            if result.status == "ok" and result.stale is None:
                self.results[_key(result)] = result
                key = _output_key(report, result)
                if key is not None:
                    self.outputs[_key(result)] = report.outputs[key]

    def stale_copy(self, key: tuple[str, str], reason: str, fallback: Any = None) -> Any:
        """A copy of the last good result of `key` (else of `fallback`) marked stale."""
        old = self.results.get(key, fallback)
        provenance = old.provenance or {}
        stale = Stale(
            reason=reason,
            time=provenance.get("time") or provenance.get("timestamp") or "",
            source_hash=provenance.get("source_hash") or "",
        )
        return dataclasses.replace(old, stale=stale)

    def merge(self, report: Any, builds: dict[str, Any] | None = None) -> Any:
        """The report to show: this one, with failed or missing rows replaced by stale good ones.

        Remembers the good results of `report` first. `builds` ({backend: BuildResult}) names
        backends whose build failed this cycle: their last good rows come back even when the
        report has no row for them (the live loop runs only what built)."""
        self.remember(report)
        results = []
        outputs = dict(getattr(report, "outputs", {}) or {})
        seen: set[tuple[str, str]] = set()
        for result in getattr(report, "results", []) or []:
            key = _key(result)
            seen.add(key)
            if result.status == "error" and key in self.results:
                results.append(self.stale_copy(key, _first_line(result.error) or "the run failed"))
                self._restore_outputs(outputs, key)
            else:
                results.append(result)
        failed_builds = {
            b: r for b, r in (builds or {}).items() if getattr(r, "status", "") in ("error", "cancelled")
        }
        for key in self.results:
            if key in seen or key[0] not in failed_builds:
                continue
            build = failed_builds[key[0]]
            results.append(self.stale_copy(key, f"{key[0]} build {build.status}"))
            self._restore_outputs(outputs, key)
        return dataclasses.replace(report, results=results, outputs=outputs)

    def all_stale(self, report: Any, reason: str, reasons: dict[str, str] | None = None) -> Any | None:
        """After a cycle that produced no report: the last report's rows, every one stale (they
        no longer show the sources on disk); `reasons` per backend, else `reason`."""
        if report is None:
            return None
        results = [
            r if r.stale is not None else self.stale_copy(_key(r), (reasons or {}).get(r.backend, reason), r)
            for r in getattr(report, "results", []) or []
        ]
        return dataclasses.replace(report, results=results)

    def _restore_outputs(self, outputs: dict[str, Any], key: tuple[str, str]) -> None:
        if key in self.outputs and key[0] not in outputs:
            outputs[key[0]] = self.outputs[key]


def fresh_only(report: Any) -> Any:
    """`report` without its stale rows (they were recorded when they ran), or None when none is left."""
    results = [r for r in getattr(report, "results", []) or [] if r.stale is None]
    if not results:
        return None
    if len(results) == len(report.results):
        return report
    return dataclasses.replace(report, results=results)
