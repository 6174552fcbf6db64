"""The content-addressed build cache: where it lives and the key of one backend's build.

Layout under the cache root:
  artifacts/<backend>/<key>/   one successful build: artifact files + build.json
  targets/<backend>/           cargo target dir shared by all projects (nvptx builds `core` once)
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from workbench.project import Project
from workbench.records import ToolchainInfo

KEY_FORMAT = 1  # bump when the build recipe changes, so old entries are not reused


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """`cache_dir`, else $WB_CACHE_DIR, else the user cache dir (~/.cache/rust-gpu-workbench)."""
    if cache_dir:
        return Path(cache_dir).expanduser()
    if os.environ.get("WB_CACHE_DIR"):
        return Path(os.environ["WB_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rust-gpu-workbench"


def artifact_dir(root: Path, backend: str, key: str) -> Path:
    return root / "artifacts" / backend / key


def target_dir(root: Path, backend: str) -> Path:
    return root / "targets" / backend


def build_key(
    project: Project,
    backend: str,
    toolchain: ToolchainInfo,
    flags: list[str],
    target: str,
    tunables: dict[str, Any],
    extra_files: list[Path] = (),
) -> tuple[str, str]:
    """(cache key, source hash). The key covers the backend's sources (`Project.backend_sources`),
    the manifest, toolchain, flags, target and tunables."""
    source_hash = project.source_hash(project.backend_sources(backend))
    digest = hashlib.sha256()
    header = {
        "format": KEY_FORMAT,
        "backend": backend,
        "source_hash": source_hash,
        "toolchain": [toolchain.version, toolchain.path, toolchain.details.get("route", "")],
        "flags": flags,
        "target": target,
        "tunables": {k: tunables[k] for k in sorted(tunables)},
        "crate": str(project.manifest.crate_dir),
    }
    digest.update(json.dumps(header, sort_keys=True, default=str).encode())
    # The manifest is among the sources when it sits in the project; hash it anyway (it may not).
    digest.update(project.manifest.path.read_bytes())
    for path in extra_files:
        digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest(), source_hash
