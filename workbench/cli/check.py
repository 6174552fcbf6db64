"""`workbench check PATH`: validate a project's manifest and describe its kernels.

Besides the loader's checks, every length, scalar, launch dimension and metric is evaluated at
the default sizes (`Kernel.evaluate`): a negative length, an empty buffer the kernel writes,
buffers larger than this machine's memory or a scalar its type cannot hold is an error at the
line of the key, naming the argument (exit status 2). So is what the manifest promises and its
sources break (`workbench.build.manifest_check`): a buffer without `binding` while a wgpu backend
is listed, `threads` that differ from the WGSL reference's `@workgroup_size(...)`. And the kernel API
crate the project's Cargo.toml names (`kernel_api.check_crate`, as every cargo build does first):
broken or of another API version is an error naming the fix; missing (or a link that leads nowhere)
is a note, since the first build places the workbench's copy there. `check` itself writes nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from workbench.backends import BACKENDS, RUST_BACKENDS
from workbench.build import manifest_check
from workbench.kernel_api import CrateProblem, check_crate
from workbench.manifest import BufferArg, Kernel, Manifest
from workbench.project import Project
from workbench.run.buffers import host_memory_bytes
from workbench.units import format_tolerance


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "check",
        help="validate a project's workbench.toml and list its kernels",
        description="Load and validate a kernel project's manifest; print its kernels, arguments, "
        "sizes and the backends each kernel can be built for.",
    )
    parser.add_argument("path", nargs="?", default=".", help="project folder or workbench.toml")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def buildable_backends(manifest: Manifest, kernel: Kernel) -> list[str]:
    """Backends the project can run: the Rust crate's four, each reference file, and rust-gpu
    when `[backends.rust-gpu] prebuilt` names cargo-gpu output (no crate needed)."""
    backends = []
    try:
        has_crate = (manifest.crate_dir / "Cargo.toml").is_file()
    except OSError:  # a crate path the OS cannot look up (too long): no crate
        has_crate = False
    if has_crate:
        backends.extend(RUST_BACKENDS)
    if manifest.backend_settings("rust-gpu").get("prebuilt"):
        backends.append("rust-gpu")
    backends.extend(b for b in kernel.reference)
    return [b for b in BACKENDS if b in backends]


def describe(project: Project) -> dict:
    manifest = project.manifest
    kernels = []
    memory = host_memory_bytes()
    for kernel in manifest.kernels:
        symbols = kernel.symbols()
        evaluated = kernel.evaluate(symbols, memory_bytes=memory)  # ManifestError at the key's line
        lengths, values = evaluated.lengths, evaluated.scalars
        threads, grid = evaluated.threads, evaluated.grid
        backends = buildable_backends(manifest, kernel)
        args = []
        for arg in kernel.args:
            if isinstance(arg, BufferArg):
                args.append({
                    "name": arg.name, "kind": "buffer", "type": arg.type, "length": arg.length,
                    "elements": lengths[arg.name], "direction": arg.direction, "binding": arg.binding,
                    **({"views": list(arg.views)} if arg.views else {}),
                    "init": arg.init.kind,
                })  # fmt: skip
            else:
                args.append({"name": arg.name, "kind": "scalar", "type": arg.type, "value": values[arg.name]})
        kernels.append({
            "name": kernel.name,
            "description": kernel.description,
            "sizes": kernel.sizes,
            "tunables": {k: list(v) for k, v in kernel.tunables.items()},
            "constraints": list(kernel.constraints),
            "args": args,
            "threads": list(threads),
            "grid": list(grid),
            "bytes": evaluated.metrics.get("bytes"),
            "flops": evaluated.metrics.get("flops"),
            "check": {"reference": kernel.check.reference, "rtol": kernel.check.rtol,
                      "atol": kernel.check.atol, "max_ulp": kernel.check.max_ulp},
            "entries": {b: kernel.entry_for(b) for b in backends},
            "backends": backends,
        })  # fmt: skip
    return {
        "project": manifest.name,
        "path": str(project.root),
        "crate": str(manifest.crate_dir),
        "kernels": kernels,
    }


def _human(count: float | None) -> str:
    if count is None:
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(count) >= scale:
            return f"{count / scale:.3g}{unit}"
    return f"{count:g}"


def _crate_location(crate: CrateProblem) -> str:
    return f"{crate.manifest}:{crate.line}" if crate.line else str(crate.manifest)


def run(args) -> int:
    project = Project.open(Path(args.path))
    info = describe(project)
    found: list[object] = list(manifest_check.problems(project))
    crate = check_crate(project.manifest.crate_dir)
    if crate is not None and not crate.placeable:
        found.append(f"{_crate_location(crate)}: {crate.message}")
    for problem in found:  # each names its line, as the loader's errors do
        print(f"error: {problem}", file=sys.stderr)
    if crate is not None and crate.placeable:
        print(f"note: {_crate_location(crate)}: {crate.message}", file=sys.stderr)
    if args.json:  # the problems too: a script reading --json must not get an empty answer
        kernel_api = None if crate is None else {
            "path": str(crate.path), "placeable": crate.placeable, "message": crate.message,
        }  # fmt: skip
        print(json.dumps({**info, "problems": [str(problem) for problem in found], "kernel_api": kernel_api},
                         indent=2))  # fmt: skip
        return 2 if found else 0
    if found:
        return 2
    print(f"project {info['project']}  ({info['path']})  — manifest OK")
    for k in info["kernels"]:
        print(f"\nkernel {k['name']}: {k['description']}")
        sizes = ", ".join(f"{n}={v}" for n, v in k["sizes"].items()) or "none"
        print(f"  sizes     {sizes}")
        if k["tunables"]:
            print(f"  tunables  {', '.join(f'{n}={v}' for n, v in k['tunables'].items())}")
        if k.get("constraints"):
            print(f"  constraints  {'; '.join(k['constraints'])}")
        print(f"  launch    threads {k['threads']} × grid {k['grid']}")
        print(f"  per launch  {_human(k['bytes'])}B moved, {_human(k['flops'])} flops")
        print("  args")
        for a in k["args"]:
            if a["kind"] == "buffer":
                binding = f" @binding {a['binding']}" if a["binding"] is not None else ""
                if a.get("views"):
                    binding += f" (views {', '.join(str(v) for v in a['views'])})"
                print(f"    {a['name']:<10} {a['direction']:<5} {a['type']}[{a['length']} = {a['elements']}]"
                      f"  init {a['init']}{binding}")  # fmt: skip
            else:
                print(f"    {a['name']:<10} scalar {a['type']} = {a['value']}")
        entries = ", ".join(f"{b} ({e})" for b, e in k["entries"].items())
        print(f"  backends  {entries}")
        print(f"  check     against {k['check']['reference']}, {format_tolerance(k['check'])}")
    return 0
