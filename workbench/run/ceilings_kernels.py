"""The built-in kernels that measure device ceilings: a copy, a read stream and an FMA loop per
runtime.

Each kernel is plain text here (Rust for the cpu runtime, WGSL for wgpu, PTX for CUDA), written to
the cache and run through the same runtimes and worker processes as a user's kernel. The FLOP and
byte counts `ceilings.py` divides by are stated next to each kernel.
"""

from __future__ import annotations

import struct

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

#: The WGSL streams' variants, each measured, the best kept (a ceiling is the best the device
#: does): (bytes a load or store moves, invocations per workgroup). The widest access at two
#: workgroup sizes (occupancy), and the narrower accesses at the common size.
WGSL_STREAM_VARIANTS = ((16, 256), (16, 64), (8, 256), (4, 256))
_WGSL_TYPES = {4: "f32", 8: "vec2<f32>", 16: "vec4<f32>"}
_WGSL_SUMS = {4: "v", 8: "v.x + v.y", 16: "v.x + v.y + v.z + v.w"}


def wgsl_copy(width: int = 16, group: int = 256) -> str:
    """WGSL copy: one `width`-byte load and store per invocation; a 2-D grid when it needs more
    than 65535 workgroups in x."""
    t = _WGSL_TYPES[width]
    return f"""
@group(0) @binding(0) var<storage, read> src: array<{t}>;
@group(0) @binding(1) var<storage, read_write> dst: array<{t}>;

@compute @workgroup_size({group})
fn wb_copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    let i = gid.x + gid.y * groups.x * {group}u;
    if (i < arrayLength(&dst)) {{
        dst[i] = src[i];
    }}
}}
"""


def wgsl_read(width: int = 16, group: int = 256) -> str:
    """WGSL read stream: one `width`-byte load per invocation, stored only when the sum is a value
    the zero-filled input never gives (the load must happen; the store never does)."""
    t = _WGSL_TYPES[width]
    return f"""
@group(0) @binding(0) var<storage, read> src: array<{t}>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size({group})
fn wb_read(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    let i = gid.x + gid.y * groups.x * {group}u;
    if (i < arrayLength(&src)) {{
        let v = src[i];
        if ({_WGSL_SUMS[width]} == 12345.0) {{
            dst[0] = f32({"v" if width == 4 else "v.x"});
        }}
    }}
}}
"""


#: The 16-byte, 256-invocation forms (the widest access, the usual workgroup size).
WGSL_COPY = wgsl_copy()
WGSL_READ = wgsl_read()

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

#: PTX copy: one 16-byte load and store per thread.
PTX_COPY = (
    PTX_HEADER
    + """
.visible .entry wb_copy(.param .u64 src, .param .u64 dst, .param .u32 n4)
{
    .reg .pred %p;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<4>;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    ld.param.u32 %r1, [n4];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p, %r5, %r1;
    @%p bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r5, 16;
    add.s64 %rd6, %rd3, %rd5;
    add.s64 %rd7, %rd4, %rd5;
    ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd6];
    st.global.v4.f32 [%rd7], {%f0, %f1, %f2, %f3};
DONE:
    ret;
}
"""
)


#: PTX read stream: one 16-byte load per thread, stored only when the sum is a value the
#: zero-filled input never gives (the load must happen; the store never does).
PTX_READ = (
    PTX_HEADER
    + """
.visible .entry wb_read(.param .u64 src, .param .u64 dst, .param .u32 n4)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<6>;
    .reg .f32 %f<7>;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    ld.param.u32 %r1, [n4];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p0, %r5, %r1;
    @%p0 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    mul.wide.u32 %rd4, %r5, 16;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd5];
    add.f32 %f4, %f0, %f1;
    add.f32 %f5, %f2, %f3;
    add.f32 %f6, %f4, %f5;
    setp.neu.f32 %p1, %f6, 0f4640E400;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd2;
    st.global.f32 [%rd3], %f6;
DONE:
    ret;
}
"""
)


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
