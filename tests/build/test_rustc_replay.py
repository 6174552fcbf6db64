"""The cpu build replays cargo's rustc call of the kernel crate after an edit of its own sources
(`workbench.build.rustc_replay`), and builds with cargo again after anything else changed: real
cargo and rustc builds of a copy of saxpy, the library read back for marker strings the sources
put in it (a `#[no_mangle]` static stays in the cdylib)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from workbench.build import build_project
from workbench.build.toolchains import detect
from workbench.project import Project

pytestmark = pytest.mark.slow

MARKS = """
#[no_mangle]
pub static WB_EDIT_MARK: &str = "wb-edit-mark-1-end";
#[no_mangle]
pub static WB_VERSION_MARK: &str = concat!("wb-version-mark-", env!("CARGO_PKG_VERSION"), "-end");
#[no_mangle]
pub static WB_DEP_MARK: &str = gpu_kernel::WB_DEP_MARK;
"""

#: The kernel crate's marks of a file its dependency includes too.
SHARED_MARKS = """
#[no_mangle]
pub static WB_OWN_SHARED: &str = concat!("wb-own-mark-", include_str!("../wb_shared.txt"), "-end");
#[no_mangle]
pub static WB_DEP_SHARED: &str = gpu_kernel::WB_SHARED;
"""
#: The kernel API crate's mark of a feature of its own.
FEATURE_MARKS = """
#[cfg(feature = "wbmark")]
pub const WB_FEAT: &str = "wb-feat-mark-1-end";
#[cfg(not(feature = "wbmark"))]
pub const WB_FEAT: &str = "wb-feat-mark-0-end";
"""
#: The kernel crate's mark of what a build script sets (its default without one).
SCRIPT_MARK = """
#[no_mangle]
pub static WB_SCRIPT_MARK: &str = match option_env!("WB_SCRIPTED") {
    Some(text) => text,
    None => "wb-script-mark-0-end",
};
"""

#: The kernel API crate's mark of the `vector` tunable it reads itself.
DEP_TUNED = """
pub const WB_DEP_TUNED: &str = match option_env!("WB_TUNABLE_VECTOR") {
    Some(v) if v.len() == 1 && v.as_bytes()[0] == b'4' => "wb-deptune-mark-4-end",
    _ => "wb-deptune-mark-1-end",
};
"""

#: The kernel crate's mark of a `--cfg` its user's rustc wrapper adds.
WRAPPED_MARK = """
#[cfg(wb_wrapped)]
#[no_mangle]
pub static WB_WRAPPED: &str = "wb-wrap-mark-1-end";
"""


@pytest.fixture
def project(example_copy, monkeypatch) -> Path:
    if not detect("cpu").found:
        pytest.skip("no cargo and rustc installed")
    if not Path("/usr/bin/env").exists():
        pytest.skip("no POSIX env here")
    monkeypatch.setenv("WB_RUSTC_REPLAY", "on")  # opt-in
    monkeypatch.delenv("RUSTC_WORKSPACE_WRAPPER", raising=False)
    monkeypatch.delenv("RUSTC_WRAPPER", raising=False)
    root = example_copy("saxpy", unique=True)
    crate = root / "gpu_kernel"
    assert not crate.is_symlink()  # the copy's own kernel API crate: a dependency the test edits
    with (crate / "src" / "lib.rs").open("a") as f:
        f.write('\npub const WB_DEP_MARK: &str = "wb-dep-mark-1-end";\n')
    with (root / "src" / "lib.rs").open("a") as f:
        f.write(MARKS)
    settle(crate / "src" / "lib.rs")
    return root


def settle(path: Path) -> None:
    """Date a dependency's or a manifest's edit 5 s back, as a user's edit made before the build.
    One written just before cargo starts is not trusted (it may have been written while cargo read
    it): the build after it is cargo's but its call is not kept; only the next would capture it.
    Its change time (ctime, which the replay reads too) cannot be dated back: a short wait puts it
    before the build, as a user's edit would be."""
    when = time.time() - 5
    os.utime(path, (when, when))
    time.sleep(0.05)


def build(root: Path, cache: Path, **kw):
    [result] = build_project(Project.open(root), ["cpu"], cache_dir=cache, **kw)
    commands = [line for line in result.log.splitlines() if line.startswith("$ ")]
    assert len(commands) == 1, result.log
    how = "cargo" if "--message-format=json" in commands[0] else "replay"
    assert how == "cargo" or " --crate-name saxpy " in commands[0]
    return result, how


