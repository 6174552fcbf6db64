"""Kernel Tuner's own strategies in its simulation mode on one cache (benchmarks/strategies.py runs
this in Kernel Tuner's environment, never the workbench's: `pip install kernel_tuner` into a venv
of its own, e.g. /tmp/kt-venv).

    /tmp/kt-venv/bin/python benchmarks/strategies_kt.py CACHE.json STRATEGY SEEDS BUDGET

Prints one JSON line per seed: {"strategy", "seed", "values": [each counted evaluation's time in
ms, None when it failed, in order], "seconds"}. The space is the configurations the cache records
(a restriction function admits exactly those: a cache of part of a grid has no entry for the
rest, which Kernel Tuner's simulation mode cannot run). Kernel Tuner's strategies draw from
Python's `random` and numpy's global generator: both are seeded before each run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import sys
import tempfile
import time

import numpy as np


def main() -> None:
    import kernel_tuner

    source, strategy, seeds, budget = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(source, encoding="utf-8") as handle:
        data = json.load(handle)
    names = data["tune_params_keys"]
    cached = {tuple(entry[n] for n in names) for entry in data["cache"].values()}

    def restrict(params):  # a plain function: Kernel Tuner calls it with the configuration's dict
        return tuple(params[n] for n in names) in cached

    for seed in range(seeds):
        random.seed(seed)
        np.random.seed(seed)
        with tempfile.TemporaryDirectory() as tmp:
            cache = os.path.join(tmp, "cache.json")
            shutil.copy(source, cache)  # Kernel Tuner may append to it: a copy each run
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                results, _env = kernel_tuner.tune_kernel(
                    data["kernel_name"], "__global__ void k() {}", data.get("problem_size") or [1], [],
                    data["tune_params"], cache=cache, simulation_mode=True, strategy=strategy,
                    strategy_options={"max_fevals": budget}, restrictions=[restrict], verbose=False,
                    quiet=True, lang="CUDA",
                )  # fmt: skip
            seconds = time.perf_counter() - started
        seen, values = set(), []
        for r in results:
            key = tuple(r[n] for n in names)
            if key in seen:
                continue
            seen.add(key)
            t = r.get("time")
            values.append(float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None)
        print(json.dumps({"strategy": strategy, "seed": seed, "values": values[:budget], "seconds": seconds}),
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
