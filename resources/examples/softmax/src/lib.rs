//! Softmax: `y[r][j] = exp(x[r][j] - max_r) / sum_k exp(x[r][k] - max_r)` for each row r of a
//! rows × cols f32 matrix, one workgroup per row. Three sweeps over the row: its maximum (a
//! workgroup max-reduction), the sum of the shifted exponentials (a sum-reduction), then the
//! quotients. Subtracting the row's maximum keeps every exponential in (0, 1]: no overflow, the
//! same result.
//!
//! One kernel body (`softmax_body`) on the workbench's kernel API; `exp` is
//! `gpu_kernel::math::exp`, each target's own (the C library's `expf` on the host, CUDA's `expf`
//! scheme on NVPTX, GLSL's `Exp` on rust-gpu; CUDA's `expf` and WGSL's `exp` in the references),
//! so the backends agree within a few ULP, not bit for bit: the manifest's check is ULP-based.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

use gpu_kernel::math::exp;
use gpu_kernel::prelude::*;

/// Invocations per workgroup (the manifest's `threads`): one workgroup per row.
pub const BLOCK: usize = 256;

/// The kernel: workgroup r softmaxes row r; invocation t handles columns t, t + 256, ...
#[inline(always)]
#[lanes]
pub fn softmax_body(
    ctx: Ctx,
    rows: u32,
    cols: u32,
    x: In<f32>,
    mut y: Out<f32>,
    mut red: Shared<f32, BLOCK>,
) {
    let t = ctx.local_id_x();
    let row = ctx.group_linear();
    let live = row < rows as usize && t < BLOCK; // spare workgroups of a folded grid, spare invocations
    let base = row * cols as usize;
    // The column index in 32 bits, the element's index in 64 (base + j), as reference/softmax.cu:
    // a 64-bit j costs a register pair per unrolled load on NVPTX.
    let first = t as u32;
    let step = BLOCK as u32;
    let mut max = f32::NEG_INFINITY;
    let mut j = first;
    while live && j < cols {
        let v = x.get(base + j as usize);
        if v > max {
            max = v;
        }
        j += step;
    }
    if t < BLOCK {
        red.set(t, max);
    }
    ctx.barrier();
    // The row's maximum into red[0]: a tree over strides 128, 64, ..., 1, a barrier after each
    // step; then every invocation reads it, and waits again before the next sweep writes red[t].
    // Written out in the body (twice), not a helper taking `&ctx`: `#[lanes]` splits the body at
    // the barriers it sees.
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if t < stride {
            let (a, b) = (red.get(t), red.get(t + stride));
            red.set(t, if b > a { b } else { a });
        }
        ctx.barrier();
        stride /= 2;
    }
    let max = red.get(0);
    ctx.barrier();
    let mut sum = 0.0;
    let mut j = first;
    while live && j < cols {
        sum += exp(x.get(base + j as usize) - max);
        j += step;
    }
    if t < BLOCK {
        red.set(t, sum);
    }
    ctx.barrier();
    // The sum, the same way.
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if t < stride {
            red.set(t, red.get(t) + red.get(t + stride));
        }
        ctx.barrier();
        stride /= 2;
    }
    let total = red.get(0);
    ctx.barrier();
    let mut j = first;
    while live && j < cols {
        y.set(
            base + j as usize,
            exp(x.get(base + j as usize) - max) / total,
        );
        j += step;
    }
}

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
/// # Safety
/// `launch` is the runtime's launch record and each pointer the buffer of that name, as the
/// workbench's cpu runtime passes them, valid for the call.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn softmax_cpu(
    launch: *mut gpu_kernel::host::Launch,
    rows: u32,
    cols: u32,
    x: *const f32,
    y: *mut f32,
) {
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (x, y) = unsafe { (k.input(0, x), k.output(1, y)) };
    k.run_lanes(
        move |ctx| {
            let red = ctx.shared::<f32, BLOCK>();
            softmax_body(ctx, rows, cols, x, y, red)
        },
        move |wg| {
            let red = wg.shared::<f32, BLOCK>();
            softmax_body_lanes(wg, rows, cols, x, y, red)
        },
    );
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn softmax(rows: u32, cols: u32, x: *const f32, y: *mut f32) {
    let red = gpu_kernel::nvptx_shared!(SOFTMAX_RED: [f32; BLOCK]);
    unsafe { softmax_body(Ctx::new(), rows, cols, In::new(x), Out::new(y), red) }
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
        pub rows: u32,
        pub cols: u32,
    }

    #[spirv(compute(threads(256)))]
    pub fn softmax_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] x: &[f32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] y: &mut [f32],
        #[spirv(workgroup)] red: &mut [f32; super::BLOCK],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(256, 1, 1));
        super::softmax_body(
            ctx,
            params.rows,
            params.cols,
            In::new(x),
            Out::new(y),
            Shared::new(red),
        );
    }
}

// ---------------------------------------------------------------- rust-cuda: rustc_codegen_nvvm
#[cfg(all(target_os = "cuda", feature = "rust-cuda"))]
pub mod rust_cuda_entry {
    use cuda_std::prelude::*;
    use gpu_kernel::prelude::*;
    // cuda_std 0.2's `shared_array!` names `MaybeUninit` unqualified (later versions import it).
    #[allow(unused_imports)]
    use core::mem::MaybeUninit;

    #[kernel]
    pub unsafe fn softmax(rows: u32, cols: u32, x: *const f32, y: *mut f32) {
        let red =
            unsafe { Shared::from_ptr(cuda_std::shared_array![f32; super::BLOCK] as *mut f32) };
        unsafe { super::softmax_body(Ctx::new(), rows, cols, In::new(x), Out::new(y), red) }
    }
}
