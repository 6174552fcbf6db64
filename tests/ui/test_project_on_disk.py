"""The project folder on disk is the truth (issue 21, item 4), in the real window on real builds.

workbench.toml edited by another program is what the next cycle and every explicit Run use; a
manifest that no longer loads, or that its sources contradict, is a row in Diagnostics at its line
and a marker in the editor's gutter until it is fixed; a reference file edited on disk while no
editor shows it rebuilds its backend. Every edit here is a write to the file, never the editor.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS
from workbench.build.watch import ContentDigests
from workbench.errors import WorkbenchError
from workbench.kernel_api import ensure_crate
from workbench.project import Project, examples_dir
from workbench.ui.project.watch import ProjectFilesWatch
from workbench.ui.screenshot import save_screenshot

TIMEOUT_MS = WORK_GUARD_MS


def _window(make_window, root, backends, hot_reload=True):
    window = make_window(root, panels=("build", "results"))
    window.hot_reload_action.setChecked(hot_reload)
    window.bridge.set_backends(backends)
    window.bridge.set_devices(["cpu"] if backends == ["cpu"] else [])
    return window


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _manifest_rows(window) -> list[dict[str, str]]:
    return [r for r in window.panels["build"].diagnostic_rows() if r["backend"] == "manifest"]


def _sizes_of(report) -> set[int]:
    return {r.provenance["sizes"]["n"] for r in report.results if r.status == "ok"}


@pytest.mark.slow
def test_a_size_edited_on_disk_is_what_the_rerun_and_the_next_run_use(make_window, example_copy, qtbot):
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    manifest.write_text(manifest.read_text().replace("n = 1048576", "n = 4096"))
    window = _window(make_window, root, ["cpu"])
    assert window.editor_tabs.editor_for(manifest) is None  # not open: only the folder watch sees it

    # Hot reload: the write alone re-reads the manifest, rebuilds and reruns at the new size.
    with qtbot.waitSignal(
        window.bridge.runFinished, timeout=TIMEOUT_MS, check_params_cb=lambda r: _sizes_of(r) == {3000}
    ):
        manifest.write_text(manifest.read_text().replace("n = 4096", "n = 3000"))
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=TIMEOUT_MS)
    assert window.bridge.project.manifest.kernel().sizes["n"] == 3000
    assert window.project.manifest.kernel().sizes["n"] == 3000

    # Run re-reads the disk itself: with nothing watching, a later edit is still what it runs.
    window.files_watch.stop()
    manifest.write_text(manifest.read_text().replace("n = 3000", "n = 2500"))
    with qtbot.waitSignal(window.bridge.runFinished, timeout=TIMEOUT_MS) as finished:
        window.run_action.trigger()
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=TIMEOUT_MS)
    assert _sizes_of(finished.args[0]) == {2500}
    assert window.bridge.project.manifest.kernel().sizes["n"] == 2500


def test_a_manifest_broken_on_disk_is_a_diagnostic_at_its_line_until_fixed(
    make_window, example_copy, qtbot, test_output_dir
):
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    good = manifest.read_text()
    window = _window(make_window, root, ["cpu"], hot_reload=False)  # the re-read needs no build
    assert _manifest_rows(window) == []

    # Not open in the editor: the folder watch notices, the loader's error is a row at its line.
    broken = good.replace('direction = "inout"', 'direction = "sideways"')
    line = _line_of(broken, '"sideways"')
    manifest.write_text(broken)
    qtbot.waitUntil(lambda: len(_manifest_rows(window)) == 1, timeout=HANG_GUARD_MS)
    (row,) = _manifest_rows(window)
    assert row["location"] == f"workbench.toml:{line}" and row["severity"] == "error"
    assert "direction" in row["message"] and "sideways" in row["message"]
    # ... and a marker in the gutter once workbench.toml is open, as a compiler error gets.
    editor = window.editor_tabs.open_file(manifest, line=line)
    assert [d["line"] for d in editor.diagnostics_at_line(line)] == [line]
    save_screenshot(window, test_output_dir / "project-on-disk-manifest-error.png")

    # Open now, so the editor's own watch reloads it; a buffer without its binding is next
    # (wgsl is a backend of saxpy): reported at that buffer's table.
    unbound = good.replace("binding = 2\nviews = [4]\n", "")  # its views need a binding too
    table = next(
        i
        for i in range(_line_of(unbound, 'name = "y"'), 0, -1)
        if unbound.splitlines()[i - 1] == "[[kernel.arg]]"
    )
    manifest.write_text(unbound)
    qtbot.waitUntil(
        lambda: [r["location"] for r in _manifest_rows(window)] == [f"workbench.toml:{table}"],
        timeout=HANG_GUARD_MS,
    )
    assert "buffer 'y' has no binding" in _manifest_rows(window)[0]["message"]
    qtbot.waitUntil(lambda: bool(editor.diagnostics_at_line(table)), timeout=HANG_GUARD_MS)
    assert not editor.diagnostics_at_line(line)

    # Fixed on disk: the row and the marker go.
    manifest.write_text(good)
    qtbot.waitUntil(lambda: _manifest_rows(window) == [], timeout=HANG_GUARD_MS)
    qtbot.waitUntil(lambda: not editor.live_diagnostics(), timeout=HANG_GUARD_MS)


def test_the_manifest_state_is_said_when_it_changes_not_at_every_re_read(bridge, example_copy):
    # Every save and every console build() / run() re-reads workbench.toml; the panels redraw
    # their diagnostics only when what is wrong with it changed.
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    good = manifest.read_text()
    said: list[list[dict]] = []
    bridge.manifestChecked.connect(said.append)
    bridge.set_project(root)
    assert said == [[]]  # a newly opened project says its state, even "nothing wrong"
    for _ in range(3):
        assert bridge.check_manifest() is bridge.project
    assert said == [[]]

    manifest.write_text(good.replace('direction = "inout"', 'direction = "sideways"'))
    assert bridge.check_manifest() is None
    bridge.check_manifest()
    assert len(said) == 2 and "sideways" in said[1][0]["message"]
    assert bridge.manifest_diagnostics and "sideways" in bridge.manifest_diagnostics[0].rendered

    manifest.write_text(good)
    assert bridge.check_manifest() is not None
    assert said[2:] == [[]] and bridge.manifest_diagnostics == []
    bridge.set_project(root)  # opened again: said again
    assert said[3:] == [[]]


@pytest.mark.slow
def test_a_reference_edited_on_disk_while_not_open_rebuilds_its_backend(make_window, example_copy, qtbot):
    root = example_copy("saxpy")
    shader = root / "reference" / "saxpy.wgsl"
    window = _window(make_window, root, ["wgsl"])
    assert window.editor_tabs.editor_for(shader) is None
    token = uuid.uuid4().hex

    def rebuilt(results) -> bool:
        result = results.get("wgsl")
        return result is not None and result.status == "ok" and not result.cached

    with qtbot.waitSignal(window.bridge.buildFinished, timeout=TIMEOUT_MS, check_params_cb=rebuilt) as built:
        shader.write_text(shader.read_text() + f"\n// edited elsewhere {token}\n")
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=TIMEOUT_MS)
    (artifact,) = [Path(a) for a in built.args[0]["wgsl"].artifacts if a.endswith(".wgsl")]
    assert token in artifact.read_text()


def test_only_files_whose_bytes_changed_count_as_changed(tmp_path):
    kept, edited, made = (tmp_path / name for name in ("kept.rs", "edited.rs", "made.wgsl"))
    kept.write_text("fn a() {}\n")
    edited.write_text("fn b() {}\n")
    digests = ContentDigests([kept, edited])
    kept.write_text("fn a() {}\n")  # the same bytes again: a rewrite, not a change
    edited.write_text("fn b() { 1; }\n")
    made.write_text("// new\n")
    (tmp_path / "notes.txt").write_text("not a source")
    assert digests.changed([kept, edited, made, tmp_path / "notes.txt"]) == [edited, made]
    assert digests.changed([edited]) == []  # seen now
    edited.unlink()
    assert digests.changed([edited]) == [edited]


def test_run_rereads_a_manifest_broken_on_disk_and_names_its_line(make_window, example_copy, qtbot):
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    window = _window(make_window, root, ["cpu"], hot_reload=False)
    window.files_watch.stop()  # nothing watches: only Run's own re-read can notice
    text = manifest.read_text()
    start = text.index('name = "y"')
    broken = text[:start] + text[start:].replace('type = "f32"', 'type = "f16"', 1)  # the edit
    manifest.write_text(broken)
    line = _line_of(broken, '"f16"')
    with qtbot.waitSignal(
        window.bridge.statusMessage,
        timeout=WORK_GUARD_MS,
        check_params_cb=lambda m: 'unknown type "f16"' in m,
    ):
        window.run_action.trigger()
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=WORK_GUARD_MS)
    assert window.bridge.last_build is None  # refused before anything was built or run
    (row,) = _manifest_rows(window)
    assert row["location"] == f"workbench.toml:{line}" and 'unknown type "f16"' in row["message"]


@pytest.mark.slow
def test_the_consoles_run_uses_the_manifest_on_disk_and_refuses_a_broken_one(
    make_window, example_copy, qtbot
):
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    window = _window(make_window, root, ["cpu"], hot_reload=False)
    window.files_watch.stop()
    manifest.write_text(manifest.read_text().replace("n = 1048576", "n = 2048"))
    report = window.bridge.run_blocking(backends=["cpu"], devices=["cpu"])
    assert _sizes_of(report) == {2048}

    text = manifest.read_text()
    manifest.write_text(text.replace("[kernel.launch]", "[kernel.launch"))
    with pytest.raises(
        WorkbenchError, match=rf"workbench.toml:{_line_of(text, '[kernel.launch]')}: not valid TOML"
    ):
        window.bridge.run_blocking(backends=["cpu"], devices=["cpu"])
    assert [r["location"] for r in _manifest_rows(window)] == [
        f"workbench.toml:{_line_of(text, '[kernel.launch]')}"
    ]


def test_a_crate_outside_the_project_folder_is_watched_too(example_copy, qtbot):
    root = example_copy("saxpy")
    crate = root.parent / "saxpy-crate"
    crate.mkdir()
    for name in ("Cargo.toml", "Cargo.lock", "src"):
        (root / name).rename(crate / name)
    manifest = root / "workbench.toml"
    manifest.write_text(manifest.read_text().replace('crate = "."', 'crate = "../saxpy-crate"'))
    watch = ProjectFilesWatch()
    watch.watch(Project.open(root))
    try:
        cargo = crate / "Cargo.toml"
        with qtbot.waitSignal(watch.changed, timeout=HANG_GUARD_MS) as changed:
            cargo.write_text(cargo.read_text() + "\n# edited elsewhere\n")
        assert changed.args[0] == [str(cargo)]
        with qtbot.waitSignal(watch.changed, timeout=HANG_GUARD_MS) as changed:
            manifest.write_text(manifest.read_text() + "\n# edited elsewhere\n")
        assert changed.args[0] == [str(manifest)]
    finally:
        watch.stop()


def test_the_crate_a_build_places_is_not_an_edit(tmp_path, qtbot):
    # A `cp -r` copy of an example (its gpu_kernel link leading nowhere) opened in the window: the
    # first build places the workbench's crate there (`ensure_crate`). Its files appearing were
    # taken for edits made elsewhere, so the window rebuilt and re-ran, cancelling the run that
    # placed them (`workbench gui COPY --run` showed wgsl "skipped: cancelled", cpu-sim "timing…").
    root = tmp_path / "scan"
    subprocess.run(["cp", "-r", str(examples_dir() / "scan"), str(root)], check=True)
    assert (root / "gpu_kernel").is_symlink() and not (root / "gpu_kernel").exists()
    watch = ProjectFilesWatch()
    watch.watch(Project.open(root))
    seen: list[str] = []
    lib = root / "src" / "lib.rs"

    def until_the_edit(paths: list[str]) -> bool:
        seen.extend(paths)
        return str(lib) in paths

    try:
        assert ensure_crate(root) is None and (root / "gpu_kernel" / "src" / "lib.rs").is_file()
        # Then a real edit, waited for: whatever the placement made the watch say came before it.
        with qtbot.waitSignal(watch.changed, timeout=HANG_GUARD_MS, check_params_cb=until_the_edit):
            lib.write_text(lib.read_text() + "\n// edited elsewhere\n")
        assert seen == [str(lib)], seen
        # An edit of the placed copy afterwards is the user's, and counts.
        placed = root / "gpu_kernel" / "src" / "lib.rs"
        with qtbot.waitSignal(watch.changed, timeout=HANG_GUARD_MS) as changed:
            placed.write_text(placed.read_text() + "\n// mine now\n")
        assert changed.args[0] == [str(placed)]
    finally:
        watch.stop()
