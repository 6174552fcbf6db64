// Hand-written WGSL scan, pass 1 (src/lib.rs's scan_body): each workgroup of 256 invocations
// scans a tile of 512 u32 (two per invocation, then a Hillis-Steele scan of the pair sums in
// workgroup memory) into y, and writes the tile's total to sums[tile]. Pass 2 is scan_add.wgsl.
//
// The eight Hillis-Steele steps are written out, as nvcc unrolls reference/scan.cu's loop (its
// SASS: 17 BAR.SYNC, no loop): naga, wgpu's WGSL compiler, gives every loop a 64-bit iteration
// counter (force_loop_bounding), which kept NVIDIA's Vulkan driver from unrolling the reduction's
// and matmul's loops (benchmarks/results/wgsl-spirv/README.md). The loop form is kept as
// benchmarks/wgsl_variants/scan/v0_loop.wgsl.
struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<storage, read_write> sums: array<u32>;

var<workgroup> pairs: array<u32, 256>;

// One Hillis-Steele step: pairs[t] += pairs[t - offset]; every read before any write (the first
// barrier), every write before the next step's reads (the second). Uniform control flow only.
fn step(t: u32, offset: u32) {
    var sum = pairs[t];
    if (t >= offset) {
        sum += pairs[t - offset];
    }
    workgroupBarrier();
    pairs[t] = sum;
    workgroupBarrier();
}

// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large grids on
// wgpu"); spare workgroups (tile >= ceil(n / 512)) write nothing.
@compute @workgroup_size(256)
fn scan(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let t = lid.x;
    let tile = wid.x + groups.x * (wid.y + groups.y * wid.z);
    let i = tile * 512u + 2u * t;
    var a = 0u;
    if (i < params.n) {
        a = x[i];
    }
    var b = 0u;
    if (i + 1u < params.n) {
        b = x[i + 1u];
    }
    pairs[t] = a + b;
    workgroupBarrier();
    step(t, 1u);
    step(t, 2u);
    step(t, 4u);
    step(t, 8u);
    step(t, 16u);
    step(t, 32u);
    step(t, 64u);
    step(t, 128u);
    if (tile < arrayLength(&sums)) {
        var before = 0u;
        if (t > 0u) {
            before = pairs[t - 1u];
        }
        if (i < params.n) {
            y[i] = before + a;
        }
        if (i + 1u < params.n) {
            y[i + 1u] = before + a + b;
        }
        if (t == 255u) {
            sums[tile] = pairs[t];
        }
    }
}
