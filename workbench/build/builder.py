"""One backend of one project: cache lookup, the adapter's build, the artifact folder."""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from workbench.build import cache
from workbench.build.adapters import ADAPTERS, BuildRequest
from workbench.build.adapters.rust_gpu import prebuilt_dir
from workbench.build.artifacts import BUILD_JSON, result_from_build, write_build, write_log
from workbench.build.diagnostics import error
from workbench.build.process import Budget, BuildCancelled, BuildTimeout
from workbench.build.scratch import STAGING_PREFIX, OwnedDir
from workbench.build.toolchains import detect
from workbench.project import Project
from workbench.records import BuildResult, Diagnostic, ToolchainInfo


def default_tunables(project: Project, tunables: dict[str, Any] | None) -> dict[str, Any]:
    """Every kernel's default tunables overridden by the given ones (so defaults hash the same)."""
    merged: dict[str, Any] = {}
    for k in project.manifest.kernels:
        merged.update(k.default_tunables())
    merged.update(tunables or {})
    return merged


def build_backend(
    project: Project,
    backend: str,
    root: Path,
    *,
    tunables: dict[str, Any] | None = None,
    target: str | None = None,
    budget: Budget | None = None,
    on_output: Callable[[str], None] = lambda line: None,
    on_diagnostic: Callable[[Diagnostic], None] = lambda diag: None,
) -> BuildResult:
    """Build (or find in the cache) one backend; never raises for toolchain or source problems."""
    result = _build(project, backend, root, tunables, target, budget, on_output, on_diagnostic, build=True)
    assert result is not None  # building never answers "not cached"
    return result


def cached_result(
    project: Project,
    backend: str,
    root: Path,
    *,
    tunables: dict[str, Any] | None = None,
    target: str | None = None,
) -> BuildResult | None:
    """What `build_backend` would answer without building: the cache's build of the project as it
    is now (its log the one kept then), or why it is skipped or refused; None when it would build."""
    return _build(
        project, backend, root, tunables, target, None, lambda line: None, lambda diag: None, build=False
    )


