"""Nsight Compute counters beside the timings (issue 27): `workbench run --counters`.

`metrics.py` the documented metric set; `ncu_csv.py` the parser of `ncu --csv`; `absence.py` the
one-line reasons there are no counters (no ncu, not permitted, not a CUDA backend, ...);
`nsight.py` runs one backend's launch under ncu (`launch_child.py` in the worker's place) and
returns its record. Qt-free.
"""
