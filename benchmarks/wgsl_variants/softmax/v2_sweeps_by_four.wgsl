// V2: v0_loop + the max and sum sweeps four columns per trip (then the rest one at a time), as
// ptxas unrolls reference/softmax.cu's; the stride loops stay loops. Isolates: loads in flight per
// invocation in the sweeps (one per trip if the driver does not unroll a loop naga gave a counter).
struct Params {
    rows: u32,
    cols: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

var<workgroup> red: array<f32, 256>;

// Fold red into red[0] (max or sum), then give it to every invocation; the barrier after the read
// keeps the next sweep's writes after everyone's read. Called from uniform control flow only.
fn workgroup_reduce(t: u32, is_max: bool) -> f32 {
    for (var stride = 128u; stride > 0u; stride >>= 1u) {
        if (t < stride) {
            let a = red[t];
            let b = red[t + stride];
            red[t] = select(a + b, select(a, b, b > a), is_max);
        }
        workgroupBarrier();
    }
    let all = red[0];
    workgroupBarrier();
    return all;
}

// A grid beyond 65,535 workgroups (rows) arrives folded into 2-D/3-D (docs/manifest.md, "Large
// grids on wgpu"); spare workgroups only join the barriers.
@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let t = lid.x;
    let row = wid.x + groups.x * (wid.y + groups.y * wid.z);
    var cols = params.cols;
    if (row >= params.rows) {
        cols = 0u;
    }
    let base = row * params.cols;
    // The max and sum sweeps take columns j, j + 256, j + 512, j + 768 per trip while all four
    // exist (four loads in flight, as nvcc's), then the rest one at a time.
    var max = -3.40282347e38;  // WGSL has no infinity literal; the lowest finite f32 does the same here
    var j = t;
    for (; j + 768u < cols; j += 1024u) {
        let a = x[base + j];
        let b = x[base + j + 256u];
        let c = x[base + j + 512u];
        let d = x[base + j + 768u];
        max = select(max, a, a > max);
        max = select(max, b, b > max);
        max = select(max, c, c > max);
        max = select(max, d, d > max);
    }
    for (; j < cols; j += 256u) {
        let v = x[base + j];
        max = select(max, v, v > max);
    }
    red[t] = max;
    workgroupBarrier();
    let row_max = workgroup_reduce(t, true);
    var sum = 0.0;
    j = t;
    for (; j + 768u < cols; j += 1024u) {
        let a = x[base + j];
        let b = x[base + j + 256u];
        let c = x[base + j + 512u];
        let d = x[base + j + 768u];
        sum += exp(a - row_max);
        sum += exp(b - row_max);
        sum += exp(c - row_max);
        sum += exp(d - row_max);
    }
    for (; j < cols; j += 256u) {
        sum += exp(x[base + j] - row_max);
    }
    red[t] = sum;
    workgroupBarrier();
    let total = workgroup_reduce(t, false);
    for (var j = t; j < cols; j += 256u) {
        y[base + j] = exp(x[base + j] - row_max) / total;
    }
}
