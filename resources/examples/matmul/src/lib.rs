//! Matrix multiply: C = A · B, f32, row-major, A is m×k, B is k×n, C is m×n. Compute-bound:
//! 2·m·n·k flops over 4·(m·k + k·n + m·n) bytes. The GPU entries stage 16×16 tiles of A and B in
//! block-shared memory; each thread accumulates one element of C.
//!
//! The logic is written once (`matmul_acc`: the multiply-accumulate chain of one element of C);
//! thin entry points wrap it for each backend. Every backend runs the chain in the same order
//! (k ascending) with a fused multiply-add per step, as nvcc compiles the CUDA C++ reference.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]
#![cfg_attr(
    any(target_arch = "nvptx64", target_arch = "spirv"),
    feature(core_intrinsics),
    allow(internal_features)
)]

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

/// Tile edge (`[kernel.tunables] tile`): threads per block are TILE × TILE (the manifest's
/// `threads`). The rust-gpu entry keeps its own 16: its `threads(..)` attribute takes literals; the
/// cpu entry has no tiles.
#[cfg(target_arch = "nvptx64")]
pub const TILE: usize = tunable(option_env!("WB_TUNABLE_TILE"), 16);

/// `acc + Σ a(t)·b(t)` for t = 0, 1, …, len-1 in that order, shared by every backend: `a(t)` is
/// element t of a stretch of a row of A, `b(t)` the matching element of a column of B. The cpu
/// entry reads A and B directly, the GPU entries read their shared-memory tiles.
#[inline(always)]
pub fn matmul_acc<A: Fn(usize) -> f32, B: Fn(usize) -> f32>(
    mut acc: f32,
    len: usize,
    a: A,
    b: B,
) -> f32 {
    let mut t = 0;
    while t < len {
        acc = fused_multiply_add(a(t), b(t), acc);
        t += 1;
    }
    acc
}

/// `a·b + c` rounded once (IEEE fusedMultiplyAdd), on every backend: nvcc contracts
/// `acc += a * b` into `fma.rn.f32` by default, rustc never contracts, so the shared logic asks for
/// the fused operation itself. With it every backend rounds each step of the chain identically.
/// `f32::mul_add` lives in `std`; the no_std GPU targets take the intrinsic it is built on
/// (`llvm.fma.f32` → `fma.rn.f32` on NVPTX, GLSL.std.450 `Fma` in rust-gpu).
#[inline(always)]
pub fn fused_multiply_add(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(any(target_arch = "nvptx64", target_arch = "spirv"))]
    #[allow(unused_unsafe)]
    return unsafe { core::intrinsics::fmaf32(a, b, c) };
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
    return a.mul_add(b, c);
}

