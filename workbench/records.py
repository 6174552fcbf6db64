"""Plain, serializable records that cross layers and processes: diagnostics, builds, runs.

Every record converts to and from JSON-ready dicts (`to_dict` / `from_dict`), so the command line,
the window, worker processes, a remote GPU host and (later) SQLite profiling sessions share them.
A run result carries its provenance: source hash, toolchain, flags, device and timing method.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench import result_text
from workbench.result_text import REFERENCE_FAILED
from workbench.units import format_time

_PLAIN = (int, float, str, bool, type(None))


def _to_dict(obj: Any) -> Any:
    if isinstance(obj, Record):
        return obj.to_dict()  # a record nested in another serializes its own way
    if dataclasses.is_dataclass(obj):
        return {f.name: _to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, list | tuple):
        return [x if isinstance(x, _PLAIN) else _to_dict(x) for x in obj]  # samples: many floats
    if isinstance(obj, dict):
        return {str(k): _to_dict(v) for k, v in obj.items()}
    return obj


def _from_dict(cls: type, data: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


class Record:
    def to_dict(self) -> dict[str, Any]:
        return {f.name: _to_dict(getattr(self, f.name)) for f in dataclasses.fields(self)}

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


class _ReadsLikeADict(Mapping):
    """Read access by JSON key (`record["bad"]`, `.get("note")`), so code that reads a result's
    check or timing as the JSON shows it keeps working on the typed record. Reads the fields
    themselves (no copy: a timing's samples can be long, and tables read these per cell)."""

    def _keys(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self))

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


def quartiles(samples: Any) -> tuple[float, float, float]:
    """(q1, median, q3) of samples, numpy's linear interpolation: the one place quartiles are
    computed (`timing.summarize` stores them in `TimingStats`; `timing_quartiles` reads them)."""
    q1, median, q3 = np.percentile(np.asarray(samples, dtype=np.float64), [25, 50, 75])
    return float(q1), float(median), float(q3)


def timing_quartiles(timing: Mapping[str, Any] | None) -> tuple[float | None, float | None]:
    """(q1_s, q3_s) of a timing (a `TimingStats` or its JSON): the stored quartiles; those of its
    samples for a record written before quartiles were stored; (None, None) without samples."""
    timing = timing or {}
    q1, q3 = timing.get("q1_s"), timing.get("q3_s")
    if q1 is not None and q3 is not None:
        return float(q1), float(q3)
    samples = timing.get("samples_s")
    if samples is None or not len(samples):
        return None, None
    q1, _, q3 = quartiles(samples)
    return q1, q3


@dataclass(eq=False)
class TimingStats(Record, _ReadsLikeADict):
    """The timing of one backend on one device (seconds per launch); `iqr_s` is `q3_s - q1_s`."""

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
    #: What the measurement ran under: cache policy, clocks, energy (worker.py, `measure`).
    conditions: dict[str, Any] | None = None
    #: The quartiles (None only in a record made before they were kept: `timing_quartiles`).
    q1_s: float | None = None
    q3_s: float | None = None

    #: The keys `workbench run --json` shows (batch and warm-up are in the provenance).
    JSON_KEYS = (
        "median_s",
        "iqr_s",
        "q1_s",
        "q3_s",
        "min_s",
        "max_s",
        "n",
        "samples_s",
        "method",
        "resolution_s",
        "conditions",
    )

    def to_json(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.JSON_KEYS}

    def __repr__(self) -> str:
        return (
            f"TimingStats(median {format_time(self.median_s)}, IQR {format_time(self.iqr_s)}, n {self.n}, "
            f"{self.method})"
        )


#: CheckRecord roles: what the record is the check of.
REFERENCE, COMPARED, UNVERIFIED, NO_CHECK = "reference", "compared", "unverified", "none"

#: The key order of each role's JSON (the shape `workbench run --json` has always had).
_CHECK_KEYS = {
    REFERENCE: ("rtol", "atol", "max_ulp", "reference", "is_reference", "nan_count", "inf_count", "unwritten"),
    UNVERIFIED: ("rtol", "atol", "max_ulp", "reference"),
    COMPARED: (
        "reference", "rtol", "atol", "max_ulp", "passed", "max_abs_err", "max_rel_err", "max_ulp_err",
        "bad", "nan_count", "inf_count", "unwritten", "first_bad_index", "first_bad", "buffers",
    ),
    NO_CHECK: (),
}  # fmt: skip


