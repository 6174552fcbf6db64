// Hand-written WGSL block reduction, the same computation as src/lib.rs, added in the same order:
// a grid of groups = min(ceil(n / (512 * vector)), max_groups) workgroups of 256 invocations walks
// x in chunks of 512 * vector elements (a grid-stride loop); each invocation adds two vector-wide
// loads per chunk to its own sum, then the workgroup folds the 256 sums in workgroup memory.
//
// The stride loop (128, 64, ..., 1) is written out, as nvcc unrolls reduction.cu's (9 BAR.SYNC,
// no loop in its SASS): naga, wgpu's WGSL compiler, gives every loop a 64-bit iteration counter
// (force_loop_bounding). On the H200 at n = 2^26 the loop (kept as
// benchmarks/wgsl_variants/reduction/v0_loop.wgsl, the one-chunk form) took 0.217 ms, 1.34x the
// CUDA C++ reference's 0.161 ms; written out 0.152 ms (benchmarks/results/wgsl-spirv/README.md).
struct Params {
    n: u32,
}

// x is viewed as vec4<f32> (the wgpu runtime sizes every storage buffer to a multiple of 16
// bytes): element j is x[j / 4][j % 4].
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> partial: array<f32>;

var<workgroup> scratch: array<f32, 256>;

// The manifest's tunables: elements per load (4: one vec4<f32>, 16 bytes) and the grid's cap.
override vector: u32 = 4u;
override max_groups: u32 = 2048u;

// The sum of x[i .. i + vector] (those below n): (x0 + x1) + (x2 + x3) from one vec4 where all
// four exist, else one by one from 0.
fn load_sum(i: u32, n: u32) -> f32 {
    if (vector == 4u && i + 4u <= n) {
        let v = x[i / 4u];
        return (v.x + v.y) + (v.z + v.w);
    }
    var sum = 0.0;
    for (var j = i; j < n && j < i + vector; j++) {
        sum += x[j / 4u][j % 4u];
    }
    return sum;
}

// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large grids on
// wgpu"): the block number is the linear workgroup, recovered from num_workgroups. Spare workgroups
// of a folded grid (block >= groups) sum nothing and write nothing.
@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups_in_grid: vec3<u32>,
) {
    let tid = lid.x;
    let block = wid.x + groups_in_grid.x * (wid.y + groups_in_grid.y * wid.z);
    let n = params.n;
    let chunk = 512u * vector;
    let groups = min((n + chunk - 1u) / chunk, max_groups);
    var sum = 0.0;
    if (block < groups) {
        for (var base = block * chunk; base < n; base += groups * chunk) {
            let lo = base + tid * vector;
            sum += load_sum(lo, n) + load_sum(lo + 256u * vector, n);
        }
    }
    scratch[tid] = sum;
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
    if (tid == 0u && block < groups) {
        partial[block] = scratch[0];
    }
}
