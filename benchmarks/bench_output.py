"""Where a benchmark writes its JSON: `--out PATH` when given, else outside the repository.

Results in `benchmarks/results/` are committed on purpose (pass `--out benchmarks/results/...`);
an ordinary run must not leave a changed file in the working tree. The default folder is
$WB_BENCH_DIR, else the user cache (~/.cache/rust-gpu-workbench/benchmarks/).
"""

from __future__ import annotations

import os
from pathlib import Path


def results_dir() -> Path:
    if os.environ.get("WB_BENCH_DIR"):
        return Path(os.environ["WB_BENCH_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rust-gpu-workbench" / "benchmarks"


def output_path(out: str | None, default_name: str) -> Path:
    """`out` as given, else `results_dir()/default_name`."""
    return Path(out).expanduser() if out else results_dir() / default_name


OUT_HELP = "write the JSON here (default: $WB_BENCH_DIR or ~/.cache/rust-gpu-workbench/benchmarks/, outside the repository)"
