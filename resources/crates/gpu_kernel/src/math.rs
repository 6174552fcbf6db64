//! Functions a kernel body calls that `core` lacks on the GPU targets (no libm there): the same
//! name on every target, each target's own implementation.
//!
//! | function | host (`cpu`, `cpu-sim`) | rust-gpu | nvptx, Rust-CUDA |
//! |---|---|---|---|
//! | [`exp`] | `f32::exp` (the C library's `expf`) | GLSL.std.450 `Exp` | [`exp_nvptx`]: CUDA's `expf`, `ex2.approx` after an fma reduction |
//!
//! The results differ in the last bits between targets (CUDA's `expf` is within 2 ULP, WGSL's
//! and Vulkan's `exp` within 3 + 2·|x| ULP): a check of a kernel using them needs `max_ulp`.
//! [`exp_portable`] (no hardware instruction, within 1 ULP, the same bits on every target) is
//! kept for a kernel that wants those bits.

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

/// `e^x` on NVPTX: CUDA's `expf` (libdevice's `__nv_expf`, no `--use_fast_math`) instruction for
/// instruction, [`exp_ex2_scheme`] with the hardware's `ex2.approx.ftz.f32` (the SFU's `MUFU.EX2`).
/// No branch: an earlier form here tested NaN, overflow and underflow first, and those three
/// branches in a loop body kept ptxas from unrolling softmax's sum loop (one load in flight per
/// invocation instead of nvcc's four; nvptx/cuda-c 1.22 on the H200,
/// benchmarks/results/h200-2026-12-02/parity.md). The saturation below does their work.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn exp_nvptx(x: f32) -> f32 {
    exp_ex2_scheme(x, |f| {
        let e: f32;
        unsafe {
            core::arch::asm!("ex2.approx.ftz.f32 {e}, {f};", e = out(reg32) e, f = in(reg32) f,
                             options(pure, nomem, nostack, preserves_flags));
        }
        e
    })
}

/// The arithmetic of CUDA's `expf` around its `2^f` (`ex2`), with nvcc 13's constants for sm_90
/// (reference/softmax.cu's PTX in the softmax example): t = x·log2(e)/252 + 1/2 saturated to
/// [0, 1]; k = ⌊252·t⌋ + 1 lands in the low mantissa bits of j = 1.5·2^23 + 1 + ⌊252·t⌋ (one
/// `fma.rm`), so n = k − 127 = ⌊x·log2 e⌋ clamped to [−126, 126] and `j << 23` is 2^n itself;
/// f = x·log2(e) − n by two fused multiply-adds (log2 e split in two); e^x = 2^f · 2^n. The clamp
/// is the range check: below −126·ln 2 the large negative f makes `ex2` flush to 0, above
/// 126·ln 2 a large f overflows to ∞, and a NaN x stays NaN through f. Generic in `ex2` so that
/// `tests/build/test_kernel_api_math.py` measures the reduction on the host with an exact `exp2`.
#[cfg(not(target_arch = "spirv"))]
#[inline(always)]
pub fn exp_ex2_scheme(x: f32, ex2: impl Fn(f32) -> f32) -> f32 {
    const LOG2_E_OVER_252: f32 = f32::from_bits(0x3BBB_989D);
    const LOG2_E_LO: f32 = f32::from_bits(0x32A5_7060); // log2(e) − LOG2_E, about 1.93e-8
    const J_BIAS: f32 = 12_582_913.0; // 1.5·2^23 + 1
    const N_BIAS: f32 = 12_583_039.0; // 1.5·2^23 + 127
    let t = saturate(fma_rn(x, LOG2_E_OVER_252, 0.5));
    let j = fma_rm(t, 252.0, J_BIAS);
    // −n = 127 − k, exact (both on the integer grid of [2^23, 2^24)); as a subtraction, not
    // `-(j - N_BIAS)`: rustc's NVPTX lowers that `-` to an integer `xor` of the sign bit, which
    // ptxas does not fold into the fma (nvcc's `neg.f32` it does).
    let minus_n = N_BIAS - j;
    let f = fma_rn(x, core::f32::consts::LOG2_E, minus_n);
    let f = fma_rn(x, LOG2_E_LO, f);
    ex2(f) * f32::from_bits(j.to_bits() << 23)
}

/// a·b + c rounded once, to nearest.
#[cfg(not(target_arch = "spirv"))]
#[inline(always)]
fn fma_rn(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return {
        let d: f32;
        unsafe {
            core::arch::asm!("fma.rn.f32 {d}, {a}, {b}, {c};", d = out(reg32) d, a = in(reg32) a, b = in(reg32) b,
                             c = in(reg32) c, options(pure, nomem, nostack, preserves_flags));
        }
        d
    };
    #[cfg(not(target_arch = "nvptx64"))]
    return a.mul_add(b, c);
}

/// a·b + c rounded once, towards −∞. The host's form is exact only where [`exp_ex2_scheme`]
/// uses it: a·b and a·b + c exact in f64 (24-bit a, 8-bit b, c < 2^24) and the result on the
/// integer grid of [2^23, 2^24), where rounding towards −∞ is `floor`.
#[cfg(not(target_arch = "spirv"))]
#[inline(always)]
fn fma_rm(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return {
        let d: f32;
        unsafe {
            core::arch::asm!("fma.rm.f32 {d}, {a}, {b}, {c};", d = out(reg32) d, a = in(reg32) a, b = in(reg32) b,
                             c = in(reg32) c, options(pure, nomem, nostack, preserves_flags));
        }
        d
    };
    #[cfg(not(target_arch = "nvptx64"))]
    return (a as f64 * b as f64 + c as f64).floor() as f32;
}

/// x clamped to [0, 1], NaN to 0 (PTX's `cvt.sat.f32.f32`).
#[cfg(not(target_arch = "spirv"))]
#[inline(always)]
fn saturate(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return {
        let d: f32;
        unsafe {
            core::arch::asm!("cvt.sat.f32.f32 {d}, {x};", d = out(reg32) d, x = in(reg32) x,
                             options(pure, nomem, nostack, preserves_flags));
        }
        d
    };
    #[cfg(not(target_arch = "nvptx64"))]
    return if x > 0.0 { if x < 1.0 { x } else { 1.0 } } else { 0.0 };
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
    if x.is_nan() {
        return x;
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