def edit_until_replayed(project: Path, cache: Path, lib: Path) -> None:
    """Two edits of the kernel line, each built: the first may be cargo's (a Cargo.lock it wrote
    in the first build keeps no call), the second is a replay."""
    for n in (1, 2):
        edit(lib, f"wb-edit-mark-{n}-end", f"wb-edit-mark-{n + 1}-end")
        result, how = build(project, cache)
    assert how == "replay", result.log


def marks(result) -> set[str]:
    data = Path(result.artifacts[0]).read_bytes()
    return {m.decode() for m in re.findall(rb"wb-[a-z]+-mark-[0-9.]+-end", data)}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_an_edit_of_the_crate_replays_rustc_and_a_manifest_change_builds_with_cargo(project, tmp_path):
    cache, lib = tmp_path / "cache", project / "src" / "lib.rs"
    first, how = build(project, cache)
    assert first.status == "ok" and how == "cargo", first.log
    assert marks(first) == {"wb-edit-mark-1-end", "wb-version-mark-0.1.0-end", "wb-dep-mark-1-end"}

    edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
    second, how = build(project, cache)
    assert second.status == "ok" and how == "replay", second.log
    assert marks(second) == {"wb-edit-mark-2-end", "wb-version-mark-0.1.0-end", "wb-dep-mark-1-end"}

    # A compile error on the replay: reported at its line, as cargo's would be.
    edit(lib, "y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + wb_no_such_name;")
    broken, how = build(project, cache)
    assert broken.status == "error" and how == "replay"
    line = next(i for i, text in enumerate(lib.read_text().splitlines(), 1) if "wb_no_such_name" in text)
    assert any(d["file"] == "src/lib.rs" and d["line"] == line and "wb_no_such_name" in d["message"]
               for d in broken.diagnostics), broken.diagnostics  # fmt: skip
    edit(lib, "wb_no_such_name", "y[i]")

    # The manifest: cargo's rustc call changes (CARGO_PKG_VERSION), so no replay of the old one.
    edit(project / "Cargo.toml", 'version = "0.1.0"', 'version = "0.2.0"')
    settle(project / "Cargo.toml")
    bumped, how = build(project, cache)
    assert bumped.status == "ok" and how == "cargo", bumped.log
    assert marks(bumped) == {"wb-edit-mark-2-end", "wb-version-mark-0.2.0-end", "wb-dep-mark-1-end"}

    # That build rewrote Cargo.lock (the package's version is in it): its call was not kept.
    edit(lib, "wb-edit-mark-2-end", "wb-edit-mark-3-end")
    assert build(project, cache)[1] == "cargo"
    edit(lib, "wb-edit-mark-3-end", "wb-edit-mark-4-end")
    third, how = build(project, cache)
    assert third.status == "ok" and how == "replay", third.log
    assert marks(third) == {"wb-edit-mark-4-end", "wb-version-mark-0.2.0-end", "wb-dep-mark-1-end"}


def test_a_dependency_edit_builds_with_cargo_and_its_new_code_is_linked(project, tmp_path):
    cache, lib = tmp_path / "cache", project / "src" / "lib.rs"
    assert build(project, cache)[1] == "cargo"
    edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
    assert build(project, cache)[1] == "replay"

    # The kernel API crate changed, the kernel crate not: a replay would link its old library.
    edit(project / "gpu_kernel" / "src" / "lib.rs", "wb-dep-mark-1-end", "wb-dep-mark-2-end")
    settle(project / "gpu_kernel" / "src" / "lib.rs")
    after, how = build(project, cache)
    assert after.status == "ok" and how == "cargo", after.log
    assert marks(after) == {"wb-edit-mark-2-end", "wb-version-mark-0.1.0-end", "wb-dep-mark-2-end"}

    edit(lib, "wb-edit-mark-2-end", "wb-edit-mark-3-end")
    again, how = build(project, cache)
    assert again.status == "ok" and how == "replay", again.log
    assert marks(again) == {"wb-edit-mark-3-end", "wb-version-mark-0.1.0-end", "wb-dep-mark-2-end"}


