"""The wgpu runtime: WGSL or SPIR-V compute shaders on any wgpu adapter (Vulkan, Metal, DX12, GL).

Buffers sit at their `binding` in bind group 0; scalars reach the shader per spec["wgpu"]["mode"]
(a uniform buffer, immediates (push constants), or pipeline-overridable constants). Launches are
timed with timestamp queries when the device offers them, else with the wall clock around
submit + wait. Every naga / wgpu validation error becomes a `RuntimeFailure` carrying its text.
A 1-D grid beyond the adapter's workgroups-per-dimension limit is dispatched folded
(`workbench.run.spec.fold_grid`); `WgpuPrepared.grid` is the dispatch actually issued.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from workbench.build.wgpu_features import open_device
from workbench.run.runtimes import wgpu_pipeline
from workbench.run.runtimes.base import Prepared, Runtime, RuntimeFailure, check_arrays

#: Bytes per slice of an upload or a download: bounds the staging memory a transfer holds at once
#: (a whole-buffer staging copy of a 1 GiB buffer is 1 GiB more host memory).
TRANSFER_CHUNK = 64 << 20
#: Adapter limits worth showing for compute work.
LIMITS_SHOWN = (
    "max-compute-workgroup-size-x",
    "max-compute-workgroup-size-y",
    "max-compute-workgroup-size-z",
    "max-compute-invocations-per-workgroup",
    "max-compute-workgroups-per-dimension",
    "max-compute-workgroup-storage-size",
    "max-storage-buffer-binding-size",
    "max-uniform-buffer-binding-size",
    "max-buffer-size",
    "max-storage-buffers-per-shader-stage",
    "max-immediate-size",
)


def _import_wgpu():
    try:
        import wgpu
    except Exception as exc:  # ImportError, or a broken bundled library
        raise RuntimeFailure(f"wgpu-py cannot be imported: {exc}") from None
    return wgpu


def _timestamp_period_ns(queue: Any) -> float:
    """Nanoseconds per timestamp tick (wgpu-py has no public call: use the native one, guarded)."""
    try:
        from wgpu.backends.wgpu_native._api import libf

        period = float(libf.wgpuQueueGetTimestampPeriod(queue._internal))
        return period if period > 0 else 1.0
    except Exception:
        return 1.0


class WgpuPrepared(Prepared):
    """A compute pipeline with its buffers and bind group on one wgpu device."""

    def __init__(self, spec: dict[str, Any], device: Any, adapter_info: dict[str, Any]):
        wgpu = _import_wgpu()
        self._wgpu = wgpu
        self.spec = spec
        self.device = device
        self.queue = device.queue
        self.buffers: dict[str, Any] = {}
        self._lengths: dict[str, tuple[int, np.dtype]] = {}
        self._immediates: bytes | None = None
        self._query_set = None
        self._resolve = None
        self._sync_buffer = None
        self._work_done_works = True
        self._flush = None
        self.flush_bytes: int | None = None
        self._adapter_info = adapter_info
        try:
            self._build()
        except RuntimeFailure:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise RuntimeFailure(f"wgpu: {wgpu_pipeline.error_text(exc)}") from None

    # ----------------------------------------------------------------------- set-up

    def _build(self) -> None:
        device = self.device
        made = wgpu_pipeline.create(
            self._wgpu, self.spec, device, self._adapter_info, self.buffers, self._lengths
        )
        self.grid, self.pipeline, self.bind_group = made.grid, made.pipeline, made.bind_group
        self._immediates = made.immediates
        usage = self._wgpu.BufferUsage
        if "timestamp-query" in device.features:
            self._query_set = device.create_query_set(type="timestamp", count=2)
            self._resolve = device.create_buffer(size=16, usage=usage.QUERY_RESOLVE | usage.COPY_SRC)
            self._period_ns = _timestamp_period_ns(self.queue)
            self.timer_method = "wgpu-timestamps"
            self.timer_resolution_s = self._period_ns * 1e-9
        else:
            self.timer_method = "wall-clock"
            self.timer_resolution_s = time.get_clock_info("perf_counter").resolution

    # ----------------------------------------------------------------------- use

    def upload(self, arrays: dict[str, np.ndarray]) -> None:
        for name, array in check_arrays(self.spec, arrays).items():
            flat = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
            if flat.size <= TRANSFER_CHUNK:
                if flat.size:
                    self.queue.write_buffer(self.buffers[name], 0, flat)
                continue
            try:
                self._upload_sliced(self.buffers[name], flat)
            except Exception as exc:
                raise RuntimeFailure(
                    f"uploading buffer {name!r} failed: {wgpu_pipeline.error_text(exc)}"
                ) from None

    def _upload_sliced(self, buffer: Any, data: np.ndarray) -> None:
        """A large buffer's bytes through two reused mapped staging buffers, slice by slice: while
        the device copies one slice, the next is written into the other. (write_buffer would
        stage a fresh copy of the whole buffer: as much host memory again, newly allocated.)"""
        usage = self._wgpu.BufferUsage
        staging = [
            self.device.create_buffer(
                label=f"upload {i}",
                size=TRANSFER_CHUNK,
                usage=usage.MAP_WRITE | usage.COPY_SRC,
                mapped_at_creation=True,
            )  # fmt: skip
            for i in range(2)
        ]
        try:
            for index, start in enumerate(range(0, data.size, TRANSFER_CHUNK)):
                size = min(TRANSFER_CHUNK, data.size - start)
                slot = staging[index % 2]
                if index >= 2:
                    slot.map_sync(self._wgpu.MapMode.WRITE)  # waits for this slot's last copy
                slot.write_mapped(data[start : start + size], 0)
                slot.unmap()
                encoder = self.device.create_command_encoder()
                encoder.copy_buffer_to_buffer(slot, 0, buffer, start, size)
                self.queue.submit([encoder.finish()])
            self._wait_idle()
        finally:
            for slot in staging:
                if slot.map_state != "unmapped":
                    slot.unmap()
                slot.destroy()

    def launch(self, count: int = 1) -> float:
        """`count` dispatches in one compute pass (wgpu orders them with barriers, like back-to-back
        kernel launches); timestamps at the pass's beginning and end measure all of them."""
        if count < 1:
            raise RuntimeFailure(f"launch count must be at least 1, got {count}")
        try:
            encoder = self.device.create_command_encoder()
            timestamps = None
            if self._query_set is not None:
                timestamps = {
                    "query_set": self._query_set,
                    "beginning_of_pass_write_index": 0,
                    "end_of_pass_write_index": 1,
                }
            compute_pass = encoder.begin_compute_pass(timestamp_writes=timestamps)
            compute_pass.set_pipeline(self.pipeline)
            compute_pass.set_bind_group(0, self.bind_group)
            if self._immediates is not None:
                compute_pass.set_immediates(0, self._immediates, 0, len(self._immediates))
            for _ in range(count):
                compute_pass.dispatch_workgroups(*self.grid)
            compute_pass.end()
            if self._query_set is not None:
                encoder.resolve_query_set(self._query_set, 0, 2, self._resolve, 0)
            commands = encoder.finish()
            if self._query_set is None:
                start = time.perf_counter()
                self.queue.submit([commands])
                self._wait_idle()
                return time.perf_counter() - start
            self.queue.submit([commands])
            # read_buffer waits for the submitted work before mapping the copy.
            ticks = np.frombuffer(self.queue.read_buffer(self._resolve), dtype=np.uint64)
        except RuntimeFailure:
            raise
        except Exception as exc:
            raise RuntimeFailure(f"wgpu launch failed: {wgpu_pipeline.error_text(exc)}") from None
        delta = int(ticks[1]) - int(ticks[0])
        return max(delta, 0) * self._period_ns * 1e-9

    #: What a cold sample clears first: wgpu cannot query cache sizes, so a fixed 256 MiB, twice
    #: the L2 of the largest current GPUs (H200: 60 MiB; B200: 126 MiB) and far past llvmpipe's CPU
    #: caches. The clear runs on the GPU (a transfer command), waited for before the timed pass.
    FLUSH_BYTES = 256 << 20

    def flush_caches(self) -> None:
        try:
            if self._flush is None:
                limit = int(self.device.limits.get("max-buffer-size", self.FLUSH_BYTES))
                self.flush_bytes = min(self.FLUSH_BYTES, limit - limit % 4)
                self._flush = self.device.create_buffer(
                    label="l2 flush", size=self.flush_bytes, usage=self._wgpu.BufferUsage.COPY_DST
                )
            encoder = self.device.create_command_encoder()
            encoder.clear_buffer(self._flush)
            self.queue.submit([encoder.finish()])
            self._wait_idle()
        except Exception as exc:
            raise RuntimeFailure(f"wgpu: flushing caches failed: {wgpu_pipeline.error_text(exc)}") from None

    def nvml_device(self) -> dict[str, Any]:
        """How NVML finds this adapter: by PCI device id, for NVIDIA adapters only."""
        if self._adapter_info.get("vendor_id") != 0x10DE:
            return {}
        return {
            "pci_device_id": self._adapter_info.get("device_id"),
            "name": self._adapter_info.get("device"),
        }

    def _wait_idle(self) -> None:
        """Wait for the queue to drain. wgpu-py 0.32's on_submitted_work_done_sync fails against
        its bundled wgpu-native (callback signature mismatch), so fall back to reading a tiny
        buffer back, which waits for all earlier submissions."""
        if self._work_done_works:
            try:
                self.queue.on_submitted_work_done_sync()
                return
            except Exception:
                self._work_done_works = False
        if self._sync_buffer is None:
            self._sync_buffer = self.device.create_buffer(
                size=4, usage=self._wgpu.BufferUsage.COPY_SRC | self._wgpu.BufferUsage.COPY_DST
            )
        self.queue.read_buffer(self._sync_buffer)

    def download(self, names: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for name in names:
            length, dtype = self._length_of(name)
            out[name] = np.empty(length, dtype)
            self._read_into(name, out[name])
        return out

    def download_into(self, arrays: dict[str, np.ndarray]) -> None:
        """Copy the named buffers into the given host arrays (shared memory): one copy each, out of
        a mapped staging buffer, slice by slice."""
        for name, array in arrays.items():
            length, dtype = self._length_of(name)
            if array.size != length or array.dtype != dtype:
                raise RuntimeFailure(
                    f"buffer {name!r} holds {length} × {dtype}, not {array.size} × {array.dtype}"
                )
            self._read_into(name, array)

    def _length_of(self, name: str) -> tuple[int, np.dtype]:
        if name not in self._lengths:
            raise RuntimeFailure(f"no buffer named {name!r}; buffers: {', '.join(self._lengths)}")
        return self._lengths[name]

    def _read_into(self, name: str, out: np.ndarray) -> None:
        """The buffer's bytes into `out` through one reused staging buffer of at most
        TRANSFER_CHUNK bytes: copy on the device, map, copy from the mapping (no extra copy)."""
        target = out.reshape(-1).view(np.uint8)
        if target.size == 0:
            return
        usage = self._wgpu.BufferUsage
        staging = self.device.create_buffer(
            label="download", size=min(TRANSFER_CHUNK, target.size), usage=usage.MAP_READ | usage.COPY_DST
        )
        try:
            for start in range(0, target.size, TRANSFER_CHUNK):
                size = min(TRANSFER_CHUNK, target.size - start)
                encoder = self.device.create_command_encoder()
                encoder.copy_buffer_to_buffer(self.buffers[name], start, staging, 0, size)
                self.queue.submit([encoder.finish()])
                staging.map_sync(self._wgpu.MapMode.READ, 0, size)
                try:
                    view = staging.read_mapped(0, size, copy=False)
                    target[start : start + size] = np.frombuffer(view, np.uint8)
                    del view  # the mapping goes away with unmap
                finally:
                    staging.unmap()
        except Exception as exc:
            raise RuntimeFailure(f"reading buffer {name!r} failed: {wgpu_pipeline.error_text(exc)}") from None
        finally:
            staging.destroy()

    def close(self) -> None:
        for buffer in self.buffers.values():
            try:
                buffer.destroy()
            except Exception:
                pass
        self.buffers = {}
        for resource in (self._resolve, self._sync_buffer, self._flush):
            if resource is not None:
                try:
                    resource.destroy()
                except Exception:
                    pass
        self._resolve = None
        self._sync_buffer = None
        self._flush = None
        self._query_set = None


class WgpuRuntime(Runtime):
    name = "wgpu"

    def __init__(self) -> None:
        self._adapters: list[Any] | None = None
        self._devices: dict[int, Any] = {}

    def adapters(self) -> list[Any]:
        """Every adapter, in `enumerate_adapters_sync()` order (the device index)."""
        if self._adapters is None:
            wgpu = _import_wgpu()
            try:
                self._adapters = list(wgpu.gpu.enumerate_adapters_sync())
            except Exception as exc:
                raise RuntimeFailure(
                    f"wgpu could not list adapters: {wgpu_pipeline.error_text(exc)}"
                ) from None
        return self._adapters

    def available(self) -> tuple[bool, str]:
        try:
            adapters = self.adapters()
        except RuntimeFailure as exc:
            return False, str(exc)
        if not adapters:
            return (
                False,
                "wgpu found no adapter (no Vulkan/Metal/DX12/GL driver; on Linux try mesa-vulkan-drivers)",
            )
        return True, ""

    def devices(self) -> list[dict[str, Any]]:
        out = []
        for index, adapter in enumerate(self.adapters()):
            info = dict(adapter.info)
            limits = dict(adapter.limits)
            features = sorted(adapter.features)
            out.append(
                {
                    "runtime": "wgpu",
                    "index": index,
                    "name": info.get("device") or info.get("description") or f"adapter {index}",
                    "spec": f"wgpu:{index}",
                    "backend_api": info.get("backend_type", ""),
                    "adapter_type": info.get("adapter_type", ""),
                    "vendor": info.get("vendor", ""),
                    "vendor_id": info.get("vendor_id"),
                    "device_id": info.get("device_id"),
                    "description": info.get("description", ""),
                    "limits": {k: limits[k] for k in LIMITS_SHOWN if k in limits},
                    "timestamp_query": "timestamp-query" in features,
                    "features": features,
                    "peak_gbps": None,
                    "peak_gflops": None,
                }
            )
        return out

    def device(self, index: int) -> tuple[Any, dict[str, Any]]:
        """The (cached) device of adapter `index`, with every wanted feature the adapter has."""
        adapters = self.adapters()
        if not 0 <= index < len(adapters):
            names = ", ".join(f"wgpu:{i} {a.info.get('device', '')}" for i, a in enumerate(adapters))
            raise RuntimeFailure(f"no wgpu adapter {index}; adapters: {names or 'none'}")
        adapter = adapters[index]
        if index not in self._devices:
            try:
                # The build's naga validator opens its device the same way (one list of features).
                self._devices[index] = open_device(adapter, f"workbench wgpu:{index}")
            except Exception as exc:
                raise RuntimeFailure(
                    f"wgpu could not open adapter {index}: {wgpu_pipeline.error_text(exc)}"
                ) from None
        return self._devices[index], dict(adapter.info)

    def prepare(self, spec: dict[str, Any], device_index: int) -> Prepared:
        device, info = self.device(int(device_index))
        return WgpuPrepared(spec, device, info)


RUNTIME = WgpuRuntime()
