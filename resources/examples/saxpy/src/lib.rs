//! SAXPY: y = a * x + y. Memory-bound: 12 bytes moved and 2 flops per element.
//!
//! The logic is written once (`saxpy_at`); thin entry points wrap it for each backend.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx))]

/// A tunable's value at compile time: the workbench sets `WB_TUNABLE_<NAME>` for each
/// configuration it builds (docs/manifest.md, "Tunables"); a plain `cargo build` gets `default`.
/// Only the nvptx entries read tunables here (cfg: the other targets never see the parser).
#[cfg(target_arch = "nvptx64")]
const fn tunable(value: Option<&str>, default: usize) -> usize {
    let digits = match value {
        Some(text) => text.as_bytes(),
        None => return default,
    };
    assert!(!digits.is_empty(), "a tunable must be a whole number");
    let mut out = 0usize;
    let mut i = 0;
    while i < digits.len() {
        assert!(digits[i].is_ascii_digit(), "a tunable must be a whole number");
        out = out * 10 + (digits[i] - b'0') as usize;
        i += 1;
    }
    out
}

/// Threads per block (`[kernel.tunables] threads`): the nvptx entry indexes with it (a constant in
/// the PTX, where `blockDim.x` is a register read). The cpu build never reads it, and says so.
#[cfg(target_arch = "nvptx64")]
pub const THREADS: usize = tunable(option_env!("WB_TUNABLE_THREADS"), 256);

/// One element of the computation, shared by every backend.
#[inline(always)]
pub fn saxpy_at(i: usize, n: u32, a: f32, x: &[f32], y: &mut [f32]) {
    if i < n as usize {
        y[i] = a * x[i] + y[i];
    }
}

// ---------------------------------------------------------------- cpu: the whole grid, in order
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn saxpy_cpu(n: u32, a: f32, x: *const f32, y: *mut f32) {
    let x = unsafe { core::slice::from_raw_parts(x, n as usize) };
    let y = unsafe { core::slice::from_raw_parts_mut(y, n as usize) };
    for i in 0..n as usize {
        saxpy_at(i, n, a, x, y);
    }
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn saxpy(n: u32, a: f32, x: *const f32, y: *mut f32) {
    use core::arch::nvptx::*;
    // The launch's threads per block are THREADS (the manifest's threads = ["threads"]).
    let i = unsafe { _block_idx_x() as usize * THREADS + _thread_idx_x() as usize };
    if i < n as usize {
        // Slices of length n: indexing stays bounds-checked like the other backends.
        let x = unsafe { core::slice::from_raw_parts(x, n as usize) };
        let y = unsafe { core::slice::from_raw_parts_mut(y, n as usize) };
        saxpy_at(i, n, a, x, y);
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
        pub a: f32,
    }

    /// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large
    /// grids on wgpu"): the linear workgroup comes from `num_workgroups`.
    #[spirv(compute(threads(256)))]
    pub fn saxpy_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] x: &[f32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] y: &mut [f32],
    ) {
        let group = wid.x + groups.x * (wid.y + groups.y * wid.z);
        super::saxpy_at((group * 256 + lid.x) as usize, params.n, params.a, x, y);
    }
}

// ---------------------------------------------------------------- rust-cuda: rustc_codegen_nvvm
#[cfg(all(target_os = "cuda", feature = "rust-cuda"))]
pub mod rust_cuda_entry {
    use cuda_std::prelude::*;

    // Raw pointers, not slices: Rust-CUDA passes a slice as (pointer, length), which would not
    // match the manifest's launch order.
    #[kernel]
    pub unsafe fn saxpy(n: u32, a: f32, x: *const f32, y: *mut f32) {
        let i = thread::index_1d() as usize;
        if i < n as usize {
            let x = unsafe { core::slice::from_raw_parts(x, n as usize) };
            let y = unsafe { core::slice::from_raw_parts_mut(y, n as usize) };
            super::saxpy_at(i, n, a, x, y);
        }
    }
}
