"""The cpu build's edit loop without cargo: cargo's rustc call of the kernel crate, captured once and
run again while nothing but the crate's own sources changed.

After a kernel edit cargo only decides that the crate is dirty and runs the same rustc command as
last time; deciding costs it about 0.04 s of a 0.25 s build (docs/cpu-sim.md, "Edit loop"). So
each cargo build of the cpu adapter runs with a `RUSTC_WORKSPACE_WRAPPER` (`WRAPPER`, a POSIX sh
script in the target dir) that writes the crate's rustc call down: its folder, arguments and
environment. The next build runs that call itself (the crate's `--out-dir` a folder of the
replay's own, so cargo's fingerprints and outputs stay as cargo left them) when the `stamp` it was
saved with still holds. The stamp covers everything cargo reads to make the call:

- the cargo command and its environment (tunables aside: rustc reads them itself, and tracks them
  in its dep-info, which the build cache keys on; but those a dependency's dep-info names, a
  proc-macro's too, whose library holds the value it was built with), the rustc executable
  (path, size, mtime);
- every `Cargo.toml`, `Cargo.lock`, `.cargo/config[.toml]`, `rust-toolchain[.toml]` in the
  crate's folder and each folder above it, those of a workspace root that is not above it (the
  crate's `package.workspace`: its profiles and lock file), and `$CARGO_HOME/config[.toml]` (by
  content);
- the dependencies' sources (those cargo's dep-info lists beside the crate's own: path crates such
  as `gpu_kernel`, by content), the `Cargo.toml` and `build.rs` of their packages (those cargo's artifacts
  name too: a source may lie outside its package's folder) and the crate's
  (a dependency's manifest is below the crate, not above; cargo finds a `build.rs` itself), and
  the libraries the call links (`--extern`: size, mtime, inode);
- rustup's `settings.toml` and its toolchains' `rustc` (a proxy's compiler: `rustup default`, an
  override, an update in place).

The crate's own sources are not in it: rustc reads them anew (a new module too); one that a
dependency reads too is (an `include_str!` of a file both name: the dependency's library keeps
the text it was built from). Anything else changed -- a manifest, a feature, a flag, the
toolchain, a dependency -- and the stamp differs, the state is dropped and cargo builds (and
captures again). So does a replay that fails for no error at a line of code (its library not
written, a dependency's library gone or of another compiler: `STALE_CODES`): its messages are
dropped with it, and cargo's build is the build. Never replayed: a crate with a build script or a dependency with one (cargo runs
them first; their output may depend on anything), a call not found or not understood, a user's
own rustc wrapper (in the environment or a cargo config: the capture's would replace it), a
tunable a cargo config's `[env]` names (with `force` cargo passes the config's value, else the
build's: a capture given that same value cannot tell which), a cargo config that includes
another (`include`: that file is not in the stamp), a
dependency source written while cargo ran (by its change time too: a copy that keeps the old
mtime; its library may be of the old text), a configuration
file written while it ran (its own Cargo.lock after a manifest change: the stamp it started from
is gone; the next cargo build captures again), other systems
than Linux (the wrapper is sh; `env -0` is GNU's).

Off unless `WB_RUSTC_REPLAY=on`. It saves cargo's ~0.02-0.03 s of a ~0.2 s build after an edit
(docs/cpu-sim.md, "Edit loop, cargo skipped"), but two reviews found fourteen ways in which the
stamp missed something cargo reads and a replay linked a library of other sources than the
build's -- a wrong verdict with no error, worse than a slower build. Each has its test here, and
the list of what cargo reads is not closed (custom target files, a workspace's other members'
proc-macros...); so a user opts in."""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import shutil
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from workbench.build import depinfo
from workbench.build.adapters import host_rust
from workbench.build.adapters.base import BuildRequest
from workbench.build.diagnostics import from_cargo_message, json_record
from workbench.build.process import run_command

