"""One kernel API on every target (issue 38, item 6): the methods a kernel body calls on `Ctx`,
`In`, `Out` and `Shared` are the same on the host (cpu, cpu-sim), rustc's NVPTX backend,
Rust-CUDA and rust-gpu, so a body that builds on the cpu builds everywhere.

Read from the crate's sources (Rust-CUDA and rust-gpu cannot be compiled here); the entry
points' constructors (`new`, `new_1d`, `from_shared_addr`, `from_ptr`, `with_subgroup`,
`Ctx::shared`) differ by target on purpose and are left out. Every example builds for the host
and nvptx elsewhere (tests/build, the self-test), which exercises most of the API in real code."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO

SRC = REPO / "resources" / "crates" / "gpu_kernel" / "src"
TYPES = ("Ctx", "In", "Out", "Shared")
CONSTRUCTORS = {"new", "new_1d", "from_shared_addr", "from_ptr", "with_subgroup", "shared"}
TARGETS = {
    "host (cpu, cpu-sim)": sorted((SRC / "host").glob("*.rs")),
    "nvptx": [SRC / "raw.rs", SRC / "nvptx.rs"],
    "rust-cuda": [SRC / "raw.rs", SRC / "rust_cuda.rs"],
    "rust-gpu (spirv)": [SRC / "spirv.rs"],
}
_IMPL = re.compile(r"^impl\b(?:<[^{]*?>)?\s+(?:[\w:<>, ']+\s+for\s+)?(\w+)")
_PUB_FN = re.compile(r"^\s+pub fn (\w+)")


def surface(files: list[Path]) -> dict[str, set[str]]:
    """Type -> the safe `pub fn` names of its inherent impls in `files`."""
    out: dict[str, set[str]] = {t: set() for t in TYPES}
    for path in files:
        current = None
        for line in path.read_text(encoding="utf-8").splitlines():
            match = _IMPL.match(line)
            if match:
                current = match.group(1) if " for " not in line.split("{")[0] else None
                continue
            if line.startswith("}"):
                current = None
                continue
            fn = _PUB_FN.match(line)
            if current in out and fn and fn.group(1) not in CONSTRUCTORS:
                out[current].add(fn.group(1))
    return out


def test_every_target_offers_a_kernel_body_the_same_methods():
    surfaces = {name: surface(files) for name, files in TARGETS.items()}
    host = surfaces["host (cpu, cpu-sim)"]
    assert all(host[t] for t in TYPES), host  # the parser found the host's API
    problems = []
    for name, found in surfaces.items():
        for t in TYPES:
            missing, extra = host[t] - found[t], found[t] - host[t]
            if missing or extra:
                problems.append(f"{name} {t}: lacks {sorted(missing)}, adds {sorted(extra)}")
    assert not problems, "the kernel API differs between targets:\n" + "\n".join(problems)
