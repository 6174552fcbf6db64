"""The wgpu runtime's set-up: a shader module loaded and checked, its entry point picked, the
buffers made and bound at the bindings the shader declares, the scalars passed as the spec's mode
says (a uniform buffer, immediates, or pipeline-overridable constants), and the compute pipeline
with its bind group. Errors are `RuntimeFailure`s with naga's / wgpu's text; the launches and their
timing stay in `wgpu_runtime.py`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workbench.build.wgpu_features import unsupported_here
from workbench.run.runtimes.base import RuntimeFailure
from workbench.run.runtimes.shader_info import ShaderInfo, spirv_info, wgsl_info
from workbench.run.spec import buffer_args, dtype_of, fold_grid, scalar_args


@dataclass
class Pipeline:
    """What a launch needs: the dispatch issued (a folded grid where the 1-D one is too long), the
    pipeline, its bind group and the immediates (None unless the scalars are push constants)."""

    grid: list[int] | tuple[int, ...]
    pipeline: Any
    bind_group: Any
    immediates: bytes | None


def error_text(exc: BaseException) -> str:
    """wgpu's error text (naga's diagnostics included), trimmed of blank lines."""
    text = str(exc).strip() or type(exc).__name__
    return "\n".join(line for line in text.splitlines() if line.strip())


def pack_scalars(args: list[dict[str, Any]]) -> bytes:
    """Scalars in launch order, 4 bytes each (8 for 64-bit types), padded to a multiple of 16."""
    data = bytearray()
    for arg in args:
        try:
            data += np.array(arg["value"], dtype=dtype_of(arg["type"])).tobytes()
        except (OverflowError, ValueError, TypeError) as exc:
            raise RuntimeFailure(
                f"scalar {arg['name']!r} = {arg['value']!r} does not fit {arg['type']}: {exc}"
            ) from None
    data += b"\0" * (-len(data) % 16 if data else 16)
    return bytes(data)


def pick_entry(entry: str, info: ShaderInfo, path: str, origin: str = "") -> str:
    if not info.entry_points:
        return entry  # nothing found by the scan: let wgpu decide
    # rust-gpu names entry points by their Rust path; cargo-gpu's WGSL name drops the `::`.
    for candidate in (entry, entry.replace("::", ""), entry.split("::")[-1]):
        if candidate in info.entry_points:
            return candidate
    raise RuntimeFailure(
        f"{Path(path).name} has no compute entry point {entry!r}; "
        f"its entry points: {', '.join(info.entry_points)}"
        + (f" (the name looked up: {origin})" if origin else "")
    )


def declared_of(info: Any, binding: int, arg: dict[str, Any]) -> str | None:
    """The layout type of `binding` as the shader declares it; None where a shader that declares
    its bindings does not use this one; the buffer's direction where nothing is declared."""
    if info.bindings:
        return info.bindings.get(binding)
    return "read-only-storage" if arg["direction"] == "in" else "storage"


