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
    if (vector == 4u) {
        saxpy4(i);
    } else if (i < params.n) {
        y[i] = params.a * x[i] + y[i];
    }
}

// Elements per invocation, the manifest's tunable `vector`: 1 is the plain form above; 4 does
// elements 4i .. 4i + 4 as one vec4<f32> (saxpy4) and the last invocation the n % 4 left over one
// by one.
override vector: u32 = 1u;

// x and y are arrays of f32 (a binding has one type, and WGSL cannot view an array<f32> as
// vec4s), so the vec4 is gathered from four adjacent loads at a 16-byte-aligned offset, which a
// GPU compiler may merge into one 16-byte access; the reduction's WGSL binds vec4s instead.
fn saxpy4(i: u32) {
    let j = 4u * i;
    if (j + 4u <= params.n) {
        let xv = vec4<f32>(x[j], x[j + 1u], x[j + 2u], x[j + 3u]);
        let yv = vec4<f32>(y[j], y[j + 1u], y[j + 2u], y[j + 3u]);
        let r = params.a * xv + yv;
        y[j] = r.x;
        y[j + 1u] = r.y;
        y[j + 2u] = r.z;
        y[j + 3u] = r.w;
    } else {
        for (var k = j; k < params.n; k++) {
            y[k] = params.a * x[k] + y[k];
        }
    }
}
