//! Functions a kernel body calls that `core` lacks on the GPU targets (no libm there): the same
//! name on every target, each target's own implementation.
//!
//! | function | host (`cpu`, `cpu-sim`) | rust-gpu | nvptx, Rust-CUDA |
//! |---|---|---|---|
//! | [`exp`] | `f32::exp` (the C library's `expf`) | GLSL.std.450 `Exp` | [`exp_portable`]: `+`, `*` and bit operations only |
//!
//! The results differ in the last bits between targets (CUDA's `expf` is within 2 ULP, WGSL's
//! and Vulkan's `exp` within 3 + 2·|x| ULP): a check of a kernel using them needs `max_ulp`.

/// `e^x` in f32.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
    return x.exp();
    #[cfg(target_arch = "spirv")]
    return {
        use spirv_std::num_traits::Float;
        x.exp()
    };
    #[cfg(target_arch = "nvptx64")]
    return exp_nvptx(x);
}

/// `e^x` on NVPTX as CUDA's `expf` computes it (no `--use_fast_math`): x = j·ln 2 + f with j
/// rounded by the 1.5·2^23 trick and f reduced by two fused multiply-adds (Cody–Waite), e^f =
/// 2^(f·log2 e) by the hardware's `ex2.approx` (|f·log2 e| ≤ 1/2: about 2 ULP there), times 2^j
/// in two factors. `exp_portable`'s degree-8 polynomial costs 1.49× cuda-c's softmax on the H200
/// (benchmarks/results/h200-2026-12-02/parity.md); this is the SFU's one instruction.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn exp_nvptx(x: f32) -> f32 {
    const LOG2_E: f32 = core::f32::consts::LOG2_E;
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2^23: adding it rounds to an integer
    if x != x {
        return x; // NaN
    }
    if x > 88.722_84 {
        return f32::INFINITY;
    }
    if x < -103.972_08 {
        return 0.0;
    }
    let j = fma(x, LOG2_E, ROUND) - ROUND;
    let f = fma(j, -0.693_145_75, x);
    let f = fma(j, -1.428_606_8e-6, f);
    let e: f32;
    unsafe {
        core::arch::asm!("ex2.approx.ftz.f32 {e}, {a};", e = out(reg32) e, a = in(reg32) f * LOG2_E,
                         options(pure, nomem, nostack, preserves_flags));
    }
    let n = j as i32;
    let half = n / 2;
    let scale = |k: i32| f32::from_bits(((k + 127) as u32) << 23);
    e * scale(half) * scale(n - half)
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn fma(a: f32, b: f32, c: f32) -> f32 {
    let d: f32;
    unsafe {
        core::arch::asm!("fma.rn.f32 {d}, {a}, {b}, {c};", d = out(reg32) d, a = in(reg32) a, b = in(reg32) b,
                         c = in(reg32) c, options(pure, nomem, nostack, preserves_flags));
    }
    d
}

/// `e^x` without a math library, within about 2 ULP of the correctly rounded value: x = n·ln 2 + r
/// with |r| ≤ ln 2 / 2 (Cody–Waite: ln 2 split in two so that n·LN2_HI is exact), e^r by its
/// Taylor series to r^8 (Horner), times 2^n built in the exponent bits. Rust never fuses a
/// multiply and an add, so every target that runs this gives the same bits.
#[inline(always)]
pub fn exp_portable(x: f32) -> f32 {
    const LOG2_E: f32 = core::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75; // ln 2 with its low 12 bits zero: n · LN2_HI is exact for |n| < 2^12
    const LN2_LO: f32 = 1.428_606_8e-6; // ln 2 - LN2_HI
    if x != x {
        return x; // NaN
    }
    if x > 88.722_84 {
        return f32::INFINITY;
    }
    if x < -103.972_08 {
        return 0.0;
    }
    let t = x * LOG2_E;
    let n = if t >= 0.0 { (t + 0.5) as i32 } else { (t - 0.5) as i32 };
    let nf = n as f32;
    let r = (x - nf * LN2_HI) - nf * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (1.0 / 2.0
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0 + r * (1.0 / 40320.0))))))));
    // 2^n in two factors, so n below -126 (a subnormal result) or up to 128 stays representable.
    let half = n / 2;
    let scale = |k: i32| f32::from_bits(((k + 127) as u32) << 23);
    p * scale(half) * scale(n - half)
}
