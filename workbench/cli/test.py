"""`workbench test PROJECT [NAME] [--list] [--json]`: the kernel crate's Rust tests.

The tests are built (`cargo test --no-run`), listed with the file and line of each, and run, all
or the one named (`TARGET::NAME` or `NAME`), each test binary a child process under `--timeout`
(`build/kernel_tests.py`). A failure is printed with its message, the cpu-sim findings and panic
at their Rust lines, and its captured output. Exit status: 0 when every test run passed, 1 when
one failed, timed out or crashed, or the tests do not compile; 2 without cargo.
"""

from __future__ import annotations

import json
import sys

from workbench.project import Project

EXIT_OK, EXIT_FAILED, EXIT_MISSING = 0, 1, 2


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "test",
        help="build, list and run the kernel crate's tests (cargo test; docs/kernel-tests.md)",
        description="Run the project's Rust tests (kernel bodies on the host with cpu-sim's checks, "
        "gpu_kernel::testing): each test's outcome at its Rust line, failures with their output.",
    )
    parser.add_argument("path", nargs="?", default=".", help="project folder or workbench.toml")
    parser.add_argument("name", nargs="?", help="run only this test (TARGET::NAME or NAME)")
    parser.add_argument("--list", action="store_true", help="list the tests, run none")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--timeout", metavar="S", type=float, default=60.0,
                        help="stop a test binary after S seconds (default 60)")  # fmt: skip
    parser.add_argument(
        "--cache-dir", metavar="DIR", help="where the tests' target dir lives (default: the build cache)"
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from workbench.build import kernel_tests as kt

    project = Project.open(args.path)
    crate_dir, root = project.manifest.crate_dir, project.root
    try:
        built = kt.build_tests(crate_dir, root, cache_dir=args.cache_dir)
    except kt.CargoMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_MISSING
    except TimeoutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if not built.ok:
        if args.json:
            print(json.dumps({"project": project.name, "built": False, "tests": [],
                              "diagnostics": [d.to_dict() for d in built.diagnostics]}))  # fmt: skip
        else:
            for d in built.diagnostics:
                print(d.rendered or d.message, file=sys.stderr)
            if not built.diagnostics:
                print("\n".join(built.log[-40:]), file=sys.stderr)
            print("error: the tests do not compile", file=sys.stderr)
        return EXIT_FAILED
    cases = kt.list_tests(built.binaries, crate_dir, root)
    if args.name and not any(args.name in (c.id, c.name) for c in cases):
        print(f"error: no test named {args.name!r} (workbench test {args.path} --list)", file=sys.stderr)
        return EXIT_FAILED
    if not args.list:
        kt.run_tests(cases, crate_dir, root, only=args.name, timeout_s=args.timeout)
    ran = [c for c in cases if c.status not in ("not run",)]
    bad = [c for c in ran if c.status in ("failed", "timed out", "crashed")]
    if args.json:
        print(json.dumps({"project": project.name, "built": True, "tests": [c.to_dict() for c in cases],
                          "diagnostics": [d.to_dict() for c in bad for d in c.diagnostics]}))  # fmt: skip
        return EXIT_FAILED if bad else EXIT_OK
    for case in cases:
        where = f"{case.file}:{case.line}" if case.file else ""
        if args.list:
            print(f"{case.id}  {where}{'  (ignored)' if case.ignored else ''}")
            continue
        if case.status == "not run":
            continue
        took = f" ({case.seconds:.2f} s)" if case.seconds is not None else ""
        print(f"{case.status:<9} {case.id}  {where}{took}")
    for case in bad:
        print(f"\n---- {case.id}: {case.status}: {case.message}")
        for d in case.diagnostics:
            print(
                f"{d.file}:{d.line}:{d.column or 1}: error: {d.message.splitlines()[0] if d.message else ''}"
            )
        if case.output.strip():
            print("output:\n" + "\n".join("  " + ln for ln in case.output.rstrip().splitlines()))
    if not args.list:
        print(f"\n{len(ran) - len(bad)} passed, {len(bad)} failed of {len(ran)} run")
    return EXIT_FAILED if bad else EXIT_OK