def test_a_replay_that_fails_for_no_line_of_code_gives_way_to_cargo(project, tmp_path):
    """A replayed call that fails with no error at a line of code (here its library cannot be
    written: a folder stands where the link puts it) is not the user's build: cargo builds instead,
    its result and messages are the build's, and the next edit is replayed again."""
    cache, lib = tmp_path / "cache", project / "src" / "lib.rs"
    assert build(project, cache)[1] == "cargo"
    edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
    assert build(project, cache)[1] == "replay"
    [written] = cache.rglob("wb-replay/*/out/libsaxpy*.so")
    written.unlink()
    written.mkdir()  # the replay's link cannot write its library
    (written / "keep").write_text("")

    edit(lib, "wb-edit-mark-2-end", "wb-edit-mark-3-end")
    after, how = build(project, cache)
    assert after.status == "ok" and how == "cargo", after.log
    assert not after.diagnostics or all(d["severity"] != "error" for d in after.diagnostics), (
        after.diagnostics
    )
    assert marks(after) == {"wb-edit-mark-3-end", "wb-version-mark-0.1.0-end", "wb-dep-mark-1-end"}

    edit(lib, "wb-edit-mark-3-end", "wb-edit-mark-4-end")
    again, how = build(project, cache)
    assert again.status == "ok" and how == "replay", again.log
    assert marks(again) == {"wb-edit-mark-4-end", "wb-version-mark-0.1.0-end", "wb-dep-mark-1-end"}


def test_a_lock_file_cargo_writes_in_its_build_keeps_no_call_and_a_dependency_edit_is_built(
    project, tmp_path
):
    """A path dependency added: cargo's build writes Cargo.lock, so the configuration it started
    from is gone and no call is kept (once, one was kept with an empty stamp, which then matched
    any configuration: a dependency edited later was replayed against its old library)."""
    helper = tmp_path / "helper"
    (helper / "src").mkdir(parents=True)
    (helper / "Cargo.toml").write_text('[package]\nname = "helper"\nversion = "0.1.0"\nedition = "2021"\n')
    (helper / "src" / "lib.rs").write_text('pub const MARK: &str = "wb-helper-mark-7-end";\n')
    edit(project / "Cargo.toml", "[dependencies]", '[dependencies]\nhelper = { path = "../helper" }')
    lib = project / "src" / "lib.rs"
    lib.write_text(lib.read_text() + "#[no_mangle]\npub static WB_HELPER: &str = helper::MARK;\n")
    for path in (helper / "Cargo.toml", helper / "src" / "lib.rs", project / "Cargo.toml"):
        settle(path)
    cache = tmp_path / "cache"
    first, how = build(project, cache)
    assert first.status == "ok" and how == "cargo" and "wb-helper-mark-7-end" in marks(first), first.log
    edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
    assert build(project, cache)[1] == "cargo"  # Cargo.lock was written in the first: no call kept
    edit(lib, "wb-edit-mark-2-end", "wb-edit-mark-3-end")
    assert build(project, cache)[1] == "replay"

    edit(helper / "src" / "lib.rs", "mark-7", "mark-8")
    settle(helper / "src" / "lib.rs")
    after, how = build(project, cache)
    assert after.status == "ok" and how == "cargo", after.log
    assert {"wb-helper-mark-8-end", "wb-edit-mark-3-end"} <= marks(after)


def test_tunables_reach_a_replay_and_replays_are_off_unless_turned_on(project, tmp_path, monkeypatch):
    cache, lib = tmp_path / "cache", project / "src" / "lib.rs"
    edit(lib, '"wb-edit-mark-1-end"', 'if VECTOR == 4 { "wb-edit-mark-4-end" } else { "wb-edit-mark-1-end" }')
    assert build(project, cache)[1] == "cargo"
    lib.write_text(lib.read_text() + "\n// an edit\n")
    four, how = build(project, cache, tunables={"vector": 4})
    assert four.status == "ok" and how == "replay", four.log
    assert "wb-edit-mark-4-end" in marks(four)

    for value in ("off", None):  # turned off, and off by default
        if value is None:
            monkeypatch.delenv("WB_RUSTC_REPLAY")
        else:
            monkeypatch.setenv("WB_RUSTC_REPLAY", value)
        lib.write_text(lib.read_text() + "\n// another edit\n")
        off, how = build(project, cache)
        assert off.status == "ok" and how == "cargo", off.log
        assert "wb-edit-mark-1-end" in marks(off)


def test_a_dependency_with_a_build_script_is_never_replayed(project, tmp_path):
    # Its script's output may depend on anything (a file it names, a probe of the system): cargo
    # decides each time whether to run it again.
    dep = project / "scripted"
    (dep / "src").mkdir(parents=True)
    (dep / "Cargo.toml").write_text('[package]\nname = "scripted"\nversion = "0.1.0"\nedition = "2021"\n')
    (dep / "build.rs").write_text(
        'fn main() { println!("cargo:rustc-env=WB_SCRIPTED=wb-script-mark-1-end"); }\n'
    )
    (dep / "src" / "lib.rs").write_text('pub const MARK: &str = env!("WB_SCRIPTED");\n')
    edit(project / "Cargo.toml", "[dependencies]\n", '[dependencies]\nscripted = { path = "scripted" }\n')
    lib = project / "src" / "lib.rs"
    lib.write_text(lib.read_text() + "\n#[no_mangle]\npub static WB_SCRIPT_MARK: &str = scripted::MARK;\n")
    cache = tmp_path / "cache"
    for n in (1, 2, 3):
        lib.write_text(lib.read_text() + f"\n// edit {n}\n")
        result, how = build(project, cache)
        assert result.status == "ok" and how == "cargo", result.log
        assert "wb-script-mark-1-end" in marks(result)


