"""One result's counters: its artifact, inputs and launch run once more under `ncu`.

`collect(report, project, ...)` returns {(backend, device spec): record} for every result of a
run: a CUDA result that ran is profiled (`launch_child.py` under `ncu --csv --log-file`, with the
metric set of `metrics.py`, only the kernel's own entry, one launch); every other result gets a
record that says in one line why it has none (`absence.py`). A record:

    {"status": "ok" | "absent" | "failed", "message": one line,
     "backend", "device", "entry", "metrics": {key: value}, "stalls": [[reason, cycles per issue]],
     "event_median_s": the run's own median, "ncu": {"path", "args", "version"}, "relation": text}

The run itself (its timing, its check) is not touched: counters are taken after it, in a process
of their own, and a failure here never fails the run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from workbench import childproc
from workbench.backends import runtime_of
from workbench.frozen import python_command
from workbench.run.counters import absence
from workbench.run.counters.metrics import ncu_metrics_argument
from workbench.run.counters.ncu_csv import NcuParseError, parse

NCU_ENV = "WB_NCU"
RELATION = (
    "ncu's duration is ONE launch replayed with the caches flushed and the SM clock locked to base "
    "(its defaults), beside the event median of warm launches back to back at the GPU's own clocks: "
    "expect ncu's to be longer by about the clock ratio and the cold-cache misses"
)


def find_ncu() -> str | None:
    """$WB_NCU, else `ncu` on PATH."""
    chosen = os.environ.get(NCU_ENV)
    if chosen:
        return chosen if Path(chosen).is_file() else None
    return shutil.which("ncu")


def collect(
    report: Any, project: Any, *, sizes: dict[str, int] | None = None, tunables: dict[str, Any] | None = None,
    timeout_s: float = 180.0, on_record=None,
) -> dict[tuple[str, str], dict[str, Any]]:  # fmt: skip
    """Counters (or why none) for each result of `report` (a `RunReport`)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    ncu = find_ncu()
    for result in report.results:
        key = record_key(result)
        record = one(result, project, report, ncu, sizes=sizes, tunables=tunables, timeout_s=timeout_s)
        out[key] = record
        if on_record is not None:
            on_record(key, record)
    return out


def record_key(result: Any) -> tuple[str, str]:
    """(backend, device spec): the key `collect` files a result's record under."""
    prov = result.provenance or {}
    return result.backend, str(prov.get("device") or (result.device or {}).get("spec") or "")


def _absent(result: Any, message: str) -> dict[str, Any]:
    return {"status": "absent", "message": message, "backend": result.backend, "metrics": {}, "stalls": []}


def one(result: Any, project: Any, report: Any, ncu: str | None, *, sizes=None, tunables=None,
        timeout_s: float = 180.0) -> dict[str, Any]:  # fmt: skip
    runtime = runtime_of(result.backend)
    if runtime != "cuda":
        return _absent(result, absence.not_cuda(result.backend, runtime))
    prov = result.provenance or {}
    if prov.get("host"):
        return _absent(result, absence.REMOTE.format(host=prov["host"].get("name", "the host")))
    if result.status != "ok" or not prov.get("artifact"):
        return _absent(result, absence.NOT_RUN.format(status=result.status))
    if "MIG" in str((result.device or {}).get("name", "")):
        return _absent(result, absence.MIG)
    if ncu is None:
        chosen = os.environ.get(NCU_ENV)
        return _absent(result, absence.BAD_WB_NCU.format(path=chosen) if chosen else absence.NO_NCU)
    artifact = dict(prov["artifact"])
    entry = artifact.get("entry") or report.kernel
    request = {
        "project_dir": str(project.root), "kernel": report.kernel, "backend": result.backend,
        "sizes": prov.get("sizes") or sizes, "tunables": prov.get("tunables") or tunables,
        "seed": prov.get("seed", getattr(report, "seed", 0)) or 0, "artifact": artifact,
        "device_index": int((result.device or {}).get("index", 0)),
    }  # fmt: skip
    args = [
        "--csv",
        "--metrics",
        ncu_metrics_argument(),
        "-k",
        f"regex:^{re.escape(entry)}$",
        "--launch-count",
        "1",
    ]
    record: dict[str, Any] = {
        "status": "failed", "message": "", "backend": result.backend, "entry": entry, "metrics": {}, "stalls": [],
        "event_median_s": (result.timing or {}).get("median_s") if result.timing is not None else None,
        "ncu": {"path": ncu, "args": args}, "relation": RELATION,
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="wb-counters-") as tmp:
        request_file, log = Path(tmp) / "request.json", Path(tmp) / "ncu.csv"
        request_file.write_text(json.dumps(request))
        cmd = [
            ncu,
            *args,
            "--log-file",
            str(log),
            *python_command("workbench.run.counters.launch_child", str(request_file)),
        ]
        try:
            done = childproc.capture(cmd, timeout_s=timeout_s, cwd=tmp)
        except TimeoutError:
            record["message"] = f"no counters: ncu did not finish within {timeout_s:g} s (its replay passes)"
            return record
        except OSError as exc:
            record["message"] = f"no counters: ncu could not start ({exc})"
            return record
        text = log.read_text(errors="replace") if log.is_file() else ""
    output = "\n".join([text, *done.stdout, *done.stderr])
    try:
        launches = parse(text)
    except NcuParseError as exc:
        launches = []
        record["message"] = f"no counters: ncu's CSV could not be read ({exc})"
    if not launches:
        explained = absence.from_output(output)
        if explained:
            record["status"], record["message"] = "absent", explained
        elif not record["message"]:
            tail = " | ".join(line.strip() for line in output.strip().splitlines()[-3:])
            record["message"] = (
                f"no counters: ncu profiled no launch of {entry} (exit {done.returncode}): {tail}"
            )
        return record
    launch = launches[0]
    record.update(status="ok", metrics=launch.values, stalls=[[r, v] for r, v in launch.stalls])
    record["message"] = summary(record)
    record["ncu"]["version"] = _version(output)
    return record


def _version(output: str) -> str | None:
    m = re.search(r"Version ([\d.]+)", output)
    return m.group(1) if m else None


def summary(record: dict[str, Any]) -> str:
    """'ncu 61.95 µs at 1.47 GHz (event median 45.1 µs); DRAM 61% · L2 75% · SM 44% of peak; ...'."""
    from workbench.units import format_time

    m = record.get("metrics") or {}
    parts = []
    if m.get("duration_s") is not None:
        clock = f" at {m['sm_hz'] / 1e9:.2f} GHz" if m.get("sm_hz") else ""
        event = record.get("event_median_s")
        parts.append(
            f"ncu {format_time(m['duration_s'])}{clock}"
            + (f" (event median {format_time(event)})" if event else "")
        )
    pcts = [(label, m.get(key)) for key, label in (("dram_pct", "DRAM"), ("l2_pct", "L2"), ("sm_pct", "SM"))]
    if any(v is not None for _, v in pcts):
        parts.append(" · ".join(f"{label} {v:.0f}%" for label, v in pcts if v is not None) + " of peak")
    if m.get("achieved_occupancy_pct") is not None:
        parts.append(f"occupancy {m['achieved_occupancy_pct']:.0f}% achieved")
    if record.get("stalls"):
        parts.append("stalls: " + ", ".join(f"{r} {v:.1f}" for r, v in record["stalls"][:3]))
    return "; ".join(parts) or "ncu gave none of the metric set"
