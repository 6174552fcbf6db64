"""A sweep's entries (Qt-free): one per configuration × backend × device, from fresh results or
recorded rows, each round kept, merged across rounds; the build digest that tells identical
builds apart; the settings recorded with each configuration, compared on resume.

- Build digest: sha256 of the kernel's artifact bytes (the `.so`, `.ptx`, `.wgsl`, `.spv` the run
  loaded) and, for runtimes that read it, the launch geometry (threads per block, grid): the cpu
  entry covers the whole range itself (`run/runtimes/cpu.py`), so its geometry is no part of
  what runs. Equal digests: the same code launched the same way, whatever the tunables said.
  A run on a GPU host names the host's copy of the artifact: no digest, each configuration its
  own point (as before builds were compared).
- Settings: what can change a result without changing the resume key (the per-launch timeout,
  the sweep's backends and devices, the seed, the timing protocol, the sizes). A failed, skipped
  or unverified configuration recorded under other settings is run again on resume.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from workbench.backends import runtime_of
from workbench.profile.tuning import ranking
from workbench.records import CheckRecord, RunResult


def build_digest(result: Any, kernel: Any, sizes: dict[str, int], config: dict[str, Any],
                 cache: dict[str, str] | None = None) -> str | None:  # fmt: skip
    """The digest of what `result` ran (see the module docstring); None when it loaded nothing."""
    artifact = (result.provenance or {}).get("artifact") or {}
    path = artifact.get("path")
    if not path or not Path(path).is_file():
        return None
    cache = cache if cache is not None else {}
    if path not in cache:  # artifact folders are content-addressed: a path's bytes never change
        cache[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    launch: dict[str, Any] = {"entry": artifact.get("entry"), "artifact": cache[path]}
    if runtime_of(result.backend) != "cpu":
        threads, grid = kernel.geometry(kernel.symbols(sizes, config), result.backend)
        launch.update(threads=list(threads), grid=list(grid))
    return hashlib.sha256(json.dumps(launch, sort_keys=True).encode()).hexdigest()


def settings_differ(recorded: dict[str, Any] | None, current: dict[str, Any]) -> list[str]:
    """The names of the settings that differ (every one when none were recorded)."""
    if not recorded:
        return sorted(current)
    return sorted(k for k in set(recorded) | set(current) if recorded.get(k) != current.get(k))


def entry_of(result: Any, config: dict[str, Any], sizes: dict[str, int], run_id: int | None,
             resumed: bool, round_: int = 1, build: str | None = None) -> dict:  # fmt: skip
    """A sweep entry of one round from a `RunResult`."""
    timing = result.timing.to_json() if result.timing is not None else None
    throughput = dict(result.throughput or {})
    return {
        "config": dict(config),
        "sizes": dict(sizes),
        "backend": result.backend,
        "device": (result.device or {}).get("spec", ""),
        "device_name": (result.device or {}).get("name", ""),
        "verified": result.verified,
        "verdict": result.verdict,
        "status": result.status,
        "error": result.error,
        "timing": timing,
        "gbps": throughput.get("gbps"),
        "run_id": run_id,
        "resumed": resumed,
        "round": round_,
        "build": build,
        "findings": finding_count(result.findings),
    }


def finding_count(findings: dict[str, Any] | None) -> int | None:
    """How many distinct findings cpu-sim's checks made (None: no checks ran): a configuration
    with a race or a bad index is never ranked (`ranking.rankable`), however fast."""
    if findings is None:
        return None
    return len(findings.get("findings") or []) + int(findings.get("dropped") or 0)


def entry_from_row(row: dict[str, Any], samples: np.ndarray) -> dict[str, Any]:
    """A sweep entry of one round from a recorded row (`SessionStore.tuning_runs`)."""
    detail = row.get("detail") or {}
    prov = detail.get("provenance") or {}
    tuning = prov.get("tuning") or {}
    timing = dict(detail.get("timing") or {})
    if timing:
        timing["samples_s"] = [float(s) for s in samples]
    verdict = RunResult(backend=row["backend"], device=detail.get("device") or {}, status=row["status"],
                        verified=row.get("verified"), check=CheckRecord.from_dict(detail.get("check") or {}))  # fmt: skip
    return {
        "config": dict(tuning.get("config") or row.get("tunables") or {}),
        "sizes": dict(row.get("sizes") or {}),
        "backend": row["backend"],
        "device": row["device"],
        "device_name": row.get("device_name") or "",
        "verified": row.get("verified"),
        "verdict": verdict.verdict,
        "status": row["status"],
        "error": row.get("error"),
        "timing": timing or None,
        "gbps": (detail.get("throughput") or {}).get("gbps"),
        "run_id": row["id"],
        "resumed": True,
        "round": int(tuning.get("round") or 1),
        "build": tuning.get("build"),
        "findings": finding_count(detail.get("findings")),
    }


def _identity(entry: dict[str, Any]) -> tuple:
    return (json.dumps(entry["config"], sort_keys=True), json.dumps(entry["sizes"], sort_keys=True),
            entry["backend"], entry["device"])  # fmt: skip


def merge(runs: list[dict[str, Any]], confirm_from: int | None = None) -> list[dict[str, Any]]:
    """The round entries of a sweep, one entry per configuration × sizes × backend × device, in
    first-seen order. Its `rounds` list every round; its `timing` is the one round's when there
    was one, else the median of the rounds' medians with their between-round interval, and every
    round's samples; status, verification and verdict are the worst any round had."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault(_identity(run), []).append(run)
    merged = []
    for rounds in groups.values():
        rounds.sort(key=lambda r: r["round"])
        first = rounds[0]
        worst = next((r for r in rounds if ranking.outcome(r) == "failed"), None) or next(
            (r for r in rounds if ranking.outcome(r) != "ok"), first
        )
        timed = [r for r in rounds if (r.get("timing") or {}).get("median_s")]
        if len(rounds) == 1:
            timing = dict(first["timing"]) if first.get("timing") else None
        elif timed:
            medians = [float(r["timing"]["median_s"]) for r in timed]
            ci = ranking.interval([float(np.log(m)) for m in medians])
            timing = {"median_s": float(np.median(medians)), "ci_s": [ci[1], ci[2]] if ci else None,
                      "rounds_s": medians, "method": timed[0]["timing"].get("method"),
                      "samples_s": [s for r in timed for s in r["timing"].get("samples_s") or []]}  # fmt: skip
        else:
            timing = None
        verified = [r["verified"] for r in rounds]
        merged.append({
            **{k: first[k] for k in ("config", "sizes", "backend", "device", "device_name", "gbps")},
            "verified": False if False in verified else (True if all(v is True for v in verified) else None),
            "verdict": worst["verdict"], "status": worst["status"], "error": worst["error"],
            "timing": timing,
            "run_id": first["run_id"], "run_ids": [r["run_id"] for r in rounds],
            "resumed": all(r["resumed"] for r in rounds),
            "build": next((r["build"] for r in rounds if r.get("build")), None),
            "findings": max((r["findings"] for r in rounds if r.get("findings") is not None), default=None),
            "rounds": [{"round": r["round"], "median_s": (r.get("timing") or {}).get("median_s"),
                        "run_id": r["run_id"], "resumed": r["resumed"], "status": r["status"],
                        "verified": r["verified"],
                        "confirm": confirm_from is not None and r["round"] >= confirm_from} for r in rounds],
        })  # fmt: skip
    return merged
