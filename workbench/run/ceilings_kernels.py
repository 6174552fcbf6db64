"""The built-in kernels that measure device ceilings: copy, read, write and update streams and an FMA
loop per runtime, the streams in several variants (access width, accesses in flight per invocation,
occupancy), so a ceiling is the best the device did, not one kernel's figure.

Each kernel is plain text here (Rust for the cpu runtime, WGSL for wgpu) or a file beside the
examples (CUDA: `resources/ceilings/ceilings.ptx`, compiled from `ceilings.cu` by nvcc, no GPU
needed), written to the cache and run through the same runtimes and worker processes as a user's
kernel. The FLOP and byte counts `ceilings.py` divides by are stated next to each kernel.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

#: The memory streams, in the order every list of them shows (the ceilings record's `<stream>_gbps`,
#: the cache, `workbench ceilings`, the devices panel, the roof names): copy reads one buffer and
#: writes another, read only reads, write only writes, update reads and writes one buffer in place
#: (`dst[j] = f(dst[j])`: the roof of an in-place kernel such as a bitonic pass, which a copy stream
#: underrates: the lines just read are the ones written back).
STREAMS = ("copy", "read", "write", "update")

#: FMA chains per CPU thread: enough independent chains to cover the FMA latency on two ports.
CPU_LANES = 64

#: A cdylib with std only (no crates), built once with the host rustc. Every entry splits its work
#: over `threads` OS threads itself, as the cpu runtime expects a kernel to cover its whole grid.
CPU_RUST = """
use std::thread;

#[no_mangle]
pub unsafe extern "C" fn wb_copy(src: *const f32, dst: *mut f32, n: u32, threads: u32) {
    let n = n as usize;
    let threads = (threads as usize).max(1);
    let src = std::slice::from_raw_parts(src, n);
    let dst = std::slice::from_raw_parts_mut(dst, n);
    let chunk = n.div_ceil(threads);
    thread::scope(|s| {
        for (d, c) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
            s.spawn(move || d.copy_from_slice(c));
        }
    });
}

/// The read stream: every thread sums its chunk; the sums (one per thread) are the only writes.
#[no_mangle]
pub unsafe extern "C" fn wb_read(src: *const f32, out: *mut f32, n: u32, threads: u32) {
    let n = n as usize;
    let threads = (threads as usize).max(1);
    let src = std::slice::from_raw_parts(src, n);
    let out = std::slice::from_raw_parts_mut(out, threads);
    let chunk = n.div_ceil(threads);
    thread::scope(|s| {
        for (slot, c) in out.iter_mut().zip(src.chunks(chunk)) {
            s.spawn(move || {
                let mut lanes = [0f32; 16];
                for block in c.chunks(16) {
                    for (l, v) in lanes.iter_mut().zip(block) {
                        *l += *v;
                    }
                }
                *slot = lanes.iter().sum();
            });
        }
    });
}

/// The write stream: every thread fills its chunk.
#[no_mangle]
pub unsafe extern "C" fn wb_write(dst: *mut f32, n: u32, threads: u32) {
    let n = n as usize;
    let threads = (threads as usize).max(1);
    let dst = std::slice::from_raw_parts_mut(dst, n);
    let chunk = n.div_ceil(threads);
    thread::scope(|s| {
        for d in dst.chunks_mut(chunk) {
            s.spawn(move || d.fill(1.0));
        }
    });
}

/// The update stream: every thread rewrites its chunk in place (`v * 0.5 + 1`: bounded, never
/// denormal, and not a value the compiler can skip reading).
#[no_mangle]
pub unsafe extern "C" fn wb_update(dst: *mut f32, n: u32, threads: u32) {
    let n = n as usize;
    let threads = (threads as usize).max(1);
    let dst = std::slice::from_raw_parts_mut(dst, n);
    let chunk = n.div_ceil(threads);
    thread::scope(|s| {
        for d in dst.chunks_mut(chunk) {
            s.spawn(move || {
                for v in d.iter_mut() {
                    *v = *v * 0.5 + 1.0;
                }
            });
        }
    });
}

macro_rules! fma_kernel {
    ($name:ident, $t:ty, $a:expr, $b:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(out: *mut $t, iters: u32, threads: u32) {
            let threads = (threads as usize).max(1);
            let out = std::slice::from_raw_parts_mut(out, threads);
            thread::scope(|s| {
                for (t, slot) in out.iter_mut().enumerate() {
                    s.spawn(move || {
                        let mut acc = [0 as $t; LANES];
                        for (j, a) in acc.iter_mut().enumerate() {
                            *a = (t * LANES + j) as $t * 1e-6;
                        }
                        for _ in 0..iters {
                            for a in acc.iter_mut() {
                                *a = a.mul_add($a, $b);
                            }
                        }
                        *slot = acc.iter().sum();
                    });
                }
            });
        }
    };
}

