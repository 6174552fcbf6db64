"""`workbench ceilings [--device LIST] [--refresh] [--json]`: measured copy, read, write and update
bandwidth and FMA throughput of every device (the roofs of the roofline), cached per device + driver."""

from __future__ import annotations

import json
import sys

from workbench.cli import EXIT_FAILED, EXIT_OK


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "ceilings",
        help="measure each device's copy, read, write and update bandwidth and FMA throughput (the roofline's roofs)",
        description="Measure each device's copy bandwidth (bytes read + written per second), read "
        "bandwidth (bytes read per second: the roof of a kernel that mostly reads, such as a reduction), write "
        "bandwidth (bytes written), update bandwidth (one buffer read and rewritten in place, bytes read + "
        "written: the roof of an in-place kernel such as a bitonic pass) and FMA "
        "throughput (f32, and f64 where the device has it) with the workbench's own small kernels, "
        "run through the same runtimes as a kernel. Results are cached per device and driver in the "
        "user cache; --refresh measures again.",
    )
    parser.add_argument(
        "--device",
        action="append",
        default=[],
        metavar="LIST",
        help="devices: cpu, cuda:0, wgpu:0, wgpu:<part of the adapter name>; repeat or separate "
        "with commas (default: every device here)",
    )
    parser.add_argument("--refresh", action="store_true", help="measure again instead of using the cache")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--cache-dir", metavar="DIR", help="cache folder (default: the user cache)")
    parser.set_defaults(func=run)


def chosen_devices(specs: list[str], info: dict) -> list[dict]:
    """The device dicts named by `specs` (every available device when empty), in order, once each."""
    from workbench.run.ceilings import all_devices
    from workbench.run.devices import resolve_device_spec

    if not specs:
        return all_devices(info)
    out: list[dict] = []
    for spec in specs:
        runtime, index = resolve_device_spec(spec, info)  # DeviceNotFound names the devices here
        device = info[runtime]["devices"][index]
        if device not in out:
            out.append(device)
    return out


def _fmt(value: float | None, unit: str) -> str:
    return f"{value:,.1f} {unit}" if value else "–"


def run(args) -> int:
    from workbench.run.ceilings import CeilingsError, ceilings_for
    from workbench.run.ceilings_kernels import STREAMS
    from workbench.run.devices import list_devices

    specs = [d.strip() for item in args.device for d in item.split(",") if d.strip()]
    devices = chosen_devices(specs, list_devices())

    def progress(device: dict) -> None:
        print(f"measuring {device.get('spec')} ({device.get('name')}) ...", file=sys.stderr)

    # One device that cannot be measured (no rustc for the cpu kernels, say) does not hide the others.
    results, failed = [], []
    for device in devices:
        try:
            results += ceilings_for(
                [device], refresh=args.refresh, cache_dir=args.cache_dir, on_measure=progress
            )
        except CeilingsError as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed.append({"spec": device.get("spec"), "name": device.get("name"), "error": str(exc)})
    if args.json:
        print(json.dumps({"devices": [c.to_json() for c in results] + failed}, indent=2))
    else:
        streams = "".join(f" {stream:>12}" for stream in STREAMS)
        print(f"{'device':<8} {'name':<36}{streams} {'FMA f32':>16} {'FMA f64':>16}  measured")
        for c in results:
            figures = "".join(f" {_fmt(getattr(c, f'{stream}_gbps'), 'GB/s'):>12}" for stream in STREAMS)
            print(
                f"{c.spec:<8} {c.name[:36]:<36}{figures} "
                f"{_fmt(c.fma_gflops_f32, 'GFLOP/s'):>16} {_fmt(c.fma_gflops_f64, 'GFLOP/s'):>16}  {c.measured}"
            )
            sheet = c.datasheet or {}
            if sheet:
                print(
                    f"{'':<8} datasheet: {_fmt(sheet.get('memory_gbps'), 'GB/s')} memory, "
                    f"{_fmt(sheet.get('fp32_gflops'), 'GFLOP/s')} f32, {_fmt(sheet.get('fp64_gflops'), 'GFLOP/s')} f64"
                    f" ({sheet.get('source')})"
                )
            if c.variants:  # the kernel form that gave each figure (the best of several)
                print(f"{'':<8} best variants: " + ", ".join(f"{k} {v}" for k, v in c.variants.items()))
            if c.notes:
                print(f"{'':<8} note: {c.notes}")
    missing = [c.spec for c in results if not c.copy_gbps and not c.fma_gflops_f32]
    return EXIT_FAILED if missing or failed else EXIT_OK
