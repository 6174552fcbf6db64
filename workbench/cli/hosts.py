"""`workbench hosts`: remote GPU hosts reached over ssh (add, list, remove, check, setup).

    workbench hosts add gpu1 ssh://me@gpu1.example.org:22 --identity ~/.ssh/id_ed25519
    workbench hosts setup gpu1          # the run part into a venv there, from a wheel built here
    workbench hosts check gpu1          # its Python, workbench version, runtimes and devices
    workbench run resources/examples/saxpy --device gpu1/cuda:0

Hosts live in the user's settings (`$WB_HOSTS_FILE`, else `hosts.json` in the user config
folder); no password is ever stored — the ssh client authenticates with keys or an agent.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

from workbench.errors import WorkbenchError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "hosts",
        help="remote GPU hosts over ssh: add, list, remove, check, setup",
        description="Configure GPU hosts reached with the system's OpenSSH client; their devices "
        "are then NAME/cpu, NAME/cuda:0, NAME/wgpu:0 in `run --device`, doctor and the window.",
    )
    sub = parser.add_subparsers(dest="hosts_command", metavar="ACTION", required=True)

    add = sub.add_parser("add", help="add a host", description="Add a host: NAME ssh://[user@]host[:port].")
    add.add_argument("name", help="short name; device specs become NAME/cuda:0")
    add.add_argument("url", help="ssh://[user@]host[:port] (or a Host alias of ~/.ssh/config)")
    add.add_argument("--identity", metavar="FILE", help="private key file (ssh -i)")
    add.add_argument(
        "--python", metavar="CMD", default="python3", help="the Python on the host (default python3)"
    )
    add.add_argument(
        "--ssh-option", action="append", default=[], metavar="KEY=VALUE",
        help="extra ssh -o option, e.g. ProxyJump=gateway or UserKnownHostsFile=FILE; repeatable",
    )  # fmt: skip
    add.add_argument(
        "--remote-dir", metavar="DIR", default=None,
        help="base folder on the host for the venv and the artifact cache "
        "(default .cache/rust-gpu-workbench in the remote home)",
    )  # fmt: skip
    add.add_argument("--replace", action="store_true", help="replace a host of the same name")
    add.set_defaults(func=run_add)

    ls = sub.add_parser("list", help="list the hosts")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=run_list)

    rm = sub.add_parser("remove", help="forget a host (nothing on the host is touched)")
    rm.add_argument("name")
    rm.set_defaults(func=run_remove)

    check = sub.add_parser("check", help="connect; report Python, workbench version, runtimes, devices")
    check.add_argument("name")
    check.add_argument("--json", action="store_true", help="print JSON")
    check.set_defaults(func=run_check)

    setup = sub.add_parser(
        "setup",
        help="install the workbench's run part into a venv on the host",
        description="Build a wheel of this workbench here, send it over ssh and install it into "
        "a venv in the host's base folder; the host then runs that venv's Python.",
    )
    setup.add_argument("name")
    setup.add_argument(
        "--wheels", metavar="DIR",
        help="also send DIR/*.whl and install with --no-index --find-links (a host without network)",
    )  # fmt: skip
    setup.add_argument(
        "--use-system-packages", action="store_true",
        help="venv with --system-site-packages that also sees the packages of the host's Python "
        "(when that is a venv): nothing is downloaded, the dependencies must be there",
    )  # fmt: skip
    setup.set_defaults(func=run_setup)


def run_add(args) -> int:
    from workbench.remote.hosts import DEFAULT_REMOTE_DIR, Host, HostStore, parse_url

    user, hostname, port = parse_url(args.url)
    for option in args.ssh_option:
        if "=" not in option:
            raise WorkbenchError(f"--ssh-option {option!r}: expected KEY=VALUE")
    host = Host(
        name=args.name, hostname=hostname, user=user, port=port, identity=args.identity,
        python=args.python, ssh_options=list(args.ssh_option),
        remote_dir=args.remote_dir or DEFAULT_REMOTE_DIR,
    )  # fmt: skip
    store = HostStore()
    store.add(host, replace=args.replace)
    print(f"added host {host.name} ({host.url}) to {store.path}; next: workbench hosts setup {host.name}")
    return 0


def run_list(args) -> int:
    from workbench.remote.hosts import HostStore

    hosts = HostStore().load()
    if args.json:
        print(json.dumps([h.to_dict() for h in hosts.values()], indent=2))
        return 0
    if not hosts:
        print("no hosts; add one with `workbench hosts add NAME ssh://user@host`")
    for host in hosts.values():
        print(f"{host.name:<12} {host.url:<36} python: {host.python}")
    return 0


def run_remove(args) -> int:
    from workbench.remote.hosts import HostStore

    host = HostStore().remove(args.name)
    print(f"removed host {host.name} ({host.url})")
    return 0


def run_check(args) -> int:
    from workbench.remote.hosts import HostError, HostStore
    from workbench.remote.probe import check

    host = HostStore().get(args.name)
    try:
        report = check(host)
    except HostError as exc:
        if args.json:
            print(json.dumps({"host": host.name, "url": host.url, "ok": False, "error": str(exc)}, indent=2))
        else:
            print(f"error: {exc}", file=sys.stderr)
        return 1
    report["ok"] = True
    from workbench import __version__

    report["local_workbench"] = __version__
    if report.get("workbench") != __version__:  # the protocol may differ: say how to align them
        report["note"] = f"the host runs workbench {report.get('workbench')}, this is {__version__}: " + (
            f"run `workbench hosts setup {host.name}` to install this version there"
        )
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    print(f"{host.name} ({host.url})")
    print(f"  python     {report.get('python')}  ({report.get('executable')})")
    print(f"  workbench  {report.get('workbench')}")
    if report.get("note"):
        print(f"  note       {report['note']}")
    print(f"  platform   {report.get('platform')}")
    for runtime, entry in report["devices"].items():
        if not entry.get("available"):
            print(f"  {runtime:<6} unavailable: {entry.get('reason', '')}")
            continue
        for device in entry.get("devices", []):
            extra = device.get("backend_api") or ""
            print(f"  {runtime:<6} {device.get('spec', ''):<14} {device.get('name', '')}  {extra}")
    return 0


def run_setup(args) -> int:
    from workbench.remote.hosts import HostStore
    from workbench.remote.probe import forget
    from workbench.remote.setup import setup_host

    store = HostStore()
    host = store.get(args.name)
    base = host.setup_python or host.python  # again: the venv is made with the first Python
    python = setup_host(
        replace(host, python=base), wheels_dir=args.wheels, use_system_packages=args.use_system_packages,
        on_line=lambda line: print(line, file=sys.stderr),
    )  # fmt: skip
    host.setup_python, host.python = base, python
    store.update(host)
    forget(host.name)
    print(f"host {host.name}: the workbench is installed; it runs {python}")
    return 0
