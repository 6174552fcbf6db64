"""The reference policy: which backend the others are checked against, and what they get when it fails.

The reference is the backend the user chose (`RunService.run(reference=...)`, `--reference`,
the window's `LiveLoop.reference`) or, by default, the kernel's `[kernel.check] reference` (cpu
unless the manifest says otherwise). It never changes by itself: when it cannot build or run,
every other backend is reported "not verified (reference failed)" instead of being checked
against whichever backend ran first. The policy sets each such check's `unverified`
(`RunResult.reference_failed`) and the service the report's `RunReport.reference_failed`; every
reader uses these fields, none looks for words in a note.
The reference runs first; its first device's outputs are what every other result is compared with
(a second device of the reference backend is compared with the first).

The reference earns its trust (`settle`, once every backend ran): a mismatch is "disputed" rather
than plainly failed when

- the reference's own code has cpu-sim findings: the reference is a crate backend and a cpu-sim
  result of the same sources (same source hash) in this run found races, out-of-bounds accesses,
  …, or `recorded` findings for that source hash are given (from the sessions database);
- or the reference's own outputs are incomplete: elements of an `out` buffer still hold the poison
  (it never wrote them; its check's `first_unwritten` names the first, and its row says so);
- or the reference is outvoted: every other backend that was compared disagrees with it, there are
  at least two of them, and they agree with each other (their outputs compared under the kernel's
  own tolerances; a dissenting backend's outputs are copied for that vote up to `VOTE_BYTES`).

The reason goes into the mismatch's `CheckRecord.disputed` ("the reference (cpu) has 1 race at
src/lib.rs:87", "the reference (cpu) is outvoted by 2 backends"); `result_text` words the verdict
("disputed") for every view.

Two modes. In a run the reference stands for itself (`SELF`): its own result is "reference", never
verified. A tuning sweep asks for the `BASELINE` mode (`ReferencePolicy.against_baseline`, on the
finished report, so a run on a cluster's worker is judged alike): the reference's own result is
checked against its outputs at a baseline setting (the sweep's default configuration, same sizes
and seed), the one verdict the run could not give, so no configuration is ranked unverified. Every
result the run compared keeps its verdict (a second device of the reference backend included);
when the reference fails against the baseline, the results compared with it are "not verified
(reference failed)", never failed: their outputs were held against a wrong one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.backends import RUST_BACKENDS
from workbench.manifest import Kernel
from workbench.records import COMPARED, NO_CHECK, REFERENCE, UNVERIFIED, CheckRecord, RunResult
from workbench.result_text import REFERENCE_FAILED  # the others' `CheckRecord.unverified`
from workbench.run.inputs import POISON_BITS, poison_mask
from workbench.run.sim_findings import summary
from workbench.run.verify import check_outputs, health, weakness

PENDING, READY, FAILED = "pending", "ready", "failed"
#: The reference's modes (module docstring): it stands for itself, or is held to a baseline.
SELF, BASELINE = "self", "baseline"
#: Outputs of a backend that disagrees with the reference are copied for the vote up to this size
#: (a larger dissent is left out of it: no vote rather than gigabytes held).
VOTE_BYTES = 256 << 20


@dataclass
class ReferencePolicy:
    """The reference of one run and where it stands: pending → ready (outputs kept) or failed."""

    backend: str
    chosen_by: str  # "user" (an explicit choice for this run) | "manifest"
    state: str = PENDING
    outputs: dict[str, np.ndarray] | None = None
    why: str = ""  # the reference's own error when it failed
    weak: dict[str, str] | None = None  # per output buffer, judged once (verify.weakness)
    #: Copies of the outputs of the backends that disagreed with the reference (for `settle`).
    dissent: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    #: Backends that disagreed but whose outputs were too large to keep for the vote.
    unkept: set[str] = field(default_factory=set)
    tolerance: tuple[float, float, int | None, tuple[str, ...]] | None = None

    @classmethod
    def for_run(cls, kernel: Kernel, choice: str | None) -> ReferencePolicy:
        if choice:
            return cls(backend=choice, chosen_by="user")
        return cls(backend=kernel.check.reference, chosen_by="manifest")

    @property
    def failed(self) -> bool:
        """The reference produced no outputs: the others are "not verified (reference failed)"
        (`RunReport.reference_failed`)."""
        return self.state == FAILED

    @property
    def note(self) -> str:
        """Why the others are not verified (empty unless the reference failed)."""
        if self.state != FAILED:
            return ""
        return f"reference {self.backend} failed ({self.why}): not verified"

    def after_attempt(self, backend: str, result: RunResult) -> None:
        """After the reference backend's first device ran: ready (outputs stored by `check`, even
        when a later step such as timing failed) or failed."""
        if backend != self.backend or self.state != PENDING:
            return
        if self.outputs is not None:
            self.state = READY
        else:
            self.state = FAILED
            self.why = _first_line(result.error) or result.status

    def no_attempt(self) -> None:
        """The reference backend had no device to run on at all."""
        if self.state == PENDING:
            self.state, self.why = FAILED, "no device to run it on"

    def check(
        self, backend: str, outputs: dict[str, np.ndarray], kernel: Kernel
    ) -> tuple[bool | None, CheckRecord]:
        """(verified, check) of one backend's outputs; the reference's own become the reference."""
        k = kernel.check
        poisoned = tuple(b.name for b in kernel.buffers if b.direction == "out")
        if backend == self.backend and self.state == PENDING:
            self.outputs = outputs  # kept once: the arrays themselves (shared segments), no copy
            self.weak = None
            # The reference's own health: NaNs, infinities, elements it never wrote.
            own = [health(out, check_poison=name in poisoned) for name, out in outputs.items()]
            return None, CheckRecord(
                role=REFERENCE, reference=backend, rtol=k.rtol, atol=k.atol, max_ulp=k.max_ulp,
                is_reference=True,
                nan_count=sum(c["nan_count"] for c in own),
                inf_count=sum(c["inf_count"] for c in own),
                unwritten=sum(c["unwritten"] for c in own),
                first_unwritten=_first_unwritten(outputs, poisoned) if any(c["unwritten"] for c in own) else None,
            )  # fmt: skip
        if self.outputs is None or self.state == FAILED:
            return None, self.unverified_check(kernel)
        if self.weak is None:
            self.weak = {name: weakness(ref, k.atol) for name, ref in self.outputs.items()}
        verified, check = check_outputs(
            outputs, self.outputs, k.rtol, k.atol, k.max_ulp, poisoned, self.backend, weak=self.weak
        )
        if verified is False:
            self.tolerance = (k.rtol, k.atol, k.max_ulp, poisoned)
            if sum(a.nbytes for a in outputs.values()) <= VOTE_BYTES:
                # A copy: a backend's own arrays serve the next backend once it is verified.
                self.dissent[backend] = {name: np.array(a, copy=True) for name, a in outputs.items()}
            else:
                self.unkept.add(backend)
        return verified, check

    def settle(self, results: list[RunResult], recorded: dict[str, Any] | None = None) -> None:
        """Once every backend ran: mark the mismatches the reference itself may explain (module
        docstring) — `recorded`: cpu-sim findings recorded for the reference's sources."""
        reason = self.findings_reason(results, recorded) or self.incomplete(results) or self.outvoted(results)
        self.dissent.clear()
        dispute(results, self.backend, reason)

    def findings_reason(self, results: list[RunResult], recorded: dict[str, Any] | None = None) -> str:
        """ "the reference (cpu) has 1 race at src/lib.rs:87" when cpu-sim found something in the
        reference's own code (this run, same source hash; or `recorded`), else ""."""
        if self.backend not in RUST_BACKENDS:
            return ""  # cpu-sim checks the crate: it says nothing of a WGSL or CUDA C reference
        own = next((r for r in results if r.backend == self.backend), None)
        source = (own.provenance or {}).get("source_hash") if own is not None else None
        for result in results:
            report = result.findings or {}
            if result.backend in RUST_BACKENDS and report.get("findings"):
                if source and (result.provenance or {}).get("source_hash") == source:
                    return _has(self.backend, report)
        return recorded_reason(self.backend, recorded)

    def incomplete(self, results: list[RunResult]) -> str:
        """ "the reference (cpu) never wrote partial[0] (2 elements)" when the reference's own
        outputs still hold the poison somewhere (its check's `first_unwritten`), else ""."""
        own = next((r for r in results if r.backend == self.backend and r.check.is_reference), None)
        first = own.check.first_unwritten if own is not None else None
        if not first:
            return ""
        count = own.check.unwritten
        return (f"the reference ({self.backend}) never wrote {first['buffer']}[{first['index']}] "
                f"({count} element{'s' if count != 1 else ''})")  # fmt: skip

    def outvoted(self, results: list[RunResult]) -> str:
        """ "the reference (cpu) is outvoted by 2 backends" when every other compared backend
        disagrees with it, there are at least two, and they agree with each other; else ""."""
        compared = [
            r for r in results
            if r.status == "ok" and r.verified is not None and r.backend != self.backend
        ]  # fmt: skip
        backends = list(dict.fromkeys(r.backend for r in compared))
        if len(backends) < 2 or any(r.verified is not False for r in compared):
            return ""
        if self.unkept or any(b not in self.dissent for b in backends) or self.tolerance is None:
            return ""
        rtol, atol, max_ulp, poisoned = self.tolerance
        first = self.dissent[backends[0]]
        for other in backends[1:]:
            agree, _ = check_outputs(self.dissent[other], first, rtol, atol, max_ulp, poisoned)
            if not agree:
                return ""
        return f"the reference ({self.backend}) is outvoted by {len(backends)} backends"

    def unverified_check(self, kernel: Kernel) -> CheckRecord:
        """The check of a result that had nothing to be compared with."""
        k = kernel.check
        if self.state != FAILED:
            return CheckRecord(role=NO_CHECK)
        return CheckRecord(
            role=UNVERIFIED, reference=self.backend, rtol=k.rtol, atol=k.atol, max_ulp=k.max_ulp,
            note=self.note, unverified=REFERENCE_FAILED,
        )  # fmt: skip

    # ------------------------------------------------------------------ the BASELINE mode (sweeps)
    @staticmethod
    def own_results(report: Any) -> list[RunResult]:
        """The run's reference result, when it ran: its first device's, the one whose outputs are
        `report.outputs[report.reference]` (a second device of it was compared with that one)."""
        ref = report.reference
        if ref not in report.outputs:
            return []
        return [r for r in report.results if r.backend == ref and r.status == "ok" and r.check.is_reference]

    @staticmethod
    def against_baseline(
        report: Any, kernel: Kernel, baseline: dict[str, np.ndarray] | None, where: str
    ) -> None:
        """Judge a finished run in the `BASELINE` mode (module docstring): the reference's own
        result against `baseline`, its outputs at `where` ("the default configuration {...}");
        `baseline` None: this run is the baseline itself (or the kernel's outputs follow the
        setting, `[kernel.check] outputs_follow_tunables`), so the reference is verified as is."""
        mine = ReferencePolicy.own_results(report)
        if not mine:
            return
        if baseline is None:
            for r in mine:
                r.verified = True
            return
        ref, k = report.reference, kernel.check
        passed, record = check_outputs(
            report.outputs[ref], baseline, k.rtol, k.atol, k.max_ulp, reference_name=f"{ref} at {where}"
        )
        for r in mine:
            r.verified = passed
            r.check = record
        if passed:
            return
        note = (f"reference {ref} failed at this configuration (its output differs from its own at "
                f"{where}): not verified")  # fmt: skip
        for r in report.results:
            if r.check.role == COMPARED and not any(r is m for m in mine):
                r.verified = None
                r.check = CheckRecord(role=UNVERIFIED, reference=ref, rtol=k.rtol, atol=k.atol,
                                      max_ulp=k.max_ulp, note=note, unverified=REFERENCE_FAILED)  # fmt: skip


