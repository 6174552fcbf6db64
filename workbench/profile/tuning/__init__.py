"""Tuning (Qt-free): sweeps over a kernel's tunables, their ranking, and applying a winner.

`tune.py` runs a sweep (`SweepRunner`), `tune_entries.py` keeps its entries, `ranking.py` picks a
winner beyond noise, `size_sweep.py` sweeps sizes, `apply.py` writes the chosen defaults,
`kernel_tuner.py` exports Kernel Tuner's cache, `cluster/` spreads a sweep over a Dask cluster.
"""