def test_a_file_a_dependency_includes_too_builds_with_cargo_when_edited(project, tmp_path):
    # The kernel crate and its kernel API crate both `include_str!` one file: rustc reads it
    # again on a replay, but the dependency's library holds the text it had when cargo built it.
    shared = project / "wb_shared.txt"
    shared.write_text("1")
    settle(shared)
    dep = project / "gpu_kernel" / "src" / "lib.rs"
    dep.write_text(dep.read_text() + '\npub const WB_SHARED: &str = concat!("wb-depshared-mark-", '
                   'include_str!("../../wb_shared.txt"), "-end");\n')  # fmt: skip
    settle(dep)
    lib = project / "src" / "lib.rs"
    lib.write_text(lib.read_text() + SHARED_MARKS)
    cache = tmp_path / "cache"
    assert build(project, cache)[1] == "cargo"
    edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
    replayed, how = build(project, cache)
    assert replayed.status == "ok" and how == "replay", replayed.log
    assert {"wb-own-mark-1-end", "wb-depshared-mark-1-end"} <= marks(replayed)

    shared.write_text("2")
    settle(shared)
    after, how = build(project, cache)
    assert after.status == "ok", after.log
    assert {"wb-own-mark-2-end", "wb-depshared-mark-2-end"} <= marks(after), how
    assert how == "cargo"


def test_a_rustup_default_changed_builds_with_cargo_and_the_new_compiler(project, tmp_path, monkeypatch):
    # The build's rustc is rustup's proxy (no distribution rustc): `rustup default` picks the
    # compiler behind it, in $RUSTUP_HOME/settings.toml; the proxy's own file stays the same.
    real = Path(os.environ.get("RUSTUP_HOME") or Path.home() / ".rustup")
    proxies = Path.home() / ".cargo" / "bin"
    chains = {c: next(real.glob(f"toolchains/{c}-*"), None) for c in ("stable", "nightly")}
    if not all(chains.values()) or not (proxies / "rustc").exists():
        pytest.skip("needs rustup's stable and nightly toolchains")
    home = tmp_path / "rustup"  # a rustup home of the test's own: the user's default is left alone
    (home / "toolchains").mkdir(parents=True)
    for path in chains.values():
        (home / "toolchains" / path.name).symlink_to(path)
    settings = home / "settings.toml"
    settings.write_text(
        f'version = "12"\ndefault_toolchain = "{chains["stable"].name}"\nprofile = "default"\n'
    )
    monkeypatch.setenv("RUSTUP_HOME", str(home))
    monkeypatch.delenv("RUSTUP_TOOLCHAIN", raising=False)
    monkeypatch.setenv("WB_CARGO", str(proxies / "cargo"))
    monkeypatch.setenv("WB_RUSTC", str(proxies / "rustc"))
    detect("cpu", refresh=True)
    try:
        cache, lib = tmp_path / "cache", project / "src" / "lib.rs"
        first, how = build(project, cache)
        assert first.status == "ok" and how == "cargo", first.log
        edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
        assert build(project, cache)[1] == "replay"

        settings.write_text(settings.read_text().replace(chains["stable"].name, chains["nightly"].name))
        edit(lib, "wb-edit-mark-2-end", "wb-edit-mark-3-end")
        after, how = build(project, cache)
        assert after.status == "ok", after.log
        assert b"-nightly" in re.findall(rb"rustc version [^\0]*", Path(after.artifacts[0]).read_bytes())[0]
        assert how == "cargo" and "wb-edit-mark-3-end" in marks(after)

        # Back to stable with no edit: the build cache's key holds the toolchain's version, which
        # this process detects again (`toolchains.detect`), so nightly's library is not served.
        settings.write_text(settings.read_text().replace(chains["nightly"].name, chains["stable"].name))
        back, how = build(project, cache)
        assert back.status == "ok" and how == "cargo" and "wb-edit-mark-3-end" in marks(back), back.log
        assert (
            b"-nightly" not in re.findall(rb"rustc version [^\0]*", Path(back.artifacts[0]).read_bytes())[0]
        )

        # Then stable updated in place (here: its folder now nightly's): the replay's rustc would
        # read libraries of another compiler ("incompatible version").
        edit(lib, "wb-edit-mark-3-end", "wb-edit-mark-4-end")
        assert build(project, cache)[1] == "replay"
        edit(lib, "wb-edit-mark-4-end", "wb-edit-mark-5-end")
        assert build(project, cache)[1] == "replay"
        (home / "toolchains" / chains["stable"].name).unlink()
        (home / "toolchains" / chains["stable"].name).symlink_to(chains["nightly"])
        edit(lib, "wb-edit-mark-5-end", "wb-edit-mark-6-end")
        updated, how = build(project, cache)
        assert updated.status == "ok", updated.log
        assert how == "cargo" and "wb-edit-mark-6-end" in marks(updated), updated.log
    finally:
        monkeypatch.undo()
        detect("cpu", refresh=True)


