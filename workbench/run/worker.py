"""A worker process: one runtime (cpu, cuda, wgpu) serving requests over its stdin and stdout.

    python -m workbench.run.worker RUNTIME

Kernels run here, not in the caller, so a segfault, an illegal address or an endless loop takes
down only this process. stdout carries nothing but protocol frames: at start-up the frame stream
moves to a private copy of file descriptor 1 and descriptor 1 itself is pointed at stderr, so
prints from Python and from native libraries land in the diagnostics stream instead.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import replace
from typing import Any, BinaryIO

import numpy as np

from workbench.run.protocol import Connection, ProtocolEOF

PROTOCOL_VERSION = 1
#: The environment variable naming the descriptor of the worker's end of the shm.FdChannel.
FD_SOCKET_ENV = "WORKBENCH_WORKER_FD_SOCKET"
#: At most one heartbeat frame per this many seconds while measuring.
HEARTBEAT_S = 0.1
#: Ops after whose failure the device state is uncertain: the caller restarts the worker.
_FATAL_OPS = ("launch", "measure", "download")


class WorkerState:
    """The runtime of this worker and the kernel it holds prepared (at most one)."""

    def __init__(self, runtime_name: str, channel: Any = None):
        self.runtime_name = runtime_name
        self.channel = channel  # shm.FdChannel: shared segments arrive here (None: frames only)
        self._runtime: Any = None
        self.prepared: Any = None
        self.uploaded: dict[str, np.ndarray] = {}
        # Shared uploads: the in/inout originals `measure` restores from, and whether the runtime
        # computes in the shared buffers themselves (cpu) instead of copying them to a device.
        self.originals: dict[str, np.ndarray] = {}
        # Runtimes that copy to a device upload in/inout buffers straight from the read-only input
        # segments; their outputs come back into these fresh segments ("receive").
        self.receive: dict[str, np.ndarray] = {}
        # The input (and `receive`) segments of the last upload, mapped once and kept: the next
        # backend on this worker (nvptx then cuda-c) reuses the mapping, and the cuda runtime its
        # page lock. Keyed by the segment's identity (device, inode): a segment lives while mapped.
        self.input_maps: dict[tuple, np.ndarray] = {}
        self.bound = False
        self.detach = False

    @property
    def runtime(self) -> Any:
        if self._runtime is None:
            from workbench.run.runtimes import get_runtime

            self._runtime = get_runtime(self.runtime_name)
        return self._runtime

    def close_prepared(self) -> None:
        prepared, self.prepared = self.prepared, None
        self.uploaded, self.originals, self.receive = {}, {}, {}
        self.bound = self.detach = False
        if prepared is not None:
            prepared.close()

    def close(self) -> None:
        """Release the prepared kernel, then the runtime's own resources (CUDA contexts)."""
        self.close_prepared()
        close_runtime = getattr(self._runtime, "close", None)
        if close_runtime is not None:
            close_runtime()

    def need_prepared(self) -> Any:
        if self.prepared is None:
            from workbench.run.runtimes import RuntimeFailure

            raise RuntimeFailure("no kernel is prepared in this worker (send prepare first)")
        return self.prepared

    def handle(
        self, header: dict[str, Any], arrays: dict[str, np.ndarray], progress=None
    ) -> tuple[dict[str, Any], dict[str, np.ndarray] | None]:
        """Answer one request; `progress(dict)` sends an interim frame (heartbeats of measure)."""
        op = header.get("op")
        if op == "hello":
            return {
                "runtime": self.runtime_name,
                "pid": os.getpid(),
                "protocol": PROTOCOL_VERSION,
                "python": sys.version.split()[0],
                "shared_memory": self.channel is not None,
                "workbench": _version(),
            }, None
        if op == "devices":
            available, reason = self.runtime.available()
            devices = self.runtime.devices() if available else []
            return {"available": bool(available), "reason": reason, "devices": devices}, None
        if op == "prepare":
            self.close_prepared()
            device_index = int(header.get("device_index", header["spec"].get("device_index", 0)))
            self.prepared = self.runtime.prepare(header["spec"], device_index)
            return {
                # The runtime computes in host buffers it is given (cpu): they must be writable
                # copies. Others copy to a device and can read the shared inputs themselves.
                "binds": hasattr(self.prepared, "bind"),
                "timer_method": self.prepared.timer_method,
                "timer_resolution_s": float(self.prepared.timer_resolution_s),
            }, None
        if op == "upload":
            if "shared" in header:
                return self.upload_shared(header["shared"]), None
            self.need_prepared().upload(arrays)
            self.uploaded = dict(arrays)  # kept so `measure` can restore in-place buffers
            self.originals, self.receive, self.bound, self.detach = {}, {}, False, False
            return {}, None
        if op == "launch":
            count = int(header.get("count", 1))
            if count < 1:
                raise ValueError(f"launch count must be at least 1, got {count}")
            prepared = self.need_prepared()
            reply = {"seconds": float(prepared.launch(count)), "count": count}
            findings = getattr(prepared, "findings", None)  # cpu-sim's checks (runtimes/cpu_launch.py)
            report = findings() if findings is not None else None
            if report is not None:
                reply["findings"] = report
            writers = getattr(prepared, "writers", None)  # cpu-sim's element → writer arrays
            return reply, (writers() if writers is not None else None)
        if op == "measure":
            return self.measure(header, progress), None
        if op == "download":
            names = list(header.get("names", []))
            if (
                header.get("into_shared")
                and self.uploaded
                and all(self._shared_target(n) is not None for n in names)
            ):
                self.download_shared(names)
                if header.get("timing_follows"):
                    self._detach()  # the copy counts as the download's, not the timing's
                return {"shared": names}, None
            return {}, self.need_prepared().download(names)
        if op == "close":
            self.close_prepared()
            return {}, None
        if op == "forget_inputs":  # the run is over: its inputs may go (see input_maps)
            self._keep_inputs({})
            return {}, None
        if op == "shutdown":
            self.close_prepared()
            return {"bye": True}, None
        valid = "hello, devices, prepare, upload, launch, measure, download, close, forget_inputs, shutdown"
        raise ValueError(f"unknown op {op!r}; valid ops: {valid}")

    def upload_shared(self, entries: list[dict[str, Any]]) -> dict[str, Any]:
        """Map the segments that came with this request (in `entries` order) and hand them to the
        runtime: a device copy from the mapping, or (cpu) the kernel's buffers themselves.

        Entries: {"name", "dtype", "length", "role"}; role "buffer" (writable: out/inout),
        "input" (read-only: a write from the kernel faults instead of changing the inputs every
        backend shares), "original" (an inout buffer's input, restored before timed samples) or
        "receive" (writable, not uploaded: where a device runtime downloads that buffer, which it
        uploaded from its read-only input)."""
        from workbench.run import shm
        from workbench.run.runtimes import RuntimeFailure

        prepared = self.need_prepared()
        if self.channel is None:
            raise RuntimeFailure("this worker has no shared-memory channel; send arrays in frames")
        fds = self.channel.receive()
        try:
            if len(fds) != len(entries):
                raise RuntimeFailure(f"{len(entries)} shared buffers announced, {len(fds)} received")
            arrays: dict[str, np.ndarray] = {}
            originals: dict[str, np.ndarray] = {}
            receive: dict[str, np.ndarray] = {}
            kept: dict[tuple, np.ndarray] = {}
            for entry, fd in zip(entries, fds, strict=True):
                role = entry.get("role", "buffer")
                writable = role in ("buffer", "receive")
                if role in ("input", "original", "receive"):
                    # Kept by segment identity: inputs for the run's next backend, and `receive`
                    # segments the run service recycles from one backend to the next.
                    stat = os.fstat(fd)
                    key = (stat.st_dev, stat.st_ino, str(entry["dtype"]), int(entry["length"]), writable)
                    view = kept.get(key)
                    if view is None:
                        view = self.input_maps.get(key)
                    if view is None:
                        view = shm.map_fd(fd, entry["dtype"], int(entry["length"]), writable=writable)
                    kept[key] = view
                else:
                    view = shm.map_fd(fd, entry["dtype"], int(entry["length"]), writable=writable)
                target = {"original": originals, "receive": receive}.get(role, arrays)
                target[str(entry["name"])] = view
        finally:
            for fd in fds:
                os.close(fd)
        self._keep_inputs(kept)
        bind = getattr(prepared, "bind", None)
        if receive and bind is not None:
            raise RuntimeFailure("this runtime computes in host buffers: send writable copies, not inputs")
        if bind is not None:
            bind(arrays)  # host memory is the device's: the kernel works in the shared buffers
        else:
            prepared.upload(arrays)
        self.uploaded, self.originals, self.receive = arrays, originals, receive
        self.bound, self.detach = bind is not None, False
        return {"bound": self.bound}

    def _keep_inputs(self, kept: dict[tuple, np.ndarray]) -> None:
        """Keep this upload's input mappings; let the others go (unlocked first, where the
        runtime page-locked them)."""
        release = getattr(self._runtime, "release_host", None)
        for key, view in self.input_maps.items():
            if key not in kept and release is not None:
                try:
                    release(view)
                except Exception:
                    pass  # the mapping goes anyway; a stale lock dies with the context
        self.input_maps = kept

    def _shared_target(self, name: str) -> np.ndarray | None:
        """The shared segment a buffer's output goes into (None: it must travel in a frame)."""
        if name in self.receive:
            return self.receive[name]
        array = self.uploaded.get(name)
        return array if array is not None and array.flags.writeable else None

    def download_shared(self, names: list[str]) -> None:
        """Outputs into the shared buffers the caller reads (nothing to do where the kernel ran
        in them); from then on they are the caller's: a later `measure` works on private copies."""
        prepared = self.need_prepared()
        if not self.bound:
            targets = {n: self._shared_target(n) for n in names}
            into = getattr(prepared, "download_into", None)
            if into is not None:
                into(targets)
            else:
                for name, array in prepared.download(names).items():
                    np.copyto(targets[name], array)
        else:
            self.detach = True

    def _detach(self) -> None:
        """Rebind the written buffers to private copies before timing rewrites them (the caller
        keeps the verified outputs in the shared ones)."""
        if self.bound and self.detach:
            private = {n: (a.copy() if a.flags.writeable else a) for n, a in self.uploaded.items()}
            self.prepared.bind(private)
            self.uploaded, self.detach = private, False

    def _restore(self) -> None:
        """Put the inputs back before a timed sample ([kernel.timing] fresh_inputs)."""
        if self.bound:
            for name, original in self.originals.items():
                np.copyto(self.uploaded[name], original)
        elif self.originals:
            self.prepared.upload({**self.uploaded, **self.originals})
        else:
            self.prepared.upload(self.uploaded)

    def measure(self, header: dict[str, Any], progress) -> dict[str, Any]:
        """The timing protocol run here, launches back to back (no round trip between them);
        a heartbeat frame goes out at most every HEARTBEAT_S so the caller's per-launch deadline
        still applies. Replies `{"stats", "conditions"}`: the conditions are the cache policy,
        NVML's clocks before and after, and energy per launch. With `l2 = "both"` the stats are
        the warm ones and `conditions["l2_cold"]` summarizes a cold measurement taken right after."""
        from workbench.run import nvml
        from workbench.run.runtimes import RuntimeFailure
        from workbench.run.timing import measure, options_from_dict

        prepared = self.need_prepared()
        try:
            options = options_from_dict(header.get("options") or {})
        except ValueError as exc:
            raise RuntimeFailure(str(exc)) from None
        flush = getattr(prepared, "flush_caches", None)
        if options.l2 != "warm" and flush is None:
            raise RuntimeFailure(
                f"--l2 {options.l2} flushes GPU caches; the {self.runtime_name} runtime has none to flush "
                "(cold L2 is available on the cuda and wgpu runtimes)"
            )
        last = [time.monotonic()]

        def on_launch(phase: str, done: int) -> None:
            now = time.monotonic()
            if progress is not None and now - last[0] >= HEARTBEAT_S:
                last[0] = now
                progress({"phase": phase, "done": done})

        # With `restore` ([kernel.timing] fresh_inputs), the last upload goes up again before every
        # sample: a kernel whose work depends on the data it rewrites, timed on its own previous
        # output, may do different work (or none, or endless work). Runtimes take whole uploads.
        self._detach()
        restore = bool(header.get("restore")) and bool(self.uploaded)
        resolution = float(header.get("resolution_s") or prepared.timer_resolution_s)

        def timed(cold: bool):
            def launch(count: int) -> float:
                if restore:
                    self._restore()  # not timed: launch() reads the runtime's own timer
                if cold:
                    flush()  # not timed either, and waited for
                return prepared.launch(count)

            # A batch would run the kernel on its own output between restores: one launch a sample.
            policy = replace(
                options, l2="cold" if cold else "warm", max_batch=1 if restore else options.max_batch
            )
            return measure(launch, resolution, prepared.timer_method, policy, on_launch=on_launch)

        hint = getattr(prepared, "nvml_device", lambda: {})()
        device = nvml.find_device(hint)
        before = nvml.clocks(device)
        stats = timed(cold=options.l2 == "cold")
        cold_stats = timed(cold=True) if options.l2 == "both" else None
        after = nvml.clocks(device)
        conditions: dict[str, Any] = {
            "l2": options.l2,
            "l2_flush_bytes": getattr(prepared, "flush_bytes", None) if options.l2 != "warm" else None,
            "l2_cold": None,
            "clocks_before": before,
            "clocks_after": after,
            "clocks_locked": nvml.locked(before),
            "clock_source": "nvml" if device is not None else None,
            "energy_per_launch_j": None,
            "power_w": None,
            "energy_batch": None,
        }
        if cold_stats is not None:
            conditions["l2_cold"] = {
                k: getattr(cold_stats, k) for k in ("median_s", "iqr_s", "min_s", "max_s", "n", "batch")
            }
        if restore and device is not None and options.energy_batch_s > 0:
            # Back-to-back launches of an in-place kernel run on their own output (other work).
            conditions["energy_batch"] = {
                "note": "not measured: fresh_inputs kernels run one launch at a time"
            }
        elif device is not None and options.energy_batch_s > 0 and stats.median_s > 0:
            conditions.update(
                self._energy(prepared, device, stats.median_s, options.energy_batch_s, on_launch)
            )
        return {"stats": stats.to_dict(), "conditions": conditions}

    @staticmethod
    def _energy(prepared: Any, device: Any, median_s: float, batch_s: float, on_launch) -> dict[str, Any]:
        """Energy per launch: NVML's total energy counter around back-to-back launches lasting at
        least `batch_s` (the counter updates every few tens of milliseconds)."""
        from workbench.run import nvml

        count = max(1, min(1 << 17, int(batch_s / median_s) + 1))
        start_mj = nvml.energy_mj(device)
        if start_mj is None:
            return {}
        started = time.perf_counter()
        prepared.launch(count)
        wall = time.perf_counter() - started
        on_launch("energy", count)
        end_mj = nvml.energy_mj(device)
        if end_mj is None or end_mj <= start_mj:
            return {
                "energy_batch": {"launches": count, "wall_s": wall, "note": "the counter did not advance"}
            }
        joules = (end_mj - start_mj) / 1000.0
        return {
            "energy_per_launch_j": joules / count,
            "power_w": joules / wall if wall > 0 else None,
            "energy_batch": {"launches": count, "wall_s": wall, "joules": joules},
        }


