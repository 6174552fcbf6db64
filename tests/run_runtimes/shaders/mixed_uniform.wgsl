// Uniform scalars of mixed types in launch order (u32, f32, i32), one in/out buffer of i32 and one
// read-only f32 buffer: data[i] = data[i] * k + i32(floor(w[i] * s)) for i < n.
struct Params {
    n: u32,
    s: f32,
    k: i32,
}

@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(0) var<storage, read_write> data: array<i32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;

@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < params.n) {
        data[i] = data[i] * params.k + i32(floor(w[i] * params.s));
    }
}