def test_a_dependency_manifest_change_builds_with_cargo(project, tmp_path):
    # The kernel API crate's own Cargo.toml (below the crate's folder, not above it): a default
    # feature dropped changes its library, the kernel crate's call not.
    manifest, dep = project / "gpu_kernel" / "Cargo.toml", project / "gpu_kernel" / "src" / "lib.rs"
    edit(manifest, "[features]\n", '[features]\ndefault = ["wbmark"]\nwbmark = []\n')
    dep.write_text(dep.read_text() + FEATURE_MARKS)
    settle(manifest)
    settle(dep)
    lib = project / "src" / "lib.rs"
    lib.write_text(lib.read_text() + "\n#[no_mangle]\npub static WB_FEAT_MARK: &str = gpu_kernel::WB_FEAT;\n")
    cache = tmp_path / "cache"
    assert build(project, cache)[1] == "cargo"
    edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
    replayed, how = build(project, cache)
    assert how == "replay" and "wb-feat-mark-1-end" in marks(replayed), replayed.log

    edit(manifest, 'default = ["wbmark"]\n', "")
    settle(manifest)
    edit(lib, "wb-edit-mark-2-end", "wb-edit-mark-3-end")
    after, how = build(project, cache)
    assert after.status == "ok", after.log
    assert {"wb-edit-mark-3-end", "wb-feat-mark-0-end"} <= marks(after), how
    assert how == "cargo"


def test_a_build_script_added_without_a_manifest_change_builds_with_cargo(project, tmp_path):
    # cargo finds `build.rs` beside Cargo.toml by itself: the manifest stays the same.
    lib = project / "src" / "lib.rs"
    lib.write_text(lib.read_text() + SCRIPT_MARK)
    cache = tmp_path / "cache"
    assert build(project, cache)[1] == "cargo"
    edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
    assert build(project, cache)[1] == "replay"

    (project / "build.rs").write_text(
        'fn main() { println!("cargo:rustc-env=WB_SCRIPTED=wb-script-mark-1-end"); }\n'
    )
    edit(lib, "wb-edit-mark-2-end", "wb-edit-mark-3-end")
    after, how = build(project, cache)
    assert after.status == "ok", after.log
    assert {"wb-edit-mark-3-end", "wb-script-mark-1-end"} <= marks(after), how
    assert how == "cargo"


def test_another_project_built_in_the_same_target_dir_leaves_the_replay_alone(
    project, example_copy, tmp_path
):
    # The target dir is shared: another kernel crate's dep-info names its own `src/lib.rs` too.
    cache, lib = tmp_path / "cache", project / "src" / "lib.rs"
    other = example_copy("matmul", unique=True)
    [built] = build_project(Project.open(other), ["cpu"], cache_dir=cache)
    assert built.status == "ok", built.log
    assert build(project, cache)[1] == "cargo"
    edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
    replayed, how = build(project, cache)
    assert replayed.status == "ok" and "wb-edit-mark-2-end" in marks(replayed)
    assert how == "replay"


def test_a_new_module_and_a_file_it_includes_are_read_by_the_replay_and_keyed_by_the_cache(project, tmp_path):
    # rustc reads the crate's sources itself: a module added after the capture, and a file outside
    # src/ it includes, come from its own dep-info, which the build cache keys on.
    cache, lib = tmp_path / "cache", project / "src" / "lib.rs"
    assert build(project, cache)[1] == "cargo"
    data = project / "wb_data.txt"
    data.write_text("1")
    extra = 'pub static WB_EXTRA: &str = concat!("wb-extra-mark-", include_str!("../wb_data.txt"), "-end");\n'
    (project / "src" / "wb_extra.rs").write_text("#[no_mangle]\n" + extra)
    lib.write_text(lib.read_text() + "\nmod wb_extra;\n")
    first, how = build(project, cache)
    assert first.status == "ok" and how == "replay", first.log
    assert "wb-extra-mark-1-end" in marks(first)

    data.write_text("2")  # neither a Rust source nor a cargo input: only rustc's dep-info names it
    second, how = build(project, cache)
    assert second.status == "ok" and not second.cached and how == "replay", second.log
    assert "wb-extra-mark-2-end" in marks(second)


