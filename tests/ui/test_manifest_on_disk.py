"""workbench.toml edited or fixed on disk is re-read on its own and its diagnostics change
without a Run, however the other program writes it: in place, or as a new file renamed over it
(`sed -i`, editors' atomic saves), the way that was missed before (issue 36, item 6)."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from tests.waits import HANG_GUARD_MS, HANG_GUARD_S
from workbench.build.watch import ProjectWatcher


def _manifest_rows(window) -> list[dict[str, str]]:
    return [r for r in window.panels["build"].diagnostic_rows() if r["backend"] == "manifest"]


def _rename_over(path: Path, text: str, temp_name: str) -> None:
    """Write `text` to a sibling named `temp_name`, then rename it over `path` (one atomic save)."""
    temp = path.with_name(temp_name)
    temp.write_text(text)
    os.replace(temp, path)


def test_a_file_renamed_over_a_source_is_reported_by_the_watcher(tmp_path):
    """The rename's destination is what changed, whatever the temporary file was called."""
    (tmp_path / "workbench.toml").write_text("a = 1\n")
    seen: list[list[Path]] = []
    fired = threading.Event()

    def on_change(paths):
        seen.append(paths)
        fired.set()

    with ProjectWatcher(tmp_path, on_change, debounce_s=0.05):
        _rename_over(tmp_path / "workbench.toml", "a = 2\n", "sedX1b2c3")
        assert fired.wait(HANG_GUARD_S)
    assert any((tmp_path / "workbench.toml").resolve() in paths for paths in seen), seen


@pytest.mark.parametrize("how", ["write", "rename", "sed -i"])
def test_the_manifest_broken_and_fixed_on_disk_updates_the_diagnostics(make_window, example_copy, qtbot, how):
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    good = manifest.read_text()
    window = make_window(root, panels=("build", "results"))
    window.hot_reload_action.setChecked(False)  # the re-read needs no build and no Run
    window.bridge.set_backends(["cpu"])
    assert _manifest_rows(window) == []

    def edit(old: str, new: str) -> None:
        text = manifest.read_text()
        assert old in text
        if how == "write":
            manifest.write_text(text.replace(old, new))
        elif how == "rename":
            _rename_over(manifest, text.replace(old, new), "workbench.toml.new")
        else:
            subprocess.run([shutil.which("sed"), "-i", f"s/{old}/{new}/", str(manifest)], check=True)

    edit('direction = "inout"', 'direction = "sideways"')
    qtbot.waitUntil(lambda: len(_manifest_rows(window)) == 1, timeout=HANG_GUARD_MS)
    (row,) = _manifest_rows(window)
    assert "sideways" in row["message"] and row["location"].startswith("workbench.toml:")
    assert window.bridge.last_build is None  # nothing was built or run to notice it

    edit('direction = "sideways"', 'direction = "inout"')
    qtbot.waitUntil(lambda: _manifest_rows(window) == [], timeout=HANG_GUARD_MS)
    assert manifest.read_text() == good
