// V0: the reference WGSL as it was before 2026-12-01 (resources/examples/reduction/reference/
// reduction.wgsl then): the stride loop kept, so naga adds a loop counter to it. The reference now
// is the tree written out (R1's technique).
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
    for (var stride = 128u; stride > 0u; stride = stride >> 1u) {
        if (tid < stride) {
            scratch[tid] = scratch[tid] + scratch[tid + stride];
        }
        workgroupBarrier();
    }
    if (tid == 0u && block < arrayLength(&partial)) {
        partial[block] = scratch[0];
    }
}