def serve(reader: BinaryIO, writer: BinaryIO, runtime_name: str, channel: Any = None) -> int:
    """Answer requests from `reader` on `writer` until shutdown or the end of the stream."""
    from workbench.run.runtimes import RuntimeFailure

    connection = Connection(reader, writer)
    state = WorkerState(runtime_name, channel)
    while True:
        try:
            header, arrays = connection.receive()
        except ProtocolEOF:
            break
        op = header.get("op")
        out: dict[str, np.ndarray] | None = None

        def progress(data: dict[str, Any]) -> None:
            connection.send({"progress": data})

        try:
            reply, out = state.handle(header, arrays, progress)
        except RuntimeFailure as exc:
            reply = {"error": str(exc), "fatal": bool(getattr(exc, "fatal", False)) or op in _FATAL_OPS}
        except Exception as exc:  # any bug or library error goes back as a message, not a dead worker
            traceback.print_exc(file=sys.stderr)
            reply = {"error": f"{type(exc).__name__}: {exc}", "fatal": op in _FATAL_OPS}
        connection.send(reply, out)
        if op == "shutdown":
            break
    state.close()
    return 0


def _version() -> str:
    from workbench import __version__

    return __version__


def _private_streams() -> tuple[BinaryIO, BinaryIO]:
    """Move the frame streams off descriptors 0 and 1; point 1 at stderr and 0 at /dev/null."""
    frames_in = os.fdopen(os.dup(0), "rb")
    frames_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    return frames_in, frames_out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1:
        print("usage: python -m workbench.run.worker RUNTIME   (cpu, cuda or wgpu)", file=sys.stderr)
        return 2
    reader, writer = _private_streams()
    _exit_with_parent()
    if os.environ.get("WB_WORKER_EXIT_ON_HANGUP"):
        _exit_on_hangup(reader.fileno())
    return serve(reader, writer, argv[0], _fd_channel())


