"""A sweep's configurations on a Dask cluster (Qt-free): built here, run on the workers' devices.

`ClusterDispatcher` is what `SweepRunner(dispatcher=...)` sends configurations through instead of
its own `RunService`:

- Builds stay here (Rust is here), in this process's `BuildService`, while the workers measure the
  configurations submitted before. Each artifact folder, and the project's files, are scattered
  once as tar bytes under a key made of their digest (identical builds share one key); Dask moves
  a key to a worker that lacks it, and the worker unpacks a digest only when its cache folder
  lacks it (`worker_side.fetch`; `provenance.cluster.fetched` names those a run unpacked).
- One worker owns one device and advertises `device:<runtime>`; a configuration asks for one, so a
  device measures one configuration at a time. Workers whose devices (by model: name of every
  device the sweep runs on) differ from the sweep's are refused for the ranking, with the reason
  (`refused`), as Kernel Tuner refuses mixed GPU models; the sweep's model is this machine's (what
  a local tune ranks on) when a worker has it, else the one most workers have (ties: the first
  worker's by address).
- A worker that dies mid-configuration: the scheduler reschedules its configuration on another
  worker (`allowed-failures`), an exception raised in one is retried (`RETRIES`).
- Results come back as `RunReport`s; the worker, host and device are in each result's
  `provenance.cluster`; the artifact path is this machine's copy (what the build digest reads),
  the worker's is kept beside it.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from pathlib import Path
from typing import Any

from workbench.backends import runtime_of
from workbench.project import Project, is_ignored

from . import worker_side
from .connect import Cluster, ClusterError, ClusterSpec
from .devices import local_devices

#: Retries of a configuration whose task raised (a worker lost mid-run is rescheduled by Dask).
RETRIES = 2
#: The largest project folder sent to workers (sources, manifest, input files).
MAX_PROJECT_BYTES = 256 * 1024 * 1024
#: Seconds between checks that a worker of the sweep's device is still there while waiting.
POLL_S = 2.0


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def project_files(project: Project) -> list[str]:
    """The project's files a worker needs (everything but build outputs and hidden or temp files)."""
    names, total = [], 0
    for path in sorted(project.root.rglob("*")):
        if path.is_file() and not is_ignored(path, project.root):
            total += path.stat().st_size
            names.append(path.relative_to(project.root).as_posix())
    if total > MAX_PROJECT_BYTES:
        raise ClusterError(f"project folder {project.root} holds {total} bytes outside target/: more than "
                           f"the {MAX_PROJECT_BYTES} sent to cluster workers")  # fmt: skip
    return names


def _local_model(service: Any, runtimes: list[str]) -> dict[str, str] | None:
    """{runtime: model} of the first device of each runtime here; None when one is missing."""
    model = {}
    for runtime in runtimes:
        info = service.devices(runtime)
        found = info.get("devices") or []
        if not info.get("available") or not found:
            return None
        model[runtime] = worker_side.model_name(found[0])
    return model


