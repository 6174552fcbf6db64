// Hand-written WGSL SAXPY, the same computation as src/lib.rs.
struct Params {
    n: u32,
    a: f32,
}

// The buffers are viewed as vec4<f32> (the wgpu runtime sizes every storage buffer to a multiple of
// 16 bytes): element j is x[j / 4][j % 4].
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;

// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large grids on
// wgpu"): the linear workgroup comes from num_workgroups, not from global_invocation_id.x.
// Threads per workgroup: the manifest's tunable `threads`.
override threads: u32 = 256u;
// Elements per invocation, the manifest's tunable `vector`: 4 moves a vec4<f32> (16 bytes) per
// access and the last invocation does the n % 4 left over one by one; 1 is the plain form.
override vector: u32 = 4u;

@compute @workgroup_size(threads)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let group = wid.x + groups.x * (wid.y + groups.y * wid.z);
    let i = group * threads + lid.x;
    let n = params.n;
    if (vector == 4u) {
        if (i < n / 4u) {
            y[i] = params.a * x[i] + y[i];
        } else if (i == n / 4u) {
            for (var j = 4u * i; j < n; j++) {
                y[i][j % 4u] = params.a * x[i][j % 4u] + y[i][j % 4u];
            }
        }
    } else if (i < n) {
        y[i / 4u][i % 4u] = params.a * x[i / 4u][i % 4u] + y[i / 4u][i % 4u];
    }
}