def load_module(
    spec: dict[str, Any], device: Any, adapter_info: dict[str, Any] | None
) -> tuple[Any, ShaderInfo, bool]:
    """The shader module of `spec`'s artifact on `device`, its scanned entry points and bindings, and
    whether it is WGSL; naga's rejection as a `RuntimeFailure` that says why where it can."""
    artifact = spec["artifact"]
    path, kind = artifact["path"], artifact["kind"]
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise RuntimeFailure(f"cannot read shader {path}: {exc.strerror or exc}") from None
    try:
        if kind == "spirv":
            info, code, is_wgsl = spirv_info(raw), raw, False
        elif kind == "wgsl":
            code = raw.decode("utf-8")
            info, is_wgsl = wgsl_info(code), True
        else:
            raise RuntimeFailure(f"the wgpu runtime runs spirv or wgsl artifacts, not {kind!r}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise RuntimeFailure(f"{path}: {exc}") from None
    try:
        module = device.create_shader_module(label=Path(path).name, code=code)
    except Exception as exc:
        text = error_text(exc)
        name = (adapter_info or {}).get("device") or "this device"
        why = unsupported_here(text, name, device.features)
        raise RuntimeFailure(
            f"{why + chr(10) if why else ''}naga/wgpu rejected the {kind} module {Path(path).name}:\n{text}"
        ) from None
    return module, info, is_wgsl


def create(
    wgpu: Any,
    spec: dict[str, Any],
    device: Any,
    adapter_info: dict[str, Any] | None,
    buffers: dict[str, Any],
    lengths: dict[str, tuple[int, np.dtype]],
) -> Pipeline:
    """The compute pipeline of `spec` on `device`: its buffers (added to `buffers` and `lengths` as
    they are made, so the caller can release them if a later step fails), the scalars as the spec's
    mode passes them, the bind group over every binding the shader declares."""
    module, info, is_wgsl = load_module(spec, device, adapter_info)
    artifact = spec["artifact"]
    entry = pick_entry(artifact["entry"], info, artifact["path"], artifact.get("entry_origin", ""))
    max_groups = int(device.limits.get("max-compute-workgroups-per-dimension", 65535))
    try:
        # A 1-D grid past the per-dimension limit is folded into 2-D/3-D: kernels recover the
        # linear workgroup from num_workgroups (docs/manifest.md, "Large grids on wgpu").
        grid = fold_grid(spec["grid"], max_groups)
    except ValueError as exc:
        raise RuntimeFailure(str(exc)) from None

    entries: list[dict[str, Any]] = []  # (binding, layout type, buffer)
    usage = wgpu.BufferUsage
    for arg in buffer_args(spec):
        name, length, dtype = arg["name"], int(arg["length"]), dtype_of(arg["type"])
        size = max(length * dtype.itemsize, 16)
        size += -size % 16  # a multiple of 16: a shader may view any buffer as vec4<f32>
        buffer = device.create_buffer(
            label=name,
            size=size,
            usage=usage.STORAGE | usage.UNIFORM | usage.COPY_SRC | usage.COPY_DST,
        )
        buffers[name] = buffer
        lengths[name] = (length, dtype)
        binding = arg.get("binding")
        if binding is None:
            raise RuntimeFailure(f"buffer {name!r} has no wgpu binding (set `binding` in workbench.toml)")
        # The buffer at its binding, and at its further bindings (`views`), where the shader
        # views the same memory under another type (array<vec4<f32>> beside array<f32>).
        for number in [binding, *(arg.get("views") or ())]:
            declared = declared_of(info, number, arg)
            if declared is None:
                continue  # the shader does not use it: it stays out of the layout
            if number == binding and declared == "read-only-storage" and arg["direction"] != "in":
                raise RuntimeFailure(
                    f"buffer {name!r} is {arg['direction']!r} but the shader declares binding {binding} "
                    "read-only"
                )
            entries.append({"binding": number, "type": declared, "buffer": buffer, "size": size})

    scalars = scalar_args(spec)
    wgpu_opts = spec.get("wgpu") or {}
    mode = wgpu_opts.get("mode", "uniform")
    constants: dict[str, float] = {}
    immediate_size = 0
    immediates: bytes | None = None
    if scalars and mode == "uniform":
        params_binding = wgpu_opts.get("params_binding")
        if params_binding is None:
            raise RuntimeFailure("scalars go in a uniform buffer but [kernel.wgpu] params_binding is not set")
        data = pack_scalars(scalars)
        params = device.create_buffer_with_data(
            label="params", data=data, usage=usage.UNIFORM | usage.STORAGE | usage.COPY_DST
        )
        buffers["__params__"] = params
        if not info.bindings or params_binding in info.bindings:
            declared = info.bindings.get(params_binding, "uniform")
            entries.append({"binding": params_binding, "type": declared, "buffer": params, "size": len(data)})
    elif scalars and mode == "push":
        if "immediates" not in device.features:
            raise RuntimeFailure(
                f"scalars are push constants but {(adapter_info or {}).get('device', 'this adapter')} "
                "has no 'immediates' feature; use scalars = \"uniform\""
            )
        immediates = pack_scalars(scalars)
        immediate_size = len(immediates)
        limit = device.limits.get("max-immediate-size", 0)
        if immediate_size > limit:
            raise RuntimeFailure(f"{immediate_size} bytes of push constants exceed the device's {limit}")
    elif scalars and mode == "override":
        ids = wgpu_opts.get("override_ids") or {}
        for arg in scalars:
            constants[str(ids.get(arg["name"], arg["name"]))] = arg["value"]
    elif scalars:
        raise RuntimeFailure(f"unknown wgpu scalar mode {mode!r}; modes: uniform, push, override")
    if is_wgsl:
        for name, value in (spec.get("constants") or {}).items():
            if name in info.overrides and name not in constants:
                constants[name] = value

    declared_missing = sorted(set(info.bindings) - {e["binding"] for e in entries})
    if declared_missing:
        raise RuntimeFailure(
            f"the shader declares binding(s) {', '.join(map(str, declared_missing))} in group 0 "
            "but no kernel argument is bound there"
        )
    entries.sort(key=lambda e: e["binding"])
    layout = device.create_bind_group_layout(
        entries=[
            {
                "binding": e["binding"],
                "visibility": wgpu.ShaderStage.COMPUTE,
                "buffer": {"type": e["type"]},
            }
            for e in entries
        ]
    )
    pipeline_layout = device.create_pipeline_layout(
        bind_group_layouts=[layout], immediate_size=immediate_size
    )
    compute: dict[str, Any] = {"module": module, "entry_point": entry}
    if constants:
        compute["constants"] = constants
    try:
        pipeline = device.create_compute_pipeline(layout=pipeline_layout, compute=compute)
    except Exception as exc:
        raise RuntimeFailure(
            f"naga/wgpu could not create the compute pipeline for {entry!r}:\n{error_text(exc)}"
        ) from None
    bind_group = device.create_bind_group(
        layout=layout,
        entries=[
            {"binding": e["binding"], "resource": {"buffer": e["buffer"], "offset": 0, "size": e["size"]}}
            for e in entries
        ],
    )
    return Pipeline(grid, pipeline, bind_group, immediates)
