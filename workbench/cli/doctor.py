"""`workbench doctor`: every toolchain found or missing, every device by runtime."""

from __future__ import annotations

import json


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="list toolchains and devices, with install hints for what is missing",
        description="Report every codegen toolchain (found or missing, version, path, how to install) "
        "and every device grouped by runtime (cpu, cuda, wgpu), then each configured GPU host's "
        "devices (NAME/cuda:0 …, probed over ssh).",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def collect() -> dict:
    """The doctor report as plain data: {"toolchains": [...], "devices": {...}}, plus
    "hosts": {name: {"url", "devices"}} when GPU hosts are configured (`workbench hosts`)."""
    from workbench.build import detect_toolchains
    from workbench.build.rust_tools import detect_tools
    from workbench.remote.hosts import HostStore
    from workbench.remote.probe import host_devices
    from workbench.run.devices import list_devices

    toolchains = [t.to_dict() for t in detect_toolchains()]
    report = {"toolchains": toolchains, "tools": detect_tools(), "devices": list_devices()}
    hosts = HostStore().load()
    if hosts:
        report["hosts"] = {
            name: {"url": host.url, "devices": host_devices(host)} for name, host in sorted(hosts.items())
        }
    return report


def run(args) -> int:
    report = collect()
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    print("Toolchains")
    for t in report["toolchains"]:
        mark = "found  " if t["found"] else "missing"
        where = f"  ({t['path']})" if t.get("path") else ""  # a toolchain inside a package has no path
        detail = f"{t['version']}{where}" if t["found"] else ""
        print(f"  {t['backend']:<10} {mark} {detail}")
        if not t["found"] and t.get("hint"):
            missing = (t.get("details") or {}).get("missing")
            if missing:  # what detection looked for and did not find (the hint says how to get it)
                print(
                    f"  {'':<10}         missing: {', '.join(missing) if isinstance(missing, list) else missing}"
                )
            print(f"  {'':<10}         install: {t['hint']}")
    print("\nRust tools")
    for t in report["tools"]:  # rustfmt, clippy (build/rust_tools.py)
        print(
            f"  {t['tool']:<10} {'found  ' if t['found'] else 'missing'} "
            + (f"{t['version']}  ({t['path']})" if t["found"] else "")
        )
        if not t["found"]:
            print(f"  {'':<10}         install: {t['hint']}")
    print("\nDevices")
    for runtime, group in report["devices"].items():
        if not group.get("available"):
            print(f"  {runtime:<6} unavailable: {group.get('reason', '')}")
            continue
        for device in group.get("devices", []):
            extra = device.get("backend_api") or device.get("adapter_type") or ""
            print(f"  {runtime:<6} {device.get('spec', ''):<9} {device.get('name', '')}  {extra}")
    for name, entry in report.get("hosts", {}).items():
        print(f"\nHost {name} ({entry['url']})")
        for runtime, group in entry["devices"].items():
            if not group.get("available"):
                print(f"  {runtime:<6} unavailable: {group.get('reason', '')}")
                continue
            for device in group.get("devices", []):
                extra = device.get("backend_api") or device.get("adapter_type") or ""
                print(f"  {runtime:<6} {device.get('spec', ''):<12} {device.get('name', '')}  {extra}")
    return 0
