"""WGSL variants of the reference kernels: which of naga's additions costs what (issue 13).

V0 is the example's reference WGSL (`resources/examples/<example>/reference/` as it is). Since
2026-12-01 that is the fast form (the inner loop written out); `benchmarks/wgsl_variants/<example>/
v0_loop.wgsl` keeps the reference before (a loop: naga's loop counter and clamps), and each other
variant there changes one thing in v0_loop and says what in its header comment;
`benchmarks/results/wgsl-spirv/README.md` shows what naga emitted. Every variant computes the same
output: it is verified against the reference backend by the workbench and compared with V0's bit
for bit. v0_loop also runs with wgpu's shader runtime checks off (CHECK_MODES).

Two steps, so the GPU host needs no Rust:

    python benchmarks/wgsl_variants.py --prepare DIR
        builds, for matmul, reduction, softmax, scan, warp_reduce and stencil2d (or only --example's), each variant as a wgsl artifact folder of
        a copy of the example project and the reference backends (cpu, and cuda-c for sm_90 where
        nvcc is found) from the example itself: DIR/<example>/<variant>/<backend>/build.json and
        DIR/<example>/variants.json.
    python benchmarks/wgsl_variants.py --artifacts DIR --example matmul --size 2048 --device wgpu:0 --reference-backend cuda-c
        runs each variant through the workbench's RunService (its worker, warm-up and timing
        protocol) and prints median, ratio to V0 and to the reference backend's median. --size N
        gives the example's sizes from one number (stencil2d: width = height = N); --size NAME=N
        (repeatable, after or without a plain N) sets one of them, e.g. stencil2d's
        --size width=8193 --size height=1031.

Without --prepare/--artifacts it does both in a temporary folder (the llvmpipe check here).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, write_json  # noqa: E402
from workbench.errors import WorkbenchError  # noqa: E402

VARIANTS_ROOT = Path(__file__).resolve().parent / "wgsl_variants"
HOOK_DIR = VARIANTS_ROOT / "runtime_checks"
V0 = "v0_reference"
#: The variant rerun with runtime checks off: the loop form, where naga's additions cost.
CHECKED = "v0_loop"


@dataclasses.dataclass(frozen=True)
class Example:
    """An example whose reference WGSL has variants in VARIANTS_ROOT/<name>/."""

    name: str
    reference_wgsl: str  # relative to the example
    sizes: Callable[[int], dict[str, int]]  # --size -> the kernel's sizes
    #: The configuration the variants were written for (built and run with it; the rest default).
    tunables: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def root(self) -> Path:
        return REPO / "resources" / "examples" / self.name

    @property
    def variant_dir(self) -> Path:
        return VARIANTS_ROOT / self.name


EXAMPLES = {
    "matmul": Example("matmul", "reference/matmul.wgsl", lambda size: {"m": size, "n": size, "k": size}),
    # The one-chunk-per-workgroup form (vector 1, a grid never capped) the variants change one thing
    # in; the example's default became the grid-stride float4 form (issue 26).
    "reduction": Example(
        "reduction",
        "reference/reduction.wgsl",
        lambda size: {"n": size},
        {"vector": 1, "max_groups": 1048576},
    ),
    # --size is the number of rows; cols stays the manifest's 1000 (not a multiple of 256: every
    # sweep has a partial trip).
    "softmax": Example("softmax", "reference/softmax.wgsl", lambda size: {"rows": size, "cols": 1000}),
    # Pass 1 (the project's first kernel, the one `workbench run` times).
    "scan": Example("scan", "reference/scan.wgsl", lambda size: {"n": size}),
    # The reference is still the loop form (v0_loop.wgsl is a copy of it): V0 and v0_loop are the
    # same WGSL, and the variants are the candidates.
    "warp_reduce": Example("warp_reduce", "reference/warp_reduce.wgsl", lambda size: {"n": size}),
    # The reference is the four-points-an-invocation form (efef311); v0_loop is a copy of it, and the
    # variants write its loops out for this geometry (the manifest's defaults, named so they stay it).
    "stencil2d": Example(
        "stencil2d",
        "reference/stencil2d.wgsl",
        lambda size: {"width": size, "height": size},
        {"block_size_x": 64, "block_size_y": 4, "tile_size_y": 4},
    ),
}
#: --size when none is given.
DEFAULT_SIZE = {
    "matmul": 256,
    "reduction": 1 << 20,
    "softmax": 4096,
    "scan": 1 << 22,
    "warp_reduce": 1 << 22,
    "stencil2d": 4096,
}

#: CHECKED again with some of wgpu's shader runtime checks off (wgpu-native's
#: wgpuDeviceCreateShaderModuleTrusted, through the start-up hook in HOOK_DIR): the same WGSL, so
#: the difference to CHECKED is naga's additions alone. Bits: 0x1 BoundsChecks, 0x2 ForceLoopBounding.
CHECK_MODES = [
    ("v0_loop_no_clamps", 0x2, "v0_loop compiled without naga's bounds checks (loop counters kept)"),
    ("v0_loop_no_loop_counter", 0x1, "v0_loop compiled without naga's loop bounding (clamps kept)"),
    ("v0_loop_unchecked", 0x0, "v0_loop compiled without naga's bounds checks and loop bounding"),
]


def variants(example: Example) -> list[tuple[str, Path]]:
    """(name, WGSL file) in order: V0 is the example's own reference, then its variant files."""
    files = sorted(example.variant_dir.glob("*.wgsl"))
    return [(V0, example.root / example.reference_wgsl)] + [(f.stem, f) for f in files]