def test_a_tunable_a_dependency_reads_builds_with_cargo_when_changed(project, tmp_path):
    # Tunables are left out of the stamp (the crate's rustc reads them on a replay), but a
    # dependency that reads one holds the value cargo built it with.
    dep = project / "gpu_kernel" / "src" / "lib.rs"
    dep.write_text(dep.read_text() + DEP_TUNED)
    settle(dep)
    lib = project / "src" / "lib.rs"
    lib.write_text(
        lib.read_text() + "\n#[no_mangle]\npub static WB_DEP_TUNED: &str = gpu_kernel::WB_DEP_TUNED;\n"
    )
    cache = tmp_path / "cache"
    first, how = build(project, cache)
    assert how == "cargo" and "wb-deptune-mark-1-end" in marks(first), first.log
    edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
    assert build(project, cache)[1] == "replay"

    four, how = build(project, cache, tunables={"vector": 4})
    assert four.status == "ok", four.log
    assert "wb-deptune-mark-4-end" in marks(four), how
    assert how == "cargo"
    edit(lib, "wb-edit-mark-2-end", "wb-edit-mark-3-end")
    again, how = build(project, cache, tunables={"vector": 4})
    assert how == "replay" and {"wb-edit-mark-3-end", "wb-deptune-mark-4-end"} <= marks(again)


def test_a_rustc_wrapper_of_the_users_cargo_config_runs_and_nothing_is_replayed(project, tmp_path):
    # `build.rustc-workspace-wrapper` in a cargo config: the capture's own RUSTC_WORKSPACE_WRAPPER
    # would take its place (cargo's environment variable before its configuration).
    wrapper = tmp_path / "wrap-rustc.sh"
    wrapper.write_text(
        '#!/bin/sh\n[ "$CARGO_PRIMARY_PACKAGE" = 1 ] && exec "$@" --cfg wb_wrapped\nexec "$@"\n'
    )
    wrapper.chmod(0o755)
    (project / ".cargo").mkdir()
    (project / ".cargo" / "config.toml").write_text(f'[build]\nrustc-workspace-wrapper = "{wrapper}"\n')
    lib = project / "src" / "lib.rs"
    lib.write_text(lib.read_text() + WRAPPED_MARK)
    cache = tmp_path / "cache"
    for n in (1, 2):
        edit(lib, f"wb-edit-mark-{n}-end", f"wb-edit-mark-{n + 1}-end")
        result, how = build(project, cache)
        assert result.status == "ok", result.log
        assert "wb-wrap-mark-1-end" in marks(result), how
        assert how == "cargo"


def test_a_tunable_a_cargo_config_sets_is_the_configs_and_nothing_is_replayed(project, tmp_path):
    # `[env]` of a cargo config with `force`: cargo gives rustc the config's value whatever the
    # build's tunable. A capture given that same value saw no difference from the build's own, and
    # once replayed a build of another value with it (no error, another library than cargo's).
    (project / ".cargo").mkdir()
    (project / ".cargo" / "config.toml").write_text(
        '[env]\nWB_TUNABLE_VECTOR = { value = "4", force = true }\n'
    )
    settle(project / ".cargo" / "config.toml")
    cache, lib = tmp_path / "cache", project / "src" / "lib.rs"
    edit(lib, '"wb-edit-mark-1-end"', 'if VECTOR == 4 { "wb-vec-mark-4-end" } else { "wb-vec-mark-1-end" }')
    first, how = build(project, cache, tunables={"vector": 4})
    assert how == "cargo" and "wb-vec-mark-4-end" in marks(first), first.log
    for n in (1, 2):
        lib.write_text(lib.read_text() + f"\n// edit {n}\n")
        result, how = build(project, cache, tunables={"vector": 1})
        assert result.status == "ok", result.log
        assert "wb-vec-mark-4-end" in marks(result), how
        assert how == "cargo"


#: A proc-macro crate's mark of the `vector` tunable it reads when it is built.
MACRO_TUNED = """use proc_macro::TokenStream;

#[proc_macro]
pub fn wb_vector_mark(_: TokenStream) -> TokenStream {
    let v = match option_env!("WB_TUNABLE_VECTOR") {
        Some("4") => "4",
        _ => "1",
    };
    format!("\\"wb-macrotune-mark-{v}-end\\"").parse().unwrap()
}
"""