#: The state's format: a change here drops every saved call.
FORMAT = 3
FOLDER = "wb-replay"
#: Cargo's RUSTC_WORKSPACE_WRAPPER: runs rustc; for the primary package (the kernel crate, the
#: only unit `cargo rustc` builds with CARGO_PRIMARY_PACKAGE) it first writes the folder and the
#: arguments (NUL-separated) and the environment (`env -0`) to `$WB_RUSTC_CAPTURE.*`.
WRAPPER = """#!/bin/sh
# The workbench's cpu build (workbench/build/rustc_replay.py): writes the kernel crate's rustc call.
if [ "$CARGO_PRIMARY_PACKAGE" = 1 ] && [ -n "$WB_RUSTC_CAPTURE" ]; then
  { pwd -P | tr -d '\\n'; printf '\\0'; printf '%s\\0' "$@"; } > "$WB_RUSTC_CAPTURE.args"
  env -0 > "$WB_RUSTC_CAPTURE.env"
fi
exec "$@"
"""
#: Environment variables of the capture itself, or of cargo's jobserver (whose descriptors a
#: replay does not have): never passed to a replay.
NOT_REPLAYED = {"WB_RUSTC_CAPTURE", "RUSTC_WORKSPACE_WRAPPER", "CARGO_MAKEFLAGS", "MAKEFLAGS", "MFLAGS"}
#: Files cargo reads from the crate's folder and every folder above it.
CARGO_FILES = ("Cargo.toml", "Cargo.lock", ".cargo/config", ".cargo/config.toml", "rust-toolchain",
               "rust-toolchain.toml")  # fmt: skip
#: Files of the crate's package and each path dependency's that cargo reads (`build.rs` found by
#: itself: one added runs without a manifest change).
PACKAGE_FILES = ("Cargo.toml", "build.rs")
#: A user's own rustc wrapper (never replayed): cargo's environment variables and config keys.
WRAPPER_VARIABLES = ("RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "CARGO_BUILD_RUSTC_WRAPPER",
                     "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER")  # fmt: skip
CONFIG_WRAPPER = re.compile(r"rustc-(workspace-)?wrapper")
#: A cargo config's `include` of other config files (cargo's config-include): not in the stamp.
CONFIG_INCLUDE = re.compile(r"(?m)^\s*(\[\[\s*)?include\b")
CONFIGS = (".cargo/config", ".cargo/config.toml")
TUNABLE = re.compile(r"WB_TUNABLE_")
#: The symbol every proc-macro's shared library has (rustc's registrar of its macros).
PROC_MACRO_SYMBOL = b"__rustc_proc_macro_decls_"


@dataclass
class ReplayOutcome:
    """What the adapter reads of a build, by cargo or by a replay."""

    ok: bool
    library: Path | None = None
    inputs: list[Path] = field(default_factory=list)
    env_reads: set[str] = field(default_factory=set)
    crate: str = ""  # the crate's name (rustc's --crate-name)
    build_scripts: bool = False  # cargo's build had build scripts (never replayed)
    packages: list[Path] = field(default_factory=list)  # the folders of the packages cargo built
    stale: bool = False  # a replay that failed for no error in the code: cargo builds instead


#: rustc's errors of a call that no longer fits its world (a dependency's library missing, of
#: another compiler or another build): a stale replay, never the user's code.
STALE_CODES = frozenset({"E0460", "E0461", "E0462", "E0463", "E0464", "E0514", "E0519", "E0523", "E0786"})


def enabled(env: dict[str, str], crate_dir: Path) -> bool:
    """Whether replays may run for the crate in `crate_dir` (see the module docstring)."""
    if not sys.platform.startswith("linux"):
        return False
    if env.get("WB_RUSTC_REPLAY", "").strip().lower() not in ("on", "1", "yes"):
        return False  # opt-in (see the module docstring)
    if any(env.get(name) for name in WRAPPER_VARIABLES):
        return False
    # A wrapper in a cargo config: the capture's RUSTC_WORKSPACE_WRAPPER would take its place.
    configs = [f / name for f in (crate_dir.resolve(), *crate_dir.resolve().parents) for name in CONFIGS]
    home = Path(env.get("CARGO_HOME") or Path.home() / ".cargo")
    configs += [home / "config", home / "config.toml"]
    # A tunable in a cargo config's `[env]`: cargo's value (`force`) or the build's, which the
    # capture cannot tell apart where they are equal.
    # An `include` of another config file, which the stamp does not read.
    patterns = (CONFIG_WRAPPER, TUNABLE, CONFIG_INCLUDE)
    return not any(p.search(text) for text in map(_text, configs) for p in patterns)


