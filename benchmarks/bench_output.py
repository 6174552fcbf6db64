"""Where a benchmark writes its JSON: `--out PATH` when given, else outside the repository.

Results in `benchmarks/results/` are committed on purpose (pass `--out benchmarks/results/...`);
an ordinary run must not leave a changed file in the working tree. The default folder is
$WB_BENCH_DIR, else the user cache (~/.cache/rust-gpu-workbench/benchmarks/).
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any


def results_dir() -> Path:
    if os.environ.get("WB_BENCH_DIR"):
        return Path(os.environ["WB_BENCH_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rust-gpu-workbench" / "benchmarks"


def output_path(out: str | None, default_name: str) -> Path:
    """`out` as given, else `results_dir()/default_name`."""
    return Path(out).expanduser() if out else results_dir() / default_name


OUT_HELP = "write the JSON here (default: $WB_BENCH_DIR or ~/.cache/rust-gpu-workbench/benchmarks/, outside the repository)"


def write_json(out: str | None, default_name: str, data: Any, **dumps: Any) -> Path:
    """Write `data` as indented JSON to `output_path(out, default_name)` (its folder made); the path."""
    path = output_path(out, default_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, **dumps) + "\n")
    return path


def machine() -> dict[str, Any]:
    """Where a benchmark ran: host name, CPU count, Python version."""
    return {"node": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()}
