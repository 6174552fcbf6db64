"""Trim a Kernel Tuner cache file for benchmarks/strategies_caches/: every configuration's
parameters, `time` and the three costs Kernel Tuner's simulation mode counts (`compile_time`,
`verification_time`, `benchmark_time`); the raw samples and other observers' figures dropped;
`tune_params` cut to the values the cache records (a grid Kernel Tuner's simulation mode can
build in seconds); gzipped. A cache left open by an interrupted run (no closing braces) is closed first.

    python benchmarks/strategies_trim.py SOURCE.json DEST.json.gz
"""

from __future__ import annotations

import gzip
import json
import sys

KEEP = ("time", "compile_time", "verification_time", "benchmark_time")


def trim(source: str, dest: str) -> int:
    text = open(source, encoding="utf-8").read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = json.loads(text.rstrip().rstrip(",") + "\n}\n}")
    names = data["tune_params_keys"]
    out = {k: data[k] for k in ("schema_version", "device_name", "kernel_name", "problem_size",
                                "tune_params_keys", "tune_params", "objective") if k in data}  # fmt: skip
    present = {n: {entry[n] for entry in data["cache"].values()} for n in names}
    out["tune_params"] = {n: [v for v in data["tune_params"][n] if v in present[n]] for n in names}
    out["cache"] = {
        key: {**{n: entry[n] for n in names}, **{k: entry[k] for k in KEEP if k in entry}}
        for key, entry in data["cache"].items()
    }
    with gzip.open(dest, "wt", encoding="utf-8") as handle:
        json.dump(out, handle, separators=(",", ":"))
    return len(out["cache"])


if __name__ == "__main__":
    print(trim(sys.argv[1], sys.argv[2]), "configurations")
