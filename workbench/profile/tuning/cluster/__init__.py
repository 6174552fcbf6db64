"""Tuning spread over a Dask cluster (Qt-free): `--cluster local[:N]` or `tcp://HOST:PORT`.

`connect.py` parses the spec and starts (or joins) the cluster, `dispatch.py` builds each
configuration here and sends it to a worker of the sweep's device, `worker_side.py` is what the
workers run (a warm `RunService` per device). `SweepRunner(dispatcher=...)` keeps its rounds,
resume, verification, recording and ranking; only where a configuration runs changes.
"""
