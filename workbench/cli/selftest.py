"""`workbench --self-test [--json]`: check this installation end to end, bundle or Python install.

1. the window: every panel is built (offscreen, in a child process, so a broken Qt plugin is a
   failed check with its message rather than a crash) and the saxpy example opens in it;
2. the bundled saxpy example, copied to a temporary folder, is built for every backend whose
   toolchain is found (the core `BuildService`) and run and verified on every backend whose
   runtime has a device (the core `RunService`, in its worker processes);
3. every bundled example, copied as `cp -r` copies (symbolic links kept as links), is built on
   cpu, cpu-sim and nvptx, and run on cpu and wgsl, wgsl verified against cpu (`EXAMPLE_BUILDS`,
   `EXAMPLE_RUNS`): the kernel API crate reaches each copy (`kernel_api.ensure_crate`);
4. whatever is missing is skipped with the reason (and the install hint).

Exit status 0 only when every check that could run passed. Builds go to a fresh temporary cache
unless `--cache-dir` is given, so a cached artifact cannot hide a broken toolchain.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workbench import __version__
from workbench.frozen import install_dir, is_frozen, python_command
from workbench.run.request import RunRequest
from workbench.units import format_sizes

PASS, FAIL, SKIP = "pass", "fail", "skip"
#: A small problem: the self-test checks that things work, not how fast.
SIZES = {"n": 65536}
EXAMPLE = "saxpy"
#: What every bundled example is built on, and run on (each at its default sizes, few samples).
EXAMPLE_BUILDS = ("cpu", "cpu-sim", "nvptx")
EXAMPLE_RUNS = ("cpu", "wgsl")
#: Samples enough to run and verify, not to time: the self-test checks that things work.
QUICK_TIMING = dict(min_n=3, min_time_s=0.01, max_time_s=2.0, warmup_max_n=2, warmup_max_s=0.1)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="workbench --self-test",
        description="Check this installation: load every panel offscreen, build, run and verify "
        "the bundled saxpy example (in a temporary copy) on every backend whose toolchain and "
        "device exist, then build every bundled example on cpu, cpu-sim and nvptx and run it on cpu "
        "and wgsl; the rest is skipped with the reason.",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--cache-dir", metavar="DIR", help="build cache to use (default: a fresh temporary one)"
    )
    parser.add_argument(
        "--build-timeout", type=float, default=600.0, metavar="S", help="per-backend build timeout (600 s)"
    )
    parser.add_argument(
        "--examples",
        metavar="NAMES",
        help="comma-separated bundled examples to build and run on the cpu, cpu-sim, nvptx and wgsl "
        "backends (default: all of them; 'none': only saxpy's own check)",
    )
    parser.add_argument(
        "--window-timeout", type=float, default=120.0, metavar="S", help="how long the window check may take"
    )
    return parser.parse_args(argv)


def _check(name: str, status: str, detail: str = "", seconds: float = 0.0, **extra: Any) -> dict[str, Any]:
    return {"name": name, "status": status, "detail": detail, "seconds": round(seconds, 2), **extra}


# ---------------------------------------------------------------------------------------- window


def window_check(project: Path) -> dict[str, Any]:
    """In this process: build the window with every panel offscreen and open `project`."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtCore import QEventLoop, QTimer

    from workbench.ui.app import PANELS, create_application, create_window
    from workbench.ui.settings import Settings

    app = create_application([sys.argv[0]])
    window = create_window(settings=Settings())
    window.persist_settings = False
    window.ask_before_discarding = False
    try:
        opened = window.open_project(project)
        window.show()
        loop = QEventLoop()
        QTimer.singleShot(500, loop.quit)  # let the panels lay out and fill once
        loop.exec()
        panels = {}
        for key in PANELS:
            widget = window.panels.get(key)
            if widget is None:
                panels[key] = {"status": FAIL, "detail": "not in the window"}
            elif widget.objectName() == "PanelPlaceholder":
                panels[key] = {"status": FAIL, "detail": widget.text()}
            else:
                panels[key] = {"status": PASS, "detail": type(widget).__name__}
        return {"opened": bool(opened), "title": window.windowTitle(), "panels": panels,
                "platform": app.platformName()}  # fmt: skip
    finally:
        window.shutdown()
        window.close()


