// V1: v0_loop + the two workgroup reductions' stride loops written out (eight `fold` calls each,
// as reference/softmax.cu's SASS has no loop there); the row sweeps stay loops. Isolates: naga's
// loop counter on the stride loop with a barrier inside (the reduction example's cause:
// benchmarks/results/wgsl_variants-reduction-h200.json).
struct Params {
    rows: u32,
    cols: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

var<workgroup> red: array<f32, 256>;

// One step of the tree: red[t] takes red[t + stride] in (max or sum), then everyone waits.
// Called from uniform control flow only.
fn fold(t: u32, stride: u32, is_max: bool) {
    if (t < stride) {
        let a = red[t];
        let b = red[t + stride];
        red[t] = select(a + b, select(a, b, b > a), is_max);
    }
    workgroupBarrier();
}

// Fold red into red[0] (max or sum), the strides written out, then give it to every invocation;
// the barrier after the read keeps the next sweep's writes after everyone's read.
fn workgroup_reduce(t: u32, is_max: bool) -> f32 {
    fold(t, 128u, is_max);
    fold(t, 64u, is_max);
    fold(t, 32u, is_max);
    fold(t, 16u, is_max);
    fold(t, 8u, is_max);
    fold(t, 4u, is_max);
    fold(t, 2u, is_max);
    fold(t, 1u, is_max);
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
    var max = -3.40282347e38;  // WGSL has no infinity literal; the lowest finite f32 does the same here
    for (var j = t; j < cols; j += 256u) {
        max = select(max, x[base + j], x[base + j] > max);
    }
    red[t] = max;
    workgroupBarrier();
    let row_max = workgroup_reduce(t, true);
    var sum = 0.0;
    for (var j = t; j < cols; j += 256u) {
        sum += exp(x[base + j] - row_max);
    }
    red[t] = sum;
    workgroupBarrier();
    let total = workgroup_reduce(t, false);
    for (var j = t; j < cols; j += 256u) {
        y[base + j] = exp(x[base + j] - row_max) / total;
    }
}
