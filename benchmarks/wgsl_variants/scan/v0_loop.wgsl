// V0: the reference WGSL before issue 26's scan pass (resources/examples/scan/reference/scan.wgsl
// then): the Hillis-Steele steps as a loop, so naga adds a loop counter (force_loop_bounding) to
// it. wgsl/cuda-c 1.07-1.17 at n = 2^22 on the H200 (benchmarks/results/h200-2026-12-02/parity.md),
// measured against cuda-c samples that batch 2 launches where wgsl's hold 1.
struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<storage, read_write> sums: array<u32>;

var<workgroup> pairs: array<u32, 256>;

// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large grids on
// wgpu"); spare workgroups (tile >= ceil(n / 512)) write nothing.
@compute @workgroup_size(256)
fn scan(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let t = lid.x;
    let tile = wid.x + groups.x * (wid.y + groups.y * wid.z);
    let i = tile * 512u + 2u * t;
    var a = 0u;
    if (i < params.n) {
        a = x[i];
    }
    var b = 0u;
    if (i + 1u < params.n) {
        b = x[i + 1u];
    }
    pairs[t] = a + b;
    workgroupBarrier();
    for (var offset = 1u; offset < 256u; offset *= 2u) {
        var sum = pairs[t];
        if (t >= offset) {
            sum += pairs[t - offset];
        }
        workgroupBarrier();  // every read of this step before any write
        pairs[t] = sum;
        workgroupBarrier();
    }
    if (tile < arrayLength(&sums)) {
        var before = 0u;
        if (t > 0u) {
            before = pairs[t - 1u];
        }
        if (i < params.n) {
            y[i] = before + a;
        }
        if (i + 1u < params.n) {
            y[i + 1u] = before + a + b;
        }
        if (t == 255u) {
            sums[tile] = pairs[t];
        }
    }
}