def run_window_check(project: Path, scratch: Path, timeout_s: float) -> list[dict[str, Any]]:
    """The window check in a child process (offscreen forced); one check per panel.

    Its settings and sessions database go to `scratch`: a check writes none of the user's files."""
    started = time.monotonic()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    env["WB_CONFIG_DIR"] = str(scratch / "config")
    env["WB_DATA_DIR"] = str(scratch / "data")
    env.pop("WB_SESSIONS_DB", None)
    command = python_command("workbench.cli.selftest", "--window", str(project))
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        return [_check("window", FAIL, f"the window did not open within {timeout_s:g} s", timeout_s)]
    seconds = time.monotonic() - started
    result = None
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except json.JSONDecodeError:
                pass
            break
    if result is None or done.returncode != 0:
        tail = " | ".join((done.stderr.strip().splitlines() or ["no output"])[-3:])
        return [_check("window", FAIL, f"exit status {done.returncode}: {tail}", seconds)]
    checks = [
        _check(
            "window",
            PASS if result["opened"] else FAIL,
            f"opened {project.name} on the {result['platform']} platform"
            if result["opened"]
            else f"{project} did not open",
            seconds,
        )
    ]
    for key, panel in result["panels"].items():
        checks.append(_check(f"panel:{key}", panel["status"], panel["detail"]))
    return checks


# ------------------------------------------------------------------------------ build and run


def _backend_reason_missing(tool: dict[str, Any]) -> str:
    hint = tool.get("hint") or ""
    return f"toolchain not found{'; install: ' + hint if hint else ''}"


def build_and_run(project_dir: Path, cache_dir: Path, build_timeout_s: float) -> dict[str, Any]:
    """Build every backend whose toolchain is found, run those whose runtime has a device."""
    from workbench.backends import BACKENDS, REFERENCE_BACKENDS, runtime_of
    from workbench.build import BuildService, detect_toolchains
    from workbench.project import Project
    from workbench.run import RunService, list_devices
    from workbench.run.timing import TimingOptions

    project = Project.open(project_dir)
    toolchains = {t.backend: t.to_dict() for t in detect_toolchains()}
    devices = list_devices(refresh=True)
    references = set().union(*(k.reference for k in project.manifest.kernels))
    runtimes = {
        name: {
            "status": PASS if group.get("available") else SKIP,
            "reason": group.get("reason", "") if not group.get("available") else "",
            "devices": [d.get("name", "") for d in group.get("devices", [])],
        }
        for name, group in devices.items()
    }

    backends: dict[str, dict[str, Any]] = {}
    to_build = []
    for backend in BACKENDS:
        tool = toolchains.get(backend, {})
        entry: dict[str, Any] = {"runtime": runtime_of(backend), "toolchain": tool.get("version", "")}
        if backend in REFERENCE_BACKENDS and backend not in references:
            entry.update(status=SKIP, reason=f"the {project.name} example has no {backend} reference")
        elif not tool.get("found"):
            entry.update(status=SKIP, reason=_backend_reason_missing(tool))
        else:
            to_build.append(backend)
        backends[backend] = entry

    service = BuildService(cache_dir=cache_dir, timeout_s=build_timeout_s)
    try:
        started = time.monotonic()
        results = service.submit(project, to_build).wait() if to_build else {}
        build_seconds = time.monotonic() - started
    finally:
        service.close()
    runnable = []
    for backend in to_build:
        result = results.get(backend)
        entry = backends[backend]
        if result is None or result.status != "ok":
            status = result.status if result else "missing"
            first = next((d.get("message", "") for d in (result.diagnostics if result else [])), "")
            tail = (result.log.strip().splitlines() or [""])[-1] if result else ""
            entry.update(status=FAIL, build=FAIL, reason=f"build {status}: {first or tail}".strip())
            continue
        entry.update(status=PASS, build=PASS, build_seconds=round(result.seconds, 2), cached=result.cached)
        runtime = runtime_of(backend)
        if runtimes[runtime]["status"] != PASS:
            entry.update(run=SKIP, reason=f"not run: the {runtime} runtime is unavailable "
                         f"({runtimes[runtime]['reason']})")  # fmt: skip
        else:
            runnable.append(backend)

    reference = None
    if runnable:
        # The reference never changes by itself (run/reference.py): when the example's own
        # reference did not build here, the self-test chooses the first backend that did.
        reference = project.manifest.kernel().check.reference
        if reference not in runnable:
            reference = runnable[0]
        timing = TimingOptions(**QUICK_TIMING)
        run_service = RunService(timing=timing)
        try:
            request = RunRequest.of(
                project, runnable, sizes=SIZES, cache_dir=cache_dir, timeout_s=60.0, reference=reference
            )
            report = run_service.execute(request)
        except Exception as exc:  # a run error is a failed check, reported, not a crash
            for backend in runnable:
                backends[backend].update(status=FAIL, run=FAIL, reason=f"run failed: {exc}")
            report = None
        finally:
            run_service.close()
        by_backend: dict[str, list] = {}
        for result in report.results if report is not None else []:
            by_backend.setdefault(result.backend, []).append(result)
        for backend in runnable if report is not None else []:
            entry = backends[backend]
            outcomes = by_backend.get(backend, [])
            bad = [r for r in outcomes if not _run_ok(r)]
            if not outcomes:
                entry.update(status=FAIL, run=FAIL, reason="no run result came back")
            elif bad:
                entry.update(status=FAIL, run=FAIL, reason=_run_problem(bad[0]))
            else:
                entry.update(
                    run=PASS,
                    devices=[r.device.get("name", "") for r in outcomes],
                    verified="reference" if outcomes[0].check.get("is_reference") else "yes",
                    median_s=(outcomes[0].timing or {}).get("median_s"),
                )
    return {
        "example": project.name,
        "sizes": SIZES,
        "build_seconds": round(build_seconds, 2),
        "reference": reference,
        "backends": backends,
        "runtimes": runtimes,
    }


