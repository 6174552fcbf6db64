"""A project's backends and their own sources (Qt-free): which backends a save affects
(`affected_backends`, the build cache's rule) and, when a check fails, whether the reference's
own sources changed since the last run in which every backend agreed (`AgreementTracker`): then
the failure is the reference's, not the others'.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from workbench.project import Project


def affected_backends(project: Project, path: str | Path | None, backends: list[str]) -> list[str]:
    """The backends among `backends` whose artifacts can change when `path` changes: those whose
    build key reads it (`Project.backend_sources`, the same rule as the cache).

    Only informative (the build cache makes unchanged backends hits anyway): it lets the window
    say what a save will rebuild before the build finishes. Unknown files affect everything.
    """
    if path is None:
        return list(backends)
    path = Path(path)
    if not path.is_absolute():
        path = project.root / path
    path = path.resolve()
    affected = [b for b in backends if path in project.backend_sources(b)]
    return affected or list(backends)


def backend_source_hash(project: Project, backend: str) -> str:
    """A digest of one backend's own sources (its build's inputs less the shared manifest)."""
    digest = hashlib.sha256()
    manifest = project.manifest.path.resolve()
    for path in project.backend_sources(backend):
        if path.resolve() == manifest:
            continue
        digest.update(project.relative(path).encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"<unreadable>")
        digest.update(b"\0")
    return digest.hexdigest()


class AgreementTracker:
    """Remembers each backend's source digest at the last run in which every backend agreed, so
    a failed check can say the reference itself changed instead of blaming the others."""

    def __init__(self) -> None:
        #: backend -> source digest at the last all-agree run (None: no such run yet).
        self.agreed: dict[str, str] | None = None

    def forget(self) -> None:
        self.agreed = None

    def observe(self, project: Project, report: Any) -> dict[str, Any] | None:
        results = [r for r in getattr(report, "results", []) if r.status != "skipped"]
        reference = getattr(report, "reference", "") or ""
        if not results or not reference:
            return None
        backends = {r.backend for r in results} | {reference}
        hashes = {b: backend_source_hash(project, b) for b in backends}
        failed = sorted({r.backend for r in results if r.verified is False})
        reference_ok = any(r.backend == reference and r.status == "ok" for r in results)
        compared = [r for r in results if r.verified is True]
        if reference_ok and compared and not failed and all(r.status == "ok" for r in results):
            self.agreed = hashes
            return None
        if not failed or self.agreed is None or reference not in self.agreed:
            return None
        if hashes[reference] == self.agreed[reference]:
            return None  # the reference is what everyone agreed with: blame stands
        unchanged = [b for b in failed if b in self.agreed and hashes[b] == self.agreed[b]]
        return {
            "reference": reference,
            "message": f"the reference changed: {reference}'s source was edited",
            "failed": failed,
            "unchanged": unchanged,
        }
