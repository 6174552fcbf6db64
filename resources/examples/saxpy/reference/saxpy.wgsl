// Hand-written WGSL SAXPY, the same computation as src/lib.rs.
struct Params {
    n: u32,
    a: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < params.n) {
        y[i] = params.a * x[i] + y[i];
    }
}
