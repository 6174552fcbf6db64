"""`workbench hosts setup`: the workbench's run part installed into a venv on the host.

A wheel is built here (`pip wheel --no-deps`) and sent with
any extra wheels over the host's ssh connection; on the host, `<base>/venv` is created with the
host's Python and the wheel installed into it. The host needs network access only for the
workbench's own dependencies (numpy, wgpu, psutil …), or none when `--wheels DIR` sends those
too (`pip install --no-index --find-links`). `--use-system-packages` creates the venv with
`--system-site-packages` and, when the host's Python is itself a venv, adds that venv's site
folders, so dependencies already installed there are reused without downloading anything.
The host's entry then runs `<base>/venv/bin/python`.
"""

from __future__ import annotations

import re
import shlex
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from workbench import childproc
from workbench.remote import ssh
from workbench.remote.hosts import Host, HostError

#: Runs on the host with its Python: create the venv, optionally see the base's packages, install.
_INSTALL = r"""
import os, site, subprocess, sys, sysconfig, glob
stage, venv, mode, requirements = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
args = [sys.executable, "-m", "venv"] + (["--system-site-packages"] if mode != "isolated" else []) + [venv]
if not os.path.exists(os.path.join(venv, "bin", "python")):
    subprocess.check_call(args)
py = os.path.join(venv, "bin", "python")
if mode == "system" and sys.prefix != sys.base_prefix:
    # This Python is a venv: --system-site-packages sees only its base, so name its folders too.
    out = subprocess.check_output([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True)
    dirs = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    with open(os.path.join(out.strip(), "_workbench_base_site.pth"), "w") as pth:
        pth.write("\n".join(dirs) + "\n")
wheels = sorted(glob.glob(os.path.join(stage, "*.whl")))
ours = [w for w in wheels if os.path.basename(w).startswith("rust_gpu_workbench-")]
pip = [py, "-m", "pip", "install", "--disable-pip-version-check"]
if mode == "offline":
    pip += ["--no-index", "--find-links", stage]
# The workbench without its window's dependencies (Qt …), then only what the run part imports.
subprocess.check_call(pip + ["--no-deps", "--force-reinstall"] + ours)
if mode != "system" and requirements:
    subprocess.check_call(pip + requirements)
check = "import numpy, psutil, workbench.run.worker, workbench; print('WB-SETUP', workbench.__version__)"
subprocess.check_call([py, "-c", check])
print("WB-VENV " + os.path.abspath(py))
"""


def source_root() -> Path:
    """The folder holding this workbench's pyproject.toml (what the wheel is built from)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        raise HostError(f"cannot build a wheel: {root} has no pyproject.toml (run from a source checkout)")
    return root


def build_wheel(dest: Path, timeout_s: float = 300.0) -> Path:
    """`pip wheel --no-deps` of the workbench into `dest` (with build isolation; without it when
    that fails, e.g. offline with a recent enough setuptools installed); the wheel's path."""
    base = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--wheel-dir", str(dest)]
    errors = []
    for extra in ([], ["--no-build-isolation"]):
        try:
            done = childproc.capture([*base, *extra, str(source_root())], timeout_s=timeout_s)
        except (OSError, TimeoutError) as exc:
            raise HostError(f"building the workbench wheel failed: {exc}") from None
        wheels = sorted(dest.glob("rust_gpu_workbench-*.whl"))
        if done.returncode == 0 and wheels:
            return wheels[-1]
        errors.append(" | ".join(ln.strip() for ln in done.stderr[-4:] if ln.strip()))
    raise HostError(f"building the workbench wheel with pip failed: {errors[-1] or errors[0]}")


#: The distributions the run part imports (cpu and wgpu runtimes); cuda's come with the `cuda` extra.
RUN_DEPENDENCIES = ("numpy", "psutil", "wgpu")


def run_requirements(wheel: Path) -> list[str]:
    """The wheel's own requirement strings for RUN_DEPENDENCIES (versions as pyproject says)."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
    out = []
    for line in metadata.splitlines():
        if line.startswith("Requires-Dist:") and "extra ==" not in line:
            requirement = line.split(":", 1)[1].strip()
            if re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0].lower() in RUN_DEPENDENCIES:
                out.append(requirement.replace(" ", ""))
    return out


def setup_host(
    host: Host,
    wheels_dir: str | Path | None = None,
    use_system_packages: bool = False,
    on_line: Callable[[str], None] = lambda line: None,
    timeout_s: float = 600.0,
) -> str:
    """Install the run part on `host`; returns the remote venv's python (store it in the host)."""
    mode = "system" if use_system_packages else ("offline" if wheels_dir else "isolated")
    with tempfile.TemporaryDirectory(prefix="wb-setup-") as tmp:
        stage_dir = Path(tmp) / "wheels"
        stage_dir.mkdir()
        on_line("building the workbench wheel …")
        requirements = run_requirements(build_wheel(stage_dir))
        extra = sorted(Path(wheels_dir).glob("*.whl")) if wheels_dir else []
        if wheels_dir and not extra:
            raise HostError(f"--wheels {wheels_dir}: no .whl files there")
        archive = Path(tmp) / "wheels.tar"
        with tarfile.open(archive, "w") as tar:
            for path in [*stage_dir.glob("*.whl"), *extra]:
                tar.add(path, arcname=path.name)
        base = ssh.remote_base(host)
        on_line(f"sending {1 + len(extra)} wheel(s) to {host.name} …")
        send = f"mkdir -p {base}/setup && rm -f {base}/setup/*.whl && tar -x -f - -C {base}/setup"
        done = ssh.run(host, send, timeout_s=timeout_s, stdin=archive)
        if done.returncode != 0:
            raise HostError(f"host {host.name}: could not receive the wheels: {_tail(done.stderr)}")
    on_line(f"installing into {host.remote_dir}/venv on {host.name} …")
    install = f"cd && {host.python} -c {shlex.quote(_INSTALL)} {base}/setup {base}/venv {mode} " + " ".join(
        shlex.quote(r) for r in requirements
    )
    done = ssh.run(host, install, timeout_s=timeout_s)
    for line in done.stdout + done.stderr:
        if "which is not installed" not in line:  # the window's dependencies, left out on purpose
            on_line(line)
    venv_python = next((ln[len("WB-VENV ") :] for ln in done.stdout if ln.startswith("WB-VENV ")), None)
    if done.returncode != 0 or venv_python is None:
        if done.returncode == 127:
            raise HostError(f"host {host.name}: `{host.python}` was not found; give one with --python")
        raise HostError(f"host {host.name}: the installation failed: {_tail(done.stderr)}")
    return venv_python


def _tail(lines: list[str]) -> str:
    return " | ".join(ln.strip() for ln in lines[-4:] if ln.strip()) or "no output"