def header(path: Path) -> str:
    """The leading `//` comment of a variant (what it changes)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[2:].strip())
    return " ".join(lines)


def _build(
    project_dir: Path, backends: list[str], cache_dir: str | None, tunables: dict | None = None
) -> list[Any]:
    """One build per backend: cuda-c for sm_90 (the H200, as benchmarks/gpu_host/prepare.sh)."""
    from workbench.build import build_project

    return [
        r
        for b in backends
        for r in build_project(
            project_dir, [b], cache_dir=cache_dir, target="9.0" if b == "cuda-c" else None, tunables=tunables
        )
    ]


def prepare(
    example: Example, dest: Path, cache_dir: str | None = None, reference_backends: list[str] | None = None
) -> dict:
    """Build every variant (wgsl) and the reference backends into `dest`; returns variants.json."""
    from workbench.build import export

    dest.mkdir(parents=True, exist_ok=True)
    wanted = reference_backends or (["cpu", "cuda-c"] if shutil.which("nvcc") else ["cpu"])
    refs = _build(example.root, wanted, cache_dir, example.tunables)
    ref_dir = dest / "_reference"
    export(refs, ref_dir)
    ref_ok = [r.backend for r in refs if r.status == "ok"]
    for r in refs:
        if r.status != "ok":
            print(f"note: reference backend {r.backend} not built: {r.hint or r.status}", file=sys.stderr)
    listed = []
    with tempfile.TemporaryDirectory(prefix="wgsl-variants-") as tmp:
        for name, source in variants(example):
            copy = Path(tmp) / name
            shutil.copytree(example.root, copy, ignore=shutil.ignore_patterns("target", ".workbench*"))
            shutil.copyfile(source, copy / example.reference_wgsl)
            (result,) = _build(copy, ["wgsl"], cache_dir, example.tunables)
            if result.status != "ok":
                raise WorkbenchError(f"variant {name} ({source}): the wgsl build failed: {result.hint}")
            export([result], dest / name)
            for backend in ref_ok:
                target = dest / name / backend
                if target.exists():
                    shutil.rmtree(target)
                shutil.copytree(ref_dir / backend, target)
            rel = source.relative_to(REPO) if source.is_relative_to(REPO) else source
            listed.append({"name": name, "file": str(rel), "changes": header(source)})
    info = {"example": example.name, "variants": listed, "reference_backends": ref_ok}
    (dest / "variants.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def _device(result: Any) -> str:
    device = result.device or {}
    return f"{device.get('spec', '')} {device.get('name', '')}".strip()


def _median(result: Any) -> float | None:
    return (result.timing or {}).get("median_s") if result.status == "ok" else None


@contextlib.contextmanager
def runtime_checks(checks: int, log: Path):
    """os.environ for workers started inside: the hook on PYTHONPATH, `checks` for it to apply."""
    saved = {
        k: os.environ.get(k) for k in ("PYTHONPATH", "WB_WGSL_RUNTIME_CHECKS", "WB_WGSL_RUNTIME_CHECKS_LOG")
    }
    path = saved["PYTHONPATH"]
    os.environ["PYTHONPATH"] = str(HOOK_DIR) + (os.pathsep + path if path else "")
    os.environ["WB_WGSL_RUNTIME_CHECKS"] = hex(checks)
    os.environ["WB_WGSL_RUNTIME_CHECKS_LOG"] = str(log)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def measure(
    artifacts: Path,
    sizes: dict[str, int],
    reference: str,
    device: str | None,
    seed: int = 0,
    timing: Any = None,
    time_reference: bool = True,
    check_modes: bool = True,
) -> list[dict[str, Any]]:
    """Run every prepared variant (and, once, the reference backend) and compare outputs with V0.

    With `check_modes`, CHECKED runs again once per CHECK_MODES entry, each in a RunService of its own
    whose workers start with the runtime-checks hook (`runtime_checks`)."""
    import numpy as np

    from workbench.project import Project
    from workbench.run.service import RunService

    info = json.loads((artifacts / "variants.json").read_text())
    example = EXAMPLES[info["example"]]
    project = Project.open(example.root)
    devices = [device] if device else None
    rows: list[dict[str, Any]] = []
    v0_c: list[Any] = []

    def wgsl_row(service: Any, name: str, folder: str, changes: str) -> dict[str, Any]:
        print(f"running {name} ...", file=sys.stderr)
        report = service.run(project, backends=["wgsl"], devices=devices, sizes=sizes, seed=seed,
                             reference=reference, artifacts_dir=artifacts / folder, timeout_s=120.0,
                             tunables=example.tunables)  # fmt: skip
        (res,) = report.results
        # Every output buffer (scan writes two: y and sums), by name, compared as raw 32-bit words.
        outputs = report.outputs.get("wgsl") or {}
        c = [np.asarray(outputs[k]).view(np.uint32) for k in sorted(outputs)] or None
        if name == V0 and c is not None:
            v0_c.append(c)
        same = None
        if c is not None and v0_c:
            same = len(c) == len(v0_c[0]) and all(
                np.array_equal(a, b) for a, b in zip(c, v0_c[0], strict=True)
            )
        return {"variant": name, "backend": "wgsl", "status": res.status, "device": _device(res),
                "verified": res.verified, "bit_identical_to_v0": same, "median_s": _median(res),
                "changes": changes, "error": res.error or ""}  # fmt: skip

    def service_for() -> Any:
        return RunService(timing=timing) if timing is not None else RunService()

    service = service_for()
    try:
        if time_reference and reference in info["reference_backends"] and reference != "cpu":
            report = service.run(project, backends=[reference], sizes=sizes, seed=seed, reference=reference,
                                 artifacts_dir=artifacts / V0, timeout_s=120.0, tunables=example.tunables)  # fmt: skip
            (res,) = report.results
            rows.append({"variant": reference, "backend": reference, "status": res.status,
                         "device": _device(res), "verified": "reference", "median_s": _median(res),
                         "error": res.error or ""})  # fmt: skip
        for entry in info["variants"]:
            rows.append(wgsl_row(service, entry["name"], entry["name"], entry["changes"]))
    finally:
        service.close()
    for name, checks, changes in CHECK_MODES if check_modes else []:
        with tempfile.TemporaryDirectory(prefix="wgsl-checks-") as tmp:
            log = Path(tmp) / "modules.log"
            with runtime_checks(checks, log):
                service = service_for()
                try:
                    row = wgsl_row(service, name, CHECKED, changes)
                finally:
                    service.close()
            applied = log.read_text().splitlines() if log.is_file() else []
        row["runtime_checks"] = hex(checks)
        row["modules_created_with_these_checks"] = len(applied)
        if not applied and row["status"] == "ok":
            row["status"] = "error"
            row["error"] = (
                "the runtime-checks hook did not take effect in the worker (no module went through it)"
            )
        rows.append(row)
    v0 = next((r["median_s"] for r in rows if r["variant"] == V0), None)
    ref = next((r["median_s"] for r in rows if r["backend"] == reference and r["backend"] != "wgsl"), None)
    for r in rows:
        m = r["median_s"]
        r["ratio_to_v0"] = m / v0 if m and v0 else None
        r[f"ratio_to_{reference}"] = m / ref if m and ref else None
    return rows


def print_table(rows: list[dict[str, Any]], reference: str) -> None:
    key = f"ratio_to_{reference}"
    print(
        f"{'variant':<24} {'status':<7} {'verified':<9} {'=V0 bits':<9} {'median':>12} {'/V0':>6} {'/' + reference:>8}"
    )
    for r in rows:
        m = r["median_s"]
        shown = f"{m * 1e3:.3f} ms" if m else "-"
        bits = {True: "yes", False: "NO", None: "-"}[r.get("bit_identical_to_v0")]
        v0r = f"{r['ratio_to_v0']:.2f}" if r["ratio_to_v0"] else "-"
        rr = f"{r[key]:.2f}" if r[key] else "-"
        print(
            f"{r['variant']:<24} {r['status']:<7} {str(r['verified']):<9} {bits:<9} {shown:>12} {v0r:>6} {rr:>8}"
        )
        if r["error"]:
            print(f"    {r['error']}")


def kernel_sizes(example: Example, given: list[str] | None) -> tuple[dict[str, int], str]:
    """The kernel's sizes from the --size arguments (N: example.sizes(N); NAME=N: that size alone,
    over example.sizes of the plain N or of DEFAULT_SIZE) and a label for the output file."""
    plain = [g for g in given or [] if "=" not in g]
    named = [g for g in given or [] if "=" in g]
    if len(plain) > 1:
        raise WorkbenchError(f"--size: one plain N at most, got {', '.join(plain)}")
    try:
        size = int(plain[0]) if plain else DEFAULT_SIZE[example.name]
        sizes = example.sizes(size)
        for item in named:
            name, value = (part.strip() for part in item.split("=", 1))
            if name not in sizes:
                raise WorkbenchError(f"--size {item}: {example.name}'s sizes are {', '.join(sizes)}")
            sizes[name] = int(value)
    except ValueError as exc:
        raise WorkbenchError(f"--size: expected N or NAME=N ({exc})") from exc
    label = str(size) if not named else "x".join(str(v) for v in sizes.values())
    return sizes, label


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", (text or "device").lower()).strip("-")[:48] or "device"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--prepare",
        metavar="DIR",
        help="build every example's variants and reference backends into DIR/<example>/, then stop",
    )
    parser.add_argument(
        "--artifacts", metavar="DIR", help="run what --prepare wrote to DIR (DIR/<example>; no build)"
    )
    parser.add_argument(
        "--example",
        choices=sorted(EXAMPLES),
        help="default matmul; with --prepare, build only this example's variants (default: all)",
    )
    parser.add_argument(
        "--size",
        action="append",
        metavar="N|NAME=N",
        help="matmul: m = n = k (default 256); reduction, scan and warp_reduce: n (default 2^20, 2^22, "
        "2^22); softmax: rows (default 4096); stencil2d: width = height (default 4096). NAME=N "
        "(repeatable) sets one size, e.g. --size width=8193 --size height=1031",
    )
    parser.add_argument("--device", help="device spec, e.g. wgpu:0 (default: the workbench's choice)")
    parser.add_argument(
        "--reference-backend", default="cpu", help="backend C is verified against (default cpu)"
    )
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds of timed launches per variant")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", help="build cache (default: the workbench's)")
    parser.add_argument("--out", help=OUT_HELP)
    args = parser.parse_args(argv)

    from workbench.run.devices import child_env
    from workbench.run.timing import TimingOptions

    os.environ.update(child_env())  # Mesa wants XDG_RUNTIME_DIR in this process too
    try:
        if args.prepare:
            for example in [EXAMPLES[args.example]] if args.example else EXAMPLES.values():
                info = prepare(example, Path(args.prepare) / example.name, args.cache_dir)
                names = ", ".join(v["name"] for v in info["variants"])
                refs = ", ".join(info["reference_backends"])
                print(f"prepared {example.name}: {names} (+ {refs}) in {args.prepare}/{example.name}")
            return 0
        example = EXAMPLES[args.example or "matmul"]
        sizes, size = kernel_sizes(example, args.size)
        timing = TimingOptions(min_time_s=args.min_time, max_time_s=max(2.0, 4 * args.min_time))
        with tempfile.TemporaryDirectory(prefix="wgsl-variants-run-") as tmp:
            artifacts = Path(args.artifacts) / example.name if args.artifacts else Path(tmp)
            if not args.artifacts:
                prepare(example, artifacts, args.cache_dir, [args.reference_backend])
            rows = measure(artifacts, sizes, args.reference_backend, args.device, args.seed, timing)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_table(rows, args.reference_backend)
    wgsl = [r for r in rows if r["backend"] == "wgsl"]
    device = next((r["device"].split(" ", 1)[-1] for r in wgsl if r["device"]), platform.node())
    data = {
        "benchmark": "wgsl_variants",
        "example": example.name,
        "host": platform.node(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "sizes": sizes,
        "reference_backend": args.reference_backend,
        "settings": {"min_time_s": args.min_time, "seed": args.seed},
        "results": rows,
    }
    out = write_json(args.out, f"wgsl_variants-{example.name}-{slug(device)}-{size}.json", data, default=str)
    print(f"wrote {out}")
    ok = all(r["status"] == "ok" and r.get("bit_identical_to_v0") is not False for r in rows)
    ok = ok and all(r["verified"] in (True, "reference") for r in wgsl)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
