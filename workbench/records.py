"""Plain, serializable records that cross layers and processes: diagnostics, builds, runs.

Every record converts to and from JSON-ready dicts (`to_dict` / `from_dict`), so the command line,
the window, worker processes, a remote GPU host and (later) SQLite profiling sessions share them.
A run result carries its provenance: source hash, toolchain, flags, device and timing method.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


def _to_dict(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj):
        return {f.name: _to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, list | tuple):
        return [_to_dict(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): _to_dict(v) for k, v in obj.items()}
    return obj


def _from_dict(cls: type, data: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


class Record:
    def to_dict(self) -> dict[str, Any]:
        return _to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        return _from_dict(cls, data)


@dataclass
class Diagnostic(Record):
    """One compiler message, located in the project (paths relative to the project root)."""

    severity: str  # "error" | "warning" | "note" | "help"
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    code: str | None = None
    rendered: str = ""
    backend: str = ""


@dataclass
class ToolchainInfo(Record):
    """What `detect()` found for one backend's toolchain."""

    backend: str
    found: bool
    version: str = ""
    path: str = ""
    hint: str = ""  # the exact way to install it, when missing
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class BuildResult(Record):
    """The outcome of building one backend of one project."""

    backend: str
    status: str  # "ok" | "error" | "skipped" | "cancelled"
    seconds: float = 0.0
    cached: bool = False
    artifacts: list[str] = field(default_factory=list)  # absolute paths
    diagnostics: list[dict[str, Any]] = field(default_factory=list)  # Diagnostic.to_dict()
    resources: dict[str, Any] = field(default_factory=dict)  # entry -> registers/spills/...
    hint: str = ""
    log: str = ""  # the toolchain's text output, always kept
    key: str = ""  # content-addressed cache key
    artifact_dir: str = ""  # folder holding artifacts + build.json
    toolchain: dict[str, Any] = field(default_factory=dict)  # ToolchainInfo.to_dict()
    flags: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The shape `workbench build --json` prints for one backend."""
        return {
            "backend": self.backend,
            "status": self.status,
            "seconds": round(self.seconds, 4),
            "cached": self.cached,
            "artifacts": self.artifacts,
            "diagnostics": self.diagnostics,
            "resources": self.resources,
            "hint": self.hint,
        }


@dataclass
class TimingStats(Record):
    median_s: float
    iqr_s: float
    min_s: float
    max_s: float
    n: int
    samples_s: list[float]
    method: str  # "cuda-events" | "wgpu-timestamps" | "wall-clock" ...
    resolution_s: float
    batch: int = 1  # launches per sample (each sample is already divided by it)
    warmup: int = 0


@dataclass
class RunResult(Record):
    """One kernel on one backend on one device: outcome, check, timing and provenance."""

    backend: str
    device: dict[str, Any]
    status: str  # "ok" | "error" | "skipped"
    verified: bool | None = None
    check: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, Any] | None = None  # TimingStats.to_dict()
    throughput: dict[str, Any] = field(default_factory=dict)  # gbps, gflops, fraction_of_peak
    error: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    # source_hash, build_key, toolchain, flags, kernel, sizes, tunables, seed, timing method, time
