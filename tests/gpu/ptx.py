"""Hand-written PTX for the gpu suite: loaded by the driver's JIT, so no compiler is needed on the
GPU host. Each kernel has saxpy's signature (u32 n, f32 a, f32* x, f32* y), so one manifest (the
saxpy example's) launches all of them."""

HEADER = ".version 7.0\n.target sm_52\n.address_size 64\n"
PARAMS = "(.param .u32 n, .param .f32 a, .param .u64 x, .param .u64 y)"

#: y[i] = a * x[i] + y[i] for i < n, one fused multiply-add (as nvcc compiles the example).
SAXPY = (
    HEADER
    + f""".visible .entry saxpy{PARAMS}
{{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    ld.param.f32 %f1, [a];
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd3, %rd5;
    add.s64 %rd7, %rd4, %rd5;
    ld.global.f32 %f2, [%rd6];
    ld.global.f32 %f3, [%rd7];
    fma.rn.f32 %f3, %f1, %f2, %f3;
    st.global.f32 [%rd7], %f3;
DONE:
    ret;
}}
"""
)

#: Writes through a null pointer: CUDA_ERROR_ILLEGAL_ADDRESS, which poisons the context.
ILLEGAL_ADDRESS = (
    HEADER
    + f""".visible .entry saxpy{PARAMS}
{{
    .reg .b64 %rd<2>;
    .reg .f32 %f<2>;
    mov.u64 %rd1, 0;
    mov.f32 %f1, 0f3F800000;
    st.global.f32 [%rd1], %f1;
    ret;
}}
"""
)

#: Spins until x[0]'s bits read 0x7fc00001 (a NaN the inputs never hold): never returns.
ENDLESS = (
    HEADER
    + f""".visible .entry saxpy{PARAMS}
{{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [x];
    cvta.to.global.u64 %rd2, %rd1;
SPIN:
    ld.volatile.global.u32 %r1, [%rd2];
    setp.ne.u32 %p1, %r1, 2143289345;
    @%p1 bra SPIN;
    ret;
}}
"""
)