def _exit_with_parent(period_s: float = 0.5) -> None:
    """End this process when the one that started it is gone, even in the middle of a launch
    (its stdin's end of file is only seen between requests): nothing of a killed run lingers,
    neither this process nor the shared segments it maps."""
    import threading

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(period_s)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="wb-worker-parent-watch", daemon=True).start()


def _fd_channel() -> Any:
    """The descriptor channel the caller passed (FD_SOCKET_ENV names it), or None (a remote
    worker, or a caller without shared memory: arrays then travel in frames)."""
    value = os.environ.pop(FD_SOCKET_ENV, "")
    if not value:
        return None
    import socket

    from workbench.run.shm import FdChannel

    try:
        return FdChannel(socket.socket(fileno=int(value)))
    except (OSError, ValueError):
        return None


def _exit_on_hangup(fd: int) -> None:
    """Leave as soon as the request stream's writer is gone, even inside a long kernel launch.

    A worker on a GPU host talks through ssh: when the connection drops (or the caller kills its
    ssh client on a deadline), sshd closes the pipe but signals nobody; without this the remote
    worker would spin on in an endless kernel."""
    import select
    import threading

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, 0)  # POLLHUP and POLLERR are always reported
        while True:
            for _, events in poller.poll():
                if events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    os._exit(3)

    threading.Thread(target=watch, name="wb-hangup-watch", daemon=True).start()


if __name__ == "__main__":
    raise SystemExit(main())
