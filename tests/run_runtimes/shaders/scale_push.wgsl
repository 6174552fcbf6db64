// out[i] = a * x[i] + b for i < n, with the scalars as push constants (wgpu 'immediates').
struct Params {
    n: u32,
    a: f32,
    b: f32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < params.n) {
        out[i] = params.a * x[i] + params.b;
    }
}