def test_a_tunable_a_proc_macro_dependency_reads_builds_with_cargo_when_changed(project, tmp_path):
    # A proc-macro is a shared library beside the rlibs: its dep-info names the tunable it read
    # when cargo built it, and the macro's expansion holds that value.
    dep = project / "wbmacro"
    (dep / "src").mkdir(parents=True)
    (dep / "Cargo.toml").write_text(
        '[package]\nname = "wbmacro"\nversion = "0.1.0"\nedition = "2021"\n\n[lib]\nproc-macro = true\n'
    )
    (dep / "src" / "lib.rs").write_text(MACRO_TUNED)
    edit(project / "Cargo.toml", "[dependencies]\n", '[dependencies]\nwbmacro = { path = "wbmacro" }\n')
    lib = project / "src" / "lib.rs"
    lib.write_text(
        lib.read_text() + "\n#[no_mangle]\npub static WB_MACRO: &str = wbmacro::wb_vector_mark!();\n"
    )
    for path in (dep / "Cargo.toml", dep / "src" / "lib.rs", project / "Cargo.toml"):
        settle(path)
    cache = tmp_path / "cache"
    first, how = build(project, cache)
    assert how == "cargo" and "wb-macrotune-mark-1-end" in marks(first), first.log
    edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
    assert build(project, cache)[1] == "cargo"  # the first build wrote Cargo.lock: no call kept
    edit(lib, "wb-edit-mark-2-end", "wb-edit-mark-3-end")
    assert build(project, cache)[1] == "replay"

    four, how = build(project, cache, tunables={"vector": 4})
    assert four.status == "ok", four.log
    assert {"wb-edit-mark-3-end", "wb-macrotune-mark-4-end"} <= marks(four), how
    assert how == "cargo"


def test_a_workspace_root_outside_the_crates_folders_builds_with_cargo_when_changed(project, tmp_path):
    # `package.workspace` names a workspace root that is not above the crate: its manifest's
    # profile applies to the crate's call (here debug assertions on in release).
    root = tmp_path / "ws"
    root.mkdir()
    (root / "Cargo.toml").write_text(
        f'[workspace]\nmembers = ["{project}"]\nresolver = "2"\n\n[profile.release]\npanic = "abort"\n'
    )
    edit(project / "Cargo.toml", 'edition = "2021"\n', f'edition = "2021"\nworkspace = "{root}"\n')
    text = (project / "Cargo.toml").read_text()
    (project / "Cargo.toml").write_text(text[: text.index("[profile.release]")])
    (project / "Cargo.lock").rename(root / "Cargo.lock")
    for path in (root / "Cargo.toml", root / "Cargo.lock", project / "Cargo.toml"):
        settle(path)
    lib = project / "src" / "lib.rs"
    lib.write_text(
        lib.read_text() + "\n#[no_mangle]\npub static WB_ASSERTS: &str = if cfg!(debug_assertions) "
        '{ "wb-asserts-mark-1-end" } else { "wb-asserts-mark-0-end" };\n'
    )
    cache = tmp_path / "cache"
    first, how = build(project, cache)
    assert first.status == "ok" and "wb-asserts-mark-0-end" in marks(first), first.log
    edit_until_replayed(project, cache, lib)

    edit(root / "Cargo.toml", 'panic = "abort"\n', 'panic = "abort"\ndebug-assertions = true\n')
    settle(root / "Cargo.toml")
    edit(lib, "wb-edit-mark-3-end", "wb-edit-mark-4-end")
    after, how = build(project, cache)
    assert after.status == "ok", after.log
    assert {"wb-edit-mark-4-end", "wb-asserts-mark-1-end"} <= marks(after), how
    assert how == "cargo"