class Replay:
    """The saved rustc call of one crate built by one cargo command in one target dir."""

    def __init__(self, target_dir: Path, crate_dir: Path, cmd: list[str], env: dict[str, str]):
        self.crate_dir = crate_dir.resolve()
        self.cmd, self.env = cmd, env
        key = hashlib.sha256(json.dumps([str(self.crate_dir), cmd]).encode()).hexdigest()[:20]
        self.root = target_dir / FOLDER
        self.folder = self.root / key
        self.state_path = self.folder / "state.json"
        self.out_dir = self.folder / "out"

    # ------------------------------------------------------------------ the replay

    def saved(self) -> dict | None:
        """The saved call when its stamp still holds, else None (and the stale state is dropped)."""
        try:
            state = json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            return None
        # `_stamp` is "" where the configuration differs from the state's: never a match.
        if state.get("format") == FORMAT and state.get("stamp") and state["stamp"] == self._stamp(state):
            return state
        self.drop()
        return None

    def run(self, req: BuildRequest, state: dict) -> ReplayOutcome:
        """Run the saved call (diagnostics to `req`, as cargo's would be)."""
        argv = list(state["argv"])
        at = argv.index("--out-dir")
        argv[at + 1] = str(self.out_dir)
        # cargo strips the colours of rustc's rendered text; asked for none, rustc writes none.
        argv = [re.sub(r"(?<=[=,])diagnostic-rendered-ansi,?", "", a) if a.startswith("--json=") else a
                for a in argv]  # fmt: skip
        env = {k: v for k, v in self.env.items() if k not in NOT_REPLAYED}
        env.update(state["env_add"])
        self.out_dir.mkdir(parents=True, exist_ok=True)
        manifest = str(self.crate_dir / "Cargo.toml")
        artifacts: dict[str, Path] = {}
        # Held until the call ends: a stale call's messages are not the build's (cargo's are).
        lines: list[str] = ["$ " + " ".join(argv)]
        diags: list = []
        codes: set[str] = set()

        def on_line(stream: str, line: str) -> None:
            record = json_record(line)
            if record is None:
                lines.append(line)
            elif record.get("$message_type") == "artifact":
                artifacts[record.get("emit", "")] = Path(record["artifact"])
            elif record.get("$message_type", "diagnostic") == "diagnostic" and "message" in record:
                if record.get("level") == "error":  # a spanless one: the call's world, not the code
                    spans = any(span.get("is_primary") for span in record.get("spans") or [])
                    codes.add((record.get("code") or {}).get("code") or ("code" if spans else ""))
                diag = from_cargo_message({"message": record, "manifest_path": manifest}, req.project.root,
                                          req.backend)  # fmt: skip
                if diag is not None:
                    lines.extend(diag.rendered.rstrip().splitlines())
                    diags.append(diag)

        def show() -> None:
            for line in lines:
                req.output(line)
            for diag in diags:
                req.diagnostic(diag)

        try:
            result = run_command(argv, cwd=state["cwd"], env=env, budget=req.budget, on_line=on_line)
        except BaseException:  # cancelled or timed out: what it wrote so far is shown
            show()
            raise
        library, deps = artifacts.get("link"), artifacts.get("dep-info")
        failed = result.returncode != 0 or library is None or deps is None
        # A failure with no error of rustc's at a line of code (the link, a file it cannot write), or
        # one of a call that no longer fits (a dependency's library gone or of another compiler):
        # not the code's fault. Cargo builds instead, afresh, and its messages are the build's.
        if failed and (not codes - {""} or codes & STALE_CODES):
            self.drop()
            shutil.rmtree(self.out_dir, ignore_errors=True)  # what it left there too
            return ReplayOutcome(False, stale=True)
        show()
        if failed:
            return ReplayOutcome(False)
        own, reads = _rustc_depinfo(deps, Path(state["cwd"]))
        inputs = list(dict.fromkeys([*own, *map(Path, state["dep_files"])]))
        return ReplayOutcome(True, library, inputs, reads)

    # ------------------------------------------------------------------ the capture

    def capture_env(self, env: dict[str, str]) -> dict[str, str]:
        """`env` for a cargo build that writes the crate's call down (the wrapper written first)."""
        self.drop()
        self.folder.mkdir(parents=True, exist_ok=True)
        for suffix in (".args", ".env"):  # a cancelled capture's: never read as this one's
            Path(f"{self.folder / 'call'}{suffix}").unlink(missing_ok=True)
        wrapper = self.root / "capture-rustc.sh"
        if not wrapper.is_file() or wrapper.read_text() != WRAPPER:
            part = wrapper.with_suffix(f".{os.getpid()}")
            part.write_text(WRAPPER)
            part.chmod(0o755)
            os.replace(part, wrapper)
        if os.statvfs(wrapper).f_flag & os.ST_NOEXEC or not os.access(wrapper, os.X_OK):
            return env  # a target dir on a noexec mount: cargo could not run the wrapper
        self._started = time.time()
        self._pre = self._config_stamp()
        return {**env, "RUSTC_WORKSPACE_WRAPPER": str(wrapper), "WB_RUSTC_CAPTURE": str(self.folder / "call")}

    def save(self, crate: str, cargo_inputs: list[Path], cargo_packages: list[Path] = ()) -> bool:
        """After a cargo build with `capture_env`: keep the call when it can be replayed (see the
        module docstring). `crate`: the crate's name; `cargo_inputs`: cargo's dep-info of it;
        `cargo_packages`: the folders of the packages cargo's build named (its artifacts')."""
        call = self.folder / "call"
        try:
            words = Path(f"{call}.args").read_bytes().decode()
            cwd, *argv = words.removesuffix("\0").split("\0")  # each word ends in NUL, even ""
            env_text = Path(f"{call}.env").read_bytes().decode()
        except (OSError, UnicodeDecodeError, ValueError):
            return False  # cargo ran no rustc for the crate (fresh) or the wrapper did not run
        finally:
            for suffix in (".args", ".env"):
                Path(f"{call}{suffix}").unlink(missing_ok=True)
        captured = dict(item.split("=", 1) for item in env_text.split("\0") if "=" in item)
        if (
            "CARGO_PKG_NAME" not in captured
            or "OUT_DIR" in captured
            or argv.count("--out-dir") != 1
            or _arg(argv, "--crate-name") != crate
        ):
            return False  # no environment written, a build script, or a call not understood
        env_add = {k: v for k, v in captured.items() if self.env.get(k) != v and k not in NOT_REPLAYED}
        out_dir = Path(cwd, _arg(argv, "--out-dir") or "")
        extra = next((a.split("=", 1)[1] for a in _flags(argv, "-C") if a.startswith("extra-filename=")), "")
        own, _ = _rustc_depinfo(out_dir / f"{crate}{extra}.d", Path(cwd))
        # A file a dependency read too stays in the stamp: its library holds the text cargo built.
        dep_read, dep_env = _read_by_dependencies(argv, Path(cwd), crate)
        own_set = {p.resolve() for p in own} - dep_read
        dep_files = sorted(str(p) for p in cargo_inputs if p.resolve() not in own_set)
        # A package's sources may lie outside its folder (`[lib] path`): cargo names its manifest.
        packages = sorted({str(self.crate_dir), *map(str, cargo_packages),
                           *(str(_package_of(Path(p))) for p in dep_files)})  # fmt: skip
        package_files = [f for p in packages for name in PACKAGE_FILES if (f := Path(p, name)).is_file()]
        try:
            if any(_written_since(os.stat(p), self._started) for p in [*dep_files, *package_files]):
                return False  # a dependency written while cargo ran: its library may be of the text before
        except OSError:
            return False
        state = {"format": FORMAT, "cwd": cwd, "argv": argv, "env_add": env_add, "dep_files": dep_files,
                 "packages": packages, "externs": sorted(_externs(argv)), "dep_env": sorted(dep_env),
                 "config": self._pre}  # fmt: skip
        state["stamp"] = self._stamp(state)
        if not state["stamp"]:  # a configuration file written while cargo ran (its Cargo.lock)
            return False
        part = self.state_path.with_suffix(f".{os.getpid()}")
        part.write_text(json.dumps(state))
        os.replace(part, self.state_path)
        return True

    def drop(self) -> None:
        self.state_path.unlink(missing_ok=True)

    # ------------------------------------------------------------------ the stamp

    def _config_stamp(self) -> str:
        """The cargo command, its environment, rustc and cargo's configuration files."""
        digest = hashlib.sha256()
        env = sorted((k, v) for k, v in self.env.items() if not TUNABLE.match(k) and k not in NOT_REPLAYED)
        digest.update(
            json.dumps([FORMAT, self.cmd, env, host_rust.file_stamp(self.env.get("RUSTC", ""))]).encode()
        )
        home = Path(self.env.get("CARGO_HOME") or Path.home() / ".cargo")
        folders = [self.crate_dir, *self.crate_dir.parents]
        files = [f / name for f in folders for name in CARGO_FILES]
        files += [home / "config", home / "config.toml"]
        # A workspace root named by the crate's manifest, not above it: its profiles and lock file.
        files += [_workspace_root(self.crate_dir) / name for name in ("Cargo.toml", "Cargo.lock")]
        for path in files:
            digest.update(f"{path}\0{_content(path)}\0".encode())
        # A rustup proxy's compiler: the default or an override in settings.toml, a toolchain
        # updated in place (the proxy's own file stays the same; the call names its toolchain).
        digest.update(host_rust.rustup_state(self.env).encode())
        return digest.hexdigest()

    def _stamp(self, state: dict) -> str:
        """`state`'s configuration stamp as it is now, and its dependencies' files as they are now."""
        config = self._config_stamp()
        if config != state.get("config"):
            return ""  # never a saved stamp
        digest = hashlib.sha256(config.encode())
        files = [*state["dep_files"], *(f"{p}/{name}" for p in state["packages"] for name in PACKAGE_FILES)]
        for path in files:
            digest.update(f"{path}\0{_content(Path(path))}\0".encode())
        for path in state["externs"]:
            digest.update(f"{path}\0{host_rust.file_stamp(path)}\0".encode())
        dep_env = [self.env.get(name) for name in state["dep_env"]]  # a tunable a dependency read
        digest.update(json.dumps([state["cwd"], state["argv"], state["env_add"], dep_env]).encode())
        return digest.hexdigest()


