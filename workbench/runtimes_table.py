"""The runtimes that execute built kernels: one row each, read by run/, the ceilings and the window.

Adding a runtime means a row here and its module under `workbench/run/runtimes/` (defining
`RUNTIME`); the device probe, the picker's groups and the ceilings' device list follow the table.
Qt-free and importing nothing of the workbench, so build/, run/ and ui/ all read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuntimeRow:
    name: str
    #: As the device picker and messages title it.
    title: str
    #: The module under `workbench.run.runtimes` that defines `RUNTIME` (imported lazily: GPU libraries).
    module: str
    #: Artifact kinds its `prepare` loads (a launch spec's `artifact.kind`).
    artifact_kinds: tuple[str, ...]
    #: What its ceilings probe runs (`workbench.run.ceilings`), as the ceilings' notes say it.
    ceilings_kernels: str
    #: The fields of a probed device (`list_devices()`) that name its driver, in order: a new
    #: driver may move the ceilings, so they key the ceilings' cache (`ceilings.driver_of`). The
    #: first present field is taken, or all present ones joined when `driver_joined`.
    driver_fields: tuple[str, ...] = ()
    driver_joined: bool = False
    #: How the driver reads in the cache key (`{}`: the value).
    driver_format: str = "{}"
    #: Whether every buffer of a kernel it runs needs a `binding` in the manifest (wgpu places
    #: each buffer at its binding in bind group 0; `build.manifest_check` says so when missing).
    buffer_bindings: bool = False


#: In display order: the device picker's groups, `workbench doctor`'s devices, the probe's answer.
RUNTIME_ROWS: tuple[RuntimeRow, ...] = (
    # The cpu's "driver" is its thread count (`cores`): the ceilings scale with it.
    RuntimeRow(
        "cpu", "CPU", "cpu", ("cdylib",), "Rust cdylib on every core", ("cores",), driver_format="{} threads"
    ),
    RuntimeRow("cuda", "CUDA", "cuda", ("ptx",), "PTX", ("driver_version", "driver")),
    RuntimeRow(
        "wgpu",
        "wgpu",
        "wgpu_runtime",
        ("spirv", "wgsl"),
        "WGSL",
        ("backend_api", "description"),
        driver_joined=True,
        buffer_bindings=True,
    ),
)
RUNTIME_TABLE: dict[str, RuntimeRow] = {row.name: row for row in RUNTIME_ROWS}
RUNTIMES: tuple[str, ...] = tuple(RUNTIME_TABLE)
#: Every artifact kind some runtime loads (build.json's `kernels.<name>.kind`).
ARTIFACT_KINDS: tuple[str, ...] = tuple(dict.fromkeys(k for row in RUNTIME_ROWS for k in row.artifact_kinds))


def runtime_title(name: str) -> str:
    """The runtime's title ("CPU", "CUDA", "wgpu"); an unknown name (a remote host's) as it is."""
    row = RUNTIME_TABLE.get(name)
    return row.title if row else name
