"""`workbench doctor`: real toolchain detection and real device discovery on this machine."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.build.install_hints import CUDA_RUNTIME_HINT, TOOLCHAIN_HINTS

README = Path(__file__).resolve().parents[1] / "README.md"


def doctor(*args):
    return subprocess.run(
        [sys.executable, "-m", "workbench", "doctor", *args], capture_output=True, text=True, timeout=180
    )


@pytest.fixture(scope="module")
def report():
    result = doctor("--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_json_has_toolchains_and_devices(report):
    assert set(report) == {"toolchains", "tools", "devices"}  # tools: rustfmt, clippy (build/rust_tools.py)
    toolchains = {t["backend"]: t for t in report["toolchains"]}
    assert set(toolchains) == {"cpu", "cpu-sim", "nvptx", "rust-gpu", "rust-cuda", "cuda-c", "wgsl"}
    for t in toolchains.values():
        if t["found"]:
            assert t["version"]
        else:
            assert t["hint"], f"{t['backend']} is missing without an install hint"
    assert set(report["devices"]) == {"cpu", "cuda", "wgpu"}


def test_this_machine(report):
    """What set-up gives every developer and CI machine: cpu and nvptx, llvmpipe, no CUDA."""
    toolchains = {t["backend"]: t for t in report["toolchains"]}
    if not (toolchains["cpu"]["found"] and toolchains["nvptx"]["found"]) and not os.environ.get("CI"):
        pytest.skip("Rust toolchains not installed (run packaging/bootstrap.sh setup)")
    assert toolchains["cpu"]["found"] and toolchains["nvptx"]["found"]
    # cargo-gpu and Rust-CUDA pin nightlies that cannot be installed here.
    assert not toolchains["rust-gpu"]["found"] and "cargo-gpu" in toolchains["rust-gpu"]["hint"]
    assert not toolchains["rust-cuda"]["found"] and toolchains["rust-cuda"]["hint"]
    wgpu = report["devices"]["wgpu"]
    assert wgpu["available"]
    assert any("llvmpipe" in d["name"] for d in wgpu["devices"])
    cuda = report["devices"]["cuda"]
    if cuda["available"]:  # a CUDA machine: tests/gpu checks the devices against the driver
        assert cuda["devices"]
    else:
        assert cuda["reason"]


def test_human_output_lists_hints():
    result = doctor()
    assert result.returncode == 0
    assert "Toolchains" in result.stdout and "Devices" in result.stdout
    assert "install:" in result.stdout and "llvmpipe" in result.stdout


def test_every_found_toolchain_names_where_it_is():
    """The table prints a place for each found toolchain (wgsl's is the wgpu package naga lives in),
    never an empty "()"."""
    result = doctor()
    assert result.returncode == 0, result.stderr
    toolchain_lines = result.stdout.split("\nDevices")[0].splitlines()
    assert "()" not in result.stdout
    wgsl = next(line for line in toolchain_lines if line.split()[:2] == ["wgsl", "found"])
    place = wgsl.rsplit("(", 1)[1].rstrip(")")
    assert os.path.isfile(os.path.join(place, "__init__.py")), wgsl


def readme_hints() -> dict[str, str]:
    """README.md's "Optional toolchains" table: row -> its "how to get it" cell, backticks dropped."""
    section = README.read_text().split("## Optional toolchains", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 3 or cells[0] in ("backend", "---"):
            continue
        name = re.match(r"`([^`]+)`", cells[0])
        rows[name.group(1) if name else cells[0]] = cells[2].replace("`", "")
    return rows


def test_each_install_hint_is_the_readme_s_words(report):
    """One text per toolchain: what doctor says for a missing one is its README row, word for word."""
    rows = readme_hints()
    assert {backend: rows.get(backend) for backend in TOOLCHAIN_HINTS} == TOOLCHAIN_HINTS
    assert rows["CUDA runtime"] == CUDA_RUNTIME_HINT
    missing = [t for t in report["toolchains"] if not t["found"]]
    assert missing  # cargo-gpu and Rust-CUDA cannot be installed here
    for t in missing:
        assert t["hint"] == rows[t["backend"]], t["backend"]
    cuda = report["devices"]["cuda"]
    if not cuda["available"] and cuda["reason"].startswith("pycuda is not installed"):
        assert cuda["reason"].endswith(rows["CUDA runtime"])
