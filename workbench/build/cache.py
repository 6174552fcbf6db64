"""The content-addressed build cache: where it lives and the keys of one backend's build.

Layout under the cache root:
  artifacts/<backend>/<key>/   one successful build: artifact files + build.json
  inputs/<backend>/<pre>.json  the files the compiler read in the last build with pre-key <pre>
  targets/<backend>/           cargo target dir shared by all projects (nvptx builds `core` once);
                               a build holds its lock (`target_lock`) while it uses the folder
  work/<backend>-<id>/         one build's private scratch folder, removed when it ends

Keys are two-level (docs/contracts.md, "Build keys"):
- the **pre-key** covers what is known before compiling: the backend's sources
  (`Project.backend_sources`, paths relative to the project), the `.cargo/config*` and
  `rust-toolchain*` files of the crate folder and its parents (and $CARGO_HOME's), the
  build-affecting environment (`build_environment`), toolchain, flags, target and tunables;
- the **full key** adds the contents of every file the compiler's own dep-info listed in the
  last build with that pre-key (an `include_bytes!` file, a path dependency, a CUDA header).
  A first build (no recorded inputs) is a miss; a later lookup re-hashes the recorded inputs,
  so an edit to any of them misses too. The project's absolute path is in neither key: files
  inside the project are named relative to it, files outside it count by content only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from workbench.backends import RUST_BACKENDS, backend_row
from workbench.build.scratch import locked
from workbench.project import Project
from workbench.records import ToolchainInfo

KEY_FORMAT = 2  # bump when the build recipe changes, so old entries are not reused


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """`cache_dir`, else $WB_CACHE_DIR, else the user cache dir (~/.cache/rust-gpu-workbench);
    absolute: cargo runs in the crate's folder, where a relative target dir would land."""
    if cache_dir:
        return Path(cache_dir).expanduser().absolute()
    if os.environ.get("WB_CACHE_DIR"):
        return Path(os.environ["WB_CACHE_DIR"]).expanduser().absolute()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rust-gpu-workbench"


def artifact_dir(root: Path, backend: str, key: str) -> Path:
    return root / "artifacts" / backend / key


def target_dir(root: Path, backend: str) -> Path:
    return root / "targets" / backend


def work_dir(root: Path, backend: str) -> Path:
    """A fresh private scratch folder for one build (the caller removes it)."""
    path = root / "work" / f"{backend}-{uuid.uuid4().hex[:12]}"
    path.mkdir(parents=True)
    return path


@contextlib.contextmanager
def target_lock(root: Path, backend: str, check=lambda: None, poll_s: float = 0.1) -> Iterator[None]:
    """Hold the backend's shared target dir for one build: compile, then copy the outputs out.

    cargo locks the folder only while it runs; two projects whose crates share a name write the
    same `target/.../libNAME.so`, so the copy out must happen under the same lock. `check()` is
    polled while waiting (a cancel or a deadline raises)."""
    with locked(target_dir(root, backend) / ".wb-lock", check, poll_s):
        yield