// ---------------------------------------------------------------- cpu: the whole grid, in order
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn matmul_cpu(
    m: u32,
    n: u32,
    k: u32,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    if m == 0 || n == 0 {
        return;
    }
    let a = unsafe { core::slice::from_raw_parts(a, m * k) };
    let b = unsafe { core::slice::from_raw_parts(b, k * n) };
    let c = unsafe { core::slice::from_raw_parts_mut(c, m * n) };
    for row in 0..m {
        for col in 0..n {
            c[row * n + col] = matmul_acc(0.0, k, |t| a[row * k + t], |t| b[t * n + col]);
        }
    }
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn matmul(
    m: u32,
    n: u32,
    k: u32,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
) {
    use core::arch::nvptx::*;
    // Two TILE×TILE f32 tiles of block-shared memory: no Rust API on this target, so declared in
    // PTX, once, and addressed by their 32-bit offset in the shared window (`mov.u32`, as nvcc does).
    let tiles: u32;
    unsafe {
        core::arch::asm!(
            ".shared .align 16 .b8 MATMUL_TILES[{bytes}];",
            "mov.u32 {p}, MATMUL_TILES;",
            bytes = const 2 * 4 * TILE * TILE,
            p = out(reg32) tiles,
        );
    }
    let (tx, ty) = unsafe { (_thread_idx_x() as usize, _thread_idx_y() as usize) };
    let row = unsafe { _block_idx_y() } as usize * TILE + ty;
    let col = unsafe { _block_idx_x() } as usize * TILE + tx;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let a = unsafe { core::slice::from_raw_parts(a, m * k) };
    let b = unsafe { core::slice::from_raw_parts(b, k * n) };
    let c = unsafe { core::slice::from_raw_parts_mut(c, m * n) };
    // Threads beyond TILE × TILE (a wider launch) only join the barriers. `get` keeps bounds
    // checks without a panic path, which rustc's NVPTX output cannot link.
    let in_tile = tx < TILE && ty < TILE;
    // Byte addresses of tile elements: A's tile first, B's after it.
    let a_at = |i: usize| tiles + 4 * i as u32;
    let b_at = |i: usize| tiles + 4 * (TILE * TILE + i) as u32;
    let mut acc = 0.0f32;
    let mut k0 = 0;
    while k0 < k {
        if in_tile {
            let (ka, kb) = (k0 + tx, k0 + ty);
            let va = if row < m && ka < k {
                a.get(row * k + ka)
            } else {
                None
            };
            let vb = if kb < k && col < n {
                b.get(kb * n + col)
            } else {
                None
            };
            unsafe {
                shared::store(a_at(ty * TILE + tx), va.copied().unwrap_or(0.0));
                shared::store(b_at(ty * TILE + tx), vb.copied().unwrap_or(0.0));
            }
        }
        unsafe { _syncthreads() };
        if in_tile {
            acc = matmul_acc(
                acc,
                TILE,
                |t| unsafe { shared::load(a_at(ty * TILE + t)) },
                |t| unsafe { shared::load(b_at(t * TILE + tx)) },
            );
        }
        unsafe { _syncthreads() };
        k0 += TILE;
    }
    if row < m && col < n {
        if let Some(out) = c.get_mut(row * n + col) {
            *out = acc;
        }
    }
}

/// Block-shared memory by its 32-bit shared-window address: `ld.shared` / `st.shared`, as nvcc
/// emits for `__shared__` arrays. rustc has no shared address space, so a Rust reference to the
/// tiles would load and store through 64-bit generic addresses (`ld.b32`), which cost an
/// address-space check per access and 64-bit index arithmetic.
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
mod shared {
    /// The f32 at `addr`. Reads memory only: the compiler may not move it across a barrier
    /// (`_syncthreads` writes memory as far as it knows).
    #[inline(always)]
    pub unsafe fn load(addr: u32) -> f32 {
        let value: f32;
        unsafe {
            core::arch::asm!(
                "ld.shared.f32 {v}, [{a}];",
                v = out(reg32) value,
                a = in(reg32) addr,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        value
    }

    /// Store `value` at `addr`.
    #[inline(always)]
    pub unsafe fn store(addr: u32, value: f32) {
        unsafe {
            core::arch::asm!(
                "st.shared.f32 [{a}], {v};",
                a = in(reg32) addr,
                v = in(reg32) value,
                options(nostack, preserves_flags),
            );
        }
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
        pub m: u32,
        pub n: u32,
        pub k: u32,
    }

    /// rust-gpu's `threads(..)` takes literals, so this entry keeps 16 × 16 tiles whatever the
    /// `tile` tunable says (its launch is `[kernel.launch.rust-gpu]`).
    const TILE: usize = 16;

    #[spirv(compute(threads(16, 16)))]
    pub fn matmul_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] a: &[f32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] b: &[f32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 3)] c: &mut [f32],
        #[spirv(workgroup)] a_tile: &mut [f32; TILE * TILE],
        #[spirv(workgroup)] b_tile: &mut [f32; TILE * TILE],
    ) {
        let (tx, ty) = (lid.x as usize, lid.y as usize);
        let row = wid.y as usize * TILE + ty;
        let col = wid.x as usize * TILE + tx;
        let (m, n, k) = (params.m as usize, params.n as usize, params.k as usize);
        let mut acc = 0.0f32;
        let mut k0 = 0;
        while k0 < k {
            let (ka, kb) = (k0 + tx, k0 + ty);
            a_tile[ty * TILE + tx] = if row < m && ka < k {
                a[row * k + ka]
            } else {
                0.0
            };
            b_tile[ty * TILE + tx] = if kb < k && col < n {
                b[kb * n + col]
            } else {
                0.0
            };
            unsafe { spirv_std::arch::workgroup_memory_barrier_with_group_sync() };
            acc = super::matmul_acc(
                acc,
                TILE,
                |t| a_tile[ty * TILE + t],
                |t| b_tile[t * TILE + tx],
            );
            unsafe { spirv_std::arch::workgroup_memory_barrier_with_group_sync() };
            k0 += TILE;
        }
        if row < m && col < n {
            c[row * n + col] = acc;
        }
    }
}

// ---------------------------------------------------------------- rust-cuda: rustc_codegen_nvvm
#[cfg(all(target_os = "cuda", feature = "rust-cuda"))]
pub mod rust_cuda_entry {
    use super::TILE;
    use cuda_std::prelude::*;
    // cuda_std 0.2's `shared_array!` names `MaybeUninit` unqualified (later versions import it).
    #[allow(unused_imports)]
    use core::mem::MaybeUninit;

    // Raw pointers, not slices: Rust-CUDA passes a slice as two parameters (pointer, length),
    // and the runners pass one device pointer per buffer.
    #[kernel]
    pub unsafe fn matmul(m: u32, n: u32, k: u32, a: *const f32, b: *const f32, c: *mut f32) {
        let a_shared = cuda_std::shared_array![f32; TILE * TILE];
        let b_shared = cuda_std::shared_array![f32; TILE * TILE];
        let (tx, ty) = (
            thread::thread_idx_x() as usize,
            thread::thread_idx_y() as usize,
        );
        let row = thread::block_idx_y() as usize * TILE + ty;
        let col = thread::block_idx_x() as usize * TILE + tx;
        let (m, n, k) = (m as usize, n as usize, k as usize);
        let a = unsafe { core::slice::from_raw_parts(a, m * k) };
        let b = unsafe { core::slice::from_raw_parts(b, k * n) };
        let c = unsafe { core::slice::from_raw_parts_mut(c, m * n) };
        let mut acc = 0.0f32;
        let mut k0 = 0;
        while k0 < k {
            let a_tile = unsafe { &mut *(a_shared as *mut [f32; TILE * TILE]) };
            let b_tile = unsafe { &mut *(b_shared as *mut [f32; TILE * TILE]) };
            let (ka, kb) = (k0 + tx, k0 + ty);
            a_tile[ty * TILE + tx] = if row < m && ka < k {
                a[row * k + ka]
            } else {
                0.0
            };
            b_tile[ty * TILE + tx] = if kb < k && col < n {
                b[kb * n + col]
            } else {
                0.0
            };
            thread::sync_threads();
            acc = super::matmul_acc(
                acc,
                TILE,
                |t| a_tile[ty * TILE + t],
                |t| b_tile[t * TILE + tx],
            );
            thread::sync_threads();
            k0 += TILE;
        }
        if row < m && col < n {
            c[row * n + col] = acc;
        }
    }
}
