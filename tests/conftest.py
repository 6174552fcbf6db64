"""Test-wide set-up: offscreen Qt, a private XDG runtime dir for Mesa, shared helpers."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
if "XDG_RUNTIME_DIR" not in os.environ or not os.path.isdir(os.environ["XDG_RUNTIME_DIR"]):
    _xdg = tempfile.mkdtemp(prefix="wb-xdg-")
    os.chmod(_xdg, 0o700)
    os.environ["XDG_RUNTIME_DIR"] = _xdg

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "resources" / "examples"
SHARED_SPIRV = REPO.parent / "shared" / "data" / "rust-gpu-spirv"


@pytest.fixture
def example_copy(tmp_path):
    """Copy a bundled example (without build outputs) into a temporary folder.

    Build keys do not contain the project's folder, so a copy of an example built before is a
    cache hit; `unique=True` appends a fresh comment to every source (Rust, CUDA, WGSL) so that
    the copy builds for real on every backend."""

    def make(name: str, unique: bool = False) -> Path:
        dest = tmp_path / name
        shutil.copytree(EXAMPLES / name, dest, ignore=shutil.ignore_patterns("target"))
        if unique:
            token = uuid.uuid4().hex
            for path in [*dest.glob("src/**/*.rs"), *dest.glob("reference/*.cu"), *dest.glob("reference/*.wgsl")]:
                path.write_text(path.read_text() + f"\n// test copy {token}\n")
        return dest

    return make


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory):
    """One build cache for the whole test session, so `core` for nvptx is built once."""
    path = os.environ.get("WB_TEST_CACHE_DIR")
    if path:
        Path(path).mkdir(parents=True, exist_ok=True)
        return Path(path)
    return tmp_path_factory.mktemp("wb-cache")
