"""Provenance of a run result: what exactly produced it, so a number can be traced and repeated.

`RunResult.provenance` (workbench.records) is the dict `provenance()` returns: the artifact's
source hash and build key, toolchain, flags and target (from its build.json), project and its
folder, kernel, sizes, tunables, seed, device spec, the timing method, batch, warm-up and options,
a UTC time stamp and the workbench version.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from workbench import __version__
from workbench.records import TimingStats


def provenance(
    *,
    build_info: dict[str, Any],
    source_hash: str | None,
    artifact: dict[str, Any] | None,
    project: str,
    kernel: str,
    sizes: dict[str, int],
    tunables: dict[str, int | float],
    seed: int,
    device_spec: str,
    timing_options: dict[str, Any],
    fresh_inputs: bool,
    stats: TimingStats | None = None,
    project_dir: str | None = None,
) -> dict[str, Any]:
    """The provenance dict of one result (`build_info`: the artifact's build.json, or {}).

    `project_dir` is the project's absolute folder: two projects of the same name stay apart.
    """
    return {
        "source_hash": build_info.get("source_hash") or source_hash,
        "build_key": build_info.get("key"),
        "toolchain": build_info.get("toolchain"),
        "flags": build_info.get("flags"),
        "target": build_info.get("target"),
        "artifact": artifact,
        "project": project,
        "project_dir": project_dir,
        "kernel": kernel,
        "sizes": sizes,
        "tunables": tunables,
        "seed": seed,
        "timing_method": stats.method if stats else None,
        "timing_batch": stats.batch if stats else None,
        "timing_warmup": stats.warmup if stats else None,
        "timing_options": timing_options,
        "timing_fresh_inputs": fresh_inputs,
        "device": device_spec,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "workbench": __version__,
    }