const LANES: usize = %LANES%;
fma_kernel!(wb_fma_f32, f32, 0.999_999, 1e-7);
fma_kernel!(wb_fma_f64, f64, 0.999_999_999, 1e-9);
""".replace("%LANES%", str(CPU_LANES))

#: FMA lanes per invocation in the WGSL and PTX kernels (independent chains).
GPU_LANES = 16


def wgsl_fma(scalar: str, iters: int) -> str:
    """`iters` rounds of fma on four independent vec4 chains (16 lanes) per invocation."""
    v = f"vec4<{scalar}>"  # naga takes f64 when the device has shader-f64 (no enable directive)
    return f"""
@group(0) @binding(0) var<storage, read_write> result: array<{scalar}>;

@compute @workgroup_size(256)
fn wb_fma(@builtin(global_invocation_id) gid: vec3<u32>) {{
    let s = {scalar}(gid.x) * {scalar}(1e-6);
    var a0 = {v}(s, s + {scalar}(0.1), s + {scalar}(0.2), s + {scalar}(0.3));
    var a1 = a0 + {v}({scalar}(1.0));
    var a2 = a0 + {v}({scalar}(2.0));
    var a3 = a0 + {v}({scalar}(3.0));
    let m = {v}({scalar}(0.999999));
    let c = {v}({scalar}(1e-7));
    for (var i = 0u; i < {iters}u; i = i + 1u) {{
        a0 = fma(a0, m, c);
        a1 = fma(a1, m, c);
        a2 = fma(a2, m, c);
        a3 = fma(a3, m, c);
    }}
    let t = a0 + a1 + a2 + a3;
    result[gid.x] = t.x + t.y + t.z + t.w;
}}
"""


PTX_HEADER = ".version 7.0\n.target sm_52\n.address_size 64\n"


def _ptx_float(value: float, kind: str) -> str:
    if kind == "f32":
        return "0f" + struct.pack(">f", value).hex().upper()
    return "0d" + struct.pack(">d", value).hex().upper()


def ptx_fma(kind: str) -> str:
    """`iters` rounds of fma.rn on GPU_LANES independent chains per thread; one store per thread."""
    regs = GPU_LANES + 4
    lines = [
        PTX_HEADER,
        ".visible .entry wb_fma(.param .u64 out, .param .u32 iters)\n{",
        "    .reg .pred %p;",
        "    .reg .b32 %r<8>;",
        "    .reg .b64 %rd<4>;",
        f"    .reg .{kind} %f<{regs}>;",
        "    ld.param.u64 %rd1, [out];",
        "    ld.param.u32 %r1, [iters];",
        "    mov.u32 %r2, %ctaid.x;",
        "    mov.u32 %r3, %ntid.x;",
        "    mov.u32 %r4, %tid.x;",
        "    mad.lo.s32 %r5, %r2, %r3, %r4;",
        f"    cvt.rn.{kind}.u32 %f0, %r5;",
        f"    mul.{kind} %f0, %f0, {_ptx_float(1e-6, kind)};",
    ]
    for j in range(1, GPU_LANES):
        lines.append(f"    add.{kind} %f{j}, %f0, {_ptx_float(0.1 * j, kind)};")
    m, c = GPU_LANES, GPU_LANES + 1
    lines += [
        f"    mov.{kind} %f{m}, {_ptx_float(0.999999, kind)};",
        f"    mov.{kind} %f{c}, {_ptx_float(1e-7, kind)};",
        "    mov.u32 %r6, 0;",
        "LOOP:",
    ]
    lines += [f"    fma.rn.{kind} %f{j}, %f{j}, %f{m}, %f{c};" for j in range(GPU_LANES)]
    lines += [
        "    add.u32 %r6, %r6, 1;",
        "    setp.lt.u32 %p, %r6, %r1;",
        "    @%p bra LOOP;",
    ]
    total = GPU_LANES + 2
    lines.append(f"    add.{kind} %f{total}, %f0, %f1;")
    lines += [f"    add.{kind} %f{total}, %f{total}, %f{j};" for j in range(2, GPU_LANES)]
    size = 4 if kind == "f32" else 8
    lines += [
        "    cvta.to.global.u64 %rd2, %rd1;",
        f"    mul.wide.u32 %rd3, %r5, {size};",
        "    add.s64 %rd2, %rd2, %rd3;",
        f"    st.global.{kind} [%rd2], %f{total};",
        "    ret;",
        "}",
        "",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ stream variants


@dataclass(frozen=True)
class Stream:
    """One variant of a memory stream: `what` (one of `STREAMS`), the bytes of one access
    (`width`: 4, 8, 16), the accesses in flight per invocation and iteration (`unroll`), and
    whether the grid covers the buffer one access per invocation (`per_access`) or strides over it
    with `groups_per_unit` workgroups per SM (CUDA) or in all (wgpu)."""

    what: str
    width: int
    unroll: int
    per_access: bool
    groups_per_unit: int = 0

    @property
    def label(self) -> str:
        shape = (
            "one access per invocation" if self.per_access else f"grid-stride, {self.groups_per_unit} groups"
        )
        return f"{self.width}-byte accesses, {self.unroll} in flight, {shape}"


def cuda_streams() -> list[Stream]:
    """Every CUDA variant: 4, 8 and 16-byte accesses; one per thread, or grid-stride at 2, 4 and 8
    blocks of 256 per SM (512 to 2,048 threads: the occupancies that matter) with 4 in flight."""
    out = []
    for what in STREAMS:
        for width in (4, 8, 16):
            out.append(Stream(what, width, 1, True))
            out.append(Stream(what, width, 1, False, 8))
            out += [Stream(what, width, 4, False, k) for k in (2, 4, 8)]
    return out


def cuda_entry(stream: Stream) -> str:
    """The entry of `ceilings.ptx` for a variant: `wb_<what>_w<width>_u<unroll>`."""
    return f"wb_{stream.what}_w{stream.width}_u{stream.unroll}"


def cuda_ptx() -> str:
    """The CUDA ceiling kernels (`resources/ceilings/ceilings.ptx`, generated from `ceilings.cu`)."""
    from workbench.project import examples_dir

    return (Path(examples_dir()).parent / "ceilings" / "ceilings.ptx").read_text(encoding="utf-8")


def wgpu_streams(gpu_like: bool) -> list[Stream]:
    """wgpu variants: scalar and vec4 accesses one per invocation, and vec4 grid-stride with 4 in
    flight (4,096 workgroups on a GPU; 64 on a CPU adapter such as llvmpipe, where each variant
    costs real seconds). On a GPU also the reduction example's own shape, vec4 grid-stride with 2
    in flight over 2,048 workgroups, added when its WGSL read 108 % of the best of the others on an
    H100 (3,087 against 2,857 GB/s). Run on an H100 (2026-12-06) it did not win either: the
    probes' 64 MiB buffers were the cause (`ceilings_probes._wgpu_probes` sizes them now)."""
    groups = 4096 if gpu_like else 64
    out = []
    for what in STREAMS:
        out += [Stream(what, 4, 1, True), Stream(what, 16, 1, True), Stream(what, 16, 4, False, groups)]
        if gpu_like:
            out += [
                Stream(what, 8, 1, True),
                Stream(what, 16, 4, False, groups * 4),
                Stream(what, 16, 2, False, groups // 2),
            ]
    return out


_WGSL_TYPE = {4: "f32", 8: "vec2<f32>", 16: "vec4<f32>"}
_WGSL_SUM = {4: "v", 8: "v.x + v.y", 16: "v.x + v.y + v.z + v.w"}


def wgsl_stream(stream: Stream) -> str:
    """The WGSL of a stream variant: entry `wb_stream`; `src` at binding 0 and `dst` at 1 (a write
    or update stream has `dst` alone, at 0; a read stream's `dst` is one f32, stored only when the
    sum is a value the zero-filled input never gives). Grid-stride variants take the invocation
    count from `num_workgroups`."""
    ty = _WGSL_TYPE[stream.width]
    dst_ty = "f32" if stream.what == "read" else ty
    one = f"{ty}(1.0)" if stream.width != 4 else "1.0"
    body_of = {
        "copy": "dst[j] = src[j];",
        "read": f"let v = src[j]; acc = acc + {_WGSL_SUM[stream.width]};",
        "write": f"dst[j] = {one};",
        "update": f"dst[j] = dst[j] * 0.5 + {one};",  # in place: the line read is the one written
    }
    alone = stream.what in ("write", "update")
    n = "arrayLength(&dst)" if alone else "arrayLength(&src)"
    if alone:  # no source: `dst` alone, at binding 0
        buffers = [f"@group(0) @binding(0) var<storage, read_write> dst: array<{ty}>;"]
    else:
        buffers = [
            f"@group(0) @binding(0) var<storage, read> src: array<{ty}>;",
            f"@group(0) @binding(1) var<storage, read_write> dst: array<{dst_ty}>;",
        ]
    lines = [
        *buffers,
        "",
        "@compute @workgroup_size(256)",
        "fn wb_stream(@builtin(global_invocation_id) gid: vec3<u32>,"
        " @builtin(num_workgroups) groups: vec3<u32>) {",
        f"    let n = {n};",
        "    let first = gid.x + gid.y * groups.x * 256u;",
        "    var acc = 0.0;",
    ]
    if stream.per_access:
        lines += ["    let j = first;", f"    if (j < n) {{ {body_of[stream.what]} }}"]
    else:
        lines += [
            "    let stride = groups.x * groups.y * 256u;",
            f"    for (var i = first; i < n; i = i + stride * {stream.unroll}u) {{",
        ]
        for u in range(stream.unroll):
            lines.append(f"        {{ let j = i + stride * {u}u; if (j < n) {{ {body_of[stream.what]} }} }}")
        lines.append("    }")
    if stream.what == "read":
        lines.append("    if (acc == 12345.0) { dst[0] = acc; }")
    else:
        lines.append("    _ = acc;")
    lines.append("}")
    return "\n".join(lines) + "\n"