def _arg(argv: list[str], name: str) -> str | None:
    """The value of `name VALUE` or `name=VALUE` in argv (the first)."""
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def _flags(argv: list[str], name: str) -> list[str]:
    """Every value of `name VALUE` / `nameVALUE` (rustc's `-C x` and `-Cx`)."""
    found = []
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif a.startswith(name) and a != name:
            found.append(a[len(name) :])
    return found


def _externs(argv: list[str]) -> set[str]:
    """The libraries of `--extern name=PATH`."""
    return {v.split("=", 1)[1] for v in _flags(argv, "--extern") if "=" in v}


def _rustc_depinfo(path: Path, cwd: Path) -> tuple[list[Path], set[str]]:
    """rustc's own dep-info: the files it read (relative to `cwd` as rustc wrote them) and the
    environment variables its code read (`# env-dep:NAME`)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return [], set()
    return [cwd / p for p in depinfo.parse(text)], depinfo.env_reads(text)


def _read_by_dependencies(argv: list[str], cwd: Path, crate: str) -> tuple[set[Path], set[str]]:
    """The files and environment variables rustc's dep-info of any Rust library (an rlib or rmeta
    beside it) in the call's `-L dependency=` folders lists: a superset of what the crate's
    dependencies read, direct or not (paths relative to `cwd`, as cargo runs rustc for a
    workspace's members), and of any proc-macro there (a shared library: the expansions in a
    library built with it hold what it read when cargo built it). The target dir is shared: other
    kernel crates (cdylibs) left out, whose `src/...` would read as this one's."""
    found: set[Path] = set()
    env: set[str] = set()
    for flag in _flags(argv, "-L"):
        if not flag.startswith("dependency="):
            continue
        for path in Path(cwd, flag.split("=", 1)[1]).glob("*.d"):
            lib = path.with_name(f"lib{path.stem}")
            if (
                path.stem != crate
                and not path.stem.startswith(f"{crate}-")
                and (
                    lib.with_suffix(".rlib").is_file()
                    or lib.with_suffix(".rmeta").is_file()
                    or _proc_macro(lib.with_suffix(".so"))
                )
            ):
                files, reads = _rustc_depinfo(path, cwd)
                found.update(p.resolve() for p in files)
                env |= reads
    return found, env


