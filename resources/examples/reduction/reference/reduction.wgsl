// Hand-written WGSL block reduction, the same computation as src/lib.rs: each workgroup of 256
// invocations sums 512 consecutive elements into partial[workgroup], folding in the same order.
//
// The stride loop (128, 64, ..., 1) is written out, as nvcc unrolls reduction.cu's (9 BAR.SYNC,
// no loop in its SASS): naga, wgpu's WGSL compiler, gives every loop a 64-bit iteration counter
// (force_loop_bounding). On the H200 at n = 2^26 the loop (this file before 2026-12-01, kept as
// benchmarks/wgsl_variants/reduction/v0_loop.wgsl) took 0.217 ms, 1.34x the CUDA C++ reference's
// 0.161 ms; written out (variant R1 then) 0.152 ms (benchmarks/results/wgsl-spirv/README.md).
struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> partial: array<f32>;

var<workgroup> scratch: array<f32, 256>;

// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large grids on
// wgpu"): the block number is the linear workgroup, recovered from num_workgroups. Spare workgroups
// of a folded grid (block >= ceil(n / 512)) load zeros and write nothing.
@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let tid = lid.x;
    let block = wid.x + groups.x * (wid.y + groups.y * wid.z);
    let i = block * 512u + tid;
    var lo = 0.0;
    if (i < params.n) {
        lo = x[i];
    }
    var hi = 0.0;
    if (i + 256u < params.n) {
        hi = x[i + 256u];
    }
    scratch[tid] = lo + hi;
    workgroupBarrier();
    // The stride loop written out (128, 64, ..., 1): no loop, so no loop counter from naga.
    if (tid < 128u) {
        scratch[tid] = scratch[tid] + scratch[tid + 128u];
    }
    workgroupBarrier();
    if (tid < 64u) {
        scratch[tid] = scratch[tid] + scratch[tid + 64u];
    }
    workgroupBarrier();
    if (tid < 32u) {
        scratch[tid] = scratch[tid] + scratch[tid + 32u];
    }
    workgroupBarrier();
    if (tid < 16u) {
        scratch[tid] = scratch[tid] + scratch[tid + 16u];
    }
    workgroupBarrier();
    if (tid < 8u) {
        scratch[tid] = scratch[tid] + scratch[tid + 8u];
    }
    workgroupBarrier();
    if (tid < 4u) {
        scratch[tid] = scratch[tid] + scratch[tid + 4u];
    }
    workgroupBarrier();
    if (tid < 2u) {
        scratch[tid] = scratch[tid] + scratch[tid + 2u];
    }
    workgroupBarrier();
    if (tid < 1u) {
        scratch[tid] = scratch[tid] + scratch[tid + 1u];
    }
    workgroupBarrier();
    if (tid == 0u && block < arrayLength(&partial)) {
        partial[block] = scratch[0];
    }
}
