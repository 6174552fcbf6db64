"""A stand-in for `cargo-gpu` (the real one needs a pinned nightly with rustc-dev: not installable here).

It follows the documented contract of cargo-gpu's source (Rust-GPU/cargo-gpu,
`crates/cargo-gpu/src/build.rs`, `linkage.rs`, and the clap flags of `Install`, `BuildArgs` and
rust-gpu's flattened `SpirvBuilder`), and checks its command line the way clap would:

- `cargo gpu build` (cargo runs this program as `cargo-gpu gpu build ...`); `--version`;
- only the flags cargo-gpu's `build` accepts; an unknown one is clap's "unexpected argument"
  error (exit 2); `--shader-crate` must be a crate folder, `--target` a `spirv-*` triple;
- output: the module copied into the output folder (created if missing) under the module's
  own file name (single-module builds: `<crate name with _>.spv`), and the manifest
  (`manifest.json` or `--manifest-file`): a pretty-printed, sorted JSON array of
  {source_path, entry_point, wgsl_entry_point}, `source_path` relative to the canonicalized
  shader crate with `/` separators (`..` components when the output folder is outside it),
  `wgsl_entry_point` the entry without `::`.

What it compiles is not Rust: the module is real rust-gpu output from ../shared/data
(`$WB_STAND_IN_SPV`, or `stand-in.spv` in the shader crate when present). Like cargo running
inside spirv-builder, it leaves a dep-info file in `<crate>/target/spirv-builder/<target>/release/`.
A source containing `undefined_name` fails with rustc's rendered error; a module spirv-val
rejects fails as rust-gpu's linker reports it (`error:0:0 - …` and the module's path in a note).
Every command line is appended, as JSON, to `$WB_STAND_IN_LOG` when set; `$WB_STAND_IN_SLEEP` seconds pass between
writing the module and the manifest (to widen race windows in tests).
"""

from __future__ import annotations

import json
import os
import struct
import sys
import time
from pathlib import Path

VALUE_FLAGS = {
    "--shader-crate", "-o", "--output-dir", "--target", "-m", "--manifest-file", "-p", "--package",
    "--spirv-builder-source", "--spirv-builder-version", "--spirv-metadata", "--features",
    "--capabilities", "--extensions",
}  # fmt: skip
BOOL_FLAGS = {
    "--auto-install-rust-toolchain", "--no-clear-target", "--rebuild-codegen",
    "--force-overwrite-lockfiles-v4-to-v3", "-w", "--watch", "--debug", "--no-default-features",
    "--deny-warnings", "--multimodule", "--relax-struct-store", "--relax-logical-pointer",
    "--relax-block-layout", "--uniform-buffer-standard-layout", "--scalar-block-layout",
    "--skip-block-layout", "--preserve-bindings",
}  # fmt: skip
LONG = {"-o": "--output-dir", "-m": "--manifest-file", "-p": "--package", "-w": "--watch"}


def fail(message: str, code: int = 1) -> None:
    print(message, file=sys.stderr)
    sys.exit(code)


def parse(args: list[str]) -> dict:
    opts: dict = {"--shader-crate": "./", "--output-dir": "./", "--target": "spirv-unknown-vulkan1.2",
                  "--manifest-file": "manifest.json", "--spirv-metadata": "none"}  # fmt: skip
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in VALUE_FLAGS:
            if not eq:
                i += 1
                if i >= len(args):
                    fail(f"error: a value is required for '{name} <VALUE>' but none was supplied", 2)
                value = args[i]
            opts[LONG.get(name, name)] = value
        elif arg in BOOL_FLAGS:
            opts[LONG.get(arg, arg)] = True
        else:
            fail(f"error: unexpected argument '{arg}' found\n\nUsage: cargo gpu build [OPTIONS]", 2)
        i += 1
    if opts["--spirv-metadata"] not in ("none", "name-variables", "full"):
        fail(f"error: invalid value '{opts['--spirv-metadata']}' for '--spirv-metadata'", 2)
    return opts