def test_a_manifest_change_of_a_dependency_whose_sources_lie_outside_its_folder_builds_with_cargo(
    project, tmp_path
):
    # `[lib] path` of the dependency's Cargo.toml names a file outside the dependency's folder (by
    # its absolute path: rustc's dep-info names no path below the package's folder).
    helper, sources = tmp_path / "helper", tmp_path / "helper_src"
    helper.mkdir()
    sources.mkdir()
    (helper / "Cargo.toml").write_text(
        '[package]\nname = "helper"\nversion = "0.1.0"\nedition = "2021"\n\n'
        f'[lib]\npath = "{sources / "lib.rs"}"\n'
        '\n[features]\ndefault = ["wbmark"]\nwbmark = []\n'
    )
    (sources / "lib.rs").write_text(FEATURE_MARKS)
    edit(project / "Cargo.toml", "[dependencies]\n", '[dependencies]\nhelper = { path = "../helper" }\n')
    lib = project / "src" / "lib.rs"
    lib.write_text(lib.read_text() + "\n#[no_mangle]\npub static WB_FEAT_MARK: &str = helper::WB_FEAT;\n")
    for path in (helper / "Cargo.toml", sources / "lib.rs", project / "Cargo.toml"):
        settle(path)
    cache = tmp_path / "cache"
    first, how = build(project, cache)
    assert how == "cargo" and "wb-feat-mark-1-end" in marks(first), first.log
    edit_until_replayed(project, cache, lib)

    edit(helper / "Cargo.toml", 'default = ["wbmark"]\n', "")
    settle(helper / "Cargo.toml")
    edit(lib, "wb-edit-mark-3-end", "wb-edit-mark-4-end")
    after, how = build(project, cache)
    assert after.status == "ok", after.log
    assert {"wb-edit-mark-4-end", "wb-feat-mark-0-end"} <= marks(after), how
    assert how == "cargo"


def test_a_dependency_written_while_cargo_ran_with_an_old_mtime_is_not_trusted(
    project, tmp_path, monkeypatch
):
    # A copy that keeps its modification time (`cp -p`, `rsync -t`, an archive) written over a
    # dependency's source after rustc read it: its library holds the text before. Here the build's
    # rustc does it itself, right after compiling gpu_kernel, once.
    real = detect("cpu").path
    dep, trigger = project / "gpu_kernel" / "src" / "lib.rs", tmp_path / "rewrite-once"
    rustc = tmp_path / "rustc"
    rustc.write_text(
        f'#!/bin/sh\n"{real}" "$@" || exit $?\n'
        f'case " $* " in *" --crate-name gpu_kernel "*)\n'
        f'  if [ -e "{trigger}" ]; then rm "{trigger}"\n'
        f'    sed -i s/wb-dep-mark-1-end/wb-dep-mark-2-end/ "{dep}"\n'
        f'    touch -m -d @{int(time.time()) - 3600} "{dep}"\n'
        f"  fi;;\nesac\n"
    )
    rustc.chmod(0o755)
    monkeypatch.setenv("WB_RUSTC", str(rustc))
    detect("cpu", refresh=True)
    try:
        trigger.touch()
        cache, lib = tmp_path / "cache", project / "src" / "lib.rs"
        first, how = build(project, cache)
        assert how == "cargo" and "wb-dep-mark-1-end" in marks(first), first.log
        assert not trigger.exists() and "wb-dep-mark-2-end" in dep.read_text()
        edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
        after, how = build(project, cache)
        assert after.status == "ok", after.log
        assert {"wb-edit-mark-2-end", "wb-dep-mark-2-end"} <= marks(after), how
        assert how == "cargo"
    finally:
        monkeypatch.undo()
        detect("cpu", refresh=True)


def test_a_file_a_cargo_config_includes_builds_with_cargo_when_changed(project, tmp_path):
    # `include` of a cargo config (cargo's unstable config-include; the build's RUSTC_BOOTSTRAP
    # lets cargo read it): the included file's `[env]` reaches the crate's rustc call. Such a
    # config turns replays off (the included files are not in the stamp).
    (project / ".cargo").mkdir()
    included = tmp_path / "wb-included.toml"
    included.write_text('[env]\nWB_INC_MARK = "wb-inc-mark-1-end"\n')
    (project / ".cargo" / "config.toml").write_text(
        f'include = ["{included}"]\n\n[unstable]\nconfig-include = true\n'
    )
    for path in (included, project / ".cargo" / "config.toml"):
        settle(path)
    lib = project / "src" / "lib.rs"
    lib.write_text(lib.read_text() + '\n#[no_mangle]\npub static WB_INC: &str = env!("WB_INC_MARK");\n')
    cache = tmp_path / "cache"
    first, how = build(project, cache)
    assert first.status == "ok" and "wb-inc-mark-1-end" in marks(first), first.log
    edit(lib, "wb-edit-mark-1-end", "wb-edit-mark-2-end")
    build(project, cache)  # a replay once (the included file was in no stamp)

    edit(included, "mark-1", "mark-2")
    settle(included)
    edit(lib, "wb-edit-mark-2-end", "wb-edit-mark-3-end")
    after, how = build(project, cache)
    assert after.status == "ok", after.log
    assert {"wb-edit-mark-3-end", "wb-inc-mark-2-end"} <= marks(after), how
    assert how == "cargo"