@dataclass(eq=False)
class CheckRecord(Record, _ReadsLikeADict):
    """The verification of one result: its own health when it is the reference, its comparison
    with the reference otherwise, or why it could not be verified.

    `role` is one of `reference`, `compared`, `unverified`, `none` (a result that never ran);
    it decides which keys the JSON has. `weak` (why a passing comparison proves little),
    `unverified` (why there was nothing to compare with) and `disputed` (why a mismatch may be the
    reference's fault) appear in the JSON only when set."""

    role: str = NO_CHECK
    reference: str = ""
    rtol: float = 0.0
    atol: float = 0.0
    max_ulp: int | None = None
    is_reference: bool = False
    passed: bool | None = None
    max_abs_err: Any = None
    max_rel_err: Any = None
    max_ulp_err: Any = None
    bad: int = 0
    nan_count: int = 0
    inf_count: int = 0
    unwritten: int = 0
    first_bad_index: int | None = None
    first_bad: dict[str, Any] | None = None
    buffers: dict[str, dict[str, Any]] = field(default_factory=dict)
    note: str = ""
    weak: str = ""
    unverified: str = ""
    #: Why a mismatch may be the reference's fault, not this backend's (`run.reference.settle`):
    #: "the reference (cpu) has 1 race at src/lib.rs:87"; the verdict then reads "disputed".
    disputed: str = ""
    #: The reference's own first element still holding the poison, `{"buffer": "partial",
    #: "index": 0}` (`run.reference`): its outputs are incomplete; the row says so.
    first_unwritten: dict[str, Any] | None = None

    def _keys(self) -> tuple[str, ...]:
        """The keys of this record's JSON, in order."""
        optional = tuple(
            key for key in ("weak", "unverified", "note", "disputed", "first_unwritten") if getattr(self, key)
        )
        return _CHECK_KEYS[self.role] + optional

    def to_dict(self) -> dict[str, Any]:
        return {key: _to_dict(getattr(self, key)) for key in self._keys()}

    def __repr__(self) -> str:
        """One line (the console prints these; the per-buffer details stay out)."""
        if self.role == NO_CHECK:
            return "CheckRecord(none)"
        if self.role == REFERENCE:
            return (
                f"CheckRecord(reference {self.reference}, nan {self.nan_count}, unwritten {self.unwritten})"
            )
        if self.role == UNVERIFIED:
            return f"CheckRecord(not verified: {self.note or self.unverified})"
        text = f"CheckRecord(against {self.reference}: {'passed' if self.passed else 'FAILED'}"
        if self.passed is False:
            text += f", {self.bad} bad, first bad {self.first_bad}"
        else:
            text += f", max abs err {self.max_abs_err}, max ulp {self.max_ulp_err}"
        if self.weak:
            text += f", weak: {self.weak}"
        return text + ")"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckRecord:
        if isinstance(data, CheckRecord):
            return data
        if not data:
            role = NO_CHECK
        elif data.get("is_reference"):
            role = REFERENCE
        elif "passed" in data:
            role = COMPARED
        else:
            role = UNVERIFIED
        return _from_dict(cls, dict(data, role=role))


@dataclass
class Stale(Record):
    """Why a result shown now is an earlier run's: this cycle's build or run of its backend failed
    and the last good result was kept (`profile.last_good`); `time` is that result's (UTC) and
    `source_hash` the sources it ran."""

    reason: str
    time: str = ""
    source_hash: str = ""


@dataclass
class RunResult(Record):
    """One kernel on one backend on one device: outcome, check, timing and provenance.

    `stale` is set (a `Stale`) on a result kept from an earlier run; `reference_failed` says the
    result could not be checked because the run's reference produced nothing to compare with."""

    backend: str
    device: dict[str, Any]
    status: str  # "ok" | "error" | "skipped"
    verified: bool | None = None
    check: CheckRecord = field(default_factory=CheckRecord)
    timing: TimingStats | None = None
    throughput: dict[str, Any] = field(default_factory=dict)  # gbps, gflops, fraction_of_peak
    error: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)  # see workbench.provenance
    stale: Stale | None = None
    #: cpu-sim's checks: `{"findings": [...], "dropped": N, "diagnostics": [...]}`
    #: (workbench.run.sim_findings.located); None where no checks ran; in `to_json` only when set.
    findings: dict[str, Any] | None = None
    #: cpu-sim's trace of one invocation: `{"group", "local", "records": [...], "dropped": N}`
    #: (workbench.run.sim_trace.located); None where none was asked for; in `to_json` only when set.
    trace: dict[str, Any] | None = None
    #: cpu-sim's element → writer, per output buffer: `{"written", "unwritten", "single", "several",
    #: "max_writers", "elements": [...]}` (workbench.run.sim_writers); None where none was asked for.
    writers: dict[str, Any] | None = None

    def __repr__(self) -> str:
        """One line: backend, device, status, verdict, median (the console prints lists of these)."""
        spec = self.device.get("spec") or self.device.get("runtime") or "?"
        text = f"RunResult({self.backend} @ {spec}: {self.status}"
        if self.status == "ok":
            text += f", {self.verdict}"
            if self.timing is not None:
                text += f", median {format_time(self.timing.median_s)}"
        elif self.error:
            first = self.error.strip().splitlines()[0] if self.error.strip() else ""
            text += f": {first[:120]}"
        return text + ")"

    @property
    def verdict(self) -> str:
        """One word or phrase for the check: reference, verified, weak, failed, not verified (why)
        (`result_text.verdict`)."""
        return result_text.verdict(self)

    @property
    def reference_failed(self) -> bool:
        """Not verified because the reference failed (the check's `unverified`, set by the run's
        `ReferencePolicy`)."""
        return self.check.unverified == REFERENCE_FAILED

    def to_json(self) -> dict[str, Any]:
        """The shape `workbench run --json` prints for one result."""
        throughput = {
            k: self.throughput.get(k) for k in ("gbps", "gflops", "fraction_of_peak", "memory_roof", "roof")
        }
        out = {
            "backend": self.backend,
            "device": self.device,
            "status": self.status,
            "verified": self.verified,
            "check": self.check.to_dict(),
            "timing": self.timing.to_json() if self.timing else None,
            "throughput": throughput,
            "error": self.error,
            "provenance": self.provenance,
            # Added keys: the reading of the fields above, and the stale note of a kept result.
            "verdict": self.verdict,
            "reference_failed": self.reference_failed,
            "stale": self.stale.to_dict() if self.stale else None,
        }
        if self.findings is not None:
            out["findings"] = self.findings
        if self.trace is not None:
            out["trace"] = self.trace
        if self.writers is not None:
            out["writers"] = self.writers
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        result = _from_dict(cls, data)
        stale = data.get("stale")
        result.stale = Stale.from_dict(stale) if isinstance(stale, Mapping) else None
        result.check = CheckRecord.from_dict(data.get("check") or {})
        timing = data.get("timing")
        result.timing = TimingStats.from_dict(timing) if timing else None
        return result
