"""Fail the bundle build when a file a project needs did not make it into the bundle.

usage: python packaging/check_bundle.py BUNDLE   (packaging/build.sh runs it after PyInstaller)

Every file under the checkout's resources/examples, resources/templates and resources/crates,
symbolic links followed (the bundle holds real copies where the checkout has links), must be in
BUNDLE/_internal/resources at the same place; and every bundled project's kernel API crate must be
sound (`workbench.kernel_api.check_crate`: there, readable, the right package and API version).
Exit status 1 with each missing file or problem named; 0 with a one-line summary.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench.kernel_api import check_crate  # noqa: E402  (the checkout's, by the path above)

#: The resources a project is built from, and the CUDA ceiling kernels `workbench ceilings` loads
#: (icons, docs and the desktop entry are checked by use).
FOLDERS = ("examples", "templates", "crates", "ceilings")
SKIPPED = {"target", "__pycache__"}


def expected_files(resources: Path) -> list[Path]:
    """The files under `resources`/FOLDERS, links followed, relative to `resources`."""
    found = []
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(resources / folder, followlinks=True):
            dirnames[:] = [d for d in dirnames if d not in SKIPPED and not d.startswith(".")]
            for name in filenames:
                if not name.startswith("."):
                    found.append((Path(dirpath) / name).relative_to(resources))
    return sorted(found)


def problems(bundle: Path) -> tuple[list[str], int, int]:
    internal = bundle / "_internal" if (bundle / "_internal").is_dir() else bundle
    bundled = internal / "resources"
    expected = expected_files(ROOT / "resources")
    found = [
        f"missing from the bundle: {bundled / rel} (the checkout has resources/{rel})"
        for rel in expected
        if not (bundled / rel).is_file()
    ]
    projects = sorted(
        p.parent for folder in ("examples", "templates") for p in (bundled / folder).glob("*/workbench.toml")
    )
    for project in projects:
        if (problem := check_crate(project)) is not None:
            found.append(f"bundled project {project.name}: {problem.message}")
    return found, len(expected), len(projects)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    bundle = Path(argv[0])
    if not bundle.is_dir():
        print(f"error: {bundle} is not a folder (the one-folder bundle)", file=sys.stderr)
        return 2
    found, files, projects = problems(bundle)
    for line in found:
        print(f"error: {line}", file=sys.stderr)
    if found:
        print(f"error: the bundle lacks {len(found)} thing(s) a project needs (above)", file=sys.stderr)
        return 1
    print(f"bundle check: {files} resource files present, {projects} projects with their kernel API crate")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
