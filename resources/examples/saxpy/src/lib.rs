//! SAXPY: y = a * x + y. Memory-bound: 12 bytes moved and 2 flops per element.
//!
//! One kernel body (`saxpy_body`), written with the workbench's kernel API (`gpu_kernel`); thin
//! entry points make its handles on each backend. Two forms, chosen by the tunable `vector`: 1
//! (the default) is the plain form, one element and 4-byte accesses per invocation, the one to
//! read first; 4 moves 16 bytes per access, four elements per invocation (`get4` / `set4`:
//! `ld.global.v4.f32` on nvptx), with a scalar tail for the last n % 4.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx))]

use gpu_kernel::prelude::*;

/// Threads per block (`[kernel.tunables] threads`): the nvptx entry indexes with it (a constant in
/// the PTX, where `blockDim.x` is a register read). The host builds take the launch's own group
/// size and never read it, and say so.
#[cfg(target_arch = "nvptx64")]
pub const THREADS: usize = tunable(option_env!("WB_TUNABLE_THREADS"), 256);

/// Elements per invocation (`[kernel.tunables] vector`): 1 or 4 (16-byte accesses). Every entry
/// reads it, the host's too: the launch's grid (`ceil_div(n, threads * vector)`) follows it.
pub const VECTOR: usize = tunable(option_env!("WB_TUNABLE_VECTOR"), 1);
const _: () = assert!(VECTOR == 1 || VECTOR == 4, "vector is 1 or 4");

/// The kernel: invocation `i` (`block` invocations per workgroup, the linear workgroup first, so
/// a grid wgpu folds into 2-D/3-D keeps its order) computes element i (`vector` 1), or elements
/// 4i .. 4i + 4 in 16-byte accesses (`vector` 4), the last invocation the 1 to 3 left over one by
/// one.
#[inline(always)]
#[allow(clippy::assign_op_pattern)] // the SAXPY line as its references (saxpy.cu, saxpy.wgsl) write it
pub fn saxpy_body(
    ctx: Ctx,
    block: usize,
    vector: usize,
    n: u32,
    a: f32,
    x: In<f32>,
    mut y: Out<f32>,
) {
    let i = ctx.group_linear() * block + ctx.local_id_x();
    let n = n as usize;
    if vector == 4 {
        let first = 4 * i;
        if first + 4 <= n {
            let (xv, yv) = (x.get4(first), y.get4(first));
            y.set4(
                first,
                [
                    a * xv[0] + yv[0],
                    a * xv[1] + yv[1],
                    a * xv[2] + yv[2],
                    a * xv[3] + yv[3],
                ],
            );
        } else {
            let mut j = first; // the scalar tail: n % 4 elements, one invocation
            while j < n {
                y[j] = a * x[j] + y[j];
                j += 1;
            }
        }
    } else if i < n {
        y[i] = a * x[i] + y[i];
    }
}

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
/// # Safety
/// `launch` is the runtime's launch record and each pointer the buffer of that name, as the
/// workbench's cpu runtime passes them, valid for the call.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn saxpy_cpu(
    launch: *mut gpu_kernel::host::Launch,
    n: u32,
    a: f32,
    x: *const f32,
    y: *mut f32,
) {
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (x, y) = unsafe { (k.input(0, x), k.output(1, y)) };
    // `sim_inline!`: cpu-sim's invocation loop inlines the closure, checks and all (docs/cpu-sim.md).
    let body =
        gpu_kernel::sim_inline!(move |ctx| saxpy_body(ctx, ctx.group_size_x(), VECTOR, n, a, x, y));
    k.run(body);
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn saxpy(n: u32, a: f32, x: *const f32, y: *mut f32) {
    // The launch's threads per block are THREADS (the manifest's threads = ["threads"]): a
    // constant in the PTX, where `blockDim.x` is a register read.
    unsafe { saxpy_body(Ctx::new(), THREADS, VECTOR, n, a, In::new(x), Out::new(y)) }
}

#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe { core::arch::nvptx::trap() }
}

// ---------------------------------------------------------------- rust-gpu: SPIR-V via cargo-gpu
#[cfg(target_arch = "spirv")]
pub mod spirv_entry {
    use gpu_kernel::prelude::*;
    use spirv_std::glam::UVec3;
    use spirv_std::spirv;

    #[repr(C)]
    pub struct Params {
        pub n: u32,
        pub a: f32,
    }

    /// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large
    /// grids on wgpu"): the linear workgroup comes from `num_workgroups`. The buffers are f32
    /// slices, so `vector` 4 makes four 4-byte accesses here (gpu_kernel's spirv `get4`; the
    /// WGSL reference reads the manifest's vec4 `views` of them instead).
    #[spirv(compute(threads(256)))]
    pub fn saxpy_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] x: &[f32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] y: &mut [f32],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(256, 1, 1));
        super::saxpy_body(
            ctx,
            256,
            super::VECTOR,
            params.n,
            params.a,
            In::new(x),
            Out::new(y),
        );
    }
}

// ---------------------------------------------------------------- rust-cuda: rustc_codegen_nvvm
#[cfg(all(target_os = "cuda", feature = "rust-cuda"))]
pub mod rust_cuda_entry {
    use cuda_std::prelude::*;
    use gpu_kernel::prelude::*;

    // Raw pointers, not slices: Rust-CUDA passes a slice as (pointer, length), which would not
    // match the manifest's launch order.
    #[kernel]
    pub unsafe fn saxpy(n: u32, a: f32, x: *const f32, y: *mut f32) {
        let ctx = unsafe { Ctx::new() };
        unsafe {
            super::saxpy_body(
                ctx,
                ctx.group_size_x(),
                super::VECTOR,
                n,
                a,
                In::new(x),
                Out::new(y),
            )
        }
    }
}
