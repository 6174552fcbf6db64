// Hand-written WGSL SAXPY, the same computation as src/lib.rs.
struct Params {
    n: u32,
    a: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large grids on
// wgpu"): the linear workgroup comes from num_workgroups, not from global_invocation_id.x.
// Threads per workgroup: the manifest's tunable `threads`.
override threads: u32 = 256u;

@compute @workgroup_size(threads)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let group = wid.x + groups.x * (wid.y + groups.y * wid.z);
    let i = group * threads + lid.x;
    if (i < params.n) {
        y[i] = params.a * x[i] + y[i];
    }
}
