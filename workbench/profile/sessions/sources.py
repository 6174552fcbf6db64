"""Snapshots of a project's kernel sources (for the sessions database) and diffs between them."""

from __future__ import annotations

import difflib
import hashlib
import json

from workbench.project import Project

#: Source suffixes kept in a snapshot: text a user edits (not `.npy` data or `Cargo.lock`).
SNAPSHOT_SUFFIXES = {".rs", ".toml", ".cu", ".cuh", ".wgsl", ".h", ".comp", ".glsl"}
#: A file larger than this is recorded by its hash only (generated or vendored code).
MAX_FILE_CHARS = 512 * 1024


def snapshot(project: Project) -> tuple[str, dict[str, str]]:
    """(hash, {relative path: text}) of the project's editable sources, read now."""
    files: dict[str, str] = {}
    for path in project.source_files():
        if path.suffix not in SNAPSHOT_SUFFIXES:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        rel = project.relative(path)
        if len(data) > MAX_FILE_CHARS:
            files[rel] = f"(not kept: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()})\n"
        else:
            files[rel] = data.decode("utf-8", errors="replace")
    return snapshot_hash(files), files


def snapshot_hash(files: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def unified_diff(old: dict[str, str], new: dict[str, str], context: int = 3) -> str:
    """A unified diff of two snapshots, file by file (added and removed files included)."""
    parts: list[str] = []
    for path in sorted(set(old) | set(new)):
        a, b = old.get(path), new.get(path)
        if a == b:
            continue
        parts.extend(
            difflib.unified_diff(
                (a or "").splitlines(keepends=True),
                (b or "").splitlines(keepends=True),
                fromfile=f"a/{path}" if a is not None else "/dev/null",
                tofile=f"b/{path}" if b is not None else "/dev/null",
                n=context,
            )
        )
        if parts and not parts[-1].endswith("\n"):
            parts[-1] += "\n"
    return "".join(parts)