def build_environment(backend: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables of `environ` (default: this process's) that shape `backend`'s output."""
    environ = os.environ if environ is None else environ
    row = backend_row(backend)
    names, prefixes = row.env_names, row.env_prefixes
    return {k: environ[k] for k in sorted(environ) if k in names or k.startswith(prefixes)}


def config_files(project: Project, backend: str) -> list[Path]:
    """cargo configuration a Rust backend's build reads: `.cargo/config(.toml)` and
    `rust-toolchain(.toml)` of the crate folder and every parent, then $CARGO_HOME's config."""
    if backend not in RUST_BACKENDS:
        return []
    found = []
    folder = project.manifest.crate_dir.resolve()
    for parent in (folder, *folder.parents):
        for rel in (".cargo/config.toml", ".cargo/config", "rust-toolchain.toml", "rust-toolchain"):
            if (parent / rel).is_file():
                found.append(parent / rel)
    cargo_home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")
    for name in ("config.toml", "config"):
        path = cargo_home / name
        if path.is_file() and path not in found:
            found.append(path)
    return found


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _relative(project: Project, path: str | Path) -> str:
    """`path` relative to the project root (with `..` when outside it), POSIX form."""
    return Path(os.path.relpath(os.path.abspath(path), project.root)).as_posix()


def _inside(rel: str) -> bool:
    return not (rel == ".." or rel.startswith("../"))


def pre_key(
    project: Project,
    backend: str,
    toolchain: ToolchainInfo,
    flags: list[str],
    target: str,
    tunables: dict[str, Any],
    extra_files: list[Path] = (),
) -> tuple[str, str, dict[str, Any]]:
    """(pre-key, source hash, the key's description for build.json) from what is known before
    compiling. Raises OSError when a source cannot be read."""
    source_hash = project.source_hash(project.backend_sources(backend))
    tool_path = toolchain.path
    if tool_path and _inside(_relative(project, tool_path)):
        tool_path = _relative(project, tool_path)  # a prebuilt folder inside the project
    configs = config_files(project, backend)
    header = {
        "format": KEY_FORMAT,
        "backend": backend,
        "source_hash": source_hash,
        "toolchain": [toolchain.version, tool_path, toolchain.details.get("route", "")],
        "flags": flags,
        "target": target,
        "tunables": {k: tunables[k] for k in sorted(tunables)},
        "crate": _relative(project, project.manifest.crate_dir),
        "env": build_environment(backend),
        # Parent folders differ between copies of a project: configs count by content, in order.
        "configs": [_sha(p.read_bytes()) for p in configs],
        "extra": [[_relative(project, p), _sha(p.read_bytes())] for p in extra_files],
    }
    digest = _sha(json.dumps(header, sort_keys=True, default=str).encode())
    described = {"env": header["env"], "configs": [str(p) for p in configs]}
    return digest, source_hash, described


def describe_inputs(project: Project, paths: list[Path]) -> list[dict[str, Any]]:
    """Recorded form of the compiler's input files: relative to the project (`..` outside it)."""
    seen: dict[str, dict[str, Any]] = {}
    for path in paths:
        abs_path = os.path.normpath(os.path.abspath(path))
        rel = _relative(project, abs_path)
        seen.setdefault(rel, {"path": rel, "inside": _inside(rel), "abs": abs_path})
    return sorted(seen.values(), key=lambda e: e["path"])


def resolve_input(project: Project, entry: dict[str, Any]) -> Path:
    """Where a recorded input is now: relative to this project (a copy elsewhere finds its own
    files, and `../dep` path dependencies as cargo resolves them), else where it was recorded."""
    local = project.root / entry["path"]
    if entry.get("inside") or local.exists() or not entry.get("abs"):
        return local
    return Path(entry["abs"])


def full_key(pre: str, project: Project, inputs: list[dict[str, Any]]) -> str:
    """The cache key: the pre-key plus the current contents of the recorded inputs."""
    digest = hashlib.sha256(pre.encode() + b"\0")
    for entry in inputs:
        path = resolve_input(project, entry)
        try:
            content = _sha(path.read_bytes())
        except OSError:
            content = "missing"  # a deleted input is a change, not an error
        name = entry["path"] if entry.get("inside") else "<outside>"
        digest.update(f"{name}\0{content}\0".encode())
    return digest.hexdigest()


def changed_since(project: Project, inputs: list[dict[str, Any]], since: float) -> list[str]:
    """Recorded inputs modified after `since` (time.time()): edited while the build ran."""
    changed = []
    for entry in inputs:
        try:
            if resolve_input(project, entry).stat().st_mtime > since:
                changed.append(entry["path"])
        except OSError:
            changed.append(entry["path"])
    return changed


def _inputs_path(root: Path, backend: str, pre: str) -> Path:
    return root / "inputs" / backend / f"{pre}.json"


def read_inputs(root: Path, backend: str, pre: str) -> list[dict[str, Any]] | None:
    """The inputs recorded for `pre` (None: no build with this pre-key finished yet)."""
    try:
        data = json.loads(_inputs_path(root, backend, pre).read_text())
        inputs = data["inputs"]
        if isinstance(inputs, list) and all(isinstance(e, dict) and "path" in e for e in inputs):
            return inputs
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def write_inputs(root: Path, backend: str, pre: str, inputs: list[dict[str, Any]]) -> None:
    path = _inputs_path(root, backend, pre)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(json.dumps({"inputs": inputs}, indent=1) + "\n")
    os.replace(tmp, path)  # atomic: a concurrent reader sees the old list or the new one
