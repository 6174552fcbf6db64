//! A blank kernel: x = 2 * x + 1, element by element. Replace `blank_at` with your computation
//! (and the references in reference/ with the same one).
//!
//! The logic is written once (`blank_at`); thin entry points wrap it for each backend.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx))]

/// One element of the computation, shared by every backend.
#[inline(always)]
pub fn blank_at(i: usize, n: u32, x: &mut [f32]) {
    if i < n as usize && i < x.len() {
        x[i] = 2.0 * x[i] + 1.0;
    }
}

// ---------------------------------------------------------------- cpu: the whole grid, in order
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn blank_cpu(n: u32, x: *mut f32) {
    if n == 0 {
        return;
    }
    let x = unsafe { core::slice::from_raw_parts_mut(x, n as usize) };
    for i in 0..n as usize {
        blank_at(i, n, x);
    }
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn blank(n: u32, x: *mut f32) {
    use core::arch::nvptx::*;
    let i = unsafe { _block_idx_x() * _block_dim_x() + _thread_idx_x() } as usize;
    if i < n as usize {
        let x = unsafe { core::slice::from_raw_parts_mut(x, n as usize) };
        blank_at(i, n, x);
    }
}

#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe { core::arch::nvptx::trap() }
}

// ---------------------------------------------------------------- rust-gpu: SPIR-V via cargo-gpu
#[cfg(target_arch = "spirv")]
pub mod spirv_entry {
    use spirv_std::glam::UVec3;
    use spirv_std::spirv;

    #[repr(C)]
    pub struct Params {
        pub n: u32,
    }

    /// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large
    /// grids on wgpu"): the linear workgroup comes from `num_workgroups`.
    #[spirv(compute(threads(256)))]
    pub fn blank_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] x: &mut [f32],
    ) {
        let group = wid.x + groups.x * (wid.y + groups.y * wid.z);
        super::blank_at((group * 256 + lid.x) as usize, params.n, x);
    }
}

// ---------------------------------------------------------------- rust-cuda: rustc_codegen_nvvm
#[cfg(all(target_os = "cuda", feature = "rust-cuda"))]
pub mod rust_cuda_entry {
    use cuda_std::prelude::*;

    // A raw pointer, not a slice: Rust-CUDA passes a slice as two parameters (pointer, length),
    // and the runners pass one device pointer per buffer.
    #[kernel]
    pub unsafe fn blank(n: u32, x: *mut f32) {
        let i = (thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x()) as usize;
        if i < n as usize {
            let x = unsafe { core::slice::from_raw_parts_mut(x, n as usize) };
            super::blank_at(i, n, x);
        }
    }
}
