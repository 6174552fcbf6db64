// Hand-written WGSL block reduction, the same computation as src/lib.rs: each workgroup of 256
// invocations sums 512 consecutive elements into partial[workgroup], folding in the same order.
struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> partial: array<f32>;

var<workgroup> scratch: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let tid = lid.x;
    let i = wid.x * 512u + tid;
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
    if (tid == 0u) {
        partial[wid.x] = scratch[0];
    }
}
