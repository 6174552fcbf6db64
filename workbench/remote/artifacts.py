"""Build artifacts on a host: a content-addressed cache, filled once per build key.

Builds stay on this machine. Before a remote run, the build folder (`build.json` and the
artifact files, all relative to it) travels as a tar stream over the host's shared ssh
connection into `<remote base>/remote-artifacts/<backend>-<key>/` (unpacked beside it, then
renamed, so a half-sent folder is never used); a folder that is there already is not sent again.
"""

from __future__ import annotations

import hashlib
import shlex
import tarfile
import tempfile
from pathlib import Path

from workbench.remote import ssh
from workbench.remote.hosts import Host, HostError


def folder_name(backend: str, folder: str | Path, info: dict) -> str:
    """`<backend>-<build key>`; a folder without a key is named by the hash of its files."""
    key = str(info.get("key") or "")
    if not key:
        digest = hashlib.sha256()
        for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
        key = "content-" + digest.hexdigest()
    return f"{backend}-{key}"


def stage(host: Host, backend: str, folder: str | Path, info: dict, timeout_s: float = 300.0) -> str:
    """The absolute path, on `host`, of a copy of the build folder `folder` (sent when missing)."""
    name = folder_name(backend, folder, info)
    target = f"{ssh.remote_base(host)}/remote-artifacts/{shlex.quote(name)}"
    probe = f'd={target}; if [ -f "$d/build.json" ]; then echo "have $d"; else echo "need $d"; fi'
    done = ssh.run(host, probe, timeout_s=60)
    answer = next((ln for ln in reversed(done.stdout) if ln.startswith(("have ", "need "))), "")
    if not answer:
        raise HostError(
            f"host {host.name}: unexpected answer while looking for artifacts: {done.stderr[-3:]}"
        )
    state, remote_dir = answer.split(" ", 1)
    if state == "need":
        _send(host, Path(folder), target, timeout_s)
    return remote_dir


def _send(host: Host, folder: Path, target: str, timeout_s: float) -> None:
    with tempfile.TemporaryDirectory(prefix="wb-send-") as tmp:
        archive = Path(tmp) / "artifacts.tar"
        with tarfile.open(archive, "w") as tar:
            for path in sorted(folder.iterdir()):
                tar.add(path, arcname=path.name)
        unpack = (
            f'd={target}; p="$d.part.$$"; mkdir -p "$p" && tar -x -f - -C "$p" '
            f'&& {{ [ -d "$d" ] || mv "$p" "$d"; }}; rm -rf "$p"; test -f "$d/build.json"'
        )
        done = ssh.run(host, unpack, timeout_s=timeout_s, stdin=archive)
    if done.returncode != 0:
        tail = " | ".join(ln for ln in done.stderr[-3:] if ln.strip()) or f"exit code {done.returncode}"
        raise HostError(f"host {host.name}: could not store the artifacts of {folder.name}: {tail}")
