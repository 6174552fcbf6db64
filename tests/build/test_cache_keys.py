"""Build keys follow what the compiler read (real cargo builds of saxpy copies, cpu backend).

One test per case of issue 9: `.cargo/config.toml` rustflags, an `include_bytes!`/`include_str!`
file, RUSTFLAGS in the environment, and a copy of the project in another folder.
"""

from __future__ import annotations

import ctypes
import shutil

import pytest

from workbench.build import build_project, read_build
from workbench.build.depinfo import parse
from workbench.build.toolchains import detect
from workbench.project import Project

pytestmark = pytest.mark.slow

MARKER = '#[cfg(wb_marker)]\n#[unsafe(no_mangle)]\npub extern "C" fn wb_marker_fn() {}\n'


@pytest.fixture(autouse=True)
def _cargo():
    if not detect("cpu").found:
        pytest.skip(f"cpu toolchain missing: {detect('cpu').hint}")


def build_cpu(root, cache):
    (result,) = build_project(Project.open(root), ["cpu"], cache)
    assert result.status == "ok", result.log
    return result


def library(result) -> bytes:
    return open(result.artifacts[0], "rb").read()


def with_marker(example_copy):
    root = example_copy("saxpy", unique=True)
    lib = root / "src" / "lib.rs"
    lib.write_text(lib.read_text() + MARKER)
    return root


def test_rustflags_in_cargo_config_rebuild(example_copy, cache):
    root = with_marker(example_copy)
    first = build_cpu(root, cache)
    assert b"wb_marker_fn" not in library(first)
    (root / ".cargo").mkdir()
    (root / ".cargo" / "config.toml").write_text('[build]\nrustflags = ["--cfg", "wb_marker"]\n')
    second = build_cpu(root, cache)
    assert not second.cached and second.key != first.key
    assert b"wb_marker_fn" in library(second)  # the artifact is the one the config asked for


def test_edited_include_bytes_and_include_str_files_rebuild(example_copy, cache):
    root = example_copy("saxpy", unique=True)
    (root / "table.bin").write_bytes(b"\x01\x02\x03")
    (root / "src" / "note.txt").write_text("four")
    lib = root / "src" / "lib.rs"
    lib.write_text(
        lib.read_text() + 'static TABLE: &[u8] = include_bytes!("../table.bin");\n'
        'static NOTE: &str = include_str!("note.txt");\n'
        '#[unsafe(no_mangle)]\npub extern "C" fn wb_included_len() -> usize { TABLE.len() * 100 + NOTE.len() }\n'
    )

    def included_len(result) -> int:
        return ctypes.CDLL(result.artifacts[0]).wb_included_len()

    first = build_cpu(root, cache)
    assert included_len(first) == 304
    assert {"table.bin", "src/note.txt"} <= set(read_build(first.artifact_dir)["key_inputs"]["files"])
    assert build_cpu(root, cache).cached  # nothing changed: served from the cache
    (root / "table.bin").write_bytes(b"\x01\x02\x03\x04\x05")  # not a "source" suffix
    second = build_cpu(root, cache)
    assert not second.cached and included_len(second) == 504
    (root / "src" / "note.txt").write_text("seven!!")
    third = build_cpu(root, cache)
    assert not third.cached and included_len(third) == 507


def test_rustflags_environment_rebuilds(example_copy, cache, monkeypatch):
    root = with_marker(example_copy)
    first = build_cpu(root, cache)
    monkeypatch.setenv("RUSTFLAGS", "--cfg wb_marker")
    second = build_cpu(root, cache)
    assert not second.cached and second.key != first.key
    assert b"wb_marker_fn" in library(second)
    monkeypatch.delenv("RUSTFLAGS")
    assert build_cpu(root, cache).key == first.key  # back to the first build, from the cache


def test_a_copy_in_another_folder_is_a_cache_hit(example_copy, cache, tmp_path):
    root = example_copy("saxpy", unique=True)
    (root / "table.bin").write_bytes(b"\x07")
    lib = root / "src" / "lib.rs"
    lib.write_text(lib.read_text() + 'pub static TABLE: &[u8] = include_bytes!("../table.bin");\n')
    first = build_cpu(root, cache)
    copy = tmp_path / "elsewhere" / "deeper" / "saxpy"
    shutil.copytree(root, copy)
    second = build_cpu(copy, cache)
    assert second.cached and second.key == first.key and second.artifact_dir == first.artifact_dir
    # The copy's inputs are its own files: an edit there misses, and leaves the original's hit.
    (copy / "table.bin").write_bytes(b"\x08")
    assert not build_cpu(copy, cache).cached
    assert build_cpu(root, cache).cached


def test_dep_info_parser_handles_escapes_continuations_and_comments():
    text = (
        "/t/libk.so: /p/src/lib.rs /p/my\\ file.bin \\\n  /p/inc.h\n"
        "/p/src/lib.rs:\n"
        "# env-dep:WB_TUNABLE_BLOCK=256\n"
        "# checksum:blake3=abc file_len:3 /p/src/lib.rs\n"
    )
    assert parse(text) == ["/p/src/lib.rs", "/p/my file.bin", "/p/inc.h"]


def test_an_edited_path_dependency_outside_the_project_rebuilds(example_copy, cache, tmp_path):
    root = example_copy("saxpy", unique=True)
    helper = tmp_path / "helper"
    (helper / "src").mkdir(parents=True)
    (helper / "Cargo.toml").write_text('[package]\nname = "helper"\nversion = "0.1.0"\nedition = "2021"\n')
    (helper / "src" / "lib.rs").write_text("pub fn value() -> u32 { 7 }\n")
    cargo = root / "Cargo.toml"
    cargo.write_text(
        cargo.read_text().replace("[dependencies]", '[dependencies]\nhelper = { path = "../helper" }')
    )
    lib = root / "src" / "lib.rs"
    lib.write_text(
        lib.read_text() + '#[unsafe(no_mangle)]\npub extern "C" fn wb_helper() -> u32 { helper::value() }\n'
    )
    build_cpu(root, cache)  # cargo adds helper to Cargo.lock (a source): the next build keys on it
    first = build_cpu(root, cache)
    assert ctypes.CDLL(first.artifacts[0]).wb_helper() == 7
    assert "../helper/src/lib.rs" in read_build(first.artifact_dir)["key_inputs"]["files"]
    assert build_cpu(root, cache).cached
    (helper / "src" / "lib.rs").write_text("pub fn value() -> u32 { 8 }\n")
    second = build_cpu(root, cache)
    assert not second.cached and ctypes.CDLL(second.artifacts[0]).wb_helper() == 8