class ClusterDispatcher:
    """Configurations of one sweep built here and measured on a Dask cluster's devices."""

    def __init__(self, spec: ClusterSpec, project: Project, kernel: str, backends: list[str], *,
                 local_service: Any, cache_dir: str | Path | None = None,
                 worker_cache: str | None = None, on_note: Any = None) -> None:  # fmt: skip
        from workbench.build import BuildService
        from workbench.run.reference import ReferencePolicy

        self.project = project
        self.on_note = on_note or (lambda text: None)  # what the user may want to know (stderr)
        self.kernel = project.manifest.kernel(kernel)
        reference = ReferencePolicy.for_run(self.kernel, None).backend
        self.needed = list(dict.fromkeys([*backends, reference]))
        runtimes = {runtime_of(b) for b in self.needed}
        # The runtime a worker owns a device of: the accelerator's, cpu when the sweep is cpu-only.
        self.runtime = next((r for r in sorted(runtimes) if r != "cpu"), "cpu")
        self.resource = worker_side.resource_name(self.runtime)
        devices = (
            local_devices(self.runtime, local_service.devices(self.runtime)) if spec.kind == "local" else []
        )
        self.cluster = Cluster(spec, self.runtime, devices, worker_cache)
        self.builds = BuildService(cache_dir=cache_dir)
        self._blobs: dict[str, Any] = {}  # digest → the scattered future (kept: once per worker)
        self._folders: dict[str, tuple[str, str]] = {}  # artifact digest → (backend, local folder)
        self._data: dict[str, bytes] = {}  # digest → the tar bytes (sent again if every copy is lost)
        self._sent: dict[str, dict[str, Any]] = {}  # future key → what it was submitted with
        try:
            preferred = _local_model(local_service, sorted(runtimes))
            self.workers, self.refused, self.model = self._admit(sorted(runtimes), preferred)
            data = worker_side.pack(project.root, project_files(project))
            self.project_digest = self._scatter(data)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ workers and devices

    def _admit(
        self, runtimes: list[str], preferred: dict[str, str] | None
    ) -> tuple[list[str], list[dict[str, Any]], dict[str, str]]:
        """(the workers this sweep ranks on, those refused and why, the sweep's device model)."""
        client = self.cluster.client
        info = client.scheduler_info()["workers"]
        if not info:
            raise ClusterError("the cluster has no worker")
        refused, candidates = [], []
        for address, worker in sorted(info.items()):
            if worker.get("resources", {}).get(self.resource, 0) < 1:
                refused.append({"worker": address, "reason": f"advertises no {self.resource} resource (start it "
                                f"with --resources {self.resource}=1 and {worker_side.DEVICE_ENV}=SPEC)"})  # fmt: skip
            else:
                candidates.append(address)
        described = client.run(worker_side.describe, runtimes, workers=candidates) if candidates else {}
        models = {}
        for address in candidates:
            devices = described[address]["devices"]
            missing = [f"{r}: {d.get('reason')}" for r, d in devices.items() if not d.get("name")]
            if missing:
                refused.append({"worker": address, "reason": "has no device for " + "; ".join(missing)})
                continue
            models[address] = {r: d["name"] for r, d in sorted(devices.items())}
        if not models:
            raise ClusterError("no cluster worker can run this sweep: " + "; ".join(
                f"{r['worker']} {r['reason']}" for r in refused))  # fmt: skip
        keys = [tuple(sorted(m.items())) for m in models.values()]
        if preferred is not None and tuple(sorted(preferred.items())) in keys:
            model = dict(preferred)  # the devices a local tune would have ranked on
        else:
            counts = Counter(keys)
            model = dict(next(key for key in keys if counts[key] == max(counts.values())))
        accepted = []
        for address, mine in models.items():
            if mine == model:
                accepted.append(address)
            else:
                differs = ", ".join(
                    f"{r} {mine[r]!r} (the sweep's: {model[r]!r})" for r in model if mine[r] != model[r]
                )
                refused.append({"worker": address, "device": mine,
                                "reason": f"refused for this ranking: its device differs: {differs}; one ranking "
                                          "needs one device model"})  # fmt: skip
        self.described = {a: described[a] for a in accepted}
        return accepted, refused, model

    def alive(self) -> list[str]:
        """The admitted workers the scheduler still has."""
        present = set(self.cluster.client.scheduler_info()["workers"])
        return [w for w in self.workers if w in present]

    # ------------------------------------------------------------------ artifacts

    def _scatter(self, data: bytes) -> str:
        digest = _digest(data)
        self._data.setdefault(digest, data)
        blob = self._blobs.get(digest)
        key = f"wb-blob-{digest}"
        if blob is None or blob.status != "finished":  # new, or lost with every worker that held it
            if self.cluster.replicate_inputs:
                self._blobs[digest] = self._replicate(key, data, None)
            else:
                self._blobs[digest] = self.cluster.client.scatter({key: data}, hash=False)[key]
        elif self.cluster.replicate_inputs:
            self._replicate(key, data, blob)
        return digest

    def _replicate(self, key: str, data: bytes, blob: Any) -> Any:
        """`data` on every admitted worker that lacks it, sent from here: a host's workers reach
        only this machine (`host_workers.py`), never each other, so none may have to fetch an
        input from another worker."""
        client = self.cluster.client
        held = set(client.who_has([blob]).get(key) or ()) if blob is not None else set()
        future = blob
        for worker in self.alive():
            if worker not in held:
                future = client.scatter({key: data}, hash=False, workers=[worker])[key]
        return future

    def _build(self, config: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
        """({backend: artifact digest} of the builds that succeeded, {backend: error} of the others)."""
        from workbench.run.build_stage import staged

        results = self.builds.submit(self.project, self.needed, tunables=config).wait()
        artifacts, failed = {}, {}
        for backend, result in results.items():
            build = staged(result)
            if build.status != "ok":
                failed[backend] = (build.status, build.message)
                continue
            data = worker_side.pack(build.folder)
            digest = self._scatter(data)
            artifacts[backend] = digest
            self._folders[digest] = (backend, build.folder)
        return artifacts, failed

    # ------------------------------------------------------------------ configurations

    def submit(self, point: Any, request: dict[str, Any], worker: str | None = None) -> Any:
        """Build `point` here, then hand it to a worker of the sweep's device (`worker` first when
        given: the side-by-side re-timing stays on one device); returns a future."""
        targets = [worker] if worker else self.alive()
        if not targets:
            raise ClusterError(f"no cluster worker with the sweep's device {self.model} is left; what "
                               "finished is recorded, rerun to resume")  # fmt: skip
        artifacts, failed = self._build(point.config)
        run_digest = _digest(repr((self.project_digest, sorted(artifacts.items()))).encode())
        body = {**request, "config": dict(point.config), "sizes": dict(point.sizes or {}),
                "kernel": self.kernel.name, "project_digest": self.project_digest,
                "artifacts": artifacts, "run_digest": run_digest}  # fmt: skip
        return self._send({"body": body, "worker": worker, "failed": failed, "attempt": 0})

    def _send(self, sent: dict[str, Any]) -> Any:
        body, worker = sent["body"], sent["worker"]
        for digest in [self.project_digest, *body["artifacts"].values()]:
            self._scatter(self._data[digest])
        digests = [self.project_digest, *body["artifacts"].values()]
        future = self.cluster.client.submit(
            worker_side.run_configuration, body, {d: self._blobs[d] for d in digests},
            resources={self.resource: 1}, workers=[worker] if worker else self.alive(),
            allow_other_workers=bool(worker), retries=RETRIES, pure=False,
            key=f"wb-config-{body['run_digest'][:16]}-{time.monotonic_ns()}",
        )  # fmt: skip
        self._sent[future.key] = sent
        return future

    def result(self, future: Any, cancelled: Any = None) -> Any:
        """The `RunReport` of a submitted configuration, waiting for it (a worker of the sweep's
        device must stay: with none left the sweep stops, naming the device)."""
        while True:
            try:
                report = future.result(timeout=POLL_S)
                break
            except TimeoutError:
                if cancelled is not None and cancelled():
                    future.cancel()
                    return None
                if not self.alive():
                    raise ClusterError(f"no cluster worker with the sweep's device {self.model} is left; "
                                       "what finished is recorded, rerun to resume") from None  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - raised in the task after its retries, or its inputs lost
                sent = self._sent.pop(future.key)
                if sent["attempt"] >= RETRIES or not self.alive():
                    raise ClusterError(f"a configuration failed on the cluster after {RETRIES} retries: "
                                       f"{type(exc).__name__}: {exc}") from None  # fmt: skip
                # Dask reschedules a task whose worker died; one whose artifacts died with it
                # (held by that worker only) fails: they are scattered again and it is sent again.
                self.on_note(f"configuration {sent['body']['config']} sent again ({type(exc).__name__}: "
                             f"its worker was lost with its inputs)")  # fmt: skip
                future = self._send({**sent, "attempt": sent["attempt"] + 1})
        return self._localize(report, self._sent.pop(future.key)["failed"])

    def first_worker(self) -> str | None:
        alive = self.alive()
        return alive[0] if alive else None

    def _localize(self, report: Any, failed: dict[str, tuple[str, str]]) -> Any:
        """This machine's view of a worker's report: the artifact path of the local build (the same
        bytes: they travelled by digest), the project folder here, and a backend whose build
        failed here an error with the build's message (the worker only saw no artifact)."""
        from workbench.records import RunResult

        for i, result in enumerate(report.results):
            prov = result.provenance
            cluster = prov.get("cluster") or {}
            cluster["project_dir"] = prov.get("project_dir")
            prov["project_dir"] = str(self.project.root)
            artifact = prov.get("artifact") or {}
            path = artifact.get("path")
            if path:
                for digest, (_backend, folder) in self._folders.items():
                    marker = f"/artifacts/{digest}/"
                    if marker in path:
                        cluster["artifact_path"] = path
                        artifact["path"] = str(Path(folder) / path.split(marker, 1)[1])
                        break
            if result.backend in failed:
                status, message = failed[result.backend]
                if status == "error":
                    report.results[i] = RunResult(
                        backend=result.backend, device=result.device, status="error", verified=None,
                        check=result.check, timing=None, throughput=result.throughput,
                        error=f"build failed: {message}", provenance=prov,
                    )  # fmt: skip
        return report

    def as_completed(self, futures: list[Any]):
        from distributed import as_completed

        return as_completed(futures)

    def describe(self) -> dict[str, Any]:
        """The cluster as a sweep's JSON reports it."""
        return {
            "spec": self.cluster.spec.text,
            "resource": self.resource,
            "model": self.model,
            "workers": [{"worker": a, "host": d.get("host"), "device": d.get("owns"),
                         **({"ssh_host": d["ssh_host"]} if d.get("ssh_host") else {})}
                        for a, d in self.described.items()],
            "refused": self.refused,
        }  # fmt: skip

    def close(self) -> None:
        builds = getattr(self, "builds", None)
        if builds is not None:
            builds.close()
        self._blobs = {}
        self.cluster.close()


def open_dispatcher(
    text: str, project: Project, kernel: str, runner: Any, on_note: Any = None
) -> ClusterDispatcher:
    """The dispatcher of a sweep for the cluster spec `text` (`connect.parse`), started for
    `runner` (a `SweepRunner`: its backends, run service and build cache); the workers refused
    for its ranking, then the admitted ones, are told to `on_note`. The command line's
    `--cluster` and the Tuning panel's Cluster control both come here."""
    from .connect import parse

    note = on_note or (lambda text: None)
    dispatcher = ClusterDispatcher(parse(text), project, kernel, runner.backends, local_service=runner.service,
                                   cache_dir=runner.cache_dir, on_note=note)  # fmt: skip
    for refused in dispatcher.refused:
        note(f"worker {refused['worker']} {refused['reason']}")
    note(f"{len(dispatcher.workers)} worker(s) with {dispatcher.model} ({dispatcher.resource})")
    return dispatcher