def _first_unwritten(outputs: dict[str, np.ndarray], poisoned: tuple[str, ...]) -> dict[str, Any] | None:
    """The reference's first element still holding the poison, `{"buffer": ..., "index": ...}`
    (searched only when `health` counted some: the rare case, so a plain scan)."""
    for name, out in outputs.items():
        if name in poisoned and (out.dtype.kind, out.dtype.itemsize) in POISON_BITS:
            where = np.flatnonzero(poison_mask(np.ascontiguousarray(out).reshape(-1)))
            if where.size:
                return {"buffer": name, "index": int(where[0])}
    return None


def _first_line(text: str | None) -> str:
    text = (text or "").strip()
    return text.splitlines()[0] if text else ""


def dispute(results: list[RunResult], reference: str, reason: str) -> None:
    """Every mismatch of a backend other than `reference` reads as disputed for `reason`; a
    reason already given stays (the first evidence found is the one said)."""
    if not reason:
        return
    for result in results:
        check = result.check
        if result.verified is False and isinstance(check, CheckRecord) and result.backend != reference:
            check.disputed = check.disputed or reason


def recorded_reason(reference: str, recorded: dict[str, Any] | None) -> str:
    """The dispute `recorded` cpu-sim findings (a sessions-database row's, for the reference's
    source hash: `profile.sessions.findings_history` looks them up) give a crate reference; ""
    when there are none."""
    if reference not in RUST_BACKENDS or not recorded or not recorded.get("findings"):
        return ""
    return _has(reference, recorded)


def _has(backend: str, report: dict[str, Any]) -> str:
    """ "the reference (cpu) has 1 race at src/lib.rs:87": the findings counted, and the line of
    the first one (its diagnostic's: where cpu-sim points the editor)."""
    diagnostics = report.get("diagnostics") or []
    where = ""
    if diagnostics and diagnostics[0].get("file"):
        where = f" at {diagnostics[0]['file']}:{diagnostics[0].get('line')}"
    return f"the reference ({backend}) has {summary(report) or 'cpu-sim findings'}{where}"
