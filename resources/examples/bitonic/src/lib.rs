//! Bitonic sort, one compare-and-swap step on u32 keys: the kernel of the "Rust on every GPU"
//! demo (LegNeato/rust-gpu-chimera). A full sort of n = 2^p keys runs this step for every stage
//! k = 2, 4, …, n and, inside each stage, every stride j = k/2, k/4, …, 1.
//!
//! The logic is written once (`bitonic_step`); thin entry points wrap it for each backend.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx))]

/// Thread `i` of one step (stride `j`, stage `k`), shared by every backend: it owns the pair
/// (i, i ^ j) when i ^ j > i, and orders it ascending when `i & k == 0`, descending otherwise.
/// Each pair has one owner, so the threads of a step can run in any order.
#[inline(always)]
pub fn bitonic_step(i: usize, n: u32, j: u32, k: u32, data: &mut [u32]) {
    let n = n as usize;
    let l = i ^ j as usize;
    if i < n && l > i && l < n && l < data.len() {
        let (a, b) = (data[i], data[l]);
        let ascending = (i & k as usize) == 0;
        if (ascending && a > b) || (!ascending && a < b) {
            data[i] = b;
            data[l] = a;
        }
    }
}

// ---------------------------------------------------------------- cpu: the whole grid, in order
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bitonic_cpu(n: u32, j: u32, k: u32, data: *mut u32) {
    if n == 0 {
        return;
    }
    let data = unsafe { core::slice::from_raw_parts_mut(data, n as usize) };
    for i in 0..n as usize {
        bitonic_step(i, n, j, k, data);
    }
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn bitonic(n: u32, j: u32, k: u32, data: *mut u32) {
    use core::arch::nvptx::*;
    let i = unsafe { _block_idx_x() * _block_dim_x() + _thread_idx_x() } as usize;
    if i < n as usize {
        let data = unsafe { core::slice::from_raw_parts_mut(data, n as usize) };
        bitonic_step(i, n, j, k, data);
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
        pub j: u32,
        pub k: u32,
    }

    /// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large
    /// grids on wgpu"): the linear workgroup comes from `num_workgroups`.
    #[spirv(compute(threads(256)))]
    pub fn bitonic_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] data: &mut [u32],
    ) {
        let group = wid.x + groups.x * (wid.y + groups.y * wid.z);
        let i = (group * 256 + lid.x) as usize;
        super::bitonic_step(i, params.n, params.j, params.k, data);
    }
}

// ---------------------------------------------------------------- rust-cuda: rustc_codegen_nvvm
#[cfg(all(target_os = "cuda", feature = "rust-cuda"))]
pub mod rust_cuda_entry {
    use cuda_std::prelude::*;

    // A raw pointer, not a slice: Rust-CUDA passes a slice as two parameters (pointer, length),
    // and the runners pass one device pointer per buffer.
    #[kernel]
    pub unsafe fn bitonic(n: u32, j: u32, k: u32, data: *mut u32) {
        let i = (thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x()) as usize;
        if i < n as usize {
            let data = unsafe { core::slice::from_raw_parts_mut(data, n as usize) };
            super::bitonic_step(i, n, j, k, data);
        }
    }
}