def entry_points(module: bytes) -> list[str]:
    """OpEntryPoint names of a SPIR-V module."""
    words = struct.unpack(f"<{len(module) // 4}I", module[: len(module) // 4 * 4])
    names, i = [], 5
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if opcode == 15:  # OpEntryPoint: model, id, name (literal string), interface...
            raw = struct.pack(f"<{count - 3}I", *words[i + 3 : i + count])
            names.append(raw.split(b"\0", 1)[0].decode())
        i += max(count, 1)
    return names


def crate_name(crate: Path) -> str:
    in_package = False
    for line in (crate / "Cargo.toml").read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            in_package = line == "[package]"
        elif in_package and line.startswith("name") and "=" in line:
            return line.split("=", 1)[1].strip().strip('"').replace("-", "_")
    fail("error: the shader crate's Cargo.toml has no [package] name")
    return ""


def linker_spirv_val(module: bytes, out: Path, target: str) -> None:
    """rust-gpu's linker validates the module it wrote (rustc_codegen_spirv/src/link.rs,
    `do_spirv_val`), reporting spirv-tools' error as rustc renders a spanless error with notes,
    the module kept on disk; its linked validator gives no position (`error:0:0`, rust-gpu#323)."""
    import shutil
    import subprocess

    spirv_val = shutil.which("spirv-val")
    if spirv_val is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(module)
    env = target.removeprefix("spirv-unknown-")
    proc = subprocess.run([spirv_val, "--target-env", env, str(out)], capture_output=True, text=True)
    if proc.returncode == 0:
        return
    report = (proc.stdout + proc.stderr).strip().splitlines()
    message = report[0].split(": ", 2)[-1] if report else "validation failed"
    notes = "".join(f"\n{line}" for line in report[1:])
    fail(f"error: error:0:0 - {message}{notes}\n  |\n  = note: spirv-val failed\n  = note: module `{out}`\n\n"
         "error: could not compile due to 1 previous error\nError: build failed")  # fmt: skip


def main(argv: list[str]) -> None:
    if argv[:1] == ["gpu"]:  # cargo runs an external subcommand as `cargo-gpu gpu ...`
        argv = argv[1:]
    if argv[:1] == ["--version"]:
        print("cargo-gpu 0.1.0 (stand-in)")
        return
    if argv[:1] != ["build"]:
        fail(f"error: unrecognized subcommand '{argv[0] if argv else ''}' (the stand-in knows `build`)", 2)
    opts = parse(argv[1:])
    if os.environ.get("WB_STAND_IN_LOG"):
        with open(os.environ["WB_STAND_IN_LOG"], "a") as log:
            log.write(json.dumps(argv) + "\n")
    if opts.get("--multimodule") or opts.get("--watch") or "--package" in opts:
        fail("error: the stand-in builds one shader crate once, as one module", 2)
    if not opts["--target"].startswith("spirv-"):
        fail(f"error: invalid target '{opts['--target']}': expected a spirv-* target triple", 2)
    crate = Path(opts["--shader-crate"])
    if not (crate / "Cargo.toml").is_file():
        fail(f"Error: shader crate '{crate}' does not exist. (Current dir is '{os.getcwd()}')")
    crate = crate.resolve()  # cargo-gpu canonicalizes both folders
    out = Path(opts["--output-dir"])
    out.mkdir(parents=True, exist_ok=True)
    out = out.resolve()
    print(f"Compiling shaders at {crate}...")
    lib = crate / "src" / "lib.rs"
    if "undefined_name" in lib.read_text():
        fail("error[E0425]: cannot find value `undefined_name` in this scope\n  --> src/lib.rs:11:27\n   |\n\n"
             "Error: build failed")  # fmt: skip
    source = crate / "stand-in.spv"
    if not source.is_file():
        source = Path(os.environ["WB_STAND_IN_SPV"])
    module = source.read_bytes()
    deps = crate / "target" / "spirv-builder" / opts["--target"] / "release"
    deps.mkdir(parents=True, exist_ok=True)
    name = crate_name(crate)
    linker_spirv_val(module, deps / "deps" / f"{name}.spv", opts["--target"])
    inputs = " ".join(str(p).replace(" ", "\\ ") for p in [lib, source])
    (deps / f"{name}.d").write_text(f"{deps / (name + '.spv')}: {inputs}\n")
    spv = out / f"{name}.spv"
    spv.write_bytes(module)
    time.sleep(float(os.environ.get("WB_STAND_IN_SLEEP", "0")))
    source_path = Path(os.path.relpath(spv, crate)).as_posix()
    # Linkage derives Ord over (source_path, entry_point, wgsl_entry_point); cargo-gpu sorts by it.
    linkage = sorted(
        ({"source_path": source_path, "entry_point": e, "wgsl_entry_point": e.replace("::", "")}
         for e in entry_points(module)),
        key=lambda r: (r["source_path"], r["entry_point"], r["wgsl_entry_point"]),
    )  # fmt: skip
    (out / opts["--manifest-file"]).write_text(json.dumps(linkage, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
