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

// x and y again, as vec4<f32>: the manifest's `views` bind the same buffers here too (a binding
// has one type; the wgpu runtime sizes every storage buffer to a multiple of 16 bytes).
@group(0) @binding(3) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> y4: array<vec4<f32>>;

// One 16-byte load of each and one 16-byte store: elements 4i .. 4i + 4; the last invocation does
// the n % 4 left over through the f32 views.
fn saxpy4(i: u32) {
    if (i < params.n / 4u) {
        y4[i] = params.a * x4[i] + y4[i];
    } else if (i == params.n / 4u) {
        for (var k = 4u * i; k < params.n; k++) {
            y[k] = params.a * x[k] + y[k];
        }
    }
}
