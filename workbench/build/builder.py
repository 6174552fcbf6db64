"""One backend of one project: cache lookup, the adapter's build, the artifact folder."""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.build import cache
from workbench.build.adapters import ADAPTERS, BuildRequest
from workbench.build.adapters.rust_gpu import prebuilt_dir
from workbench.build.artifacts import BUILD_JSON, result_from_build, write_build
from workbench.build.diagnostics import error
from workbench.build.process import Budget, BuildCancelled, BuildTimeout
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
    start = time.perf_counter()
    budget = budget or Budget()
    adapter = ADAPTERS[backend]
    toolchain = detect(backend)
    reason = adapter.skip_reason(project)
    if reason:
        return BuildResult(backend, "skipped", hint=reason, toolchain=toolchain.to_dict())
    if not adapter.usable(project, toolchain):
        return BuildResult(backend, "skipped", hint=toolchain.hint, toolchain=toolchain.to_dict())
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
    tunables = default_tunables(project, tunables)
    flags = adapter.flags(project, resolved, tunables, toolchain)
    try:
        key, source_hash = cache.build_key(project, backend, toolchain, flags, resolved, tunables,
                                           adapter.key_inputs(project))  # fmt: skip
    except OSError as exc:
        return failed(error(f"cannot read the project's sources: {exc}", backend))
    folder = cache.artifact_dir(root, backend, key)
    if (folder / BUILD_JSON).is_file():
        try:
            data = json.loads((folder / BUILD_JSON).read_text())
            if all((folder / r["artifact"]).is_file() for r in data["kernels"].values()):
                return result_from_build(folder, data, True, time.perf_counter() - start)
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a damaged entry is rebuilt below
        shutil.rmtree(folder, ignore_errors=True)

    staging = folder.parent / f".tmp-{key[:16]}-{uuid.uuid4().hex[:8]}"
    staging.mkdir(parents=True)
    target_dir = cache.target_dir(root, backend)
    target_dir.mkdir(parents=True, exist_ok=True)
    req = BuildRequest(project, backend, toolchain, resolved, flags, tunables, staging, target_dir,
                       budget, on_output, on_diagnostic)  # fmt: skip
    try:
        out = adapter.build(req)
        budget.check()  # a cancel that raced the last line of output still wins
    except BuildCancelled:
        shutil.rmtree(staging, ignore_errors=True)
        return BuildResult(backend, "cancelled", time.perf_counter() - start, log="\n".join(req.log),
                           toolchain=toolchain.to_dict())  # fmt: skip
    except BuildTimeout as exc:
        shutil.rmtree(staging, ignore_errors=True)
        return failed(error(str(exc), backend), "\n".join([*req.log, str(exc)]))
    except OSError as exc:  # a toolchain program vanished, a disk error, ...
        shutil.rmtree(staging, ignore_errors=True)
        return failed(error(f"{backend} build could not run: {exc}", backend), "\n".join(req.log))
    diagnostics = [d.to_dict() for d in req.diagnostics]
    log = "\n".join(req.log)
    seconds = time.perf_counter() - start
    if not out.ok:
        shutil.rmtree(staging, ignore_errors=True)
        if not any(d["severity"] == "error" for d in diagnostics):
            diag = error(f"{backend} build failed; see its output", backend, rendered=log[-4000:])
            on_diagnostic(diag)
            diagnostics.append(diag.to_dict())
        return BuildResult(backend, "error", seconds, diagnostics=diagnostics, log=log,
                           toolchain=toolchain.to_dict(), flags=flags, key=key,
                           resources=out.resources)  # fmt: skip
    data = {
        "project": project.name, "backend": backend, "key": key, "source_hash": source_hash,
        "toolchain": {k: v for k, v in toolchain.to_dict().items() if k in ("backend", "found", "version", "path")},
        "flags": flags, "target": resolved, "tunables": tunables,
        "kernels": out.kernels, "resources": out.resources, "diagnostics": diagnostics, **out.extra,
    }  # fmt: skip
    write_build(staging, data)
    try:
        os.rename(staging, folder)
    except OSError:  # the same key was built concurrently: keep the first
        shutil.rmtree(staging, ignore_errors=True)
    # The folder's build.json: this build's, or an identical concurrent one's that got there first.
    data = json.loads((folder / BUILD_JSON).read_text())
    return result_from_build(folder, data, False, seconds, log)