def _run_ok(result) -> bool:
    return result.status == "ok" and (result.verified is True or bool(result.check.get("is_reference")))


def _run_problem(result) -> str:
    if result.status != "ok":
        return f"run {result.status}: {(result.error or '').strip().splitlines()[0] if result.error else ''}"
    check = result.check
    return (
        f"wrong results: {check.get('bad')} bad elements, first at index {check.get('first_bad_index')}"
        if result.verified is False
        else f"not verified: {check.get('note', '')}"
    )


# ------------------------------------------------------------------------- every bundled example


def copy_as_cp_r(source: Path, dest: Path) -> None:
    """Copy a project as `cp -r` does: symbolic links stay links (a relative one may then lead
    nowhere: the build places the kernel API crate), build outputs left out."""
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns("target"))


def examples_check(names: list[str], scratch: Path, cache_dir: Path, build_timeout_s: float) -> list[dict]:
    """Each example in `names` copied into `scratch`, built on EXAMPLE_BUILDS and run on
    EXAMPLE_RUNS (wgsl verified against cpu); one check per example, naming what it did."""
    from workbench.backends import runtime_of
    from workbench.build import BuildService, detect_toolchains
    from workbench.project import Project, examples_dir
    from workbench.run import RunService, list_devices
    from workbench.run.timing import TimingOptions

    found = {t.backend: t for t in detect_toolchains()}
    builds = [b for b in EXAMPLE_BUILDS if found.get(b) and found[b].found]
    missing = [b for b in EXAMPLE_BUILDS if b not in builds]
    devices = list_devices()
    runnable = [b for b in EXAMPLE_RUNS if (devices.get(runtime_of(b)) or {}).get("available")]
    checks: list[dict] = []
    projects: dict[str, Project] = {}
    for name in names:
        copy = scratch / "examples" / name
        try:
            copy_as_cp_r(examples_dir() / name, copy)
            projects[name] = Project.open(copy)
        except Exception as exc:  # a bundle without the example: a failed check, named
            checks.append(_check(f"example:{name}", FAIL, f"cannot copy {examples_dir() / name}: {exc}"))
    service = BuildService(cache_dir=cache_dir, timeout_s=build_timeout_s)
    started = time.monotonic()
    try:
        # One example at a time: the service builds one project per backend at once (a new submit
        # supersedes a running build of its backend); its three backends build side by side.
        results = {
            name: service.submit(project, builds).wait() for name, project in projects.items() if builds
        }
    finally:
        service.close()
    build_seconds = time.monotonic() - started
    for name, project in projects.items():
        started = time.monotonic()
        problems, done, notes = [], [], []
        for backend, result in sorted(results.get(name, {}).items(), key=lambda r: builds.index(r[0])):
            if result.status == "ok":
                done.append(backend)
            else:
                first = next(
                    (d.get("message", "") for d in result.diagnostics if d.get("severity") == "error"), ""
                )
                problems.append(f"{backend} build {result.status}: {first or 'see its log'}")
            notes += [d["message"] for d in result.diagnostics if "kernel API crate" in d.get("message", "")]
        ran = []
        if runnable and not problems:
            run_service = RunService(timing=TimingOptions(**QUICK_TIMING))
            try:
                report = run_service.run(project, backends=runnable, cache_dir=cache_dir, timeout_s=120.0,
                                         reference=runnable[0])  # fmt: skip
                for result in report.results:
                    if _run_ok(result):
                        ran.append(result.backend)
                    else:
                        problems.append(f"{result.backend}: {_run_problem(result)}")
            except Exception as exc:  # a run error is a failed check, reported, not a crash
                problems.append(f"run failed: {type(exc).__name__}: {exc}")
            finally:
                run_service.close()
        parts = [f"built on {', '.join(done)}" if done else "built on nothing"]
        if ran:
            parts.append(
                f"ran on {', '.join(ran)}" + (f" (verified against {runnable[0]})" if len(ran) > 1 else "")
            )
        if missing:
            parts.append(f"no {', '.join(missing)} toolchain")
        if notes:
            parts.append("kernel API crate placed in the copy")
        status = FAIL if problems else PASS
        detail = "; ".join(problems) if problems else "; ".join(parts)
        checks.append(_check(f"example:{name}", status, detail, time.monotonic() - started,
                             built=done, ran=ran))  # fmt: skip
    if checks:
        checks[0]["build_seconds"] = round(build_seconds, 2)
    return checks


