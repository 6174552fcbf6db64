"""What the host was doing while a run was timed: load, other processes' CPU, CPU frequency.

`HostLoad.start()` before a run and `.stop()` after it give `conditions`: the load averages
(`/proc/loadavg`) at both ends, the CPU time every process *but this process tree* used meanwhile
(`/proc/stat`'s busy time minus the tree's own `/proc/<pid>/stat` times, via psutil), as cores, and
the CPU frequency (`/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq`) at both ends where the
kernel exposes it. Whatever cannot be read is None: "unknown", never a guess.

`flags(host, timing_conditions)` is the one rule for calling a run "busy" (other processes used at
least `BUSY_OTHER_CORES` cores, or a quarter of the machine on a large one) or "throttled" (the GPU
reported a thermal, power or hardware slowdown, from the NVML readings the worker recorded);
run tables, `sessions list` and verdicts all call it.
"""

from __future__ import annotations

import glob
import os
import time
from typing import Any

import psutil

from workbench import childproc

#: Other processes using this many cores (or a quarter of the machine, if more) make a run "busy".
BUSY_OTHER_CORES = 0.5
#: NVML clock-event reasons that mean the GPU slowed itself down (run/nvml.py's names).
THROTTLE_REASONS = (
    "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown", "hw_power_brake_slowdown", "sw_power_cap",
)  # fmt: skip
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system irq softirq steal (guest is inside user)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as file:
            return file.read()
    except OSError:
        return None


def loadavg() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, or None where /proc/loadavg is missing."""
    text = _read("/proc/loadavg")
    try:
        return [float(x) for x in text.split()[:3]] if text else None
    except ValueError:
        return None


def busy_seconds() -> float | None:
    """CPU seconds all processes have spent busy since boot, summed over every CPU (/proc/stat)."""
    text = _read("/proc/stat")
    if not text or not text.startswith("cpu "):
        return None
    fields = [int(x) for x in text.split("\n", 1)[0].split()[1:]]
    return sum(fields[i] for i in _BUSY_FIELDS if i < len(fields)) / os.sysconf("SC_CLK_TCK")


def tree_seconds(root: psutil.Process) -> dict[int, float]:
    """CPU seconds of `root` and every descendant ({pid: user + system + reaped children}), read
    through /proc's children lists (`childproc.tree_cpu_seconds`), not by walking every process."""
    return childproc.tree_cpu_seconds(root.pid)


def cpu_mhz() -> dict[str, float] | None:
    """{"min", "mean", "max"} of the CPUs' current frequency in MHz, where cpufreq exposes it."""
    values = []
    for path in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq"):
        text = _read(path)
        if text and text.strip().isdigit():
            values.append(int(text) / 1000.0)
    if not values:
        return None
    return {"min": min(values), "mean": sum(values) / len(values), "max": max(values)}


class HostLoad:
    """Measures the host's conditions over an interval (a run); `start()`, then `stop()`."""

    def __init__(self, pid: int | None = None):
        self._root = psutil.Process(pid or os.getpid())
        self._start: dict[str, Any] | None = None

    def start(self) -> HostLoad:
        self._start = {
            "wall": time.monotonic(),
            "busy": busy_seconds(),
            "tree": tree_seconds(self._root),
            "loadavg": loadavg(),
            "cpu_mhz": cpu_mhz(),
        }
        return self

    def stop(self) -> dict[str, Any]:
        """The conditions since `start()`; call it while the run's workers are still alive."""
        if self._start is None:
            raise RuntimeError("HostLoad.stop() before start()")
        start, self._start = self._start, None
        wall = time.monotonic() - start["wall"]
        busy = busy_seconds()
        tree = tree_seconds(self._root)
        # A process of the tree that started meanwhile counts from zero; one that ended was reaped
        # by its parent, whose children times now hold it.
        own = sum(max(0.0, t - start["tree"].get(pid, 0.0)) for pid, t in tree.items())
        others = None
        if busy is not None and start["busy"] is not None and wall > 0:
            others = max(0.0, (busy - start["busy"] - own) / wall)
        return {
            "source": "/proc",
            "wall_s": wall,
            "cpus": os.cpu_count(),
            "loadavg_before": start["loadavg"],
            "loadavg_after": loadavg(),
            "own_cpu_cores": own / wall if wall > 0 else None,
            "other_cpu_cores": others,
            "cpu_mhz_before": start["cpu_mhz"],
            "cpu_mhz_after": cpu_mhz(),
        }


def busy_threshold(cpus: int | None) -> float:
    """Cores other processes may use before a run counts as busy."""
    return max(BUSY_OTHER_CORES, 0.25 * (cpus or 1))


def flags(host: dict[str, Any] | None, timing_conditions: dict[str, Any] | None = None) -> list[str]:
    """The words a table shows for a run's conditions: "busy", "throttled" (empty: quiet or unknown)."""
    out = []
    host = host if isinstance(host, dict) else {}  # an imported bundle may hold anything here
    others = host.get("other_cpu_cores")
    cpus = host.get("cpus")
    if isinstance(others, int | float) and others >= busy_threshold(cpus if isinstance(cpus, int) else None):
        out.append("busy")
    reasons: set[str] = set()
    for key in ("clocks_before", "clocks_after"):
        clocks = (timing_conditions if isinstance(timing_conditions, dict) else {}).get(key)
        found = clocks.get("reasons") if isinstance(clocks, dict) else None
        reasons.update(r for r in found or () if isinstance(r, str))
    if reasons.intersection(THROTTLE_REASONS):
        out.append("throttled")
    return out


def run_conditions(report: Any, results: list[Any] | None = None) -> list[str]:
    """The flags of one run as a whole: "busy" from the report's `host_conditions` (measured by
    `RunService.run`), "throttled" when any of `results` (default: the report's) saw its GPU slow
    itself down. The window's results caption and timing plot both say these."""
    found = flags(getattr(report, "host_conditions", None))
    for result in results if results is not None else getattr(report, "results", None) or ():
        for flag in flags(None, (getattr(result, "timing", None) or {}).get("conditions")):
            if flag not in found:
                found.append(flag)
    return found


def describe(host: dict[str, Any] | None) -> str:
    """One line: "other processes 0.12 cores, load 0.31 → 0.40, CPU 2900 MHz" (or "unknown")."""
    if not host:
        return "conditions unknown"
    parts = []
    if host.get("other_cpu_cores") is not None:
        parts.append(f"other processes {host['other_cpu_cores']:.2f} of {host.get('cpus') or '?'} cores")
    before, after = host.get("loadavg_before"), host.get("loadavg_after")
    if before and after:
        parts.append(f"load {before[0]:.2f} → {after[0]:.2f}")
    mhz = host.get("cpu_mhz_after") or host.get("cpu_mhz_before")
    if mhz:
        parts.append(f"CPU {mhz['mean']:.0f} MHz")
    return ", ".join(parts) or "conditions unknown"
