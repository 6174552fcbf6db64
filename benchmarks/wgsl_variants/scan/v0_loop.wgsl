// V0: the reference WGSL with its fixed-count loops kept as loops (the 9 rounds of the striped
// read and write, each invocation's run of 9 summed and scanned, the rakes of 8, each raker's sum of the
// rakes before its own), so
// naga adds a loop counter (force_loop_bounding) to each; the reference writes them out. The
// loop form of the pass before it (Hillis-Steele over pairs, tiles of 512) measured wgsl/cuda-c
// 1.07-1.17 at n = 2^22 on the H200 (benchmarks/results/h200-2026-12-02/parity.md).
struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<storage, read_write> sums: array<u32>;

var<workgroup> items: array<u32, 2304>;
var<workgroup> runs: array<u32, 256>;
var<workgroup> rakes: array<u32, 32>;

// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large grids on
// wgpu"); spare workgroups (tile >= ceil(n / 2304)) write nothing.
@compute @workgroup_size(256)
fn scan(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let t = lid.x;
    let tile = wid.x + groups.x * (wid.y + groups.y * wid.z);
    let base = tile * 2304u;
    for (var k = 0u; k < 9u; k++) {
        let i = base + k * 256u + t;
        var v = 0u;
        if (i < params.n) {
            v = x[i];
        }
        items[k * 256u + t] = v;
    }
    workgroupBarrier();
    var run = 0u;
    for (var j = 0u; j < 9u; j++) {
        run += items[t * 9u + j];
    }
    runs[t] = run;
    workgroupBarrier();
    if (t < 32u) {
        var rake = 0u;
        for (var j = 0u; j < 8u; j++) {
            rake += runs[t * 8u + j];
        }
        rakes[t] = rake;
    }
    workgroupBarrier();
    if (t < 32u) {
        // The rakes before t's, then run by run (raker t alone touches runs[t * 8u ..][.. 8]).
        var before = 0u;
        for (var r = 0u; r < 32u; r++) {
            if (r < t) {
                before += rakes[r];
            }
        }
        for (var j = 0u; j < 8u; j++) {
            let run = runs[t * 8u + j];
            runs[t * 8u + j] = before;
            before += run;
        }
        if (t == 31u && tile < arrayLength(&sums)) {
            sums[tile] = before;
        }
    }
    workgroupBarrier();
    run = runs[t];
    for (var j = 0u; j < 9u; j++) {
        run += items[t * 9u + j];
        items[t * 9u + j] = run;
    }
    workgroupBarrier();
    for (var k = 0u; k < 9u; k++) {
        let i = base + k * 256u + t;
        if (i < params.n) {
            y[i] = items[k * 256u + t];
        }
    }
}
