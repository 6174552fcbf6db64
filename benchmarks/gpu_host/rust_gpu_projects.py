"""Write two kernel projects around the real rust-gpu SPIR-V in ../shared/data/rust-gpu-spirv/ (cargo-gpu
output for LegNeato/VulkanShaders, not written by this project), each with a CPU definition of the
same computation in Rust as its reference, for `benchmarks/gpu_host/prepare.sh`:

    python benchmarks/gpu_host/rust_gpu_projects.py SPIRV_DIR DEST

DEST/headless/project and DEST/particles/project are ordinary workbench projects whose `rust-gpu`
backend is the prebuilt module (copied into the project, referred to by a relative path, so the
folder works on any machine). Sizes stay within 65,535 workgroups: these modules index by
`global_invocation_id.x`, so a folded dispatch would not cover them (docs/manifest.md).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

CARGO = """\
[package]
name = "{name}"
version = "0.1.0"
edition = "2021"

[lib]
crate-type = ["cdylib", "rlib"]
"""

HEADLESS_RS = """\
/// The computation of rust-gpu's `headless.comp.spv` (VulkanShaders' computeheadless), on the CPU.
fn f(v: u32) -> u32 {
    if v <= 1 {
        return v;
    }
    let (mut cur, mut prev) = (1u32, 1u32);
    for _ in 2..v {
        let next = cur.wrapping_add(prev);
        prev = cur;
        cur = next;
    }
    cur
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn headless_cpu(n: u32, data: *mut u32) {
    let data = unsafe { core::slice::from_raw_parts_mut(data, n as usize) };
    for v in data.iter_mut() {
        *v = f(*v);
    }
}
"""

HEADLESS_TOML = """\
# rust-gpu's headless.comp.spv (workgroup 1x1x1): at most 65,535 elements, one workgroup each.
[project]
name = "headless"

[[kernel]]
name = "headless"
entry = { cpu = "headless_cpu", rust-gpu = "main_cs" }
sizes = { n = 65535 }

[[kernel.arg]]
name = "n"
kind = "scalar"
type = "u32"
value = "n"

[[kernel.arg]]
name = "data"
kind = "buffer"
type = "u32"
length = "n"
direction = "inout"
binding = 0
init = { kind = "random", low = 0, high = 60 }

[kernel.launch]
threads = [1]
grid = ["n"]

[kernel.metrics]
bytes = "8 * n"

[kernel.check]
rtol = 0
atol = 0

[kernel.wgpu]
scalars = "override"
override_ids = { n = "0" }   # SPIR-V spec constant 0: the element count

[kernel.timing]
fresh_inputs = true   # f(v) loops v times: timed on its own output, it would run for ever

[backends.rust-gpu]
prebuilt = "spirv"
"""

PARTICLES_RS = """\
/// The computation of rust-gpu's `particle_integrate.comp.spv` (VulkanShaders' computenbody), on the CPU.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn integrate_cpu(delta_t: f32, count: u32, particles: *mut f32) {
    let p = unsafe { core::slice::from_raw_parts_mut(particles, 8 * count as usize) };
    for i in 0..count as usize {
        for c in 0..3 {
            p[8 * i + c] += p[8 * i + 4 + c] * delta_t;
        }
    }
}
"""

PARTICLES_TOML = """\
# rust-gpu's particle_integrate.comp.spv (workgroup 256): 4,194,304 particles of 32 bytes.
[project]
name = "particles"

[[kernel]]
name = "integrate"
entry = { cpu = "integrate_cpu", rust-gpu = "main_cs" }
sizes = { count = 4194304 }

[[kernel.arg]]
name = "delta_t"
kind = "scalar"
type = "f32"
value = "0.0125"

[[kernel.arg]]
name = "count"
kind = "scalar"
type = "u32"
value = "count"

[[kernel.arg]]
name = "particles"    # {pos: f32x4, vel: f32x4} per particle
kind = "buffer"
type = "f32"
length = "8 * count"
direction = "inout"
binding = 0
init = { kind = "random", low = -1.0, high = 1.0 }

[kernel.launch]
threads = [256]
grid = ["ceil_div(count, 256)"]

[kernel.metrics]
bytes = "48 * count"   # reads pos and vel (32 bytes), writes pos (16)

[kernel.check]
rtol = 1e-6
atol = 1e-6

[kernel.wgpu]
scalars = "uniform"   # binding 1: {delta_t: f32, count: u32}
params_binding = 1

[backends.rust-gpu]
prebuilt = "spirv"
"""

PROJECTS = {
    "headless": (HEADLESS_RS, HEADLESS_TOML, "headless.comp.spv"),
    "particles": (PARTICLES_RS, PARTICLES_TOML, "particle_integrate.comp.spv"),
}


def write_projects(spirv: Path, dest: Path) -> list[Path]:
    roots = []
    for name, (rust, manifest, module) in PROJECTS.items():
        root = dest / name / "project"
        if root.exists():
            shutil.rmtree(root)
        (root / "src").mkdir(parents=True)
        (root / "Cargo.toml").write_text(CARGO.format(name=name))
        (root / "src" / "lib.rs").write_text(rust)
        (root / "workbench.toml").write_text(manifest)
        prebuilt = root / "spirv"
        prebuilt.mkdir()
        shutil.copy(spirv / "cargo-gpu-manifest.json", prebuilt / "manifest.json")
        shutil.copy(spirv / module, prebuilt)
        roots.append(root)
    return roots


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    for root in write_projects(Path(sys.argv[1]), Path(sys.argv[2])):
        print(root)