def example_names(option: str | None) -> list[str]:
    """The bundled examples `--examples` names (all by default); an unknown name is a failed check
    later (its copy fails), not a silent skip."""
    from workbench.project import examples_dir

    if option is not None:
        return [] if option.strip() == "none" else [n.strip() for n in option.split(",") if n.strip()]
    return sorted(p.parent.name for p in examples_dir().glob("*/workbench.toml"))


# ---------------------------------------------------------------------------------------- report


def collect(args: argparse.Namespace) -> dict[str, Any]:
    from workbench.build.cache import cache_root
    from workbench.project import examples_dir

    report: dict[str, Any] = {
        "version": __version__,
        "frozen": is_frozen(),
        "executable": sys.executable,
        "install_dir": str(install_dir() or Path(__file__).resolve().parents[2]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "user_cache": str(cache_root()),
        "checks": [],
    }
    source = examples_dir() / EXAMPLE
    with tempfile.TemporaryDirectory(prefix="wb-selftest-") as tmp:
        copy = Path(tmp) / EXAMPLE
        started = time.monotonic()
        try:
            shutil.copytree(source, copy, ignore=shutil.ignore_patterns("target"))
            report["checks"].append(_check("example", PASS, f"{source} copied to a temporary folder",
                                           time.monotonic() - started))  # fmt: skip
        except OSError as exc:
            report["checks"].append(_check("example", FAIL, f"cannot copy {source}: {exc}"))
            report["ok"] = False
            return report
        report["checks"] += run_window_check(copy, Path(tmp), args.window_timeout)
        cache_dir = Path(args.cache_dir) if args.cache_dir else Path(tmp) / "cache"
        try:
            report.update(build_and_run(copy, cache_dir, args.build_timeout))
        except Exception as exc:  # anything unexpected is a failed check with its message
            report["checks"].append(_check("build-and-run", FAIL, f"{type(exc).__name__}: {exc}"))
        try:
            report["checks"] += examples_check(example_names(args.examples), Path(tmp), cache_dir,
                                               args.build_timeout)  # fmt: skip
        except Exception as exc:  # anything unexpected is a failed check with its message
            report["checks"].append(_check("examples", FAIL, f"{type(exc).__name__}: {exc}"))
    statuses = [c["status"] for c in report["checks"]]
    statuses += [b["status"] for b in report.get("backends", {}).values()]
    report["ok"] = FAIL not in statuses and bool(report.get("backends"))
    report["summary"] = {s: statuses.count(s) for s in (PASS, FAIL, SKIP)}
    return report


def render(report: dict[str, Any]) -> str:
    mark = {PASS: "ok  ", FAIL: "FAIL", SKIP: "skip"}
    where = "bundle" if report["frozen"] else "Python install"
    lines = [f"Rust GPU Workbench {report['version']} self-test ({where}: {report['install_dir']})", ""]
    for check in report["checks"]:
        lines.append(f"  {mark[check['status']]}  {check['name']:<18} {check['detail']}")
    if report.get("backends"):
        lines += [
            "",
            f"  {report.get('example', EXAMPLE)} example, sizes {format_sizes(report.get('sizes'))}:",
        ]
        for name, b in report["backends"].items():
            steps = ", ".join(f"{step} {b[step]}" for step in ("build", "run") if step in b)
            detail = "; ".join(part for part in (steps, b.get("reason", "")) if part)
            lines.append(f"  {mark[b['status']]}  {name:<18} {detail}")
        lines += ["", "  runtimes:"]
        for name, r in report.get("runtimes", {}).items():
            detail = ", ".join(r["devices"]) if r["status"] == PASS else r["reason"]
            lines.append(f"  {mark[r['status']]}  {name:<18} {detail}")
    s = report.get("summary", {})
    verdict = "PASSED" if report["ok"] else "FAILED"
    lines += [
        "",
        f"self-test {verdict} ({s.get(PASS, 0)} checks passed, {s.get(FAIL, 0)} failed, {s.get(SKIP, 0)} skipped)",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    report = collect(args)
    print(json.dumps(report, indent=2, default=str) if args.json else render(report))
    return 0 if report["ok"] else 1


def _window_main(argv: list[str]) -> int:
    """`-m workbench.cli.selftest --window PROJECT`: the window check's child; prints one JSON line."""
    if len(argv) != 2 or argv[0] != "--window":
        print("usage: python -m workbench.cli.selftest --window PROJECT", file=sys.stderr)
        return 2
    result = window_check(Path(argv[1]))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_window_main(sys.argv[1:]))