def _proc_macro(path: Path) -> bool:
    """Whether `path` is a proc-macro's shared library (rustc's `__rustc_proc_macro_decls_`
    symbol in it), not a cdylib such as another kernel crate's."""
    try:
        with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(PROC_MACRO_SYMBOL) >= 0
    except (OSError, ValueError):  # absent, or empty (mmap of nothing)
        return False


def _workspace_root(crate_dir: Path) -> Path:
    """The folder `package.workspace` of the crate's Cargo.toml names (the crate's own where it
    names none or the manifest cannot be read: cargo reports that one itself)."""
    try:
        with (crate_dir / "Cargo.toml").open("rb") as f:
            root = tomllib.load(f).get("package", {}).get("workspace")
    except (OSError, ValueError, AttributeError):
        return crate_dir
    return crate_dir / root if isinstance(root, str) else crate_dir


def _package_of(path: Path) -> Path:
    """The folder of the package `path` belongs to: the nearest above it with a Cargo.toml."""
    for folder in path.parents:
        if (folder / "Cargo.toml").is_file():
            return folder
    return path.parent


def _written_since(st: os.stat_result, start: float) -> bool:
    """Whether a file may have been written at `start` or after: its change time (ctime: a copy
    that keeps its mtime, `cp -p` or an archive, still sets it) or mtime is later than `start`
    less the file system's step (a kernel tick where times have nanoseconds, else 2 s)."""
    when = max(st.st_mtime_ns, st.st_ctime_ns)
    fine = when % 1_000_000_000 != 0
    return when / 1e9 > start - (0.01 if fine else 2.0)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _content(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "absent"
    except OSError as exc:
        return f"unreadable {exc.errno}"
