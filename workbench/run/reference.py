"""The reference policy: which backend the others are checked against, and what they get when it fails.

The reference is the backend the user chose (`RunService.run(reference=...)`, `--reference`) or,
by default, the kernel's `[kernel.check] reference` (cpu unless the manifest says otherwise). It
never changes by itself: when it cannot build or run, every other backend is reported
"not verified (reference failed)" instead of being checked against whichever backend ran first.
The reference runs first; its first device's outputs are what every other result is compared with
(a second device of the reference backend is compared with the first).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.manifest import Kernel
from workbench.records import NO_CHECK, REFERENCE, UNVERIFIED, CheckRecord, RunResult
from workbench.result_text import REFERENCE_FAILED  # the others' `CheckRecord.unverified`
from workbench.run.verify import check_outputs, health, weakness

PENDING, READY, FAILED = "pending", "ready", "failed"


@dataclass
class ReferencePolicy:
    """The reference of one run and where it stands: pending → ready (outputs kept) or failed."""

    backend: str
    chosen_by: str  # "user" (an explicit choice for this run) | "manifest"
    state: str = PENDING
    outputs: dict[str, np.ndarray] | None = None
    why: str = ""  # the reference's own error when it failed
    weak: dict[str, str] | None = None  # per output buffer, judged once (verify.weakness)

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
            )  # fmt: skip
        if self.outputs is None or self.state == FAILED:
            return None, self.unverified_check(kernel)
        if self.weak is None:
            self.weak = {name: weakness(ref, k.atol) for name, ref in self.outputs.items()}
        return check_outputs(
            outputs, self.outputs, k.rtol, k.atol, k.max_ulp, poisoned, self.backend, weak=self.weak
        )

    def unverified_check(self, kernel: Kernel) -> CheckRecord:
        """The check of a result that had nothing to be compared with."""
        k = kernel.check
        if self.state != FAILED:
            return CheckRecord(role=NO_CHECK)
        return CheckRecord(
            role=UNVERIFIED, reference=self.backend, rtol=k.rtol, atol=k.atol, max_ulp=k.max_ulp,
            note=self.note, unverified=REFERENCE_FAILED,
        )  # fmt: skip


def _first_line(text: str | None) -> str:
    text = (text or "").strip()
    return text.splitlines()[0] if text else ""