def _build(project, backend, root, tunables, target, budget, on_output, on_diagnostic, *, build: bool):
    start = time.perf_counter()
    budget = budget or Budget()
    adapter = ADAPTERS[backend]
    toolchain = detect(backend)
    reason = adapter.skip_reason(project)
    if reason:
        return BuildResult(backend, "skipped", hint=reason, toolchain=toolchain.to_dict())
    if not adapter.usable(project, toolchain):
        return BuildResult(backend, "skipped", hint=_missing_hint(toolchain), toolchain=toolchain.to_dict())
    if backend == "rust-gpu" and (prebuilt := prebuilt_dir(project)) is not None:
        toolchain = ToolchainInfo(backend, True, "prebuilt", str(prebuilt))

    def failed(diag: Diagnostic, log: str = "") -> BuildResult:
        on_diagnostic(diag)
        return BuildResult(backend, "error", time.perf_counter() - start, diagnostics=[diag.to_dict()],
                           log=log or diag.rendered, toolchain=toolchain.to_dict())  # fmt: skip

    try:
        resolved = adapter.resolve_target(target)
    except ValueError as exc:
        return failed(error(str(exc), backend))
    said: list[str] = []  # what `prepare` did to the project (placed the kernel API crate)
    problem = adapter.prepare(project, said.append) if build else None  # a lookup writes nothing
    notes = [Diagnostic("note", text, rendered=f"note: {text}", backend=backend) for text in said]
    for note in notes:
        on_output(note.rendered)
        on_diagnostic(note)
    if problem is not None:
        return failed(problem, "\n".join([*(n.rendered for n in notes), problem.rendered]))
    tunables = default_tunables(project, tunables)
    flags = adapter.flags(project, resolved, tunables, toolchain)
    try:
        pre, source_hash, key_info = cache.pre_key(project, backend, toolchain, flags, resolved, tunables,
                                                   adapter.key_inputs(project))  # fmt: skip
    except OSError as exc:
        return failed(error(f"cannot read the project's sources: {exc}", backend))
    recorded = cache.read_inputs(root, backend, pre)
    if recorded is not None:
        hit = _cached(cache.artifact_dir(root, backend, cache.full_key(pre, project, recorded)))
        if hit is not None:
            found = result_from_build(hit[0], hit[1], True, time.perf_counter() - start)
            return _with_notes(found, notes)
    if not build:
        return None

    started_at = time.time()
    # This build's own folders: the staging artifact folder (renamed into the cache at the end)
    # and a scratch folder, each flocked while this process owns it (`scratch.OwnedDir`: a
    # killed build's are swept). Nothing here is shared with a concurrent build.
    owned_staging = OwnedDir(root / "artifacts" / backend, f"{STAGING_PREFIX}{pre[:16]}-")
    staging = owned_staging.path
    owned_scratch = OwnedDir(root / "work", f"{backend}-")
    scratch = owned_scratch.path
    req = BuildRequest(project, backend, toolchain, resolved, flags, tunables, staging,
                       cache.target_dir(root, backend), scratch, budget, on_output, on_diagnostic)  # fmt: skip
    lock = cache.target_lock(root, backend, budget.check) if adapter.shares_target_dir else nullcontext()
    try:
        with lock:
            out = adapter.build(req)
        budget.check()  # a cancel that raced the last line of output still wins
    except BuildCancelled:
        owned_staging.remove()
        return BuildResult(backend, "cancelled", time.perf_counter() - start, log="\n".join(req.log),
                           toolchain=toolchain.to_dict())  # fmt: skip
    except BuildTimeout as exc:
        owned_staging.remove()
        return failed(error(str(exc), backend), "\n".join([*req.log, str(exc)]))
    except OSError as exc:  # a toolchain program vanished, a disk error, ...
        owned_staging.remove()
        return failed(error(f"{backend} build could not run: {exc}", backend), "\n".join(req.log))
    finally:
        owned_scratch.remove()
    diagnostics = [d.to_dict() for d in req.diagnostics]
    log = "\n".join(req.log)
    seconds = time.perf_counter() - start
    if not out.ok:
        owned_staging.remove()
        if not any(d["severity"] == "error" for d in diagnostics):
            diag = error(f"{backend} build failed; see its output", backend, rendered=log[-4000:])
            on_diagnostic(diag)
            diagnostics.append(diag.to_dict())
        return _with_notes(BuildResult(backend, "error", seconds, diagnostics=diagnostics, log=log,
                                       toolchain=toolchain.to_dict(), flags=flags, key=pre,
                                       resources=out.resources), notes)  # fmt: skip
    inputs = cache.describe_inputs(project, out.inputs)
    key = cache.full_key(pre, project, inputs)
    # An input edited while the compiler ran: the artifact may be of the old text. It is returned
    # but never found by a lookup (its key is unique), and the inputs are not recorded.
    watched = cache.describe_inputs(project, [*out.inputs, *project.backend_sources(backend)])
    unsettled = cache.changed_since(project, watched, started_at)
    if unsettled:
        key = f"{key[:48]}-unsettled-{uuid.uuid4().hex[:15]}"
    folder = cache.artifact_dir(root, backend, key)
    data = {
        "project": project.name, "backend": backend, "key": key, "pre_key": pre, "source_hash": source_hash,
        "toolchain": {k: v for k, v in toolchain.to_dict().items() if k in ("backend", "found", "version", "path")},
        "flags": flags, "target": resolved, "tunables": tunables,
        "key_inputs": {**key_info, "files": [e["path"] for e in inputs]},
        "kernels": out.kernels, "resources": out.resources, "diagnostics": diagnostics, **out.extra,
    }  # fmt: skip
    write_build(staging, data)
    write_log(staging, log)
    owned_staging.disown()
    try:
        os.rename(staging, folder)  # atomic: a lookup sees no folder or a finished one
    except OSError:  # the same key was built concurrently: keep the first
        shutil.rmtree(staging, ignore_errors=True)
    if not unsettled:
        cache.write_inputs(root, backend, pre, inputs)
    # The folder's build.json: this build's, or an identical concurrent one's that got there first.
    data = json.loads((folder / BUILD_JSON).read_text())
    built = result_from_build(folder, data, False, seconds, log)
    return _with_notes(built, notes)


def _with_notes(result: BuildResult, notes: list[Diagnostic]) -> BuildResult:
    """`result` with what `prepare` did to this project first (its diagnostics and log), kept out
    of the cache entry, which another copy of the same sources may be served from."""
    if notes:
        result.diagnostics = [*(n.to_dict() for n in notes), *result.diagnostics]
        result.log = "\n".join([*(n.rendered for n in notes), result.log or ""])
    return result


def _missing_hint(toolchain: ToolchainInfo) -> str:
    """A skipped build's hint: what detection did not find (e.g. Rust-CUDA's pinned nightly by
    name), then how to get it (the README's words, `install_hints`)."""
    missing = toolchain.details.get("missing")
    if isinstance(missing, list):
        missing = ", ".join(missing)
    return f"missing {missing}. {toolchain.hint}" if missing and toolchain.hint else toolchain.hint


def _cached(folder: Path) -> tuple[Path, dict[str, Any]] | None:
    """(folder, build.json) of a complete cache entry; a damaged entry is removed (rebuilt)."""
    if not (folder / BUILD_JSON).is_file():
        return None
    try:
        data = json.loads((folder / BUILD_JSON).read_text())
        if all((folder / r["artifact"]).is_file() for r in data["kernels"].values()):
            return folder, data
    except (OSError, ValueError, KeyError, TypeError):
        pass
    shutil.rmtree(folder, ignore_errors=True)
    return None
