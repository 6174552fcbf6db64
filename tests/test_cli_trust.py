"""`workbench trust`: the trust list from the command line, shared with the window and `gui --run`."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import trust_store
from workbench.project import examples_dir


@pytest.fixture
def config_dir(tmp_path_factory, monkeypatch):
    """A private trust list and settings folder: never the user's."""
    path = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("WB_CONFIG_DIR", str(path))
    monkeypatch.setenv("WB_DATA_DIR", str(tmp_path_factory.mktemp("data")))  # the window records runs
    return path


def workbench(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "workbench", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )


def listed(config_dir: Path) -> dict[str, str]:
    result = workbench("trust", "--list", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["file"] == str(config_dir / trust_store.TRUST_FILE)
    return data["projects"]


def test_trust_untrust_and_list(example_copy, config_dir):
    project = example_copy("saxpy")
    assert listed(config_dir) == {}
    result = workbench("trust", project / "workbench.toml")  # the manifest names its folder
    assert result.returncode == 0 and f"trusted {project.resolve()}" in result.stdout
    assert listed(config_dir) == {str(project.resolve()): "trusted"}
    assert trust_store.is_trusted(project)  # what the window reads
    assert "already trusted" in workbench("trust", project).stdout
    text = workbench("trust", "--list").stdout
    assert text.split() == ["trusted", str(project.resolve())]

    result = workbench("trust", "--untrust", project)
    assert result.returncode == 0 and "the window will ask again" in result.stdout
    assert listed(config_dir) == {} and not trust_store.is_trusted(project)
    assert "was not trusted" in workbench("trust", "--untrust", project).stdout


def test_what_cannot_be_trusted_is_refused_with_a_reason(tmp_path, config_dir):
    result = workbench("trust", tmp_path)
    assert (
        result.returncode == 2 and f"not a kernel project (no workbench.toml in {tmp_path})" in result.stderr
    )
    result = workbench("trust", "--untrust", examples_dir() / "saxpy")
    assert result.returncode == 2 and "bundled example: always trusted" in result.stderr
    assert workbench("trust").returncode == 2
    assert listed(config_dir) == {}


def test_a_broken_trust_list_is_reported_and_left_as_it_is(example_copy, config_dir):
    project = example_copy("saxpy")
    broken = config_dir / trust_store.TRUST_FILE
    broken.write_text("{ not json")
    result = workbench("trust", project)
    assert result.returncode == 2 and str(broken) in result.stderr and "Traceback" not in result.stderr
    assert broken.read_text() == "{ not json"
    assert not trust_store.is_trusted(project)  # nothing is trusted that the user did not trust


#: A child that waits for the go file, then trusts its project: the writers start together.
TRUST_AT_ONCE = """
import os, sys, time
from workbench import trust_store
while not os.path.exists(sys.argv[1]):
    time.sleep(0.001)
trust_store.set_trusted(sys.argv[2])
"""


def test_processes_trusting_at_once_keep_every_choice(tmp_path, config_dir):
    go = tmp_path / "go"
    projects = [tmp_path / f"p{n}" for n in range(8)]
    children = []
    for project in projects:
        project.mkdir()
        cmd = [sys.executable, "-c", TRUST_AT_ONCE, str(go), str(project)]
        children.append(subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=dict(os.environ)))
    go.write_text("")
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
    assert trust_store.read_list() == {str(p.resolve()): "trusted" for p in projects}


def test_an_older_windows_trust_choices_are_taken_over(example_copy, config_dir):
    pytest.importorskip("PySide6")
    from workbench.ui.settings import load_settings, save_settings

    trusted, declined = example_copy("saxpy"), example_copy("matmul")
    settings_file = config_dir / "settings.json"
    settings_file.write_text(
        json.dumps(
            {"trusted_projects": [str(trusted)], "declined_projects": [str(declined)], "hot_reload": False}
        )
    )
    settings = load_settings()
    assert trust_store.is_trusted(trusted) and trust_store.is_declined(declined)
    save_settings(settings)
    assert json.loads(settings_file.read_text()) == {"hot_reload": False}
    # Once the list exists it is the truth: an untrust is not undone by an old settings file.
    trust_store.set_decision(trusted, None)
    settings_file.write_text(json.dumps({"trusted_projects": [str(trusted)]}))
    load_settings()
    assert not trust_store.is_trusted(trusted)


def test_gui_run_builds_a_project_trusted_on_the_command_line(example_copy, config_dir, tmp_path):
    pytest.importorskip("PySide6")
    project = example_copy("saxpy")
    shot, plots = tmp_path / "out.png", tmp_path / "plots.json"
    gui_run = ("gui", "--screenshot", shot, "--plots-json", plots, "--run", "--backend", "cpu", project)

    refused = workbench(*gui_run)
    assert refused.returncode == 2
    assert f"`workbench trust {project.resolve()}`" in refused.stderr and not shot.exists()

    assert workbench("trust", project).returncode == 0
    result = workbench(*gui_run)
    assert result.returncode == 0, result.stderr + result.stdout
    assert shot.stat().st_size > 0 and f"screenshot written to {shot}" in result.stdout
    # The picture is the default window, not the offscreen screen's 800x800 (nor 1600x1259).
    from workbench.ui.main_window import DEFAULT_SIZE

    assert struct.unpack(">II", shot.read_bytes()[16:24]) == DEFAULT_SIZE  # the PNG's IHDR width, height
    rows = json.loads(plots.read_text())["timing"]["rows"]
    assert [(row["backend"], row["median_s"] > 0) for row in rows] == [("cpu", True)]  # it ran

    assert workbench("trust", "--untrust", project).returncode == 0
    shot.unlink()
    again = workbench(*gui_run)
    assert again.returncode == 2 and "`workbench trust " in again.stderr and not shot.exists()
