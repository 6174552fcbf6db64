"""Running cargo with `--message-format=json`: diagnostics and artifacts from its record stream."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.build import depinfo
from workbench.build.adapters.base import BuildRequest
from workbench.build.diagnostics import from_cargo_message, parse_cargo_json_line


@dataclass
class CargoOutcome:
    ok: bool
    artifacts: list[dict[str, Any]] = field(default_factory=list)  # compiler-artifact records
    returncode: int = 0
    #: Build scripts cargo ran or found fresh (`build-script-executed` records): their outputs may
    #: depend on anything, so a rustc call of such a build is never replayed (`rustc_replay`).
    build_scripts: int = 0

    def of_package(self, manifest: Path) -> list[dict[str, Any]]:
        """The artifact records of the crate at `manifest` (not its dependencies, not `core`)."""
        manifest = manifest.resolve()
        return [a for a in self.artifacts if Path(a.get("manifest_path", "")).resolve() == manifest]

    def inputs_of(self, manifest: Path) -> list[Path]:
        """The files cargo says the crate's build read: its dep-info next to each artifact
        (`libNAME.d` beside `libNAME.so`; it lists path dependencies and build-script inputs too)."""
        files: list[Path] = []
        for record in self.of_package(manifest):
            for name in record.get("filenames", []):
                dep_file = Path(name).with_suffix(".d")
                if dep_file.is_file():
                    files.extend(depinfo.read(dep_file))
        return list(dict.fromkeys(files))

    def env_reads(self, manifest: Path) -> set[str]:
        """The environment variables the crate's compile read with `env!` / `option_env!`: the
        `# env-dep:NAME` lines of rustc's own dep-info (`deps/<crate>[-hash].d`), which lists only
        what the compiled (cfg-selected) code expanded."""
        names: set[str] = set()
        for record in self.of_package(manifest):
            for name in record.get("filenames", []):
                path = Path(name)
                deps = path.parent if path.parent.name == "deps" else path.parent / "deps"
                stem = path.stem.removeprefix("lib")
                for dep_file in {
                    deps / f"{stem}.d",
                    deps / f"{record['target']['name'].replace('-', '_')}.d",
                }:
                    try:
                        names |= depinfo.env_reads(dep_file.read_text(errors="replace"))
                    except OSError:
                        continue
        return names


def rust_reads(read: set[str], req: BuildRequest) -> set[str]:
    """The tunables the crate's compile read: those whose `WB_TUNABLE_<NAME>` is among `read`, the
    environment variables rustc's dep-info names (`CargoOutcome.env_reads`)."""
    from workbench.build.adapters.base import rust_tunable_var

    return {name for name in req.tunables if rust_tunable_var(name) in read}


def cargo_env(req: BuildRequest, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # The workbench reads cargo's JSON; colour codes and progress bars only get in the way.
    env.update({"CARGO_TERM_COLOR": "never", "CARGO_TERM_PROGRESS_WHEN": "never"})
    env.update(req.tunable_env())
    env.update(extra or {})
    return env


#: Target dirs are shared across projects (so nvptx's `core` is built once), and two copies of one
#: crate then share cargo's fingerprints. By modification time, a copy whose sources are older than
#: the last build's output would get the other copy's library; by content checksum it never does.
CHECKSUM_FRESHNESS = "-Zchecksum-freshness"

#: How a Rust crate reads a tunable (for the "never read" warning).
RUST_READ = 'option_env!("WB_TUNABLE_{NAME}") or env! in the compiled code'


def run_cargo(req: BuildRequest, cmd: list[str], env: dict[str, str]) -> CargoOutcome:
    """Run a cargo command whose stdout is JSON records; feed messages to the request."""
    root = req.project.root
    outcome = CargoOutcome(ok=False)
    finished: list[bool] = []

    def on_stdout(line: str) -> bool:
        record = parse_cargo_json_line(line)
        if record is None:
            return False
        reason = record["reason"]
        if reason == "compiler-message":
            diag = from_cargo_message(record, root, req.backend)
            if diag is not None:
                for text in diag.rendered.rstrip().splitlines():
                    req.output(text)
                req.diagnostic(diag)
        elif reason == "compiler-artifact":
            outcome.artifacts.append(record)
        elif reason == "build-script-executed":
            outcome.build_scripts += 1
        elif reason == "build-finished":
            finished.append(bool(record.get("success")))
        return True

    result = req.run(cmd, cwd=req.project.manifest.crate_dir, env=env, on_stdout=on_stdout)
    outcome.returncode = result.returncode
    outcome.ok = result.returncode == 0 and (not finished or finished[-1])
    return outcome
