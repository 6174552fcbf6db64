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
    return exp_portable(x);
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
